"""Graph page: pick a sample or upload a graph; its DAG, statistics and node table."""

import pandas as pd
import streamlit as st

import placement
from placement import viz
from ui import guard, state, worker
from ui.model_import import render_model_import
from ui.scenario import render_scenario_card

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)

#: Characters of a node's name in the node table (longer ones are cut, with a caption).
TABLE_NAME_CHARS = 200


def _samples() -> dict:
    """Sample label -> file, sorted by group (granularity and phase), then label."""
    samples = sorted(state.sample_files(), key=lambda p: (state.sample_group(p), state.sample_label(p)))
    return {state.sample_label(p): p for p in samples}


def _load_selected_sample() -> None:
    by_label = _samples()
    label = st.session_state.get("graph_sample")
    if label in by_label:
        state.load_sample(by_label[label])
        st.session_state.pop("_graph_upload_error", None)


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
        uploaded = st.file_uploader(
            f"...or upload a graph in the paper's JSON format (at most {placement.MAX_FILE_BYTES // 2**20} MB)",
            type=["json"],
            key="graph_upload",
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
                    try:
                        problem = worker.run(worker.parse_upload, uploaded.getvalue(), uploaded.name)
                    except placement.PlacementError as exc:
                        st.session_state["_graph_upload_error"] = str(exc)
                    else:
                        state.set_graph(problem, uploaded.name, source=f"upload:{uploaded.name}")
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
        f"{ideals:,}" if ideals is not None else f"> {state.IDEALS_CAP:,}",
        help="Ideals (downward-closed node sets) of the graph after contracting color classes; "
        f"the DP's search space before its own reductions (counted up to the DP's limit, "
        f"{state.IDEALS_CAP:,}).",
    )
    st.caption(state.describe_ideal_bounds(graph, ideals))

    st.plotly_chart(
        viz.graph_figure(graph, layout=state.graph_layout(graph)),
        key="graph_dag",
        config={"scrollZoom": True, "displaylogo": False},
    )
    st.caption(
        "Left to right in longest-path layers; circles are forward nodes, diamonds backward nodes. "
        "Drag to pan, scroll to zoom, hover for latencies and size."
    )

    with st.expander(f"Node table ({len(graph.nodes)} nodes)", expanded=len(graph.nodes) <= 40):
        rows = viz.node_rows(graph)
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
