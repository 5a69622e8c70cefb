"""The planner's lattice helpers (:mod:`placement.multidim.lattice`) against networkx.

The free-node merge keeps its order graph in plain Python (networkx is not imported on the planner's
path); its reachability and its smallest-key topological order must be networkx's own on any DAG, and
``plan_groups`` must not import networkx.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

from placement.multidim.lattice import _Order, _reach, _smallest_key_order

ROOT = Path(__file__).resolve().parent.parent


def _random_dag(rng: random.Random) -> tuple[int, list[tuple[int, int]]]:
    """Nodes 0..n-1 in a shuffled topological order, random edges (some repeated)."""
    n = rng.randint(1, 12)
    rank = list(range(n))
    rng.shuffle(rank)
    edges = []
    for _ in range(rng.randint(0, 3 * n)):
        a, b = rng.sample(range(n), 2) if n > 1 else (0, 0)
        if a != b:
            edges.append((a, b) if rank[a] < rank[b] else (b, a))
    return n, edges


@pytest.mark.parametrize("seed", range(40))
def test_reach_and_order_equal_networkx(seed):
    rng = random.Random(seed)
    n, edges = _random_dag(rng)
    order = _Order(n, edges)
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(edges)
    key = {v: rng.random() for v in range(n)}  # distinct keys, or ties broken by position
    if seed % 2:
        key = {v: rng.randint(0, 2) for v in range(n)}
    for v in range(n):
        assert _reach(order.succ, v) == nx.descendants(graph, v)
        assert _reach(order.pred, v) == nx.ancestors(graph, v)
        assert list(order.succ[v]) == list(graph.successors(v))
        assert list(order.pred[v]) == list(graph.predecessors(v))
    expected = list(nx.lexicographical_topological_sort(graph, key=key.__getitem__))
    assert _smallest_key_order(order, key.__getitem__) == expected
    # removing nodes and re-adding edges (as the merge does) keeps both graphs alike
    for v in rng.sample(range(n), k=n // 2):
        order.remove_node(v)
        graph.remove_node(v)
        for a, b in edges:
            if a in graph and b in graph:
                order.add_edge(a, b)
                graph.add_edge(a, b)
    assert order.edges() == list(graph.edges)
    assert _smallest_key_order(order, key.__getitem__) == list(
        nx.lexicographical_topological_sort(graph, key=key.__getitem__)
    )


def test_the_multidim_cli_path_imports_no_networkx():
    """A whole ``solve --method multidim`` run on a Piper file loads neither networkx nor numba (small case), nor
    what only the other subcommands use: the pipeline memory model and schedules, the single-device evaluator and
    its printing, ``statistics`` and ``hashlib`` (start-up against Piper's C++, docs/benchmarks/multidim.md)."""
    code = (  # run from the checkout's root: its ``placement`` and its sample graph
        "import atexit, sys, runpy\n"
        "def report():\n"  # at exit: python -m placement ends with os._exit once the atexit handlers ran
        "    print(sorted({m.split('.')[0] for m in sys.modules} & {'networkx', 'numba', 'pandas', 'scipy', 'pulp'}))\n"
        "    lazy = {'placement.pipeline.memory', 'placement.pipeline.schedule', 'placement.evaluate',"
        " 'placement.cli_output', 'statistics', 'hashlib'}\n"
        "    print(sorted(lazy & set(sys.modules)))\n"
        "atexit.register(report)\n"
        "sys.argv = ['placement', 'solve', 'sample_graphs/piper/bert32a100.json', '--method', 'multidim',"
        " '--devices', '8']\n"
        "runpy.run_module('placement', run_name='__main__')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120, cwd=ROOT
    )
    assert out.stdout.strip().splitlines()[-2:] == ["[]", "[]"], out.stdout


def test_the_planner_library_path_imports_only_the_planner():
    """``read_piper`` + ``solve_multidim`` + ``evaluate_plan`` (the Piper benchmark's run) import neither the
    package's other solvers and schedules (``placement.solve``, ``placement.pipeline``, ``placement.evaluate``)
    nor the converter of our graphs; ``placement.solve`` is still the function once imported."""
    code = (
        "import sys\n"
        "from placement.multidim.dp import solve_multidim\n"
        "from placement.multidim.evaluate import evaluate_plan\n"
        "from placement.multidim.io import read_piper\n"
        "solve_multidim(read_piper('sample_graphs/piper/bert32a100.json'))\n"
        "heavy = ('placement.solve', 'placement.pipeline', 'placement.evaluate', 'placement.multidim.convert',"
        " 'networkx', 'numba')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
        "import placement, placement.solve, placement.evaluate\n"
        "print(callable(placement.solve), callable(placement.evaluate))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120, cwd=ROOT
    )
    assert out.stdout.strip().splitlines()[-2:] == ["[]", "True True"], out.stdout
