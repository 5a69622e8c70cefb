"""The import graph of ``placement/`` and ``ui/`` (drawn from the source by scripts/import_cycles.py) has no cycle."""

import runpy
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
CHECKER = runpy.run_path(str(ROOT / "scripts" / "import_cycles.py"))
import_cycles = CHECKER["import_cycles"]
import_graph = CHECKER["import_graph"]


def test_ui_has_no_import_cycle():
    cycles = [group for group in import_cycles() if any(name.startswith("ui") for name in group)]
    assert not cycles, cycles


def test_the_package_has_no_import_cycle():
    assert not import_cycles(), sorted(map(sorted, import_cycles()))


def test_the_state_no_longer_reaches_the_scenario():
    graph = import_graph()
    assert graph.has_edge("ui.scenario", "ui.state")  # the scenario reads the state...
    assert not nx.has_path(graph, "ui.state", "ui.scenario")  # ...which reaches it only through a callback


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checker_finds_a_cycle_through_a_deferred_import(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import f\n",
            "pkg/b.py": "def f():\n    from . import a\n",
            "pkg/c.py": "from .a import f\n",
        },
    )
    assert import_cycles(tmp_path, ("pkg",)) == [["pkg.a", "pkg.b"]]
    assert set(import_graph(tmp_path, ("pkg",)).edges) == {("pkg.a", "pkg.b"), ("pkg.b", "pkg.a"), ("pkg.c", "pkg.a")}


def test_the_checker_counts_imports_for_annotations_too(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg import a\n",
            "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import T\nelse:\n    import os\n",
            "pkg/b.py": "import pkg.a.x\n",
        },
    )
    assert import_cycles(tmp_path, ("pkg",)) == [["pkg.a", "pkg.b"]]
    assert set(import_graph(tmp_path, ("pkg",)).edges) == {("pkg", "pkg.a"), ("pkg.a", "pkg.b"), ("pkg.b", "pkg.a")}
