"""Measure the app's live path: a slider change -> re-solve -> evaluate -> redraw.

For every shared layer graph (``sample_graphs/*/layer/*.json``) this times, per slider
change, exactly what the Devices and Placement pages do after a widget moves:

1. build the devices from the widget values (``Devices.with_kind`` / ``with_changes``);
2. solve with the DP (a new device setting is a cache miss, so the solver really runs);
3. evaluate the placement (the numbers shown);
4. build the figures (partitioned graph with the cached layout, load and memory bars) and
   serialise them to JSON as ``st.plotly_chart`` does.

The first solve of the process (numba compiles or loads its cache) is reported separately.
With ``--apptest`` it also times full AppTest reruns of the Devices page after a slider change
(the whole page script, server side, including the cached solve).

Usage: ``python scripts/bench_live.py [--apptest] [--repeat N]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import placement
from placement import viz

ROOT = Path(__file__).resolve().parent.parent


def slider_steps(devices: placement.Devices):
    """A sequence of single-widget changes like a user dragging the Devices sliders."""
    kind = devices.accelerators[0]
    steps = []
    for count in (1, 2, 3, 4, 5, 6, 7, 8, 10, 12):
        steps.append((f"accelerators={count}", devices.with_kind(kind.name, count=count)))
    for cpus in (0, 2, 4):
        steps.append((f"cpus={cpus}", devices.with_changes(cpus=cpus)))
    for factor in (0.5, 0.25, 2.0):
        steps.append((f"bandwidth x{factor:g}", devices.with_changes(bandwidth=factor)))
    for factor in (0.5, 2.0):
        steps.append((f"speed x{factor:g}", devices.with_kind(kind.name, speed=factor)))
    if kind.memory != float("inf"):
        for factor in (0.5, 0.25, 0.1):
            steps.append((f"memory x{factor:g}", devices.with_kind(kind.name, memory=kind.memory * factor)))
    steps.append(("overlap on", devices.with_changes(overlap=True)))
    return steps


def live_step(graph: placement.Graph, devices: placement.Devices, layout) -> dict[str, float]:
    """One slider change, timed phase by phase (seconds)."""
    times = {}
    start = time.perf_counter()
    problem = placement.Problem(graph, devices)
    result = placement.solve(problem, "dp")
    times["solve"] = time.perf_counter() - start
    mark = time.perf_counter()
    figures = []
    if result.ok:
        evaluation = placement.evaluate(problem, result.placement)
        times["evaluate"] = time.perf_counter() - mark
        mark = time.perf_counter()
        order = [stage.device for stage in result.placement.stages]
        slots = order + [s for s in devices.slots() if s not in order]
        figures = [
            viz.graph_figure(graph, device_of=result.placement.device_of, layout=layout, device_order=order),
            viz.load_figure(evaluation, slots=slots, overlap=devices.overlap),
            viz.memory_figure(evaluation, slots=slots),
        ]
    else:
        times["evaluate"] = 0.0
    for figure in figures:
        figure.to_json()
    times["figures"] = time.perf_counter() - mark
    times["total"] = time.perf_counter() - start
    times["status"] = result.status
    return times


def bench_engine(repeat: int) -> list[dict]:
    files = sorted(ROOT.glob("sample_graphs/*/layer/*.json"))
    first = time.perf_counter()
    placement.solve_dp(placement.load_problem(files[0]))
    first_solve = time.perf_counter() - first
    print(f"first solve of the process (numba compile or cache load): {first_solve:.3f} s\n")
    rows = []
    for path in files:
        problem = placement.load_problem(path)
        layout = viz.dag_layout(problem.graph)
        totals, solves, worst_step = [], [], ("", 0.0)
        statuses = {}
        for _ in range(repeat):
            for label, devices in slider_steps(problem.devices):
                times = live_step(problem.graph, devices, layout)
                totals.append(times["total"])
                solves.append(times["solve"])
                statuses[times["status"]] = statuses.get(times["status"], 0) + 1
                if times["total"] > worst_step[1]:
                    worst_step = (label, times["total"])
        rows.append(
            {
                "graph": str(path.relative_to(ROOT / "sample_graphs").with_suffix("")),
                "nodes": len(problem.graph.nodes),
                "changes": len(totals),
                "median": statistics.median(totals),
                "p95": sorted(totals)[int(0.95 * (len(totals) - 1))],
                "max": max(totals),
                "worst": worst_step[0],
                "solve max": max(solves),
                "statuses": ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())),
            }
        )
    header = (
        f"{'graph':36} {'nodes':>5} {'changes':>7} {'median s':>9} {'p95 s':>7} {'max s':>7} "
        f"{'solve max':>9}  worst change / statuses"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['graph']:36} {row['nodes']:>5} {row['changes']:>7} {row['median']:>9.4f} {row['p95']:>7.4f} "
            f"{row['max']:>7.4f} {row['solve max']:>9.4f}  {row['worst']} / {row['statuses']}"
        )
    return rows


def bench_apptest() -> None:
    """Full server-side reruns of the Devices page after an accelerator-count slider change."""
    from streamlit.testing.v1 import AppTest

    from ui import state
    from ui.navigation import page_file

    print("\nAppTest: Devices page rerun after a slider change (whole page script, server side)")
    header = f"{'graph':36} {'load s':>7} {'median s':>9} {'max s':>7}"
    print(header)
    print("-" * len(header))
    for path in sorted(ROOT.glob("sample_graphs/*/layer/*.json")):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.run()
        label = state.sample_label(path)
        at.switch_page(page_file("Graph"))
        at.run()
        started = time.perf_counter()
        at.selectbox(key="graph_sample").set_value(label).run()
        load = time.perf_counter() - started
        at.switch_page(page_file("Devices"))
        at.run()
        times = []
        for count in (2, 3, 4, 5, 7, 8):
            started = time.perf_counter()
            at.slider(key="dev_count").set_value(count).run()
            times.append(time.perf_counter() - started)
            if at.exception:
                raise RuntimeError(at.exception[0].message)
        print(f"{label:36} {load:>7.3f} {statistics.median(times):>9.4f} {max(times):>7.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="passes over the slider changes per graph")
    parser.add_argument("--apptest", action="store_true", help="also time full AppTest page reruns")
    args = parser.parse_args()
    bench_engine(args.repeat)
    if args.apptest:
        bench_apptest()


if __name__ == "__main__":
    main()
