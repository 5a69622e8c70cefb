"""Megatron-Core's --pipeline-model-parallel-layout (placement/perf/pp_layout.py) against Megatron-Core itself."""

from __future__ import annotations

import pytest

from placement.errors import InvalidLayoutError
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.launch import check_megatron, megatron_command
from placement.perf.layout import Layout, stage_layers
from placement.perf.megatron import parse_megatron_args
from placement.perf.pp_layout import parse_stages, pipeline_layout_string, read_pipeline_layout
from placement.perf.predict import predict
from placement.perf.transformer import MODELS

LLAMA8 = MODELS["llama3-8b"]  # 32 layers

LAYOUTS = [
    Layout(tensor=2, pipeline=4, data=8, micro_batch=1, global_batch=64),
    Layout(tensor=2, pipeline=4, data=8, micro_batch=1, global_batch=64, first_stage_layers=7, last_stage_layers=7),
    Layout(tensor=2, pipeline=4, data=8, micro_batch=1, global_batch=64, first_stage_layers=11, last_stage_layers=3),
    # a free split with interleaving and partial recomputation (2 of a chunk's up to 5 layers recomputed)
    Layout(
        tensor=2,
        pipeline=4,
        data=8,
        virtual_stages=2,
        micro_batch=1,
        global_batch=64,
        pipeline_layers=(6, 8, 10, 8),
        recompute="full",
        recompute_method="block",
        recompute_layers=2,
    ),  # fmt: skip
    Layout(tensor=2, pipeline=4, data=8, virtual_stages=2, micro_batch=1, global_batch=64),
    Layout(
        tensor=2,
        pipeline=4,
        data=8,
        virtual_stages=2,
        micro_batch=1,
        global_batch=64,
        first_stage_layers=6,
        last_stage_layers=6,
    ),  # fmt: skip
    Layout(
        tensor=4,
        pipeline=2,
        data=8,
        virtual_stages=4,
        micro_batch=2,
        global_batch=64,
        first_stage_layers=12,
        last_stage_layers=20,
    ),  # fmt: skip
    Layout(tensor=1, pipeline=8, data=8, virtual_stages=2, micro_batch=1, global_batch=64),
    # free splits: unequal middle ranks (only the layout string launches them), without and with interleaving
    Layout(tensor=2, pipeline=4, data=8, micro_batch=1, global_batch=64, pipeline_layers=(6, 8, 10, 8)),
    Layout(
        tensor=2, pipeline=4, data=8, virtual_stages=2, micro_batch=1, global_batch=64, pipeline_layers=(6, 8, 10, 8)
    ),
    # a free split with block recomputation of every layer (5), then of 2 of up to 5 layers per rank (partial)
    *(
        Layout(
            tensor=1,
            pipeline=8,
            data=8,
            micro_batch=1,
            global_batch=64,
            pipeline_layers=(2, 3, 4, 5, 5, 5, 5, 3),
            recompute="full",
            recompute_method="block",
            recompute_layers=k,
        )  # fmt: skip
        for k in (5, 2)
    ),
]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_round_trip_through_megatron_args_and_megatron_core(layout):
    cluster = Cluster(ACCELERATORS["H100"], 64, 8)
    text = pipeline_layout_string(LLAMA8, layout)
    v, counts = read_pipeline_layout(text, LLAMA8.layers, layout.pipeline)
    assert (v, counts) == (layout.virtual_stages, stage_layers(LLAMA8, layout))
    argv = megatron_command(LLAMA8, layout, pipeline_layout=True)
    assert "--pipeline-model-parallel-layout" in argv and "--decoder-first-pipeline-num-layers" not in argv
    model, parsed, _ = parse_megatron_args(argv, 64)
    assert parsed == layout
    plan, again = predict(LLAMA8, cluster, layout), predict(model, cluster, parsed)
    assert (again.iteration_seconds, again.memory.total) == (plan.iteration_seconds, plan.memory.total)
    check = check_megatron(LLAMA8, layout, pipeline_layout=True)  # Megatron-Core parses and validates the string
    assert check.ok, check.message


@pytest.mark.parametrize("text", ["Ettt|(tt|)*29,m|L", "E|t*3|(t|)*2tL", "Et*2|t*2,t|tL", "(t|)*3"])
def test_grammar_is_megatron_cores(text):
    from megatron.core.transformer.pipeline_parallel_layer_layout import PipelineParallelLayerLayout

    theirs = PipelineParallelLayerLayout.parse_str_to_list(text)
    names = {"embedding": "E", "decoder": "t", "loss": "L", "mtp": "m"}
    assert parse_stages(text) == ["".join(names[x.name] for x in stage) for stage in theirs]


@pytest.mark.parametrize(
    ("text", "p", "needle"),
    [
        ("Et*8|t*8|t*8|t*8L", 3, "not a multiple of pipeline size"),
        ("t*8|Et*8|t*8|t*8L", 4, "must start with E"),
        ("Et*8|t*8|t*8|t*7L", 4, "decoder layers"),
        ("Et*8|t*8|t*8|t*7mL", 4, "decoder layers"),
        ("Et*4|t*4|t*4|t*4|t*2|t*6|t*4|t*4L", 4, "virtual stages hold equal"),
        ("Et*16|t*16|L", 3, "without decoder layers"),
        ("Et*8|t*8|x|t*8L", 4, "unknown layer character"),
    ],
)
def test_refusals_are_one_line(text, p, needle):
    with pytest.raises(InvalidLayoutError, match=needle) as info:
        read_pipeline_layout(text, 32, p)
    assert "\n" not in str(info.value)


def test_free_split_is_written_only_as_the_layout_string():
    """A free split is exported with --pipeline-model-parallel-layout even unasked; first/last splits keep their
    flags unless asked; the string is read back as the same layout."""
    free, first_last = LAYOUTS[-4], LAYOUTS[1]
    assert free.free_split and not first_last.free_split
    argv = megatron_command(LLAMA8, free)
    assert argv[argv.index("--pipeline-model-parallel-layout") + 1] == "Et*6|t*8|t*10|t*8L"
    assert "--decoder-first-pipeline-num-layers" not in argv
    assert "--pipeline-model-parallel-layout" not in megatron_command(LLAMA8, first_last)
    # a string whose middle ranks are equal is read as the first/last flags' layout
    _, parsed, _ = parse_megatron_args([*megatron_command(LLAMA8, first_last, pipeline_layout=True)], 64)
    assert parsed.first_stage_layers == 7 and parsed.pipeline_layers is None


def test_megatron_core_accepts_what_the_model_refuses():
    """The refusal of empty ranks is the model's limit, not Megatron-Core's."""
    from megatron.core.transformer.pipeline_parallel_layer_layout import PipelineParallelLayerLayout

    for text, p in (("Et*16|t*16|L", 3),):
        PipelineParallelLayerLayout(text, p).validate_layer_layout(num_layers=32, mtp_num_layers=None)


def test_conflicting_flags_are_refused():
    argv = megatron_command(LLAMA8, LAYOUTS[1], pipeline_layout=True)
    with pytest.raises(InvalidLayoutError, match="cannot be set with"):
        parse_megatron_args([*argv, "--decoder-first-pipeline-num-layers", "7"], 64)
    with pytest.raises(InvalidLayoutError, match="virtual stages per rank"):
        parse_megatron_args([*argv, "--num-virtual-stages-per-pipeline-rank", "2"], 64)
