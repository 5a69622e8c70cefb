"""Roofline cost model: hand-computed times, device specs, cost models and the editable cost table."""

import math

import pytest

from placement import CPU_KIND, Edge, Graph, InvalidDevicesError, InvalidGraphError, Node
from placement.modelling.roofline import (
    PRESETS,
    CostModel,
    DeviceSpec,
    OpCost,
    apply_cost_rows,
    cost_rows,
    preset,
    roofline_ms,
    spec_from_row,
    specs_table,
    transfer_ms,
)

# Round numbers so that every expected time below is computed by hand.
FAST = DeviceSpec(
    "fast", fp16_flops=100e12, fp32_flops=50e12, memory_bandwidth=1e12, memory=8e9, link_bandwidth=10e9, efficiency=0.5
)
SLOW = DeviceSpec(
    "slow", fp16_flops=10e12, fp32_flops=5e12, memory_bandwidth=0.5e12, link_bandwidth=5e9, efficiency=1.0
)
CORE = DeviceSpec(CPU_KIND, fp16_flops=100e9, fp32_flops=100e9, memory_bandwidth=10e9, efficiency=1.0)


def test_compute_bound_time():
    # 1e12 FLOPs fp16 on 100 TFLOP/s = 10 ms; bytes 1e9 / 1e12 = 1 ms; / efficiency 0.5 -> 20 ms.
    assert roofline_ms(1e12, 1e9, FAST, "fp16") == pytest.approx(20.0)


def test_memory_bound_time():
    # 1e9 FLOPs fp32 / 50e12 = 0.02 ms; 4e9 bytes / 1e12 = 4 ms; / 0.5 -> 8 ms.
    assert roofline_ms(1e9, 4e9, FAST, "fp32") == pytest.approx(8.0)


def test_peak_depends_on_dtype():
    assert FAST.peak_flops("fp16") == 100e12
    assert FAST.peak_flops("bf16") == 100e12
    assert FAST.peak_flops("int8") == 100e12
    assert FAST.peak_flops("fp32") == 50e12
    assert roofline_ms(1e12, 0, FAST, "fp32") == pytest.approx(2 * roofline_ms(1e12, 0, FAST, "fp16"))


def test_transfer_time():
    assert transfer_ms(20e9, FAST) == pytest.approx(2000.0)  # 20 GB over 10 GB/s = 2 s


@pytest.mark.parametrize(
    "changes",
    [
        {"fp16_flops": 0},
        {"memory_bandwidth": -1},
        {"efficiency": 1.5},
        {"efficiency": 0},
        {"memory": -1},
        {"link_bandwidth": math.inf},
        {"name": ""},
        {"fp32_flops": "fast"},
    ],
)
def test_invalid_specs_are_refused(changes):
    with pytest.raises(InvalidDevicesError):
        FAST.with_changes(**changes)


def test_presets_and_lookup():
    assert set(PRESETS) >= {"A100", "H100", "V100", "T4", CPU_KIND}
    assert preset("a100") is PRESETS["A100"]
    # H100 is faster than A100, which is faster than V100 and T4, on both roofs.
    assert PRESETS["H100"].fp16_flops > PRESETS["A100"].fp16_flops > PRESETS["V100"].fp16_flops
    assert PRESETS["H100"].memory_bandwidth > PRESETS["A100"].memory_bandwidth > PRESETS["T4"].memory_bandwidth
    with pytest.raises(InvalidDevicesError, match="no device preset"):
        preset("TPUv9")


def test_specs_table_round_trip():
    for spec in PRESETS.values():
        back = spec_from_row(specs_table([spec])[0])
        for attr in ("fp16_flops", "fp32_flops", "memory_bandwidth", "memory", "link_bandwidth", "efficiency"):
            assert getattr(back, attr) == pytest.approx(getattr(spec, attr))


