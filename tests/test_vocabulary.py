"""One vocabulary: no status or kind string literal is compared outside the enums' module (placement.enums).

An AST scan of every module of the package, the app's ``ui/`` and its pages (``app_pages/``, ``app.py``). A comparison
(``==``, ``!=``, ``in``, ``not in``, ``is``) with a string literal (or a tuple, list or set of them) is a finding when
the literal is the value of a member of ``Status``, ``Objective``, ``ScheduleKind`` or ``TrainingSchedule``
(:mod:`placement.perf`'s ``Schedule``), whatever it is compared with; or of ``EventKind`` or ``Recompute`` when the other
operand names a status, kind, schedule, objective, phase or recompute choice (``"none"`` or ``"forward"`` compared with
anything else is another word). Compare with the members. The scan reads the syntax tree, so docstrings and comments
may still quote a status.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import placement
from placement.enums import EventKind, Objective, Recompute, ScheduleKind, Status, TrainingSchedule

PACKAGE = Path(placement.__file__).resolve().parent
ROOT = PACKAGE.parent
ENUMS_MODULE = PACKAGE / "enums.py"
ENUMS = (Status, Objective, ScheduleKind, TrainingSchedule, EventKind, Recompute)
VALUES = {m.value for enum in ENUMS for m in enum}
#: Values that are a status, objective or schedule wherever they are compared (the other enums' need a subject).
STRICT_VALUES = {m.value for enum in (Status, Objective, ScheduleKind, TrainingSchedule) for m in enum}
#: Words naming what such a literal would be compared with.
SUBJECTS = ("status", "kind", "schedule", "objective", "phase", "recompute", "outcome")


def _literals(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def findings(source: str, name: str = "<source>") -> list[str]:
    """``name:line: comparison`` for every comparison of a vocabulary literal in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for position, operand in enumerate(operands):
            words = [w for w in _literals(operand) if w in VALUES]
            if not words:
                continue
            others = " ".join(ast.unparse(o).lower() for k, o in enumerate(operands) if k != position)
            if STRICT_VALUES.intersection(words) or any(subject in others for subject in SUBJECTS):
                out.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
                break
    return out


def scanned_files() -> list[Path]:
    """Every module of the package, ``ui/``, ``app_pages/`` and ``app.py``, but the enums' own module."""
    files = [path for folder in ("placement", "ui", "app_pages") for path in sorted((ROOT / folder).rglob("*.py"))]
    return [path for path in files + [ROOT / "app.py"] if path.resolve() != ENUMS_MODULE]


def test_the_scan_covers_the_package_the_ui_the_pages_and_perf():
    names = {path.relative_to(ROOT).parts[0] for path in scanned_files()}
    assert names == {"placement", "ui", "app_pages", "app.py"}
    assert PACKAGE / "perf" / "layout.py" in scanned_files()


def test_no_vocabulary_literal_is_compared_in_the_package_the_ui_or_the_pages():
    found = []
    for path in scanned_files():
        found += findings(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == [], "compare against the enums of placement.enums:\n" + "\n".join(found)


def test_perf_s_schedule_is_the_vocabulary_s_and_shares_schedule_kind_s_names():
    from placement.perf import Schedule

    assert Schedule is TrainingSchedule
    shared = {m.value for m in ScheduleKind} & {m.value for m in TrainingSchedule}
    assert shared == {"gpipe", "1f1b", "interleaved", "zbh1"}
    for value in shared:  # one spelling of each schedule: the same value and member name in both enums
        assert ScheduleKind(value).name in TrainingSchedule.__members__
        assert TrainingSchedule(value) == ScheduleKind(value)
    assert [m.value for m in TrainingSchedule] == ["gpipe", "1f1b", "interleaved", "zbh1", "zbv"]
    assert [m for m in TrainingSchedule if m.zero_bubble] == [TrainingSchedule.ZB_H1, TrainingSchedule.ZBV]
    assert TrainingSchedule.ZBH1 is TrainingSchedule.ZB_H1 and f"{TrainingSchedule.ZBV}" == "zbv"


@pytest.mark.parametrize(
    "code",
    [
        'if result.status == "optimal": pass',
        'ok = "feasible" != outcome.status',
        'x = schedule in ("interleaved", "zbh1")',
        'y = event.kind == "transfer"',
        'z = phase not in {"forward", "weight"}',
        'w = objective_kind is "latency"',
        'v = model.recompute == "none"',
        'u = layout.schedule is "zbv"',
        'if r.get("s") in ("optimal", "feasible"): pass',  # a status, whatever it is compared with
        't = label != "throughput"',
        'x = "gpipe" in names',
    ],
)
def test_the_scan_finds_literal_comparisons(code):
    assert len(findings(code)) == 1


@pytest.mark.parametrize(
    "code",
    [
        "if result.status == Status.OPTIMAL: pass",
        "x = schedule in (ScheduleKind.INTERLEAVED, ScheduleKind.ZBH1)",
        'y = position not in ("learned_absolute", "rope", "none")',  # another vocabulary
        'z = name == "forward"',  # not a phase
        'u = mode != "none"',  # not a recompute choice
        'w = status == "pending"',  # not a value of the enums
    ],
)
def test_the_scan_passes_member_comparisons_and_other_words(code):
    assert findings(code) == []


def test_docstrings_and_assignments_are_not_comparisons():
    source = '"""status == "optimal" in prose."""\nstatus = "optimal"\nmake("feasible")\nx = name == "resnet"\n'
    assert findings(source) == []
