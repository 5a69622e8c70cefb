"""CPU cores that pay transfers (``Devices.cpu_bandwidth``): evaluator, DP, integer programs, baselines, io.

The solvers are checked against the independent brute force of ``tests/randgraphs.py``
(every assignment of color classes to devices, scored with the evaluator) on random small
graphs whose CPU cores pay communication; the evaluator against hand-computed loads.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from placement import Devices, DeviceSlot, Placement, Problem, Stage, evaluate, parse_problem, solve_dp
from placement.errors import InvalidDevicesError, InvalidGraphError
from placement.evaluate import latency
from placement.heuristics import _State, local_search, pipedream
from placement.io import devices_to_dict, problem_to_json
from placement.ip import color_groups, solve_ip_contiguous, solve_ip_noncontiguous

from .randgraphs import brute_force, random_problem
from .test_evaluate import diamond

A0, A1, C0 = DeviceSlot("accelerator", 0), DeviceSlot("accelerator", 1), DeviceSlot("cpu", 0)
TOL = 1e-6


def cpu_problem(seed: int, training: bool, max_forward: int = 5) -> Problem:
    """A random problem with 1-2 CPU cores that pay transfers (random CPU bandwidth, overlap on some)."""
    problem = random_problem(seed, training=training, max_forward=max_forward)
    rng = random.Random(10_000 + seed)
    devices = problem.devices.with_changes(
        cpus=rng.randint(1, 2),
        cpu_bandwidth=rng.choice([0.2, 0.5, 1.0, 3.0]),
        bandwidth=rng.choice([1.0, 1.0, 2.0]),
        overlap=rng.random() < 0.3,
    )
    if devices.accelerators[0].count > 2:
        devices = devices.with_kind("accelerator", count=2)
    return Problem(problem.graph, devices)


def close(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= TOL * max(1.0, abs(a), abs(b))


# ----------------------------------------------------------------------------- evaluator (hand-computed)


def test_evaluator_cpu_pays_each_crossing_node_once_scaled():
    problem = diamond()  # a -> b, a -> c, b -> d, c -> d; costs a:1, b:2, c:3
    placement = Placement((Stage(A0, (1,)), Stage(C0, (2, 3)), Stage(A1, (4,))))
    devices = problem.devices.with_changes(cpu_bandwidth=0.5)
    cpu = evaluate(Problem(problem.graph, devices), placement).load_of(C0)
    # C0 = {b, c}: compute 20 + 30; crossing a (into b and c, once), b (b->d), c (c->d): 1 + 2 + 3 = 6,
    # divided by bandwidth 1 * cpu_bandwidth 0.5 -> 12.
    assert (cpu.compute, cpu.communication, cpu.load) == (50, 12, 62)
    # Global bandwidth 2 also divides: 6 / (2 * 0.5) = 6.
    devices = devices.with_changes(bandwidth=2.0)
    cpu = evaluate(Problem(problem.graph, devices), placement).load_of(C0)
    assert (cpu.communication, cpu.load) == (6, 56)
    # Overlap: max(compute, communication): 6 / 0.1 = 60 > 50.
    devices = problem.devices.with_changes(cpu_bandwidth=0.1, overlap=True)
    evaluation = evaluate(Problem(problem.graph, devices), placement)
    assert evaluation.load_of(C0).load == pytest.approx(60)
    # The accelerators are unchanged: A0 = {a}: 1 + out 1; A1 = {d}: 4, in 2 + 3 (overlap: max).
    assert evaluation.load_of(A0).load == 1 and evaluation.load_of(A1).load == 5
    # Latency ignores cpu_bandwidth (documented in placement.evaluate): same as the paper's 41.
    assert latency(Problem(problem.graph, devices), placement) == 32 + 5 + 4


def test_none_means_no_cpu_communication():
    problem = diamond()
    placement = Placement((Stage(A0, (1,)), Stage(C0, (2, 3)), Stage(A1, (4,))))
    cpu = evaluate(problem, placement).load_of(C0)
    assert problem.devices.cpu_bandwidth is None and problem.devices.cpu_transfer_scale == 0.0
    assert (cpu.communication, cpu.load) == (0, 50)


@pytest.mark.parametrize("bad", [0, 0.0, -1.0, math.inf, math.nan, "fast", True])
def test_cpu_bandwidth_validated(bad):
    with pytest.raises(InvalidDevicesError):
        Devices.paper(1, 1).with_changes(cpu_bandwidth=bad)


# ----------------------------------------------------------------------------- io


def test_io_round_trip_of_cpu_bandwidth():
    problem = diamond()
    problem = Problem(problem.graph, problem.devices.with_changes(cpu_bandwidth=2.5))
    text = problem_to_json(problem)
    assert '"cpuBandwidth": 2.5' in text
    back = parse_problem(text, "round.json")
    assert back.devices == problem.devices and back.devices.cpu_bandwidth == 2.5
    # Absent (a paper file) or null: None, and None is not written.
    plain = parse_problem(problem_to_json(diamond()), "plain.json")
    assert plain.devices.cpu_bandwidth is None
    assert "cpuBandwidth" not in devices_to_dict(plain.devices)
    assert "deviceKinds" not in devices_to_dict(plain.devices)
    with_null = text.replace('"cpuBandwidth": 2.5', '"cpuBandwidth": null')
    assert parse_problem(with_null, "null.json").devices.cpu_bandwidth is None


def test_io_cpu_price_alone_is_written():
    devices = Devices.paper(2, 1, 10.0).with_changes(cpu_price_per_hour=0.3)
    back = parse_problem(problem_to_json(Problem(diamond().graph, devices)), "price.json")
    assert back.devices.cpu_price_per_hour == 0.3


@pytest.mark.parametrize(
    "value, words", [("0", "must be positive"), ("-2", "non-negative"), ('"x"', "must be a number")]
)
def test_io_rejects_bad_cpu_bandwidth(value, words):
    text = problem_to_json(Problem(diamond().graph, diamond().devices.with_changes(cpu_bandwidth=1.0)))
    text = text.replace('"cpuBandwidth": 1.0', f'"cpuBandwidth": {value}')
    with pytest.raises(InvalidGraphError, match=words) as info:
        parse_problem(text, "bad.json")
    assert str(info.value).startswith("bad.json:")


# ----------------------------------------------------------------------------- DP and IPs vs brute force


def test_cpu_bandwidth_changes_the_optimum_on_some_problems():
    """Guard: the random problems below do exercise the CPU's communication."""
    changed = 0
    for seed in range(30):
        problem = cpu_problem(seed, training=seed % 2 == 1)
        paper = Problem(problem.graph, problem.devices.with_changes(cpu_bandwidth=None))
        if not close(brute_force(problem, contiguous=True)[0], brute_force(paper, contiguous=True)[0]):
            changed += 1
    assert changed >= 5


