"""Wall time of every refusal of the hostile CLI corpus as a fresh process (issue 27.2: "in well under a second").

``tests/hostile_runner.py`` forks its cases after importing the CLI, so its times leave out the interpreter's
start-up and the imports. This script runs each refusal case of ``tests/test_hostile.py`` (the cases that are
refused in one line, exit 2; not the ``answers`` cases, which solve) as ``python -m placement ARGV`` - a new
interpreter, the way a user runs it - once per checkout, one process at a time, and prints one table:
case, then per checkout the exit status, wall and CPU seconds (user + system) and peak RSS (MB, of the child,
from ``os.wait4``). CPU seconds say less about the other processes of a loaded machine than wall seconds do.

``--ref DIR`` adds a second checkout (e.g. ``/work/main`` or an unpacked ``git archive``): its ``placement``
package is imported (``PYTHONPATH=DIR``) for the same case files, so the two columns are side by side in one
run. ``--repeat N`` keeps the best of N runs per case and checkout (less noise from other processes).

Usage: ``PYTHONPATH=. python scripts/bench_hostile_refusals.py [--ref DIR] [--repeat 1] [--match TEXT]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


#: A small process that starts the cases: a child forked from this script would report this script's
#: peak RSS (numpy and the corpus's files in memory) as its own, since the peak survives ``exec``.
LAUNCHER = r"""
import json, os, subprocess, sys, time
for line in sys.stdin:
    job = json.loads(line)
    started = time.perf_counter()
    child = subprocess.Popen(job["argv"], cwd=job["cwd"], env=job["env"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - started > job["timeout"]:
            child.kill()
            pid, status, usage = os.wait4(child.pid, 0)
            break
        time.sleep(0.002)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    print(json.dumps([child.returncode, wall, cpu, usage.ru_maxrss / 1024]), flush=True)
"""


def _environment(checkout: Path, cache: Path | None) -> dict[str, str]:
    """The child's environment: ``checkout`` imported; with ``cache``, bytecode read from (and kept in) it."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    if cache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def _compile(checkout: Path, cache: Path) -> None:
    """Byte-compile the checkout's packages into ``cache`` (as an installed package has them), before timing."""
    for package in ("placement", "ui"):
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(checkout / package)],
            env=_environment(checkout, cache),
            check=True,
            stdout=subprocess.DEVNULL,
        )


def _run(
    launcher: subprocess.Popen, checkout: Path, argv: list[str], cache: Path | None, timeout: float = 120.0
) -> tuple:
    """Exit status, wall and CPU seconds, peak RSS (MB) of ``python -m placement ARGV`` importing ``checkout``."""
    env = _environment(checkout, cache)
    job = {"argv": [sys.executable, "-m", "placement", *argv], "cwd": str(checkout), "env": env, "timeout": timeout}
    assert launcher.stdin is not None and launcher.stdout is not None
    launcher.stdin.write(json.dumps(job) + "\n")
    launcher.stdin.flush()
    return tuple(json.loads(launcher.stdout.readline()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", type=Path, default=None, help="a second checkout, timed side by side")
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs per case (default 1)")
    parser.add_argument("--match", default="", help="only the cases whose name holds this text")
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="keep this environment's bytecode setting (PYTHONDONTWRITEBYTECODE=1 here: every module compiled from "
        "source in every run); default: each checkout's modules byte-compiled once into a temporary "
        "PYTHONPYCACHEPREFIX first, as an installed package has them",
    )
    args = parser.parse_args()
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    from tests.test_hostile import _build_cases  # after the launcher started: numpy and the files are not its

    checkouts = [("this", ROOT)] + ([("ref", args.ref.resolve())] if args.ref else [])
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}   cpus: {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp:
        caches: dict[str, Path | None] = {}
        for name, checkout in checkouts:
            caches[name] = None if args.no_bytecode else Path(tmp) / f"pycache-{name}"
            if caches[name] is not None:
                _compile(checkout, caches[name])
        mode = "from source (no bytecode)" if args.no_bytecode else "cached (compiled first)"
        print(f"bytecode: {mode}; {max(1, args.repeat)} run(s) per case and checkout, the fastest shown")
        cases = [c for c in _build_cases(Path(tmp)) if not c.get("answers") and args.match in c["name"]]
        cases = [c for c in cases if not any("\x00" in part for part in c["argv"])]  # exec takes no NUL
        head = "".join(f" | {name:>4} exit  wall s  cpu s  peak MB" for name, _ in checkouts)
        print(f"{'case':<52}{head}")
        worst = dict.fromkeys([name for name, _ in checkouts], 0.0)
        over = dict.fromkeys([name for name, _ in checkouts], 0)
        for case in cases:
            cells = []
            for name, checkout in checkouts:
                runs = [_run(launcher, checkout, case["argv"], caches[name]) for _ in range(max(1, args.repeat))]
                code, wall, cpu, peak = min(runs, key=lambda run: run[1])
                worst[name] = max(worst[name], wall)
                over[name] += wall >= 0.5
                cells.append(f" | {code:>9} {wall:>7.2f} {cpu:>6.2f} {peak:>8.0f}")
            print(f"{case['name'][:52]:<52}{''.join(cells)}", flush=True)
    launcher.stdin.close()
    launcher.wait()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, _ in checkouts:
        print(f"{name}: {len(cases)} cases, slowest {worst[name]:.2f} s, {over[name]} at or over 0.5 s")


if __name__ == "__main__":
    main()
