"""Multidimensional planner: prunes and lattice reductions against the brute force.

Each prune of :mod:`placement.multidim.dp` is checked on random instances where it acts: free nodes
merged into a neighbour (ids shuffled, so the node numbering is not topological), the (P, A, B) fronts
of large horizons, the safe-row cut of the fronts under a binding memory cap, and the read-back's
fixed-(d, y) option choice.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from pathlib import Path

import numpy as np
import pytest

from placement.errors import TooManyIdealsError
from placement.exact import ideals
from placement.multidim import choice, dp, front_steps
from placement.multidim.dp import free_nodes, plan_groups, solve_multidim, stage_choice
from placement.multidim.evaluate import evaluate_plan
from placement.multidim.io import read_piper
from placement.multidim.model import DeviceKind, MultiProblem, NodeOption, PEdge, Plan, PlanStage, PNode
from tests.test_multidim import _random_problem, assert_equals_brute_force

PIPER = Path(__file__).resolve().parent.parent / "sample_graphs" / "piper"


def _relabel(problem: MultiProblem, perm: list[int]) -> MultiProblem:
    """The same problem with node v renamed perm[v] (sync bytes follow their nodes)."""

    def opt(o: NodeOption) -> NodeOption:
        return NodeOption(
            o.name,
            o.time,
            o.parameters,
            o.memory_a,
            o.memory_b,
            tuple((perm[u], b) for u, b in o.sync_fw),
            tuple((perm[u], b) for u, b in o.sync_bw),
        )

    nodes = [None] * len(problem.nodes)
    for node in problem.nodes:
        nodes[perm[node.id]] = PNode(
            perm[node.id], node.name, tuple((t, tuple(opt(o) for o in opts)) for t, opts in node.options)
        )
    edges = tuple(PEdge(perm[e.source], perm[e.target], e.cost) for e in problem.edges)
    return MultiProblem(tuple(nodes), edges, problem.kinds, problem.microbatches)


def _with_free_nodes(rng: random.Random, problem: MultiProblem, count: int) -> MultiProblem:
    """``problem`` plus ``count`` free nodes (zero cost, zero-byte edges) wired at random, ids shuffled."""
    degrees = sorted({t for node in problem.nodes for t in node.degrees})
    nodes = list(problem.nodes)
    edges = list(problem.edges)
    order = list(range(len(nodes)))  # a topological order (the random problems' edges go up in id)
    for _ in range(count):
        v = len(nodes)
        nodes.append(PNode(v, f"free{v}", tuple((t, (NodeOption("free", 0.0),)) for t in degrees)))
        at = rng.randint(0, len(order))
        # predecessors before v in the order and successors after it keep the graph acyclic
        for u in rng.sample(order[:at], k=min(at, rng.randint(0, 2))):
            edges.append(PEdge(u, v, 0.0))
        after = order[at:]
        for w in rng.sample(after, k=min(len(after), rng.randint(0, 3))):
            edges.append(PEdge(v, w, 0.0))
        order.insert(at, v)
    problem = MultiProblem(tuple(nodes), tuple(edges), problem.kinds, problem.microbatches)
    perm = list(range(len(nodes)))
    rng.shuffle(perm)
    return _relabel(problem, perm)


@pytest.mark.parametrize("seed", range(24))
def test_free_nodes_and_shuffled_ids_equal_brute_force(seed):
    rng = random.Random(1000 + seed)
    base = _random_problem(rng, uniform=seed % 2 == 0)
    while len(base.nodes) > 4:
        base = _random_problem(rng, uniform=seed % 2 == 0)
    problem = _with_free_nodes(rng, base, rng.randint(1, 2))
    assert free_nodes(problem)  # the reduction has something to act on
    assert_equals_brute_force(problem)


@pytest.mark.parametrize("seed", range(12))
def test_pab_fronts_equal_brute_force(seed, monkeypatch):
    """The (P, A, B) fronts (used above ``PER_Y_HORIZON``) with their safe-row cut, forced on small cases."""
    monkeypatch.setattr(front_steps, "PER_Y_HORIZON", 0)
    rng = random.Random(2000 + seed)
    assert_equals_brute_force(_random_problem(rng, uniform=True))


def _tight(rng: random.Random) -> MultiProblem:
    """A chain whose memory binds: each node has a fast heavy option and a slow light one."""
    n = rng.randint(2, 5)
    nodes = []
    for v in range(n):
        opts = (
            NodeOption("vanilla", float(rng.randint(2, 6)), float(rng.randint(0, 4)), float(rng.randint(2, 5)), 0.0),
            NodeOption("recomp", float(rng.randint(6, 9)), float(rng.randint(0, 4)), 1.0, float(rng.randint(1, 4))),
        )
        nodes.append(PNode(v, f"n{v}", ((1, opts),)))
    edges = tuple(PEdge(v, v + 1, float(rng.randint(0, 4))) for v in range(n - 1))
    kinds = (DeviceKind("x", rng.randint(2, 6), float(rng.randint(6, 16)), 4.0),)
    return MultiProblem(tuple(nodes), edges, kinds, rng.choice([2, 4, 6]))


@pytest.mark.parametrize("seed", range(12))
def test_binding_memory_equals_brute_force(seed):
    """Memory caps that force recomputation on some stages (the safe-row cut must keep those rows)."""
    assert_equals_brute_force(_tight(random.Random(3000 + seed)))


def test_stage_choice_is_the_best_option_combination():
    rng = random.Random(7)
    for _ in range(20):
        problem = _tight(rng)
        kind = problem.kinds[0]
        nodes = tuple(range(len(problem.nodes)))
        for d, y in itertools.product((1, 2), (1, 2, 3)):
            best = math.inf
            for names in itertools.product(*[[o.name for o in problem.nodes[v].options_for(1)] for v in nodes]):
                # time does not depend on y; the memory is taken at the asked y (a lone stage has y = 1)
                cost = evaluate_plan(problem, Plan((PlanStage(nodes, d, 1, names),))).stages[0]
                chosen = [o for v, name in zip(nodes, names) for o in problem.nodes[v].options_for(1) if o.name == name]
                if sum(o.memory_a * y + o.memory_b for o in chosen) <= kind.memory:
                    best = min(best, cost.time)
            got = stage_choice(problem, nodes, 1, d, y, kind)
            if math.isinf(best):
                assert got is None
            else:
                assert got is not None and got[0] == pytest.approx(best, rel=1e-12)


def test_reversed_ids_are_not_refused():
    """A chain numbered backwards has 15 ideals; the old lattice read its ids as a topological order
    and refused it (a bogus antichain of 13 nodes, 2^13 > 5,000)."""
    n = 14
    nodes = tuple(PNode(v, f"n{v}", ((1, (NodeOption("o", 1.0 + v, memory_a=1.0),)),)) for v in range(n))
    edges = tuple(PEdge(v + 1, v, 1.0) for v in range(n - 1))
    problem = MultiProblem(nodes, edges, (DeviceKind("x", 4, 100.0, 10.0),), 4)
    result = solve_multidim(problem)
    assert result.status == "optimal" and result.ideals == n + 1
    ev = evaluate_plan(problem, result.plan)
    assert ev.feasible and ev.time_per_sample == pytest.approx(result.time_per_sample, rel=1e-12)


def test_free_node_reduction_keeps_costly_nodes_apart():
    """Only free nodes are merged; a zero-time node with memory or a costly edge stays its own group."""
    o_free = NodeOption("free", 0.0)
    o_mem = NodeOption("mem", 0.0, memory_b=1.0)
    nodes = (
        PNode(0, "a", ((1, (NodeOption("a", 1.0),)),)),
        PNode(1, "free", ((1, (o_free,)),)),
        PNode(2, "mem", ((1, (o_mem,)),)),
        PNode(3, "edge", ((1, (o_free,)),)),
        PNode(4, "b", ((1, (NodeOption("b", 1.0),)),)),
    )
    edges = (PEdge(0, 1, 0.0), PEdge(1, 4, 0.0), PEdge(0, 2, 0.0), PEdge(2, 4, 0.0), PEdge(0, 3, 2.0), PEdge(3, 4, 0.0))
    problem = MultiProblem(nodes, edges, (DeviceKind("x", 4, 100.0, 10.0),), 4)
    assert free_nodes(problem) == {1}
    groups = plan_groups(problem)
    assert sorted(groups.members) == [(0,), (1, 4), (2,), (3,)]


def test_too_many_ideals_is_refused_with_one_line():
    """Twenty independent costly nodes: 2^20 ideals, refused at once (no free node to merge): by the stage
    cap (every ideal is a stage from the empty one), or by the ideal cap when that is the lower one."""
    nodes = tuple(PNode(v, f"n{v}", ((1, (NodeOption("o", 1.0),)),)) for v in range(20))
    problem = MultiProblem(nodes, (), (DeviceKind("x", 4, 100.0, 10.0),), 4)
    with pytest.raises(TooManyIdealsError) as info:
        solve_multidim(problem)
    text = str(info.value)
    assert "\n" not in text and f"more than {dp.DEFAULT_MAX_STAGES:,} stages" in text
    with pytest.raises(TooManyIdealsError) as info:
        solve_multidim(problem, max_ideals=5_000)
    assert "\n" not in str(info.value) and "5,000" in str(info.value) and "stages" not in str(info.value)
    assert dp.DEFAULT_MAX_IDEALS == ideals.DEFAULT_MAX_IDEALS  # one ideal cap in the package


def test_too_many_stages_is_refused_with_one_line():
    """Fourteen independent costly nodes: 16,384 ideals (under the ideal cap) but 3^14 - 2^14 nested
    pairs, over the stage cap."""
    nodes = tuple(PNode(v, f"n{v}", ((1, (NodeOption("o", 1.0),)),)) for v in range(14))
    problem = MultiProblem(nodes, (), (DeviceKind("x", 4, 100.0, 10.0),), 4)
    assert 2**14 < dp.DEFAULT_MAX_IDEALS and 3**14 - 2**14 > dp.DEFAULT_MAX_STAGES
    with pytest.raises(TooManyIdealsError) as info:
        solve_multidim(problem)
    text = str(info.value)
    assert "\n" not in text and "16,384 ideals" in text and f"{dp.DEFAULT_MAX_STAGES:,} stages" in text


def test_count_stages_matches_a_direct_count():
    rng = random.Random(5)
    for _ in range(10):
        problem = _with_free_nodes(rng, _random_problem(rng, uniform=True), 1)
        lattice = dp.node_lattice(problem, 1000)
        direct = sum(1 for a in lattice.masks for b in lattice.masks if a != b and a & b == a)
        assert dp.count_stages(lattice, 10**9) == direct


@pytest.mark.parametrize("name, ideals", [("gnmt.json", 100), pytest.param("resnet.json", 242, marks=pytest.mark.slow)])
def test_piper_workload_with_its_own_settings_is_solved(name, ideals):
    p = read_piper(PIPER / name)
    result = solve_multidim(p)
    assert result.status == "optimal" and result.ideals == ideals
    ev = evaluate_plan(p, result.plan)
    assert ev.feasible, ev.violations
    assert ev.time_per_sample == pytest.approx(result.time_per_sample, rel=1e-9)


@pytest.mark.parametrize("pab", [False, True])
def test_safe_cut_counts_the_memory_still_to_come(pab, monkeypatch):
    """One device, one stage a -> b -> c, cap 8: a's fast option (memory 5) fits on its own, but the best
    full stage recomputes a (cheap) and keeps b fast; a cut that ignored b and c would drop it (7 vs 5.1)."""
    if pab:
        monkeypatch.setattr(front_steps, "PER_Y_HORIZON", 0)

    def node(v, slow):
        return PNode(
            v, f"n{v}", ((1, (NodeOption("vanilla", 1.0, memory_b=5.0), NodeOption("recomp", slow, memory_b=1.0))),)
        )

    problem = MultiProblem(
        (node(0, 1.1), node(1, 3.0), node(2, 3.0)),
        (PEdge(0, 1, 0.0), PEdge(1, 2, 0.0)),
        (DeviceKind("x", 1, 8.0, 1.0),),
        1,
    )
    result = solve_multidim(problem)
    assert result.time_per_sample == pytest.approx(5.1)
    assert_equals_brute_force(problem)


def test_only_free_nodes():
    """Isolated free nodes end up in one group; the plan is one stage."""
    nodes = tuple(PNode(v, f"n{v}", ((1, (NodeOption("free", 0.0),)),)) for v in range(3))
    problem = MultiProblem(nodes, (), (DeviceKind("x", 2, 1.0, 1.0),), 2)
    assert [len(m) for m in plan_groups(problem).members] == [3]
    assert_equals_brute_force(problem)


@pytest.mark.parametrize("seed", range(6))
def test_numpy_reference_fronts_equal_the_compiled_ones(seed, monkeypatch):
    """The per-y front steps of multidim.kernel (numba) and their numpy reference give the same optimum."""
    rng = random.Random(100 + seed)
    problem = _random_problem(rng, uniform=True)
    monkeypatch.setattr(front_steps, "COMPILED", True)
    compiled = solve_multidim(problem)
    monkeypatch.setattr(front_steps, "COMPILED", False)
    reference = solve_multidim(problem)
    assert compiled.status == reference.status
    assert compiled.time_per_sample == reference.time_per_sample


def test_compiled_steps_are_chosen_by_size(monkeypatch):
    """With ``COMPILED = None`` small solves use the numpy steps (no numba import), large ones the kernel."""
    monkeypatch.setattr(front_steps, "COMPILED", None)
    assert not front_steps.use_compiled(43, 8)  # BERT-32 at 8 devices
    assert front_steps.use_compiled(242, 8)  # resnet.json at 8 devices: 29,161 pairs x 8
    monkeypatch.setattr(front_steps, "COMPILED", False)
    assert not front_steps.use_compiled(10**4, 10**4)
    monkeypatch.setattr(front_steps, "COMPILED", True)
    assert front_steps.use_compiled(1, 1)


@pytest.mark.parametrize("seed", range(8))
def test_front_representations_give_the_same_plan(seed, monkeypatch):
    """(P, A, B) fronts, per-y fronts, the automatic choice, and a fallback from (P, A, B) to per y after
    one row too many: the same optimum and the same plan (every stage's least time is the same)."""
    rng = random.Random(300 + seed)
    problem = _random_problem(rng, uniform=True)
    results = {}
    for name, horizon, rows in (("pab", 0, 256), ("per_y", 64, 0), ("auto", 64, 256), ("fallback", 64, 1)):
        monkeypatch.setattr(front_steps, "PER_Y_HORIZON", horizon)
        monkeypatch.setattr(front_steps, "PAB_MAX_ROWS", rows)
        results[name] = solve_multidim(problem)
    first = results["pab"]
    for result in results.values():
        assert result.status == first.status
        assert result.time_per_sample == first.time_per_sample
        assert result.plan == first.plan
    assert_equals_brute_force(problem)


def test_piper_fronts_pick_their_representation(monkeypatch):
    """BERT-32's fronts stay narrow ((P, A, B) throughout); ResNet's grow past PAB_MAX_ROWS at once."""
    from placement.multidim import stages

    built = []
    original = stages._all_fronts

    def spy(ctx):
        built.append(ctx.per_y)
        return original(ctx)

    monkeypatch.setattr(stages, "_all_fronts", spy)
    for name, expected in (("bert32a100.json", [False]), ("resnet.json", [False, True])):
        built.clear()
        p = read_piper(PIPER / name)
        lattice = dp.node_lattice(p, 10_000)
        stages.stage_fronts(p, lattice, p.kinds[0].memory, 8)
        assert built == expected


def _one_kind(problem: MultiProblem) -> MultiProblem:
    """``problem`` on its first device kind only (the device cut of ``Prune`` needs one kind)."""
    return MultiProblem(problem.nodes, problem.edges, problem.kinds[:1], problem.microbatches)


def _without_device_cut(monkeypatch) -> None:
    """Solves after this build their ``Prune`` without ``work`` (the bound's other cuts stay)."""
    original = dp._prune

    def no_work(*args):
        prune = original(*args)
        return None if prune is None else dataclasses.replace(prune, work=None)

    monkeypatch.setattr(dp, "_prune", no_work)


def _cut_problem(rng: random.Random) -> MultiProblem:
    """A chain of 3 to 5 nodes on 4 to 8 devices of ample memory, where a one-stage plan is close to the best:
    small stages on many replicas leave the other nodes too few devices (the device cut acts)."""
    n = rng.randint(3, 5)
    nodes = []
    for v in range(n):
        base = float(rng.randint(2, 9))
        options = {1: (NodeOption("a", base, float(rng.randint(0, 2)), 1.0, 1.0),)}
        if rng.random() < 0.7:
            options[2] = (NodeOption("a", base / 2 * rng.choice([1.0, 1.5, 2.0]), float(rng.randint(0, 2)), 1.0, 1.0),)
        nodes.append(PNode(v, f"n{v}", tuple(options.items())))
    edges = tuple(PEdge(v - 1, v, float(rng.randint(0, 3))) for v in range(1, n))
    kind = DeviceKind("x", rng.randint(4, 8), 1000.0, float(rng.choice([16, 64])))
    return MultiProblem(tuple(nodes), edges, (kind,), rng.choice([4, 8, 12]))


@pytest.mark.parametrize("seed", range(12))
def test_device_cut_keeps_the_optimum(seed, monkeypatch):
    """The rest of the nodes need devices too (``Prune.may_grow``, ``Prune.room``): the brute force's optimum,
    and the same time per sample as without that cut."""
    problem = _cut_problem(random.Random(700 + seed))
    with_cut = solve_multidim(problem)
    assert_equals_brute_force(problem)
    _without_device_cut(monkeypatch)
    without = solve_multidim(problem)
    assert with_cut.status == without.status
    assert with_cut.time_per_sample == without.time_per_sample


def test_device_cut_acts_on_the_random_chains(monkeypatch):
    """On the instances above both parts of the cut drop something (so the test above tests them)."""
    refused, rows = [], []
    may_grow, room = choice.Prune.may_grow, choice.Prune.room

    def spy_grow(self, *args):
        ok = may_grow(self, *args)
        refused.append(not ok)
        return ok

    def spy_room(self, j, i):
        out = room(self, j, i)
        rows.append(int((out < self.devices).sum()))
        return out

    monkeypatch.setattr(choice.Prune, "may_grow", spy_grow)
    monkeypatch.setattr(choice.Prune, "room", spy_room)
    for seed in range(12):
        solve_multidim(_cut_problem(random.Random(700 + seed)))
    assert any(refused) and sum(rows) > 0


@pytest.mark.parametrize("devices", [8, 128])
def test_device_cut_acts_on_bert_and_keeps_its_optimum(devices, monkeypatch):
    """BERT-32 at 8 and 128 devices: fewer stages built and fewer candidates, the same optimum bit for bit."""
    p = read_piper(PIPER / "bert32a100.json")
    p = dataclasses.replace(p, kinds=(dataclasses.replace(p.kinds[0], count=devices),))
    grown = []
    original = front_steps.extend_pab

    def counting(*args, **kwargs):
        grown.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(front_steps, "extend_pab", counting)
    with_cut = solve_multidim(p)
    steps_with = len(grown)
    grown.clear()
    _without_device_cut(monkeypatch)
    without = solve_multidim(p)
    assert with_cut.time_per_sample == without.time_per_sample
    assert with_cut.candidates < without.candidates
    assert steps_with < len(grown)
    ev = evaluate_plan(p, with_cut.plan)
    assert ev.feasible and ev.time_per_sample == pytest.approx(with_cut.time_per_sample, rel=1e-9)


def test_device_room_counts_the_rest():
    """Two nodes of work 6 and 2 (least t x time), bound 1, speed 1, 10 devices: a stage holding only the
    first leaves the second 2 devices of the 10, and may grow while t P + W(rest) <= 10."""
    prune = choice.Prune(1.0, 4, 10, 1.0, (1, 2, 4), np.array([0.0, 6.0, 8.0]))
    assert prune.room(np.array([0, 0, 1]), np.array([1, 2, 2])).tolist() == [8, 10, 4]
    assert prune.may_grow(6.0, 1, 0, 1)  # 6 + 2 <= 10
    assert not prune.may_grow(5.0, 2, 0, 1)  # 10 + 2 > 10
    assert choice.ideal_work(_one_kind(_random_problem(random.Random(1), uniform=True)), [0]).tolist() == [0.0]


@pytest.mark.parametrize("seed", range(40))
def test_small_front_steps_equal_numpy(seed, monkeypatch):
    """``extend_pab``'s plain-Python path for few rows returns the numpy path's rows (values and order),
    ties, the cap and the safe cut included."""
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(1, 5)) if seed < 20 else int(rng.integers(5, 17))  # up to SMALL_STEP (64) sums
    points = rng.integers(0, 4, size=(rows, 3)).astype(np.float64) / 2
    options = rng.integers(0, 4, size=(int(rng.integers(1, 4 if seed < 20 else 5)), 3)).astype(np.float64) / 2
    cap, horizon, safe = float(rng.integers(2, 8)), int(rng.integers(1, 6)), float(rng.integers(-1, 12))
    small = front_steps._extend_pab_small(points, options, cap, horizon, safe)
    monkeypatch.setattr(front_steps, "SMALL_STEP", 0)
    reference = front_steps.extend_pab(points, options, cap, horizon, safe)
    assert small.shape == reference.shape and small.dtype == reference.dtype
    assert np.array_equal(small, reference)
