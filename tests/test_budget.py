"""placement/budget.py: the multidim pre-check's bounds never exceed the planner's real sizes; --deadline."""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement import budget, cli
from placement.budget import DeadlineError, _paper_shape, _piper_shape, deadline, precheck_multidim, remaining
from placement.io import parse_problem
from placement.multidim.convert import options_from_graph
from placement.multidim.io import piper_from_dict
from placement.multidim.lattice import count_stages, node_lattice
from placement.multidim.limits import TooMuchWorkError, check_order_shape

HUGE = 10**12
ROOT = Path(__file__).resolve().parent.parent


def _paper(seed: int) -> dict:
    rng = random.Random(seed)
    n = rng.randint(1, 9)
    nodes = []
    for i in range(n):
        node = {"id": i, "supportedOnFpga": 1, "cpuLatency": 1.0, "isBackwardNode": 0}
        node["fpgaLatency"] = rng.choice([0.0, 0.0, 1.5])
        node["size"] = rng.choice([0.0, 0.0, 10.0])
        if rng.random() < 0.2:
            node["colorClass"] = rng.randint(0, 2)
        nodes.append(node)
    edges = []
    for a in range(n):
        for b in range(a + 1, n):
            if rng.random() < 0.3:
                edge = {"sourceId": a, "destId": b, "cost": rng.choice([0.0, 0.0, 0.5])}
                if rng.random() < 0.3:
                    edge["size"] = rng.choice([0.0, 64.0])
                edges.append(edge)
    return {"maxFPGAs": 4, "maxCPUs": 0, "maxSizePerFPGA": 1e12, "nodes": nodes, "edges": edges}


def _piper(seed: int) -> dict:
    rng = random.Random(seed)
    n = rng.randint(1, 9)
    nodes = []
    for i in range(n):
        value = rng.choice([0.0, 0.0, 1.0])
        option = {"id": "o", "timePerSample": value, "parameterSize": rng.choice([0.0, value])}
        nodes.append({"id": i, "name": f"n{i}", "TMPCs": {"1": [option]}})
    edges = [
        {"sourceId": a, "destId": b, "communicationCost": rng.choice([0.0, 2.0])}
        for a in range(n)
        for b in range(a + 1, n)
        if rng.random() < 0.3
    ]
    return {
        "maxDevices": 4,
        "maxMemoryPerDevice": 1e12,
        "bandwidth": 1e9,
        "mbsInBatch": 4,
        "nodes": nodes,
        "edges": edges,
    }


def _bounds_hold(shape, problem) -> None:
    count, pairs, costly = shape
    bounds = check_order_shape(count, pairs, costly, HUGE, HUGE)
    lattice = node_lattice(problem, 10**6)
    stages = count_stages(lattice, HUGE)
    if bounds is None:  # a cycle among the classes: nothing estimated
        return
    ideals_lb, stages_lb = bounds
    assert ideals_lb <= lattice.count
    assert stages_lb <= stages
    assert stages_lb * len(set((u, v) for u, v in pairs if u != v)) <= stages * max(1, len(problem.edges))


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9))
def test_paper_bounds_never_exceed_the_planner(seed):
    data = _paper(seed)
    try:
        problem = options_from_graph(parse_problem(json.dumps(data), "g.json"), microbatches=4)
    except Exception:  # noqa: BLE001 - an invalid random graph (e.g. a class cycle): nothing to compare
        return
    _bounds_hold(_paper_shape(data), problem)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9))
def test_piper_bounds_never_exceed_the_planner(seed):
    data = _piper(seed)
    _bounds_hold(_piper_shape(data), piper_from_dict(data, "p.json"))


def test_chain_and_antichain_bounds_are_exact():
    # a chain of k costly nodes: k + 1 ideals, k (k + 1) / 2 stages; an antichain of k: 2^k ideals
    assert check_order_shape(5, [(i, i + 1) for i in range(4)], [True] * 5, HUGE, HUGE) == (6, 15)
    assert check_order_shape(5, [], [True] * 5, HUGE, HUGE) == (32, 31)
    assert check_order_shape(3, [(0, 1), (1, 2), (2, 0)], [True] * 3, HUGE, HUGE) is None  # a cycle
    assert check_order_shape(5, [], [False] * 5, HUGE, HUGE) == (1, 0)  # free nodes may all merge


