"""Graph pricing from the performance model's kernel physics, on the kinds of the hardware catalogue.

A node built by this package (transformer and CNN builders, ONNX imports) keeps its operators' kernels in
``node.extra["work"]`` (a list of :class:`placement.perf.kernels.Work` entries: GEMM shapes, fused attention,
streaming bytes) and the product type in ``node.extra["dtype"]``. :func:`price_graph` turns them into times
on any catalogue kind with the same formulas as :func:`placement.perf.predict`:

* GEMMs (matrix products, and convolutions as implicit GEMMs) at an efficiency set by their shape and type,
  never faster than their operands stream through memory; the backward is the two gradient products;
* fused attention at its own fractions of the matmul peak;
* everything else as bytes at the achievable copy bandwidth (backward: twice the bytes);
* the CPU latency on the catalogue's CPU core, with the same formulas;
* an edge's cost is its bytes over the reference kind's scale-up link (NVLink, else PCIe) at NCCL's
  achieved fraction.

A kind may also be a measured device (:func:`placement.perf.profiled.measured_kind`, from a profile written by
``python -m placement calibrate``): the same kernels then run on its measured rates and launch cost, and the
cost source says which profile priced it.

Times in **milliseconds** (the graph files' unit). A backward node (``is_backward``) is priced with its
kernels' backward times. Graphs without kernels (the paper's profiled JSON graphs) keep their costs:
:func:`price_graph` returns them unchanged and :func:`cost_source` says they are profiled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..errors import InvalidDevicesError, InvalidGraphError, PlacementError
from ..model import AcceleratorKind, Devices, Edge, Graph, Node
from ..perf.collectives import Links
from ..perf.hardware import Accelerator, Cluster, Dtype, accelerator, cpu_core
from ..perf.kernels import Work
from ..perf.params import DEFAULT_PARAMS, PerfParams
from ..perf.profiled import profile_params, profile_source

#: A kind to price: a catalogue name or alias, or an accelerator (a measured device).
KindLike = str | Accelerator

#: Milliseconds per second.
MS_PER_SECOND = 1000.0

#: Bytes per element of the data types the builders and imports know.
DTYPE_BYTES: dict[str, int] = {
    "fp32": 4,
    "tf32": 4,
    "fp16": 2,
    "bf16": 2,
    "fp8": 1,
    "int8": 1,
    "int32": 4,
    "int64": 8,
    "fp64": 8,
    "bool": 1,
}

#: The product type a data type's matrix products run in.
_PRODUCT_TYPE = {"fp16": Dtype.FP16, "bf16": Dtype.BF16, "fp8": Dtype.FP8, "int8": Dtype.FP8, "tf32": Dtype.TF32}

#: Where the profiled graphs' numbers come from (graphs without kernels).
PROFILED_SOURCE = "profiled costs from the graph file (the paper's measurements for its graphs; not the perf model)"

#: Graphs with operator FLOPs but no kernels (written by an earlier roofline estimate, e.g. the Inception samples).
LEGACY_SOURCE = "flat roofline estimates stored in the file (not the perf model; rebuild the graph to re-price it)"

#: Graph ``extra`` key holding the one-line cost source.
COST_SOURCE_KEY = "costSource"


def product_dtype(dtype: str) -> Dtype:
    """The :class:`Dtype` a tensor type's products run in (fp32, fp64 and integers: fp32)."""
    return _PRODUCT_TYPE.get(str(dtype), Dtype.FP32)


def node_work(node: Node) -> tuple[Work, ...] | None:
    """The kernels recorded on ``node`` (None when it has none: a profiled node)."""
    raw = node.extra.get("work")
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise InvalidGraphError(f"node {node.id}: 'work' must be a list of kernels")
    try:
        return tuple(Work.from_dict(item) for item in raw)
    except PlacementError as exc:
        raise InvalidGraphError(f"node {node.id}: {exc}") from None


def has_work(graph: Graph) -> bool:
    """Whether any node of ``graph`` records kernels (built or imported, not profiled)."""
    return any("work" in node.extra for node in graph.nodes)


def kind_params(acc: Accelerator, params: PerfParams = DEFAULT_PARAMS) -> PerfParams:
    """The model's constants on ``acc``: a measured device's launch cost replaces the assumed one."""
    return profile_params(acc.measured, params) if acc.measured is not None else params


def _kind(kind: KindLike) -> Accelerator:
    return kind if isinstance(kind, Accelerator) else accelerator(str(kind))


def work_ms(works: Sequence[Work], acc: Accelerator, dtype: Dtype, backward: bool, params: PerfParams) -> float:
    """Milliseconds of ``works`` on ``acc`` (their backward times when ``backward``)."""
    total = 0.0
    for work in works:
        fwd, bwd = work.seconds(acc, dtype, params)
        total += bwd if backward else fwd
    return total * MS_PER_SECOND


