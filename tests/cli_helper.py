"""The CLI run in process: ``placement.cli.main(argv)`` with stdout and stderr captured.

One helper for every test that drives the CLI (``tests/test_cli.py`` keeps one subprocess smoke test of
``python -m placement``; ``tests/test_hostile.py`` forks on purpose, for its resource limits).
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

from placement.cli import main

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class CliRun:
    """What a run gave: the exit status and the captured text (the fields of ``subprocess.CompletedProcess``)."""

    returncode: int
    stdout: str
    stderr: str


def cli(*args: object, cwd: Path | str = ROOT) -> CliRun:
    """Run ``placement ARGS`` in this process from ``cwd`` (default the repository root)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(arg) for arg in args])
        except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return CliRun(code, out.getvalue(), err.getvalue())