def test_dense_dag_is_refused_in_one_line():
    nodes = [{"id": i, "fpgaLatency": 1.0, "isBackwardNode": 0} for i in range(600)]
    edges = [{"sourceId": a, "destId": b, "cost": 1.0} for a in range(600) for b in range(a + 1, 600)]
    with pytest.raises(TooMuchWorkError, match="180,300 stages") as caught:
        precheck_multidim({"nodes": nodes, "edges": edges})
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "data",
    [None, [], {"nodes": 3}, {"nodes": [1], "edges": []}, {"nodes": [{"id": "x"}], "edges": []}],
)
def test_malformed_input_is_left_to_the_reader(data):
    assert precheck_multidim(data) is None


def test_deadline_raises_one_line_and_disarms():
    with pytest.raises(DeadlineError, match="deadline of 0.05 s"), deadline(0.05, "solve") as at:
        assert 0 < remaining(at) <= 0.05
        while True:
            pass
    with deadline(None) as at:
        assert at is None and remaining(at) == float("inf")


def test_cli_deadline_stops_a_long_solve(tmp_path, capsys):
    # imported first: a deadline firing inside an import leaves a half-initialised module (numba) in
    # sys.modules for every later test of this process
    import numba  # noqa: F401

    import placement.exact.dp  # noqa: F401
    import placement.multidim.cli  # noqa: F401
    import placement.multidim.dp  # noqa: F401

    graph = {"maxFPGAs": 8, "maxCPUs": 0, "maxSizePerFPGA": 1e12}
    graph["nodes"] = [
        {"id": i, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 0} for i in range(300)
    ]
    graph["edges"] = [{"sourceId": i, "destId": i + 1, "cost": 1} for i in range(299)]
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(graph))
    assert cli.main(["--deadline", "0.3", "solve", str(path), "--method", "multidim"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "deadline of 0.3 s" in err


def test_time_limit_is_fitted_to_the_deadline():
    import time

    args = argparse.Namespace(method="ip", deadline_at=time.monotonic() + 10)
    options = {"time_limit": 60.0}
    cli._fit_time_limit(args, options)
    assert 8.0 < options["time_limit"] <= 10 - cli.DEADLINE_MARGIN
    options = {"time_limit": 2.0}
    cli._fit_time_limit(args, options)
    assert options["time_limit"] == 2.0
    options = {}
    cli._fit_time_limit(argparse.Namespace(method="dp", deadline_at=time.monotonic() + 10), options)
    assert options == {}


def test_deadline_fires_again_when_swallowed():
    from placement.errors import PlacementError

    swallowed = []
    with pytest.raises(DeadlineError), deadline(0.05, "compare"):
        try:
            while True:
                pass
        except PlacementError as exc:  # as compare does for one failed method
            swallowed.append(exc)
        while True:
            pass
    assert len(swallowed) == 1


# ----- every other planner's estimate (issue 27.2): check_solve_work ---------------------------------


def _ideals_brute_force(n: int, edges: list[tuple[int, int]]) -> list[frozenset[int]]:
    """Every down-closed node set of a DAG on 0..n-1 (by subsets: small n only)."""
    preds = {v: {a for a, b in edges if b == v} for v in range(n)}
    out = []
    for mask in range(1 << n):
        members = frozenset(v for v in range(n) if mask >> v & 1)
        if all(preds[v] <= members for v in members):
            out.append(members)
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9))
def test_pairs_of_ideals_are_at_least_the_chain_bound(seed):
    # dp_work's premise: a DAG of g groups has at least g (g + 1) / 2 nested pairs of distinct ideals
    rng = random.Random(seed)
    n = rng.randint(1, 8)
    edges = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < rng.random()]
    ideals = _ideals_brute_force(n, edges)
    pairs = sum(1 for small in ideals for big in ideals if small < big)
    assert pairs >= n * (n + 1) // 2
    per_pair = budget.PAIR_STEPS + -(-2 * len(edges) // n)
    assert budget.dp_work(n, len(edges)) <= pairs * per_pair  # so the estimate never overstates the pairs


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**9))
def test_raw_shape_is_the_problems_shape(seed):
    # the CLI estimates from the raw JSON, the app from the built problem: the same numbers
    data = _paper(seed)
    data["maxCPUs"] = seed % 3
    try:
        problem = parse_problem(json.dumps(data), "g.json")
    except Exception:  # noqa: BLE001 - an invalid random graph: nothing to compare
        return
    assert budget.raw_solve_shape(data) == budget.solve_shape(problem)
    groups, edges, devices = budget.solve_shape(problem)
    assert budget.raw_solve_shape(data, accelerators=7, cpus=1) == (groups, edges, 8)


