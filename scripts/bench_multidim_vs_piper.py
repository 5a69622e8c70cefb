"""Piper's own C++ planner and ours, side by side, on Piper's three workloads at several device counts.

Every run is a fresh process with a wall-clock limit (``--timeout``, default 300 s); a run past it is
killed and reported as "timeout" (never as a number). For each run: the objective (time per sample in
the file's units), the whole process's CPU seconds (user + system, from ``os.wait4``: what a shared
machine's load does not inflate), its wall-clock seconds (Piper's: with its own CPU seconds of ``runDP`` in brackets), and its peak resident memory (``ru_maxrss``
of the child, from ``os.wait4``). Ours also reports the solve's own seconds (reading the file and
importing excluded). Our plan is re-checked by our evaluator, and with ``--piper-eval`` by Piper's own
evaluator (its ``EVAL_TPS`` of our plan). "ok" says our objective is <= Piper's (relative 1e-9) where
both finish. With ``--reference DIR`` (another checkout of this repository, e.g. ``git worktree add
/tmp/mdmain main``) that checkout's planner is run on every row too (this script's own child, in a fresh
process with ``PYTHONPATH=DIR``, so that only the planner differs) and its objective, whole-process seconds,
CPU seconds and peak memory printed beside ours ("= ref": equal to 1e-12 relative). Our child imports only
json, os, time and pathlib besides the planner. Before the
table, one untimed solve per checkout (ResNet at 8 devices) compiles or loads the cached front kernel and
writes the checkout's ``.pyc`` files (children run with Python's default bytecode caching, whatever
``PYTHONDONTWRITEBYTECODE`` says), so that no row pays numba's or Python's one-time compilation. After a timeout at some device count a planner is not run at larger counts of that
workload (its work grows with the devices; the row says so). The machine's 1-minute load average is printed on every row (it is shared).

Settings: the file's own memory per device, bandwidth and microbatches; only the device count varies
(Piper's ``piper_single INPUT DEVICES 0 0 0``). Piper's binary is built from
``../shared/workloads/piper/reference/piper_single.cpp`` into ``--build-dir`` when missing
(``g++ -O3``; see that folder's README). Usage::

    python -m scripts.bench_multidim_vs_piper [--workloads bert32a100,gnmt,resnet]
        [--devices 8,32,128,512,1024] [--timeout 300] [--only ours|piper] [--piper-eval] [--reference DIR] [--cli]
        [--repeat K]

``--cli``: ours (and the reference) run as the user's command, ``python -m placement solve FILE --method multidim
--devices N --json`` of each checkout (its whole start-up); the ``--one`` child, like the command line, asks for
one BLAS thread (``OPENBLAS_NUM_THREADS=1``) before numpy is imported. ``--repeat K``: each planner run K times
per row (Piper's K runs, then ours, then the reference's), the median CPU seconds and the median wall seconds shown.
"""

from __future__ import annotations

import json
import os
import sys
import time
from functools import partial
from pathlib import Path

# The rest of what this script uses (argparse, subprocess, tempfile, resource, signal) is imported inside
# the functions that run the table: a planner's run (``--one``, a fresh process) imports only json, os,
# time, pathlib, functools and the planner, so its whole-process seconds are the planner's, not this harness's.

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT.parent / "shared" / "workloads" / "piper" / "reference"
WORKLOADS = ROOT / "sample_graphs" / "piper"


def reference_dir() -> Path:
    """Piper's reference folder: beside this checkout, else the shared workplace copy."""
    for candidate in (REFERENCE, Path("/work/shared/workloads/piper/reference")):
        if (candidate / "piper_single.cpp").exists():
            return candidate
    raise SystemExit(f"Piper's reference C++ not found (looked in {REFERENCE})")


def build_piper(build_dir: Path) -> Path:
    """``piper_single`` compiled with ``g++ -O3`` into ``build_dir`` (once)."""
    import subprocess  # noqa: PLC0415 - see the imports at the top

    binary = build_dir / "piper_single"
    if not binary.exists():
        src = reference_dir()
        build_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["g++", "-O3", f"-I{src}", str(src / "piper_single.cpp"), "-o", str(binary)], check=True, timeout=600
        )
    return binary


