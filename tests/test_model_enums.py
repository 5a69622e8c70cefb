"""One vocabulary: statuses and kinds are compared through the enums of :mod:`placement.model`, never as literals.

``Status``, ``Objective`` and ``ScheduleKind`` values are checked (``Recompute``'s ``"none"`` is too common a word).

The scan reads the syntax tree (not the text), so docstrings and comments may still quote a status.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from placement.model import Objective, ScheduleKind, Status

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("placement", "ui", "app_pages")
#: The enums' own module may spell its values.
OWN_MODULE = Path("placement/model.py")
VALUES = frozenset(member.value for enum in (Status, Objective, ScheduleKind) for member in enum)
#: Lines another change is editing as this rule lands (path, stripped source line); drop each once it reads Status.
PENDING: set[tuple[Path, str]] = set()  # (file, line) exemptions while a file is being reworked; none now


def _literals(node: ast.expr) -> list[str]:
    """The enum values ``node`` spells: a literal, or the literals of a tuple/list/set display."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in VALUES else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [value for element in node.elts for value in _literals(element)]
    return []


def enum_literal_comparisons(source: str) -> list[tuple[int, str]]:
    """(line, value) for every ``==``, ``!=``, ``in`` or ``not in`` comparison with an enum value as a literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        if not all(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
            continue
        for operand in (node.left, *node.comparators):
            found += [(node.lineno, value) for value in _literals(operand)]
    return found


def test_the_scan_finds_each_form_of_comparison():
    source = (
        'a = r.status == "optimal"\n'
        'b = "infeasible" != r.status\n'
        'c = r.status in ("optimal", "feasible")\n'
        'd = r.status not in ["no solution"]\n'
        "e = r.status == Status.OPTIMAL\n"
        'f = kind == "throughput"\n'
        'g = "error" in {"error"}\n'
    )
    assert enum_literal_comparisons(source) == [
        (1, "optimal"),
        (2, "infeasible"),
        (3, "optimal"),
        (3, "feasible"),
        (4, "no solution"),
        (6, "throughput"),
        (7, "error"),
        (7, "error"),
    ]


def test_docstrings_and_assignments_are_not_comparisons():
    source = '"""status == "optimal" in prose."""\nstatus = "optimal"\nmake("feasible")\nx = name == "resnet"\n'
    assert enum_literal_comparisons(source) == []


def _scanned_files() -> list[Path]:
    files = [path for folder in SCANNED for path in sorted((ROOT / folder).rglob("*.py"))]
    return [path for path in files if path.relative_to(ROOT) != OWN_MODULE]


def test_the_scan_covers_the_package_the_ui_and_the_pages():
    names = {path.relative_to(ROOT).parts[0] for path in _scanned_files()}
    assert names == set(SCANNED)


@pytest.mark.parametrize("path", _scanned_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_enum_value_is_compared_as_a_literal_outside_the_enums_module(path):
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    relative = path.relative_to(ROOT)
    found = [
        f"{relative}:{line}: compares the literal {value!r} (use placement.model.Status / Objective / ScheduleKind)"
        for line, value in enum_literal_comparisons(source)
        if (relative, lines[line - 1].strip()) not in PENDING
    ]
    assert not found, "\n".join(found)
