"""Cached facts about a graph for the pages: its drawing layout, ideal count and ideal bounds.

Each is cached on the graph's digest (``st.cache_data``); :func:`clear` drops them. Each is computed in a
worker process (:func:`ui.worker.run`; inline outside a server): on a 4,000-node upload the layout and the
ideal count are about 0.3 s of pure Python each, which in the server's thread would hold its GIL.
"""

from __future__ import annotations

import streamlit as st

import placement

#: Ideals are counted up to the DP's own limit (placement.exact.ideals.DEFAULT_MAX_IDEALS), not a display cap.
from placement.exact.ideals import DEFAULT_MAX_IDEALS as IDEALS_CAP
from ui import worker


@st.cache_data(show_spinner=False, max_entries=64)
def _layout(digest: str, _graph: placement.Graph):
    from placement.viz import dag_layout

    return worker.run(dag_layout, _graph)


def graph_layout(graph: placement.Graph) -> dict[int, tuple[float, float]]:
    """:func:`placement.viz.dag_layout` of ``graph``, cached on its digest."""
    return _layout(graph.digest, graph)


@st.cache_data(show_spinner=False, max_entries=64)
def _ideals(digest: str, _graph: placement.Graph) -> int | None:
    return worker.run(worker.ideal_count, _graph, IDEALS_CAP)


def ideal_count(graph: placement.Graph) -> int | None:
    """Number of ideals of the contracted graph, or None when over :data:`IDEALS_CAP` (cached)."""
    return _ideals(graph.digest, graph)


@st.cache_data(show_spinner=False, max_entries=64)
def _bounds(digest: str, _graph: placement.Graph):
    return worker.run(worker.ideal_bounds, _graph)


def ideal_bounds(graph: placement.Graph):
    """:func:`placement.exact.ideals.ideal_bounds` of the contracted graph: width and bounds on the ideal count (cached)."""
    return _bounds(graph.digest, graph)


def describe_ideal_bounds(graph: placement.Graph, exact: int | None = None) -> str:
    """One sentence for the Graph page: the width, the bounds and whether the exact DP will take the graph.

    ``exact``: the ideal count when it is known (then the bounds are not shown beside it).
    """
    from placement.exact.ideals import ADVICE, DEFAULT_MAX_IDEALS, format_count

    bounds = ideal_bounds(graph)
    size = len(bounds.antichain)
    text = (
        f"Order graph of {bounds.groups:,} group{'s' if bounds.groups != 1 else ''}: {bounds.describe_width()} "
        f"(an antichain of {size:,} group{'s' if size != 1 else ''}); "
        + (
            f"exactly {exact:,} ideal{'s' if exact != 1 else ''}."
            if exact is not None
            else f"between {format_count(bounds.lower)} and {format_count(bounds.upper)} ideals."
        )
    )
    if bounds.lower > DEFAULT_MAX_IDEALS:
        text += f" Over the exact DP's cap of {DEFAULT_MAX_IDEALS:,} ideals: {ADVICE}."
    return text


def clear() -> None:
    """Drop the cached layouts, ideal counts and bounds."""
    _layout.clear()
    _ideals.clear()
    _bounds.clear()
