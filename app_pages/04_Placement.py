"""Placement page: solve the current graph on the current devices; the split, loads, memory, downloads.

Texts: :mod:`ui.placement_texts`; the lower sections (peak memory, downloads, export): :mod:`ui.placement_view`.
"""

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.model import Objective, Status
from placement.solve import available_methods, recomputing_devices
from ui import guard, live, state, tie_break
from ui import placement_texts as texts
from ui import placement_view as view
from ui.worker import SOLVE_CLOCK

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


def _picked_plan_note(plan) -> None:
    """A plan picked elsewhere (Tradeoffs, Compare, Plan view) is shown instead of the live solve."""
    col_note, col_back = st.columns([4, 1], vertical_alignment="center")
    col_note.info(f"Showing a picked plan: {plan[2]}. The device settings of that plan apply here.")
    if col_back.button("Back to the live solve", key="pl_back_live"):
        state.clear_selected_plan()
        st.rerun()


def _controls(picked: bool) -> tuple[str, float]:
    """Objective, method and time limit (written to the shared state); returns the method and the limit."""
    state.init_widget("pl_objective", state.current_objective())
    state.init_widget("pl_time_limit", state.current_time_limit())
    col_obj, col_method, col_limit = st.columns([2, 2, 1])
    with col_obj:
        objective = st.radio(
            "Objective",
            list(texts.OBJECTIVES),
            format_func=texts.OBJECTIVES.get,
            key="pl_objective",
            horizontal=True,
            disabled=picked,
        )
    state.set_objective(objective)
    memory_model = state.current_memory_model()
    methods = [m for m in available_methods(objective) if memory_model.supports(m)]
    if memory_model.training:
        st.caption(texts.memory_model_caption(memory_model, methods, state.effective_method))
    if not methods:
        st.warning(texts.no_method_text(objective, memory_model.training, available_methods()))
        st.stop()
    if st.session_state.get("pl_method") not in methods:
        st.session_state["pl_method"] = state.current_method() if state.current_method() in methods else methods[0]
    with col_method:
        method = st.selectbox(
            "Method",
            methods,
            key="pl_method",
            disabled=picked,
            format_func=state.method_name,
            help="Exact DP: the optimal contiguous split. Integer programs also place "
            "non-contiguously or optimise latency; the baselines are for comparison.",
        )
    state.set_method(method)
    with col_limit:
        limit = st.number_input(
            "Time limit (s)",
            min_value=1.0,
            max_value=3600.0,
            step=5.0,
            key="pl_time_limit",
            disabled=not state.takes_time_limit(method) or picked,
            help="Only for methods with a time limit (integer programs, local search): stop "
            "after this long and report the best plan found with its optimality gap. The integer programs count "
            "the solver's CPU seconds, so the same limit does the same work however busy the server is (a "
            f"wall-clock guard of {SOLVE_CLOCK.factor:g} x the limit + {SOLVE_CLOCK.extra:g} s stands beside it).",
        )
    state.set_time_limit(limit)
    return method, limit


def _numbers(problem, result, evaluation) -> None:
    """Headline numbers, in rows of three so that none is cut at 1024 px (issue 26)."""
    cols = st.columns(3) + st.columns(3) + st.columns(3)
    numbers = [
        (
            "Time per sample",
            state.format_time(evaluation.max_load),
            "Steady state: the max-load over devices (evaluator), once the pipeline is full",
        ),
        (
            "Throughput",
            f"{evaluation.throughput * 1000:.6g} /s",
            "Steady-state samples per second: 1000 / time per sample in ms (no fill or drain)",
        ),
        ("Latency (one sample)", *state.latency_text(problem, evaluation.latency)),
    ]
    if result.objective_kind == Objective.LATENCY:
        numbers = [numbers[2], numbers[0], numbers[1]]
    for col, (label, value, help_text) in zip((cols[0], cols[1], cols[3]), numbers):
        col.metric(label, value, help=help_text)
    timing = state.batch_timing(problem, result)
    if timing is not None:
        cols[2].metric(
            "Time per batch",
            state.format_time(timing.batch_time),
            help=f"One batch of {timing.label()} from the first forward to the last unit, pipeline fill and drain "
            f"included ({timing.samples_per_second:.4g} samples/s, bubble {timing.bubble:.1%}); schedule and "
            "microbatches from the Devices page's memory model. The Timeline page draws it.",
        )
    cols[4].metric("Devices used", f"{len(result.placement.stages)} of {len(problem.devices.slots())}")
    cost_value, cost_help = state.plan_cost_line(problem, result)
    cols[5].metric("Cost per 1M samples", cost_value, help=cost_help)
    cols[6].metric("Status", result.status, help=f"{state.method_name(result.method)} in {result.seconds:.3f} s")
    if timing is not None:
        st.caption(
            f"Time per sample is the steady state; one batch ({timing.label()}) takes "
            f"{state.format_time(timing.batch_time)} with fill and drain, {timing.samples_per_second:.4g} samples/s "
            f"({timing.bubble:.1%} of device time idle)."
        )


