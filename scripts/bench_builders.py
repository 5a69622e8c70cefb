"""Benchmark: build transformers / CNNs priced by the perf model's kernels and solve them exactly with the DP.

For each configuration prints nodes, ideals, ideal pairs (what the DP searches), the optimal
time per sample (ms) and the DP's wall-clock seconds (best of ``--repeat`` runs, after one
warm-up solve that compiles or loads the numba kernel, reported separately). The acceptance
target is a 12-layer transformer solved exactly in under 5 s.

Usage: ``python scripts/bench_builders.py [--repeat N] [--accelerators K] [--cpus L] [--kind H100]``
"""

from __future__ import annotations

import argparse
import time

from placement import count_pairs, evaluate, solve_dp
from placement.modelling.builders import CnnConfig, build_cnn, build_transformer
from placement.perf.transformer import MODELS, TransformerSpec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--accelerators", type=int, default=4)
    parser.add_argument("--cpus", type=int, default=1)
    parser.add_argument("--kind", default="H100", help="catalogue kind for the latencies (H100, A100, ...)")
    args = parser.parse_args()
    devices = dict(kinds={args.kind: args.accelerators}, cpus=args.cpus)
    gpt2 = TransformerSpec(layers=12, hidden=768, heads=12, seq_length=1024, vocab=50257, name="GPT-12 h768")

    started = time.perf_counter()
    solve_dp(build_transformer(gpt2.with_changes(layers=1), {args.kind: 1}, cpus=0))
    print(f"warm-up solve (numba compile or cache load): {time.perf_counter() - started:.2f} s")
    print(f"devices: {args.accelerators} x {args.kind} + {args.cpus} CPU core(s); times in ms per sample")

    cases = []
    llama = MODELS["llama3-8b"].with_changes(layers=12, seq_length=1024, name="Llama-12 h4096")
    for spec in (gpt2, llama):
        for granularity in ("operator", "layer"):
            for training in (False, True):
                label = f"{spec.name} {granularity}{' training' if training else ''}"
                cases.append(
                    (
                        label,
                        lambda c=spec, g=granularity, t=training: build_transformer(
                            c, granularity=g, training=t, **devices
                        ),
                    )
                )
    big = TransformerSpec(layers=48, hidden=1600, heads=25, seq_length=1024, vocab=50257)
    cases.append(
        (
            "GPT-48 h1600 operator training",
            lambda: build_transformer(big, granularity="operator", training=True, **devices),
        )
    )
    for granularity in ("operator", "layer"):
        cases.append(
            (
                f"ResNet-50 {granularity}",
                lambda g=granularity: build_cnn(CnnConfig(), granularity=g, **devices),
            )
        )

    header = f"{'model':34} {'nodes':>6} {'ideals':>7} {'pairs':>9} {'build s':>8} {'opt ms':>10} {'DP s':>7} status"
    print(header)
    print("-" * len(header))
    for label, build in cases:
        started = time.perf_counter()
        problem = build()
        build_seconds = time.perf_counter() - started
        ideals, pairs = count_pairs(problem)
        best = None
        for _ in range(max(1, args.repeat)):
            result = solve_dp(problem)
            best = result.seconds if best is None else min(best, result.seconds)
        check = evaluate(problem, result.placement).max_load if result.placement else float("nan")
        status = result.status if abs(check - result.objective) <= 1e-9 * max(1.0, check) else "MISMATCH"
        print(
            f"{label:34} {len(problem.graph.nodes):>6} {ideals:>7,} {pairs:>9,} {build_seconds:>8.3f} "
            f"{result.objective:>10.4f} {best:>7.3f} {status}"
        )


if __name__ == "__main__":
    main()
