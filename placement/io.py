"""Reading and writing the paper's JSON format (and its extension with device kinds).

Graph file (the paper's format; other keys are kept)::

    {"maxFPGAs": k, "maxCPUs": l, "maxSizePerFPGA": bytes,
     "nodes": [{"id", "supportedOnFpga", "cpuLatency", "fpgaLatency", "isBackwardNode",
                "colorClass"?, "size"?, "name"?, "latencies"?: {kind: t}, "kinds"?: [kind]}],
     "edges": [{"sourceId", "destId", "cost", "size"?}],
     "deviceKinds"?: [{"name", "count", "memory", "speed"?, "bandwidth"?, "pricePerHour"?}],
     "bandwidthFactor"?: f, "overlap"?: bool, "cpuPricePerHour"?: p, "cpuBandwidth"?: f}

Split file: ``{"fpgas": [{"nodes": [...]}, ...], "cpus": [{"nodes": [...]}, ...]}``;
the extension ``{"accelerators": [{"kind", "nodes", "calls"?}], "cpus": [...]}`` names kinds.

Devices have one serializer, :func:`devices_to_dict` / :func:`devices_from_dict` (the device keys above);
scenario cards and shared links carry the same object. An unlimited memory (``math.inf``) is written as
the string ``"inf"`` by every writer of devices
(:func:`encode_unlimited`); readers also take ``null`` and the ``1e300`` older files hold
(:func:`decode_unlimited`). Results travel as :func:`result_to_dict` / :func:`result_from_dict`
(the one result serializer, :mod:`placement.io_result`).

Every error is one line ``<source>: <where>: <rule broken>``.
"""

from __future__ import annotations

import json
import math
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from .errors import InvalidDevicesError, InvalidGraphError, InvalidSplitError, PlacementError, label, quote
from .io_result import result_from_dict as result_from_dict  # re-exported: the one result serializer
from .io_result import result_to_dict as result_to_dict
from .model import CPU_KIND, AcceleratorKind, Devices, DeviceSlot, Edge, Graph, Node, Placement, Problem, Stage

_T = TypeVar("_T")

#: Largest integer accepted in an integer field (ids, counts): exactly representable as a float.
MAX_INTEGER = 2**53

#: Largest graph or split file accepted (bytes).
MAX_FILE_BYTES = 50 * 1024 * 1024

#: How every writer of devices encodes an unlimited (infinite) memory: JSON has no infinity.
UNLIMITED = "inf"
#: Older files wrote an unlimited memory as this number (or as null): read back as infinity.
LEGACY_UNLIMITED = 1e300


def encode_unlimited(value: float) -> float | str:
    """``value`` for a JSON file: the number itself, or :data:`UNLIMITED` for +infinity."""
    return UNLIMITED if value == math.inf else value


def decode_unlimited(value: Any) -> Any:
    """Infinity for every encoding of an unlimited memory ever written (``"inf"``, ``"Infinity"``, null, 1e300 or more).

    Anything else is returned unchanged (the caller checks its type).
    """
    if value is None or value in (UNLIMITED, "Infinity"):
        return math.inf
    if isinstance(value, float) and value >= LEGACY_UNLIMITED:
        return math.inf
    return value


_NODE_KEYS = {
    "id",
    "supportedOnFpga",
    "cpuLatency",
    "fpgaLatency",
    "isBackwardNode",
    "colorClass",
    "size",
    "name",
    "latencies",
    "kinds",
}
_EDGE_KEYS = {"sourceId", "destId", "cost", "size"}
_TOP_KEYS = {
    "maxFPGAs",
    "maxCPUs",
    "maxSizePerFPGA",
    "nodes",
    "edges",
    "deviceKinds",
    "bandwidthFactor",
    "overlap",
    "cpuPricePerHour",
    "cpuBandwidth",
}