def _figures(problem, result, evaluation) -> None:
    """The partitioned graph, load and memory per device, and the device table."""
    order = [stage.device for stage in result.placement.stages]
    st.plotly_chart(
        viz.graph_figure(
            problem.graph,
            device_of=result.placement.device_of,
            layout=state.graph_layout(problem.graph),
            device_order=order,
            title="Partitioned graph (color = device, pipeline order in the legend)",
        ),
        key="pl_graph",
        config={"scrollZoom": True, "displaylogo": False},
    )
    col_load, col_memory = st.columns(2)
    slots = order + [slot for slot in problem.devices.slots() if slot not in order]
    with col_load:
        title = "Load per device"
        figure = viz.load_figure(evaluation, slots=slots, overlap=problem.devices.overlap, title=title)
        st.plotly_chart(figure, key="pl_load")
    with col_memory:
        st.plotly_chart(viz.memory_figure(evaluation, slots=slots), key="pl_memory")
    st.dataframe(pd.DataFrame(viz.device_rows(evaluation)), key="pl_devices", hide_index=True)


def main() -> None:
    """Draw the page."""
    st.title("Placement")
    plan = state.selected_plan()
    if plan is not None:
        _picked_plan_note(plan)
    method, limit = _controls(plan is not None)
    problem = state.result_problem()
    with st.spinner(f"Solving with {method}..." if plan is None else "Loading the plan..."):
        result = state.current_result(live=True)
    if not result.ok:
        severe, message = texts.failure(result, limit)
        (st.error if severe else st.warning)(message)
        st.stop()

    evaluation = placement.evaluate(problem, result.placement)
    state.cost_source_caption()
    if live.from_table(result):  # a device count only went down: answered from the last DP table
        col_note, col_fresh = st.columns([3, 1], vertical_alignment="center")
        col_note.caption(live.note(result))
        if col_fresh.button("Solve afresh (tie-break)", key="pl_solve_afresh"):
            live.solve_afresh(problem)
            st.rerun()
    elif live.skipped(result):  # too large to keep a table for lowered counts: say so
        st.caption(live.note(result))
    if (skipped_note := tie_break.note(result)) is not None:  # the DP's tie-break pass was too large to make
        col_note, col_full = st.columns([3, 1], vertical_alignment="center")
        col_note.caption(skipped_note[0].upper() + skipped_note[1:] + ".")
        if col_full.button(
            "Run the tie-break",
            key="pl_tie_break_full",
            help="It searches the pairs the caption estimates, about 4 M per second per core (measured on a 2-core EPYC).",
        ):
            tie_break.ask(problem)
            st.rerun()
    if result.status == Status.FEASIBLE:
        st.warning(state.not_optimal_note(result))
    if (forced_note := texts.memory_cpu_note(problem, result)) is not None:
        st.warning(forced_note)
    if not evaluation.feasible:
        st.warning("The evaluator finds rule violations: " + "; ".join(evaluation.violations[:5]))
    memory_model = state.current_memory_model()
    recomputing = recomputing_devices(result)  # a per-stage plan's own choice
    out_of_memory = memory_model.violations(problem, result.placement, recomputing) if memory_model.training else ()
    if out_of_memory:
        st.error("Runs out of memory under the memory model in force: " + "; ".join(out_of_memory[:3]))
    _numbers(problem, result, evaluation)
    _figures(problem, result, evaluation)
    view.render_peaks(problem, result, memory_model, recomputing)
    view.render_downloads(problem, result, evaluation)
    view.render_export(problem, result)


main()