def run_limited(argv: list[str], timeout: float, cwd: Path | None = None, env: dict | None = None) -> dict:
    """Run ``argv`` in a fresh process: stdout, wall seconds, peak MB (the child's ru_maxrss), timed_out.

    ``env``: environment variables of the child to set (a value) or to remove (None).
    """
    import signal  # noqa: PLC0415 - see the imports at the top
    import subprocess  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child_env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
        proc = subprocess.Popen(argv, stdout=out, stderr=err, cwd=cwd, start_new_session=True, env=child_env)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout:
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: this kills the run and nothing else
                pid, status, usage = os.wait4(proc.pid, 0)
                timed_out = True
                break
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        return {
            "stdout": out.read().decode(errors="replace"),
            "stderr": err.read().decode(errors="replace"),
            "wall": wall,
            "peak_mb": usage.ru_maxrss / 1024,
            "cpu": usage.ru_utime + usage.ru_stime,
            "timed_out": timed_out,
            "rc": proc.returncode,
        }


def piper_run(binary: Path, workload: str, devices: int, timeout: float, plan: Path | None = None) -> dict:
    argv = [str(binary), str(WORKLOADS / f"{workload}.json"), str(devices), "0", "0", "0"]
    if plan is not None:
        argv.append(str(plan))
    res = run_limited(argv, timeout)
    tps = None
    plan_json = None
    for line in res["stdout"].splitlines():
        if line.startswith("RESULT "):
            tps = float(line.split()[1])
        elif line.startswith("EVAL_TPS "):
            tps = float(line.split()[1])
        elif line.startswith("PLAN "):
            plan_json = line[5:]
        elif line.startswith("RUNTIME "):
            res["runtime"] = float(line.split()[1])
    return {**res, "tps": tps, "plan": plan_json}


def ours_one(workload: str, devices: int) -> dict:
    """One solve in this process (the child of :func:`ours_run`): objective, solve seconds, the plan."""
    from dataclasses import replace

    from placement.multidim.dp import solve_multidim
    from placement.multidim.evaluate import evaluate_plan
    from placement.multidim.io import read_piper
    from placement.multidim.model import MS_PER_S

    problem = read_piper(WORKLOADS / f"{workload}.json")
    problem = replace(problem, kinds=(replace(problem.kinds[0], count=devices),))
    start = time.perf_counter()
    result = solve_multidim(problem)
    seconds = time.perf_counter() - start
    plan = None
    evaluated = None
    if result.plan is not None:
        ev = evaluate_plan(problem, result.plan)
        evaluated = ev.time_per_sample / MS_PER_S if ev.feasible else None  # Piper's unit: seconds
        plan = {
            "stages": [
                {"d": s.d, "t": s.t, "nodes": list(s.nodes), "options": list(s.options)} for s in result.plan.stages
            ]
        }
    return {
        "status": result.status,
        "tps": result.time_per_sample / MS_PER_S if result.plan is not None else None,  # ms -> Piper's s
        "evaluated": evaluated,
        "seconds": seconds,
        "stages": len(result.plan.stages) if result.plan else 0,
        "plan": plan,
    }