def _kinds(kinds: Sequence[KindLike], reference: KindLike | None) -> tuple[Accelerator, list[Accelerator]]:
    if isinstance(kinds, str | Accelerator):
        kinds = [kinds]
    accs: list[Accelerator] = []
    for name in kinds:
        acc = _kind(name)
        if acc not in accs:
            accs.append(acc)
    if not accs:
        raise InvalidDevicesError("price_graph: give at least one accelerator kind")
    ref = _kind(reference) if reference is not None else accs[0]
    return ref, [a for a in accs if a.name != ref.name]


def link_bytes_per_s(acc: Accelerator, params: PerfParams = DEFAULT_PARAMS) -> float:
    """Achieved bandwidth between two GPUs of kind ``acc`` in one node: the scale-up link at NCCL's fraction."""
    return Links.of(Cluster(acc, 1), params).intra_bytes_per_s


def edge_ms(nbytes: float, acc: Accelerator, params: PerfParams = DEFAULT_PARAMS) -> float:
    """Milliseconds to send ``nbytes`` between two GPUs of kind ``acc`` in one node (bandwidth only: an edge's
    cost is proportional to its bytes, so the bandwidth it implies is the link's)."""
    return nbytes / link_bytes_per_s(acc, params) * MS_PER_SECOND


def _priced(node: Node, works: Sequence[Work], ref: Accelerator, others: list[Accelerator], params: PerfParams) -> Node:
    """``node`` with its latencies from ``works`` (their backward times for a backward node)."""
    dtype = product_dtype(str(node.extra.get("dtype", "fp32")))
    back = node.is_backward
    return replace(
        node,
        accelerator_latency=work_ms(works, ref, dtype, back, kind_params(ref, params)),
        cpu_latency=work_ms(works, cpu_core(), dtype, back, params),
        kind_latency=tuple((a.name, work_ms(works, a, dtype, back, kind_params(a, params))) for a in others),
    )


def price_graph(
    graph: Graph, kinds: Sequence[KindLike], reference: KindLike | None = None, params: PerfParams = DEFAULT_PARAMS
) -> Graph:
    """The graph priced on catalogue ``kinds`` (names or aliases: ``"H100"``, ``"a100-sxm"``) or measured devices.

    Parameters
    ----------
    graph : Graph
        A graph whose nodes record kernels (``extra["work"]``); others are returned unchanged.
    kinds : sequence of str or Accelerator
        Accelerator kinds to price: catalogue names, or accelerators such as a measured device
        (:func:`placement.perf.profiled.measured_kind`: priced from its profile's rates and launch cost).
    reference : str, Accelerator or None
        The kind written as ``accelerator_latency`` and whose link prices the edges (default: the first of
        ``kinds``); the others become ``kind_latency``.
    params : PerfParams
        The performance model's constants (a measured kind's launch cost is its profile's).

    Returns
    -------
    Graph
        Latencies in milliseconds, ``cpu_latency`` on the catalogue CPU core, edges from their ``size`` (bytes),
        and ``extra["costSource"]`` (:func:`cost_source`).

    Raises
    ------
    InvalidDevicesError
        For an unknown kind (one line listing the known ones).
    """
    if not has_work(graph):
        return graph
    ref, others = _kinds(kinds, reference)
    nodes = []
    for node in graph.nodes:
        works = node_work(node)
        if works is None:
            nodes.append(node)
            continue
        nodes.append(_priced(node, works, ref, others, params))
    edges = [e if e.size is None else replace(e, cost=edge_ms(e.size, ref, params)) for e in graph.edges]
    extra = dict(graph.extra)
    extra["pricedKinds"] = [ref.name, *(a.name for a in others)]
    extra[COST_SOURCE_KEY] = _perf_source(ref, others, params)
    return Graph(tuple(nodes), tuple(edges), name=graph.name, extra=extra)


def price_backward(graph: Graph, params: PerfParams = DEFAULT_PARAMS) -> Graph:
    """``graph`` with its backward nodes that record kernels priced by their backward times, on the kinds the
    graph was priced on (``extra["pricedKinds"]``); forward nodes (and hand edits of them) stay as they are.
    A graph never priced on catalogue kinds is returned unchanged."""
    kinds = graph.extra.get("pricedKinds")
    if not isinstance(kinds, list) or not kinds or not has_work(graph):
        return graph
    ref, others = _kinds([str(k) for k in kinds], None)
    nodes = []
    for node in graph.nodes:
        works = node_work(node) if node.is_backward else None
        if works is None:
            nodes.append(node)
            continue
        nodes.append(_priced(node, works, ref, others, params))
    return Graph(tuple(nodes), graph.edges, name=graph.name, extra=dict(graph.extra))


#: The GPU kind of the calibration runs (Megatron-LM on A100, ``megatron_a100_2021.json``).
CALIBRATION_KIND = "A100"


def _catalogue_error(kinds: Sequence[Accelerator], params: PerfParams) -> str:
    """How far the perf model was from measured runs on the catalogue ``kinds``: the calibration band only on the
    calibration runs' GPU; elsewhere "extrapolated" (no measured runs on that kind)."""
    from ..perf.predict import calibration_band

    band = calibration_band(params)
    if band is None:
        return "error: extrapolated (no calibration table installed)"
    runs = f"Megatron A100 runs, band ±{band.max_abs_error:.1%} of their iteration times"
    others = [a.name for a in kinds if a.name != CALIBRATION_KIND]
    if not others:
        return f"error: calibrated on {runs}"
    named = " and ".join(others) if len(others) <= 3 else f"the other {len(others)} kinds"
    where = f"{named}: extrapolated, no measured runs on {'these kinds' if len(others) > 1 else 'it'}"
    return f"error: {where} (calibrated on {runs})"