class _DuplicateKey(ValueError):
    """A key given twice in one JSON object (refused where ``unique_keys`` is asked for)."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def parse_json(data: bytes | str, source: str, error: type[PlacementError], unique_keys: bool = False) -> Any:
    """Parse JSON ``data`` (bytes: at most MAX_FILE_BYTES, UTF-8) or raise ``error`` in one line naming ``source``.

    With ``unique_keys``, an object that gives one key twice is refused (JSON would keep the last one silently).
    """
    source = label(source)
    if isinstance(data, bytes):
        if len(data) > MAX_FILE_BYTES:
            raise error(f"{source}: file is {len(data):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit")
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise error(f"{source}: not UTF-8 text (is it a JSON file?)") from None
    try:
        return json.loads(data, object_pairs_hook=_unique_pairs if unique_keys else None)
    except _DuplicateKey as exc:
        raise error(f"{source}: the key {quote(exc.args[0], 40)} is given twice in one object (ambiguous)") from None
    except json.JSONDecodeError as exc:
        raise error(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise error(f"{source}: not valid JSON (nested too deeply)") from None
    except ValueError as exc:  # e.g. an integer literal of more than 4300 digits
        raise error(f"{source}: not valid JSON ({exc})") from None


def read_file_bytes(path: str | Path, error: type[PlacementError], limit: int = MAX_FILE_BYTES) -> bytes:
    """Read a regular file of at most ``limit`` bytes (never a device, pipe or socket: no hang)."""
    path = Path(path)
    shown = label(str(path))
    if "\x00" in str(path):  # the OS cannot name such a file (os.stat raises ValueError)
        raise error(f"{shown}: no such file (a file name cannot hold a NUL character)")
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{shown}: not a regular file (a device, pipe or socket cannot be read)")
        if info.st_size > limit:
            raise error(f"{shown}: file is {info.st_size:,} bytes, over the {limit:,}-byte limit")
        with path.open("rb") as handle:
            data = handle.read(limit + 1)  # the file may have grown since stat
        if len(data) > limit:
            raise error(f"{shown}: file is over the {limit:,}-byte limit")
        return data
    except FileNotFoundError:
        raise error(f"{shown}: no such file") from None
    except IsADirectoryError:
        raise error(f"{shown}: is a directory, not a file") from None
    except PermissionError:
        raise error(f"{shown}: permission denied") from None
    except OSError as exc:
        raise error(f"{shown}: cannot read ({exc.strerror})") from None


def _float(value: int | float, what: str, error: type[PlacementError]) -> float:
    """``float(value)``; an integer literal beyond the largest float is a one-line error, not an OverflowError."""
    try:
        return float(value)
    except OverflowError:
        raise error(f"{what} is too large (over {sys.float_info.max:.4g}, the largest float)") from None


def get_field(
    obj: Mapping[str, Any], key: str, where: str, kind: str, default: Any = ..., error=InvalidGraphError
) -> Any:
    """Fetch ``obj[key]`` checking its JSON type; ``kind`` is 'int', 'number', 'bool', 'str', 'list', 'object'."""
    if key not in obj:
        if default is ...:
            raise error(f"{where}: missing field '{key}'")
        return default
    value = obj[key]
    ok = {
        "int": isinstance(value, int)
        and not isinstance(value, bool)
        or isinstance(value, float)
        and value.is_integer(),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "bool": isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)),
        "str": isinstance(value, str),
        "list": isinstance(value, list),
        "object": isinstance(value, dict),
    }[kind]
    if not ok:
        names = {
            "int": "an integer",
            "number": "a number",
            "bool": "a boolean (true/false or 0/1)",
            "str": "a string",
            "list": "a list",
            "object": "an object",
        }
        raise error(f"{where}: field '{key}' must be {names[kind]} (got {json.dumps(value)[:40]})")
    if kind == "int":
        if abs(value) > MAX_INTEGER:
            raise error(f"{where}: field '{key}' is too large (at most {MAX_INTEGER})")
        return int(value)
    if kind == "bool":
        return bool(value)
    if kind == "number":
        number = _float(value, f"{where}: field '{key}'", error)
        if not math.isfinite(number):
            raise error(f"{where}: field '{key}' must be finite")
        return number
    return value


def graph_from_dict(data: Any, source: str = "<graph>") -> tuple[Graph, Devices]:
    """Build a validated graph and its file's device inventory from parsed JSON.

    Raises
    ------
    InvalidGraphError
        One line naming ``source``, the node/edge/field and the rule broken.
    """
    return with_source(source, _graph_from_dict, data)


def with_source(source: str, build: Callable[[Any, str], _T], data: Any) -> _T:
    """``build(data, source)``; a graph or devices error becomes one :class:`InvalidGraphError` line naming ``source``."""
    try:
        return build(data, source)
    except (InvalidGraphError, InvalidDevicesError) as exc:
        message, shown = str(exc), label(source)
        if not message.startswith(f"{shown}:"):
            message = f"{shown}: {message}"
        raise InvalidGraphError(message) from None


def _graph_from_dict(data: Any, source: str) -> tuple[Graph, Devices]:
    if not isinstance(data, dict):
        raise InvalidGraphError("the top level must be a JSON object with 'nodes' and 'edges'")
    raw_nodes = get_field(data, "nodes", "graph", "list")
    raw_edges = get_field(data, "edges", "graph", "list")
    nodes = []
    for position, raw in enumerate(raw_nodes):
        if not isinstance(raw, dict):
            raise InvalidGraphError(f"nodes[{position}]: must be an object")
        raw_id = raw.get("id")
        where = (
            f"node {raw_id}"
            if isinstance(raw_id, int) and not isinstance(raw_id, bool) and abs(raw_id) <= MAX_INTEGER
            else f"nodes[{position}]"
        )
        node_id = get_field(raw, "id", where, "int")
        latencies = get_field(raw, "latencies", where, "object", {})
        for kind, value in latencies.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidGraphError(f"{where}: field 'latencies.{label(kind, 40)}' must be a number")
            _float(value, f"{where}: field 'latencies.{label(kind, 40)}'", InvalidGraphError)
        kinds = get_field(raw, "kinds", where, "list", None)
        if kinds is not None and not all(isinstance(k, str) for k in kinds):
            raise InvalidGraphError(f"{where}: field 'kinds' must be a list of kind names")
        color = get_field(raw, "colorClass", where, "int", None)
        nodes.append(
            Node(
                id=node_id,
                cpu_latency=get_field(raw, "cpuLatency", where, "number"),
                accelerator_latency=get_field(raw, "fpgaLatency", where, "number"),
                supported_on_accelerator=get_field(raw, "supportedOnFpga", where, "bool"),
                is_backward=get_field(raw, "isBackwardNode", where, "bool"),
                color_class=color,
                size=get_field(raw, "size", where, "number", 0.0),
                name=str(get_field(raw, "name", where, "str", "")),
                kind_latency=tuple(latencies.items()),
                allowed_kinds=tuple(kinds) if kinds is not None else None,
                extra={k: v for k, v in raw.items() if k not in _NODE_KEYS},
            )
        )
    edges = []
    for position, raw in enumerate(raw_edges):
        if not isinstance(raw, dict):
            raise InvalidGraphError(f"edges[{position}]: must be an object")
        where = f"edges[{position}]"
        source_id = get_field(raw, "sourceId", where, "int")
        target_id = get_field(raw, "destId", where, "int")
        where = f"edge {source_id}->{target_id}"
        size = get_field(raw, "size", where, "number", None)
        edges.append(
            Edge(
                source_id,
                target_id,
                get_field(raw, "cost", where, "number"),
                size,
                extra={k: v for k, v in raw.items() if k not in _EDGE_KEYS},
            )
        )
    graph = Graph(
        tuple(nodes),
        tuple(edges),
        name=Path(source).stem if source else "",
        extra={k: v for k, v in data.items() if k not in _TOP_KEYS},
    )
    devices = devices_from_dict(data)
    known = {kind.name for kind in devices.accelerators}
    for node in graph.nodes:
        for kind in node.allowed_kinds or ():
            if kind not in known:
                raise InvalidGraphError(
                    f"node {node.id}: field 'kinds' names {quote(kind, 40)}, not an accelerator kind "
                    f"of the file ({', '.join(quote(k, 40) for k in sorted(known)[:8]) or 'none'})"
                )
    return graph, devices


#: The device fields of the file format (a graph file's other top-level keys are the graph's).
DEVICE_KEYS = frozenset(
    {
        "maxFPGAs",
        "maxCPUs",
        "maxSizePerFPGA",
        "deviceKinds",
        "bandwidthFactor",
        "overlap",
        "cpuPricePerHour",
        "cpuBandwidth",
    }
)
#: The fields of one ``deviceKinds`` entry.
KIND_KEYS = frozenset({"name", "count", "memory", "speed", "bandwidth", "pricePerHour"})


def _unknown_field(raw: Mapping[str, Any], known: frozenset[str], where: str) -> None:
    unknown = sorted(set(raw) - known, key=str)
    if unknown:
        raise InvalidGraphError(f"{where}: unknown field {quote(unknown[0], 40)}")


def devices_from_dict(data: Mapping[str, Any], where: str = "graph", strict: bool = False) -> Devices:
    """The :class:`Devices` of the file format's device fields (:func:`devices_to_dict` gives them back exactly).

    The one device reader: graph files, scenario cards and shared links (:mod:`placement.scenario`) all use it.

    Parameters
    ----------
    data : mapping
        The device fields (a graph file's top level, or a link's ``devices`` object).
    where : str
        Named by every error (``"graph"``; a link's ``"link: parameter 'devices'"``).
    strict : bool
        Refuse keys that are not device fields (:data:`DEVICE_KEYS`, :data:`KIND_KEYS`); a graph
        file's other keys are the graph's, so it reads with ``strict=False``.

    Raises
    ------
    InvalidGraphError
        A field of the wrong type: one line naming ``where`` and the field.
    InvalidDevicesError
        A value :class:`Devices` refuses (a negative count, a duplicate kind name...).
    """
    if strict:
        _unknown_field(data, DEVICE_KEYS, where)
    cpus = get_field(data, "maxCPUs", where, "int", 0)
    bandwidth = get_field(data, "bandwidthFactor", where, "number", 1.0)
    overlap = get_field(data, "overlap", where, "bool", False)
    cpu_price = get_field(data, "cpuPricePerHour", where, "number", 0.0)
    # Absent or null: CPU cores pay no communication (the paper's model).
    cpu_bandwidth = None if data.get("cpuBandwidth") is None else get_field(data, "cpuBandwidth", where, "number")
    raw_kinds = get_field(data, "deviceKinds", where, "list", None)
    kinds: tuple[AcceleratorKind, ...]
    if raw_kinds is None:
        count = get_field(data, "maxFPGAs", where, "int", 0)
        memory = decode_unlimited(data.get("maxSizePerFPGA"))
        if isinstance(memory, bool) or not isinstance(memory, (int, float)):
            raise InvalidGraphError(f"{where}: field 'maxSizePerFPGA' must be a number or {UNLIMITED!r}")
        memory = _float(memory, f"{where}: field 'maxSizePerFPGA'", InvalidGraphError)
        if count < 0 or cpus < 0:
            raise InvalidGraphError(f"{where}: fields 'maxFPGAs' and 'maxCPUs' must be non-negative")
        kinds = (AcceleratorKind("accelerator", count, float(memory)),)
    else:
        kind_list: list[AcceleratorKind] = []
        for position, raw in enumerate(raw_kinds):
            at = f"{where}: deviceKinds[{position}]"
            if not isinstance(raw, dict):
                raise InvalidGraphError(f"{at}: must be an object")
            if strict:
                _unknown_field(raw, KIND_KEYS, at)
            memory = decode_unlimited(raw.get("memory"))
            if isinstance(memory, int) and not isinstance(memory, bool):
                memory = _float(memory, f"{at}: field 'memory'", InvalidGraphError)
            kind_list.append(
                AcceleratorKind(
                    name=get_field(raw, "name", at, "str"),
                    count=get_field(raw, "count", at, "int"),
                    memory=memory,
                    speed=get_field(raw, "speed", at, "number", 1.0),
                    bandwidth=get_field(raw, "bandwidth", at, "number", 1.0),
                    price_per_hour=get_field(raw, "pricePerHour", at, "number", 0.0),
                )
            )
        kinds = tuple(kind_list)
    return Devices(
        accelerators=kinds,
        cpus=cpus,
        bandwidth=bandwidth,
        overlap=overlap,
        cpu_price_per_hour=cpu_price,
        cpu_bandwidth=cpu_bandwidth,
    )


def parse_problem(data: bytes | str, source: str = "<upload>") -> Problem:
    """Parse the bytes/text of a graph file into a :class:`Problem` (graph + the file's devices)."""
    graph, devices = graph_from_dict(parse_json(data, source, InvalidGraphError), source)
    try:
        return Problem(graph, devices)
    except InvalidGraphError as exc:
        raise InvalidGraphError(f"{label(source)}: {exc}") from None


def load_problem(path: str | Path) -> Problem:
    """Read a graph file from disk into a :class:`Problem` (size-limited; one-line errors).

    Parameters
    ----------
    path : str or Path
        A graph file in the paper's JSON format (or the extended format with device kinds).

    Returns
    -------
    Problem
        The graph and the file's own devices.

    Raises
    ------
    InvalidGraphError
        One line naming the file, the node/edge/field and the rule broken.

    Examples
    --------
    >>> from placement import load_problem
    >>> problem = load_problem("sample_graphs/throughput/layer/bert24_inference.json")
    >>> len(problem.graph.nodes), problem.devices.accelerator_count, problem.devices.cpus
    (32, 6, 1)
    >>> load_problem("no/such/file.json")
    Traceback (most recent call last):
    ...
    placement.errors.InvalidGraphError: no/such/file.json: no such file
    """
    return parse_problem(read_file_bytes(path, InvalidGraphError), str(path))


def load_graph(path: str | Path) -> Graph:
    """Read only the graph of a graph file."""
    return load_problem(path).graph


def graph_to_dict(graph: Graph, devices: Devices | None = None) -> dict[str, Any]:
    """The graph (and optionally its devices) in the paper's JSON format; unknown keys are kept."""
    body = graph.to_dict()
    out: dict[str, Any] = dict(graph.extra)
    if devices is not None:
        out.update(devices_to_dict(devices))
    out["nodes"] = body["nodes"]
    out["edges"] = body["edges"]
    return out


def devices_to_dict(devices: Devices) -> dict[str, Any]:
    """Device fields of the file format: the paper's keys, plus ``deviceKinds`` when not the paper's case.

    The one device writer: graph files, scenario cards and shared links all write this (memory
    :data:`UNLIMITED` for infinity); :func:`devices_from_dict` reads it back exactly.
    """
    first = devices.accelerators[0] if devices.accelerators else AcceleratorKind("accelerator", 0)
    out: dict[str, Any] = {
        "maxFPGAs": devices.accelerator_count,
        "maxCPUs": devices.cpus,
        "maxSizePerFPGA": encode_unlimited(first.memory),
    }
    paper_case = (
        len(devices.accelerators) == 1
        and first.name == "accelerator"
        and first.speed == 1
        and first.bandwidth == 1
        and first.price_per_hour == 0
        and devices.bandwidth == 1
        and not devices.overlap
        and devices.cpu_price_per_hour == 0
        and devices.cpu_bandwidth is None
    )
    if not paper_case:
        out["deviceKinds"] = [
            {
                "name": k.name,
                "count": k.count,
                "memory": encode_unlimited(k.memory),
                "speed": k.speed,
                "bandwidth": k.bandwidth,
                "pricePerHour": k.price_per_hour,
            }
            for k in devices.accelerators
        ]
        out["bandwidthFactor"] = devices.bandwidth
        out["overlap"] = devices.overlap
        out["cpuPricePerHour"] = devices.cpu_price_per_hour
        if devices.cpu_bandwidth is not None:
            out["cpuBandwidth"] = devices.cpu_bandwidth
    return out


def problem_to_json(problem: Problem) -> str:
    """The problem as JSON text (round-trips through :func:`parse_problem`)."""
    return json.dumps(graph_to_dict(problem.graph, problem.devices), indent=1)


# ----------------------------------------------------------------------------- splits
def placement_from_dict(data: Any, graph: Graph, devices: Devices, source: str = "<split>") -> Placement:
    """Read a split (``fpgas``/``cpus`` or ``accelerators``/``cpus``) for ``graph``.

    Backward nodes not listed follow the device of a forward node of their color class;
    a node that is still unplaced is an error.
    """
    try:
        return _placement_from_dict(data, graph, devices)
    except InvalidSplitError as exc:
        raise InvalidSplitError(f"{label(source)}: {exc}") from None


def _node_list(raw: Any, where: str) -> list[int]:
    if not isinstance(raw, dict):
        raise InvalidSplitError(f"{where}: must be an object with a 'nodes' list")
    nodes = raw.get("nodes")
    if not isinstance(nodes, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in nodes):
        raise InvalidSplitError(f"{where}: field 'nodes' must be a list of node ids")
    return nodes


def _placement_from_dict(data: Any, graph: Graph, devices: Devices) -> Placement:
    if not isinstance(data, dict):
        raise InvalidSplitError("the top level must be a JSON object with 'fpgas' (or 'accelerators') and 'cpus'")
    stages: list[Stage] = []
    if "accelerators" in data:
        raw_list = data["accelerators"]
        if not isinstance(raw_list, list):
            raise InvalidSplitError("field 'accelerators' must be a list")
        counters: dict[str, int] = {}
        for position, raw in enumerate(raw_list):
            where = f"accelerators[{position}]"
            nodes = _node_list(raw, where)
            kind = raw.get("kind", devices.accelerators[0].name if devices.accelerators else "accelerator")
            if not isinstance(kind, str) or kind == CPU_KIND:
                raise InvalidSplitError(f"{where}: field 'kind' must name an accelerator kind")
            index = counters.get(kind, 0)
            counters[kind] = index + 1
            calls = raw.get("calls")
            if calls is not None and (not isinstance(calls, list) or not all(isinstance(c, list) for c in calls)):
                raise InvalidSplitError(f"{where}: field 'calls' must be a list of node-id lists")
            stages.append(
                Stage(DeviceSlot(kind, index), tuple(nodes), tuple(tuple(c) for c in calls) if calls else None)
            )
    else:
        raw_list = data.get("fpgas", [])
        if not isinstance(raw_list, list):
            raise InvalidSplitError("field 'fpgas' must be a list")
        kind = devices.accelerators[0].name if devices.accelerators else "accelerator"
        for position, raw in enumerate(raw_list):
            stages.append(Stage(DeviceSlot(kind, position), tuple(_node_list(raw, f"fpgas[{position}]"))))
    raw_cpus = data.get("cpus", [])
    if not isinstance(raw_cpus, list):
        raise InvalidSplitError("field 'cpus' must be a list")
    for position, raw in enumerate(raw_cpus):
        stages.append(Stage(DeviceSlot(CPU_KIND, position), tuple(_node_list(raw, f"cpus[{position}]"))))
    # Unknown ids, then completion of backward nodes by color class.
    device_of: dict[int, DeviceSlot] = {}
    for stage in stages:
        for node_id in stage.nodes:
            if node_id not in graph.node_by_id:
                raise InvalidSplitError(f"node {node_id}: not in the graph")
            if node_id in device_of:
                raise InvalidSplitError(f"node {node_id}: placed on both {device_of[node_id]} and {stage.device}")
            device_of[node_id] = stage.device
    added: dict[DeviceSlot, list[int]] = {}
    for node in graph.nodes:
        if node.id in device_of:
            continue
        partners = (
            [m for m in graph.color_classes.get(node.color_class, ()) if m in device_of]
            if node.color_class is not None
            else []
        )
        if not partners:
            raise InvalidSplitError(f"node {node.id}: not placed (and no placed node shares its color class)")
        device = device_of[partners[0]]
        added.setdefault(device, []).append(node.id)
    completed = []
    for stage in stages:
        extra = tuple(added.get(stage.device, ()))
        calls = stage.calls
        if calls is not None and extra:
            calls = calls[:-1] + (calls[-1] + extra,)
        completed.append(Stage(stage.device, stage.nodes + extra, calls))
    return Placement(tuple(s for s in completed if s.nodes))


def parse_placement(data: bytes | str, graph: Graph, devices: Devices, source: str = "<split>") -> Placement:
    """Parse the bytes/text of a split file for ``graph``."""
    return placement_from_dict(parse_json(data, source, InvalidSplitError), graph, devices, source)


def load_placement(path: str | Path, graph: Graph, devices: Devices) -> Placement:
    """Read a split file from disk."""
    return parse_placement(read_file_bytes(path, InvalidSplitError), graph, devices, str(path))


def placement_to_dict(placement: Placement, devices: Devices, loads: Mapping[DeviceSlot, float] | None = None) -> dict:
    """A placement as a split file: the paper's ``fpgas``/``cpus`` (one kind) or ``accelerators``/``cpus``.

    Every device of the inventory gets an entry (empty devices have empty node lists).
    """
    loads = loads or {}
    stage_of = {stage.device: stage for stage in placement.stages}
    slots = list(devices.slots()) + [s.device for s in placement.stages if s.device not in devices.slots()]

    def entry(slot: DeviceSlot, with_kind: bool) -> dict:
        stage = stage_of.get(slot)
        out: dict[str, Any] = {"load": loads.get(slot, 0.0), "nodes": list(stage.nodes) if stage else []}
        if with_kind:
            out = {"kind": slot.kind, **out}
        if stage is not None and stage.calls is not None and len(stage.calls) > 1:
            out["calls"] = [list(call) for call in stage.calls]
        return out

    accelerator_slots = [s for s in slots if not s.is_cpu]
    out: dict[str, Any] = {}
    if len({s.kind for s in accelerator_slots}) <= 1 and len(devices.accelerators) <= 1:
        out["fpgas"] = [entry(s, False) for s in accelerator_slots]
    else:
        out["accelerators"] = [entry(s, True) for s in accelerator_slots]
    out["cpus"] = [entry(s, False) for s in slots if s.is_cpu]
    return out
