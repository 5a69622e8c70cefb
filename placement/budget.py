"""Work estimated before it starts, and a wall-clock deadline for a whole command (issue 27.2).

* :func:`precheck_multidim` reads the *raw* parsed JSON of a graph (paper format or Piper's) and refuses,
  in one line, an order whose lattice is certainly past the multidim planner's caps
  (:func:`placement.multidim.limits.check_order_shape`), before the graph objects, the training graph and
  the options are built (on a dense 600-node DAG those took seconds and hundreds of MB before the planner's
  own estimate could refuse it). Anything malformed is left to the full reader and its one-line errors.
* :func:`check_solve_work` estimates, from the shape alone (groups, edges between groups, devices), the
  work of every other planner before it starts: the exact DP kernel's steps (``dp``, ``memory-aware``,
  ``pipedream``, and the DP warm starts of the integer programs) and the size of an integer program; past
  :data:`DEFAULT_MAX_DP_WORK` or :data:`DEFAULT_MAX_IP_SIZE` it refuses in one line.
  :func:`precheck_solve_raw` runs it on the raw parsed JSON (the CLI: before a dense graph's slow
  validation), :func:`precheck_solve` on a built problem (the app's dispatch).
* :func:`deadline`, :func:`remaining`, :func:`process_age` and :class:`DeadlineError` (the CLI's ``--deadline``)
  live in :mod:`placement.deadline` and are re-exported here.
"""

from __future__ import annotations

import math
from typing import Any

from .condense import longest_path_levels
from .deadline import DeadlineError as DeadlineError  # re-exported: the CLI's --deadline (placement.deadline)
from .deadline import deadline as deadline
from .deadline import process_age as process_age
from .deadline import remaining as remaining
from .errors import TooManyIdealsError


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if abs(value) < 1e308 else math.inf


def _positive(value: Any) -> bool | None:
    """Whether a raw JSON number is > 0 (None: not a number)."""
    number = _number(value)
    return None if number is None else number > 0


def _fast_positive(value: Any) -> bool | None:
    """:func:`_positive` with a fast path for the plain finite numbers of a parsed file (same answers)."""
    kind = type(value)
    if (kind is float or kind is int) and -1e308 < value < 1e308:
        return value > 0
    return _positive(value)


def _finite_positive(value: Any) -> bool:
    """Whether a raw JSON value is a finite number > 0 (a bool is not a number here)."""
    return type(value) in (int, float) and 0 < value < 1e308


class _PaperScan:
    """What :func:`_paper_scan` reads from a paper-format graph dict (plain attributes, built once)."""

    __slots__ = ("count", "pairs", "costly", "backward", "fixed")

    def __init__(self, count: int, pairs: list, costly: list, backward: bool, fixed: list) -> None:
        self.count, self.pairs, self.costly, self.backward, self.fixed = count, pairs, costly, backward, fixed


def _paper_scan(data: dict) -> _PaperScan | None:
    """One pass over a paper-format graph dict: model nodes (color classes), edges between them, and per class
    whether it costs time or memory (``costly``, multidim's rule) or is certainly not free for the exact DP
    (``fixed``: a positive CPU or accelerator latency, :func:`placement.exact.ideals.reduce_groups` never
    merges it). None when malformed (the full reader names the rule broken). O(nodes + edges)."""
    nodes, edges = data.get("nodes"), data.get("edges")
    if not isinstance(nodes, list) or not isinstance(edges, list):
        return None
    label_of: dict[int, int] = {}  # node id -> model node index (its color class, else itself)
    labels: dict[tuple[str, int], int] = {}
    backward: set[int] = set()
    costly: list[bool] = []
    fixed: list[bool] = []
    positive = _fast_positive
    for raw in nodes:
        if not isinstance(raw, dict):
            return None
        node_id, color, is_backward = raw.get("id"), raw.get("colorClass"), raw.get("isBackwardNode", 0)
        if not isinstance(node_id, int) or node_id in label_of or not isinstance(is_backward, (int, bool)):
            return None
        if color is not None and not isinstance(color, int):
            return None
        key = ("class", color) if color is not None else ("node", node_id)
        index = labels.setdefault(key, len(labels))
        if index == len(costly):
            costly.append(False)
            fixed.append(False)
        label_of[node_id] = index
        if is_backward:
            backward.add(node_id)
        latency, size = positive(raw.get("fpgaLatency", 0)), positive(raw.get("size", 0))
        if latency is None or size is None:
            return None
        costly[index] = costly[index] or latency or size
        if not fixed[index]:
            fixed[index] = _finite_positive(raw.get("fpgaLatency")) or _finite_positive(raw.get("cpuLatency"))
    pairs: list[tuple[int, int]] = []
    append = pairs.append
    try:  # an unhashable id (a list, an object) is malformed: the TypeError below
        for raw in edges:
            if not isinstance(raw, dict):
                return None
            source, target = raw.get("sourceId"), raw.get("destId")
            if source not in label_of or target not in label_of:
                return None
            if backward and (source in backward or target in backward):
                continue
            size = raw.get("size")
            carries = positive(raw.get("cost", 0)) if size is None else positive(size)
            if carries is None:
                return None
            u, v = label_of[source], label_of[target]
            if u != v:
                append((u, v))
                if carries:  # a non-free edge: both ends stay groups of their own
                    costly[u] = costly[v] = True
    except TypeError:
        return None
    return _PaperScan(len(labels), pairs, costly, bool(backward), fixed)


