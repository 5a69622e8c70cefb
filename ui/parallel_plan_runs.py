"""The Parallel plan page's cached work: Piper files, the app's graph in Piper's model, solves and the curve."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

import placement
from placement import Problem
from placement.multidim.convert import inventory_kinds, options_from_graph
from placement.multidim.dp import solve_multidim
from placement.multidim.evaluate import evaluate_plan
from placement.multidim.io import piper_from_json
from placement.multidim.sweep import DEFAULT_COUNTS, device_curve
from ui import parallel_plan as pp
from ui import state

#: The ``text`` that stands for the graph loaded in the app (its ``name`` is then its digest).
GRAPH = "the graph loaded in the app"


@st.cache_data(show_spinner=False, max_entries=8)
def load(text: bytes | str, name: str):
    """A Piper workload read from ``text`` (cached)."""
    return piper_from_json(text, name)


@st.cache_data(show_spinner=False, max_entries=8, hash_funcs={Problem: lambda p: (p.graph.digest, repr(p.devices))})
def converted(problem: Problem, memory_gib=None, bandwidth_gib=None, microbatches=None):
    """The loaded graph in Piper's model with the inventory's kinds (options priced at the first kind's link)."""
    kwargs = {} if microbatches is None else {"microbatches": int(microbatches)}
    result = options_from_graph(
        problem,
        memory=None if memory_gib is None else float(memory_gib) * pp.GiB,
        bandwidth=None if bandwidth_gib is None else float(bandwidth_gib) * pp.GiB,
        **kwargs,
    )
    first = next((k for k in problem.devices.accelerators if k.count > 0), None)
    factor = problem.devices.bandwidth * (first.bandwidth if first is not None else 1.0)
    return replace(result, kinds=inventory_kinds(problem, result.kinds[0].bandwidth / factor))


def graph_problem() -> Problem:
    """The app's graph (latency multipliers applied) on the session's devices."""
    return Problem(state.current_graph(), state.current_devices())


def base(text: str, name: str, settings: tuple, microbatches: int):
    """The workload with the page's settings: a Piper file, or the app's graph (``text`` is :data:`GRAPH`)."""
    if text == GRAPH:
        _, memory_gib, bandwidth_gib = settings[0]
        return pp.configured(
            converted(graph_problem(), memory_gib, bandwidth_gib, microbatches), settings, microbatches
        )
    return pp.configured(load(text, name), settings, microbatches)


@st.cache_data(show_spinner=False, max_entries=32)
def solve(text: str, name: str, settings: tuple, microbatches: int):
    """(problem, result, evaluation or None) of the exact multidimensional DP (cached)."""
    problem = base(text, name, settings, microbatches)
    result = solve_multidim(problem)
    evaluation = evaluate_plan(problem, result.plan) if result.plan is not None else None
    return problem, result, evaluation


@st.cache_data(show_spinner=False, max_entries=16)
def curve(text: str, name: str, settings: tuple, microbatches: int):
    """The optimal time per sample (ms) against the first kind's count, 8..1024 devices (cached, with a bar)."""
    problem = base(text, name, settings, microbatches)
    problem = replace(problem, kinds=problem.kinds[:1])  # the curve varies the first kind's count
    bar = st.progress(0.0, text="curve: starting")
    points = device_curve(
        problem,
        DEFAULT_COUNTS,
        progress=lambda done, total: bar.progress(done / total, text=f"curve: {done} of {total}"),
    )
    bar.empty()
    return points


def devices_answer() -> tuple[float | None, int | None]:
    """The Devices page's answer for the app's graph: (ms per sample, devices used), as that page solves it."""
    problem = state.current_problem()
    result = state.solve_cached(problem, state.live_method(), live=True)
    if not result.ok or result.placement is None:
        return None, None
    return placement.evaluate(problem, result.placement).max_load, len(result.placement.stages)
