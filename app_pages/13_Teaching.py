"""Teaching mode: step through the DP on a small graph drawn next to its lattice of ideals, see why
the optimum is optimal, and try to beat the solver by hand. Every tab works on the graph being taught.
Texts and tables: :mod:`ui.teaching`.
"""

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.explore.teaching import MAX_TEACHING_GROUPS, explain_optimality, pipeline_order, trace_dp
from placement.viz import teaching as viz_teaching
from ui import guard, state
from ui import teaching as te
from ui.navigation import page_file
from ui.timeline import TEXTBOOK_TRAINING

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


@st.cache_data(show_spinner="Tracing the DP...", max_entries=8)
def _trace(key, _problem):
    return trace_dp(_problem)


def _pick_graph() -> placement.Problem:
    """The graph to teach on: a small sample, or the current graph when it is small enough."""
    options, groups = te.graph_choices(state.current_problem())
    state.init_widget("teach_graph", options[0])
    if st.session_state["teach_graph"] not in options:
        st.session_state["teach_graph"] = options[0]
    choice = st.radio(
        "Graph to teach on",
        options,
        key="teach_graph",
        horizontal=True,
        persist_state=state.PERSIST,
        help=f"Teaching works on graphs of at most {MAX_TEACHING_GROUPS} groups (color classes) and "
        f"{te.MAX_TEACHING_DEVICES} devices; the current graph has {groups} groups.",
    )
    problem = state.current_problem() if choice == te.CURRENT else placement.load_problem(te.SAMPLES[choice])
    if st.button(
        "Show the textbook training graph on the Timeline",
        key="teach_timeline_textbook",
        help=f"Loads {TEXTBOOK_TRAINING.name} (a 4-layer chain whose gradients flow back) as the current graph "
        "and opens the Timeline: GPipe and 1F1B as taught.",
    ):
        state.load_sample(TEXTBOOK_TRAINING)
        st.switch_page(page_file("Timeline"))
    st.caption(
        f"{len(problem.graph.nodes)} nodes on {state.describe_devices(problem.devices)}. Times are in ms "
        "(the graph's latencies); a group is a color class (nodes that must share a device), numbered "
        "g0, g1, ... in topological order."
    )
    return problem


def _step_tab(problem, trace, optimum, present: bool, font: int) -> None:
    """Step through the DP: one pair I ⊊ J per step, the lattice and the graph side by side."""
    total = len(trace.steps)
    st.markdown(
        "**best[J][s]** = min over ideals I ⊊ J and device types t of max(best[I][s − one t], load of the stage "
        f"J \\ I on one t): {len(trace.masks)} ideals, **{total} pairs I ⊊ J, one step each**."
    )
    with st.expander("How the DP works", expanded=False):
        st.markdown(
            "The DP fills a table **best[J][s]**: the smallest time per sample (ms) of any contiguous split of "
            "the ideal J (a set of groups closed under predecessors) on at most s devices of each type. It "
            "finishes ideals by size; for each J it tries every smaller ideal I, making **J \\ I** the last "
            "stage on one more device. On the left the lattice of ideals (J orange, I blue, finished green), on "
            "the right the graph (nodes of I blue, the stage J \\ I orange)."
        )
    state.init_widget("teach_step", 1)
    st.session_state["teach_step"] = min(max(int(st.session_state["teach_step"]), 1), total)

    def _move(delta: int) -> None:
        st.session_state["teach_step"] = min(max(int(st.session_state["teach_step"]) + delta, 1), total)

    col_back, col_forward, col_count = st.columns([1, 1, 2], vertical_alignment="center")
    col_back.button(
        "◀ Back",
        key="teach_back",
        on_click=_move,
        args=(-1,),
        disabled=st.session_state["teach_step"] == 1,
        width="stretch",
    )
    col_forward.button(
        "Forward ▶",
        key="teach_forward",
        on_click=_move,
        args=(1,),
        disabled=st.session_state["teach_step"] == total,
        width="stretch",
    )
    col_count.markdown(f"**Step {st.session_state['teach_step']} of {total}**")
    shown = st.slider(f"Step (pair I ⊊ J), 1 to {total}", 1, total, key="teach_step", persist_state=state.PERSIST)
    step = shown - 1  # index into trace.steps
    # Side by side, in presentation mode too: a projector (1920 x 1080) shows the lattice beside the graph.
    col_lattice, col_graph = st.columns(2)
    col_lattice.plotly_chart(viz.lattice_figure(trace, step, font_size=font), key="teach_lattice")
    col_graph.plotly_chart(
        viz_teaching.teaching_graph_figure(problem.graph, trace, step, font_size=font), key="teach_graph_figure"
    )
    names = {node.id: node.name or str(node.id) for node in problem.graph.nodes}
    st.markdown(te.stage_text(trace, step, names))
    st.markdown("**Best split found so far for J, per device count** (this step's improvements marked):")
    st.dataframe(pd.DataFrame(te.best_rows(trace, step)), key="teach_table", hide_index=True)
    if shown == total:
        st.success(
            f"Done: best[all groups][all devices] = {trace.answer:.6g} ms per sample; the exact DP (solve_dp) "
            f"gives {optimum.objective:.6g} ms."
            if optimum.ok
            else f"Done: {trace.answer} ms; solve_dp: {optimum.status}"
        )