@pytest.mark.parametrize("training", [False, True])
def test_dp_equals_contiguous_brute_force(training):
    for seed in range(60):
        problem = cpu_problem(seed, training)
        expected, _ = brute_force(problem, contiguous=True)
        result = solve_dp(problem)
        if math.isinf(expected):
            assert result.status == "infeasible", (seed, result)
            continue
        assert result.status == "optimal", (seed, result)
        assert close(result.objective, expected), (seed, result.objective, expected)
        evaluation = evaluate(problem, result.placement)
        assert evaluation.feasible and close(evaluation.max_load, result.objective), seed


@pytest.mark.parametrize("training", [False, True])
def test_pipedream_value_is_its_evaluation(training):
    """The chain DP (shared kernel) scores CPU stages as the evaluator does."""
    for seed in range(30):
        problem = cpu_problem(seed, training)
        result = pipedream(problem)
        if result.ok:
            # _done takes the objective from the evaluator; the kernel's own value must agree.
            from placement.exact.dp import solve_chain
            from placement.exact.ideals import contract

            value, _ = solve_chain(problem, contract(problem.graph))
            assert close(value, result.objective), seed


@pytest.mark.slow
@pytest.mark.parametrize("training", [False, True])
def test_ips_equal_brute_force(training):
    for seed in range(14):
        problem = cpu_problem(seed, training, max_forward=4)
        contiguous, _ = brute_force(problem, contiguous=True)
        free, _ = brute_force(problem, contiguous=False)
        dp = solve_dp(problem)
        ip = solve_ip_contiguous(problem, warm_start=seed % 2 == 0)
        nc = solve_ip_noncontiguous(problem, warm_start=seed % 2 == 1)
        if math.isinf(contiguous):
            assert ip.status == "infeasible", (seed, ip)
        else:
            assert ip.status == "optimal", (seed, ip)
            assert close(ip.objective, dp.objective) and close(ip.objective, contiguous), (
                seed,
                ip.objective,
                contiguous,
            )
        if math.isinf(free):
            assert nc.status == "infeasible", (seed, nc)
        else:
            assert nc.status == "optimal", (seed, nc)
            assert close(nc.objective, free), (seed, nc.objective, free)


