"""Benchmark: the performance model against training runs measured on real devices with ``measure``.

    PYTHONPATH=. python scripts/bench_device_runs.py [--markdown]

Re-predicts every run of the measured-run files the project ships (``sample_graphs/calibration/*/``) from the
device profile measured beside them, with the framework physics of what ran (plain PyTorch eager:
:mod:`placement.perf.eager`), and prints device, model, parameters, predicted and measured seconds per
iteration, their ratio, and predicted over measured peak memory; then the band of the held-out runs (those
not in the calibration script's set).
"""

from __future__ import annotations

import argparse
import datetime

from placement.perf.device_runs import RUN_FILES, RUNS_DIR, DeviceRunRow, device_run_rows


def rows_table(rows: list[DeviceRunRow], markdown: bool) -> str:
    """The table of runs (Markdown or aligned text)."""
    header = ["device", "model", "parameters", "set", "predicted s", "measured s", "ratio", "memory pred/meas"]
    body = [
        [r.device, r.name, f"{r.parameters / 1e6:.0f}M", "held out" if r.held_out else "calibration",
         f"{r.predicted_seconds:.4f}", f"{r.measured_seconds:.4f}", f"{r.ratio:.3f}", f"{r.memory_ratio:.2f}"]
        for r in rows
    ]  # fmt: skip
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body])
    widths = [max(len(x) for x in col) for col in zip(header, *body)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return "\n".join(fmt.format(*r) for r in [header, *body])


def band(rows: list[DeviceRunRow]) -> tuple[float, float, int, int]:
    """(max, mean) of |ratio - 1| over the held-out rows, how many are within 10 % and how many there are."""
    errors = [abs(r.ratio - 1.0) for r in rows if r.held_out]
    return max(errors), sum(errors) / len(errors), sum(e <= 0.10 for e in errors), len(errors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    rows = [row for name in RUN_FILES for row in device_run_rows(RUNS_DIR / name)]
    print(f"`PYTHONPATH=. python scripts/bench_device_runs.py --markdown` ({datetime.date.today().isoformat()})\n")
    print(rows_table(rows, args.markdown))
    worst, mean, within, count = band(rows)
    print(f"\nheld-out runs: worst |ratio - 1| {worst:.1%}, mean {mean:.1%}, {within} of {count} within 10 %")


if __name__ == "__main__":
    main()
