"""placement/exact/dp.py's progress (issue 27.2): reported from the first kernel run (one chain of ideals) on.

That run took 14 s without a single report on a 5,000-node chain (measured 2026-11-25), and a report is the
only point where a caller (the CLI's progress line, the app's worker, a deadline) can see or stop the DP.
"""

from __future__ import annotations

import json

import pytest

from placement.exact import dp
from placement.io import parse_problem


def _chain(n: int) -> dict:
    nodes = [
        {"id": i, "supportedOnFpga": 1, "cpuLatency": 1.0, "fpgaLatency": 0.5 + i % 3, "isBackwardNode": 0}
        for i in range(n)
    ]
    edges = [{"sourceId": i, "destId": i + 1, "cost": 0.1} for i in range(n - 1)]
    return {"maxFPGAs": 3, "maxCPUs": 1, "maxSizePerFPGA": 1e9, "nodes": nodes, "edges": edges}


@pytest.mark.parametrize("tie_break", [True, False])
def test_progress_comes_during_the_first_kernel_run(monkeypatch, tie_break):
    problem = parse_problem(json.dumps(_chain(300)), "chain.json")
    events: list[tuple] = []
    real = dp.run

    def spied(*args, **kwargs):  # every kernel run of the driver, in order
        events.append(("run", kwargs.get("progress") is not None))
        return real(*args, **kwargs)

    monkeypatch.setattr(dp, "run", spied)
    result = dp.solve_dp(problem, tie_break=tie_break, progress=lambda done, total: events.append((done, total)))
    assert result.status == "optimal"
    runs = [i for i, event in enumerate(events) if event[0] == "run"]
    assert len(runs) >= 2 and events[runs[0]] == ("run", True)  # the chain's run has a callback
    during_first = [e for e in events[runs[0] + 1 : runs[1]] if e[0] != "run"]
    assert len(during_first) >= 10, events[:20]  # about every 1 % of its 300 ideals
    reports = [e for e in events if e[0] != "run"]
    assert len({total for _, total in reports}) == 1  # one total for the whole solve
    assert all(a[0] <= b[0] <= b[1] for a, b in zip(reports, reports[1:]))  # never backwards, never past it
    assert during_first[-1][0] <= 301 < reports[-1][0]  # the chain's share, then the passes over the lattice
    if tie_break:
        assert reports[-1][0] == reports[-1][1]  # the tie-break pass ends at the total