def _why_tab(problem, trace, optimum, choice: str) -> None:
    """Why the optimal plan is optimal: its numbers, the lower bound, the bottleneck."""
    st.caption(f"For the optimal plan of the graph being taught ({choice}).")
    if not optimum.ok:
        st.info(f"No plan to explain: solve_dp reports {optimum.status}.")
        return
    why = explain_optimality(problem, optimum.placement)
    cols = st.columns(4)
    cols[0].metric("Time per sample", f"{why.time_per_sample:.4g} ms", help=f"{optimum.method}, {optimum.status}")
    cols[1].metric("Lower bound", f"{why.lower_bound:.4g} ms", help=why.bound_reason)
    cols[2].metric("Ideals · pairs searched", f"{len(trace.masks):,} · {len(trace.steps):,}")
    cols[3].metric(
        "Bottleneck device",
        str(why.bottleneck),
        help=f"compute {why.bottleneck_compute:.4g} ms + communication {why.bottleneck_communication:.4g} ms",
    )
    st.markdown(te.why_text(why, len(trace.masks), len(trace.steps)))
    st.dataframe(viz.placement_rows(problem, optimum.placement), key="teach_why_plan", hide_index=True)


def _beat_tab(problem, trace, optimum) -> None:
    """Beat the solver: assign nodes to devices by hand; the time per sample and the gap update as you edit."""
    st.markdown(
        "Assign every node to a device in the table (the **device** column). You start from a correct split (the "
        "DP's best on fewer devices); the time per sample (ms), the rules your split breaks and the gap to the "
        "optimum update as you edit."
    )
    slots = [str(slot) for slot in problem.devices.slots()]
    by_label = {str(slot): slot for slot in problem.devices.slots()}
    version = st.session_state.get("_teach_beat_version", 0)
    source_key = (state.problem_key(problem), version)
    if st.session_state.get("_teach_beat_source", (None,))[0] != source_key:
        st.session_state["_teach_beat_source"] = (source_key, te.starting_frame(problem, trace))
    source = st.session_state["_teach_beat_source"][1]
    edited = st.data_editor(
        source,
        key=f"teach_beat_{version}",
        hide_index=True,
        disabled=["node", "name", "backward"],
        column_config={"device": st.column_config.SelectboxColumn("device", options=slots, required=True)},
    )
    if st.button("Start again", key="teach_beat_reset"):
        st.session_state["_teach_beat_version"] = version + 1
        st.rerun()
    assignment = {
        int(row["node"]): by_label[row["device"]] for row in edited.to_dict("records") if row["device"] in by_label
    }
    # Stages in pipeline order when one exists (a hand-made split names devices, not their order).
    order = pipeline_order(problem, assignment) or problem.devices.slots()
    mine = placement.Placement.from_assignment(assignment, order=order)
    evaluation = placement.evaluate(problem, mine)
    broken = te.broken_rules(problem, mine, evaluation)
    cols = st.columns(3)
    cols[0].metric("Your time per sample", f"{evaluation.max_load:.6g} ms", help="max-load over the devices")
    if optimum.ok:
        cols[1].metric("Optimum (DP)", f"{optimum.objective:.6g} ms")
        gap = evaluation.max_load / optimum.objective - 1 if optimum.objective > 0 else 0.0
        cols[2].metric("Gap to the optimum", f"{gap:.1%}")
    if broken:
        st.warning("Rules broken:\n" + "\n".join(f"* {message}" for message in broken))
    elif optimum.ok and evaluation.max_load <= optimum.objective * (1 + 1e-9):
        st.success("You matched the optimum.")
    st.plotly_chart(
        viz.graph_figure(
            problem.graph,
            device_of=mine.device_of,
            layout=state.graph_layout(problem.graph),
            device_order=problem.devices.slots(),
            title="Your split",
        ),
        key="teach_beat_graph",
    )


def main() -> None:
    """Draw the page: the graph to teach on, then the three tabs."""
    st.title("Teaching mode")
    present = st.toggle(
        "Presentation mode (large fonts, for a projector)",
        key="teach_present",
        help="Larger text, labels and charts on this page.",
    )
    if present:
        st.html(te.PRESENTATION_CSS)
    problem = _pick_graph()
    try:
        trace = _trace(state.problem_key(problem), problem)
    except placement.PlacementError as exc:
        st.error(str(exc))
        st.stop()
    optimum = state.solve_cached(problem, "dp")
    tab_steps, tab_why, tab_beat = st.tabs(["Step through the DP", "Why is this optimal", "Beat the solver"])
    with tab_steps:
        _step_tab(problem, trace, optimum, present, te.PRESENTATION_FONT if present else te.FONT)
    with tab_why:
        _why_tab(problem, trace, optimum, st.session_state["teach_graph"])
    with tab_beat:
        _beat_tab(problem, trace, optimum)


main()
