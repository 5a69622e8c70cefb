"""Graph page: pick a sample or upload a graph; its DAG, statistics and node table."""

import pandas as pd
import streamlit as st

import placement
from placement import viz
from ui import graph_budget, guard, state, worker
from ui.model_import import render_model_import
from ui.scenario import render_scenario_card

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)

#: Characters of a node's name in the node table (longer ones are cut, with a caption).
TABLE_NAME_CHARS = 200


def _samples() -> dict:
    """Sample label -> file, sorted by group (granularity and phase), then label."""
    samples = sorted(state.sample_files(), key=lambda p: (state.sample_group(p), state.sample_label(p)))
    return {state.sample_label(p): p for p in samples}


#: Session-state key of the graph uploader's generation (its key changes after a refused file).
_UPLOAD_GENERATION = "_graph_upload_generation"


def _load_selected_sample() -> None:
    by_label = _samples()
    label = st.session_state.get("graph_sample")
    if label in by_label:
        state.load_sample(by_label[label])
        st.session_state.pop("_graph_upload_error", None)


def _read_upload(data: bytes, name: str) -> None:
    """Load an uploaded graph, or keep its one-line refusal: its estimated work first, then the parse."""
    refusal = graph_budget.estimate_upload(data).refusal(name)
    if refusal is not None:
        st.session_state["_graph_upload_error"] = refusal
        return
    try:
        problem = worker.run(worker.parse_upload, data, name)
    except placement.PlacementError as exc:
        st.session_state["_graph_upload_error"] = str(exc)
    else:
        state.set_graph(problem, name, source=f"upload:{name}")


def _choose() -> None:
    """Pick a sample or upload a graph in the paper's format."""
    by_label = _samples()
    labels = list(by_label)
    groups = {label: state.sample_group(path) for label, path in by_label.items()}
    source = state.current_graph_source()
    current_label = source.removeprefix("sample:") if source.startswith("sample:") else None
    if current_label in by_label:
        # Keep the picker on the loaded sample (also after another page loaded one).
        if st.session_state.get("graph_sample") != current_label:
            st.session_state["graph_sample"] = current_label
    else:
        state.init_widget("graph_sample", labels[0])

    col_pick, col_upload = st.columns(2)
    with col_pick:
        st.selectbox(
            "Sample graph (granularity · phase — file)",
            labels,
            key="graph_sample",
            format_func=lambda label: f"{groups[label]} — {label}",
            on_change=_load_selected_sample,
            help="Every graph in sample_graphs/, grouped by granularity (layer / operator) and phase "
            "(inference / training). throughput/ files come with the paper's throughput devices, latency/ files "
            "with its latency devices.",
        )
    with col_upload:
        # A refused file is let go: removed from Streamlit's upload store (which otherwise keeps it for the
        # session's life and 120 s after its tab closes) and the uploader given a fresh key (generation).
        generation = st.session_state.get(_UPLOAD_GENERATION, 0)
        uploaded = st.file_uploader(
            f"...or upload a graph in the paper's JSON format (at most {placement.MAX_FILE_BYTES // 2**20} MB)",
            type=["json"],
            key="graph_upload" if generation == 0 else f"graph_upload_{generation}",
            max_upload_size=state.UPLOAD_LIMIT_MB,
        )
        if uploaded is not None:
            file_key = (uploaded.file_id, uploaded.name, uploaded.size)
            if st.session_state.get("_graph_upload_seen") != file_key:
                st.session_state["_graph_upload_seen"] = file_key
                st.session_state.pop("_graph_upload_error", None)
                if uploaded.size > placement.MAX_FILE_BYTES:
                    st.session_state["_graph_upload_error"] = (
                        f"{uploaded.name}: file is {uploaded.size:,} bytes, over the "
                        f"{placement.MAX_FILE_BYTES:,}-byte limit"
                    )
                else:
                    _read_upload(uploaded.getvalue(), uploaded.name)
                if st.session_state.get("_graph_upload_error"):
                    state.forget_upload(uploaded.file_id)  # its bytes leave the server's upload store now
                    st.session_state[_UPLOAD_GENERATION] = generation + 1
                    st.rerun()  # the fresh uploader, holding no file
        error = st.session_state.get("_graph_upload_error")
        if error:
            st.error(f"{error} — the previous graph stays loaded.")
    with col_pick:
        if not state.current_graph_source().startswith("sample:"):
            # The loaded graph is an upload or an imported model: picking the sample shown needs a click.
            st.caption(f"Loaded now: **{state.current_graph_name()}** (not a sample).")
            st.button("Load the selected sample", key="graph_load_sample", on_click=_load_selected_sample)


