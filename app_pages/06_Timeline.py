"""Timeline page: the pipeline schedule of the current plan over time, and memory over time.

Slider for the number of microbatches, schedule select (streaming inference, GPipe, 1F1B,
interleaved 1F1B with virtual stages, zero bubble ZB-H1), the per-device action lists, every
schedule side by side (bubble and peak memory),
the Gantt chart with bubbles, steady-state period against the max-load, fill & drain and
idle time; memory per device over time against its cap with the first OOM marked; a
Perfetto / Chrome trace download; and the memory-aware plan for the chosen schedule.
Tables and decisions: :mod:`ui.timeline`; widgets: :mod:`ui.timeline_view`.
"""

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.model import Status
from placement.pipeline.memory import memory_profile
from placement.pipeline.schedule import SCHEDULES, format_actions, gradients_flow_forward, simulate
from placement.pipeline.trace import chrome_trace_json
from ui import guard, scenario, state, transformer_view
from ui import timeline as tl
from ui import timeline_view as view

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


def _plan_choice(problem, result, settings: view.Settings):
    """The Plan radio; returns (the result shown, the memory-aware result or None, the choice)."""
    plannable = settings.schedule in SCHEDULES
    plan_kind = st.radio(
        "Plan",
        tl.PLANS,
        key="timeline_plan",
        persist_state=state.PERSIST,
        horizontal=True,
        disabled=not plannable,
        help="The memory-aware plan is the optimal split whose devices hold this schedule's peak "
        "memory (weights + optimizer state + in-flight activations); it plans for inference, "
        "GPipe and 1F1B.",
    )
    if plan_kind == tl.PLANS[1] and not plannable:
        st.info("The memory-aware planner plans for inference, GPipe and 1F1B: showing the current plan.")
    if plan_kind != tl.PLANS[1] or not plannable:
        return result, None, plan_kind
    training = settings.training
    aware = view.memory_aware(
        state.problem_key(problem),
        settings.schedule,
        settings.microbatches,
        settings.optimizer if training else 0.0,
        bool(settings.recompute and training),
        problem,
    )
    if aware is None or not aware.ok:
        why = "" if aware is None else f": {aware.status}{' - ' + aware.reason if aware.reason else ''}"
        st.error(f"No memory-aware plan{why}")
        st.stop()
    if aware.status == Status.FEASIBLE:
        st.warning(tl.not_optimal_warning(aware))
    return aware, aware, plan_kind


def _aware_comparison(problem, result, aware, profile, settings: view.Settings, plan_kind: str) -> None:
    """The current plan beside the memory-aware plan for this schedule (training schedules the planner takes)."""
    with st.expander("Memory-aware planning for this schedule", expanded=plan_kind == tl.PLANS[1]):
        st.markdown(
            "The plain plan checks memory as the nodes' sizes only. The memory-aware plan is the optimal split "
            "whose devices hold the schedule's peak (weights + optimizer state + in-flight activations: 1F1B keeps "
            "min(K - k, N) microbatches on the stage at position k of K, GPipe all N). Lower the accelerator memory "
            "on the Devices page to see them differ."
        )
        state.init_widget("timeline_compare", False)
        compare = st.toggle(
            "Compare the current plan with the memory-aware plan",
            key="timeline_compare",
            persist_state=state.PERSIST,
            help="Solves the memory-aware DP for this schedule (cached; seconds on operator graphs).",
        )
        kind, n, optimizer, recompute = settings.schedule, settings.microbatches, settings.optimizer, settings.recompute
        if aware is None and compare:
            aware = view.memory_aware(state.problem_key(problem), kind, n, optimizer, recompute, problem)
        if aware is None:
            return
        if plan_kind != tl.PLANS[0]:
            plain = simulate(problem, result.placement, n, kind, recompute=recompute)
            profile = memory_profile(problem, plain, optimizer)
        rows = tl.aware_rows(result, profile.fits, aware)
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="timeline_aware_table")


