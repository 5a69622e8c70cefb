"""Parallel plan page: data x tensor x pipeline parallelism with activation recomputation (Piper's model).

Plans the graph loaded in the app (default; its options generated from the roofline by
``placement.multidim.options_from_graph``, its device kinds and counts from the session's inventory) or a
Piper workload (sample or upload), lets the user set each kind's count, memory and bandwidth and the
microbatches, and shows the proven-optimal plan in ms like every page: a stage table (d x t, options chosen,
memory against the cap, compute and communication per sample), a line comparing it with the Devices page's
one-device-per-stage answer, a labelled timeline and the curve of optimal time per sample for 8..1024 devices.
The multidim model works in seconds; the page converts at that boundary (``ui.parallel_plan``).
"""

from dataclasses import replace
from pathlib import Path

import streamlit as st

import placement
from placement import MAX_FILE_BYTES, PlacementError, Problem, Status, viz
from placement.multidim.convert import inventory_kinds, options_from_graph
from placement.multidim.dp import solve_multidim
from placement.multidim.evaluate import evaluate_plan
from placement.multidim.io import piper_from_json
from placement.multidim.model import DeviceKind
from placement.multidim.sweep import DEFAULT_COUNTS, device_curve
from ui import guard, state
from ui import parallel_plan as pp

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)

SAMPLES = Path(__file__).resolve().parent.parent / "sample_graphs" / "piper"
GiB = 2**30
PIPER, GRAPH = "a Piper workload", "the graph loaded in the app"


@st.cache_data(show_spinner=False, max_entries=8)
def _load(text: bytes | str, name: str):
    return piper_from_json(text, name)


def _configured(problem, settings: tuple, microbatches: int):
    """``problem`` with each kind's (count, memory GiB, bandwidth GiB/s) from ``settings`` and N microbatches."""
    kinds = tuple(
        DeviceKind(k.name, int(count), float(memory_gib) * GiB, float(bandwidth_gib) * GiB, k.speed)
        for k, (count, memory_gib, bandwidth_gib) in zip(problem.kinds, settings)
    )
    return replace(problem, kinds=kinds, microbatches=int(microbatches))


@st.cache_data(show_spinner=False, max_entries=8, hash_funcs={Problem: lambda p: (p.graph.digest, repr(p.devices))})
def _converted(problem: Problem, memory_gib=None, bandwidth_gib=None, microbatches=None):
    """The loaded graph in Piper's model with the inventory's kinds (options priced at the first kind's link)."""
    kwargs = {} if microbatches is None else {"microbatches": int(microbatches)}
    converted = options_from_graph(
        problem,
        memory=None if memory_gib is None else float(memory_gib) * GiB,
        bandwidth=None if bandwidth_gib is None else float(bandwidth_gib) * GiB,
        **kwargs,
    )
    first = next((k for k in problem.devices.accelerators if k.count > 0), None)
    factor = problem.devices.bandwidth * (first.bandwidth if first is not None else 1.0)
    return replace(converted, kinds=inventory_kinds(problem, converted.kinds[0].bandwidth / factor))


def _base(text: str, name: str, settings: tuple, microbatches: int):
    if text == GRAPH:  # the app's graph (name: its digest, for the caches)
        _, memory_gib, bandwidth_gib = settings[0]
        return _configured(
            _converted(_graph_problem(), memory_gib, bandwidth_gib, microbatches), settings, microbatches
        )
    return _configured(_load(text, name), settings, microbatches)


def _graph_problem() -> Problem:
    return Problem(state.current_graph(), state.current_devices())


@st.cache_data(show_spinner=False, max_entries=32)
def _solve(text: str, name: str, settings: tuple, microbatches: int):
    problem = _base(text, name, settings, microbatches)
    result = solve_multidim(problem)
    evaluation = evaluate_plan(problem, result.plan) if result.plan is not None else None
    return problem, result, evaluation


@st.cache_data(show_spinner=False, max_entries=16)
def _curve(text: str, name: str, settings: tuple, microbatches: int):
    problem = _base(text, name, settings, microbatches)
    problem = replace(problem, kinds=problem.kinds[:1])  # the curve varies the first kind's count
    bar = st.progress(0.0, text="curve: starting")
    points = device_curve(
        problem,
        DEFAULT_COUNTS,
        progress=lambda done, total: bar.progress(done / total, text=f"curve: {done} of {total}"),
    )
    bar.empty()
    return pp.curve_ms(points)


def _devices_answer() -> tuple[float | None, int | None]:
    """The Devices page's answer for the app's graph: (ms per sample, devices used), as that page solves it."""
    problem = state.current_problem()
    result = state.solve_cached(problem, state.live_method(), live=True)
    if not result.ok or result.placement is None:
        return None, None
    return placement.evaluate(problem, result.placement).max_load, len(result.placement.stages)


