"""Purchase figures: time per sample against the price of every candidate inventory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from ._base import (
    _LEGEND_LEFT,
    _TEXT_HOVER,
    _front_traces,
    _layout,
    _ring,
    _top_title,
)


def purchase_figure(
    options: Sequence[Any],
    front: Sequence[Any] | None = None,
    answer: Any = None,
    title: str | None = None,
    time_unit: str = "ms",
) -> go.Figure:
    """Time per sample against price per hour of every candidate inventory; the frontier as a step line.

    Parameters
    ----------
    options : sequence of placement.explore.purchase.Option
        Every candidate (those without a plan are left out).
    front : sequence of Option, optional
        The frontier (default: :func:`placement.explore.purchase.price_frontier` of ``options``).
    answer : Option, optional
        A candidate to ring (the answer to the question asked).
    title : str, optional
        Figure title.
    time_unit : str
        Unit of the times (for the axis title).
    """
    from ..explore.purchase import price_frontier

    if front is None:
        front = price_frontier(options)
    on_front = {o.counts for o in front}

    def hover(o) -> str:
        per_million = o.cost_per_sample * 1e6 if o.cost_per_sample is not None else 0.0
        return (
            f"{o.label}<br>time per sample {o.time_per_sample:.6g} {time_unit}<br>price per hour "
            f"{o.price_per_hour:,.4g}<br>cost per million samples {per_million:,.4g}"
        )

    others = [o for o in options if o.ok and o.counts not in on_front]
    best = [o for o in front if o.ok]
    figure = go.Figure()
    for trace in _front_traces(
        ([o.price_per_hour for o in others], [o.time_per_sample for o in others], [hover(o) for o in others], None),
        ([o.price_per_hour for o in best], [o.time_per_sample for o in best], [hover(o) for o in best], None),
        ("other inventories", "frontier (cheapest for its speed)"),
        (8, 11),
    ):
        figure.add_trace(trace)
    if answer is not None and answer.ok:
        figure.add_trace(
            _ring(
                answer.price_per_hour,
                answer.time_per_sample,
                22,
                name="answer",
                text=[hover(answer)],
                hovertemplate=_TEXT_HOVER,
            )
        )
    _layout(
        figure,
        90,
        legend=_LEGEND_LEFT,
        title=_top_title(title or "Time per sample vs price per hour of every candidate inventory"),
        height=440,
        xaxis={"title": "price per hour (all devices of the inventory)", "rangemode": "tozero"},
        yaxis={"title": f"time per sample ({time_unit})", "rangemode": "tozero"},
    )
    times = [o.time_per_sample for o in options if o.ok and o.time_per_sample > 0]
    if times and max(times) > 20 * min(times):  # e.g. CPU only next to many cards: a log axis shows both
        figure.update_yaxes(type="log", rangemode=None, title=f"time per sample ({time_unit}, log scale)")
    return figure


def purchase_rows(options: Sequence[Any], time_unit: str = "ms") -> list[dict[str, Any]]:
    """One row per candidate inventory: counts, cards to buy, price, time and cost per sample."""
    rows = []
    for o in options:
        rows.append(
            {
                "inventory": o.label,
                "cards to buy": " + ".join(
                    f"{n} x {k.name}" for n, k in zip(o.added, o.point.problem.devices.accelerators) if n
                )
                or "none",
                "price per hour": o.price_per_hour,
                f"time per sample ({time_unit})": o.time_per_sample,
                "cost per million samples": o.cost_per_sample * 1e6 if o.cost_per_sample is not None else None,
                "status": o.point.status,
            }
        )
    return rows
