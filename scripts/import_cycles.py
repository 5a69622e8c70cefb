"""Draw the import graph of the project's modules (ast, no import is run) and list its cycles.

Every ``import`` and ``from ... import`` counts, also those inside functions (a cycle through a
deferred import is still a cycle in the structure) and those under ``if TYPE_CHECKING:`` (a module that
needs another's names even for its annotations depends on it: such a cycle is a knot in the layers, even
though nothing is imported when the code runs). ``from pkg import name`` is an edge to the
submodule ``pkg.name`` when there is one, else to ``pkg`` itself; the implicit import of a parent
package is not an edge (Python runs it, but it is not a dependency the code chose).

Usage::

    python scripts/import_cycles.py          # prints the cycles, one a line; exit 1 if there is any
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
#: The project's packages (``app_pages/`` are scripts run by Streamlit: nothing imports them).
PACKAGES = ("placement", "ui")


def module_files(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of ``packages`` under ``root``."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _targets(node: ast.AST, module: str, is_package: bool, known: dict[str, Path]) -> list[str]:
    """The project modules an import statement names (others dropped)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        if node.level:  # relative: resolve against this module's package
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module or ""
        names = [f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in known else stem for alias in node.names]
    else:
        return []
    found = []
    for name in names:
        while name and name not in known:  # "import a.b.c" of a name inside a module: the module
            name = name.rpartition(".")[0]
        if name:
            found.append(name)
    return found


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> nx.DiGraph:
    """Directed graph: an edge ``a -> b`` when module ``a`` imports project module ``b``."""
    known = module_files(root, packages)
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            for target in _targets(node, module, is_package, known):
                if target != module:
                    graph.add_edge(module, target)
    return graph


def import_cycles(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> list[list[str]]:
    """The strongly connected groups of more than one module (each holds at least one cycle), sorted."""
    graph = import_graph(root, packages)
    return sorted(sorted(group) for group in nx.strongly_connected_components(graph) if len(group) > 1)


def main() -> int:
    cycles = import_cycles()
    graph = import_graph()
    print(f"{graph.number_of_nodes()} modules, {graph.number_of_edges()} imports, {len(cycles)} cycle group(s)")
    for group in cycles:
        members = set(group)
        cycle = nx.find_cycle(graph.subgraph(members))
        print("cycle: " + " -> ".join([a for a, _ in cycle] + [cycle[0][0]]) + f"   (group: {', '.join(group)})")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
