"""Teaching mode: step through the DP on a small graph, see why a plan is optimal,
and try to beat the solver by hand.
"""

from pathlib import Path

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.explore.teaching import MAX_TEACHING_GROUPS, explain_optimality, trace_dp
from placement.model import Status
from ui import guard, state

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


st.title("Teaching mode")
TINY = Path(state.SAMPLES_DIR) / "ours" / "tiny_training.json"

# ----------------------------------------------------------------------------- the small graph
current = state.current_problem()
groups = placement.contract(current.graph).count
small_enough = groups <= MAX_TEACHING_GROUPS and len(current.devices.slots()) <= 8
options = ["tiny sample (8 nodes)"] + (["current graph"] if small_enough else [])
state.init_widget("teach_graph", options[0])
if st.session_state["teach_graph"] not in options:
    st.session_state["teach_graph"] = options[0]
choice = st.radio(
    "Graph to teach on",
    options,
    key="teach_graph",
    horizontal=True,
    persist_state=state.PERSIST,
    help=f"Teaching works on graphs of at most {MAX_TEACHING_GROUPS} groups (color classes) and 8 "
    f"devices; the current graph has {groups} groups.",
)
problem = current if choice == "current graph" else placement.load_problem(TINY)
st.caption(f"{len(problem.graph.nodes)} nodes on {state.describe_devices(problem.devices)}")


@st.cache_data(show_spinner="Tracing the DP...", max_entries=8)
def _trace(key, _problem):
    return trace_dp(_problem)


try:
    trace = _trace(state.problem_key(problem), problem)
except placement.PlacementError as exc:
    st.error(str(exc))
    st.stop()
optimum = state.solve_cached(problem, "dp")

tab_steps, tab_why, tab_beat = st.tabs(["Step through the DP", "Why is this optimal", "Beat the solver"])

# ----------------------------------------------------------------------------- step through
with tab_steps:
    st.markdown(
        "The DP fills a table **best[J][devices]**: the smallest time per sample of any contiguous split of the "
        "ideal J (a set of groups closed under predecessors) on at most that many devices of each type. "
        "It finishes ideals by size; for each J it tries every smaller ideal I, making **J \\ I** the last "
        "stage on one more device: best[J][s] = min over I, t of max(best[I][s − one device of type t], "
        "load of J \\ I on type t)."
    )
    last = len(trace.steps) - 1
    state.init_widget("teach_step", 0)
    st.session_state["teach_step"] = min(max(int(st.session_state["teach_step"]), 0), last)

    def _move(delta: int) -> None:
        st.session_state["teach_step"] = min(max(int(st.session_state["teach_step"]) + delta, 0), last)

    col_back, col_slider, col_forward = st.columns([1, 6, 1], vertical_alignment="bottom")
    col_back.button(
        "◀ Back",
        key="teach_back",
        on_click=_move,
        args=(-1,),
        disabled=st.session_state["teach_step"] == 0,
        width="stretch",
    )
    col_forward.button(
        "Forward ▶",
        key="teach_forward",
        on_click=_move,
        args=(1,),
        disabled=st.session_state["teach_step"] == last,
        width="stretch",
    )
    step = col_slider.slider(f"Step (pair I ⊊ J) of {last + 1}", 0, last, key="teach_step", persist_state=state.PERSIST)
    item = trace.steps[step]
    st.plotly_chart(viz.lattice_figure(trace, step), key="teach_lattice")

    names = {node.id: node.name or str(node.id) for node in problem.graph.nodes}
    loads = ", ".join(
        f"{t}: {'not allowed' if load == float('inf') else f'{load:.6g}'}" for t, load in zip(trace.types, item.loads)
    )
    st.markdown(
        f"**Stage J \\ I** = groups {list(item.stage_groups)} (nodes "
        f"{', '.join(names[n] for n in item.stage_nodes)}); its load on one device: {loads}."
    )
    table = trace.best_after(step)
    row = table.get(item.ideal, {})
    improved = {state_: t for state_, _, t in item.improved}

    def _state_label(counts) -> str:
        return " + ".join(f"{c} {t}" for c, t in zip(counts, trace.types)) or "no devices"

    st.markdown("**Best split found so far for J, per device count** (this step's improvements marked):")
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "devices (at most)": _state_label(s),
                    "best[J] so far": row.get(s, float("inf")),
                    "improved now": f"last stage on {trace.types[improved[s]]}" if s in improved else "",
                }
                for s in trace.states
            ]
        ),
        key="teach_table",
        hide_index=True,
    )
    if step == last:
        st.success(
            f"Done: best[all groups][all devices] = {trace.answer:.6g}; the exact DP (solve_dp) gives "
            f"{optimum.objective:.6g}."
            if optimum.ok
            else f"Done: {trace.answer}; solve_dp: {optimum.status}"
        )