def _textbook(problem, plan, settings: view.Settings) -> None:
    """Say when the graph's gradients flow forward (what it does to 1F1B); the textbook training graph, one click away."""
    forward = settings.training and problem.graph.is_training and gradients_flow_forward(problem, plan)
    col_note, col_load = st.columns([3, 1], vertical_alignment="center")
    if forward:
        col_note.info(tl.forward_gradients_note(settings.schedule))
    if col_load.button(
        "Load the textbook training graph",
        key="timeline_textbook",
        help=f"{tl.TEXTBOOK_TRAINING.name}: a 4-layer chain whose gradients flow back from the last layer.",
    ):
        state.load_sample(tl.TEXTBOOK_TRAINING)
        st.rerun()


def main() -> None:
    """Draw the page."""
    st.title("Timeline")
    transformer_view.timeline_section()  # the session's transformer scenario (ui/transformer.py)
    st.caption(
        "The plan's stages run as a pipeline: every device works on one microbatch at a time, in the schedule's "
        "order. Each device is busy per microbatch for exactly its load (compute + communication), split into a "
        "forward and (in training) a backward unit, so the steady-state time per sample equals the max-load."
    )
    problem = state.result_problem()
    result = state.current_result()
    if problem is None or result is None or not result.ok:
        reason = "" if result is None else f" ({result.status}{': ' + result.reason if result.reason else ''})"
        st.warning(f"No plan to show{reason}. Pick a graph and devices on the Graph and Devices pages.")
        st.stop()
    plan_note = state.selected_plan()
    if plan_note is not None:
        st.info(f"Showing the picked plan: {plan_note[2]}")
    state.cost_source_caption()
    training_graph = problem.graph.is_training
    settings = view.controls(problem, state.current_memory_model())
    # The link carries these settings (ui.scenario.SETTINGS_KEYS): app.py synced the URL before they were rendered.
    scenario.sync_url()
    if settings.training and not training_graph:
        st.info("This graph has no backward nodes: the backward units are empty.")
    if not settings.training and training_graph:
        st.info("Streaming inference runs only the forward nodes of this training graph.")
    shown_result, aware, plan_kind = _plan_choice(problem, result, settings)

    plan = shown_result.placement
    _textbook(problem, plan, settings)
    if settings.virtual_used:
        moved = tl.moved_stages(plan, settings.virtual_used)
        if moved:
            st.warning(tl.moved_warning(moved))
    recompute = settings.recompute and settings.training
    try:
        schedule = simulate(
            problem, plan, settings.microbatches, settings.schedule, recompute=recompute, virtual=settings.virtual_used
        )
    except placement.PlacementError as exc:
        st.error(str(exc))
        st.stop()
    evaluation = placement.evaluate(problem, plan)
    view.render_numbers(schedule, evaluation, settings, training_graph)
    st.plotly_chart(viz.schedule_figure(schedule), key="timeline_gantt")
    st.dataframe(pd.DataFrame(tl.idle_rows(schedule)), hide_index=True, key="timeline_idle_table")
    with st.expander("Action list per device (torch.distributed.pipelining notation)"):
        st.caption(
            "Each device runs its actions in this order: <stage><F|B|I|W><microbatch>; F forward, B full "
            "backward, I input-gradient backward, W weight-gradient backward (ZB-H1)."
        )
        st.code(format_actions(schedule), language=None)
    profile = view.render_memory(problem, plan, schedule, settings)
    view.render_side_by_side(problem, plan, settings)
    if settings.training and settings.schedule in SCHEDULES:
        _aware_comparison(problem, result, aware, profile, settings, plan_kind)
    st.download_button(
        "Download Perfetto / Chrome trace (JSON)",
        data=chrome_trace_json(schedule, profile),
        file_name=f"schedule_{settings.schedule}_{settings.microbatches}.json",
        mime="application/json",
        key="timeline_trace_download",
        help="Open it in https://ui.perfetto.dev or chrome://tracing (graph times taken as milliseconds).",
    )
    with st.expander("How the schedule is computed"):
        st.markdown(tl.HOW)


main()
