"""Run CLI cases in forked children under resource limits (used by tests/test_hostile.py).

Started as ``python -m tests.hostile_runner`` with a JSON object on stdin::

    {"cases": [{"name", "argv"} or {"name", "app"}], "cpu_s": seconds, "wall_s": seconds,
     (a case may hold its own "cpu_s", "wall_s", and "answers": true to get its stdout's first 4 kB back)
     "address_space": bytes, "parallel": n}

The runner imports the CLI once, then forks one child per case (``parallel`` at a time). Each child
sets ``RLIMIT_CPU`` and ``RLIMIT_AS`` (the runner's own address space plus ``address_space``), sends
stdout and stderr to files and runs ``placement.cli.main(argv)``; an uncaught exception prints its
traceback like the interpreter would. The runner collects every child with ``os.wait4`` (its own
peak RSS and CPU time), kills children past ``wall_s`` and prints one JSON list of results.

An ``app`` case (issue 27.4) runs the Streamlit app in the child instead, with ``AppTest``: a new
session opened on ``query`` (a shared link), switched to ``page``, then ``actions`` (``["upload",
key, file name, path]``, ``["text", key, value]``, ``["click", key]``, ``["radio", key, value]``); the child prints one JSON
object: the errors shown after the first run and after the actions, exceptions, the loaded graph,
devices and multipliers before and after the actions, and the errors and exceptions of one more
run (the page keeps working).
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Session-state keys of what a refused input must leave as it was (ui/state.py).
_KEPT = {"graph": "_ui_graph_name", "devices": "_ui_devices", "rules": "_ui_latency_rules"}


def _address_space() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[0]) * resource.getpagesize()


def _snapshot(at) -> dict:
    out = {}
    for name, key in _KEPT.items():
        try:
            out[name] = repr(at.session_state[key])
        except KeyError:
            out[name] = None
    return out


def _shown(at) -> tuple[list[str], list[str]]:
    return [e.value for e in at.error], [str(e.value) for e in at.exception]


def _run_app(spec: dict) -> int:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(os.path.join(ROOT, "app.py"), default_timeout=float(spec.get("timeout", 60)))
    for key, value in (spec.get("query") or {}).items():
        at.query_params[key] = value
    at.run()
    first_errors, exceptions = _shown(at)
    if spec.get("page"):
        at.switch_page(spec["page"])
        at.run()
    before = _snapshot(at)
    errors, more = _shown(at)
    exceptions += more
    for action in spec.get("actions", ()):
        if action[0] == "upload":
            _, key, name, path = action
            with open(path, "rb") as handle:
                at.file_uploader(key=key).set_value((name, handle.read(), "application/octet-stream")).run()
        elif action[0] == "text":
            at.text_input(key=action[1]).set_value(action[2]).run()
        elif action[0] == "click":
            at.button(key=action[1]).click().run()
        elif action[0] == "radio":
            at.radio(key=action[1]).set_value(action[2]).run()
        errors, more = _shown(at)
        exceptions += more
    after = _snapshot(at)
    at.run()
    rerun_errors, rerun_exceptions = _shown(at)
    result = {
        "first_errors": first_errors,
        "errors": errors,
        "exceptions": exceptions,
        "before": before,
        "after": after,
        "rerun_errors": rerun_errors,
        "rerun_exceptions": rerun_exceptions,
    }
    sys.stdout.write(json.dumps(result))
    return 0


def _child(case: dict, out_path: str, err_path: str, cpu_s: int, address_space: int) -> None:
    code = 99
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        sys.stdout = open(out_path, "w")  # noqa: SIM115 - closed by os._exit below after a flush
        sys.stderr = open(err_path, "w")  # noqa: SIM115
        try:
            code = _run_app(case["app"]) if "app" in case else cli.main(case["argv"])
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
    if any("app" in case for case in cases):
        import streamlit.testing.v1  # noqa: F401 - imported once, before the children fork

        import ui.scenario  # noqa: F401
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
                _child(case, out_path, err_path, int(case.get("cpu_s", job["cpu_s"])), limit)
            running[pid] = (index, time.monotonic())
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for child, (index, started) in list(running.items()):
                if now - started > cases[index].get("wall_s", job["wall_s"]):
                    os.kill(child, signal.SIGKILL)
            time.sleep(0.01)
            continue
        index, started = running.pop(pid)
        with open(f"{scratch}/{index}.err", errors="replace") as handle:
            stderr = handle.read()
        with open(f"{scratch}/{index}.out", errors="replace") as handle:
            case = cases[index]
            stdout = handle.read(1 << 20) if "app" in case else handle.read(4096) if case.get("answers") else ""
        results[index] = {
            "name": cases[index]["name"],
            "exit": os.waitstatus_to_exitcode(status),
            "stderr": stderr,
            "stdout": stdout,
            "wall_s": time.monotonic() - started,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_mb": usage.ru_maxrss / 1024,
        }
    base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    json.dump({"results": results, "address_space_limit": limit, "base_mb": base_mb}, sys.stdout)


if __name__ == "__main__":
    main()
