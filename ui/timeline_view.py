"""The Timeline page's widgets: the schedule controls, the numbers, memory over time, every schedule side by side."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.exact.memory_aware import solve_memory_aware
from placement.model import Recompute, ScheduleKind
from placement.pipeline.memory import memory_breakdown, memory_profile, resolve_optimizer_multiplier
from placement.pipeline.registry import SCHEDULE_LABELS as SHORT_LABELS
from placement.pipeline.schedule import ALL_SCHEDULES, compare_schedules
from ui import state
from ui import timeline as tl


@st.cache_data(show_spinner="Planning with the schedule's memory...", max_entries=32)
def memory_aware(
    key, schedule: str, microbatches: int, optimizer: float, recompute: bool, _problem: placement.Problem
) -> placement.Result:
    """The memory-aware DP's plan for ``schedule`` (cached on the problem's key and the settings)."""
    return solve_memory_aware(
        _problem,
        schedule=schedule,
        microbatches=microbatches,
        optimizer_multiplier=optimizer,
        recompute=Recompute.of(recompute),
        max_ideals=tl.MEMORY_AWARE_MAX_IDEALS,
    )


@dataclass(frozen=True)
class Settings:
    """What the controls chose (``optimizer``: the multiplier in force, the empty field resolved)."""

    schedule: str
    virtual: int
    microbatches: int
    optimizer: float
    recompute: bool

    @property
    def training(self) -> bool:
        return self.schedule != ScheduleKind.INFERENCE

    @property
    def virtual_used(self) -> int | None:
        return int(self.virtual) if self.schedule == ScheduleKind.INTERLEAVED else None


def _init(problem: placement.Problem, memory_model: placement.MemoryModel) -> None:
    # A changed training memory model resets the settings it decides; otherwise each widget keeps its value.
    if memory_model.training:
        state.sync_widgets("timeline_memory_model", tl.memory_model_settings(memory_model), memory_model)
    else:
        state.mark_synced("timeline_memory_model", memory_model)
    state.init_widget("timeline_schedule", tl.default_schedule(problem.graph.is_training))
    state.init_widget("timeline_microbatches", memory_model.microbatches)
    state.init_widget("timeline_optimizer", memory_model.optimizer_multiplier)
    state.init_widget("timeline_recompute", False)
    if memory_model.training:
        st.caption(
            f"Memory model in force: {memory_model.describe()} (Devices page); the current plan was planned with it."
        )
    state.init_widget("timeline_plan", tl.PLANS[0])
    state.init_widget("timeline_virtual", 2)


def controls(problem: placement.Problem, memory_model: placement.MemoryModel) -> Settings:
    """Schedule, virtual stages, microbatches, optimizer state and recomputation."""
    _init(problem, memory_model)
    # Two rows, so that every label and value fits at 1024 px (issue 26: five in a row were cut).
    col_schedule, col_v = st.columns([2, 1])
    col_m, col_opt, col_re = st.columns(3)
    with col_schedule:
        schedule_kind = st.selectbox(
            "Schedule",
            ALL_SCHEDULES,
            key="timeline_schedule",
            persist_state=state.PERSIST,
            format_func=lambda s: tl.SCHEDULE_LABELS[s],
            help="Streaming inference runs forward units only; GPipe and 1F1B run a forward "
            "and a backward unit per microbatch and flush at the end of the batch. "
            "Interleaved 1F1B runs several stages per device (stage i on device i mod D); "
            "ZB-H1 splits the backward into input- and weight-gradient parts and lets the "
            "weight parts fill the bubbles.",
        )
    with col_v:
        virtual = st.number_input(
            "Virtual stages / device",
            1,
            8,
            step=1,
            key="timeline_virtual",
            persist_state=state.PERSIST,
            disabled=schedule_kind != ScheduleKind.INTERLEAVED,
            help="Interleaved 1F1B: the plan's S stages run on S / v devices, stage i on the "
            "device of stage i mod (S / v). S must be a multiple of v.",
        )
    with col_m:
        microbatches = st.slider(
            "Samples / microbatches (N)", 1, 64, key="timeline_microbatches", persist_state=state.PERSIST
        )
    training = schedule_kind != ScheduleKind.INFERENCE
    with col_opt:
        optimizer = st.number_input(
            "Optimizer state (x weights)",
            0.0,
            16.0,
            value=None,
            step=0.5,
            key="timeline_optimizer",
            persist_state=state.PERSIST,
            disabled=not training,
            placeholder="mixed-precision Adam",
            help="Bytes of optimizer state per byte of forward weights. Empty: Adam with mixed precision for the "
            "graph's weight type (x6 for 16-bit weights: fp32 master + two fp32 moments; x2 for fp32 weights).",
        )
    with col_re:
        recompute = st.toggle(
            "Recompute",
            key="timeline_recompute",
            persist_state=state.PERSIST,
            disabled=not training,
            help="Recompute activations: stash only each stage's input; re-run the forward pass in the backward pass.",
        )
    # The multiplier in force (the empty field resolves to the graph's mixed-precision Adam default).
    optimizer = resolve_optimizer_multiplier(problem.graph, optimizer)
    return Settings(schedule_kind, int(virtual), int(microbatches), optimizer, bool(recompute))


def render_numbers(schedule, evaluation, settings: Settings, training_graph: bool) -> None:
    """Period, max-load, makespan, fill and drain, bubble; and how the period relates to the max-load."""
    m1, m2, m3 = st.columns(3)  # two rows: no headline number cut at 1024 px (issue 26)
    m4, m5, _ = st.columns(3)
    m1.metric(
        "Period (steady state)",
        state.format_time(schedule.period),
        help="Steady-state time per sample: the period of the schedule once the pipeline is full.",
    )
    m2.metric(
        "Max-load (evaluator)",
        state.format_time(evaluation.max_load),
        help="The largest per-sample load of any device, from the independent evaluator.",
    )
    help_makespan = f"All {settings.microbatches} microbatches, fill to drain."
    m3.metric("Makespan", state.format_time(schedule.makespan), help=help_makespan)
    help_fill = "Makespan minus N x steady-state time per sample."
    m4.metric("Fill & drain", state.format_time(schedule.fill_drain), help=help_fill)
    m5.metric("Bubble", f"{schedule.bubble_fraction:.1%}", help="Idle device-time / (devices x makespan).")
    note = tl.period_note(settings.schedule, training_graph, settings.recompute, schedule.period, evaluation.max_load)
    if note:
        st.caption(note)


def render_memory(problem: placement.Problem, plan, schedule, settings: Settings):
    """Memory over time against each cap (the first OOM marked), peaks and their breakdown; returns the profile."""
    st.subheader("Memory over time")
    optimizer = settings.optimizer if settings.training else 0.0
    profile = memory_profile(problem, schedule, optimizer)
    st.plotly_chart(viz.memory_timeline_figure(profile), key="timeline_memory_chart")
    peak_device = max(profile.devices, key=lambda d: d.peak)
    if profile.first_oom is None:
        st.success(
            f"Every device fits. Highest peak: {viz.format_bytes(peak_device.peak)} on {peak_device.device} "
            f"at t = {peak_device.peak_time:.6g}."
        )
    else:
        device, when = profile.first_oom
        entry = profile.of(device)
        st.error(
            f"First OOM: {device} goes over its {viz.format_bytes(entry.cap)} at t = {when:.6g} "
            f"(peak {viz.format_bytes(entry.peak)})."
        )
    st.dataframe(pd.DataFrame(viz.peak_memory_rows(profile)), hide_index=True, key="timeline_peak_table")
    if settings.training:
        st.caption(
            f"Peak breakdown per device (optimizer state x{settings.optimizer:g} forward weights; activations: what "
            "the stage's forward nodes keep for the backward, bytes written, for every microbatch in flight at the "
            "peak):"
        )
    else:
        st.caption("Peak breakdown per device:")
    breakdown = memory_breakdown(
        problem, plan, settings.schedule, settings.microbatches, optimizer, schedule.recompute,
        virtual=settings.virtual_used,
    )  # fmt: skip
    st.dataframe(pd.DataFrame(viz.memory_breakdown_rows(breakdown)), hide_index=True, key="timeline_breakdown_table")
    return profile


def render_side_by_side(problem: placement.Problem, plan, settings: Settings) -> None:
    """Every schedule on this plan: bubble and peak memory, and (on demand) every Gantt chart."""
    st.subheader("Schedules side by side")
    n = settings.microbatches
    st.caption(
        f"Every schedule on this plan with {n} microbatch{'es' if n != 1 else ''}: bubble "
        "(idle share of device time) and the peak memory of the fullest device (weights, optimizer state, "
        "in-flight activations). Interleaved 1F1B uses the virtual stages set above."
    )
    compared = compare_schedules(problem, plan, n, recompute=settings.recompute, virtual=settings.virtual)
    entries = []
    for kind, other, reason in compared:
        other_profile = None
        if other is not None:
            optimizer = settings.optimizer if kind != ScheduleKind.INFERENCE else 0.0
            other_profile = memory_profile(problem, other, optimizer)
        entries.append((SHORT_LABELS[kind], other, other_profile, reason))
    comparison_rows = viz.schedule_comparison_rows(entries)
    st.plotly_chart(viz.schedule_comparison_figure(comparison_rows), key="timeline_compare_chart")
    table = pd.DataFrame(comparison_rows)
    table["bubble"] = ["" if pd.isna(b) else f"{b:.1%}" for b in table["bubble"]]
    st.dataframe(table, hide_index=True, key="timeline_compare_schedules")
    state.init_widget("timeline_compare_gantts", False)
    if not st.toggle("Show every schedule's Gantt chart", key="timeline_compare_gantts", persist_state=state.PERSIST):
        return
    charts = [(kind, other) for kind, other, _ in compared if other is not None]
    for start in range(0, len(charts), 2):
        for column, (kind, other) in zip(st.columns(2), charts[start : start + 2]):
            with column:
                title = f"{SHORT_LABELS[kind]}: makespan {other.makespan:.4g}, bubble {other.bubble_fraction:.1%}"
                figure = viz.schedule_figure(other, title=title, height=max(240, 60 + 36 * len(other.devices)))
                st.plotly_chart(figure, key=f"timeline_compare_gantt_{kind}")
