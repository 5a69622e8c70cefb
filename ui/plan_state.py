"""The chosen method, objective and time limit, a plan picked elsewhere, and the result the pages show."""

from __future__ import annotations

import streamlit as st

import placement
from ui import session_keys as keys
from ui.caches import solve_cached, takes_time_limit
from ui.graph_state import current_problem

DEFAULT_TIME_LIMIT = 30.0


def current_method() -> str:
    """The method chosen on the Placement page (``"dp"`` by default)."""
    return st.session_state.get(keys.METHOD, "dp")


def set_method(method: str) -> None:
    if st.session_state.get(keys.METHOD) != method:
        st.session_state[keys.METHOD] = method
        keys.changed()


def current_objective() -> str:
    """``"throughput"`` (time per sample) or ``"latency"`` (single sample)."""
    return st.session_state.get(keys.OBJECTIVE, "throughput")


def set_objective(objective: str) -> None:
    if st.session_state.get(keys.OBJECTIVE) != objective:
        st.session_state[keys.OBJECTIVE] = objective
        keys.changed()


def current_time_limit() -> float:
    """Time limit in seconds for methods that take one (integer programs)."""
    return float(st.session_state.get(keys.TIME_LIMIT, DEFAULT_TIME_LIMIT))


def set_time_limit(seconds: float) -> None:
    if st.session_state.get(keys.TIME_LIMIT) != float(seconds):
        st.session_state[keys.TIME_LIMIT] = float(seconds)
        keys.changed()


def live_method() -> str:
    """The method for live previews (Devices page): the chosen one unless it takes a time limit (IPs)."""
    method = current_method()
    return "dp" if takes_time_limit(method) else method


def current_result(live: bool = False) -> placement.Result | None:
    """The result the Placement page shows: the picked plan if any, else the live solve.

    The live solve uses :func:`ui.graph_state.current_problem`, :func:`current_method` and
    :func:`current_time_limit` (cached). Use :func:`result_problem` for the problem the
    result belongs to (a picked plan may come with other devices). ``live=True`` (the Placement
    page, which says so and offers a fresh solve): a lowered device count may be answered from
    the last DP table (see :func:`ui.caches.solve_cached`), with an optimal split that is not
    tie-broken; the other pages get the full solve's split.
    """
    plan = selected_plan()
    if plan is not None:
        return plan[1]
    problem = current_problem()
    if problem is None:
        return None
    return solve_cached(problem, current_method(), live=live, time_limit=current_time_limit())


def result_problem() -> placement.Problem | None:
    """The problem :func:`current_result` belongs to (the picked plan's, else the current problem)."""
    plan = selected_plan()
    if plan is not None:
        return plan[0]
    return current_problem()


def set_selected_plan(problem: placement.Problem, result: placement.Result, label: str, origin: str = "") -> None:
    """Show this plan on the Placement (and Timeline) pages instead of the live solve, with ``label`` as a note.

    ``origin`` names where it was picked (e.g. ``"tradeoffs"``), read back by :func:`selected_plan_origin`.
    """
    st.session_state[keys.PLAN] = (problem, result, label)
    st.session_state[keys.PLAN_ORIGIN] = (origin, label)


def selected_plan() -> tuple[placement.Problem, placement.Result, str] | None:
    """The picked ``(problem, result, label)``, or None when the pages show the live solve."""
    return st.session_state.get(keys.PLAN)


def selected_plan_origin() -> str:
    """Where the picked plan was picked (its ``origin``; "" for none, or when no plan is picked)."""
    plan = selected_plan()
    origin = st.session_state.get(keys.PLAN_ORIGIN)
    # Every change of the state drops the plan without touching the origin: it counts only for the same plan.
    if plan is None or origin is None or origin[1] != plan[2]:
        return ""
    return origin[0]


def clear_selected_plan() -> None:
    """Go back to the live solve."""
    st.session_state[keys.PLAN] = None
