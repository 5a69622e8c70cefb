"""Export a plan to Megatron-LM, torch.distributed.pipelining and DeepSpeed; refusals.

The formats are checked against the real parsers where the optional extra
(requirements-export.txt: CPU torch, megatron-core, deepspeed) is installed: torch's
``pipeline()`` splits a model at the exported FQNs, Megatron-Core's
``PipelineParallelLayerLayout`` parses and validates the layout string, and DeepSpeed's
``partition_uniform`` agrees with the uniform detection.
"""

from __future__ import annotations

import json

import pytest

from placement import (
    Devices,
    DeviceSlot,
    Edge,
    Graph,
    Node,
    Placement,
    Problem,
    Stage,
    TransformerSpec,
    build_transformer,
    solve_dp,
)
from placement.cli import main
from placement.errors import ExportError
from placement.pipeline.export import export_plan, module_plan, uniform_parts

A = [DeviceSlot("accelerator", i) for i in range(8)]


def transformer(layers: int = 8, accelerators: int = 3, training: bool = False) -> Problem:
    return build_transformer(
        TransformerSpec(layers=layers, hidden=64, heads=4, seq_length=16, vocab=100),
        {"H100": accelerators},
        cpus=0,
        training=training,
    )


def stages_by_names(problem: Problem, groups: list[list[str]], devices=None) -> Placement:
    """A placement putting the named forward nodes (and their backward partners) on one stage each."""
    by_name = {n.name: n for n in problem.graph.nodes}
    devices = devices or A
    stages = []
    for k, names in enumerate(groups):
        ids = [by_name[name].id for name in names]
        classes = {by_name[name].color_class for name in names} - {None}
        ids += [n.id for n in problem.graph.nodes if n.is_backward and n.color_class in classes]
        stages.append(Stage(devices[k], tuple(ids)))
    return Placement(tuple(stages))


def layer_names(a: int, b: int) -> list[str]:
    return [f"layer{i}" for i in range(a, b)]


# ----------------------------------------------------------------------------- the three formats


def test_megatron_layout_torch_split_points_deepspeed_parts():
    problem = transformer()
    placement = stages_by_names(
        problem, [["embedding"] + layer_names(0, 3), layer_names(3, 6), layer_names(6, 8) + ["head"]]
    )
    meg = export_plan(problem, placement, "megatron", tensor_parallel=2, data_parallel=4).as_dict()
    assert meg["pipeline_model_parallel_layout"] == "Et*3|t*3|t*2L"
    assert (
        meg["pipeline_model_parallel_size"],
        meg["tensor_model_parallel_size"],
        meg["data_parallel_size"],
        meg["world_size"],
        meg["num_layers"],
    ) == (3, 2, 4, 24, 8)
    assert "--pipeline-model-parallel-layout 'Et*3|t*3|t*2L'" in meg["args"]
    torch_cfg = export_plan(problem, placement, "torch").as_dict()
    assert torch_cfg["split_points"] == ["layer3", "layer6"]
    assert torch_cfg["module_fqns_per_model_part"][0] == ["embedding", "layer0", "layer1", "layer2"]
    assert torch_cfg["torchtitan"]["parallelism"]["pipeline_parallel_split_points"] == ["layer3", "layer6"]
    ds = export_plan(problem, placement, "deepspeed").as_dict()
    assert ds["parts"] == [0, 4, 7, 10] and ds["partition_method"] == "uniform"  # DeepSpeed's uniform 10 / 3
    assert ds["layers"][:2] == ["embedding", "layer0"]
    other = stages_by_names(
        problem, [["embedding", "layer0", "layer1"], layer_names(2, 6), layer_names(6, 8) + ["head"]]
    )
    ds = export_plan(problem, other, "deepspeed")
    assert ds.as_dict()["parts"] == [0, 3, 7, 10] and ds.as_dict()["partition_method"] == "explicit"
    assert "PARTS = [0, 3, 7, 10]" in ds.text


def test_training_graph_exports_its_forward_modules():
    problem = transformer(training=True)
    result = solve_dp(problem)
    export = export_plan(problem, result.placement, "megatron")
    layout = export.as_dict()["pipeline_model_parallel_layout"]
    assert layout.startswith("E") and layout.endswith("L") and layout.count("|") == len(result.placement.stages) - 1


def test_interleaved_megatron_layout_and_torch_schedule():
    problem = transformer(accelerators=4)
    placement = stages_by_names(
        problem, [["embedding", "layer0", "layer1"], layer_names(2, 4), layer_names(4, 6), layer_names(6, 8) + ["head"]]
    )
    meg = export_plan(problem, placement, "megatron", virtual=2).as_dict()
    assert meg["pipeline_model_parallel_size"] == 2 and meg["virtual_pipeline_model_parallel_size"] == 2
    assert meg["pipeline_model_parallel_layout"] == "Et*2|t*2|t*2|t*2L"
    assert export_plan(problem, placement, "torch", virtual=2).as_dict()["schedule"] == "ScheduleInterleaved1F1B"
    assert (
        export_plan(problem, placement, "torch", schedule="zbh1").as_dict()["schedule"]
        == "ScheduleInterleavedZeroBubble"
    )
    with pytest.raises(ExportError, match="DeepSpeed's PipelineModule runs one stage per device"):
        export_plan(problem, placement, "deepspeed", virtual=2)
    with pytest.raises(ExportError, match="4 stages cannot run with 3 virtual stages per device"):
        export_plan(problem, placement, "megatron", virtual=3)