def _paper_shape(data: dict) -> tuple[int, list[tuple[int, int]], list[bool]] | None:
    """Nodes, edges and costly flags of the model nodes (color classes) of a paper-format graph dict."""
    scan = _paper_scan(data)
    return None if scan is None else (scan.count, scan.pairs, scan.costly)


def _piper_shape(data: dict) -> tuple[int, list[tuple[int, int]], list[bool]] | None:
    """Nodes, edges and costly flags of a Piper file dict (ids are positions)."""
    nodes, edges = data.get("nodes"), data.get("edges")
    if not isinstance(nodes, list) or not isinstance(edges, list):
        return None
    costly = []
    for raw in nodes:
        tmpcs = raw.get("TMPCs") if isinstance(raw, dict) else None
        if not isinstance(tmpcs, dict):
            return None
        cost = False
        for options in tmpcs.values():
            for option in options if isinstance(options, list) else ():
                if not isinstance(option, dict):
                    return None
                if not cost:
                    for field in ("timePerSample", "parameterSize", "memoryUsageA", "memoryUsageB"):
                        if _fast_positive(option.get(field, 0)):
                            cost = True
                            break
        costly.append(cost)
    pairs: list[tuple[int, int]] = []
    append, count, positive = pairs.append, len(costly), _fast_positive
    for raw in edges:
        if not isinstance(raw, dict):
            return None
        source, target = raw.get("sourceId"), raw.get("destId")
        if not (isinstance(source, int) and isinstance(target, int) and 0 <= source < count and 0 <= target < count):
            return None
        append((source, target))
        if positive(raw.get("communicationCost", 0)):
            costly[source] = costly[target] = True
    return count, pairs, costly


def precheck_multidim(data: Any, max_ideals: int | None = None, max_stages: int | None = None) -> None:
    """Refuse (one line) a parsed graph whose multidim lattice is certainly too large; O(nodes + edges).

    ``data`` is the parsed JSON of a Piper file or of a paper-format graph (a builder graph, too).
    Malformed input returns quietly: the full reader names the field and the rule broken.

    Raises
    ------
    placement.multidim.limits.TooMuchWorkError
        When a lower bound on the ideals, stages or stage-boundary sums exceeds its cap.
    """
    from .multidim.dp import DEFAULT_MAX_IDEALS, DEFAULT_MAX_STAGES  # noqa: PLC0415
    from .multidim.io import is_piper_dict  # noqa: PLC0415
    from .multidim.limits import check_order_shape  # noqa: PLC0415

    if not isinstance(data, dict):
        return
    shape = _piper_shape(data) if is_piper_dict(data) else _paper_shape(data)
    if shape is None:
        return
    count, pairs, costly = shape
    check_order_shape(
        count,
        pairs,
        costly,
        DEFAULT_MAX_IDEALS if max_ideals is None else max_ideals,
        DEFAULT_MAX_STAGES if max_stages is None else max_stages,
    )


class TooMuchSolveWorkError(TooManyIdealsError):
    """A planner's estimated work is past its cap (one line: the method, the estimate, the cap, the way out)."""


#: Methods running the exact lattice DP kernel over pairs of ideals (pipedream: of one topological chain).
DP_METHODS = frozenset({"dp", "memory-aware", "pipedream"})

#: Integer programs whose warm start (``warm_start=True``, the default) first runs this DP method.
#: (latency-ip's DP runs under a share of its time limit, but the kernel's first progress report - its only
#: chance to stop - came after 14 s on a 5,000-node chain, measured 2026-11-25; the first kernel run reports too now.)
DP_WARM_STARTS = {"ip": "pipedream", "ip-noncontiguous": "dp", "memory-aware-ip": "memory-aware", "latency-ip": "dp"}

