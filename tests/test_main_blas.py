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