# ----------------------------------------------------------------------------- why is this optimal
with tab_why:
    plan_problem, result = state.result_problem(), state.current_result()
    st.caption("For the plan on the Placement page (current graph and devices).")
    if result is None or not result.ok:
        st.info("No plan to explain (see the Placement page).")
    else:
        try:
            with st.spinner("Counting the DP's search space..."):
                why = explain_optimality(plan_problem, result.placement)
        except placement.PlacementError as exc:
            st.error(str(exc))
        else:
            cols = st.columns(4)
            cols[0].metric("Time per sample", f"{why.time_per_sample:.6g}", help=f"{result.method}, {result.status}")
            cols[1].metric("Lower bound", f"{why.lower_bound:.6g}", help=why.bound_reason)
            cols[2].metric("Ideals · pairs searched", f"{why.ideals:,} · {why.pairs:,}")
            cols[3].metric(
                "Bottleneck device",
                str(why.bottleneck),
                help=f"compute {why.bottleneck_compute:.6g} + communication {why.bottleneck_communication:.6g}",
            )
            proof = (
                "Every contiguous split is a chain of ideals ∅ ⊊ I1 ⊊ ... ⊊ all, one stage per step; the DP "
                f"scored every one of the {why.pairs:,} pairs (I ⊆ J) of the {why.ideals:,} ideals, so no "
                "contiguous split has a smaller time per sample"
                if result.status == Status.OPTIMAL and result.method == "dp"
                else f"{result.method} reports status {result.status}"
            )
            st.markdown(
                f"**Why:** {proof}. No split at all can beat the lower bound {why.lower_bound:.6g} "
                f"({why.bound_reason}); this plan is {why.time_per_sample / why.lower_bound - 1:.1%} above "
                f"it. The bottleneck is **{why.bottleneck}**: moving work off it is the only way down."
                if why.lower_bound > 0
                else f"**Why:** {proof}."
            )

# ----------------------------------------------------------------------------- beat the solver
with tab_beat:
    st.markdown(
        "Assign every node to a device in the table (the **device** column). The max-load, the rules "
        "your split breaks and the gap to the optimum update as you edit."
    )
    slots = [str(slot) for slot in problem.devices.slots()]
    by_label = {str(slot): slot for slot in problem.devices.slots()}
    version = st.session_state.get("_teach_beat_version", 0)
    source_key = (state.problem_key(problem), version)
    if st.session_state.get("_teach_beat_source", (None,))[0] != source_key:
        frame = pd.DataFrame(
            [
                {"node": n.id, "name": n.name or "", "backward": n.is_backward, "device": slots[0]}
                for n in problem.graph.nodes
            ]
        )
        st.session_state["_teach_beat_source"] = (source_key, frame)
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
    mine = placement.Placement.from_assignment(assignment, order=problem.devices.slots())
    evaluation = placement.evaluate(problem, mine)
    broken = list(evaluation.violations)
    if not placement.is_contiguous(problem, mine):
        broken.append(
            "the split is not contiguous (some device's nodes are not a stage J \\ I of ideals): "
            "allowed, but outside the DP's search space"
        )
    cols = st.columns(3)
    cols[0].metric("Your max-load", f"{evaluation.max_load:.6g}")
    if optimum.ok:
        cols[1].metric("Optimum (DP)", f"{optimum.objective:.6g}")
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
