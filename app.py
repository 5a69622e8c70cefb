"""Home page of the what-if explorer: what the tool does, the current graph and devices, links.

Run with ``streamlit run app.py``; the pages in ``pages/`` are discovered automatically.
"""

from pathlib import Path

import streamlit as st

from ui import guard, state

guard.run_page(__file__, globals())  # one-line errors, never a traceback


def main() -> None:
    """Draw the home page."""
    st.set_page_config(page_title="Device placement explorer", page_icon=":material/account_tree:", layout="wide")
    state.ensure_default_graph()

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
        st.markdown(f"**{state.current_graph_name()}**: {len(problem.graph.nodes)} nodes, {len(problem.graph.edges)} "
                    f"edges, {'training' if problem.graph.is_training else 'inference'}")
        rules = state.latency_rules()
        if rules:
            st.caption("Latency multipliers: " + ", ".join(f"`{p}` x{f:g}" for p, f in rules))
    with col_devices:
        st.subheader("Current devices")
        st.markdown(state.describe_devices(problem.devices))

    st.subheader("Pages")
    pages = (
        ("pages/1_Graph.py", "Graph", "choose a sample or upload a graph; see its DAG, nodes and statistics"),
        ("pages/2_Devices.py", "Devices", "accelerators, CPU cores, memory, bandwidth and speed, presets, inventory"),
        ("pages/3_Placement.py", "Placement", "the optimal split, per-device load and memory, downloads"),
        ("pages/4_Timeline.py", "Timeline", "the pipeline schedule and memory over time"),
        ("pages/5_Tradeoffs.py", "Tradeoffs", "time per sample against devices, memory and cost"),
        ("pages/6_Compare.py", "Compare", "every method on the current graph and devices"),
    )
    root = Path(__file__).resolve().parent
    for path, label, what in pages:
        if (root / path).exists():
            st.page_link(path, label=f"{label}: {what}")


# Process-pool workers (sweeps) re-import the running script as __mp_main__: draw nothing there.
if __name__ != "__mp_main__":
    main()
