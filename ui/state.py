"""Session-state glue shared by every page (the only place pages keep shared state).

Pages read and write the shared state only through these functions:

* the graph: :func:`ensure_default_graph`, :func:`set_graph`, :func:`current_graph_name`,
  :func:`base_problem` (the file as loaded);
* the devices: :func:`current_devices`, :func:`set_devices` (the Devices page's knobs);
* latency multipliers: :func:`latency_rules`, :func:`set_latency_rules`;
* :func:`current_problem` - the loaded graph (latency multipliers applied) on the current devices;
* solving: :func:`solve_cached` (cached on the graph digest + devices + method + options),
  :func:`current_method`, :func:`set_method`, :func:`current_result`;
* a plan picked elsewhere (e.g. a Tradeoffs point): :func:`set_selected_plan`,
  :func:`selected_plan`, :func:`clear_selected_plan`, :func:`result_problem`.

Widget values are dropped by Streamlit when a page is left, so every page copies what must
survive into the private keys below (prefix ``_ui_``) and re-initialises its widgets from them.
"""

from __future__ import annotations

import inspect
import time
from pathlib import Path
from typing import Any

import streamlit as st

import placement
from placement.solve import METHODS, method_function

ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = ROOT / "sample_graphs"
DEFAULT_SAMPLE = SAMPLES_DIR / "throughput" / "layer" / "bert24_inference.json"

# Private session-state keys (never widget keys).
_PROBLEM = "_ui_base_problem"      # Problem as loaded (the file's own devices)
_NAME = "_ui_graph_name"           # display name of the loaded graph
_SOURCE = "_ui_graph_source"       # "sample:<relative path>" or "upload:<file name>"
_DEVICES = "_ui_devices"           # current Devices (Devices page knobs applied)
_RULES = "_ui_latency_rules"       # tuple of (pattern, factor)
_SCALED = "_ui_scaled_graph"       # (key, Graph) cache of the graph with the rules applied
_METHOD = "_ui_method"             # chosen method name
_OBJECTIVE = "_ui_objective"       # "throughput" or "latency"
_TIME_LIMIT = "_ui_time_limit"     # seconds, for methods that take a time limit
_PLAN = "_ui_selected_plan"        # (problem, result, label) or None
_DEVICES_VERSION = "_ui_devices_version"  # bumped whenever devices change from outside the Devices widgets

DEFAULT_TIME_LIMIT = 30.0


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
    """Load the default sample (BERT-24 inference, layer granularity) on the first visit."""
    if st.session_state.get(_PROBLEM) is None:
        load_sample(DEFAULT_SAMPLE)


def set_graph(problem: placement.Problem, name: str, source: str | None = None) -> None:
    """Load a graph; the devices reset to the file's own, latency multipliers and any picked plan are cleared."""
    st.session_state[_PROBLEM] = problem
    st.session_state[_NAME] = name
    st.session_state[_SOURCE] = source or f"upload:{name}"
    st.session_state[_DEVICES] = problem.devices
    st.session_state[_RULES] = ()
    st.session_state[_SCALED] = None
    st.session_state[_PLAN] = None
    _bump_devices_version()


def base_problem() -> placement.Problem | None:
    """The graph as loaded, with the file's own devices (no knobs, no latency multipliers)."""
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
    graph = problem.graph
    for pattern, factor in rules:
        graph = graph.with_latency_scale(pattern, factor)
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
    """Replace the current devices (a picked plan is dropped when they change)."""
    if devices != st.session_state.get(_DEVICES):
        st.session_state[_DEVICES] = devices
        st.session_state[_PLAN] = None
        _bump_devices_version()


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
    if problem is not None:
        graph = problem.graph
        for pattern, factor in rules:  # validate before storing
            graph = graph.with_latency_scale(pattern, factor)
    if rules != latency_rules():
        st.session_state[_RULES] = rules
        st.session_state[_SCALED] = None
        st.session_state[_PLAN] = None


def current_problem() -> placement.Problem | None:
    """The loaded graph (latency multipliers applied) with the current device settings."""
    graph = current_graph()
    if graph is None:
        return None
    return placement.Problem(graph, current_devices())


