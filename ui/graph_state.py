"""The shared scenario in the session: the graph, the devices, latency multipliers, memory model, currency.

Pages read and write it only through these functions (see :mod:`ui.state` for the whole list).
Every setter tells :func:`ui.session_keys.changed` so that the URL follows (a callback: this
module does not import :mod:`ui.scenario`).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import placement
from placement.perf.hardware import Accelerator
from placement.solve import MemoryModel
from ui import session_keys as keys
from ui import worker
from ui.samples import default_sample, sample_label


def load_sample(path: Path) -> None:
    """Load a sample file as the current graph."""
    path = Path(path)
    set_graph(placement.load_problem(path), sample_label(path), source=f"sample:{sample_label(path)}")


# ----------------------------------------------------------------------------- graph
def set_graph(problem: placement.Problem, name: str, source: str | None = None) -> None:
    """Load a graph; latency multipliers and any picked plan are cleared.

    The devices become the file's own unless the user set their own (:func:`devices_origin` is
    ``"custom"``): those are kept (a hand-made inventory survives loading another graph) until
    the user picks "File's own settings" (:func:`use_file_devices`).
    """
    st.session_state[keys.PROBLEM] = problem
    st.session_state[keys.NAME] = name
    st.session_state[keys.SOURCE] = source or f"upload:{name}"
    if devices_origin() == "custom" and st.session_state.get(keys.DEVICES) is not None:
        st.session_state[keys.KEPT_NOTE] = name
    else:
        st.session_state[keys.DEVICES] = problem.devices
        st.session_state[keys.DEVICES_ORIGIN] = "file"
        st.session_state[keys.KEPT_NOTE] = None
    st.session_state[keys.RULES] = ()
    st.session_state[keys.SCALED] = None
    st.session_state[keys.PRICED] = None
    st.session_state[keys.PLAN] = None
    _bump_devices_version()
    if not st.session_state[keys.SOURCE].startswith("sample:"):
        keys.uploaded(problem, name)  # a link naming its digest opens it
    keys.changed()


def base_problem() -> placement.Problem | None:
    """The graph as loaded, with the file's own devices (no knobs, no latency multipliers).

    Loads the default sample when nothing is loaded yet (app.py opens the link's scenario or the
    default once per session through :func:`ui.startup.ensure_default_graph`; a module run on its
    own relies on this).
    """
    if st.session_state.get(keys.PROBLEM) is None:
        load_sample(default_sample())
    return st.session_state.get(keys.PROBLEM)


def current_graph_name() -> str:
    """Display name of the loaded graph ("" if none)."""
    return st.session_state.get(keys.NAME, "")


def current_graph_source() -> str:
    """``"sample:<label>"`` or ``"upload:<file name>"`` ("" if none)."""
    return st.session_state.get(keys.SOURCE, "")


def current_graph() -> placement.Graph | None:
    """The loaded graph re-priced for the inventory's catalogue kinds, latency multipliers applied (cached)."""
    graph = priced_graph()
    if graph is None:
        return None
    rules = latency_rules()
    if not rules:
        return graph
    key = (graph.digest, rules)
    cached = st.session_state.get(keys.SCALED)
    if cached is not None and cached[0] == key:
        return cached[1]
    graph = worker.run(worker.scaled_graph, graph, rules)  # pattern matching: in a worker process
    st.session_state[keys.SCALED] = (key, graph)
    return graph


def priced_kinds(devices: placement.Devices) -> tuple[str | Accelerator, ...]:
    """The inventory's kinds the graph is priced for, in order: the catalogue's by name, and the measured device
    of the uploaded profile (:func:`current_profile`) as its accelerator."""
    from placement.perf.hardware import ACCELERATORS

    profile = current_profile()
    measured = profile[0] if profile is not None else None
    kinds: list[str | Accelerator] = []
    for kind in devices.accelerators:
        if kind.name in ACCELERATORS:
            kinds.append(kind.name)
        elif measured is not None and kind.name == measured.name:
            kinds.append(measured)
    return tuple(kinds)


def current_profile() -> tuple[Accelerator, str] | None:
    """(the measured device, its file's name) of the profile uploaded on the Devices page, or None."""
    return st.session_state.get(keys.PROFILE)


def set_profile(kind: Accelerator | None, file_name: str = "") -> None:
    """Keep an uploaded profile's measured device (:func:`placement.perf.profiled.measured_kind`); None removes it.

    The graph is priced from it while its kind is in the inventory (:func:`priced_kinds`); a picked plan is dropped.
    """
    value = None if kind is None else (kind, str(file_name))
    if value != st.session_state.get(keys.PROFILE):
        st.session_state[keys.PROFILE] = value
        st.session_state[keys.PLAN] = None


def priced_graph() -> placement.Graph | None:
    """The loaded graph re-priced for the current inventory's catalogue and measured kinds (the first the reference).

    :func:`placement.modelling.pricing.price_graph` (in a worker process, cached per graph and kinds);
    a graph without op work (the paper's profiled files) comes back unchanged.
    """
    problem = base_problem()
    if problem is None:
        return None
    kinds = priced_kinds(current_devices())
    key = (problem.graph.digest, kinds)
    cached = st.session_state.get(keys.PRICED)
    if cached is not None and cached[0] == key:
        return cached[1]
    graph = problem.graph
    if worker.needs_pricing(graph, kinds):  # the kernels' formulas over every node: in a worker process
        graph = worker.run(worker.priced_graph, graph, kinds)
    st.session_state[keys.PRICED] = (key, graph)
    return graph


