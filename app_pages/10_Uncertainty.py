"""Uncertainty page: latency error bars, a seeded Monte Carlo of the plan, out-of-memory risk, bottlenecks.

The chosen plan is the one the Placement page shows (a picked plan, or the live solve). Each draw
scales every node's latencies by a factor uniform in [1 - e, 1 + e] (placement.explore.uncertainty).
"""

import streamlit as st

from placement import PlacementError, viz
from placement.explore.uncertainty import MAX_SAMPLES, monte_carlo
from placement.model import ScheduleKind
from placement.pipeline.registry import SCHEDULE_TITLES, SCHEDULES
from ui import guard, state, transformer_view

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)

UNIT = state.time_unit()
SCHEDULE_NAMES = SCHEDULE_TITLES


def _settings(problem) -> tuple[float, int, int, str, int, bool]:
    """Error bar (%), draws, seed, schedule, microbatches, re-optimise."""
    training = problem.graph.is_training
    schedules = [s for s in SCHEDULES if (s != ScheduleKind.INFERENCE) == training] or list(SCHEDULES)
    state.init_widget("unc_error", 10.0)
    state.init_widget("unc_samples", 200)
    state.init_widget("unc_seed", 0)
    state.init_widget("unc_reopt", True)
    state.init_widget("unc_microbatches", 8 if training else 1)
    if st.session_state.get("unc_schedule") not in schedules:
        st.session_state["unc_schedule"] = schedules[-1]
    col_a, col_b, col_c = st.columns(3)
    error = col_a.number_input(
        "Latency error bar (± %)",
        min_value=0.0,
        max_value=99.0,
        step=5.0,
        key="unc_error",
        help="The same relative error on every node's latency.",
    )
    samples = col_b.number_input("Draws", min_value=1, max_value=MAX_SAMPLES, step=50, key="unc_samples")
    seed = col_c.number_input(
        "Seed", min_value=0, step=1, key="unc_seed", help="The same seed gives the same draws (reproducible)."
    )
    col_d, col_e, col_f = st.columns(3)
    schedule = col_d.selectbox("Schedule (for memory)", schedules, format_func=SCHEDULE_NAMES.get, key="unc_schedule")
    microbatches = col_e.number_input(
        "Microbatches",
        min_value=1,
        max_value=4096,
        step=1,
        key="unc_microbatches",
        disabled=schedule == ScheduleKind.INFERENCE,
    )
    reoptimise = col_f.toggle(
        "Re-optimise each draw (exact DP)",
        key="unc_reopt",
        help="Also solve every drawn graph: the best plan had the latencies been known.",
    )
    return float(error), int(samples), int(seed), schedule, int(microbatches), bool(reoptimise)


def _run(problem, result, settings):
    """The Monte Carlo of this plan: run on the button, kept in the session; stops the page without one."""
    error, samples, seed, schedule, microbatches, reoptimise = settings
    key = (
        state.problem_key(problem),
        repr(result.placement),
        float(error),
        int(samples),
        int(seed),
        schedule,
        int(microbatches),
        bool(reoptimise),
    )
    stored = st.session_state.get("_unc_result")
    if st.button("Run Monte Carlo", key="unc_run", type="primary"):
        bar = st.progress(0.0, text="Drawing latencies...")

        def progress(done: int, total: int) -> None:
            if done == total or done % max(1, total // 50) == 0:
                bar.progress(done / total, text=f"Draw {done} of {total}")

        try:
            mc = monte_carlo(
                problem,
                result.placement,
                float(error) / 100,
                samples=int(samples),
                seed=int(seed),
                schedule=schedule,
                microbatches=int(microbatches if schedule != ScheduleKind.INFERENCE else 1),
                reoptimise=bool(reoptimise),
                progress=progress,
            )
        except PlacementError as exc:
            bar.empty()
            st.error(str(exc))
            st.stop()
        bar.empty()
        stored = (key, mc)
        st.session_state["_unc_result"] = stored
    if stored is None:
        st.info("Press **Run Monte Carlo** to draw latency scenarios for this plan.")
        st.stop()
    if stored[0] != key:
        st.caption("Settings or the plan changed since this run: press Run Monte Carlo to refresh it.")
    return stored[1]


def _results(mc) -> None:
    """Quantiles, out-of-memory risk, the re-optimised plan's, the histogram and the bottlenecks."""
    p10, p50, p90 = mc.plan_quantiles
    cols = st.columns(4)
    cols[0].metric("P10 time per sample", state.format_time(p10, 5), help="Chosen plan, 10th percentile")
    cols[1].metric("P50 time per sample", state.format_time(p50, 5), help="Chosen plan, median")
    cols[2].metric("P90 time per sample", state.format_time(p90, 5), help="Chosen plan, 90th percentile")
    cols[3].metric(
        "P(out of memory)",
        f"{mc.plan_oom_probability:.0%}",
        help=f"Chosen plan under {SCHEDULE_NAMES[mc.schedule]} with {mc.microbatches} microbatch(es); "
        "latencies do not change memory, so this is 0 % or 100 %.",
    )
    if mc.reopt_quantiles is not None:
        r10, r50, r90 = mc.reopt_quantiles
        changed = sum(mc.reopt_changed) / len(mc.reopt_changed)
        cols = st.columns(4)
        cols[0].metric("Re-optimised P10", state.format_time(r10, 5))
        cols[1].metric("Re-optimised P50", state.format_time(r50, 5))
        cols[2].metric("Re-optimised P90", state.format_time(r90, 5))
        cols[3].metric(
            "Re-optimised P(OOM)",
            f"{mc.reopt_oom_probability:.0%}",
            help="Share of draws whose re-optimised plan (the DP counts node sizes only) is out of "
            "memory under the schedule.",
        )
        st.caption(f"The re-optimised plan differs from the chosen one in {changed:.0%} of the draws.")
    st.plotly_chart(viz.monte_carlo_figure(mc, UNIT), key="unc_hist")
    st.plotly_chart(viz.bottleneck_figure(mc), key="unc_bottleneck")


def main() -> None:
    """Draw the page."""
    st.title("Uncertainty")
    transformer_view.uncertainty_section()  # the session's transformer scenario (ui/transformer.py)
    problem = state.result_problem()
    st.markdown(f"**{state.current_graph_name()}** on {state.describe_devices(problem.devices)}")
    state.cost_source_caption()
    st.caption(
        state.time_unit_note() + " Every node's latencies are multiplied by an independent factor, uniform "
        "in [1 - e, 1 + e]; transfer costs and memory sizes stay as they are."
    )
    with st.spinner("Solving the plan..."):
        result = state.current_result()
    if result is None or not result.ok:
        st.error(
            "No plan to analyse: the Placement page has none for these settings "
            f"({result.reason if result is not None else 'no graph'})."
        )
        st.stop()
    picked = state.selected_plan()
    st.caption(
        f"Plan analysed: {picked[2] if picked else state.method_name(result.method) + ' (live solve)'}, "
        f"nominal time per sample {state.format_time(result.objective)}."
    )
    mc = _run(problem, result, _settings(problem))
    _results(mc)


if __name__ != "__mp_main__":
    main()
