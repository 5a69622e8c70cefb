"""``python -m placement`` (placement/__main__.py) asks for one BLAS thread unless the user chose a count."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_CHILD = """
import os, runpy, sys
sys.argv = ["placement", "--help"]
try:
    runpy.run_module("placement", run_name="__main__")
except SystemExit:
    pass
import numpy  # (already imported by the command line: it read the variable then)
print("BLAS", os.environ.get("OPENBLAS_NUM_THREADS"), "numpy" in sys.modules)
"""


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("3", "3")])
def test_cli_sets_one_blas_thread_unless_given(given, expected):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == f"BLAS {expected} True"


def test_importing_the_package_leaves_the_environment_alone():
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    code = "import os, placement.multidim.dp; print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"


_EXIT_CHILD = """
import atexit, runpy, sys, threading

class Teardown:
    def __del__(self):
        sys.stdout.write("teardown\\n")  # runs when the interpreter frees this module's globals

kept = Teardown()
atexit.register(lambda: sys.stdout.write("atexit\\n"))
if sys.argv[1] == "thread":
    threading.Thread(target=threading.Event().wait, daemon=True).start()  # alive until the process ends
args = sys.argv[2:]
sys.argv = ["placement", *args]
runpy.run_module("placement", run_name="__main__")
"""


@pytest.mark.parametrize(
    ("thread", "args", "code", "teardown"),
    [
        ("none", ["solve", "sample_graphs/piper/bert32a100.json", "--method", "multidim", "--json"], 0, False),
        ("thread", ["solve", "sample_graphs/piper/bert32a100.json", "--method", "multidim", "--json"], 0, True),
        ("none", ["solve", "missing.json", "--method", "multidim"], 2, False),  # bad input: main returns 2
        ("none", ["solve", "--bogus"], 2, True),  # argparse raises SystemExit: the ordinary exit
    ],
    ids=["solve", "another-thread", "bad-input", "usage-error"],
)
def test_cli_ends_without_teardown_only_where_nothing_needs_it(thread, args, code, teardown):
    """The atexit handlers run once and the output is whole either way; the interpreter's teardown is skipped
    after a returned command with no other thread (and no multiprocessing), kept otherwise."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-c", _EXIT_CHILD, thread, *args], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == code, out.stderr
    lines = out.stdout.splitlines()
    assert lines.count("atexit") == 1, out.stdout
    assert ("teardown" in lines) is teardown, out.stdout
    if code == 0:
        assert '"status": "optimal"' in lines[0]


def test_cli_with_stdout_closed_ends_without_a_traceback():
    """``python -m placement ... >&-`` (no stdout at all): exit 0 and nothing on stderr (was an AttributeError)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    command = f"exec '{sys.executable}' -m placement solve sample_graphs/piper/bert32a100.json --method multidim >&-"
    out = subprocess.run(["sh", "-c", command], cwd=root, capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stderr) == (0, "")
