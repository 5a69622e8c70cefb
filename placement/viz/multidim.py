"""Figures and tables of multidimensional (data x tensor x pipeline) plans."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from ._base import (
    DEVICE_COLORS,
    _layout,
    _ring,
    _span_bars,
    format_bytes,
)


def _stage_parts_ms(stage: Any, cost: Any) -> tuple[float, float]:
    """(compute, communication) ms per sample of an evaluated multidim stage (the model works in ms).

    Compute is ``C / d`` (the d replicas share the samples); communication is the rest of the stage time:
    edge transfers ``E / d`` and the weight resync ``R`` at the link bandwidth (``sample_graphs/piper/README.md``).
    """
    compute = cost.compute / stage.d
    return compute, max(cost.time - compute, 0.0)


def multidim_stage_rows(problem: Any, plan: Any, evaluation: Any) -> list[dict[str, Any]]:
    """One row per stage of a multidimensional plan: nodes, d x t, kind, options, memory vs cap, times in ms.

    ``problem``/``plan``/``evaluation`` are :mod:`placement.multidim` values (a
    :class:`~placement.multidim.model.MultiProblem`, a plan and :func:`~placement.multidim.evaluate.evaluate_plan`'s
    result), in ms: ``time per sample (ms)`` = ``compute (ms)`` +
    ``communication (ms)``.
    """
    rows = []
    for k, (stage, cost) in enumerate(zip(plan.stages, evaluation.stages)):
        names = [problem.nodes[v].name for v in stage.nodes]
        counts: dict[str, int] = {}
        for option in stage.options:
            counts[option] = counts.get(option, 0) + 1
        compute_ms, communication_ms = _stage_parts_ms(stage, cost)
        rows.append(
            {
                "stage": k,
                "nodes": f"{names[0]} .. {names[-1]}" if len(names) > 1 else names[0],
                "d x t": f"{stage.d} x {stage.t}",
                "kind": stage.kind,
                "time per sample (ms)": cost.time,
                "compute (ms)": compute_ms,
                "communication (ms)": communication_ms,
                "node count": len(stage.nodes),
                "devices": stage.d * stage.t,
                "options": ", ".join(f"{n} {o}" for o, n in sorted(counts.items())),
                "in flight (y)": cost.y,
                "memory": format_bytes(cost.memory),
                "memory cap": format_bytes(cost.memory_cap),
                "memory used": f"{cost.memory / cost.memory_cap:.0%}",
            }
        )
    return rows


def multidim_curve_figure(
    points: Sequence[tuple[int, float | None]], selected: int | None = None, title: str | None = None
) -> go.Figure:
    """Optimal time per sample (ms) against the total device count (log-2 x axis); None = infeasible.

    ``points`` are ``(devices, ms per sample)``, as :mod:`placement.multidim` returns them.
    """
    xs = [int(n) for n, v in points if v is not None and math.isfinite(v)]
    ys = [float(v) for n, v in points if v is not None and math.isfinite(v)]
    figure = go.Figure(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines+markers",
            name="optimal plan",
            hovertemplate="%{x} devices<br>time per sample %{y:.4g} ms<extra></extra>",
        )
    )
    missing = [int(n) for n, v in points if v is None or not math.isfinite(v)]
    if missing:
        figure.add_trace(
            go.Scatter(
                x=missing,
                y=[min(ys) if ys else 1.0] * len(missing),
                mode="markers",
                name="infeasible (drawn at the lowest time)",
                marker={"symbol": "x", "color": "red", "size": 10},
            )
        )
    if selected is not None and selected in xs:
        figure.add_trace(_ring(selected, ys[xs.index(selected)], 16, name="this plan"))
    _layout(
        figure,
        60,
        title=title or "Time per sample vs devices (each point a proven optimum)",
        height=380,
        xaxis={"title": "devices", "type": "log", "dtick": math.log10(2)},
        yaxis={"title": "time per sample (ms, log scale)", "type": "log"},
    )
    return figure


def multidim_timeline_figure(plan: Any, evaluation: Any, microbatches: int = 6, title: str | None = None) -> go.Figure:
    """Pipeline timeline of a multidimensional plan in ms: one row per stage, compute and communication parts.

    A stage of d replicas (each of t devices) is one row, labelled ``stage k: d x t kind``. Sample m enters
    stage i when stage i - 1 has finished it and stage i has finished sample m - 1; each takes the stage's
    time per sample (ms), drawn as its compute part (``C / d``) then its
    communication part (edge transfers and weight resync). Every block says which sample it is; the hover
    gives the stage, d x t, the part, its start and duration with units.
    """
    labels = [f"stage {k}: {s.d} x {s.t}" + (f" {s.kind}" if s.kind else "") for k, s in enumerate(plan.stages)]
    parts = [_stage_parts_ms(s, c) for s, c in zip(plan.stages, evaluation.stages)]
    ends = [[0.0] * microbatches for _ in parts]
    spans: dict[str, tuple[list, list, list, list]] = {"compute": ([], [], [], []), "communication": ([], [], [], [])}
    for m in range(microbatches):
        for i, (compute, communication) in enumerate(parts):
            begin = max(ends[i - 1][m] if i else 0.0, ends[i][m - 1] if m else 0.0)
            ends[i][m] = begin + compute + communication
            for part, base, width in (("compute", begin, compute), ("communication", begin + compute, communication)):
                rows, bases, widths, texts = spans[part]
                rows.append(labels[i])
                bases.append(base)
                widths.append(width)
                texts.append(f"sample {m}")
    figure = go.Figure()
    colors = {"compute": DEVICE_COLORS[0], "communication": DEVICE_COLORS[1]}
    for part, (rows, bases, widths, texts) in spans.items():
        figure.add_trace(
            _span_bars(
                rows,
                bases,
                widths,
                name=f"{part} (ms)",
                marker={"color": colors[part], "line": {"color": "white", "width": 1}},
                text=texts if part == "compute" else None,
                textposition="inside",
                insidetextanchor="middle",
                # Plotly's %{x} of a bar with a base is its end: the duration and start go in customdata
                customdata=[[text, width, base] for text, width, base in zip(texts, widths, bases)],
                hovertemplate="%{y}<br>%{customdata[0]}: "
                + part
                + " %{customdata[1]:.4g} ms, from %{customdata[2]:.4g} ms<extra></extra>",
            )
        )
    _layout(
        figure,
        60,
        title=title or "Pipeline timeline (d x t: data x tensor replicas per stage)",
        barmode="overlay",
        height=max(260, 40 * len(parts) + 140),
        xaxis={"title": "time (ms; a stage's time per sample: its d replicas share the samples)"},
        yaxis={"autorange": "reversed"},
        legend={"orientation": "h", "y": -0.35},
        showlegend=True,
    )
    return figure
