"""Plan view: the partitioned graph, the load bars, the Gantt chart and memory over time of one plan,
side by side and linked.

* Clicking a point of the curve (time per sample against the number of accelerators) shows that
  plan in every view; a plan picked on the Tradeoffs or Compare page shows here too.
* Clicking a device's bar highlights that device in every view.
* "Compare two plans": pin the plan, change settings (here or on any page), and see which nodes
  moved, the per-device load and memory deltas and both times per sample.

Choices and tables: :mod:`ui.plan_view`.
"""

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.explore.diff import plan_diff
from placement.pipeline.memory import memory_profile
from placement.pipeline.schedule import simulate
from ui import guard, startup, state, transformer_view
from ui import plan_view as pv

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


def _curve(problem: placement.Problem):
    """Time per sample against the first kind's count; a clicked point becomes the picked plan. Returns the kind."""
    devices = problem.devices
    kind = devices.accelerators[0]
    counts = pv.curve_counts(kind.count)
    with st.spinner("Solving for each accelerator count..."):
        variants = {c: placement.Problem(problem.graph, devices.with_kind(kind.name, count=c)) for c in counts}
        results = {c: state.solve_cached(variants[c], "dp") for c in counts}
    times = [results[c].objective if results[c].ok else None for c in counts]
    # The chart's click is in session state before the chart is drawn.
    point = pv.clicked_point(st.session_state.get("plan_curve"))
    if point is not None and point != st.session_state.get("_plan_curve_seen"):
        st.session_state["_plan_curve_seen"] = point
        count = int(round(float(point.get("x", 0))))
        if count in results and results[count].ok:
            label = f"{count} x {kind.name} from the Plan view curve"
            state.set_selected_plan(variants[count], results[count], label, origin="plan view")
            st.session_state["plan_device"] = pv.NONE
    selected = pv.shown_count(state.result_problem(), kind.name)
    st.plotly_chart(
        viz.count_curve_figure(counts, times, selected=selected, kind=kind.name),
        key="plan_curve",
        on_select="rerun",
        selection_mode="points",
    )


def _controls(plan_problem: placement.Problem, labels: list[str]) -> tuple[str, str, int]:
    """The highlighted device (or a clicked bar), the schedule and the microbatches."""
    bar = pv.clicked_point(st.session_state.get("plan_load"))
    if bar is not None and bar != st.session_state.get("_plan_load_seen"):
        st.session_state["_plan_load_seen"] = bar
        if str(bar.get("x")) in labels:
            st.session_state["plan_device"] = str(bar.get("x"))
    if st.session_state.get("plan_device") not in [pv.NONE] + labels:
        st.session_state["plan_device"] = pv.NONE
    state.init_widget("plan_device", pv.NONE)
    training = plan_problem.graph.is_training
    schedules = pv.schedules_for(training)
    state.init_widget("plan_schedule", pv.default_schedule(training))
    if st.session_state["plan_schedule"] not in schedules:
        st.session_state["plan_schedule"] = schedules[0]
    state.init_widget("plan_microbatches", 8)
    col_device, col_schedule, col_micro = st.columns([2, 2, 1])
    device = col_device.selectbox(
        "Highlight a device (or click its bar)", [pv.NONE] + labels, key="plan_device", persist_state=state.PERSIST
    )
    schedule_kind = col_schedule.selectbox("Schedule", schedules, key="plan_schedule", persist_state=state.PERSIST)
    microbatches = col_micro.number_input(
        "Microbatches", min_value=1, max_value=64, step=1, key="plan_microbatches", persist_state=state.PERSIST
    )
    return device, schedule_kind, int(microbatches)


def _metrics(plan_problem, evaluation, order, device: str) -> None:
    cols = st.columns([1.3, 1, 1, 1])  # the first tile holds a time with its unit: never clipped
    cols[0].metric("Time per sample", state.format_time(evaluation.max_load), help="max device load (evaluator)")
    cols[1].metric("Devices used", f"{len(order)} of {len(plan_problem.devices.slots())}")
    bottleneck = max(evaluation.devices, key=lambda entry: entry.load)
    cols[2].metric("Bottleneck device", str(bottleneck.device), help=f"load {state.format_time(bottleneck.load)}")
    if device != pv.NONE:
        entry = next((e for e in evaluation.devices if str(e.device) == device), None)
        cols[3].metric(
            f"Load of {device}",
            state.format_time(entry.load) if entry else "unused",
            help="compute + communication per sample",
        )


