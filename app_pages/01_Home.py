"""Home page: what the tool does, the current graph and devices, links to every page."""

import streamlit as st

from ui import guard, state
from ui.navigation import PAGES

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


def main() -> None:
    """Draw the page."""
    st.title("Device placement explorer")
    st.markdown(
        "This tool splits a DNN operator graph over accelerators and CPU cores so that a pipeline runs as fast as "
        "possible, using the exact algorithms of Tarnawski et al. (NeurIPS 2020). "
        "Pick or upload a graph, change the devices (how many, how much memory, how fast the links are) and see "
        "the optimal placement, its per-device load and its time per sample update live. "
        "Further pages show the schedule over time, trade-offs between devices and speed, and every method side by side."
    )

    problem = state.current_problem()
    col_graph, col_devices = st.columns(2)
    with col_graph:
        st.subheader("Current graph")
        st.markdown(
            f"**{state.current_graph_name()}**: {len(problem.graph.nodes)} nodes, {len(problem.graph.edges)} "
            f"edges, {'training' if problem.graph.is_training else 'inference'}"
        )
        st.caption(state.time_unit_note())
        rules = state.latency_rules()
        if rules:
            st.caption("Latency multipliers: " + ", ".join(f"`{p}` x{f:g}" for p, f in rules))
    with col_devices:
        st.subheader("Current devices")
        st.markdown(state.describe_devices(problem.devices))
        state.cost_source_caption()

    st.subheader("Pages")
    for path, title, icon, _, what in PAGES[1:]:
        st.page_link(path, label=f"{title}: {what}", icon=icon)


main()
