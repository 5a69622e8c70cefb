"""The docs match the tree: each architecture page lists every module of its package (and no module that does not
exist), and the README stays a short entry point into the docs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture"

#: Architecture page -> the folder whose modules its table lists ("placement" alone: the top-level modules).
PAGES = {
    "core.md": "placement",
    "exact.md": "placement/exact",
    "ip.md": "placement/ip",
    "pipeline.md": "placement/pipeline",
    "modelling.md": "placement/modelling",
    "explore.md": "placement/explore",
    "multidim.md": "placement/multidim",
    "perf.md": "placement/perf",
    "viz.md": "placement/viz",
    "app.md": "ui",
}

#: The README's cap (issue 41): what the tool does, the two commands, the CLI and the pages, links into the docs.
README_MAX_LINES = 300


def _listed(page: str) -> set[str]:
    """Module paths named in the first cell of the page's table rows (``| `name` | ... |``)."""
    folder = PAGES[page]
    names: set[str] = set()
    for line in (ARCHITECTURE / page).read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        first = line.strip("|").split("|")[0]
        names.update(f"{folder}/{name}.py" for name in re.findall(r"`([A-Za-z_]+)`", first))
    return names


def _tree(folder: str) -> set[str]:
    return {str(p.relative_to(ROOT)) for p in (ROOT / folder).glob("*.py") if p.name != "__init__.py"}


def test_every_module_is_listed_on_its_architecture_page_and_exists():
    for page, folder in PAGES.items():
        listed, tree = _listed(page), _tree(folder)
        assert sorted(tree - listed) == [], f"modules missing from docs/architecture/{page}"
        assert sorted(listed - tree) == [], f"docs/architecture/{page} names modules that do not exist"


def test_every_package_folder_has_a_page():
    folders = {str(p.parent.relative_to(ROOT)) for p in (ROOT / "placement").glob("*/__init__.py")}
    assert folders <= set(PAGES.values()), "a package of placement/ has no architecture page"


def test_the_parser_reads_the_rows():
    assert "placement/model.py" in _listed("core.md") and "placement/exact/dp.py" in _listed("exact.md")
    assert "ui/guard.py" in _listed("app.md")
    assert "placement/no_such_module.py" not in _listed("core.md")


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES})"
