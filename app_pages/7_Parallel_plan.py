"""Parallel plan page: data x tensor x pipeline parallelism with activation recomputation (Piper's model).

Plans a Piper workload (sample or upload) or the graph loaded in the app (its options generated from the
roofline by ``placement.multidim.options_from_graph``), lets the user set the device count (up to 1024), memory per
device, bandwidth and microbatches, and shows the proven-optimal plan: a stage table (d x t, options
chosen, memory against the cap, time per sample), a timeline (one row per stage of d replicas) and the
curve of optimal time per sample for 8..1024 devices.
"""

from dataclasses import replace
from pathlib import Path

import streamlit as st

from placement import MAX_FILE_BYTES, PlacementError, Problem, viz
from placement.multidim.convert import options_from_graph
from placement.multidim.dp import solve_multidim
from placement.multidim.evaluate import evaluate_plan
from placement.multidim.io import piper_from_json
from placement.multidim.sweep import DEFAULT_COUNTS, device_curve
from ui import guard, state

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)

SAMPLES = Path(__file__).resolve().parent.parent / "sample_graphs" / "piper"
GiB = 2**30
PIPER, GRAPH = "a Piper workload", "the graph loaded in the app"


@st.cache_data(show_spinner=False, max_entries=8)
def _load(text: bytes | str, name: str):
    return piper_from_json(text, name)


def _configured(problem, devices: int, memory_gib: float, bandwidth_gib: float, microbatches: int):
    kind = replace(
        problem.kinds[0], count=int(devices), memory=float(memory_gib) * GiB, bandwidth=float(bandwidth_gib) * GiB
    )
    return replace(problem, kinds=(kind,), microbatches=int(microbatches))


@st.cache_data(show_spinner=False, max_entries=8, hash_funcs={Problem: lambda p: (p.graph.digest, repr(p.devices))})
def _converted(problem: Problem, devices=None, memory_gib=None, bandwidth_gib=None, microbatches=None):
    """The loaded graph in Piper's model (options from the roofline); None values: the graph's defaults."""
    kwargs = {} if microbatches is None else {"microbatches": int(microbatches)}
    return options_from_graph(
        problem,
        devices=devices,
        memory=None if memory_gib is None else float(memory_gib) * GiB,
        bandwidth=None if bandwidth_gib is None else float(bandwidth_gib) * GiB,
        **kwargs,
    )


def _base(text: str, name: str, devices: int, memory_gib: float, bandwidth_gib: float, microbatches: int):
    if text == GRAPH:  # the app's graph (name: its digest, for the caches)
        return _converted(_graph_problem(), 1, memory_gib, bandwidth_gib, microbatches)
    return _configured(_load(text, name), 1, memory_gib, bandwidth_gib, microbatches)


def _graph_problem() -> Problem:
    return Problem(state.current_graph(), state.current_devices())


@st.cache_data(show_spinner=False, max_entries=32)
def _solve(text: str, name: str, devices: int, memory_gib: float, bandwidth_gib: float, microbatches: int):
    problem = _base(text, name, devices, memory_gib, bandwidth_gib, microbatches).with_devices(int(devices))
    result = solve_multidim(problem)
    evaluation = evaluate_plan(problem, result.plan) if result.plan is not None else None
    return problem, result, evaluation


@st.cache_data(show_spinner=False, max_entries=16)
def _curve(text: str, name: str, memory_gib: float, bandwidth_gib: float, microbatches: int):
    problem = _base(text, name, 1, memory_gib, bandwidth_gib, microbatches)
    bar = st.progress(0.0, text="curve: starting")
    points = device_curve(
        problem,
        DEFAULT_COUNTS,
        progress=lambda done, total: bar.progress(done / total, text=f"curve: {done} of {total}"),
    )
    bar.empty()
    return points


st.title("Parallel plan")
st.caption(
    "Data x tensor x pipeline parallelism with activation recomputation, in Piper's cost model "
    "(sample_graphs/piper/README.md). Every plan is proven optimal by an exact DP and re-checked by an "
    "independent evaluator."
)