# ----------------------------------------------------------------------------- solving
def method_options(method: str, **options: Any) -> dict[str, Any]:
    """The subset of ``options`` that ``method``'s function accepts (e.g. ``time_limit`` only for IPs)."""
    try:
        parameters = inspect.signature(method_function(method)).parameters
    except placement.PlacementError:
        return {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return {k: v for k, v in options.items() if v is not None}
    return {k: v for k, v in options.items() if k in parameters and v is not None}


def method_objective(method: str) -> str:
    """The objective a method optimises: ``"throughput"`` or ``"latency"``."""
    return METHODS[method][2] if method in METHODS else "throughput"


def _solve_uncached(problem: placement.Problem, method: str, options: dict[str, Any]) -> placement.Result:
    started = time.perf_counter()
    try:
        return placement.solve(problem, method, **options)
    except placement.PlacementError as exc:
        return placement.Result(status="error", method=method, objective=None, placement=None,
                                seconds=time.perf_counter() - started, objective_kind=method_objective(method),
                                reason=str(exc))


@st.cache_data(show_spinner=False, max_entries=512)
def _solve_cached(graph_digest: str, devices_key: str, method: str, options: tuple, _problem: placement.Problem):
    return _solve_uncached(_problem, method, dict(options))


def problem_key(problem: placement.Problem) -> tuple[str, str]:
    """A hashable key of a problem: the graph digest and the devices' repr (frozen dataclasses)."""
    return problem.graph.digest, repr(problem.devices)


def solve_cached(problem: placement.Problem, method: str = "dp", **options: Any) -> placement.Result:
    """Solve ``problem`` with ``method``, cached on (graph digest, devices, method, options).

    Options the method does not take are dropped (see :func:`method_options`); a
    :class:`placement.PlacementError` becomes a result with status ``"error"`` and its message
    as ``reason``, so pages never crash on a bad setting.
    """
    options = method_options(method, **options)
    digest, devices_key = problem_key(problem)
    return _solve_cached(digest, devices_key, method, tuple(sorted(options.items())), problem)


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
    st.session_state[_METHOD] = method


def current_objective() -> str:
    """``"throughput"`` (time per sample) or ``"latency"`` (single sample)."""
    return st.session_state.get(_OBJECTIVE, "throughput")


def set_objective(objective: str) -> None:
    st.session_state[_OBJECTIVE] = objective


def current_time_limit() -> float:
    """Time limit in seconds for methods that take one (integer programs)."""
    return float(st.session_state.get(_TIME_LIMIT, DEFAULT_TIME_LIMIT))


def set_time_limit(seconds: float) -> None:
    st.session_state[_TIME_LIMIT] = float(seconds)


def live_method() -> str:
    """The method for live previews (Devices page): the chosen one unless it takes a time limit (IPs)."""
    method = current_method()
    return "dp" if "time_limit" in method_options(method, time_limit=1.0) else method


def current_result() -> placement.Result | None:
    """The result the Placement page shows: the picked plan if any, else the live solve.

    The live solve uses :func:`current_problem`, :func:`current_method` and
    :func:`current_time_limit` (cached). Use :func:`result_problem` for the problem the
    result belongs to (a picked plan may come with other devices).
    """
    plan = selected_plan()
    if plan is not None:
        return plan[1]
    problem = current_problem()
    if problem is None:
        return None
    return solve_cached(problem, current_method(), time_limit=current_time_limit())


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
def init_widget(key: str, value: Any) -> None:
    """Give widget ``key`` the value ``value`` unless it already has one (call before creating the widget)."""
    if key not in st.session_state:
        st.session_state[key] = value


# ----------------------------------------------------------------------------- display helpers
def describe_devices(devices: placement.Devices) -> str:
    """One line such as ``6 x accelerator (16.01 GiB, speed 1) + 1 CPU core; bandwidth x1``."""
    from placement.viz import format_bytes

    kinds = [f"{k.count} x {k.name} ({format_bytes(k.memory)}, speed {k.speed:g}"
             + (f", bandwidth x{k.bandwidth:g}" if k.bandwidth != 1 else "") + ")" for k in devices.accelerators]
    text = " + ".join(kinds) if kinds else "no accelerators"
    text += f" + {devices.cpus} CPU core{'s' if devices.cpus != 1 else ''}"
    text += f"; bandwidth x{devices.bandwidth:g}"
    if devices.overlap:
        text += "; compute/communication overlap on"
    if devices.cpu_bandwidth is not None:
        text += f"; CPU cores pay transfers (CPU bandwidth x{devices.cpu_bandwidth:g})"
    return text


#: Device presets of the Devices page, in button order.
PRESETS = ("File's own settings", "Paper model", "2x memory", "Half memory", "Unlimited memory",
           "Half bandwidth", "2x bandwidth", "2x accelerator speed")


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


IDEALS_CAP = 20_000


@st.cache_data(show_spinner=False, max_entries=64)
def _ideals(digest: str, _graph: placement.Graph) -> int | None:
    try:
        return placement.count_ideals(_graph, IDEALS_CAP)
    except placement.TooManyIdealsError:
        return None


def ideal_count(graph: placement.Graph) -> int | None:
    """Number of ideals of the contracted graph, or None when over :data:`IDEALS_CAP` (cached)."""
    return _ideals(graph.digest, graph)


@st.cache_data(show_spinner=False, max_entries=64)
def _bounds(digest: str, _graph: placement.Graph):
    from placement.ideals import contract, ideal_bounds

    return ideal_bounds(contract(_graph))


def ideal_bounds(graph: placement.Graph):
    """:func:`placement.ideals.ideal_bounds` of the contracted graph: width and bounds on the ideal count (cached)."""
    return _bounds(graph.digest, graph)


def describe_ideal_bounds(graph: placement.Graph) -> str:
    """One sentence for the Graph page: the width, the bounds and whether the exact DP will take the graph."""
    from placement.ideals import ADVICE, DEFAULT_MAX_IDEALS, format_count

    bounds = ideal_bounds(graph)
    text = (f"Order graph of {bounds.groups:,} groups: {bounds.describe_width()} (an antichain of "
            f"{len(bounds.antichain):,} groups); between {format_count(bounds.lower)} and "
            f"{format_count(bounds.upper)} ideals.")
    if bounds.lower > DEFAULT_MAX_IDEALS:
        text += f" Over the exact DP's cap of {DEFAULT_MAX_IDEALS:,} ideals: {ADVICE}."
    return text
