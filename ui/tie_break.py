"""The exact DP's tie-break pass when it is too large to make by default (:func:`placement.exact.dp.solve_dp`).

Past :data:`placement.exact.limits.TIE_BREAK_MAX_PAIRS` estimated pairs the DP returns the first
optimal split it finds and says so (:func:`placement.exact.dp.tie_break_note`). The Placement page
shows that line with a button; once pressed for a graph and its devices, every page's DP solve of
them makes the pass (:func:`options`), so the pages keep showing one split.
"""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

import placement
from placement.exact.limits import tie_break_note

_ALWAYS = "_ui_tie_break_always"  # (graph digest, devices repr) pairs whose DP solves make the tie-break pass


def _key(problem: placement.Problem) -> tuple[str, str]:
    return problem.graph.digest, repr(problem.devices)


def ask(problem: placement.Problem) -> None:
    """Make the tie-break pass, whatever its size, in every DP solve of ``problem`` from now on."""
    wanted = set(st.session_state.get(_ALWAYS) or ())
    wanted.add(_key(problem))
    st.session_state[_ALWAYS] = frozenset(wanted)


def options(problem: placement.Problem, option_names: tuple[str, ...]) -> dict[str, Any]:
    """The options that make the pass for ``problem`` when the user asked for it (else none)."""
    if "tie_break_max_pairs" in option_names and _key(problem) in (st.session_state.get(_ALWAYS) or ()):
        return {"tie_break_max_pairs": math.inf}
    return {}


def note(result: placement.Result | None) -> str | None:
    """The line for a DP result whose tie-break pass was skipped for its size (None otherwise)."""
    return None if result is None or not result.ok else tie_break_note(result)
