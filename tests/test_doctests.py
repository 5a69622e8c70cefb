"""The examples in the docstrings of the main public functions run (and are right).

``solve``, ``evaluate``, ``load_problem``, ``make_result``, ``MemoryModel`` and the package
docstring's ``solve_dp`` example; paths in the examples are relative to the repository root.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = (
    "placement",
    "placement.solve",
    "placement.evaluate",
    "placement.io",
    "placement.model",
    "placement.condense",
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    module = importlib.import_module(name)
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert outcome.failed == 0, f"{outcome.failed} docstring example(s) of {name} failed (run doctest for details)"
    assert outcome.attempted > 0, f"{name} has no docstring examples"


def test_the_main_public_functions_have_examples():
    from placement import evaluate, load_problem, solve

    for function in (solve, evaluate, load_problem):
        assert ">>> " in (function.__doc__ or ""), function.__name__
    import placement

    assert ">>> result = solve_dp(problem)" in placement.__doc__
