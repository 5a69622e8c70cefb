"""One vocabulary: no status or kind string literal is compared outside the enums' module (placement.enums).

An AST scan of every module of the package: a comparison (``==``, ``!=``, ``in``, ``not in``, ``is``) with a string
literal (or a tuple, list or set of them) that is the value of a member of ``Status``, ``Objective``, ``ScheduleKind``,
``EventKind`` or ``Recompute`` is a finding, when the other operand names a status, kind, schedule, objective, phase or
recompute choice (``"none"`` or ``"error"`` compared with anything else is another word). Compare with the members.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import placement
from placement.enums import EventKind, Objective, Recompute, ScheduleKind, Status

PACKAGE = Path(placement.__file__).resolve().parent
ENUMS_MODULE = PACKAGE / "enums.py"
VALUES = {m.value for enum in (Status, Objective, ScheduleKind, EventKind, Recompute) for m in enum}
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
            if any(subject in others for subject in SUBJECTS):
                out.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
                break
    return out


def test_no_vocabulary_literal_is_compared_in_the_package():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.resolve() != ENUMS_MODULE:
            found += findings(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)))
    assert found == [], "compare against the enums of placement.enums:\n" + "\n".join(found)


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
        'z = name == "optimal"',  # not a status
        'w = status == "pending"',  # not a value of the enums
    ],
)
def test_the_scan_passes_member_comparisons_and_other_words(code):
    assert findings(code) == []
