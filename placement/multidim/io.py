"""Reading Piper's JSON format (see ``sample_graphs/piper/README.md``).

Top level: ``maxDevices``, ``maxMemoryPerDevice`` (bytes), ``bandwidth`` (bytes/s), ``mbsInBatch`` (N),
``nodes`` (``id``, ``name``, ``TMPCs``: t -> [{``id``, ``timePerSample``, ``parameterSize``,
``memoryUsageA``, ``memoryUsageB``, ``syncTimeFw``, ``syncTimeBw``}]) and ``edges`` (``sourceId``,
``destId``, ``communicationCost``). Extension: ``deviceKinds``: [{``name``, ``count``, ``memory``?,
``bandwidth``?, ``speed``?}] replaces the single kind given by the top-level fields (missing fields
take the top-level values, speed 1).

Units: Piper's ``timePerSample`` is in seconds; the model works in ms (:mod:`.model`), so reading
multiplies by :data:`~.model.MS_PER_S` and :func:`problem_to_dict` divides. Sizes stay bytes and
bandwidths bytes/s.

Every error is one line ``<source>: <where>: <rule broken>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InvalidGraphError, quote
from ..io import get_field, parse_json, read_file_bytes, with_source
from .model import MS_PER_S, DeviceKind, MultiProblem, NodeOption, PEdge, PNode


def read_piper(path: str | Path) -> MultiProblem:
    """Read a Piper workload file (raises :class:`InvalidGraphError` with a one-line message)."""
    return piper_from_json(read_file_bytes(path, InvalidGraphError), str(path))


def piper_from_json(data: bytes | str, source: str = "<piper>") -> MultiProblem:
    """Parse Piper JSON text or bytes."""
    return piper_from_dict(parse_json(data, source, InvalidGraphError), source)


def is_piper_dict(data: Any) -> bool:
    """Whether parsed JSON looks like Piper's format (has ``maxDevices`` and ``mbsInBatch``)."""
    return isinstance(data, dict) and "mbsInBatch" in data and "maxDevices" in data


def piper_from_dict(data: Any, source: str = "<piper>") -> MultiProblem:
    """Build a validated :class:`MultiProblem` from parsed Piper JSON."""
    return with_source(source, _from_dict, data)


def _objects(items: list, name: str):
    """(position, where, item) for each entry of the list field ``name``; every entry must be an object."""
    for position, raw in enumerate(items):
        where = f"{name}[{position}]"
        if not isinstance(raw, dict):
            raise InvalidGraphError(f"{where}: must be an object")
        yield position, where, raw


def _from_dict(data: Any, source: str) -> MultiProblem:
    if not isinstance(data, dict):
        raise InvalidGraphError("top level must be a JSON object")
    devices = get_field(data, "maxDevices", "top level", "int")
    memory = get_field(data, "maxMemoryPerDevice", "top level", "number")
    bandwidth = get_field(data, "bandwidth", "top level", "number")
    microbatches = get_field(data, "mbsInBatch", "top level", "int")
    if devices < 0:
        raise InvalidGraphError("top level: maxDevices must be >= 0")
    if microbatches < 1:
        raise InvalidGraphError("top level: mbsInBatch must be >= 1")
    raw_nodes = get_field(data, "nodes", "top level", "list")
    raw_edges = get_field(data, "edges", "top level", "list")
    nodes = [_node(position, where, raw) for position, where, raw in _objects(raw_nodes, "nodes")]
    edges = []
    for _, where, raw in _objects(raw_edges, "edges"):
        s = get_field(raw, "sourceId", where, "int")
        t = get_field(raw, "destId", where, "int")
        c = _nonneg(get_field(raw, "communicationCost", where, "number", 0.0), where, "communicationCost")
        for end in (s, t):
            if not 0 <= end < len(nodes):
                raise InvalidGraphError(f"{where}: unknown node {end}")
        edges.append(PEdge(s, t, c))
    raw_kinds = get_field(data, "deviceKinds", "top level", "list", None)
    if raw_kinds is None:
        if memory <= 0 or bandwidth <= 0:
            raise InvalidGraphError("top level: maxMemoryPerDevice and bandwidth must be positive")
        kinds: tuple[DeviceKind, ...] | list[DeviceKind] = (DeviceKind("device", devices, memory, bandwidth),)
    else:
        kinds = []
        for _, where, raw in _objects(raw_kinds, "deviceKinds"):
            kinds.append(
                DeviceKind(
                    name=get_field(raw, "name", where, "str"),
                    count=get_field(raw, "count", where, "int"),
                    memory=get_field(raw, "memory", where, "number", memory),
                    bandwidth=get_field(raw, "bandwidth", where, "number", bandwidth),
                    speed=get_field(raw, "speed", where, "number", 1.0),
                )
            )
    return MultiProblem(tuple(nodes), tuple(edges), tuple(kinds), microbatches)


