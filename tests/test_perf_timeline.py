"""The pipeline schedule simulation (placement/perf/timeline.py) and its figure (placement/viz/perf.py)."""

from __future__ import annotations

import pytest

from placement.errors import PlacementError
from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.layout import Layout
from placement.perf.predict import iteration_time, stage_seconds
from placement.perf.timeline import schedule_blocks, zbv_orders
from placement.perf.transformer import MODELS
from placement.viz import perf as viz_perf


@pytest.mark.parametrize(("schedule", "p", "m", "v"), [("1f1b", 4, 8, 1), ("1f1b", 8, 3, 1), ("gpipe", 4, 6, 1),
                                                       ("interleaved", 4, 8, 2), ("interleaved", 2, 6, 3)])  # fmt: skip
def test_makespan_equals_the_closed_form(schedule, p, m, v):
    f, b = 1.0, 2.0
    blocks = schedule_blocks(schedule, [(f, b)] * p, m, v)
    assert len(blocks) == 2 * p * m * v
    span = max(bl.end for bl in blocks)
    assert span == pytest.approx((m + (p - 1) / v) * (f + b))
    for r in range(p):  # a rank runs one block at a time
        mine = sorted((bl.start, bl.end) for bl in blocks if bl.rank == r)
        assert all(a[1] <= b_[0] + 1e-12 for a, b_ in zip(mine, mine[1:], strict=False))


def test_dependencies_hold_with_uneven_ranks():
    stages = [(1.0, 2.0), (3.0, 5.0), (0.5, 1.5)]
    blocks = {(bl.kind, bl.rank, bl.microbatch): bl for bl in schedule_blocks("1f1b", stages, 5)}
    for (kind, rank, j), bl in blocks.items():
        if kind == "F" and rank > 0:
            assert bl.start >= blocks[("F", rank - 1, j)].end
        if kind == "B":
            assert bl.start >= blocks[("F", rank, j)].end
            if rank < 2:
                assert bl.start >= blocks[("B", rank + 1, j)].end
    # the slowest rank is busy from its first forward to its last backward with m * (f + b) of work
    assert max(bl.end for bl in blocks.values()) >= 5 * 8.0


def test_stage_seconds_add_up_to_the_iteration_step():
    model = MODELS["llama3-8b"]
    cluster = Cluster(ACCELERATORS["H100"], 32, 8)
    layout = Layout(tensor=2, pipeline=4, data=4, micro_batch=1, global_batch=64, sequence_parallel=True,
                    first_stage_layers=7, last_stage_layers=7)  # fmt: skip
    stages = stage_seconds(model, cluster, layout)
    assert len(stages) == 4
    time = iteration_time(model, cluster, layout)
    m = layout.microbatches
    slowest = max(f + b for f, b in stages)
    steps = time.compute + time.recompute + time.tp_comm + time.cp_comm + time.ep_comm + time.pipeline_p2p
    assert m * slowest == pytest.approx(steps)


def test_schedule_figure_and_refusals():
    blocks = schedule_blocks("1f1b", [(1e-3, 2e-3)] * 3, 4)
    fig = viz_perf.schedule_figure(blocks, "t")
    assert {tr.name for tr in fig.data} == {"forward", "backward (with recomputation)"}
    assert sum(len(tr.x) for tr in fig.data) == len(blocks)
    with pytest.raises(PlacementError, match="zero-bubble"):
        schedule_blocks("zbh1", [(1.0, 1.0)] * 2, 4)
    with pytest.raises(PlacementError, match="multiple"):
        schedule_blocks("interleaved", [(1.0, 1.0)] * 4, 6, 2)


ZBV_CASES = [(2, 4), (2, 3), (4, 8), (4, 7), (4, 16), (3, 6), (8, 16), (8, 32)]


@pytest.mark.parametrize(("p", "m"), ZBV_CASES)
def test_zbv_makespan_equals_the_models_bubble(p, m):
    """With forward = input gradient = weight gradient per chunk (b = 2f, the balance zero-bubble V is built
    for) the drawn makespan is m (f + b) plus the model's own ZB-V bubble for that step."""
    model = MODELS["llama3-8b"]
    layout = Layout(pipeline=p, data=1, virtual_stages=2, schedule="zbv", micro_batch=1, global_batch=m)
    cluster = Cluster(ACCELERATORS["H100"], p, 8)
    time = iteration_time(model, cluster, layout)
    mean = sum(f + b for f, b in stage_seconds(model, cluster, layout)) / p
    coefficient = time.pipeline_bubble / mean  # the model's bubble in mean rank steps
    f = 1.0
    blocks = schedule_blocks("zbv", [(f, 2 * f)] * p, m)
    assert len(blocks) == 3 * 2 * p * m  # F, B and W of both chunks of every micro-batch, once each
    assert {(bl.kind, bl.chunk, bl.microbatch) for bl in blocks} == {
        (k, s, j) for k in "FBW" for s in range(2 * p) for j in range(m)
    }
    span = max(bl.end for bl in blocks)
    assert span == pytest.approx(m * 3 * f + coefficient * 3 * f, rel=1e-12)
    for r in range(p):  # one block at a time per rank; the V's stages r and 2p - 1 - r on rank r
        mine = sorted((bl.start, bl.end) for bl in blocks if bl.rank == r)
        assert all(a[1] <= b_[0] + 1e-12 for a, b_ in zip(mine, mine[1:], strict=False))
        assert {bl.chunk for bl in blocks if bl.rank == r} == {r, 2 * p - 1 - r}


def test_zbv_dependencies_hold_with_unequal_ranks():
    stages = [(1.0, 3.0), (2.0, 2.5), (0.7, 1.9)]
    p, m = 3, 5
    blocks = {(bl.kind, bl.chunk, bl.microbatch): bl for bl in schedule_blocks("zbv", stages, m)}
    for (kind, s, j), bl in blocks.items():
        if kind == "F" and s > 0:
            assert bl.start >= blocks[("F", s - 1, j)].end
        if kind == "B":
            assert bl.start >= blocks[("F", s, j)].end
            if s < 2 * p - 1:
                assert bl.start >= blocks[("B", s + 1, j)].end
        if kind == "W":
            assert bl.start >= blocks[("B", s, j)].end


@pytest.mark.parametrize(("p", "m"), ZBV_CASES)
def test_zbv_order_is_torchs(p, m):
    """The restated order equals torch.distributed.pipelining's ScheduleZBVZeroBubble (torchtitan's ZBV)."""
    schedules = pytest.importorskip("torch.distributed.pipelining.schedules")
    from types import SimpleNamespace

    cls = schedules.ScheduleZBVZeroBubble
    fake = SimpleNamespace(pp_group_size=p, num_stages=2 * p, _n_microbatches=m)
    names = {"FORWARD": "F", "BACKWARD_INPUT": "B", "BACKWARD_WEIGHT": "W"}
    for rank, ours in enumerate(zbv_orders(p, m)):
        actions = cls._calculate_single_rank_operations(fake, rank)
        theirs = [(names[a.computation_type.name], a.stage_index, a.microbatch_index) for a in actions if a is not None]
        assert theirs == ours


def test_zbv_figure_draws_three_kinds():
    blocks = schedule_blocks("zbv", [(1e-3, 2e-3)] * 2, 4)
    fig = viz_perf.schedule_figure(blocks, "zbv")
    assert {tr.name for tr in fig.data} == {"forward", "backward, input gradient", "backward, weight gradient"}
    assert sum(len(tr.x) for tr in fig.data) == len(blocks)
