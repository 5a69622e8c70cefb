"""Run CLI cases in forked children under resource limits (used by tests/test_hostile.py).

Started as ``python -m tests.hostile_runner`` with a JSON object on stdin::

    {"cases": [{"name", "argv"}], "cpu_s": seconds, "wall_s": seconds, "address_space": bytes, "parallel": n}

The runner imports the CLI once, then forks one child per case (``parallel`` at a time). Each child
sets ``RLIMIT_CPU`` and ``RLIMIT_AS`` (the runner's own address space plus ``address_space``), sends
stdout and stderr to files and runs ``placement.cli.main(argv)``; an uncaught exception prints its
traceback like the interpreter would. The runner collects every child with ``os.wait4`` (its own
peak RSS and CPU time), kills children past ``wall_s`` and prints one JSON list of results.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import tempfile
import time
import traceback

from placement import cli


def _address_space() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[0]) * resource.getpagesize()


def _child(argv: list[str], out_path: str, err_path: str, cpu_s: int, address_space: int) -> None:
    code = 99
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        sys.stdout = open(out_path, "w")  # noqa: SIM115 - closed by os._exit below after a flush
        sys.stderr = open(err_path, "w")  # noqa: SIM115
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - what the interpreter would print
            traceback.print_exc()
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)


def main() -> None:
    job = json.load(sys.stdin)
    cases = job["cases"]
    limit = _address_space() + int(job["address_space"])
    scratch = tempfile.mkdtemp(prefix="hostile-")
    pending = list(enumerate(cases))
    running: dict[int, tuple[int, float]] = {}
    results: list[dict | None] = [None] * len(cases)
    while pending or running:
        while pending and len(running) < job["parallel"]:
            index, case = pending.pop(0)
            out_path, err_path = f"{scratch}/{index}.out", f"{scratch}/{index}.err"
            pid = os.fork()
            if pid == 0:
                _child(case["argv"], out_path, err_path, int(job["cpu_s"]), limit)
            running[pid] = (index, time.monotonic())
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for child, (index, started) in list(running.items()):
                if now - started > job["wall_s"]:
                    os.kill(child, signal.SIGKILL)
            time.sleep(0.01)
            continue
        index, started = running.pop(pid)
        with open(f"{scratch}/{index}.err", errors="replace") as handle:
            stderr = handle.read()
        results[index] = {
            "name": cases[index]["name"],
            "exit": os.waitstatus_to_exitcode(status),
            "stderr": stderr,
            "wall_s": time.monotonic() - started,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_mb": usage.ru_maxrss / 1024,
        }
    base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    json.dump({"results": results, "address_space_limit": limit, "base_mb": base_mb}, sys.stdout)


if __name__ == "__main__":
    main()