def test_uniform_split_is_named_for_deepspeed():
    problem = transformer(layers=4, accelerators=2)
    # 6 modules on 2 stages: DeepSpeed's uniform split is [0, 3, 6].
    placement = stages_by_names(problem, [["embedding", "layer0", "layer1"], ["layer2", "layer3", "head"]])
    ds = export_plan(problem, placement, "deepspeed")
    assert ds.as_dict()["partition_method"] == "uniform" and 'partition_method="uniform"' in ds.text
    assert (
        uniform_parts(6, 2) == (0, 3, 6)
        and uniform_parts(10, 3) == (0, 4, 7, 10)
        and uniform_parts(2, 3) == (0, 1, 2, 2)
    )


def test_module_field_names_the_modules():
    nodes = tuple(Node(i, 1.0, 1.0, name=f"op{i}", extra={"module": str(i // 2)} if i != 3 else {}) for i in range(6))
    edges = tuple(Edge(i, i + 1, 1.0) for i in range(5))
    problem = Problem(Graph(nodes, edges), Devices.paper(3, 0))
    # op3 has no module field: glue that belongs to no module.
    placement = Placement((Stage(A[0], (0, 1)), Stage(A[1], (2, 3)), Stage(A[2], (4, 5))))
    plan = module_plan(problem, placement)
    assert plan.modules == ("0", "1", "2") and plan.stages == (("0",), ("1",), ("2",))
    with pytest.raises(ExportError, match="module 0: unknown Megatron layer type"):
        export_plan(problem, placement, "megatron")


# ----------------------------------------------------------------------------- refusals


def test_refuses_cpu_stages_mixed_kinds_and_non_contiguous_plans():
    problem = transformer(layers=4, accelerators=2)
    groups = [["embedding", "layer0", "layer1"], ["layer2", "layer3", "head"]]
    cpu = stages_by_names(problem, groups, devices=[A[0], DeviceSlot("cpu", 0)])
    with pytest.raises(ExportError, match="stage 1 runs on cpu 0: runtime pipelines put every stage on an accelerator"):
        export_plan(problem, cpu, "torch")
    mixed = stages_by_names(problem, groups, devices=[A[0], DeviceSlot("h100", 0)])
    with pytest.raises(ExportError, match="accelerator kinds accelerator, h100"):
        export_plan(problem, mixed, "deepspeed")
    holes = stages_by_names(problem, [["embedding", "layer0", "layer2"], ["layer1", "layer3", "head"]])
    with pytest.raises(ExportError, match="not contiguous"):
        export_plan(problem, holes, "torch")
    backwards = stages_by_names(problem, [["layer2", "layer3", "head"], ["embedding", "layer0", "layer1"]])
    with pytest.raises(ExportError, match="not contiguous in model order"):
        export_plan(problem, backwards, "megatron")


def test_refuses_a_transformer_layer_split_across_stages():
    problem = build_transformer(
        TransformerSpec(layers=2, hidden=64, heads=4, seq_length=16, vocab=100),
        {"H100": 2},
        cpus=0,
        granularity="operator",
    )
    names = [n.name for n in problem.graph.nodes]
    cut = names.index("layer1/qkv")
    placement = stages_by_names(problem, [names[:cut], names[cut:]])
    with pytest.raises(ExportError, match="transformer layer 1 is split across stages 0 and 1"):
        export_plan(problem, placement, "megatron")
    # torch splits at any module: the operator's FQN.
    assert export_plan(problem, placement, "torch").as_dict()["split_points"] == ["layer1.qkv"]


# ----------------------------------------------------------------------------- CLI


def test_cli_export(tmp_path, capsys):
    problem = transformer(layers=4, accelerators=2)
    from placement.io import placement_to_dict, problem_to_json

    graph_file = tmp_path / "gpt.json"
    graph_file.write_text(problem_to_json(problem))
    placement = stages_by_names(problem, [["embedding", "layer0", "layer1"], ["layer2", "layer3", "head"]])
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(placement_to_dict(placement, problem.devices)))
    assert main(["export", str(plan_file), "--graph", str(graph_file), "--to", "megatron", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pipeline_model_parallel_layout"] == "Et*2|t*2L"
    assert main(["export", str(plan_file), "--graph", str(graph_file), "--to", "torch"]) == 0
    assert "'layer2': SplitPoint.BEGINNING" in capsys.readouterr().out
    cpu_plan = tmp_path / "cpu.json"
    cpu_plan.write_text(
        json.dumps(
            {
                "fpgas": [{"nodes": list(placement.stages[0].nodes)}],
                "cpus": [{"nodes": list(placement.stages[1].nodes)}],
            }
        )
    )
    assert main(["export", str(cpu_plan), "--graph", str(graph_file), "--to", "deepspeed"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cpu 0" in err and "accelerator" in err
    assert main(["export", str(plan_file), "--graph", str(graph_file), "--to", "nope"]) == 2
