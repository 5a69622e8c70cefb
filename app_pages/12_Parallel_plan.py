"""Parallel plan page: data x tensor x pipeline parallelism with activation recomputation (Piper's model).

Plans the graph loaded in the app (default; its options generated from the roofline by
``placement.multidim.options_from_graph``, its device kinds and counts from the session's inventory) or a
Piper workload (sample or upload), lets the user set each kind's count, memory and bandwidth and the
microbatches, and shows the proven-optimal plan in ms like every page: a stage table (d x t, options chosen,
memory against the cap, compute and communication per sample), a line comparing it with the Devices page's
one-device-per-stage answer, a labelled timeline and the curve of optimal time per sample for 8..1024 devices.
The multidim model works in seconds; the page converts at that boundary (``ui.parallel_plan``); the cached
work is in ``ui.parallel_plan_runs``.
"""

from pathlib import Path

import streamlit as st

from placement import MAX_FILE_BYTES, PlacementError, Status, viz
from ui import guard, launch_plan, state
from ui import parallel_plan as pp
from ui import parallel_plan_runs as runs

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)

SAMPLES = Path(__file__).resolve().parent.parent / "sample_graphs" / "piper"
PIPER, GRAPH = "a Piper workload", runs.GRAPH


def _source() -> tuple[str, str | bytes, str]:
    """The workload: (name, text, source); the app's graph has its digest as name and :data:`GRAPH` as text."""
    source = st.radio("plan", (GRAPH, PIPER), horizontal=True, key="md_source")
    if source == GRAPH:
        st.caption(
            f"**{state.current_graph_name() or 'the loaded graph'}**: tensor-parallel and recompute options from "
            "the roofline where the graph has it (model builders, ONNX imports), else t = 1 only (docs: "
            "models/piper.md, 'Our graphs in Piper's model')."
        )
        return runs.graph_problem().graph.digest, GRAPH, source
    samples = sorted(p.name for p in SAMPLES.glob("*.json"))
    left, right = st.columns(2)
    with left:
        choice = st.selectbox(
            "Piper workload",
            samples,
            index=samples.index("bert32a100.json") if "bert32a100.json" in samples else 0,
            key="md_sample",
        )
    with right:
        upload = st.file_uploader(
            f"or upload a Piper JSON file (at most {MAX_FILE_BYTES // 2**20} MB)",
            type=["json"],
            key="md_upload",
            max_upload_size=state.UPLOAD_LIMIT_MB,
        )
    if upload is not None:
        return upload.name, upload.getvalue(), source  # bytes: the reader checks size and UTF-8
    return choice, (SAMPLES / choice).read_text(), source


def _settings(base, name: str, source: str) -> tuple[tuple, int]:
    """Each kind's count, memory and bandwidth, and the microbatches (each source keeps its own settings)."""
    suffix = "" if source == PIPER else "_graph"
    if source == GRAPH:
        group, version = "md_graph", (name, repr(state.current_devices()))  # another graph or inventory: its values
        st.caption(
            f"Device kinds and counts from the session's inventory: {state.describe_devices(state.current_devices())}."
        )
    else:
        group, version = "md_piper", name
    # New inventory or new file: its values; else the user's own.
    state.sync_widgets(group, pp.widget_defaults(base.kinds, base.microbatches, suffix), version)
    settings = []
    for i, k in enumerate(base.kinds):
        cols = st.columns(3)
        prefix = pp.kind_prefix(k.name)
        speed = f"Speed {k.speed:.3g} relative to the graph's reference times (1 = as fast)."
        count = cols[0].number_input(
            f"{prefix}devices",
            min_value=0,
            max_value=pp.MAX_DEVICES,
            step=1,
            key=pp.setting_key("devices", i, suffix),
            help=speed,
        )
        memory_key, bandwidth_key = pp.setting_key("memory", i, suffix), pp.setting_key("bandwidth", i, suffix)
        memory_gib = cols[1].number_input(f"{prefix}memory per device (GiB)", min_value=0.01, key=memory_key)
        bandwidth_gib = cols[2].number_input(f"{prefix}bandwidth (GiB/s)", min_value=0.001, key=bandwidth_key)
        settings.append((int(count), float(memory_gib), float(bandwidth_gib)))
    microbatches = st.columns(3)[0].number_input(
        "microbatches per batch (N)", min_value=1, step=1, key=f"md_microbatches{suffix}"
    )
    return tuple(settings), int(microbatches)