def test_cost_model_node_latencies():
    model = CostModel(FAST, CORE, (SLOW,))
    cost = OpCost(flops=2e9, bytes_read=3e6, bytes_written=1e6, param_bytes=5e5, dtype="fp16")
    node = model.node(7, "op", cost)
    # fast: max(2e9/100e12, 4e6/1e12) = 2e-5 s / 0.5 = 0.04 ms
    assert node.accelerator_latency == pytest.approx(0.04)
    # slow: max(2e9/10e12, 4e6/0.5e12) = 2e-4 s -> 0.2 ms
    assert dict(node.kind_latency) == {"slow": pytest.approx(0.2)}
    # core: max(2e9/100e9, 4e6/10e9) = 0.02 s -> 20 ms
    assert node.cpu_latency == pytest.approx(20.0)
    assert node.size == 5e5
    assert node.extra["flops"] == 2e9


def test_cost_model_edges_and_devices():
    model = CostModel(FAST, CORE, (SLOW,))
    edge = model.edge(0, 1, 1e6)
    assert edge.size == 1e6
    assert edge.cost == pytest.approx(0.1)  # 1 MB over 10 GB/s = 0.1 ms
    devices = model.devices(3, 2, {"slow": 2})
    assert [k.name for k in devices.accelerators] == ["fast", "slow"]
    assert devices.kind("fast").count == 3 and devices.kind("fast").memory == 8e9
    assert devices.kind("slow").bandwidth == pytest.approx(0.5)  # 5 GB/s link vs 10 GB/s
    assert devices.cpus == 2
    with pytest.raises(InvalidDevicesError):
        model.devices(1, 0, {"nope": 1})


def test_cost_model_with_presets_covers_every_accelerator():
    model = CostModel.with_presets("H100")
    assert model.reference.name == "H100"
    assert {k.name for k in model.others} == {"A100", "V100", "T4"}


def test_cost_model_refuses_cpu_as_accelerator():
    with pytest.raises(InvalidDevicesError):
        CostModel(CORE, CORE)


def _graph():
    model = CostModel(FAST, CORE, (SLOW,))
    nodes = (
        model.node(0, "a", OpCost(2e9, 3e6, 1e6, 5e5, 1e6, "fp16"), extra={"op": "MatMul"}),
        model.node(1, "b", OpCost(0, 1e6, 1e6, 0, 0, "fp16"), extra={"op": "Relu"}),
    )
    return Graph(nodes, (model.edge(0, 1, 1e6),))


def test_cost_rows_show_the_estimates():
    rows = cost_rows(_graph())
    assert rows[0]["GFLOP"] == pytest.approx(2.0)
    assert rows[0]["MB moved"] == pytest.approx(4.0)
    assert rows[0]["op"] == "MatMul"
    assert rows[1]["accelerator ms"] == pytest.approx(2e6 / 1e12 / 0.5 * 1000)


def test_apply_cost_rows_scales_other_kinds():
    graph = _graph()
    rows = cost_rows(graph)
    rows[0]["accelerator ms"] = 0.08  # twice the estimate
    rows[0]["CPU ms"] = 1.0
    rows[1]["weights (bytes)"] = 123
    edited = apply_cost_rows(graph, rows)
    a, b = edited.node_by_id[0], edited.node_by_id[1]
    assert a.accelerator_latency == 0.08 and a.cpu_latency == 1.0
    assert dict(a.kind_latency)["slow"] == pytest.approx(0.4)  # 0.2 scaled by 2
    assert b.size == 123
    assert edited.edges == graph.edges


@pytest.mark.parametrize(
    "row, message",
    [
        ({"id": 9, "CPU ms": 1}, "no node with id 9"),
        ({"id": 0, "CPU ms": -1}, "CPU ms"),
        ({"id": 0, "accelerator ms": "x"}, "must be a number"),
        ({"name": "a"}, "no valid 'id'"),
    ],
)
def test_apply_cost_rows_errors(row, message):
    with pytest.raises(InvalidGraphError, match=message):
        apply_cost_rows(_graph(), [row])


def test_zero_latency_node_edit_sets_every_kind():
    graph = Graph((Node(0, 0.0, 0.0, kind_latency=(("slow", 0.0),)),), (Edge(0, 0, 0.0),)[:0])
    edited = apply_cost_rows(graph, [{"id": 0, "accelerator ms": 2.0}])
    assert dict(edited.nodes[0].kind_latency) == {"slow": 2.0}
