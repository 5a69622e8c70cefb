"""The README's layout tables ("The package") match the tree: every module of ``placement/`` and ``ui/`` is
listed, and every module listed exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECTION = re.compile(r"^## The package\n(.*?)^## ", re.S | re.M)


def _tables() -> tuple[set[str], set[str]]:
    """Module paths (relative, ``.py``) named by the package table and by the ``ui/`` table."""
    text = SECTION.search((ROOT / "README.md").read_text()).group(1)
    package: set[str] = set()
    ui: set[str] = set()
    where = ""
    in_ui = False
    for line in text.splitlines():
        if line.startswith("| `ui/` module"):
            in_ui = True
            continue
        if not line.startswith("| ") or line.startswith("|---") or line.startswith("| where"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        names = re.findall(r"`([A-Za-z_]+)`", cells[1] if not in_ui else cells[0])
        if in_ui:
            ui.update(f"ui/{name}.py" for name in names)
            continue
        if cells[0]:
            where = cells[0].strip("`")
        folder = "" if where == "core" else where
        package.update(f"placement/{folder}{name}.py" for name in names)
    return package, ui


def _tree(folder: str) -> set[str]:
    return {
        str(p.relative_to(ROOT))
        for p in (ROOT / folder).rglob("*.py")
        if p.name != "__init__.py" and "__pycache__" not in p.parts
    }


def test_every_package_module_is_listed_and_exists():
    listed, _ = _tables()
    tree = _tree("placement")
    assert sorted(tree - listed) == [], "modules missing from the README's package table"
    assert sorted(listed - tree) == [], "the README's package table names modules that do not exist"


def test_every_ui_module_is_listed_and_exists():
    _, listed = _tables()
    tree = _tree("ui")
    assert sorted(tree - listed) == [], "ui modules missing from the README's ui table"
    assert sorted(listed - tree) == [], "the README's ui table names modules that do not exist"


def test_the_parser_reads_the_rows():
    listed, _ = _tables()
    assert "placement/model.py" in listed and "placement/exact/dp.py" in listed  # the parser reads the rows
    assert "placement/no_such_module.py" not in listed