source = st.radio("plan", (PIPER, GRAPH), horizontal=True, key="md_source")
suffix = "" if source == PIPER else "_graph"  # each source keeps its own settings
if source == PIPER:
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
        name, text = upload.name, upload.getvalue()  # bytes: the reader checks size and UTF-8
    else:
        name, text = choice, (SAMPLES / choice).read_text()
else:
    st.caption(
        f"**{state.current_graph_name() or 'the loaded graph'}**: tensor-parallel and recompute options from "
        "the roofline where the graph has it (model builders, ONNX imports), else t = 1 only (README, "
        "'Options for our graphs')."
    )
    name, text = _graph_problem().graph.digest, GRAPH

try:
    base = _load(text, name) if source == PIPER else _converted(_graph_problem())
except PlacementError as exc:
    st.error(str(exc))
    st.stop()

kind = base.kinds[0]
if len(base.kinds) > 1:
    st.info(
        "This file has several device kinds; the page plans with the first kind only "
        "(use the CLI or the library for heterogeneous plans)."
    )
cols = st.columns(4)
devices = cols[0].number_input(
    "devices", min_value=1, max_value=1024, value=min(max(kind.count, 1), 1024), step=1, key=f"md_devices{suffix}"
)
memory_gib = cols[1].number_input(
    "memory per device (GiB)", min_value=0.01, value=round(kind.memory / GiB, 3), key=f"md_memory{suffix}"
)
bandwidth_gib = cols[2].number_input(
    "bandwidth (GiB/s)", min_value=0.001, value=round(kind.bandwidth / GiB, 3), key=f"md_bandwidth{suffix}"
)
microbatches = cols[3].number_input(
    "microbatches per batch (N)", min_value=1, value=base.microbatches, step=1, key=f"md_microbatches{suffix}"
)

with st.spinner("solving"):
    try:
        problem, result, evaluation = _solve(
            text, name, int(devices), float(memory_gib), float(bandwidth_gib), int(microbatches)
        )
    except PlacementError as exc:
        st.error(str(exc))
        st.stop()

if result.status != "optimal":
    st.warning(
        f"No plan fits: every split of {len(problem.nodes)} nodes over {int(devices)} devices breaks the "
        f"memory cap or the degree rules (proven by the exact DP)."
    )
else:
    m = st.columns(2) + st.columns(2)  # two rows: no number cut at 1024 px (issue 26)
    m[0].metric("time per sample", f"{evaluation.time_per_sample:.6g} s")
    m[1].metric("stages", len(result.plan.stages))
    m[2].metric("devices used", sum(n for _, n in evaluation.devices_used))
    m[3].metric("solve time", f"{result.seconds:.2f} s")
    st.success(
        f"Proven optimal in the model{(' (' + result.bound + ')') if result.bound else ''}: "
        f"{result.probes} decision DPs over {result.ideals} ideals; the evaluator "
        f"{'confirms' if evaluation.feasible else 'REJECTS'} the plan."
    )
    st.subheader("Stages")
    st.dataframe(
        viz.multidim_stage_rows(problem, result.plan, evaluation),
        hide_index=True,
        width="stretch",
        key="md_stage_table",
        column_config={"time per sample": st.column_config.NumberColumn(format="%.6f s")},
    )
    st.plotly_chart(viz.multidim_timeline_figure(result.plan, evaluation), width="stretch", key="md_timeline")

st.subheader("Time per sample vs devices")
if st.toggle("draw the curve for 8..1024 devices", value=True, key="md_curve_on"):
    points = _curve(text, name, float(memory_gib), float(bandwidth_gib), int(microbatches))
    st.plotly_chart(viz.multidim_curve_figure(points, selected=int(devices)), width="stretch", key="md_curve")

from ui import launch_plan  # noqa: E402 - transformer training: the launchable-layout planner

launch_plan.render()
