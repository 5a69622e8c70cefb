"""Benchmark: the transformer performance model against published Megatron-LM runs.

    python scripts/bench_calibration.py [--breakdown] [--markdown]

For each run of ``sample_graphs/calibration/megatron_a100_2021.json`` (Narayanan et al. 2021, Table 1) it prints
the layout assumed, the predicted and published iteration time and TFLOP/s per GPU, their ratio, and the memory
of the most loaded GPU by part; then the calibration band (max and mean |ratio - 1|) and the time per predict
call. ``--breakdown`` adds the iteration time by cause.
"""

from __future__ import annotations

import argparse
import time

from placement.perf import MODELS, Cluster, Layout, accelerator, calibration_band, calibration_results, predict

GIB = 2.0**30


def _table(rows: list[list[str]], header: list[str], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return "\n".join(fmt.format(*r) for r in [header, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--breakdown", action="store_true", help="also print the iteration time by cause")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = parser.parse_args()
    results = calibration_results()
    rows = []
    for r in results:
        lay = r.row.layout
        pred = predict(r.row.model, r.row.cluster, lay, with_band=False)
        mem = pred.memory
        rows.append([
            r.row.label.removeprefix("gpt-"), f"{lay.tensor}/{lay.pipeline}/{lay.data}/{lay.virtual_stages}",
            str(r.row.cluster.gpus), f"{r.row.measured_seconds:.2f}", f"{r.predicted_seconds:.2f}",
            f"{r.ratio:.3f}", f"{r.row.measured_tflops:.0f}", f"{r.predicted_tflops:.1f}",
            f"{mem.weights / GIB:.1f}", f"{mem.gradients / GIB:.1f}", f"{mem.optimizer_state / GIB:.1f}",
            f"{(mem.activations + mem.output_layer) / GIB:.1f}", f"{mem.total / GIB:.1f}", "yes" if pred.fits else "NO",
        ])  # fmt: skip
    header = ["params (B)", "t/p/d/v", "GPUs", "published s", "predicted s", "ratio", "published TF/s",
              "predicted TF/s", "weights GiB", "grads GiB", "optim GiB", "activ. GiB", "total GiB", "fits"]  # fmt: skip
    print(_table(rows, header, args.markdown))
    band = calibration_band()
    assert band is not None
    print(f"\ncalibration band: max |ratio-1| = {band.max_abs_error:.1%}, mean = {band.mean_abs_error:.1%} "
          f"over {band.rows} runs")  # fmt: skip
    if args.breakdown:
        parts = None
        brow = []
        for r in results:
            pred = predict(r.row.model, r.row.cluster, r.row.layout, with_band=False)
            d = pred.time.as_dict()
            parts = list(d)
            brow.append([r.row.label.removeprefix("gpt-"), *(f"{v / pred.iteration_seconds:.1%}" for v in d.values())])
        assert parts is not None
        print()
        print(_table(brow, ["params (B)", *parts], args.markdown))
    model = MODELS["gpt3-175b"]
    cluster = Cluster(accelerator("H100"), 16384)
    layout = Layout(tensor=8, pipeline=8, data=256, virtual_stages=3, global_batch=4096, sequence_parallel=True,
                    zero_stage=1, recompute="selective")  # fmt: skip
    predict(model, cluster, layout)
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        predict(model, cluster, layout)
    per = (time.perf_counter() - start) / n
    print(f"\npredict(): {per * 1e6:.0f} us per call (GPT-3 175B on 16,384 H100, {n} calls)")


if __name__ == "__main__":
    main()
