"""Independent evaluator of a multidimensional plan, exactly as Piper's README states.

For a stage S on d x t devices of kind K with chosen options, and s = the sum of d over this
stage and every later stage:

* ``y = ceil(s / d)`` microbatches in flight;
* ``memory = sum_{v in S} (a_v * y + b_v)`` must be ``<= K.memory``;
* edge bytes ``E = sum_{v in S}`` of ``2 * (cost(u, v) + syncFw_v[u])`` for every edge (u, v) with u
  outside S and ``2 * (cost(v, u) + syncBw_v[u])`` for every edge (v, u) with u outside S;
* resync bytes ``R = sum_{v in S} 4 * (d - 1) * w_v / d / N``;
* compute ``C = sum_{v in S} p_v / K.speed``;
* stage time per sample ``(E / d + R) / K.bytes_per_ms + C / d`` (ms; bandwidth in bytes/s, times in ms).

The plan's time per sample (TPS) is the largest stage time. Rules checked: the stages partition the
nodes, each prefix union is down-closed (an ideal), every node of a stage has options for its t, the
option names exist, d divides N, the sum of d is at most N, each kind's devices used (sum of d*t) are
at most its count, memory fits. This module shares no code with the solver (:mod:`.dp`).
"""

from __future__ import annotations

from .model import MultiProblem, Plan, PlanEvaluation, StageCost


def evaluate_plan(problem: MultiProblem, plan: Plan) -> PlanEvaluation:
    """Evaluate ``plan`` on ``problem``; rule violations are listed (``feasible`` False), never raised."""
    violations: list[str] = []
    n = len(problem.nodes)
    preds: dict[int, list] = {v: [] for v in range(n)}
    succs: dict[int, list] = {v: [] for v in range(n)}
    for e in problem.edges:
        preds[e.target].append((e.source, e.cost))
        succs[e.source].append((e.target, e.cost))
    N = problem.microbatches
    kinds = {k.name: k for k in problem.kinds}
    default_kind = problem.kinds[0].name if len(problem.kinds) == 1 else None
    placed: set[int] = set()
    for i, stage in enumerate(plan.stages):
        for v in stage.nodes:
            if not 0 <= v < n:
                violations.append(f"stage {i}: unknown node {v}")
            elif v in placed:
                violations.append(f"stage {i}: node {v} is in two stages")
            placed.add(v)
        for v in stage.nodes:
            for u, _ in preds.get(v, []):
                if u not in placed:
                    violations.append(f"stage {i}: node {v} has predecessor {u} in a later stage (not an ideal)")
    missing = sorted(set(range(n)) - placed)
    if missing:
        violations.append(f"nodes {missing[:10]} are in no stage")
    suffix = 0
    costs: list[StageCost] = [None] * len(plan.stages)  # type: ignore[list-item]
    used = {name: 0 for name in kinds}
    total_d = sum(st.d for st in plan.stages)
    if total_d > N:
        violations.append(f"sum of data-parallel degrees {total_d} exceeds N = {N}")
    for i in range(len(plan.stages) - 1, -1, -1):
        stage = plan.stages[i]
        kind_name = stage.kind or default_kind
        if kind_name not in kinds:
            violations.append(f"stage {i}: unknown device kind {stage.kind!r}")
            kind_name = problem.kinds[0].name
        kind = kinds[kind_name]
        d, t = stage.d, stage.t
        used[kind_name] += d * t
        if N % d:
            violations.append(f"stage {i}: d = {d} does not divide N = {N}")
        suffix += d
        y = -(-suffix // d)
        members = set(stage.nodes)
        memory = edge = resync = compute = 0.0
        for v, name in zip(stage.nodes, stage.options):
            if not 0 <= v < n:
                continue
            node = problem.nodes[v]
            options = {o.name: o for o in node.options_for(t)}
            if not options:
                violations.append(f"stage {i}: node {v} has no option for t = {t}")
                continue
            if name not in options:
                violations.append(f"stage {i}: node {v} has no option {name!r} at t = {t}")
                continue
            o = options[name]
            memory += o.memory_a * y + o.memory_b
            for u, cost in preds[v]:
                if u not in members:
                    edge += 2 * (cost + o.sync_from(u))
            for u, cost in succs[v]:
                if u not in members:
                    edge += 2 * (cost + o.sync_to(u))
            resync += 4 * (d - 1) * o.parameters / d / N
            compute += o.time / kind.speed
        time = (edge / d + resync) / kind.bytes_per_ms + compute / d
        costs[i] = StageCost(y, memory, kind.memory, edge, resync, compute, time)
        if memory > kind.memory:
            violations.append(f"stage {i}: memory {memory:.4g} B exceeds the cap {kind.memory:.4g} B")
    for name, count in used.items():
        if count > kinds[name].count:
            violations.append(f"kind {name!r}: {count} devices used, only {kinds[name].count} available")
    tps = max((c.time for c in costs), default=0.0)
    return PlanEvaluation(tuple(costs), tps, tuple(sorted(used.items())), not violations, tuple(violations))
