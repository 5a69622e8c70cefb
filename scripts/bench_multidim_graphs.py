"""Benchmark: the exact multidimensional planner on our own graphs (options from ``options_from_graph``).

Builder graphs (GPT, ResNet-50) and a paper-format graph, each in one process after the other; "convert s" is
the option generation, "solve s" the planner's own seconds, "CPU s" the process CPU time of both. Every plan is
re-checked by the independent evaluator ("evaluated" must equal "TPS"). Usage::

    python -m scripts.bench_multidim_graphs [--cases gpt-6.7b-64,...]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

GiB = 2**30
ROOT = Path(__file__).resolve().parent.parent


def _gpt(layers: int, hidden: int, heads: int):
    from placement.modelling.builders import build_transformer
    from placement.perf.transformer import TransformerSpec

    spec = TransformerSpec(layers=layers, hidden=hidden, heads=heads, seq_length=2048, vocab=50257)
    return build_transformer(spec)


def _resnet():
    from placement.modelling.builders import CnnConfig, build_cnn

    return build_cnn(CnnConfig(batch=32))


def _bert24():
    from placement.io import load_problem

    return load_problem(ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_training.json")


#: name -> (what, graph maker, devices, memory bytes, N)
CASES = {
    "gpt-1.3b-64": ("GPT 24x2048 (1.3B), seq 2048, A100 80 GiB", lambda: _gpt(24, 2048, 16), 64, 80 * GiB, 512),
    "gpt-6.7b-64": ("GPT 32x4096 (6.7B), seq 2048, A100 16 GiB", lambda: _gpt(32, 4096, 32), 64, 16 * GiB, 512),
    "gpt-39b-64": ("GPT 48x8192 (39B), seq 2048, A100 80 GiB", lambda: _gpt(48, 8192, 64), 64, 80 * GiB, 512),
    "gpt-39b-512": ("GPT 48x8192 (39B), seq 2048, A100 80 GiB", lambda: _gpt(48, 8192, 64), 512, 80 * GiB, 512),
    "resnet50-64": ("ResNet-50 builder, batch 32, A100 80 GiB", _resnet, 64, 80 * GiB, 512),
    "bert24-paper-64": ("bert24_training.json (paper format)", _bert24, 64, None, 64),
}


def _plan_text(plan) -> str:
    parts = []
    for s in plan.stages:
        recomputed = sum("recomp" in o for o in s.options)
        parts.append(f"[{s.nodes[0]}..{s.nodes[-1]}] {s.d}x{s.t}" + (f" r{recomputed}" if recomputed else ""))
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    from placement.multidim.convert import options_from_graph
    from placement.multidim.dp import solve_multidim
    from placement.multidim.evaluate import evaluate_plan

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args(argv)
    print(
        "| case | graph | devices | memory GiB | N | nodes | status | TPS (ms) | evaluated (ms) | plan: [nodes] d x t (rN: N recomputed) | convert s | solve s | CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.cases.split(","):
        what, make, devices, memory, N = CASES[name]
        source = make()
        cpu, start = time.process_time(), time.perf_counter()
        problem = options_from_graph(source, devices=devices, memory=memory, microbatches=N)
        converted = time.perf_counter() - start
        result = solve_multidim(problem)
        cpu = time.process_time() - cpu
        if result.plan is not None:
            ev = evaluate_plan(problem, result.plan)
            evaluated = f"{ev.time_per_sample:.6g}" + ("" if ev.feasible else " (REJECTED)")
            plan = _plan_text(result.plan)
        else:
            evaluated, plan = "-", "-"
        print(
            f"| {name} | {what} | {devices} | {problem.kinds[0].memory / GiB:.4g} | {N} | {len(problem.nodes)} | "
            f"{result.status} | {result.time_per_sample:.6g} | {evaluated} | {plan} | {converted:.2f} | "
            f"{result.seconds:.2f} | {cpu:.2f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
