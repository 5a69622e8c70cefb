"""Time and memory of the planner-work cases of the hostile corpus (issue 27.2), one table.

Runs the ``multidim``/``--deadline`` cases of ``tests/test_hostile.py`` through ``tests/hostile_runner.py``
(a forked child per case, under the corpus's CPU and memory limits, one at a time) and prints, per case:
exit status, wall and CPU seconds, peak RSS (MB, the runner's imported modules included) and the first
80 characters of stderr. The CLI's imports are done once by the runner, before the children fork.

Usage: ``PYTHONPATH=. python scripts/bench_hostile_work.py [--cpu-s 60]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.test_hostile import ADDRESS_SPACE, _build_cases

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-s", type=int, default=None, help="CPU limit per case (default: the corpus's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = [c for c in _build_cases(Path(tmp)) if c["name"].startswith(("multidim ", "deadline"))]
        for case in cases:
            if args.cpu_s is not None:
                case["cpu_s"] = args.cpu_s
        job = {"cases": cases, "cpu_s": 20, "wall_s": 120, "address_space": ADDRESS_SPACE, "parallel": 1}
        done = subprocess.run(
            [sys.executable, "-m", "tests.hostile_runner"],
            input=json.dumps(job),
            text=True,
            capture_output=True,
            cwd=ROOT,
        )
    if done.returncode != 0:
        sys.exit(done.stderr[-2000:])
    report = json.loads(done.stdout)
    print(f"runner base RSS: {report['base_mb']:.0f} MB")
    print(f"{'case':<40} {'exit':>4} {'wall s':>7} {'cpu s':>6} {'peak MB':>8}  stderr")
    for r in report["results"]:
        first = (r["stderr"].splitlines() or [""])[0][:80]
        print(f"{r['name']:<40} {r['exit']:>4} {r['wall_s']:>7.2f} {r['cpu_s']:>6.2f} {r['peak_mb']:>8.0f}  {first}")


if __name__ == "__main__":
    main()