#: Methods whose first start is a DP method's plan, whatever their options (local search's restart 0).
DP_SEEDS = {"local-search": "pipedream"}

#: Integer-program methods (model size estimated by :func:`ip_size`).
IP_METHODS = frozenset({"ip", "ip-noncontiguous", "memory-aware-ip", "latency-ip"})

#: Kernel steps of one pair of ideals besides the edges it walks. Calibrated on 2 busy cores (2026-11-25):
#: a 2,000-node chain (3.2e7 steps) took 4.1 s of DP, a dense 300-node DAG (1.4e7) 3.2 s, and the kernel's
#: time per pair grows with the edges per group (5,000-node chain: 0.5 us a pair; dense 600: 20 us).
PAIR_STEPS = 14

#: Largest estimated DP kernel work (steps, :func:`dp_work`) started without ``--max-work``: a few seconds.
DEFAULT_MAX_DP_WORK = 50_000_000

#: Largest estimated integer program (:func:`ip_size`): (groups + edges) x devices x calls per device. The
#: samples need at most 11,300; a dense 600-node DAG (540,000) took 1.6 GB in HiGHS within a minute.
DEFAULT_MAX_IP_SIZE = 300_000


#: Largest estimated integer program (:func:`ip_size`) solved to optimality with no time limit: past it an exact
#: integer program without ``--time-limit`` is refused (it could run for hours). Above the samples' largest
#: (11,300) with room; a choice, not a measurement of HiGHS: a time limit (or ``--max-ip-size``) lifts it.
DEFAULT_MAX_UNTIMED_IP_SIZE = 20_000


def _untimed(method: str, options: dict[str, Any]) -> bool:
    """Whether ``method`` would run with no time limit (its option given as None, or absent with no default)."""
    if "time_limit" in options:
        return options["time_limit"] is None
    from .solve import METHODS  # noqa: PLC0415 - the registry (placement.solve imports this module's users)

    spec = METHODS.get(method)
    return spec is not None and "time_limit" in spec.option_names and spec.option("time_limit").default is None


