"""The interleaved 1F1B and ZB-H1 action lists equal torch.distributed.pipelining's (optional extra: torch).

torch builds ``pipeline_order`` (every rank's actions, ``None`` for lock-step padding) in the
schedule's constructor; the stages only need ``group_size`` / ``group_rank`` for that, so
stand-ins are passed. Skipped where torch is not installed (requirements-export.txt).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from placement.pipeline.schedule import Action, device_actions

schedules = pytest.importorskip("torch.distributed.pipelining.schedules")


def torch_order(cls, ranks: int, virtual: int, microbatches: int) -> dict[int, list[str]]:
    stages = [
        SimpleNamespace(
            group_size=ranks,
            group_rank=0,
            stage_index=j * ranks,
            num_stages=virtual * ranks,
            is_first=j == 0,
            is_last=False,
            has_backward=True,
            submod=None,
        )
        for j in range(virtual)
    ]
    order = cls(stages, microbatches).pipeline_order
    return {rank: [str(a) for a in actions if a is not None] for rank, actions in order.items()}


@pytest.mark.parametrize(
    "kind,cls", [("interleaved", "ScheduleInterleaved1F1B"), ("zbh1", "ScheduleInterleavedZeroBubble")]
)
@pytest.mark.parametrize("ranks,virtual", [(2, 1), (2, 2), (3, 1), (3, 2), (4, 3)])
@pytest.mark.parametrize("microbatches", [1, 2, 4, 6, 8, 12])
def test_action_lists_equal_torch(kind, cls, ranks, virtual, microbatches):
    if kind == "interleaved" and virtual == 1:
        pytest.skip("interleaved 1F1B with one stage per device is 1F1B")
    try:
        expected = torch_order(getattr(schedules, cls), ranks, virtual, microbatches)
    except ValueError:
        pytest.skip("torch refuses this microbatch count")
    mine = {r: [str(a) for a in device_actions(kind, r, ranks, microbatches, virtual)] for r in range(ranks)}
    assert mine == expected
    # The notation is torch's: its parser reads ours back.
    for text in mine[0]:
        parsed = schedules._Action.from_str(text)
        assert (parsed.stage_index, parsed.microbatch_index) == (
            Action.parse(text).stage,
            Action.parse(text).microbatch,
        )
