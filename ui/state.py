"""Session-state glue shared by every page (the only place pages keep shared state).

Pages read and write the shared state only through these functions:

* the graph: :func:`ensure_default_graph`, :func:`set_graph`, :func:`current_graph_name`,
  :func:`base_problem` (the file as loaded);
* the devices: :func:`current_devices`, :func:`set_devices` (the Devices page's knobs);
* latency multipliers: :func:`latency_rules`, :func:`set_latency_rules`;
* the memory model: :func:`current_memory_model`, :func:`set_memory_model` (a device setting:
  weights only, or training memory under a schedule; every solve of every page uses it);
* :func:`current_problem` - the loaded graph (latency multipliers applied) on the current devices;
* solving: :func:`solve_cached` (cached on the graph digest + devices + method + options),
  :func:`current_method`, :func:`set_method`, :func:`current_result`;
* a plan picked elsewhere (e.g. a Tradeoffs point): :func:`set_selected_plan`,
  :func:`selected_plan`, :func:`clear_selected_plan`, :func:`result_problem`.

Widget state (one way for every page): Streamlit drops a widget's value when its page is left.

* A widget whose value belongs to its page (a sweep range, a chosen option) is created with a
  ``key`` and ``persist_state=state.PERSIST``, its first value given by :func:`init_widget`
  (never ``value=`` as well); Streamlit then keeps it across page switches.
* A widget that shows shared state (the devices, the graph) is re-synced from that state with
  :func:`sync_widgets` whenever the state changed elsewhere, and writes it back when moved.
* Widget bounds never depend on the widget's own value (a slider whose ``max_value`` moves
  becomes a new widget and falls back to its minimum): use :func:`stable_maximum`.

Shared state lives in the private keys below (prefix ``_ui_``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

import placement
from placement.evaluate import LATENCY_INFERENCE_ONLY
from placement.model import Recompute, ScheduleKind, Status
from placement.solve import METHODS, MemoryModel
from ui import live as live_tables
from ui import worker

ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = ROOT / "sample_graphs"
DEFAULT_SAMPLE = SAMPLES_DIR / "throughput" / "layer" / "bert24_inference.json"

# Private session-state keys (never widget keys).
_PROBLEM = "_ui_base_problem"  # Problem as loaded (the file's own devices)
_NAME = "_ui_graph_name"  # display name of the loaded graph
_SOURCE = "_ui_graph_source"  # "sample:<relative path>" or "upload:<file name>"
_DEVICES = "_ui_devices"  # current Devices (Devices page knobs applied)
_RULES = "_ui_latency_rules"  # tuple of (pattern, factor)
_SCALED = "_ui_scaled_graph"  # (key, Graph) cache of the graph with the rules applied
_METHOD = "_ui_method"  # chosen method name
_OBJECTIVE = "_ui_objective"  # "throughput" or "latency"
_TIME_LIMIT = "_ui_time_limit"  # seconds, for methods that take a time limit
_PLAN = "_ui_selected_plan"  # (problem, result, label) or None
_DEVICES_VERSION = "_ui_devices_version"  # bumped whenever devices change from outside the Devices widgets
_MEMORY_MODEL = "_ui_memory_model"  # MemoryModel every page solves and reports with
_DEVICES_ORIGIN = "_ui_devices_origin"  # "file" (the loaded file's own devices) or "custom" (set by the user)
_KEPT_NOTE = "_ui_devices_kept_note"  # the graph name whose file devices were not applied (kept custom ones)

DEFAULT_TIME_LIMIT = 30.0
#: The per-widget upload cap of every JSON uploader, in Streamlit's MB (2**20 bytes): the dropzone shows it,
#: and the page still refuses any file over :data:`placement.MAX_FILE_BYTES` with a one-line error.
UPLOAD_LIMIT_MB = max(1, -(-placement.MAX_FILE_BYTES // 2**20))


# ----------------------------------------------------------------------------- samples
def sample_files() -> list[Path]:
    """Every graph file under ``sample_graphs/`` (split files such as ``expert-splits/`` excluded)."""
    files = []
    for path in sorted(SAMPLES_DIR.rglob("*.json")):
        relative = path.relative_to(SAMPLES_DIR)
        if relative.parts[0] == "expert-splits":
            continue
        files.append(path)
    return files


def sample_group(path: Path) -> str:
    """``"layer · inference"``-style group of a sample file (granularity and phase)."""
    parts = path.relative_to(SAMPLES_DIR).parts
    granularity = "operator" if "operator" in parts else "layer"
    phase = "training" if "training" in path.stem else "inference"
    return f"{granularity} · {phase}"


def sample_label(path: Path) -> str:
    """Short label of a sample: ``throughput/layer/bert24_inference``."""
    return str(path.relative_to(SAMPLES_DIR).with_suffix(""))


def load_sample(path: Path) -> None:
    """Load a sample file as the current graph."""
    path = Path(path)
    set_graph(placement.load_problem(path), sample_label(path), source=f"sample:{sample_label(path)}")


# ----------------------------------------------------------------------------- graph
def ensure_default_graph() -> None:
    """On the first visit open the URL's scenario, else the default sample (BERT-24 inference, layer).

    Then keep the URL's query parameters on the current scenario (see :mod:`ui.scenario`).
    """
    from ui import scenario

    if st.session_state.get(_PROBLEM) is None:
        if not scenario.restore_from_url():
            load_sample(DEFAULT_SAMPLE)
    scenario.mark_restored()
    scenario.show_restore_error()
    scenario.sync_url()


def _sync_url() -> None:
    """Put the changed state into the URL at once (a page may change it after the run's first sync)."""
    from ui import scenario

    scenario.sync_url()


def set_graph(problem: placement.Problem, name: str, source: str | None = None) -> None:
    """Load a graph; latency multipliers and any picked plan are cleared.

    The devices become the file's own unless the user set their own (:func:`devices_origin` is
    ``"custom"``): those are kept (a hand-made inventory survives loading another graph) until
    the user picks "File's own settings" (:func:`use_file_devices`).
    """
    st.session_state[_PROBLEM] = problem
    st.session_state[_NAME] = name
    st.session_state[_SOURCE] = source or f"upload:{name}"
    if devices_origin() == "custom" and st.session_state.get(_DEVICES) is not None:
        st.session_state[_KEPT_NOTE] = name
    else:
        st.session_state[_DEVICES] = problem.devices
        st.session_state[_DEVICES_ORIGIN] = "file"
        st.session_state[_KEPT_NOTE] = None
    st.session_state[_RULES] = ()
    st.session_state[_SCALED] = None
    st.session_state[_PLAN] = None
    _bump_devices_version()
    if not st.session_state[_SOURCE].startswith("sample:"):
        from ui import scenario

        scenario.remember_upload(problem, name)  # a link naming its digest opens it
    _sync_url()


def base_problem() -> placement.Problem | None:
    """The graph as loaded, with the file's own devices (no knobs, no latency multipliers).

    Loads the default sample when nothing is loaded yet (app.py does that once per session; a page
    run on its own, e.g. by AppTest, relies on this).
    """
    if st.session_state.get(_PROBLEM) is None:
        ensure_default_graph()
    return st.session_state.get(_PROBLEM)


def current_graph_name() -> str:
    """Display name of the loaded graph ("" if none)."""
    return st.session_state.get(_NAME, "")


def current_graph_source() -> str:
    """``"sample:<label>"`` or ``"upload:<file name>"`` ("" if none)."""
    return st.session_state.get(_SOURCE, "")


def current_graph() -> placement.Graph | None:
    """The loaded graph with the latency multipliers applied (cached per rule set)."""
    problem = base_problem()
    if problem is None:
        return None
    rules = latency_rules()
    if not rules:
        return problem.graph
    key = (problem.graph.digest, rules)
    cached = st.session_state.get(_SCALED)
    if cached is not None and cached[0] == key:
        return cached[1]
    graph = worker.run(worker.scaled_graph, problem.graph, rules)  # pattern matching: in a worker process
    st.session_state[_SCALED] = (key, graph)
    return graph


# ----------------------------------------------------------------------------- devices
def current_devices() -> placement.Devices:
    """The current devices (the file's own until the Devices page changes them)."""
    devices = st.session_state.get(_DEVICES)
    if devices is None:
        problem = base_problem()
        devices = problem.devices if problem is not None else placement.Devices()
    return devices


def set_devices(devices: placement.Devices) -> None:
    """Replace the current devices by the user's own (a picked plan is dropped when they change).

    From now on loading another graph keeps them (see :func:`set_graph`).
    """
    if devices != st.session_state.get(_DEVICES):
        st.session_state[_DEVICES] = devices
        st.session_state[_PLAN] = None
        st.session_state[_DEVICES_ORIGIN] = "custom"
        _bump_devices_version()
        _sync_url()


def use_file_devices() -> None:
    """Use the loaded file's own devices; later graph loads apply each file's own again."""
    problem = base_problem()
    if problem is not None and problem.devices != st.session_state.get(_DEVICES):
        st.session_state[_DEVICES] = problem.devices
        st.session_state[_PLAN] = None
        _bump_devices_version()
    st.session_state[_DEVICES_ORIGIN] = "file"
    st.session_state[_KEPT_NOTE] = None
    _sync_url()


def devices_origin() -> str:
    """``"file"`` when the devices in force are the loaded file's own, ``"custom"`` when the user set them."""
    return st.session_state.get(_DEVICES_ORIGIN, "file")


def devices_origin_text() -> str:
    """One sentence saying which device settings are in force (shown on the Graph and Devices pages)."""
    if devices_origin() == "file":
        return "Device settings in force: the file's own (loading another graph applies that file's own)."
    text = "Device settings in force: your own (kept when another graph is loaded"
    kept = st.session_state.get(_KEPT_NOTE)
    if kept:
        text += f"; {kept}'s own settings are not applied"
    return text + "). Pick \"File's own settings\" on the Devices page to use the file's."


def devices_version() -> int:
    """A counter bumped whenever the devices change through :func:`set_devices` or :func:`set_graph`."""
    return st.session_state.get(_DEVICES_VERSION, 0)


def _bump_devices_version() -> None:
    st.session_state[_DEVICES_VERSION] = st.session_state.get(_DEVICES_VERSION, 0) + 1


def latency_rules() -> tuple[tuple[str, float], ...]:
    """Latency multipliers ``(pattern, factor)`` applied in order to node names (globs, see placement.patterns)."""
    return tuple(st.session_state.get(_RULES, ()))


def set_latency_rules(rules) -> None:
    """Replace the latency multipliers (validated: raises :class:`placement.InvalidGraphError` for a bad one)."""
    rules = tuple((str(pattern), float(factor)) for pattern, factor in rules)
    problem = base_problem()
    scaled = None
    if problem is not None:  # validate before storing (pattern matching: in a worker process)
        scaled = ((problem.graph.digest, rules), worker.run(worker.scaled_graph, problem.graph, rules))
    if rules != latency_rules():
        st.session_state[_RULES] = rules
        st.session_state[_SCALED] = scaled
        st.session_state[_PLAN] = None
        _sync_url()


def current_problem() -> placement.Problem | None:
    """The loaded graph (latency multipliers applied) with the current device settings."""
    graph = current_graph()
    if graph is None:
        return None
    return placement.Problem(graph, current_devices())


# ----------------------------------------------------------------------------- memory model
def current_memory_model() -> MemoryModel:
    """The memory model in force on every page (weights only until the Devices page changes it)."""
    return st.session_state.get(_MEMORY_MODEL) or MemoryModel()


def set_memory_model(model: MemoryModel) -> None:
    """Replace the memory model (a picked plan is dropped when it changes)."""
    if model != current_memory_model():
        st.session_state[_MEMORY_MODEL] = model
        st.session_state[_PLAN] = None


# ----------------------------------------------------------------------------- solving
def method_options(method: str, **options: Any) -> dict[str, Any]:
    """The subset of ``options`` that ``method`` takes (its registry entry), None values dropped."""
    spec = METHODS.get(method)
    if spec is None:
        return {}
    return {k: v for k, v in options.items() if k in spec.option_names and v is not None}


def effective_method(method: str) -> str:
    """The method that actually runs for ``method`` under the current memory model (e.g. dp -> memory-aware)."""
    model = current_memory_model()
    return model.method_for(method)[0] if model.supports(method) else method


def method_objective(method: str) -> str:
    """The objective a method optimises: ``"throughput"`` or ``"latency"``."""
    return str(METHODS[method].objective) if method in METHODS else "throughput"


def takes_time_limit(method: str) -> bool:
    """Whether ``method`` (as run under the current memory model) has a time limit."""
    spec = METHODS.get(effective_method(method))
    return spec is not None and spec.has_time_limit


def _solve_uncached(
    problem: placement.Problem, method: str, options: dict[str, Any], progress: Any = None
) -> placement.Result:
    started = time.perf_counter()
    try:  # in a worker process; a progress option (the caller checked the method takes one) is relayed
        return worker.run(worker.solve, problem, method, progress=progress, **options)
    except placement.PlacementError as exc:
        return placement.make_result(
            method, Status.ERROR, started=started, objective_kind=method_objective(method), reason=str(exc)
        )


@st.cache_data(show_spinner=False, max_entries=512)
def _solve_cached(
    graph_digest: str, devices_key: str, method: str, options: tuple, _problem: placement.Problem, _progress=None
):
    # The progress bar is created and removed in here, so that a cache hit replays nothing visible.
    try:
        return _solve_uncached(_problem, method, dict(options), _progress)
    finally:
        if _progress is not None:
            _progress.close()


def problem_key(problem: placement.Problem) -> tuple[str, str]:
    """A hashable key of a problem: the graph digest and the devices' repr (frozen dataclasses)."""
    return problem.graph.digest, repr(problem.devices)


def solve_cached(
    problem: placement.Problem, method: str = "dp", *, live: bool = False, **options: Any
) -> placement.Result:
    """Solve ``problem`` with ``method`` under the current memory model, cached on (graph, devices, method, options).

    Under the training memory model the method runs as its memory-aware variant with the
    model's options (:meth:`placement.solve.MemoryModel.method_for`). Options the method
    does not take are dropped (see :func:`method_options`); a :class:`placement.PlacementError`
    becomes a result with status ``"error"`` and its message as ``reason``, so pages never
    crash on a bad setting. A method with a ``progress`` option (the exact DP) shows a progress
    bar once it runs over a second (:class:`ui.live.SolveProgress`).

    ``live=True`` (the current scenario: the Placement page, the Devices page's summary): the
    exact DP answers a lowered device count from the last table of this session when it can
    (:func:`ui.live.answer`; the result's ``stat("from_table")`` is True), and keeps the table
    of every fresh solve (:func:`ui.live.keep`).
    """
    model = current_memory_model()
    try:
        method, model_options = model.method_for(method)
    except placement.PlacementError as exc:  # the method plans with weights only: say so, solve nothing
        return placement.make_result(
            method, Status.ERROR, started=time.perf_counter(), objective_kind=method_objective(method), reason=str(exc)
        )
    options = dict(method_options(method, **options), **model_options)
    options.pop("progress", None)  # never part of the key: the bar is added below
    table_method = live and method == "dp"
    if table_method:
        answered = live_tables.answer(problem, options)
        if answered is not None:
            return answered
    digest, devices_key = problem_key(problem)
    progress = None
    spec = METHODS.get(method)
    if spec is not None and "progress" in spec.option_names:
        progress = live_tables.SolveProgress(method_name(method), "ideals")
    result = _solve_cached(digest, devices_key, method, tuple(sorted(options.items())), problem, progress)
    if table_method and result.status == Status.OPTIMAL:
        live_tables.keep(problem, options, float(result.objective), fresh_seconds=result.seconds)
    return result


def clear_caches() -> None:
    """Drop every cached solve (tests call this between cases)."""
    _solve_cached.clear()
    _layout.clear()
    _ideals.clear()
    _bounds.clear()


def current_method() -> str:
    """The method chosen on the Placement page (``"dp"`` by default)."""
    return st.session_state.get(_METHOD, "dp")


def set_method(method: str) -> None:
    if st.session_state.get(_METHOD) != method:
        st.session_state[_METHOD] = method
        _sync_url()


def current_objective() -> str:
    """``"throughput"`` (time per sample) or ``"latency"`` (single sample)."""
    return st.session_state.get(_OBJECTIVE, "throughput")


def set_objective(objective: str) -> None:
    if st.session_state.get(_OBJECTIVE) != objective:
        st.session_state[_OBJECTIVE] = objective
        _sync_url()


def current_time_limit() -> float:
    """Time limit in seconds for methods that take one (integer programs)."""
    return float(st.session_state.get(_TIME_LIMIT, DEFAULT_TIME_LIMIT))


def set_time_limit(seconds: float) -> None:
    if st.session_state.get(_TIME_LIMIT) != float(seconds):
        st.session_state[_TIME_LIMIT] = float(seconds)
        _sync_url()


def live_method() -> str:
    """The method for live previews (Devices page): the chosen one unless it takes a time limit (IPs)."""
    method = current_method()
    return "dp" if takes_time_limit(method) else method


def current_result(live: bool = False) -> placement.Result | None:
    """The result the Placement page shows: the picked plan if any, else the live solve.

    The live solve uses :func:`current_problem`, :func:`current_method` and
    :func:`current_time_limit` (cached). Use :func:`result_problem` for the problem the
    result belongs to (a picked plan may come with other devices). ``live=True`` (the Placement
    page, which says so and offers a fresh solve): a lowered device count may be answered from
    the last DP table (see :func:`solve_cached`), with an optimal split that is not tie-broken;
    the other pages get the full solve's split.
    """
    plan = selected_plan()
    if plan is not None:
        return plan[1]
    problem = current_problem()
    if problem is None:
        return None
    return solve_cached(problem, current_method(), live=live, time_limit=current_time_limit())


def result_problem() -> placement.Problem | None:
    """The problem :func:`current_result` belongs to (the picked plan's, else :func:`current_problem`)."""
    plan = selected_plan()
    if plan is not None:
        return plan[0]
    return current_problem()


def set_selected_plan(problem: placement.Problem, result: placement.Result, label: str) -> None:
    """Show this plan on the Placement (and Timeline) pages instead of the live solve, with ``label`` as a note."""
    st.session_state[_PLAN] = (problem, result, label)


def selected_plan() -> tuple[placement.Problem, placement.Result, str] | None:
    """The picked ``(problem, result, label)``, or None when the pages show the live solve."""
    return st.session_state.get(_PLAN)


def clear_selected_plan() -> None:
    """Go back to the live solve."""
    st.session_state[_PLAN] = None


# ----------------------------------------------------------------------------- widgets
#: Pass as ``persist_state=`` to every keyed widget whose value must outlive a page switch.
PERSIST = "session"


def init_widget(key: str, value: Any) -> None:
    """Give widget ``key`` the value ``value`` unless it already has one (call before creating the widget)."""
    if key not in st.session_state:
        st.session_state[key] = value


def sync_widgets(group: str, values: dict[str, Any], version: Any) -> bool:
    """Show shared state in the widgets ``values`` (key -> value) of ``group``.

    When ``version`` (e.g. :func:`devices_version`) differs from the one the group last showed,
    every widget is set to its value (the state changed elsewhere); otherwise only widgets
    without a value get one (back on the page). Returns True when the widgets were re-set.
    Call :func:`mark_synced` after the widgets wrote the state back themselves.
    """
    marker = f"_ui_synced_{group}"
    if st.session_state.get(marker) != version:
        for key, value in values.items():
            st.session_state[key] = value
        st.session_state[marker] = version
        return True
    for key, value in values.items():
        init_widget(key, value)
    return False


def mark_synced(group: str, version: Any) -> None:
    """Record that the widgets of ``group`` already show the state at ``version``."""
    st.session_state[f"_ui_synced_{group}"] = version


def stable_maximum(value: float, floor: int = 16) -> int:
    """A slider maximum for ``value`` that a drag cannot move: at least ``floor``, a power of two >= 2 x value.

    Computed from the state when it changed elsewhere (not from the slider), it stays put while
    the slider moves: a slider whose bounds change is a new widget and falls back to its minimum.
    """
    top = max(int(floor), 2 * int(math.ceil(value)))
    return 1 << (top - 1).bit_length()


# ----------------------------------------------------------------------------- display helpers
def describe_devices(devices: placement.Devices) -> str:
    """One line such as ``6 x accelerator (16.01 GiB, speed 1) + 1 CPU core; bandwidth x1``."""
    from placement.viz import format_bytes

    kinds = [
        f"{k.count} x {k.name} ({format_bytes(k.memory)}, speed {k.speed:g}"
        + (f", bandwidth x{k.bandwidth:g}" if k.bandwidth != 1 else "")
        + ")"
        for k in devices.accelerators
    ]
    text = " + ".join(kinds) if kinds else "no accelerators"
    text += f" + {devices.cpus} CPU core{'s' if devices.cpus != 1 else ''}"
    text += f"; bandwidth x{devices.bandwidth:g}"
    if devices.overlap:
        text += "; compute/communication overlap on"
    if devices.cpu_bandwidth is not None:
        text += f"; CPU cores pay transfers (CPU bandwidth x{devices.cpu_bandwidth:g})"
    return text + f"; memory model: {current_memory_model().describe()}"


def latency_text(problem: placement.Problem, latency: float) -> tuple[str, str]:
    """(value, help) of a single-sample latency metric: ``n/a`` with the reason when it is not finite."""
    if latency != float("inf"):
        return format_time(latency), "Single-sample latency of this placement (evaluator)"
    if problem.graph.is_training:
        return "n/a", LATENCY_INFERENCE_ONLY
    return "n/a", "The accelerator calls of this placement depend on each other in a cycle: no finite latency"


def not_optimal_note(result: placement.Result) -> str:
    """Why a "feasible" result is not proven optimal, in words true for its method."""
    spec = METHODS.get(result.method)
    bound = f", lower bound {result.bound:.6g}" if result.bound is not None else ""
    gap = f": optimality gap {result.gap:.2%}{bound}" if result.gap is not None else ""
    if result.reason:
        return f"Not proven optimal ({result.reason}){gap}."
    if spec is not None and not spec.exact:
        return f"Not proven optimal: {result.method} is a heuristic (no bound)."
    if spec is not None and spec.has_time_limit:
        return f"Not proven optimal ({result.method} stopped at its time limit){gap}."
    return f"Not proven optimal{gap or f' ({result.method} reports no proof)'}."


#: Device presets of the Devices page, in button order.
PRESETS = (
    "File's own settings",
    "Paper model",
    "2x memory",
    "Half memory",
    "Unlimited memory",
    "Half bandwidth",
    "2x bandwidth",
    "2x accelerator speed",
)


def device_preset(name: str, current: placement.Devices, file_devices: placement.Devices) -> placement.Devices:
    """The devices a preset gives, from the current ones (and the file's own for the first preset).

    * "File's own settings": the devices of the loaded file;
    * "Paper model": one kind of identical accelerators (the current total count, the first kind's
      memory, speed 1), the current CPU cores, bandwidth x1, no overlap (the paper's model);
    * the others scale every accelerator kind's memory or speed, or the global bandwidth factor.
    """
    from dataclasses import replace

    if name == "File's own settings":
        return file_devices
    if name == "Paper model":
        memory = current.accelerators[0].memory if current.accelerators else float("inf")
        return placement.Devices.paper(current.accelerator_count, current.cpus, memory)
    if name in ("2x memory", "Half memory", "Unlimited memory"):
        factor = {"2x memory": 2.0, "Half memory": 0.5, "Unlimited memory": float("inf")}[name]
        kinds = tuple(replace(k, memory=k.memory * factor) for k in current.accelerators)
        return current.with_changes(accelerators=kinds)
    if name in ("Half bandwidth", "2x bandwidth"):
        return current.with_changes(bandwidth=current.bandwidth * (0.5 if name == "Half bandwidth" else 2.0))
    if name == "2x accelerator speed":
        return current.with_changes(accelerators=tuple(replace(k, speed=k.speed * 2) for k in current.accelerators))
    raise ValueError(f"unknown preset {name!r}")


@st.cache_data(show_spinner=False, max_entries=64)
def _layout(digest: str, _graph: placement.Graph):
    from placement.viz import dag_layout

    return dag_layout(_graph)


def graph_layout(graph: placement.Graph) -> dict[int, tuple[float, float]]:
    """:func:`placement.viz.dag_layout` of ``graph``, cached on its digest."""
    return _layout(graph.digest, graph)


#: Ideals are counted up to the DP's own limit (placement.exact.ideals.DEFAULT_MAX_IDEALS), not a display cap.
from placement.exact.ideals import DEFAULT_MAX_IDEALS as IDEALS_CAP  # noqa: E402


@st.cache_data(show_spinner=False, max_entries=64)
def _ideals(digest: str, _graph: placement.Graph) -> int | None:
    try:
        return placement.count_ideals(_graph, IDEALS_CAP)
    except placement.TooManyIdealsError:
        return None


def ideal_count(graph: placement.Graph) -> int | None:
    """Number of ideals of the contracted graph, or None when over :data:`IDEALS_CAP` (cached)."""
    return _ideals(graph.digest, graph)


# ----------------------------------------------------------------------------- time units
#: Unit of every latency and transfer cost: the paper's graph format and the model importer use milliseconds.
TIME_UNIT = "ms"


def time_unit() -> str:
    """The unit of the loaded graph's times (``"ms"``: the paper's format and imported models use it)."""
    return TIME_UNIT


def time_unit_note() -> str:
    """One sentence saying which unit the numbers are in, and why."""
    if current_graph_source().startswith("upload:"):
        return (
            "Times are in the file's own unit; the paper's graph format uses milliseconds, so this app labels them ms."
        )
    return "Times are in milliseconds (ms), the unit of the paper's graph files and of imported models."


def format_time(value: float | None, digits: int = 6) -> str:
    """A time with its unit, e.g. ``12.5 ms`` ("—" for None)."""
    if value is None:
        return "—"
    return f"{value:.{digits}g} {TIME_UNIT}"


# ----------------------------------------------------------------------------- method names
def method_name(method: str) -> str:
    """The display name of a method id: its registry title (``METHODS``); the id itself when unknown.

    One description per method: menus, tables and the CLI's ``--help`` all read the registry.
    """
    spec = METHODS.get(method)
    return spec.title if spec is not None else method


@dataclass(frozen=True)
class BatchTiming:
    """Time per batch with pipeline fill and drain (ms), next to the steady-state time per sample.

    ``schedule`` and ``microbatches`` are the memory model's (Devices page); a forward-only graph
    streams (``"inference"``). ``samples_per_second`` counts the fill and drain.
    """

    schedule: str
    microbatches: int
    batch_time: float
    steady_time: float
    bubble: float

    @property
    def samples_per_second(self) -> float:
        return 1000.0 * self.microbatches / self.batch_time if self.batch_time > 0 else math.inf

    def label(self) -> str:
        name = {"inference": "streaming", "1f1b": "1F1B", "gpipe": "GPipe"}.get(self.schedule, self.schedule)
        return f"{self.microbatches} microbatch{'es' if self.microbatches != 1 else ''}, {name}"


def batch_timing(problem: placement.Problem, result: placement.Result) -> BatchTiming | None:
    """Simulate one batch of the memory model's schedule and microbatches on ``result``'s plan (None without one)."""
    if not result.ok or result.placement is None:
        return None
    from placement.pipeline.schedule import simulate
    from placement.solve import recomputing_devices

    model = current_memory_model()
    kind = model.schedule if problem.graph.is_training else ScheduleKind.INFERENCE.value
    recompute: Any = ()
    if kind != ScheduleKind.INFERENCE and model.training:
        chosen = recomputing_devices(result)
        recompute = chosen if chosen is not None else (model.recompute == Recompute.ALWAYS)
    try:
        run = simulate(problem, result.placement, model.microbatches, kind, recompute=recompute)
    except placement.PlacementError:
        return None
    return BatchTiming(kind, model.microbatches, run.makespan, run.period, run.bubble_fraction)


_CURRENCY = "_ui_currency"


def current_currency() -> str:
    """The currency label of every price and cost (Devices page; a label only, no exchange rates)."""
    from placement.explore.cost import DEFAULT_CURRENCY

    return str(st.session_state.get(_CURRENCY, DEFAULT_CURRENCY))


def set_currency(label: str) -> None:
    """Set the currency label; :class:`placement.PlacementError` for an empty or over-long one."""
    text = str(label).strip()
    if not text or len(text) > 8 or not text.isprintable():
        raise placement.PlacementError(f"currency: 1 to 8 printable characters, e.g. USD or EUR (got {label!r})")
    st.session_state[_CURRENCY] = text


def money(value: float | None) -> str:
    """An amount in the current currency, e.g. ``126.6 USD`` ("—" for None)."""
    from placement.explore.cost import format_money

    return format_money(value, current_currency())


def plan_cost(problem: placement.Problem, result: placement.Result):
    """:func:`placement.explore.cost.plan_cost` of a solved plan (the one cost model of every page)."""
    from placement.explore.cost import plan_cost as cost_of

    ok = result.ok and result.placement is not None
    return cost_of(problem.devices, result.placement if ok else None, result.objective if ok else None)


def plan_cost_line(problem: placement.Problem, result: placement.Result) -> tuple[str, str]:
    """``(value, help)`` of the "Cost per 1M samples" metric: price per hour of the inventory x time per sample.

    Every card and CPU core held counts, idle ones included (the one cost model,
    :mod:`placement.explore.cost`, as on Plan a purchase); "—" when no device has a price.
    """
    cost = plan_cost(problem, result)
    help_text = (
        f"Price per hour of all {cost.devices_held} devices held ({money(cost.price_per_hour)}; the plan uses "
        f"{cost.devices_used}, idle: {cost.idle_text()}) x time per sample ({format_time(cost.time_per_sample)}) "
        "/ 3,600,000 ms per hour, per million samples. Idle cards are paid for too; Plan a purchase counts the "
        "same way. Set prices and the currency on the Devices page."
    )
    if cost.cost_per_million is None or cost.price_per_hour == 0:
        return "—", help_text
    return money(cost.cost_per_million), help_text


@st.cache_data(show_spinner=False, max_entries=64)
def _bounds(digest: str, _graph: placement.Graph):
    from placement.exact.ideals import contract, ideal_bounds

    return ideal_bounds(contract(_graph))


def ideal_bounds(graph: placement.Graph):
    """:func:`placement.exact.ideals.ideal_bounds` of the contracted graph: width and bounds on the ideal count (cached)."""
    return _bounds(graph.digest, graph)


def describe_ideal_bounds(graph: placement.Graph, exact: int | None = None) -> str:
    """One sentence for the Graph page: the width, the bounds and whether the exact DP will take the graph.

    ``exact``: the ideal count when it is known (then the bounds are not shown beside it).
    """
    from placement.exact.ideals import ADVICE, DEFAULT_MAX_IDEALS, format_count

    bounds = ideal_bounds(graph)
    size = len(bounds.antichain)
    text = (
        f"Order graph of {bounds.groups:,} group{'s' if bounds.groups != 1 else ''}: {bounds.describe_width()} "
        f"(an antichain of {size:,} group{'s' if size != 1 else ''}); "
        + (
            f"exactly {exact:,} ideal{'s' if exact != 1 else ''}."
            if exact is not None
            else f"between {format_count(bounds.lower)} and {format_count(bounds.upper)} ideals."
        )
    )
    if bounds.lower > DEFAULT_MAX_IDEALS:
        text += f" Over the exact DP's cap of {DEFAULT_MAX_IDEALS:,} ideals: {ADVICE}."
    return text
