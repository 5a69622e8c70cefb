"""Pareto frontiers of sweep points: time per sample against a cost axis."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import PlacementError
from .sweeps import SweepPoint

#: Cost axes of :func:`pareto_front`, with the :class:`SweepPoint` attribute each reads.
PARETO_AXES = {"devices": "devices_used", "memory": "total_memory", "price": "price_per_hour"}


def pareto_front(
    points: Sequence[SweepPoint], x: str = "devices", y: str = "time_per_sample"
) -> tuple[SweepPoint, ...]:
    """The points no other point beats on both axes (smaller is better on both).

    Parameters
    ----------
    points : sequence of SweepPoint
        Points of one or several sweeps; those without a placement are ignored.
    x : str
        ``"devices"`` (devices used), ``"memory"`` (memory provisioned) or ``"price"``
        (price per hour), or any numeric SweepPoint attribute.
    y : str
        A numeric SweepPoint attribute (default the time per sample).

    Returns
    -------
    tuple of SweepPoint
        Sorted by ``x``. A point is dropped when another is at least as good on both axes
        and better on one; among points with equal ``(x, y)`` only the first is kept.
    """
    x_attr = PARETO_AXES.get(x, x)
    y_attr = PARETO_AXES.get(y, y)
    usable = [p for p in points if p.ok]
    for p in usable[:1]:
        for attr in (x_attr, y_attr):
            if not hasattr(p, attr):
                raise PlacementError(f"unknown Pareto axis {attr!r}; choose one of: {', '.join(PARETO_AXES)}")
    coords = [(float(getattr(p, x_attr)), float(getattr(p, y_attr))) for p in usable]
    front = []
    seen: set[tuple[float, float]] = set()
    for k, (px, py) in enumerate(coords):
        if any(qx <= px and qy <= py and (qx < px or qy < py) for qx, qy in coords):
            continue
        if (px, py) in seen:
            continue
        seen.add((px, py))
        front.append((px, py, k))
    front.sort()
    return tuple(usable[k] for _, _, k in front)