def cost_source_text() -> str:
    """One line naming the model that produced the current graph's times (:func:`placement.cost_source`)."""
    from placement.modelling.pricing import cost_source as source

    graph = priced_graph()
    return source(graph) if graph is not None else ""


# ----------------------------------------------------------------------------- devices
def current_devices() -> placement.Devices:
    """The current devices (the file's own until the Devices page changes them)."""
    devices = st.session_state.get(keys.DEVICES)
    if devices is None:
        problem = base_problem()
        devices = problem.devices if problem is not None else placement.Devices()
    return devices


def set_devices(devices: placement.Devices) -> None:
    """Replace the current devices by the user's own (a picked plan is dropped when they change).

    From now on loading another graph keeps them (see :func:`set_graph`).
    """
    if devices != st.session_state.get(keys.DEVICES):
        st.session_state[keys.DEVICES] = devices
        st.session_state[keys.PLAN] = None
        st.session_state[keys.DEVICES_ORIGIN] = "custom"
        _bump_devices_version()
        keys.changed()


def use_file_devices() -> None:
    """Use the loaded file's own devices; later graph loads apply each file's own again."""
    problem = base_problem()
    if problem is not None and problem.devices != st.session_state.get(keys.DEVICES):
        st.session_state[keys.DEVICES] = problem.devices
        st.session_state[keys.PLAN] = None
        _bump_devices_version()
    st.session_state[keys.DEVICES_ORIGIN] = "file"
    st.session_state[keys.KEPT_NOTE] = None
    keys.changed()


def devices_origin() -> str:
    """``"file"`` when the devices in force are the loaded file's own, ``"custom"`` when the user set them."""
    return st.session_state.get(keys.DEVICES_ORIGIN, "file")


def devices_origin_text() -> str:
    """One sentence saying which device settings are in force (shown on the Graph and Devices pages)."""
    if devices_origin() == "file":
        return "Device settings in force: the file's own (loading another graph applies that file's own)."
    text = "Device settings in force: your own (kept when another graph is loaded"
    kept = st.session_state.get(keys.KEPT_NOTE)
    if kept:
        text += f"; {kept}'s own settings are not applied"
    return text + "). Pick \"File's own settings\" on the Devices page to use the file's."


def devices_version() -> int:
    """A counter bumped whenever the devices change through :func:`set_devices` or :func:`set_graph`."""
    return st.session_state.get(keys.DEVICES_VERSION, 0)


def _bump_devices_version() -> None:
    st.session_state[keys.DEVICES_VERSION] = st.session_state.get(keys.DEVICES_VERSION, 0) + 1


def latency_rules() -> tuple[tuple[str, float], ...]:
    """Latency multipliers ``(pattern, factor)`` applied in order to node names (globs, see placement.patterns)."""
    return tuple(st.session_state.get(keys.RULES, ()))


def set_latency_rules(rules) -> None:
    """Replace the latency multipliers (validated: raises :class:`placement.InvalidGraphError` for a bad one)."""
    rules = tuple((str(pattern), float(factor)) for pattern, factor in rules)
    graph = priced_graph()
    scaled = None
    if graph is not None:  # validate before storing (pattern matching: in a worker process)
        scaled = ((graph.digest, rules), worker.run(worker.scaled_graph, graph, rules))
    if rules != latency_rules():
        st.session_state[keys.RULES] = rules
        st.session_state[keys.SCALED] = scaled
        st.session_state[keys.PLAN] = None
        keys.changed()


def current_problem() -> placement.Problem | None:
    """The loaded graph (latency multipliers applied) with the current device settings."""
    graph = current_graph()
    if graph is None:
        return None
    return placement.Problem(graph, current_devices())


# ----------------------------------------------------------------------------- memory model, currency
def current_memory_model() -> MemoryModel:
    """The memory model in force on every page (weights only until the Devices page changes it)."""
    return st.session_state.get(keys.MEMORY_MODEL) or MemoryModel()


def set_memory_model(model: MemoryModel) -> None:
    """Replace the memory model (a picked plan is dropped when it changes)."""
    if model != current_memory_model():
        st.session_state[keys.MEMORY_MODEL] = model
        st.session_state[keys.PLAN] = None
        _changed_if_loaded()


def current_currency() -> str:
    """The currency label of every price and cost (Devices page; a label only, no exchange rates)."""
    from placement.explore.cost import DEFAULT_CURRENCY

    return str(st.session_state.get(keys.CURRENCY, DEFAULT_CURRENCY))


def set_currency(label: str) -> None:
    """Set the currency label; :class:`placement.PlacementError` for an empty or over-long one."""
    text = str(label).strip()
    if not text or len(text) > 8 or not text.isprintable():
        raise placement.PlacementError(f"currency: 1 to 8 printable characters, e.g. USD or EUR (got {label!r})")
    if text != current_currency():
        st.session_state[keys.CURRENCY] = text
        _changed_if_loaded()


def _changed_if_loaded() -> None:
    """The link follows a change at once (pages set the memory model and currency late in their run).

    Not before a graph is loaded: a link being opened sets them first, and the URL must not show a default
    graph meanwhile.
    """
    if st.session_state.get(keys.PROBLEM) is not None:
        keys.changed()