def _loaded_graph() -> None:
    """The loaded graph: its device settings, statistics, DAG and node table."""
    problem = state.current_problem()
    graph = problem.graph
    st.subheader(f"{state.current_graph_name()}")
    state.cost_source_caption()
    col_origin, col_file = st.columns([4, 1], vertical_alignment="center")
    col_origin.caption(state.devices_origin_text())
    if state.devices_origin() == "custom" and col_file.button("Use the file's own settings", key="graph_file_devices"):
        state.use_file_devices()
        st.rerun()
    if state.latency_rules():
        st.caption(
            "Latency multipliers from the Devices page are applied: "
            + ", ".join(f"`{p}` x{f:g}" for p, f in state.latency_rules())
        )

    stats = viz.graph_stats(graph)
    counted = len(graph.nodes) <= graph_budget.IDEAL_COUNT_MAX_NODES
    ideals = None
    if counted:
        with st.spinner("Counting ideals..."):
            ideals = state.ideal_count(graph)
    cols = [*st.columns(3), *st.columns(3)]  # two rows: six metrics in one row cut long values short
    cols[0].metric(
        "Nodes",
        f"{stats['nodes']:,}",
        help=f"{stats['forward nodes']} forward, {stats['backward nodes']} backward, {stats['CPU-only nodes']} CPU-only",
    )
    cols[1].metric("Edges", f"{stats['edges']:,}")
    cols[2].metric(
        "Color classes",
        f"{stats['color classes']:,}" if stats["color classes"] else "none",
        help="Groups of nodes that must share a device (a forward node and its gradient); none: every node is free.",
    )
    cols[3].metric(
        "Total compute",
        state.format_time(stats["total accelerator compute"]),
        help=f"Sum of accelerator latencies; CPU: {state.format_time(stats['total CPU compute'])}. "
        + state.time_unit_note(),
    )
    cols[4].metric("Memory", viz.format_bytes(stats["total memory (bytes)"]), help="Sum of node sizes")
    cols[5].metric(
        "Ideals",
        (f"{ideals:,}" if ideals is not None else f"> {state.IDEALS_CAP:,}") if counted else "not counted",
        help="Ideals (downward-closed node sets) of the graph after contracting color classes; "
        f"the DP's search space before its own reductions (counted up to the DP's limit, "
        f"{state.IDEALS_CAP:,}, on graphs of at most {graph_budget.IDEAL_COUNT_MAX_NODES:,} nodes; "
        "the bounds below hold for every graph).",
    )
    st.caption(state.describe_ideal_bounds(graph, ideals))

    _figure(graph)
    _node_table(graph)


def _figure(graph: placement.Graph) -> None:
    """The DAG; a graph over ``graph_budget.FIGURE_MAX_NODES`` nodes is drawn on its first nodes (said so)."""
    shown = graph_budget.figure_sample(graph)
    st.plotly_chart(
        viz.graph_figure(shown, layout=state.graph_layout(shown)),
        key="graph_dag",
        config={"scrollZoom": True, "displaylogo": False},
    )
    sampled = (
        f"Drawn: the first {len(shown.nodes):,} of {len(graph.nodes):,} nodes in topological order and the edges "
        "between them (the page draws at most that many). "
        if shown is not graph
        else ""
    )
    st.caption(
        sampled + "Left to right in longest-path layers; circles are forward nodes, diamonds backward nodes. "
        "Drag to pan, scroll to zoom, hover for latencies and size."
    )


def _node_table(graph: placement.Graph) -> None:
    """The node table, in pages of ``graph_budget.TABLE_PAGE_ROWS`` rows; long names cut (said so)."""
    count = len(graph.nodes)
    with st.expander(f"Node table ({count:,} nodes)", expanded=count <= 40):
        pages = graph_budget.table_pages(count)
        first = 0
        if pages > 1:
            page = st.number_input(
                f"Page (of {pages:,})", min_value=1, max_value=pages, value=1, step=1, key="graph_table_page"
            )
            first = (min(int(page), pages) - 1) * graph_budget.TABLE_PAGE_ROWS
            last = min(count, first + graph_budget.TABLE_PAGE_ROWS)
            st.caption(f"Rows {first + 1:,} to {last:,} of {count:,} (pages of {graph_budget.TABLE_PAGE_ROWS:,} rows).")
        rows = viz.node_rows(graph)[first : first + graph_budget.TABLE_PAGE_ROWS]
        if any(len(row["name"] or "") > TABLE_NAME_CHARS for row in rows):
            # 4,000 names of 10 kB (an upload near the limit) made a 40 MB table for the server to send
            for row in rows:
                if len(row["name"] or "") > TABLE_NAME_CHARS:
                    row["name"] = row["name"][: TABLE_NAME_CHARS - 1] + "…"
            st.caption(f"Names longer than {TABLE_NAME_CHARS} characters are cut here (the file keeps them whole).")
        st.dataframe(pd.DataFrame(rows), key="graph_nodes", hide_index=True)


def main() -> None:
    """Draw the page: choose a graph, import a model, the loaded graph, then share the view."""
    st.title("Graph")
    _choose()
    render_model_import()
    _loaded_graph()
    render_scenario_card()


main()