def dp_work(groups: int, edges: int) -> int:
    """Estimated steps of the DP kernel: every pair of ideals along one chain x (:data:`PAIR_STEPS` + mean degree).

    ``groups`` nodes that must share a device (merged), ``edges`` between different groups. Any DAG of
    ``g`` groups has a chain of ``g + 1`` nested ideals, so at least ``g (g + 1) / 2`` pairs of ideals.
    """
    pairs = groups * (groups + 1) // 2
    return pairs * (PAIR_STEPS + -(-2 * edges // max(groups, 1)))


def ip_size(groups: int, edges: int, devices: int, calls: int = 1) -> int:
    """Estimated integer-program size: one assignment column per group and device (and call), a row per edge."""
    return (groups + edges) * max(devices, 1) * max(calls, 1)


def check_solve_work(
    method: str,
    groups: int,
    edges: int,
    devices: int,
    options: dict[str, Any] | None = None,
    max_dp_work: float | None = None,
    max_ip_size: float | None = None,
) -> None:
    """Refuse (one line) a solve whose estimated work is past the caps; O(1).

    Parameters
    ----------
    method : str
        A method name of :data:`placement.solve.METHODS` (others pass).
    groups, edges, devices : int
        Groups (color classes merged), edges between different groups, accelerators + CPU cores.
    options : dict, optional
        The method's options (``warm_start``, ``subgraphs_per_accelerator`` are read).
    max_dp_work, max_ip_size : float, optional
        The caps (default :data:`DEFAULT_MAX_DP_WORK`, :data:`DEFAULT_MAX_IP_SIZE`; ``inf``: no cap).

    Raises
    ------
    TooMuchSolveWorkError
        Naming the method, the estimate, the cap and what to do.
    """
    options = options or {}
    work_cap = DEFAULT_MAX_DP_WORK if max_dp_work is None else max_dp_work
    size_cap = DEFAULT_MAX_IP_SIZE if max_ip_size is None else max_ip_size
    dp_method = method if method in DP_METHODS else DP_SEEDS.get(method)
    if method in DP_WARM_STARTS and options.get("warm_start", True):
        dp_method = DP_WARM_STARTS[method]
    if dp_method is not None:
        work = dp_work(groups, edges)
        if work > work_cap:
            what = method if dp_method == method else f"{method}'s start ({dp_method})"
            way = "--no-warm-start, " if method in DP_WARM_STARTS else ""
            raise TooMuchSolveWorkError(
                f"{what}: about {work:.2g} DP kernel steps estimated ({groups:,} groups, {edges:,} edges between "
                f"them: pairs of ideals x ({PAIR_STEPS} + mean degree)), over the cap of {work_cap:,.0f}; "
                f"use {way}a coarser graph (merge operators into layers), or raise --max-work"
            )
    if method in IP_METHODS:
        calls = int(options.get("subgraphs_per_accelerator") or options.get("q") or 1)
        size = ip_size(groups, edges, devices, calls)
        untimed = max_ip_size is None and _untimed(method, options)
        cap = min(size_cap, DEFAULT_MAX_UNTIMED_IP_SIZE) if untimed else size_cap
        if size > cap:
            shape = (
                f"((groups + edges) x devices{' x calls' if calls > 1 else ''}: ({groups:,} + {edges:,}) x "
                f"{devices:,}{f' x {calls:,}' if calls > 1 else ''})"
            )
            if untimed and size <= size_cap:
                raise TooMuchSolveWorkError(
                    f"{method}: the integer program would have about {size:.2g} entries {shape} and no time "
                    f"limit, over the cap of {cap:,.0f} for an exact solve without one; give --time-limit SECONDS "
                    "(it returns the best plan found and its gap), or raise --max-ip-size"
                )
            raise TooMuchSolveWorkError(
                f"{method}: the integer program would have about {size:.2g} entries {shape}, over the cap of "
                f"{cap:,.0f}; use --method dp, a coarser graph or fewer devices, or raise --max-ip-size"
            )


def _raw_devices(data: dict, accelerators: int | None, cpus: int | None) -> int | None:
    """Accelerators + CPU cores of a raw paper-format graph dict (with the CLI's overrides); None if malformed."""
    kinds = data.get("deviceKinds")
    counts: list[Any]
    if isinstance(kinds, list) and kinds:
        counts = [kind.get("count", 1) if isinstance(kind, dict) else None for kind in kinds]
        if accelerators is not None:
            counts[0] = accelerators
    else:
        counts = [data.get("maxFPGAs", 0) if accelerators is None else accelerators]
    counts.append(data.get("maxCPUs", 0) if cpus is None else cpus)
    if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in counts):
        return None
    return sum(counts)


def raw_solve_shape(data: Any, accelerators: int | None = None, cpus: int | None = None) -> tuple[int, int, int] | None:
    """(groups, forward edges between groups, devices) of a raw paper-format graph dict; None if malformed.

    O(nodes + edges). ``accelerators``/``cpus``: the command line's overrides of the file's counts.
    """
    if not isinstance(data, dict):
        return None
    scan = _paper_scan(data)
    devices = _raw_devices(data, accelerators, cpus)
    if scan is None or devices is None:
        return None
    return scan.count, len(set(scan.pairs)), devices


#: Methods whose own run enumerates the ideals of the reduced groups (:func:`placement.exact.dp.solve_dp`,
#: :func:`placement.exact.memory_aware.solve_memory_aware`) and stops past their ``max_ideals``.
IDEAL_METHODS = frozenset({"dp", "memory-aware"})


def ideal_floor(count: int, pairs: list[tuple[int, int]], fixed: list[bool], cap: int) -> tuple[int, int] | None:
    """A lower bound on the ideals the exact DP enumerates, and the widest level's size; O(nodes + edges).

    ``count`` classes, ``pairs`` the order's edges between them (every edge: the bound needs the whole
    order), ``fixed[v]``: class v is never merged away (:func:`placement.exact.ideals.reduce_groups` merges
    only free groups, and keeps the order among the others: no merge relates two of them anew). The
    fixed classes of one longest-path level are an antichain, so with all the fixed classes of the lower
    levels, each non-empty subset of them is a distinct ideal: ideals >= 1 + sum of (2^c - 1) over the
    levels (c: fixed classes on the level). Exponents are clipped past ``cap`` (only "over the cap"
    matters). None when the classes form a cycle (contraction merges it; nothing is estimated).
    """
    level = longest_path_levels(count, set(pairs))
    if level is None:
        return None
    per_level: dict[int, int] = {}
    for v in range(count):
        if fixed[v]:
            per_level[level[v]] = per_level.get(level[v], 0) + 1
    clip = cap.bit_length() + 1
    floor = 1 + sum((1 << min(c, clip)) - 1 for c in per_level.values())
    return floor, max(per_level.values(), default=0)


def check_ideals_raw(scan: _PaperScan, max_ideals: int) -> None:
    """Refuse (one line, :class:`TooMuchSolveWorkError`) a graph whose ideals are certainly past ``max_ideals``."""
    if scan.backward:  # backward edges are reordered by the contraction: the raw order is not the DP's
        return
    found = ideal_floor(scan.count, scan.pairs, scan.fixed, max_ideals)
    if found is None or found[0] <= max_ideals:
        return
    from .exact.ideals import ADVICE, format_count  # noqa: PLC0415 - only for the message

    floor, widest = found
    # the widest level alone past the cap: say 2^width (the floor's exponents were clipped)
    shown = f"2^{widest:,}" if 1 << min(widest, 64) > max_ideals else format_count(floor)
    raise TooMuchSolveWorkError(
        f"the graph has too many ideals for the exact DP: {widest:,} of its {scan.count:,} groups lie on one "
        f"longest-path level (an antichain), so at least {shown} ideals, over the cap of "
        f"{max_ideals:,}; {ADVICE}"
    )


def solve_shape(problem: Any) -> tuple[int, int, int]:
    """:func:`raw_solve_shape` of a :class:`~placement.model.Problem` (its color groups and devices)."""
    graph = problem.graph
    group_of = {node: index for index, members in enumerate(graph.color_groups) for node in members}
    backward = {node.id for node in graph.nodes if node.is_backward}
    between = {
        (group_of[e.source], group_of[e.target])
        for e in graph.edges
        if group_of[e.source] != group_of[e.target] and e.source not in backward and e.target not in backward
    }
    return len(graph.color_groups), len(between), problem.devices.accelerator_count + problem.devices.cpus


def precheck_solve_raw(
    data: Any,
    method: str,
    options: dict[str, Any] | None = None,
    accelerators: int | None = None,
    cpus: int | None = None,
    max_dp_work: float | None = None,
    max_ip_size: float | None = None,
) -> None:
    """:func:`check_solve_work` on the raw parsed JSON of a paper-format graph, before it is validated; for
    ``dp`` and ``memory-aware`` also :func:`check_ideals_raw` (their ``max_ideals`` option, else the default).

    Malformed input (and Piper files) return quietly: the full reader names the rule broken.
    """
    if not isinstance(data, dict):
        return
    scan = _paper_scan(data)
    devices = _raw_devices(data, accelerators, cpus)
    if scan is None or devices is None:
        return
    check_solve_work(method, scan.count, len(set(scan.pairs)), devices, options, max_dp_work, max_ip_size)
    if method in IDEAL_METHODS:
        from .exact.ideals import DEFAULT_MAX_IDEALS  # noqa: PLC0415

        max_ideals = (options or {}).get("max_ideals")
        check_ideals_raw(scan, DEFAULT_MAX_IDEALS if max_ideals is None else int(max_ideals))


def refusals_raw(
    data: Any,
    methods: list[str],
    options: dict[str, Any] | None = None,
    accelerators: int | None = None,
    cpus: int | None = None,
) -> dict[str, str]:
    """Method -> the one-line refusal of each of ``methods`` estimated past the caps (``compare``); one scan.

    The raw parsed JSON of a paper-format graph, as :func:`precheck_solve_raw` reads it; malformed input
    (and Piper files) give no refusal (the full reader names the rule broken).
    """
    if not isinstance(data, dict):
        return {}
    scan = _paper_scan(data)
    devices = _raw_devices(data, accelerators, cpus)
    if scan is None or devices is None:
        return {}
    edges = len(set(scan.pairs))
    out = {}
    for method in methods:
        try:
            check_solve_work(method, scan.count, edges, devices, options)
            if method in IDEAL_METHODS:
                from .exact.ideals import DEFAULT_MAX_IDEALS  # noqa: PLC0415

                check_ideals_raw(scan, DEFAULT_MAX_IDEALS)
        except TooMuchSolveWorkError as exc:
            out[method] = str(exc)
    return out


def precheck_solve(
    problem: Any,
    method: str,
    options: dict[str, Any] | None = None,
    max_dp_work: float | None = None,
    max_ip_size: float | None = None,
) -> None:
    """:func:`check_solve_work` on a :class:`~placement.model.Problem` (the app's dispatch); O(nodes + edges)."""
    check_solve_work(method, *solve_shape(problem), options, max_dp_work, max_ip_size)
