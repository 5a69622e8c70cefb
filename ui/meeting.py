"""Widgets of the Meeting summary page (the numbers come from :mod:`placement.explore.meeting`).

Every number is the one Devices and Placement show for the same session: the plan is
:func:`ui.state.current_result` (the picked plan, else the cached solve), time per batch is
:func:`ui.state.batch_timing`, cost is :func:`ui.state.plan_cost`'s model, memory the model in force.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.explore.meeting import (
    IDLE_ADVICE,
    BatchFigures,
    MeetingSummary,
    default_more,
    format_rate,
    idle_text,
    meeting_summary,
    summary_markdown,
    worth_row,
    worth_row_today,
)
from placement.explore.purchase import Worth, worth_of_more
from placement.modelling.builders import TOKENS_KEY
from placement.solve import recomputing_devices
from placement.viz import meeting as viz_meeting
from ui import state

#: Most cards of one kind the comparison adds (each comparison is two exact solves).
MAX_MORE = 256


@st.cache_data(show_spinner=False, max_entries=64)
def _worth(
    digest: str, devices_key: str, model: placement.MemoryModel, kind: str, added: int, _problem: placement.Problem
) -> Worth:
    method, options = model.method_for("dp")
    return worth_of_more(_problem, kind, added, method=method, **options)


def worth_cached(problem: placement.Problem, kind: str, added: int) -> Worth:
    """:func:`placement.explore.purchase.worth_of_more` under the memory model in force (cached per session state)."""
    digest, devices_key = state.problem_key(problem)
    return _worth(digest, devices_key, state.current_memory_model(), kind, int(added), problem)


def _default_tokens() -> float | None:
    """Tokens per sample of a built transformer (``tokensPerSample``: micro-batch x sequence), else None."""
    graph = state.current_graph()
    tokens = graph.extra.get(TOKENS_KEY) if graph is not None else None
    if isinstance(tokens, (int, float)) and not isinstance(tokens, bool) and 0 < tokens < math.inf:
        return float(tokens)
    return None


def settings(devices: placement.Devices) -> tuple[int, float | None, dict[str, int]]:
    """The page's inputs: samples per run, tokens per sample (None: not given), cards to add per kind."""
    state.init_widget("ms_samples_run", 1_000_000)
    state.init_widget("ms_tokens", _default_tokens())
    defaults = default_more(devices)
    kinds = [k.name for k in devices.accelerators]
    state.sync_widgets(
        "meeting_more",
        {f"ms_more_{i}": min(MAX_MORE, defaults[name]) for i, name in enumerate(kinds)},
        state.devices_version(),
    )
    with st.expander("Settings: run size, tokens per sample, cards to compare", expanded=False):
        col_run, col_tokens = st.columns(2)
        samples = col_run.number_input(
            "Samples per run",
            min_value=1,
            max_value=10**12,
            step=100_000,
            key="ms_samples_run",
            help="Cost per run: whole batches of the memory model's microbatches, fill and drain included.",
        )
        tokens = col_tokens.number_input(
            "Tokens per sample",
            min_value=1.0,
            value=None,
            step=1.0,
            format="%g",
            key="ms_tokens",
            placeholder="e.g. batch x sequence length",
            help="A built transformer's micro-batch x sequence length by default; empty: no tokens/s.",
        )
        st.caption(
            "Cards to add per kind (default: the same spend for every kind - the first kind doubles, the others "
            "get what that buys at their price):"
        )
        more = {}
        columns = st.columns(min(4, max(1, len(kinds))))
        for i, name in enumerate(kinds):
            more[name] = int(
                columns[i % len(columns)].number_input(
                    f"More {name}", min_value=0, max_value=MAX_MORE, step=1, key=f"ms_more_{i}"
                )
            )
    return int(samples), (float(tokens) if tokens else None), more


def build_summary(
    problem: placement.Problem, result: placement.Result, samples: int, tokens: float | None, more: dict[str, int]
) -> MeetingSummary:
    """The summary of the session's plan (same functions as Devices and Placement)."""
    timing = state.batch_timing(problem, result)
    batch = None
    if timing is not None and timing.batch_time > 0 and math.isfinite(timing.batch_time):
        batch = BatchFigures(timing.label(), timing.microbatches, timing.batch_time, timing.bubble)
    worths = []
    with st.spinner("Solving the larger inventories..."):
        for name, n in more.items():
            if n > 0:
                worths.append(worth_cached(problem, name, n))
    return meeting_summary(
        problem,
        result,
        state.current_memory_model(),
        graph_name=state.current_graph_name(),
        devices_text=state.describe_devices(problem.devices),
        batch=batch,
        recomputing=recomputing_devices(result),
        currency=state.current_currency(),
        samples_per_run=samples,
        tokens_per_sample=tokens,
        worth=worths,
    )


