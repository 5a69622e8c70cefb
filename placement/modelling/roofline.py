"""Device-kind specifications and the roofline cost model that turns FLOPs and bytes into times.

A node that performs ``F`` floating-point operations and moves ``B`` bytes to/from device
memory takes, on a device of spec ``d`` (the *roofline* model)::

    time = max(F / d.peak_flops(dtype), B / d.memory_bandwidth) / d.efficiency

and an edge carrying ``b`` bytes costs ``b / link_bandwidth`` of the reference kind.
``efficiency`` (0 < e <= 1) is the fraction of the roofline a real kernel reaches.

**Time unit: milliseconds** (the unit of the paper's sample graphs), memory in bytes.

The presets are vendor datasheet peaks (dense, no sparsity) rounded to 3 digits:

=======  ==============  ============  ===========  ========  ==============
kind     fp16/bf16 peak  fp32 peak     memory BW    memory    link (one way)
=======  ==============  ============  ===========  ========  ==============
A100     312 TFLOP/s     156 (TF32)    2.04 TB/s    80 GiB    300 GB/s NVLink3
H100     989 TFLOP/s     495 (TF32)    3.35 TB/s    80 GiB    450 GB/s NVLink4
V100     125 TFLOP/s     15.7          0.90 TB/s    32 GiB    150 GB/s NVLink2
T4       65 TFLOP/s      8.1           0.32 TB/s    16 GiB    15.75 GB/s PCIe3 x16
cpu      0.192 TFLOP/s   0.192         12 GB/s      (host)    (none: CPU cores pay no transfers)
=======  ==============  ============  ===========  ========  ==============

The ``cpu`` preset is **one core** (AVX-512, 2 FMA units at 3 GHz: 2 x 16 lanes x 2 x 3e9)
with a per-core share of memory bandwidth, since the device model counts CPU cores. Every
value is editable: specs are frozen dataclasses, use :func:`dataclasses.replace` or
:meth:`DeviceSpec.with_changes`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InvalidDevicesError, InvalidGraphError
from ..model import CPU_KIND, AcceleratorKind, Devices, Edge, Graph, Node

#: Milliseconds per second (all times of this module are in milliseconds).
MS_PER_SECOND = 1000.0

#: Bytes per element of the data types the builders accept.
DTYPE_BYTES: dict[str, int] = {
    "fp32": 4,
    "fp16": 2,
    "bf16": 2,
    "fp8": 1,
    "int8": 1,
    "int32": 4,
    "int64": 8,
    "fp64": 8,
    "bool": 1,
}

#: Data types that run at the spec's ``fp16_flops`` peak (the others use ``fp32_flops``).
_HALF_TYPES = ("fp16", "bf16", "fp8", "int8")


@dataclass(frozen=True)
class DeviceSpec:
    """The roofline parameters of one device kind.

    Parameters
    ----------
    name : str
        Kind name (``"cpu"`` for a CPU core; any other name is an accelerator kind).
    fp16_flops : float
        Peak FLOP/s for 16-bit (and 8-bit) math.
    fp32_flops : float
        Peak FLOP/s for 32-bit (and 64-bit) math.
    memory_bandwidth : float
        Bytes/s between the device's memory and its compute units.
    memory : float
        Bytes of device memory (``inf`` for unlimited).
    link_bandwidth : float
        Bytes/s of the link between two devices (used for edge costs).
    efficiency : float
        Fraction of the roofline reached, in (0, 1].
    price_per_hour : float
        Optional price of one device per hour.
    """

    name: str
    fp16_flops: float
    fp32_flops: float
    memory_bandwidth: float
    memory: float = math.inf
    link_bandwidth: float = 16e9
    efficiency: float = 0.5
    price_per_hour: float = 0.0

    def __post_init__(self) -> None:
        where = f"device spec {self.name!r}"
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidDevicesError(f"{where}: name must be a non-empty string")
        for attr in ("fp16_flops", "fp32_flops", "memory_bandwidth", "link_bandwidth", "efficiency"):
            value = getattr(self, attr)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise InvalidDevicesError(f"{where}: {attr} must be a positive finite number (got {value!r})")
            object.__setattr__(self, attr, float(value))
        if self.efficiency > 1:
            raise InvalidDevicesError(f"{where}: efficiency must be in (0, 1] (got {self.efficiency!r})")
        for attr in ("memory", "price_per_hour"):
            value = getattr(self, attr)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
                raise InvalidDevicesError(f"{where}: {attr} must be a non-negative number (got {value!r})")
            object.__setattr__(self, attr, float(value))

    @property
    def is_cpu(self) -> bool:
        return self.name == CPU_KIND

    def peak_flops(self, dtype: str = "fp32") -> float:
        """Peak FLOP/s for ``dtype`` (16/8-bit types use ``fp16_flops``, the rest ``fp32_flops``)."""
        return self.fp16_flops if dtype in _HALF_TYPES else self.fp32_flops

    def with_changes(self, **changes: Any) -> DeviceSpec:
        """A copy with fields replaced (validated again)."""
        return replace(self, **changes)


GiB = float(2**30)

#: Preset device kinds (see the module docstring for sources); edit copies with ``with_changes``.
PRESETS: dict[str, DeviceSpec] = {
    "A100": DeviceSpec("A100", 312e12, 156e12, 2.039e12, 80 * GiB, 300e9, 0.5),
    "H100": DeviceSpec("H100", 989e12, 495e12, 3.35e12, 80 * GiB, 450e9, 0.5),
    "V100": DeviceSpec("V100", 125e12, 15.7e12, 0.9e12, 32 * GiB, 150e9, 0.5),
    "T4": DeviceSpec("T4", 65e12, 8.1e12, 0.32e12, 16 * GiB, 15.75e9, 0.5),
    CPU_KIND: DeviceSpec(CPU_KIND, 192e9, 192e9, 12e9, math.inf, 16e9, 0.5),
}


def preset(name: str) -> DeviceSpec:
    """The preset spec called ``name`` (case-insensitive)."""
    for key, spec in PRESETS.items():
        if key.lower() == str(name).lower():
            return spec
    raise InvalidDevicesError(f"no device preset named {name!r}; choose one of: {', '.join(PRESETS)}")


@dataclass(frozen=True)
class OpCost:
    """The work of one operator.

    Parameters
    ----------
    flops : float
        Floating-point operations (a multiply-add counts 2).
    bytes_read, bytes_written : float
        Bytes read from / written to device memory (inputs incl. weights / outputs).
    param_bytes : float
        Bytes of weights the operator keeps in device memory (the node's ``size``).
    output_bytes : float
        Bytes of the output sent to consumers on other devices (edge ``size``).
    dtype : str
        Data type of the math (selects the peak).
    """

    flops: float = 0.0
    bytes_read: float = 0.0
    bytes_written: float = 0.0
    param_bytes: float = 0.0
    output_bytes: float = 0.0
    dtype: str = "fp32"

    @property
    def bytes_moved(self) -> float:
        return self.bytes_read + self.bytes_written

    def __add__(self, other: OpCost) -> OpCost:
        return OpCost(
            self.flops + other.flops,
            self.bytes_read + other.bytes_read,
            self.bytes_written + other.bytes_written,
            self.param_bytes + other.param_bytes,
            self.output_bytes + other.output_bytes,
            self.dtype,
        )

    def scaled(self, factor: float) -> OpCost:
        """FLOPs and bytes moved times ``factor`` (parameters and output unchanged)."""
        return replace(
            self,
            flops=self.flops * factor,
            bytes_read=self.bytes_read * factor,
            bytes_written=self.bytes_written * factor,
        )


def roofline_ms(flops: float, bytes_moved: float, spec: DeviceSpec, dtype: str = "fp32") -> float:
    """Roofline time in milliseconds: ``max(flops / peak, bytes / bandwidth) / efficiency``."""
    seconds = max(flops / spec.peak_flops(dtype), bytes_moved / spec.memory_bandwidth) / spec.efficiency
    return seconds * MS_PER_SECOND


def transfer_ms(nbytes: float, spec: DeviceSpec) -> float:
    """Time in milliseconds to send ``nbytes`` over ``spec``'s link."""
    return nbytes / spec.link_bandwidth * MS_PER_SECOND


@dataclass(frozen=True)
class CostModel:
    """Turns :class:`OpCost` values into nodes and edges for a reference kind, a CPU core and other kinds.

    Parameters
    ----------
    reference : DeviceSpec
        The accelerator kind whose latency becomes ``Node.accelerator_latency`` and whose
        link bandwidth prices edges.
    cpu : DeviceSpec
        One CPU core (``Node.cpu_latency``).
    others : tuple of DeviceSpec
        Further accelerator kinds, written as ``Node.kind_latency`` overrides.
    """

    reference: DeviceSpec = field(default_factory=lambda: PRESETS["A100"])
    cpu: DeviceSpec = field(default_factory=lambda: PRESETS[CPU_KIND])
    others: tuple[DeviceSpec, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "others", tuple(k for k in self.others if k.name != self.reference.name))
        if self.reference.is_cpu or any(k.is_cpu for k in self.others):
            raise InvalidDevicesError("the reference and other kinds must be accelerators, not 'cpu'")

    @classmethod
    def with_presets(cls, reference: str = "A100") -> CostModel:
        """Reference kind ``reference``, the CPU preset, and every other accelerator preset."""
        ref = preset(reference)
        others = tuple(spec for name, spec in PRESETS.items() if name not in (ref.name, CPU_KIND))
        return cls(ref, PRESETS[CPU_KIND], others)

    def latencies(self, cost: OpCost) -> dict[str, float]:
        """Milliseconds per kind name (reference, others and ``"cpu"``)."""
        out = {
            spec.name: roofline_ms(cost.flops, cost.bytes_moved, spec, cost.dtype)
            for spec in (self.reference, *self.others)
        }
        out[CPU_KIND] = roofline_ms(cost.flops, cost.bytes_moved, self.cpu, cost.dtype)
        return out

    def node(self, node_id: int, name: str, cost: OpCost, **fields: Any) -> Node:
        """A node with roofline latencies; ``cost`` is kept in ``node.extra`` (flops, bytes...)."""
        times = self.latencies(cost)
        extra = {
            "flops": cost.flops,
            "bytesRead": cost.bytes_read,
            "bytesWritten": cost.bytes_written,
            "dtype": cost.dtype,
        }
        extra.update(fields.pop("extra", {}))
        return Node(
            id=node_id,
            name=name,
            cpu_latency=times[CPU_KIND],
            accelerator_latency=times[self.reference.name],
            size=cost.param_bytes,
            kind_latency=tuple((k.name, times[k.name]) for k in self.others),
            extra=extra,
            **fields,
        )

    def edge(self, source: int, target: int, nbytes: float) -> Edge:
        """An edge carrying ``nbytes`` priced at the reference link bandwidth."""
        return Edge(source, target, transfer_ms(nbytes, self.reference), float(nbytes))

    def devices(
        self,
        count: int,
        cpus: int = 0,
        other_counts: Mapping[str, int] | None = None,
        memory: float | None = None,
        overlap: bool = False,
    ) -> Devices:
        """The inventory: ``count`` reference devices (``memory`` overrides the spec) plus ``other_counts``.

        Other kinds get ``bandwidth = their link / reference link`` so that edge costs scale
        with their links; their node latencies come from ``kind_latency``.
        """
        kinds = [
            AcceleratorKind(
                self.reference.name,
                int(count),
                self.reference.memory if memory is None else memory,
                1.0,
                1.0,
                self.reference.price_per_hour,
            )
        ]
        for name, n in (other_counts or {}).items():
            spec = next((k for k in self.others if k.name == name), None)
            if spec is None:
                raise InvalidDevicesError(f"no accelerator kind named {name!r} in the cost model")
            if n:
                kinds.append(
                    AcceleratorKind(
                        spec.name,
                        int(n),
                        spec.memory,
                        1.0,
                        spec.link_bandwidth / self.reference.link_bandwidth,
                        spec.price_per_hour,
                    )
                )
        return Devices(accelerators=tuple(kinds), cpus=int(cpus), overlap=overlap)


def specs_table(specs: Iterable[DeviceSpec]) -> list[dict[str, Any]]:
    """Rows (one per spec) in display units: TFLOP/s, GB/s, GiB."""
    return [
        {
            "name": s.name,
            "fp16 TFLOP/s": s.fp16_flops / 1e12,
            "fp32 TFLOP/s": s.fp32_flops / 1e12,
            "memory GB/s": s.memory_bandwidth / 1e9,
            "memory GiB": s.memory / GiB,
            "link GB/s": s.link_bandwidth / 1e9,
            "efficiency": s.efficiency,
        }
        for s in specs
    ]


def spec_from_row(row: Mapping[str, Any]) -> DeviceSpec:
    """Inverse of one :func:`specs_table` row."""
    try:
        return DeviceSpec(
            str(row["name"]),
            float(row["fp16 TFLOP/s"]) * 1e12,
            float(row["fp32 TFLOP/s"]) * 1e12,
            float(row["memory GB/s"]) * 1e9,
            float(row["memory GiB"]) * GiB,
            float(row["link GB/s"]) * 1e9,
            float(row["efficiency"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidDevicesError(f"device spec row {dict(row)!r}: {exc}") from None


# ----------------------------------------------------------------------------- editable cost table
#: Columns of :func:`cost_rows` that :func:`apply_cost_rows` reads back.
EDITABLE_COLUMNS = ("accelerator ms", "CPU ms", "weights (bytes)")


def cost_rows(graph: Graph) -> list[dict[str, Any]]:
    """One row per node: estimated work (read-only columns) and the editable latencies and size.

    Columns: ``id``, ``name``, ``op``, ``GFLOP``, ``MB moved`` (read + written), then
    :data:`EDITABLE_COLUMNS`: ``accelerator ms`` (reference kind), ``CPU ms`` and
    ``weights (bytes)``.
    """
    rows = []
    for node in graph.nodes:
        moved = node.extra.get("bytesRead", 0.0) + node.extra.get("bytesWritten", 0.0)
        rows.append(
            {
                "id": node.id,
                "name": node.name,
                "op": str(node.extra.get("op", "")),
                "GFLOP": float(node.extra.get("flops", 0.0)) / 1e9,
                "MB moved": float(moved) / 1e6,
                "accelerator ms": node.accelerator_latency,
                "CPU ms": node.cpu_latency,
                "weights (bytes)": node.size,
            }
        )
    return rows


def apply_cost_rows(graph: Graph, rows: Iterable[Mapping[str, Any]]) -> Graph:
    """A copy of ``graph`` with the editable columns of ``rows`` (matched by ``id``) applied.

    Other accelerator kinds' latencies (``kind_latency``) are scaled by the same factor as
    the reference latency (set to the new value when the old one was 0). Unknown ids or
    bad numbers raise :class:`~placement.errors.InvalidGraphError` (one line).
    """
    by_id = {node.id: node for node in graph.nodes}
    changes: dict[int, Node] = {}
    for row in rows:
        try:
            node_id = int(row["id"])
        except (KeyError, TypeError, ValueError):
            raise InvalidGraphError(f"cost table: row {dict(row)!r} has no valid 'id'") from None
        if node_id not in by_id:
            raise InvalidGraphError(f"cost table: no node with id {node_id}")
        node = changes.get(node_id, by_id[node_id])
        values = {}
        for column in EDITABLE_COLUMNS:
            if column not in row:
                continue
            value = row[column]
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise InvalidGraphError(
                    f"cost table: node {node_id}: {column} must be a number (got {value!r})"
                ) from None
            if math.isnan(number) or math.isinf(number) or number < 0:
                raise InvalidGraphError(
                    f"cost table: node {node_id}: {column} must be a finite number >= 0 (got {value!r})"
                )
            values[column] = number
        acc = values.get("accelerator ms", node.accelerator_latency)
        if acc != node.accelerator_latency:
            old = node.accelerator_latency
            kinds = tuple((k, v * acc / old if old > 0 else acc) for k, v in node.kind_latency)
        else:
            kinds = node.kind_latency
        changes[node_id] = replace(
            node,
            accelerator_latency=acc,
            cpu_latency=values.get("CPU ms", node.cpu_latency),
            size=values.get("weights (bytes)", node.size),
            kind_latency=kinds,
        )
    return Graph(
        tuple(changes.get(n.id, n) for n in graph.nodes), graph.edges, name=graph.name, extra=dict(graph.extra)
    )