def _no_plan(problem, result, devices: int, source: str) -> None:
    st.warning(
        f"No plan fits: every split of {len(problem.nodes)} nodes over {devices} devices breaks the "
        f"memory cap or the degree rules (proven by the exact DP)."
    )
    m = st.columns(2) + st.columns(2)  # the same headline row, so the page reads the same either way
    m[0].metric("time per sample", "no plan fits")
    m[1].metric("stages", "—")
    m[2].metric("devices used", f"0 of {devices}")
    m[3].metric("solve time", f"{result.seconds:.2f} s")
    if source == GRAPH:
        st.markdown(pp.no_plan_reference(*runs.devices_answer()))


def _plan(problem, result, evaluation, source: str) -> None:
    m = st.columns(2) + st.columns(2)  # two rows: no number cut at 1024 px (issue 26)
    m[0].metric("time per sample", state.format_time(evaluation.time_per_sample))
    m[1].metric("stages", len(result.plan.stages))
    m[2].metric("devices used", sum(n for _, n in evaluation.devices_used))
    m[3].metric("solve time", f"{result.seconds:.2f} s")
    st.success(
        f"Proven optimal in the model{(' (' + result.restriction + ')') if result.restriction else ''}: "
        f"{result.probes} decision DPs over {result.ideals} ideals; the evaluator "
        f"{'confirms' if evaluation.feasible else 'REJECTS'} the plan."
    )
    if source == GRAPH:
        devices_ms, devices_used = runs.devices_answer()
        added = not state.current_graph().is_training
        st.markdown(pp.cross_reference(devices_ms, devices_used, result.plan, evaluation, training_added=added))
    else:
        st.caption("The Devices page plans the graph loaded in the app, not this Piper workload: no comparison.")
    st.subheader("Stages")
    st.dataframe(
        viz.multidim_stage_rows(problem, result.plan, evaluation),
        hide_index=True,
        width="stretch",
        key="md_stage_table",
        column_config={
            f"{part} (ms)": st.column_config.NumberColumn(format="%.4g ms")
            for part in ("time per sample", "compute", "communication")
        },
    )
    st.plotly_chart(viz.multidim_timeline_figure(result.plan, evaluation), width="stretch", key="md_timeline")


def main() -> None:
    """Draw the page, then the launchable-layout planner (transformer training, :mod:`ui.launch_plan`)."""
    st.title("Parallel plan")
    st.caption(
        "Data x tensor x pipeline parallelism with activation recomputation, in Piper's cost model "
        "(sample_graphs/piper/README.md). Every plan is proven optimal by an exact DP and re-checked by an "
        "independent evaluator. That model's times come from the graph's own profiled costs, and no measured run "
        "here checks them; the transformer model of the launchable-layout section below is checked against "
        "measured runs (its band is shown with each number)."
    )
    name, text, source = _source()
    try:
        base = runs.load(text, name) if source == PIPER else runs.converted(runs.graph_problem())
    except PlacementError as exc:
        st.error(str(exc))
        st.stop()
    settings, microbatches = _settings(base, name, source)
    devices = sum(c for c, _, _ in settings)
    with st.spinner("solving"):
        try:
            if devices < 1:
                raise PlacementError("devices: set at least one device")
            problem, result, evaluation = runs.solve(text, name, settings, microbatches)
        except PlacementError as exc:
            st.error(str(exc))
            st.stop()
    if result.status != Status.OPTIMAL:
        _no_plan(problem, result, int(devices), source)
    else:
        _plan(problem, result, evaluation, source)
    st.subheader("Time per sample vs devices")
    if st.toggle("draw the curve for 8..1024 devices", value=True, key="md_curve_on"):
        points = runs.curve(text, name, settings, microbatches)
        if len(settings) > 1:
            st.caption(f"The curve varies the {base.kinds[0].name} count alone (the other kinds left out).")
        st.plotly_chart(viz.multidim_curve_figure(points, selected=settings[0][0]), width="stretch", key="md_curve")
    launch_plan.render()


main()