def _perf_source(ref: Accelerator, others: Sequence[Accelerator], params: PerfParams) -> str:
    """The cost source: the catalogue kinds' error (calibrated or extrapolated), and for each measured kind the
    profile that priced it."""
    measured = [
        f"{a.name} {profile_source(a.measured)} (the published calibration band does not apply to it)"
        for a in (ref, *others)
        if a.measured is not None
    ]
    catalogue = [a for a in (ref, *others) if a.measured is None]
    error = _catalogue_error(catalogue, params) if catalogue else ""
    if ref.measured is None:
        return "; ".join([f"perf model (kernel physics) on {ref.name}", error, *measured])
    spec = f"; the catalogue kinds from their spec sheets ({error})" if catalogue else ""
    return f"perf model (kernel physics) on {measured[0]}{'; '.join(['', *measured[1:]])}{spec}"


def cost_source(graph: Graph) -> str:
    """One line saying which model produced the graph's numbers (stored in ``graph.extra["costSource"]``)."""
    stored = graph.extra.get(COST_SOURCE_KEY)
    if isinstance(stored, str) and stored and (has_work(graph) or stored.startswith(PROFILED_SOURCE)):
        return stored
    if has_work(graph):
        return "perf model (kernel physics), not yet priced on a catalogue kind"
    if graph.nodes and all("flops" in node.extra for node in graph.nodes if not node.is_backward):
        return LEGACY_SOURCE
    return PROFILED_SOURCE


def devices_for(
    kinds: Mapping[str, int] | Mapping[KindLike, int],
    cpus: int = 0,
    reference: KindLike | None = None,
    *,
    memory: Mapping[str, float] | None = None,
    overlap: bool = False,
) -> Devices:
    """An inventory of catalogue kinds: ``{"H100": 8, "A100": 4}`` plus ``cpus`` CPU cores.

    Parameters
    ----------
    kinds : mapping of str or Accelerator to int
        Devices per catalogue kind (names or aliases; zero counts are kept as kinds with no devices) or per
        measured device (:func:`placement.perf.profiled.measured_kind`: its name, measured memory, catalogue
        links and price).
    cpus : int
        CPU cores (priced at the catalogue CPU core's price).
    reference : str or None
        The kind whose link is bandwidth 1 (the graph's edge costs are priced on it; default: the first kind).
    memory : mapping of str to float or None
        Bytes per device overriding the catalogue's, by kind name.
    overlap : bool
        Devices' ``overlap`` (load = max(compute, communication)).

    Returns
    -------
    Devices
        Kinds named by their catalogue names, memory and price (USD per hour) from the catalogue, speed 1,
        link bandwidth relative to the reference kind's.
    """
    if not kinds:
        raise InvalidDevicesError("devices_for: give at least one accelerator kind")
    accs = [(_kind(name), count) for name, count in kinds.items()]
    ref = _kind(reference) if reference is not None else accs[0][0]
    overrides = {_kind(k).name: v for k, v in (memory or {}).items()}
    out = []
    for acc, count in accs:
        out.append(
            AcceleratorKind(
                acc.name,
                count,
                overrides.get(acc.name, acc.memory_bytes),
                1.0,
                acc.scale_up_bytes_per_s / ref.scale_up_bytes_per_s,
                acc.usd_per_hour,
            )
        )
    names = [k.name for k in out]
    if len(set(names)) != len(names):
        raise InvalidDevicesError(f"devices_for: a kind is named twice ({', '.join(names)})")
    return Devices(
        accelerators=tuple(out),
        cpus=cpus,
        overlap=overlap,
        cpu_price_per_hour=cpu_core().usd_per_hour if cpus else 0.0,
    )


def work_extra(works: Sequence[Work], dtype: str, output_bytes: float, **fields: Any) -> dict[str, Any]:
    """A node's ``extra`` for ``works`` (their products in ``dtype`` unless they name theirs): the kernels, the
    tensor type, FLOPs and bytes (read; written = the node's output)."""
    product = product_dtype(dtype).value
    works = [w if w.dtype is not None else replace(w, dtype=product) for w in works]
    flops = float(sum(w.flops for w in works))
    moved = float(sum(w.bytes_moved for w in works))
    extra: dict[str, Any] = {
        "work": [w.as_dict() for w in works],
        "dtype": dtype,
        "flops": flops,
        "bytesRead": max(0.0, moved - output_bytes),
        "bytesWritten": float(output_bytes),
    }
    extra.update(fields)
    return extra


def work_edge(source: int, target: int, nbytes: float) -> Edge:
    """An edge carrying ``nbytes`` (cost 0 until :func:`price_graph` prices it)."""
    return Edge(source, target, 0.0, float(nbytes))