def headline(summary: MeetingSummary) -> None:
    """Three rows of three metrics (four per row cut "64.0268 ms" at 1024 px with the sidebar open)."""
    s = summary
    cols = st.columns(3) + st.columns(3) + st.columns(3)
    cols[0].metric(
        "Time per sample",
        state.format_time(s.time_per_sample),
        help="Steady state: the max device load once the pipeline is full (as on Devices and Placement)",
    )
    if s.batch is not None:
        cols[1].metric(
            "Time per batch",
            state.format_time(s.batch.batch_time),
            help=f"One batch of {s.batch.label}, pipeline fill and drain included (bubble {s.batch.bubble:.1%})",
        )
    cols[2].metric(
        "Throughput",
        f"{s.throughput:.6g} /s",
        help="Steady-state samples per second"
        + (f"; {s.batch.samples_per_second:.4g} /s with fill and drain" if s.batch is not None else ""),
    )
    tokens = s.batch_tokens_per_second if s.batch is not None else s.tokens_per_second
    cols[3].metric(
        "Tokens/s",
        format_rate(tokens),
        help=(
            f"{s.tokens_per_sample:g} tokens per sample x samples/s"
            + (" with fill and drain" if s.batch is not None else "")
            + (f"; steady state {format_rate(s.tokens_per_second)}" if s.tokens_per_second is not None else "")
            if s.tokens_per_sample is not None
            else "Enter tokens per sample under Settings."
        ),
    )
    peak = s.peak
    if peak is not None:
        cols[4].metric(
            "Peak memory",
            viz.format_bytes(peak.peak),
            help=f"Highest per-device peak ({peak.device}) under {s.memory_model}",
        )
    cols[5].metric(
        "Price per hour",
        s.money(s.cost.price_per_hour),
        help=f"All {s.cost.devices_held} devices held, idle ones included (idle: {s.cost.idle_text()})",
    )
    cols[6].metric(
        "Cost per 1M samples",
        s.money(s.cost.cost_per_million) if s.cost.price_per_hour > 0 else "—",
        help="Price per hour x steady-state time per sample (as on Devices and Placement)",
    )
    cols[7].metric(
        "Cost per run",
        s.money(s.cost_per_run) if s.cost.price_per_hour > 0 else "—",
        help=f"{s.samples_per_run:,} samples in {s.run_hours:.4g} h"
        + (" (whole batches, fill and drain included)" if s.batch is not None else " (steady state)"),
    )
    if s.batch is not None:
        st.caption(
            f"Time per sample, throughput and cost per 1M samples are the steady state (as on Devices and Placement); "
            f"time per batch ({s.batch.label}), tokens/s and cost per run count pipeline fill and drain "
            f"({s.batch.samples_per_second:.4g} samples/s, bubble {s.batch.bubble:.1%})."
        )


def layout_section(summary: MeetingSummary) -> None:
    """Stages -> devices, and the idle devices."""
    st.subheader("Layout")
    rows = [
        {
            "stage": t.position,
            "device": t.device,
            "nodes": t.nodes,
            "first node": t.first,
            "last node": t.last,
            "load (ms)": round(t.load, 4),
        }
        for t in summary.stages
    ]
    st.dataframe(pd.DataFrame(rows), key="ms_layout", hide_index=True)
    if summary.idle:
        st.info(f"Idle devices: {idle_text(summary)}. {IDLE_ADVICE}", icon=":material/info:")


def memory_section(summary: MeetingSummary) -> None:
    """Memory fits per device with the breakdown."""
    st.subheader("Memory per device")
    if summary.fits:
        st.caption(f"Every device fits under {summary.memory_model}.")
    else:
        over = [str(b.device) for b in summary.memory if not b.fits]
        st.error(f"Out of memory on {', '.join(over)} under {summary.memory_model}.")
    st.plotly_chart(viz_meeting.memory_breakdown_figure(summary.memory, title=""), key="ms_memory_figure")
    st.dataframe(
        pd.DataFrame(memory_rows(summary)),
        key="ms_memory",
        hide_index=True,
        column_config={
            "grads": st.column_config.Column(help="gradients"),
            "activ.": st.column_config.Column(help="activations"),
            "memory": st.column_config.TextColumn(alignment="right"),  # numbers, or "unlimited"
            "free": st.column_config.TextColumn(alignment="right"),
        },
    )
    st.caption("GiB per device at its peak; free = memory left at the peak.")


def memory_rows(summary: MeetingSummary) -> list[dict]:
    """The breakdown in GiB with short headers ("grads", "activ.": every column readable at 1024 px).

    The parts are numbers; ``memory`` and ``free`` are text, "unlimited" for a CPU core (one type per column:
    a column of numbers and text is not an Arrow column, and Streamlit logged a traceback for it).
    """

    def gib(value: float) -> float:
        return round(value / 2**30, 2)

    def cap(value: float) -> str:
        return f"{gib(value):,g}" if math.isfinite(value) else "unlimited"

    return [
        {
            "device": str(b.device),
            "weights": gib(b.weights),
            "grads": gib(b.gradients),
            "optimizer": gib(b.optimizer),
            "activ.": gib(b.activations),
            "peak": gib(b.peak),
            "memory": cap(b.cap),
            "free": cap(b.free),
            "fits": "yes" if b.fits else "NO",
        }
        for b in summary.memory
    ]


def worth_section(summary: MeetingSummary) -> None:
    """Today against n more cards of each kind, side by side."""
    st.subheader("What more cards are worth")
    if not summary.worth:
        st.caption("Set a number of cards to add under Settings.")
        return
    first = summary.worth[0]
    columns = {"today": worth_row_today(first, summary.currency)}
    for w in summary.worth:
        columns[f"+{w.added} {w.kind}"] = worth_row(w, summary.currency)
    frame = pd.DataFrame(columns)
    frame.index.name = "exact optimum"
    st.dataframe(frame, key="ms_worth")
    st.plotly_chart(viz_meeting.worth_figure(summary.worth, summary.currency), key="ms_worth_figure")
    st.caption(
        "Each column is an exact solve (the DP under the memory model in force) of today's inventory plus the "
        "cards named; prices count every card held, idle ones included. Plan a purchase explores every mix."
    )


def download(summary: MeetingSummary) -> None:
    """The print-friendly Markdown with the same numbers."""
    stem = state.current_graph_name().replace("/", "_").replace(" ", "_").removesuffix(".json") or "graph"
    st.download_button(
        "Download summary (Markdown)",
        summary_markdown(summary),
        file_name=f"{stem}_meeting_summary.md",
        mime="text/markdown",
        key="ms_download",
    )