def _node(position: int, where: str, raw: dict) -> PNode:
    """One entry of ``nodes``: its id (equal to its position) and its TMPCs, t -> list of options."""
    node_id = get_field(raw, "id", where, "int")
    if node_id != position:
        raise InvalidGraphError(f"{where}: id {node_id} must equal its position {position} (ids are 0..n-1)")
    where = f"node {node_id}"
    tmpcs = get_field(raw, "TMPCs", where, "object")
    options = {}
    for key, lst in tmpcs.items():
        try:
            t = int(key)
        except ValueError:
            raise InvalidGraphError(f"{where}: TMPCs key {quote(key, 40)} must be an integer degree") from None
        if t < 1:
            raise InvalidGraphError(f"{where}: TMPCs key {quote(key, 40)} must be >= 1")
        if not isinstance(lst, list) or not lst:
            raise InvalidGraphError(f"{where}: TMPCs[{quote(key, 40)}] must be a non-empty list")
        opts = [_option(o, f"{where}: TMPCs[{quote(key, 40)}][{j}]", j) for j, o in enumerate(lst)]
        names = [o.name for o in opts]
        if len(set(names)) != len(names):
            twice = next(name for name in names if names.count(name) > 1)
            raise InvalidGraphError(f"{where}: TMPCs[{quote(key, 40)}] has the option id {quote(twice, 40)} twice")
        options[t] = tuple(opts)
    if not options:
        raise InvalidGraphError(f"{where}: TMPCs is empty (at least t = 1 is needed)")
    return PNode(node_id, str(get_field(raw, "name", where, "str", f"node{node_id}")), tuple(options.items()))


def _option(o: Any, w: str, j: int) -> NodeOption:
    """One TMPC (its ``timePerSample`` seconds become ms)."""
    if not isinstance(o, dict):
        raise InvalidGraphError(f"{w}: must be an object")
    syncs = []
    for name in ("syncTimeFw", "syncTimeBw"):
        m = get_field(o, name, w, "object", {})
        pairs = {}
        for k, v in m.items():
            try:
                pairs[int(k)] = v
            except ValueError:
                raise InvalidGraphError(f"{w}: {name} key {quote(k, 40)} must be a node id") from None
        syncs.append(pairs)
    return NodeOption(
        name=str(get_field(o, "id", w, "str", f"option{j}")),
        time=MS_PER_S * _nonneg(get_field(o, "timePerSample", w, "number"), w, "timePerSample"),
        parameters=_nonneg(get_field(o, "parameterSize", w, "number", 0.0), w, "parameterSize"),
        memory_a=_nonneg(get_field(o, "memoryUsageA", w, "number", 0.0), w, "memoryUsageA"),
        memory_b=_nonneg(get_field(o, "memoryUsageB", w, "number", 0.0), w, "memoryUsageB"),
        sync_fw=tuple(syncs[0].items()),
        sync_bw=tuple(syncs[1].items()),
    )


def _nonneg(value: float, where: str, name: str) -> float:
    if value < 0:
        raise InvalidGraphError(f"{where}: {name} must be >= 0 (got {value})")
    return value


def problem_to_dict(problem: MultiProblem) -> dict:
    """Piper JSON for ``problem`` (``deviceKinds`` written when there is more than one kind; times in seconds)."""
    first = problem.kinds[0]
    out: dict[str, Any] = {
        "maxDevices": problem.total_devices,
        "maxMemoryPerDevice": first.memory,
        "bandwidth": first.bandwidth,
        "mbsInBatch": problem.microbatches,
        "nodes": [
            {
                "id": n.id,
                "name": n.name,
                "TMPCs": {
                    str(t): [
                        {
                            "id": o.name,
                            "timePerSample": o.time / MS_PER_S,
                            "parameterSize": o.parameters,
                            "memoryUsageA": o.memory_a,
                            "memoryUsageB": o.memory_b,
                            "syncTimeFw": {str(k): v for k, v in o.sync_fw},
                            "syncTimeBw": {str(k): v for k, v in o.sync_bw},
                        }
                        for o in opts
                    ]
                    for t, opts in n.options
                },
            }
            for n in problem.nodes
        ],
        "edges": [{"sourceId": e.source, "destId": e.target, "communicationCost": e.cost} for e in problem.edges],
    }
    if len(problem.kinds) > 1 or first.speed != 1.0:
        out["deviceKinds"] = [
            {"name": k.name, "count": k.count, "memory": k.memory, "bandwidth": k.bandwidth, "speed": k.speed}
            for k in problem.kinds
        ]
    return out
