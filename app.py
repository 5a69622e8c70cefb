"""Entry point of the what-if explorer: page config, the default graph and the navigation, once.

Run with ``streamlit run app.py``. The pages live in ``pages/`` but are listed explicitly in
:data:`PAGES` and shown through ``st.navigation`` (so ``pages/`` is not auto-discovered and the
pages themselves neither set the page config nor load the default graph).
"""

import streamlit as st

from ui import guard, state

#: The pages in sidebar order: (file or None for the home page, title, icon, url path, what it shows).
PAGES = (
    (None, "Home", ":material/home:", "home", "what the tool does, the current graph and devices"),
    (
        "pages/1_Graph.py",
        "Graph",
        ":material/account_tree:",
        "Graph",
        "choose a sample or upload a graph; see its DAG, nodes and statistics",
    ),
    (
        "pages/2_Devices.py",
        "Devices",
        ":material/memory:",
        "Devices",
        "accelerators, CPU cores, memory, bandwidth and speed, presets, inventory",
    ),
    (
        "pages/3_Placement.py",
        "Placement",
        ":material/splitscreen:",
        "Placement",
        "the optimal split, per-device load and memory, downloads",
    ),
    (
        "pages/4_Timeline.py",
        "Timeline",
        ":material/timeline:",
        "Timeline",
        "the pipeline schedule and memory over time",
    ),
    (
        "pages/5_Tradeoffs.py",
        "Tradeoffs",
        ":material/show_chart:",
        "Tradeoffs",
        "time per sample against devices, memory and cost",
    ),
    (
        "pages/6_Compare.py",
        "Compare",
        ":material/compare_arrows:",
        "Compare",
        "every method on the current graph and devices",
    ),
    (
        "pages/7_Purchase.py",
        "Plan a purchase",
        ":material/shopping_cart:",
        "Purchase",
        "the cheapest configuration for a speed, what more cards are worth, the cost/speed frontier",
    ),
    (
        "pages/8_Uncertainty.py",
        "Uncertainty",
        ":material/casino:",
        "Uncertainty",
        "latency error bars: Monte Carlo of time per sample, out-of-memory risk and bottlenecks",
    ),
    (
        "pages/7_Plan_view.py",
        "Plan view",
        ":material/dashboard:",
        "Plan_view",
        "graph, loads, Gantt and memory of one plan, linked; compare two plans",
    ),
    (
        "pages/7_Parallel_plan.py",
        "Parallel plan",
        ":material/grid_view:",
        "Parallel_plan",
        "data x tensor x pipeline parallelism with recomputation, up to 1024 devices (Piper's model)",
    ),
    (
        "pages/8_Teaching.py",
        "Teaching",
        ":material/school:",
        "Teaching",
        "step through the DP, why a plan is optimal, beat the solver",
    ),
)


def home() -> None:
    """Draw the home page."""
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

    st.subheader("Pages")
    for path, title, icon, _, what in PAGES:
        if path is not None:
            st.page_link(path, label=f"{title}: {what}", icon=icon)


def main() -> None:
    """Set the page config, load the default graph, and run the page picked in the sidebar."""
    st.set_page_config(page_title="Device placement explorer", page_icon=":material/account_tree:", layout="wide")
    guard.run(_route)  # one-line errors on every page (and while loading the graph), never a traceback


def _route() -> None:
    """Load the default graph (or the one the link names) and run the page picked in the sidebar."""
    state.ensure_default_graph()
    pages = [
        st.Page(home if path is None else path, title=title, icon=icon, url_path=url, default=path is None)
        for path, title, icon, url, _ in PAGES
    ]
    st.navigation(pages).run()


# Process-pool workers (sweeps) re-import the running script as __mp_main__: draw nothing there.
if __name__ != "__mp_main__":
    main()
