"""The one schedule registry (placement.pipeline.registry): every schedule, its labels and torch class."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from placement.errors import PlacementError
from placement.model import ScheduleKind
from placement.pipeline import registry
from placement.pipeline.registry import (
    ALL_SCHEDULES,
    SCHEDULE_LABELS,
    SCHEDULE_SPECS,
    SCHEDULE_TITLES,
    SCHEDULES,
    TORCH_SCHEDULES,
    schedule_label,
    schedule_spec,
    schedule_title,
)
from placement.pipeline.schedule import simulate
from placement.solve import METHODS
from tests.test_schedule import two_stage_training

ROOT = Path(__file__).resolve().parent.parent


def test_registry_covers_every_schedule_kind_once():
    assert [spec.kind for spec in SCHEDULE_SPECS.values()] == list(ScheduleKind)
    assert ALL_SCHEDULES == tuple(k.value for k in ScheduleKind)
    assert SCHEDULES == ("inference", "gpipe", "1f1b")
    assert len(set(SCHEDULE_LABELS.values())) == len(SCHEDULE_LABELS) == len(set(SCHEDULE_TITLES.values()))
    assert TORCH_SCHEDULES == {
        "gpipe": "ScheduleGPipe",
        "1f1b": "Schedule1F1B",
        "interleaved": "ScheduleInterleaved1F1B",
        "zbh1": "ScheduleInterleavedZeroBubble",
    }
    assert [n for n, s in SCHEDULE_SPECS.items() if not s.training] == ["inference"]


def test_lookups_accept_names_and_members_and_reject_others():
    assert schedule_label("1f1b") == schedule_label(ScheduleKind.ONE_F_ONE_B) == "1F1B"
    assert schedule_title("zbh1") == "zero bubble ZB-H1 (split backward)"
    assert schedule_spec(ScheduleKind.GPIPE).name == "gpipe"
    with pytest.raises(PlacementError, match="unknown schedule 'pipedream'; choose one of: inference, gpipe"):
        schedule_spec("pipedream")


def test_every_registered_schedule_simulates():
    problem, placement = two_stage_training()
    for name in ALL_SCHEDULES:
        assert simulate(problem, placement, 4, name, virtual=1 if name == "interleaved" else None).kind == name


def test_planner_option_offers_the_one_stage_schedules():
    option = {o.name: o for o in METHODS["memory-aware"].options}["schedule"]
    assert option.choices == SCHEDULES


def _label_dicts(path: Path) -> list[int]:
    """Lines of dict literals whose keys are two or more schedule names (a second label table)."""
    names = set(ALL_SCHEDULES)
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            for k in node.keys:  # ScheduleKind.GPIPE or ScheduleKind.GPIPE.value
                if isinstance(k, ast.Attribute) and k.attr == "value":
                    k = k.value
                if isinstance(k, ast.Attribute) and isinstance(k.value, ast.Name) and k.value.id == "ScheduleKind":
                    keys.add(ScheduleKind[k.attr].value)
            if len(keys & names) >= 2 and any(isinstance(v, ast.Constant) for v in node.values):
                lines.append(node.lineno)
    return lines


def test_no_second_schedule_label_table():
    """Labels come from the registry alone: no other dict maps schedule names to strings."""
    files = [*ROOT.joinpath("placement").rglob("*.py"), *ROOT.joinpath("ui").rglob("*.py")]
    files += [*ROOT.joinpath("app_pages").glob("*.py"), ROOT / "app.py"]
    own = Path(registry.__file__).resolve()
    found = {str(p.relative_to(ROOT)): lines for p in files if p.resolve() != own and (lines := _label_dicts(p))}
    # perf/launch.py maps the perf model's own Schedule enum to torchtitan names (a file format, not labels).
    found.pop("placement/perf/launch.py", None)
    assert found == {}