def test_ips_without_warm_start_see_cpu_communication():
    """A chain whose best split uses the CPU only if the CPU pays no transfers."""
    problem = diamond()
    graph = problem.graph
    nodes = tuple(replace(n, cpu_latency=n.accelerator_latency) for n in graph.nodes)  # CPU as fast as accelerators
    graph = replace(graph, nodes=nodes)
    free = Problem(graph, Devices.paper(1, 1))
    paying = Problem(graph, Devices.paper(1, 1).with_changes(cpu_bandwidth=0.01))
    for solver in (solve_ip_contiguous, solve_ip_noncontiguous):
        a, b = solver(free, warm_start=False), solver(paying, warm_start=False)
        assert a.status == b.status == "optimal"
        assert close(a.objective, brute_force(free, contiguous=solver is solve_ip_contiguous)[0])
        assert close(b.objective, brute_force(paying, contiguous=solver is solve_ip_contiguous)[0])
        # Paying 100x the transfers, the CPU stays empty: everything on the accelerator (10).
        assert close(b.objective, 10.0) and a.objective < 10.0


# ----------------------------------------------------------------------------- local search


def test_local_search_state_matches_the_evaluator():
    for seed in range(25):
        problem = cpu_problem(seed, training=seed % 2 == 0)
        groups = color_groups(problem.graph)
        slots = problem.devices.slots()
        state = _State(problem, groups, slots)
        rng = random.Random(seed)
        assign = [rng.choice(options) if options else 0 for options in state.allowed]
        state.reset(assign)
        # A few moves, maintained incrementally.
        for _ in range(5):
            g = rng.randrange(len(groups))
            j = rng.choice(state.allowed[g] or [state.assign[g]])
            i = state.assign[g]
            if j == i:
                continue
            comm_i = state.comm[i] + state.comm_delta(i, g, j)
            comm_j = state.comm[j] + state.comm_delta(j, g, j)
            state.move(g, j, comm_i, comm_j)
        placement = Placement.from_assignment(
            {n: slots[state.assign[g]] for g, members in enumerate(groups) for n in members}, order=slots
        )
        evaluation = evaluate(problem, placement)
        for k, slot in enumerate(slots):
            entry = evaluation.load_of(slot)
            if entry is None:
                continue
            assert close(state.loads[k], entry.load), (seed, slot, state.loads[k], entry.load)


def test_local_search_never_beats_brute_force():
    for seed in range(12):
        problem = cpu_problem(seed, training=seed % 2 == 0, max_forward=4)
        free, _ = brute_force(problem, contiguous=False)
        result = local_search(problem, seed=seed, restarts=3, time_limit=5.0)
        if result.ok:
            assert result.objective >= free - TOL, seed


# ----------------------------------------------------------------------------- schedules and memory-aware planning


def test_schedule_busy_time_is_the_evaluator_load():
    """The pipeline simulation charges CPU cores their transfers too: busy time per sample = load."""
    from placement.pipeline.schedule import simulate

    checked = 0
    for seed in range(20):
        problem = cpu_problem(seed, training=True)
        result = solve_dp(problem)
        if not result.ok or not any(s.device.is_cpu for s in result.placement.stages):
            continue
        evaluation = evaluate(problem, result.placement)
        b = simulate(problem, result.placement, 64, "1f1b")
        for device, idle in b.idle:
            assert (b.makespan - idle) / 64 == pytest.approx(evaluation.load_of(device).load, rel=1e-9), seed
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("seed", range(48))
def test_memory_aware_equals_its_brute_force_with_cpu_transfers(seed):
    from placement.exact.memory_aware import solve_memory_aware

    from .test_memory_aware import brute_force as memory_brute_force
    from .test_memory_aware import random_memory_problem

    problem = random_memory_problem(seed)
    rng = random.Random(seed)
    problem = Problem(
        problem.graph, problem.devices.with_changes(cpus=rng.randint(1, 2), cpu_bandwidth=rng.choice([0.2, 1.0, 3.0]))
    )
    schedule = ("1f1b", "gpipe", "inference")[seed % 3]
    microbatches, optimizer, recompute = 1 + seed % 4, (0.0, 1.0, 2.0)[seed % 3], seed % 5 == 4
    expected, _ = memory_brute_force(problem, schedule, microbatches, optimizer, recompute)
    result = solve_memory_aware(problem, schedule, microbatches, optimizer, recompute)
    if math.isinf(expected):
        assert result.status == "infeasible", (seed, result)
    else:
        assert result.status == "optimal", (seed, result)
        assert result.objective == pytest.approx(expected, rel=1e-9, abs=1e-9), seed
