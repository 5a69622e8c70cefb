"""Teaching mode: the lattice of ideals and where to write each point's label."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from ._base import (
    _LEGEND_BELOW,
    _at,
    _layout,
    _segments,
)


def label_sides(where: Mapping[int, tuple[float, float]]) -> dict[int, str]:
    """Where to write each point's label so that labels of neighbours in a row never share a line.

    Points in a row (same y) take turns left to right: the first is labelled on the outer side
    (above in the upper half, below in the lower half and on the middle line), the next on the
    inner side, and so on.
    """
    rows: dict[float, list[tuple[float, int]]] = {}
    for i, (x, y) in where.items():
        rows.setdefault(round(y, 6), []).append((x, i))
    side = {}
    for y, members in rows.items():
        outer, inner = ("top center", "bottom center") if y > 0 else ("bottom center", "top center")
        for rank, (_, i) in enumerate(sorted(members)):
            side[i] = outer if rank % 2 == 0 else inner
    return side


def lattice_figure(trace, step: int | None = None, font_size: int = 14) -> go.Figure:
    """The lattice of ideals of a :class:`placement.explore.teaching.DPTrace`, at one step of the recurrence.

    Ideals are drawn left to right by size (number of groups), cover edges as lines. At step
    ``step``: finished ideals are green, the ideal being finished (J) orange, the ideal it is
    tried with (I) blue, the stage J \\ I written in the title; ideals not reached yet are grey.
    ``font_size`` (px) sets the labels and title (larger for a projector).
    """
    levels: dict[int, list[int]] = {}
    for index, mask in enumerate(trace.masks):
        levels.setdefault(bin(mask).count("1"), []).append(index)
    position = {}
    for size, members in levels.items():
        for k, index in enumerate(members):
            position[index] = (size, k - (len(members) - 1) / 2)
    side = label_sides(position)
    current = trace.steps[step] if step is not None and trace.steps else None
    figure = go.Figure()
    figure.add_trace(_segments([(position[a], position[b]) for a, b in trace.covers], "rgba(120,120,120,0.5)", 1))

    def label(index: int) -> str:
        groups = trace.groups_of(index)
        return "{" + ",".join(str(g) for g in groups) + "}" if groups else "∅"

    finished_up_to = current.ideal if current is not None else len(trace.masks)
    categories = [
        (
            "finished",
            "#2ca02c",
            [i for i in position if i < finished_up_to and (current is None or i != current.previous)],
        ),
        ("not reached", "#c7c7c7", [i for i in position if current is not None and i > current.ideal]),
    ]
    if current is not None:
        categories += [("J (being finished)", "#ff7f0e", [current.ideal]), ("I (tried)", "#1f77b4", [current.previous])]
    for name, color, members in categories:
        if not members:
            continue
        figure.add_trace(
            _at(
                position,
                members,
                mode="markers+text",
                name=name,
                text=[label(i) for i in members],
                textposition=[side[i] for i in members],
                textfont={"size": font_size},
                marker={
                    "size": (16 if name.startswith(("J", "I")) else 11) * font_size / 14,
                    "color": color,
                    "line": {"width": 1, "color": "#333"},
                },
                hovertext=[f"ideal {i}: groups {label(i)}" for i in members],
                hoverinfo="text",
            )
        )
    spread = max((abs(y) for _, y in position.values()), default=0.0) + 0.8
    title = "Lattice of ideals (left to right by number of groups)"
    if current is not None:
        title = f"Finishing J = {label(current.ideal)}, I = {label(current.previous)}"
    teaching_layout(
        figure,
        font_size,
        title,
        spread,
        xaxis={"title": "groups in the ideal", "dtick": 1, "range": [-0.9, len(levels) - 0.1], "zeroline": False},
        yaxis={"visible": False, "range": [-spread, spread]},
    )
    figure.update_layout(margin={"b": 40 + 4 * font_size}, legend={"y": -0.3})  # axis title, then the legend
    return figure


def teaching_layout(
    figure: go.Figure, font_size: int, title: str, spread: float, xaxis: dict[str, Any], yaxis: dict[str, Any]
) -> None:
    """The layout of the teaching figures (lattice and graph): text at ``font_size`` px, legend below the plot.

    ``spread`` is the largest distance of a point from the middle line (the height grows with it, and with the
    font for a projector).
    """
    _layout(
        figure,
        40 + font_size,
        legend=_LEGEND_BELOW,
        title={"text": title, "font": {"size": font_size + 2}},
        font={"size": font_size},
        height=int(min(560, max(320, 160 + 60 * spread)) * max(1.0, font_size / 14)),
        plot_bgcolor="white",
        xaxis=xaxis,
        yaxis=yaxis,
    )
