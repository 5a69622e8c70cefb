"""Round trips of exported plans through the frameworks' own parsers (optional extra).

Needs requirements-export.txt (CPU torch 2.13.0, megatron-core, deepspeed); each test is
skipped where its package is missing. `scripts/setup.sh --export` installs the extra (scripts/test.sh asks
for it), so CI runs them.
"""

from __future__ import annotations

import warnings

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
)
from placement.pipeline.export import export_plan, uniform_parts

A = [DeviceSlot("accelerator", i) for i in range(8)]


def transformer_problem(layers: int, accelerators: int) -> Problem:
    return build_transformer(
        TransformerSpec(layers=layers, hidden=64, heads=4, seq_length=16, vocab=100), {"H100": accelerators}, cpus=0
    )


def plan(problem: Problem, groups: list[list[str]]) -> Placement:
    by_name = {n.name: n.id for n in problem.graph.nodes}
    return Placement(tuple(Stage(A[k], tuple(by_name[name] for name in names)) for k, names in enumerate(groups)))


GROUPS = [["embedding", "layer0", "layer1", "layer2"], ["layer3", "layer4", "layer5"], ["layer6", "layer7", "head"]]
INTERLEAVED = [
    ["embedding", "layer0"],
    ["layer1", "layer2"],
    ["layer3", "layer4", "layer5"],
    ["layer6"],
    ["layer7"],
    ["head"],
]


@pytest.mark.slow
def test_torch_pipeline_splits_a_transformer_at_the_exported_fqns():
    torch = pytest.importorskip("torch")
    from torch import nn
    from torch.distributed.pipelining import SplitPoint, pipeline

    class Block(nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.norm = nn.LayerNorm(width)
            self.attention = nn.MultiheadAttention(width, 2, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

        def forward(self, x):
            h = self.norm(x)
            x = x + self.attention(h, h, h, need_weights=False)[0]
            return x + self.mlp(x)

    class Tiny(nn.Module):
        """Module names as the builder's nodes: embedding, layer0..7, head."""

        def __init__(self, layers: int = 8, width: int = 16) -> None:
            super().__init__()
            self.embedding = nn.Embedding(100, width)
            for i in range(layers):
                self.add_module(f"layer{i}", Block(width))
            self.head = nn.Linear(width, 100)
            self.layers = layers

        def forward(self, ids):
            x = self.embedding(ids)
            for i in range(self.layers):
                x = getattr(self, f"layer{i}")(x)
            return self.head(x)

    problem = transformer_problem(8, 3)
    config = export_plan(problem, plan(problem, GROUPS), "torch").as_dict()
    assert config["split_points"] == ["layer3", "layer6"]
    model = Tiny()
    ids = torch.randint(0, 100, (2, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = pipeline(model, mb_args=(ids,), split_spec={fqn: SplitPoint.BEGINNING for fqn in config["split_points"]})
    assert pipe.num_stages == 3
    for k, modules in enumerate(config["module_fqns_per_model_part"]):
        owners = {name.split(".")[0] for name, _ in pipe.get_stage_module(k).named_parameters()}
        assert owners == set(modules), (k, owners, modules)
    # The split model computes what the whole model computes.
    x = ids
    for k in range(pipe.num_stages):
        x = pipe.get_stage_module(k)(x)
    assert torch.allclose(x, model(ids), atol=1e-5)


def test_torch_pipeline_splits_a_sequential_named_by_module_fields():
    torch = pytest.importorskip("torch")
    from torch import nn
    from torch.distributed.pipelining import SplitPoint, pipeline

    # Operators of a 6-layer nn.Sequential: two nodes per layer, module fields "0" .. "5".
    nodes = tuple(Node(i, 1.0, 1.0, name=f"op{i}", extra={"module": str(i // 2)}) for i in range(12))
    edges = tuple(Edge(i, i + 1, 1.0) for i in range(11))
    problem = Problem(Graph(nodes, edges), Devices.paper(3, 0))
    placement = Placement((Stage(A[0], (0, 1)), Stage(A[1], tuple(range(2, 8))), Stage(A[2], (8, 9, 10, 11))))
    config = export_plan(problem, placement, "torch").as_dict()
    assert config["split_points"] == ["1", "4"]
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(6)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = pipeline(
            model,
            mb_args=(torch.randn(2, 4),),
            split_spec={fqn: SplitPoint.BEGINNING for fqn in config["split_points"]},
        )
    for k, modules in enumerate(config["module_fqns_per_model_part"]):
        owners = {name.split(".")[0] for name, _ in pipe.get_stage_module(k).named_parameters()}
        assert owners == set(modules)
    # The paste-ready snippet runs as it is.
    scope = {"model": nn.Sequential(*[nn.Linear(4, 4) for _ in range(6)]), "example_microbatch": torch.randn(2, 4)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(export_plan(problem, placement, "torch").text, scope)  # noqa: S102 - our own generated snippet
    assert scope["pipe"].num_stages == 3
    ds = export_plan(problem, placement, "deepspeed").as_dict()
    assert ds["parts"] == [0, 1, 4, 6] and ds["layers"] == ["0", "1", "2", "3", "4", "5"]


@pytest.mark.parametrize("groups,virtual", [(GROUPS, 1), (INTERLEAVED, 2), (INTERLEAVED, 3)])
def test_megatron_core_parses_and_validates_the_layout(groups, virtual):
    pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        layout_module = pytest.importorskip("megatron.core.transformer.pipeline_parallel_layer_layout")
        from megatron.core.transformer.enums import LayerType
    problem = transformer_problem(8, len(groups))
    config = export_plan(problem, plan(problem, groups), "megatron", virtual=virtual).as_dict()
    pp = config["pipeline_model_parallel_size"]
    layout = layout_module.PipelineParallelLayerLayout(config["pipeline_model_parallel_layout"], pp)
    layout.validate_layer_layout(num_layers=config["num_layers"], mtp_num_layers=None)  # raises if invalid
    assert layout.virtual_pipeline_model_parallel_size == virtual
    # Stage i of the plan is Megatron's (pp rank i % pp, virtual stage i // pp), with its layers in order.
    letters = {LayerType.embedding: "embedding", LayerType.loss: "head"}
    for i, names in enumerate(groups):
        parsed = layout.layout[i % pp][i // pp]
        assert [letters.get(t, "layer") for t in parsed] == [
            n if n in ("embedding", "head") else "layer" for n in names
        ]
    decoder_ids = []
    for i in range(len(groups)):
        decoder_ids += [n for n in groups[i] if n.startswith("layer")]
    assert decoder_ids == [f"layer{k}" for k in range(8)]


def test_deepspeed_uniform_partition_agrees():
    utils = pytest.importorskip("deepspeed.runtime.utils")
    for items in range(1, 30):
        for parts in range(1, 9):
            assert list(uniform_parts(items, parts)) == list(utils.partition_uniform(items, parts)), (items, parts)
