"""Seconds from opening the Tradeoffs page to its first chart, on the Inception samples (issue 26 item 9).

For each sample this loads the app in Streamlit's AppTest (server side: the whole page script,
no browser), picks the sample on the Graph page, then times the switch to the Tradeoffs page
until a chart is drawn. Each measurement runs in its own process group (killed afterwards, so
that a page's process-pool workers never outlive it). ``--root`` measures another checkout
(e.g. the code before a change, unpacked with ``git archive``) in the same run; ``--press-run``
also presses "Run the sweeps" when opening draws no chart (what a user of that code had to do),
stopping at ``--cap`` seconds.

Usage::

    python scripts/bench_tradeoffs.py [--root DIR ...] [--press-run] [--cap 30]

Prints one table row per (checkout, sample): ideals, what was drawn, seconds to the first chart.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ("inception_wide_inference", "inception_v3_inference", "inception_v3_training")


def measure_one(root: Path, sample: str, press_run: bool, cap: float) -> dict:
    """In this process (``root`` on the path): time the Tradeoffs page's first chart on ``sample``."""
    from streamlit.testing.v1 import AppTest

    import placement
    from ui.navigation import page_file

    problem = placement.load_problem(root / "sample_graphs" / "ours" / f"{sample}.json")
    ideals = placement.count_ideals(problem.graph, 10**7)
    at = AppTest.from_file(str(root / "app.py"), default_timeout=max(cap, 120))
    at.run()
    at.switch_page(page_file("Graph"))
    at.run()
    label = next(o for o in at.selectbox(key="graph_sample").options if o.endswith(sample))
    at.selectbox(key="graph_sample").set_value(label).run()
    started = time.perf_counter()
    at.switch_page(page_file("Tradeoffs"))
    drawn = "chart"
    try:
        at.run(timeout=cap)
        if not at.get("plotly_chart"):
            drawn = "no chart (waits for Run)"
            if press_run:
                at.button(key="to_run").click()
                at.run(timeout=max(cap - (time.perf_counter() - started), 1.0))
                drawn = "chart after Run" if at.get("plotly_chart") else "no chart after Run"
    except RuntimeError as exc:  # AppTest's timeout
        if "timed out" not in str(exc):
            raise
        return {"ideals": ideals, "drawn": f"none within {cap:.0f} s", "seconds": None}
    seconds = time.perf_counter() - started
    if at.exception:
        return {"ideals": ideals, "drawn": f"error: {at.exception[0].message[:60]}", "seconds": seconds}
    keys = [getattr(c, "key", None) or (c.proto.id or "")[-24:] for c in at.get("plotly_chart")]
    return {"ideals": ideals, "drawn": drawn + (f" ({', '.join(keys)})" if keys else ""), "seconds": seconds}


def run_child(root: Path, sample: str, press_run: bool, cap: float) -> dict:
    """One measurement in a new process group (killed when done: no worker outlives it)."""
    args = [sys.executable, str(Path(__file__).resolve()), "--child", sample, "--cap", str(cap), "--root", str(root)]
    args += ["--press-run"] if press_run else []
    env = {**os.environ, "PYTHONPATH": str(root), "STREAMLIT_LOGGER_LEVEL": "error"}
    child = subprocess.Popen(args, cwd=root, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, _ = child.communicate(timeout=cap + 300)
    except subprocess.TimeoutExpired:
        out = ""
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()
    lines = [line for line in (out or "").splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"ideals": None, "drawn": "child failed", "seconds": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", action="append", type=Path, help="checkouts to measure (default: this one)")
    parser.add_argument("--press-run", action="store_true", help="press Run when opening draws no chart")
    parser.add_argument("--cap", type=float, default=30.0, help="seconds to wait for a chart (default 30)")
    parser.add_argument("--samples", nargs="*", default=list(SAMPLES))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    roots = [r.resolve() for r in (args.root or [ROOT])]
    if args.child:
        print(json.dumps(measure_one(roots[0], args.child, args.press_run, args.cap)), flush=True)
        os._exit(0)  # at once: a page's solve still running in this process must not delay the exit
    print(f"{'checkout':<28} {'sample':<26} {'ideals':>7} {'s to first chart':>17}  drawn")
    for root in roots:
        for sample in args.samples:
            row = run_child(root, sample, args.press_run, args.cap)
            seconds = f"{row['seconds']:.2f}" if row["seconds"] is not None else f"> {args.cap:.0f}"
            print(f"{str(root)[-28:]:<28} {sample:<26} {row['ideals'] or '':>7} {seconds:>17}  {row['drawn']}")


if __name__ == "__main__":
    main()