st.title("Parallel plan")
st.caption(
    "Data x tensor x pipeline parallelism with activation recomputation, in Piper's cost model "
    "(sample_graphs/piper/README.md). Every plan is proven optimal by an exact DP and re-checked by an "
    "independent evaluator."
)

source = st.radio("plan", (GRAPH, PIPER), horizontal=True, key="md_source")
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

if source == GRAPH:
    values_from, group = base.kinds, "md_graph"
    version = (name, repr(state.current_devices()))  # another graph or inventory: its values
    st.caption(
        f"Device kinds and counts from the session's inventory: {state.describe_devices(state.current_devices())}."
    )
else:
    values_from, group, version = base.kinds, "md_piper", name


def _key(field: str, i: int) -> str:
    return f"md_{field}{suffix}" + (f"_{i}" if i else "")


defaults = {}
for i, k in enumerate(values_from):
    defaults[_key("devices", i)] = min(max(k.count, 0), 1024)
    defaults[_key("memory", i)] = round(k.memory / GiB, 3)
    defaults[_key("bandwidth", i)] = round(k.bandwidth / GiB, 3)
defaults[f"md_microbatches{suffix}"] = base.microbatches
state.sync_widgets(group, defaults, version)  # new inventory or new file: its values; else the user's own

settings = []
for i, k in enumerate(values_from):
    cols = st.columns(3)
    prefix = "" if k.name in ("device", "accelerator") else f"{k.name} "  # Piper's and the paper's generic kinds
    speed = f"Speed {k.speed:.3g} relative to the graph's reference times (1 = as fast)."
    count = cols[0].number_input(
        f"{prefix}devices", min_value=0, max_value=1024, step=1, key=_key("devices", i), help=speed
    )
    memory_gib = cols[1].number_input(f"{prefix}memory per device (GiB)", min_value=0.01, key=_key("memory", i))
    bandwidth_gib = cols[2].number_input(f"{prefix}bandwidth (GiB/s)", min_value=0.001, key=_key("bandwidth", i))
    settings.append((int(count), float(memory_gib), float(bandwidth_gib)))
settings_key = tuple(settings)
devices = sum(c for c, _, _ in settings)
microbatches = st.columns(3)[0].number_input(
    "microbatches per batch (N)", min_value=1, step=1, key=f"md_microbatches{suffix}"
)

with st.spinner("solving"):
    try:
        if devices < 1:
            raise PlacementError("devices: set at least one device")
        problem, result, evaluation = _solve(text, name, settings_key, int(microbatches))
    except PlacementError as exc:
        st.error(str(exc))
        st.stop()

if result.status != Status.OPTIMAL:
    st.warning(
        f"No plan fits: every split of {len(problem.nodes)} nodes over {int(devices)} devices breaks the "
        f"memory cap or the degree rules (proven by the exact DP)."
    )
    m = st.columns(2) + st.columns(2)  # the same headline row, so the page reads the same either way
    m[0].metric("time per sample", "no plan fits")
    m[1].metric("stages", "—")
    m[2].metric("devices used", f"0 of {int(devices)}")
    m[3].metric("solve time", f"{result.seconds:.2f} s")
    if source == GRAPH:
        st.markdown(pp.no_plan_reference(*_devices_answer()))
else:
    m = st.columns(2) + st.columns(2)  # two rows: no number cut at 1024 px (issue 26)
    m[0].metric("time per sample", state.format_time(pp.to_ms(evaluation.time_per_sample)))
    m[1].metric("stages", len(result.plan.stages))
    m[2].metric("devices used", sum(n for _, n in evaluation.devices_used))
    m[3].metric("solve time", f"{result.seconds:.2f} s")
    st.success(
        f"Proven optimal in the model{(' (' + result.bound + ')') if result.bound else ''}: "
        f"{result.probes} decision DPs over {result.ideals} ideals; the evaluator "
        f"{'confirms' if evaluation.feasible else 'REJECTS'} the plan."
    )
    if source == GRAPH:
        devices_ms, devices_used = _devices_answer()
        st.markdown(
            pp.cross_reference(
                devices_ms, devices_used, result.plan, evaluation, training_added=not state.current_graph().is_training
            )
        )
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

st.subheader("Time per sample vs devices")
if st.toggle("draw the curve for 8..1024 devices", value=True, key="md_curve_on"):
    points = _curve(text, name, settings_key, int(microbatches))
    first = settings[0][0]
    if len(settings) > 1:
        st.caption(f"The curve varies the {values_from[0].name} count alone (the other kinds left out).")
    st.plotly_chart(viz.multidim_curve_figure(points, selected=first), width="stretch", key="md_curve")

from ui import launch_plan  # noqa: E402 - transformer training: the launchable-layout planner

launch_plan.render()