def _views(plan_problem, result, evaluation, order, slots, labels, device, schedule_kind, microbatches) -> None:
    """The four linked views: graph, load bars, memory over time, Gantt chart."""

    def linked(figure):
        return viz.highlight_device(figure, device, labels) if device != pv.NONE else figure

    graph_chart = viz.graph_figure(
        plan_problem.graph,
        device_of=result.placement.device_of,
        layout=state.graph_layout(plan_problem.graph),
        device_order=order,
        title="Partitioned graph (color = device)",
    )
    st.plotly_chart(linked(graph_chart), key="plan_graph", config={"scrollZoom": True, "displaylogo": False})
    try:
        schedule = simulate(plan_problem, result.placement, microbatches, schedule_kind)
        profile = memory_profile(plan_problem, schedule)
    except placement.PlacementError as exc:
        st.error(str(exc))
        st.stop()
    col_load, col_memory = st.columns(2)
    with col_load:
        load_chart = viz.load_figure(
            evaluation, slots=slots, overlap=plan_problem.devices.overlap, title="Load per device (click a bar)"
        )
        load_chart.update_layout(clickmode="event+select")
        st.plotly_chart(linked(load_chart), key="plan_load", on_select="rerun", selection_mode="points")
    with col_memory:
        memory_chart = viz.memory_timeline_figure(profile)
        memory_chart.update_layout(
            legend={"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0}, margin={"t": 60, "b": 10}, height=420
        )  # half width: the legend goes below
        st.plotly_chart(linked(memory_chart), key="plan_memory")
    st.plotly_chart(linked(viz.timeline_figure(schedule)), key="plan_gantt")


def _compare(plan_problem, result, plan_state) -> None:
    """Compare two plans: pin this one, change settings, see the difference."""
    st.subheader("Compare two plans")
    st.caption(
        "Pin this plan, then change settings (click another curve point, or change devices on the Devices "
        "page): the difference to the pinned plan shows here."
    )
    pinned = st.session_state.get("_plan_pinned")
    col_pin, col_unpin, _ = st.columns([1, 1, 3])
    if col_pin.button("Pin this plan", key="plan_pin"):
        devices = state.current_devices()
        label = (
            plan_state[2] if plan_state else f"live {state.current_method()} plan, {state.describe_devices(devices)}"
        )
        st.session_state["_plan_pinned"] = pinned = (plan_problem, result, label)
    if col_unpin.button("Unpin", key="plan_unpin", disabled=pinned is None):
        st.session_state["_plan_pinned"] = pinned = None
    if pinned is None:
        return
    try:
        diff = plan_diff(pinned[0], pinned[1].placement, plan_problem, result.placement)
    except placement.PlacementError as exc:
        st.info(f"The pinned plan ({pinned[2]}) cannot be compared with this one: {exc}")
        return
    st.markdown(f"**A (pinned):** {pinned[2]}  \n**B (shown):** {plan_state[2] if plan_state else 'the live plan'}")
    metric_cols = st.columns(4)
    metric_cols[0].metric("Time per sample A", state.format_time(diff.time_a))
    metric_cols[1].metric(
        "Time per sample B",
        state.format_time(diff.time_b),
        delta=f"{diff.time_delta:+.6g} {state.TIME_UNIT}",
        delta_color="inverse",
    )
    metric_cols[2].metric("Nodes moved", f"{len(diff.moved)} of {len(plan_problem.graph.nodes)}")
    metric_cols[3].metric("Devices used A → B", f"{diff.stages_a} → {diff.stages_b}")
    if diff.identical:
        st.success("The two plans are the same.")
    st.plotly_chart(viz.plan_diff_figure(diff), key="plan_diff_chart")
    st.dataframe(pd.DataFrame(viz.plan_diff_rows(diff)), key="plan_diff_table", hide_index=True)
    if diff.moved:
        rows = pv.moved_rows(diff, plan_problem.graph)
        st.dataframe(pd.DataFrame(rows), key="plan_moved_table", hide_index=True)


def main() -> None:
    """Draw the page."""
    st.title("Plan view")
    transformer_view.plan_view_section()  # the session's transformer scenario (ui/transformer.py)
    startup.ensure_default_graph()  # opened by its URL before app.py loaded a graph: load the default (or the link's)
    problem = state.current_problem()
    st.markdown(f"**{state.current_graph_name()}** on {state.describe_devices(problem.devices)}")
    state.cost_source_caption()
    if not problem.devices.accelerators:
        st.warning("The inventory has no accelerator kind: add one on the Devices page.")
        st.stop()
    _curve(problem)
    plan_state = state.selected_plan()
    result = state.current_result()
    plan_problem = state.result_problem()
    if plan_state is not None:
        col_note, col_back = st.columns([4, 1], vertical_alignment="center")
        col_note.info(f"Showing a picked plan: {plan_state[2]}.")
        if col_back.button("Back to the live solve", key="plan_back_live"):
            state.clear_selected_plan()
            st.rerun()
    if result is None or not result.ok:
        st.error(f"No plan: {result.status if result else 'no graph'}: {result.reason if result else ''}")
        st.stop()
    evaluation = placement.evaluate(plan_problem, result.placement)
    order = [stage.device for stage in result.placement.stages]
    slots = order + [slot for slot in plan_problem.devices.slots() if slot not in order]
    labels = [str(slot) for slot in slots]
    device, schedule_kind, microbatches = _controls(plan_problem, labels)
    _metrics(plan_problem, evaluation, order, device)
    _views(plan_problem, result, evaluation, order, slots, labels, device, schedule_kind, microbatches)
    _compare(plan_problem, result, plan_state)


main()