def _chain(n: int) -> dict:
    nodes = [
        {"id": i, "supportedOnFpga": 1, "cpuLatency": 1.0, "fpgaLatency": 0.5, "isBackwardNode": 0} for i in range(n)
    ]
    edges = [{"sourceId": i, "destId": i + 1, "cost": 0.1} for i in range(n - 1)]
    return {"maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 1e9, "nodes": nodes, "edges": edges}


@pytest.mark.parametrize("method", sorted(budget.DP_METHODS | budget.IP_METHODS | set(budget.DP_SEEDS)))
def test_every_dp_and_ip_method_is_estimated(method):
    shape = budget.raw_solve_shape(_chain(50))  # 50 groups, 49 edges, 3 devices
    assert shape == (50, 49, 3)
    budget.check_solve_work(method, *shape)  # under the default caps
    with pytest.raises(budget.TooMuchSolveWorkError) as caught:
        budget.check_solve_work(method, *shape, max_dp_work=10, max_ip_size=10)
    assert "\n" not in str(caught.value) and method in str(caught.value)
    if method in budget.DP_WARM_STARTS:  # without the DP warm start only the program's size counts
        budget.check_solve_work(method, *shape, {"warm_start": False}, max_dp_work=10)


@pytest.mark.parametrize("method", ["greedy-latency", "one-accelerator", "multidim", "unknown"])
def test_linear_methods_are_not_capped(method):
    budget.check_solve_work(method, 10**6, 10**7, 10**4, max_dp_work=1, max_ip_size=1)


def test_cli_refuses_past_the_caps_and_the_caps_can_be_raised(tmp_path, capsys):
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(_chain(40)))
    assert cli.main(["solve", str(path), "--method", "dp", "--max-work", "100"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-work" in err and "dp:" in err
    assert cli.main(["solve", str(path), "--method", "ip", "--max-ip-size", "10", "--no-warm-start"]) == 2
    assert "--max-ip-size" in capsys.readouterr().err
    assert cli.main(["solve", str(path), "--method", "pipedream", "--max-work", "inf"]) == 0
    assert "status: feasible" in capsys.readouterr().out


def test_dense_dag_is_refused_for_the_dp_before_validation(tmp_path, capsys, monkeypatch):
    n = 600
    nodes = [
        {"id": i, "supportedOnFpga": 1, "cpuLatency": 1.0, "fpgaLatency": 0.5, "isBackwardNode": 0} for i in range(n)
    ]
    edges = [{"sourceId": a, "destId": b, "cost": 0.1} for a in range(n) for b in range(a + 1, n)]
    path = tmp_path / "dense.json"
    path.write_text(json.dumps({"maxFPGAs": 2, "maxCPUs": 1, "nodes": nodes, "edges": edges}))

    def never(*args, **kwargs):
        raise AssertionError("the graph was built before the estimate refused it")

    monkeypatch.setattr(cli, "graph_from_dict", never)
    assert cli.main(["solve", str(path), "--method", "dp"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "179,700 edges" in err


def test_the_apps_dispatch_refuses_in_one_line(monkeypatch):
    # ui.caches._solve_uncached: every solve the app starts; a refusal is an error result, not an exception
    from ui import caches

    problem = parse_problem(json.dumps(_chain(40)), "chain.json")
    assert caches._solve_uncached(problem, "dp", {}).status == "optimal"
    monkeypatch.setattr(budget, "DEFAULT_MAX_DP_WORK", 100)
    result = caches._solve_uncached(problem, "dp", {})
    assert result.status == "error" and "DP kernel steps" in result.reason and "\n" not in result.reason


def _paper_mixed(seed: int) -> dict:
    """A random paper-format DAG whose nodes are free or not (zero/positive latencies), some in color classes."""
    rng = random.Random(seed)
    n = rng.randint(1, 9)
    nodes = []
    for i in range(n):
        node = {"id": i, "supportedOnFpga": 1, "isBackwardNode": 0, "size": rng.choice([0.0, 10.0])}
        node["cpuLatency"] = rng.choice([0.0, 0.0, 1.0])
        node["fpgaLatency"] = rng.choice([0.0, 0.0, 0.5])
        if rng.random() < 0.2:
            node["colorClass"] = rng.randint(0, 2)
        nodes.append(node)
    edges = [
        {"sourceId": a, "destId": b, "cost": rng.choice([0.0, 0.5])}
        for a in range(n)
        for b in range(a + 1, n)
        if rng.random() < rng.random()
    ]
    return {"maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 1e12, "nodes": nodes, "edges": edges}


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**9))
def test_ideal_floor_never_exceeds_the_dps_lattice(seed):
    # the raw refusal of dp/memory-aware (check_ideals_raw) is sound: its floor is at most the ideals the DP
    # enumerates (contract + reduce_groups + enumerate_ideals, the code of solve_dp), on graphs with free nodes
    from placement.exact.ideals import contract, enumerate_ideals, reduce_groups

    data = _paper_mixed(seed)
    try:
        problem = parse_problem(json.dumps(data), "g.json")
    except Exception:  # noqa: BLE001 - an invalid random graph (e.g. a class cycle): nothing to compare
        return
    scan = budget._paper_scan(data)
    found = budget.ideal_floor(scan.count, scan.pairs, scan.fixed, HUGE)
    groups, _ = reduce_groups(problem.graph, contract(problem.graph))
    lattice = enumerate_ideals(groups, 10**6)
    if found is not None:
        assert found[0] <= lattice.count
    if all(scan.fixed) and found is not None:  # nothing merges: a level's groups are an antichain of the DP's
        assert 2 ** found[1] <= lattice.count


def test_ideal_floor_of_a_chain_and_an_antichain():
    assert budget.ideal_floor(5, [(i, i + 1) for i in range(4)], [True] * 5, HUGE) == (6, 1)
    assert budget.ideal_floor(5, [], [True] * 5, HUGE) == (32, 5)
    assert budget.ideal_floor(5, [], [False] * 5, HUGE) == (1, 0)  # free nodes may all merge
    assert budget.ideal_floor(2, [(0, 1), (1, 0)], [True] * 2, HUGE) is None  # a cycle: contraction merges it


def _antichain(n: int, backward: bool = False) -> dict:
    data = _chain(n)
    data["edges"] = []
    if backward:
        data["nodes"][-1]["isBackwardNode"] = 1
    return data


@pytest.mark.parametrize("method", ["dp", "memory-aware"])
def test_too_many_ideals_are_refused_before_the_graph_is_built(tmp_path, capsys, monkeypatch, method):
    path = tmp_path / "antichain.json"
    path.write_text(json.dumps(_antichain(8)))  # 2^8 = 256 ideals
    real = cli.graph_from_dict

    def never(*args, **kwargs):
        raise AssertionError("the graph was built before the raw estimate refused it")

    monkeypatch.setattr(cli, "graph_from_dict", never)
    assert cli.main(["solve", str(path), "--method", method, "--max-ideals", "100"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "8 of its 8 groups" in err and "2^8" in err and "cap of 100" in err
    monkeypatch.setattr(cli, "graph_from_dict", real)
    assert cli.main(["solve", str(path), "--method", method, "--max-ideals", "300"]) == 0
    assert "status: optimal" in capsys.readouterr().out


def test_backward_nodes_leave_the_ideal_count_to_the_dp(tmp_path):
    # contraction reorders backward work: the raw order is not the DP's, so the raw check says nothing
    scan = budget._paper_scan(_antichain(8, backward=True))
    assert scan.backward
    budget.check_ideals_raw(scan, 1)
    with pytest.raises(budget.TooMuchSolveWorkError, match="2\\^8"):
        budget.check_ideals_raw(budget._paper_scan(_antichain(8)), 100)


def test_a_refusal_does_not_import_the_perf_models():
    # predict/plan register their flags only when named (placement.perf takes ~0.05 s to import)
    code = (
        "import sys\nfrom placement import cli\n"
        "assert cli.main(['solve', '/missing/graph.json']) == 2\n"
        "assert not any(m.startswith('placement.perf') for m in sys.modules), sorted(sys.modules)\n"
        "cli.main(['--deadline', '60', 'predict', '--gpu', 'H100', '--gpus', 'x'])\n"  # argparse: SystemExit(2)
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]  # the real predict parser refused --gpus x
    assert "missing" in done.stderr and "argument --gpus" in done.stderr


def test_subcommand_is_found_past_the_global_options():
    assert cli._subcommand(["--deadline", "5", "solve", "g.json"]) == "solve"
    assert cli._subcommand(["-h"]) is None
    assert cli._subcommand(["plan", "--model", "x"]) == "plan"
    assert "predict" in cli.build_parser("solve")._subparsers._group_actions[0].choices  # a stub, same name


def test_an_untimed_integer_program_past_its_cap_is_refused_with_the_way_out(tmp_path, capsys):
    # ip's default is no time limit: an exact solve of a program past DEFAULT_MAX_UNTIMED_IP_SIZE could run for hours
    n = budget.DEFAULT_MAX_UNTIMED_IP_SIZE // 6 + 1  # (n + n - 1) x 3 devices > the cap, far under max_ip_size
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(_chain(n)))
    assert cli.main(["solve", str(path), "--method", "ip", "--no-warm-start"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no time limit" in err and "--time-limit" in err and err.startswith("error: ip:")
    with pytest.raises(budget.TooMuchSolveWorkError):  # the same through the library's estimate
        budget.check_solve_work("ip", n, n - 1, 3, {"warm_start": False})
    budget.check_solve_work("ip", n, n - 1, 3, {"warm_start": False, "time_limit": 1.0})  # a time limit lifts it
    budget.check_solve_work("ip", n, n - 1, 3, {"warm_start": False}, max_ip_size=1e9)  # so does an explicit cap
    budget.check_solve_work("greedy-latency", n, n - 1, 3)  # not an integer program: no time limit needed


def test_compare_skips_each_method_past_its_cap_in_one_line(tmp_path, capsys, monkeypatch):
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(_chain(30)))
    monkeypatch.setattr(budget, "DEFAULT_MAX_DP_WORK", 100)  # every DP (and DP-started) method is past it
    assert cli.main(["compare", str(path), "--time-limit", "2"]) == 0
    out, err = capsys.readouterr()
    skipped = {line.split()[1] for line in err.splitlines()}
    assert skipped == {"dp", "ip", "ip-noncontiguous", "pipedream", "local-search"}, err
    assert all(line.startswith("compare: ") and "DP kernel steps" in line for line in err.splitlines())
    table = {line.split()[0]: line for line in out.splitlines()[2:]}
    assert "error" in table["dp"] and "DP kernel steps" in table["dp"]  # the row says why
    assert "feasible" in table["one-accelerator"]  # the methods under the caps still run


def test_compare_refuses_in_one_line_when_every_method_is_past_its_cap(tmp_path, capsys, monkeypatch):
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(_chain(30)))
    monkeypatch.setattr(budget, "DEFAULT_MAX_DP_WORK", 100)
    monkeypatch.setattr(budget, "DEFAULT_MAX_IP_SIZE", 10)

    def never(*args, **kwargs):
        raise AssertionError("the graph was built before the estimates refused it")

    monkeypatch.setattr(cli, "graph_from_dict", never)
    # the default lists hold a linear method (one-accelerator, greedy-latency): compare of two capped methods
    monkeypatch.setattr(cli, "_compared_methods", lambda objective, model: ["dp", "ip"])
    assert cli.main(["compare", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: compare: every method is estimated past its cap; dp:")


def test_order_fast_path_refuses_only_a_dag_numbered_in_order():
    # check_order_shape's fast path (no levels): every edge u < v proves the order acyclic
    n = 600
    dense = [(a, b) for a in range(n) for b in range(a + 1, n)]
    with pytest.raises(TooMuchWorkError, match="180,300 stages") as fast:
        check_order_shape(n, dense, [True] * n, HUGE, 100_000)
    with pytest.raises(TooMuchWorkError, match="180,300 stages") as slow:  # numbered backwards: the full check
        check_order_shape(n, [(n - 1 - a, n - 1 - b) for a, b in dense], [True] * n, HUGE, 100_000)
    assert "antichain" not in str(fast.value) and "antichain of 1" in str(slow.value)
    cycle = [(i, i + 1) for i in range(n - 1)] + [(n - 1, 0)]  # a cycle: nothing estimated, as before
    assert check_order_shape(n, cycle, [True] * n, HUGE, 100_000) is None
