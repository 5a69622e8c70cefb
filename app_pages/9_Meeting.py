"""Meeting summary: the numbers a planning meeting needs, on one printable screen.

Every number comes from the same functions as the other pages: the live solve under the memory
model in force (:func:`ui.state.solve_cached`), the peak breakdown
(:meth:`placement.MemoryModel.breakdown`), the batch time with fill and drain
(:func:`ui.state.batch_timing`), the one cost model (:func:`placement.explore.cost.plan_cost`) and
:func:`placement.explore.purchase.worth_of_more` (two exact solves per kind, on demand).
"""

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.explore.purchase import worth_of_more
from placement.solve import recomputing_devices
from ui import guard, state

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


def _stage_rows(problem, result, evaluation) -> list[dict]:
    """One row per device of the plan: its nodes (first to last), load and memory."""
    loads = {entry.device: entry for entry in evaluation.devices}
    rows = []
    for k, stage in enumerate(result.placement.stages):
        names = [problem.graph.node_by_id[n].label for n in stage.nodes]
        entry = loads.get(stage.device)
        rows.append(
            {
                "stage": k,
                "device": str(stage.device),
                "nodes": f"{names[0]} … {names[-1]} ({len(names)})" if len(names) > 1 else (names[0] if names else ""),
                f"load ({state.time_unit()})": round(entry.load, 6) if entry is not None else "",
            }
        )
    return rows


def main() -> None:
    """Draw the page."""
    st.title("Meeting summary")
    problem = state.current_problem()
    devices = problem.devices
    model = state.current_memory_model()
    st.markdown(f"**{state.current_graph_name()}** on {state.describe_devices(devices)}")
    st.caption(
        f"Prices in {state.current_currency()}. Print this page with the "
        "browser (Ctrl+P / Cmd+P); every number equals the one on Devices, Placement, Timeline and Plan a purchase."
    )
    result = state.solve_cached(problem, state.live_method(), live=True)
    if not result.ok or result.placement is None:
        st.error(f"No plan: {result.status}{': ' + result.reason if result.reason else ''}")
        st.stop()
    evaluation = placement.evaluate(problem, result.placement)
    timing = state.batch_timing(problem, result)
    cost = state.plan_cost(problem, result)

    # ------------------------------------------------------------------ speed and cost
    state.init_widget("mt_tokens", 1)
    state.init_widget("mt_samples", 1_000_000)
    col_tokens, col_samples = st.columns(2)
    tokens = col_tokens.number_input(
        "Tokens per sample",
        min_value=1,
        max_value=10**9,
        step=1,
        key="mt_tokens",
        help="e.g. sequence length x batch of one pipeline sample; 1 shows samples/s.",
    )
    samples = col_samples.number_input(
        "Samples per run", min_value=1, max_value=10**15, step=1000, key="mt_samples", help="For the cost of one run."
    )
    per_second = timing.samples_per_second if timing is not None else evaluation.throughput * 1000
    run_hours = samples / per_second / 3600 if per_second > 0 else float("inf")
    cols = st.columns(3) + st.columns(3)
    cols[0].metric(
        "Time per sample",
        state.format_time(evaluation.max_load),
        help="Steady state (the max-load), once the pipeline is full.",
    )
    if timing is not None:
        cols[1].metric(
            "Time per batch",
            state.format_time(timing.batch_time),
            help=f"One batch of {timing.label()}, fill and drain included (bubble {timing.bubble:.1%}).",
        )
    cols[2].metric(
        "Tokens/s" if tokens > 1 else "Samples/s",
        f"{per_second * tokens:,.4g}",
        help="With fill and drain: microbatches x tokens per sample / time per batch.",
    )
    cols[3].metric("Cost per hour", state.money(cost.price_per_hour), help="Every card held, idle ones included.")
    cols[4].metric(
        "Cost per 1M samples",
        state.money(cost.cost_per_million),
        help="At the steady-state time per sample (as on Devices and Placement); the cost per run counts the "
        "fill and drain of every batch.",
    )
    cols[5].metric(
        "Cost per run",
        state.money(cost.price_per_hour * run_hours),
        help=f"{samples:,} samples at {per_second:,.4g} samples/s (fill and drain included) = {run_hours:,.4g} h.",
    )
    if any(n for _, n in cost.idle):
        st.info(
            f"Idle: {cost.idle_text()} (paid for, no work in the optimal pipeline). Data parallelism can use them: "
            "see the Parallel plan page.",
            icon=":material/info:",
        )

    # ------------------------------------------------------------------ layout and memory
    col_layout, col_memory = st.columns(2)
    with col_layout:
        st.subheader("Layout")
        st.dataframe(pd.DataFrame(_stage_rows(problem, result, evaluation)), hide_index=True, key="mt_layout")
    with col_memory:
        st.subheader("Memory")
        breakdown = model.breakdown(problem, result.placement, recomputing_devices(result))
        worst = max(breakdown, key=lambda b: b.peak)
        fits = all(b.fits for b in breakdown)
        (st.success if fits else st.error)(
            f"{'Every device fits' if fits else 'Does not fit'}: highest peak {viz.format_bytes(worst.peak)} on "
            f"{worst.device} of {viz.format_bytes(worst.cap)} (weights {viz.format_bytes(worst.weights)}, "
            f"gradients {viz.format_bytes(worst.gradients)}, optimizer {viz.format_bytes(worst.optimizer)}, "
            f"activations {viz.format_bytes(worst.activations)}, reserve {viz.format_bytes(worst.reserve)})."
        )
        rows = viz.memory_breakdown_rows(breakdown)
        for row in rows:
            row.pop("peak bytes", None)
            row["fits"] = "yes" if row["fits"] else "NO"
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="mt_memory")

    # ------------------------------------------------------------------ what more cards are worth
    st.subheader("What more cards are worth")
    kinds = devices.accelerators
    if not kinds:
        st.caption("No accelerator kind in the inventory.")
        return
    columns = st.columns(len(kinds))
    wanted = []
    for column, kind in zip(columns, kinds):
        state.init_widget(f"mt_more_{kind.name}", max(1, kind.count))
        wanted.append(
            column.number_input(f"More {kind.name}", min_value=0, max_value=256, step=1, key=f"mt_more_{kind.name}")
        )
    method, options = model.method_for("dp")
    request = (state.problem_key(problem), model, tuple(int(n) for n in wanted))
    if st.button("Compare (two exact solves per kind)", key="mt_worth", type="primary"):
        st.session_state["_mt_request"] = request
    if st.session_state.get("_mt_request") != request:
        st.caption("Press Compare: each kind is solved exactly with its extra cards, side by side.")
        return
    columns = st.columns(len(kinds))
    for column, kind, n in zip(columns, kinds, wanted):
        with column, st.spinner(f"Solving with {int(n)} more {kind.name}..."):
            worth = worth_of_more(problem, kind.name, int(n), method=method, **options)
            column.markdown(f"**+{int(n)} {kind.name}**")
            if worth.after.ok:
                column.metric(
                    "Time per sample",
                    f"{worth.after.time_per_sample:.6g} {state.time_unit()}",
                    delta=f"{-worth.time_saved:.4g} {state.time_unit()}" if worth.time_saved is not None else None,
                    delta_color="inverse",
                )
                column.metric("Cost per 1M samples", state.money(worth.after.cost_per_sample * 1e6))
                column.metric("Cost per hour", state.money(worth.after.price_per_hour))
            column.caption(worth.sentence)


if __name__ != "__mp_main__":
    main()