def ours_run(workload: str, devices: int, timeout: float, root: Path = ROOT, cli: bool = False) -> dict:
    """:func:`ours_one` in a fresh process, with the planner (``placement``) of checkout ``root`` (this one
    by default): this file's :func:`ours_one` runs in both, so that only the planner differs.

    ``cli``: the user's command instead, ``python -m placement solve FILE --method multidim --devices N --json``
    of checkout ``root`` (its whole start-up: the command line's imports and its environment settings)."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--one", f"{workload}:{devices}"]
    if cli:
        argv = [sys.executable, "-m", "placement", "solve", str(WORKLOADS / f"{workload}.json"), "--method",
                "multidim", "--devices", str(devices), "--json"]  # fmt: skip
    # bytecode caching on, as Python's default (this machine's shells set PYTHONDONTWRITEBYTECODE): the
    # untimed warm-up run writes the checkout's .pyc files, as a user's first run does; the BLAS thread count
    # is left to the child (unset: the command line sets its own, the --one child as the command line does)
    env: dict[str, str | None] = {"PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": None,
                                  "OPENBLAS_NUM_THREADS": None}  # fmt: skip
    res = run_limited(argv, timeout, cwd=root, env=env)
    try:
        found = json.loads(res["stdout"] if cli else res["stdout"].strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        found = {"status": "failed", "tps": None}
    if cli and "time_per_sample_ms" in found:
        ms = found["time_per_sample_ms"]
        found = {"status": found["status"], "tps": None if ms is None else ms / 1000.0,  # ms -> Piper's s
                 "seconds": found["seconds"], "stages": len(found.get("stages") or [])}  # fmt: skip
    return {**res, **found}


def median_run(run, repeat: int) -> dict:  # noqa: ANN001
    """``run()`` ``repeat`` times in a row: the run of the median CPU seconds, with the median wall seconds (a
    timed-out run is returned at once)."""
    runs = []
    for _ in range(repeat):
        res = run()
        if res.get("timed_out"):
            return res
        runs.append(res)
    runs.sort(key=lambda r: r["cpu"])
    walls = sorted(r["wall"] for r in runs)
    return {**runs[len(runs) // 2], "wall": walls[len(walls) // 2]}


def _num(value, fmt: str = ".10g") -> str:
    return "-" if value is None else format(value, fmt)


def _reference_cells(
    reference: Path, workload: str, devices: int, timeout: float, o: dict | None, cli: bool = False, repeat: int = 1
) -> list[str]:
    """The reference checkout's objective on this row, whether ours equals it (1e-12 relative), and its
    whole-process wall s (solve s), CPU s and peak MB."""
    r = median_run(partial(ours_run, workload, devices, timeout, reference, cli), repeat)
    if r["timed_out"]:
        return ["timeout", "-", f">{timeout:.0f}", f"{r['cpu']:.1f}", f"{r['peak_mb']:.0f}"]
    label = _num(r["tps"]) if r.get("tps") is not None else str(r.get("status"))
    if o is None or o.get("tps") is None or r.get("tps") is None:
        same = "-" if o is None or o.get("tps") is None else "n/a"
    else:
        same = "yes" if abs(o["tps"] - r["tps"]) <= 1e-12 * abs(r["tps"]) else f"NO ({o['tps'] - r['tps']:+.3g})"
    solve = f" ({r['seconds']:.2f})" if "seconds" in r else ""
    return [label, same, f"{r['wall']:.2f}{solve}", f"{r['cpu']:.2f}", f"{r['peak_mb']:.0f}"]


def main() -> None:
    import argparse  # noqa: PLC0415 - see the imports at the top
    import resource  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default="bert32a100,gnmt,resnet")
    parser.add_argument("--devices", default="8,32,128,512,1024")
    parser.add_argument("--timeout", type=float, default=300.0, help="wall-clock limit of each run, seconds")
    parser.add_argument("--only", choices=("ours", "piper"), help="run one planner only")
    parser.add_argument("--piper-eval", action="store_true", help="also evaluate our plan with Piper's evaluator")
    parser.add_argument("--build-dir", default=str(Path(tempfile.gettempdir()) / "piper_reference_build"))
    parser.add_argument(
        "--reference", help="another checkout (folder) whose planner's objective is printed beside ours"
    )
    parser.add_argument(
        "--cli", action="store_true", help="run ours (and the reference) as the command line, python -m placement"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per planner and row (the median CPU s is shown)")
    args = parser.parse_args()
    binary = build_piper(Path(args.build_dir)) if args.only != "ours" else None
    reference = Path(args.reference).resolve() if args.reference else None
    if args.only != "piper":
        for root in (ROOT, reference) if reference else (ROOT,):
            ours_run("resnet", 8, args.timeout, root, args.cli)  # untimed: compiles or loads the cached front kernel
    print(f"{os.cpu_count()} cores; every run a fresh process, limit {args.timeout:.0f} s wall")
    if args.cli:
        print("ours and the reference: python -m placement solve FILE --method multidim --devices N --json")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    header = (
        f"| workload | devices | load | Piper TPS | Piper s (DP CPU s) | Piper CPU s | Piper MB | ours TPS | ours s (solve s) "
        f"| ours CPU s | ours MB "
        f"| stages | ours <= Piper |{' Piper eval of ours |' if args.piper_eval else ''}"
        f"{' reference TPS | = ref | reference s (solve s) | reference CPU s | reference MB |' if reference else ''}"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for workload in args.workloads.split(","):
        gave_up: dict[str, int] = {}  # planner -> device count at which it timed out (more is not run)
        for devices in sorted(int(x) for x in args.devices.split(",")):
            load = os.getloadavg()[0]
            p = o = None
            if binary is not None and "piper" not in gave_up:
                p = median_run(partial(piper_run, binary, workload, devices, args.timeout), args.repeat)
                if p["timed_out"]:
                    gave_up["piper"] = devices
            if args.only != "piper" and "ours" not in gave_up:
                o = median_run(partial(ours_run, workload, devices, args.timeout, cli=args.cli), args.repeat)
                if o["timed_out"]:
                    gave_up["ours"] = devices
            cells = [workload, str(devices), f"{load:.1f}"]
            if p is None:
                skipped = f"not run (timeout at {gave_up['piper']})" if "piper" in gave_up else "not run"
                cells += [skipped, "-", "-", "-"]
            elif p["timed_out"]:
                cells += ["timeout", f">{args.timeout:.0f}", f"{p['cpu']:.1f}", f"{p['peak_mb']:.0f}"]
            else:
                dp_cpu = f" ({p['runtime']:.2f})" if "runtime" in p else ""
                cells += [_num(p["tps"]), f"{p['wall']:.2f}{dp_cpu}", f"{p['cpu']:.2f}", f"{p['peak_mb']:.0f}"]
            if o is None:
                skipped = f"not run (timeout at {gave_up['ours']})" if "ours" in gave_up else "not run"
                cells += [skipped, "-", "-", "-", "-"]
            elif o["timed_out"]:
                cells += ["timeout", f">{args.timeout:.0f}", f"{o['cpu']:.1f}", f"{o['peak_mb']:.0f}", "-"]
            else:
                solve = f" ({o['seconds']:.2f})" if "seconds" in o else ""
                label = _num(o["tps"]) if o["tps"] is not None else o["status"]
                cells += [
                    label,
                    f"{o['wall']:.2f}{solve}",
                    f"{o['cpu']:.2f}",
                    f"{o['peak_mb']:.0f}",
                    str(o.get("stages", "-")),
                ]
            both = p is not None and o is not None and p.get("tps") is not None and o.get("tps") is not None
            cells.append(("yes" if o["tps"] <= p["tps"] * (1 + 1e-9) else "NO") if both else "-")
            if args.piper_eval:
                evaluated = "-"
                if o is not None and o.get("plan") and binary is not None:
                    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
                        json.dump(o["plan"], handle)
                    e = piper_run(binary, workload, devices, args.timeout, Path(handle.name))
                    os.unlink(handle.name)
                    evaluated = "timeout" if e["timed_out"] else _num(e["tps"])
                cells.append(evaluated)
            if reference:
                cells += _reference_cells(reference, workload, devices, args.timeout, o, args.cli, args.repeat)
            print("| " + " | ".join(cells) + " |", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"peak MB: maximum resident set of the process (ru_maxrss); {resource.getpagesize()}-byte pages")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":  # one planner run (a child of ours_run)
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as ``python -m placement`` does, before numpy
        name, count = sys.argv[2].split(":")
        print(json.dumps(ours_one(name, int(count))))
    else:
        main()
