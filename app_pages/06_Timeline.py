"""Timeline page: the pipeline schedule of the current plan over time, and memory over time.

Slider for the number of microbatches, schedule select (streaming inference, GPipe, 1F1B,
interleaved 1F1B with virtual stages, zero bubble ZB-H1), the per-device action lists, every
schedule side by side (bubble and peak memory),
the Gantt chart with bubbles, steady-state period against the max-load, fill & drain and
idle time; memory per device over time against its cap with the first OOM marked; a
Perfetto / Chrome trace download; and the memory-aware plan for the chosen schedule.
"""

import math

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.exact.memory_aware import solve_memory_aware
from placement.model import Recompute, ScheduleKind, Status
from placement.pipeline.memory import memory_breakdown, memory_profile, resolve_optimizer_multiplier
from placement.pipeline.schedule import ALL_SCHEDULES, SCHEDULES, compare_schedules, format_actions, simulate
from placement.pipeline.schedule import SCHEDULE_LABELS as SHORT_LABELS
from placement.pipeline.trace import chrome_trace_json
from ui import guard, scenario, state

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


st.title("Timeline")
st.caption(
    "The plan's stages run as a pipeline: every device works on one microbatch at a time, in the schedule's "
    "order. Each device is busy per microbatch for exactly its load (compute + communication), split into a "
    "forward and (in training) a backward unit, so the steady-state time per sample equals the max-load."
)

SCHEDULE_LABELS = {
    "inference": "streaming inference (forward only)",
    "gpipe": "GPipe (all forwards, then all backwards)",
    "1f1b": "1F1B (PipeDream-Flush)",
    "interleaved": "interleaved 1F1B (virtual stages)",
    "zbh1": "zero bubble ZB-H1 (split backward)",
}
PLANS = ("current plan", "memory-aware plan")


@st.cache_data(show_spinner="Planning with the schedule's memory...", max_entries=32)
def _memory_aware(
    key, schedule: str, microbatches: int, optimizer: float, recompute: bool, _problem: placement.Problem
) -> placement.Result:
    # A lower ideal cap than the default keeps the rare fallback to the unreduced lattice to a few seconds
    # (the result is then "feasible" with a bound and gap instead of a minute-long proof).
    return solve_memory_aware(
        _problem,
        schedule=schedule,
        microbatches=microbatches,
        optimizer_multiplier=optimizer,
        recompute=Recompute.of(recompute),
        max_ideals=200_000,
    )


problem = state.result_problem()
result = state.current_result()
if problem is None or result is None or not result.ok:
    reason = "" if result is None else f" ({result.status}{': ' + result.reason if result.reason else ''})"
    st.warning(f"No plan to show{reason}. Pick a graph and devices on the Graph and Devices pages.")
    st.stop()
plan_note = state.selected_plan()
if plan_note is not None:
    st.info(f"Showing the picked plan: {plan_note[2]}")

training_graph = problem.graph.is_training

# ----------------------------------------------------------------------------- controls
memory_model = state.current_memory_model()
# A changed training memory model resets the settings it decides; otherwise each widget keeps its value.
if memory_model.training:
    state.sync_widgets(
        "timeline_memory_model",
        {
            "timeline_schedule": memory_model.schedule,
            "timeline_microbatches": memory_model.microbatches,
            "timeline_optimizer": memory_model.optimizer_multiplier,
            "timeline_recompute": memory_model.recompute == Recompute.ALWAYS,
        },
        memory_model,
    )
else:
    state.mark_synced("timeline_memory_model", memory_model)
state.init_widget(
    "timeline_schedule", ScheduleKind.ONE_F_ONE_B.value if training_graph else ScheduleKind.INFERENCE.value
)
state.init_widget("timeline_microbatches", memory_model.microbatches)
state.init_widget("timeline_optimizer", memory_model.optimizer_multiplier)
state.init_widget("timeline_recompute", False)
if memory_model.training:
    st.caption(
        f"Memory model in force: {memory_model.describe()} (Devices page); the current plan was planned with it."
    )
state.init_widget("timeline_plan", PLANS[0])
state.init_widget("timeline_virtual", 2)
col_schedule, col_v, col_m, col_opt, col_re = st.columns([2, 1, 1.6, 1.2, 1.6])  # wide enough for every label
with col_schedule:
    schedule_kind = st.selectbox(
        "Schedule",
        ALL_SCHEDULES,
        key="timeline_schedule",
        persist_state=state.PERSIST,
        format_func=lambda s: SCHEDULE_LABELS[s],
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
        disabled=schedule_kind != "interleaved",
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
# The multiplier in force (the empty field resolves to the graph's mixed-precision Adam default).
optimizer = resolve_optimizer_multiplier(problem.graph, optimizer)
with col_re:
    recompute = st.toggle(
        "Recompute",
        key="timeline_recompute",
        persist_state=state.PERSIST,
        disabled=not training,
        help="Recompute activations: stash only each stage's input; re-run the forward pass in the backward pass.",
    )
# The link carries these settings (ui.scenario.SETTINGS_KEYS): app.py synced the URL before they were rendered.
scenario.sync_url()
virtual_used = int(virtual) if schedule_kind == "interleaved" else None
if training and not training_graph:
    st.info("This graph has no backward nodes: the backward units are empty.")
if not training and training_graph:
    st.info("Streaming inference runs only the forward nodes of this training graph.")

plannable = schedule_kind in SCHEDULES
plan_kind = st.radio(
    "Plan",
    PLANS,
    key="timeline_plan",
    persist_state=state.PERSIST,
    horizontal=True,
    disabled=not plannable,
    help="The memory-aware plan is the optimal split whose devices hold this schedule's peak "
    "memory (weights + optimizer state + in-flight activations); it plans for inference, "
    "GPipe and 1F1B.",
)
shown_result = result
aware = None
if plan_kind == PLANS[1] and not plannable:
    st.info("The memory-aware planner plans for inference, GPipe and 1F1B: showing the current plan.")
if plan_kind == PLANS[1] and plannable:
    aware = _memory_aware(
        state.problem_key(problem),
        schedule_kind,
        microbatches,
        optimizer if training else 0.0,
        bool(recompute and training),
        problem,
    )
    if aware is None or not aware.ok:
        why = "" if aware is None else f": {aware.status}{' - ' + aware.reason if aware.reason else ''}"
        st.error(f"No memory-aware plan{why}")
        st.stop()
    shown_result = aware
    if aware.status == Status.FEASIBLE:
        st.warning(
            f"Memory-aware plan not proven optimal: within {aware.gap:.1%} of the bound {aware.bound:.6g}."
            if aware.gap is not None
            else f"Memory-aware plan not proven optimal ({aware.reason})."
        )

plan = shown_result.placement
if schedule_kind == "interleaved" and virtual_used:
    # Stage i runs on the device of stage i mod (stages / v): on a mixed plan that is another kind (issue 26).
    ranks = max(1, len(plan.stages) // virtual_used)
    moved = [
        (i, plan.stages[i].device, plan.stages[i % ranks].device)
        for i in range(len(plan.stages))
        if plan.stages[i].device.kind != plan.stages[i % ranks].device.kind
    ]
    if moved:
        i, planned, runs = moved[0]
        st.warning(
            f"Interleaved 1F1B runs {len(moved)} stage{'s' if len(moved) != 1 else ''} on another kind of device "
            f"than planned (e.g. stage {i}, planned on {planned}, runs on {runs}): the schedule's times use the "
            "devices it runs on, which may be slower. Plan stages of one kind for interleaving."
        )
try:
    schedule = simulate(
        problem, plan, microbatches, schedule_kind, recompute=bool(recompute and training), virtual=virtual_used
    )
except placement.PlacementError as exc:
    st.error(str(exc))
    st.stop()
evaluation = placement.evaluate(problem, plan)

# ----------------------------------------------------------------------------- numbers
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
m3.metric("Makespan", state.format_time(schedule.makespan), help=f"All {microbatches} microbatches, fill to drain.")
m4.metric(
    "Fill & drain", state.format_time(schedule.fill_drain), help="Makespan minus N x steady-state time per sample."
)
m5.metric("Bubble", f"{schedule.bubble_fraction:.1%}", help="Idle device-time / (devices x makespan).")
if schedule_kind == ScheduleKind.GPIPE:
    st.caption(
        "GPipe's steady-state time per sample is the slowest forward unit plus the slowest backward unit, "
        "which exceeds the max-load when different devices are the bottleneck of each pass."
    )
elif not (schedule_kind == ScheduleKind.INFERENCE and training_graph) and not recompute:
    same = math.isclose(schedule.period, evaluation.max_load, rel_tol=1e-9, abs_tol=1e-12)
    st.caption(
        "Steady-state time per sample = max-load."
        if same
        else "Steady-state time per sample differs from the max-load."
    )

st.plotly_chart(viz.schedule_figure(schedule), key="timeline_gantt")

idle_rows = [
    {
        "device": str(device),
        "stages": ", ".join(map(str, schedule.stages_of(device))),
        "busy": schedule.makespan - idle,
        "idle": idle,
        "idle %": 100 * idle / schedule.makespan if schedule.makespan else 0.0,
        "forward unit": schedule.device_work(device)[0],
        "backward unit": schedule.device_work(device)[1],
    }
    for device, idle in schedule.idle
]
st.dataframe(pd.DataFrame(idle_rows), hide_index=True, key="timeline_idle_table")
with st.expander("Action list per device (torch.distributed.pipelining notation)"):
    st.caption(
        "Each device runs its actions in this order: <stage><F|B|I|W><microbatch>; F forward, B full "
        "backward, I input-gradient backward, W weight-gradient backward (ZB-H1)."
    )
    st.code(format_actions(schedule), language=None)

# ----------------------------------------------------------------------------- memory
st.subheader("Memory over time")
profile = memory_profile(problem, schedule, optimizer if training else 0.0)
st.plotly_chart(viz.memory_timeline_figure(profile), key="timeline_memory_chart")
oom = profile.first_oom
peak_device = max(profile.devices, key=lambda d: d.peak)
if oom is None:
    st.success(
        f"Every device fits. Highest peak: {viz.format_bytes(peak_device.peak)} on {peak_device.device} "
        f"at t = {peak_device.peak_time:.6g}."
    )
else:
    device, when = oom
    entry = profile.of(device)
    st.error(
        f"First OOM: {device} goes over its {viz.format_bytes(entry.cap)} at t = {when:.6g} "
        f"(peak {viz.format_bytes(entry.peak)})."
    )
st.dataframe(pd.DataFrame(viz.peak_memory_rows(profile)), hide_index=True, key="timeline_peak_table")
if training:
    st.caption(
        f"Peak breakdown per device (optimizer state x{optimizer:g} forward weights; activations: what the "
        "stage's forward nodes keep for the backward, bytes written, for every microbatch in flight at the peak):"
    )
else:
    st.caption("Peak breakdown per device:")
breakdown = memory_breakdown(
    problem,
    plan,
    schedule_kind,
    microbatches,
    optimizer if training else 0.0,
    schedule.recompute,
    virtual=virtual_used,
)
st.dataframe(pd.DataFrame(viz.memory_breakdown_rows(breakdown)), hide_index=True, key="timeline_breakdown_table")

# ----------------------------------------------------------------------------- every schedule side by side
st.subheader("Schedules side by side")
st.caption(
    f"Every schedule on this plan with {microbatches} microbatch{'es' if microbatches != 1 else ''}: bubble "
    "(idle share of device time) and the peak memory of the fullest device (weights, optimizer state, "
    "in-flight activations). Interleaved 1F1B uses the virtual stages set above."
)
compared = compare_schedules(problem, plan, microbatches, recompute=bool(recompute), virtual=int(virtual))
entries = []
for kind, other, reason in compared:
    other_profile = None
    if other is not None:
        other_profile = memory_profile(problem, other, optimizer if kind != ScheduleKind.INFERENCE else 0.0)
    entries.append((SHORT_LABELS[kind], other, other_profile, reason))
comparison_rows = viz.schedule_comparison_rows(entries)
st.plotly_chart(viz.schedule_comparison_figure(comparison_rows), key="timeline_compare_chart")
table = pd.DataFrame(comparison_rows)
table["bubble"] = ["" if pd.isna(b) else f"{b:.1%}" for b in table["bubble"]]
st.dataframe(table, hide_index=True, key="timeline_compare_schedules")
state.init_widget("timeline_compare_gantts", False)
show_all = st.toggle("Show every schedule's Gantt chart", key="timeline_compare_gantts", persist_state=state.PERSIST)
if show_all:
    charts = [(kind, other) for kind, other, _ in compared if other is not None]
    for start in range(0, len(charts), 2):
        columns = st.columns(2)
        for column, (kind, other) in zip(columns, charts[start : start + 2]):
            with column:
                st.plotly_chart(
                    viz.schedule_figure(
                        other,
                        title=f"{SHORT_LABELS[kind]}: makespan {other.makespan:.4g}, bubble {other.bubble_fraction:.1%}",
                        height=max(240, 60 + 36 * len(other.devices)),
                    ),
                    key=f"timeline_compare_gantt_{kind}",
                )

# ----------------------------------------------------------------------------- memory-aware comparison
if training and plannable:
    with st.expander("Memory-aware planning for this schedule", expanded=plan_kind == PLANS[1]):
        st.markdown(
            "The plain plan checks memory as the nodes' sizes only. The memory-aware plan is the optimal split "
            "whose devices hold the schedule's peak (weights + optimizer state + in-flight activations: 1F1B keeps "
            "min(K - k, N) microbatches on the stage at position k of K, GPipe all N). Lower the accelerator memory "
            "on the Devices page to see them differ."
        )
        state.init_widget("timeline_compare", False)
        compare = st.toggle(
            "Compare the current plan with the memory-aware plan",
            key="timeline_compare",
            persist_state=state.PERSIST,
            help="Solves the memory-aware DP for this schedule (cached; seconds on operator graphs).",
        )
        if aware is None and compare:
            aware = _memory_aware(
                state.problem_key(problem), schedule_kind, microbatches, optimizer, bool(recompute), problem
            )
        if aware is not None:
            plain_profile = (
                profile
                if plan_kind == PLANS[0]
                else memory_profile(
                    problem,
                    simulate(problem, result.placement, microbatches, schedule_kind, recompute=bool(recompute)),
                    optimizer,
                )
            )
            rows = [
                {
                    "plan": "current plan",
                    "status": result.status,
                    "time per sample": result.objective,
                    "stages": len(result.placement.stages),
                    "fits this schedule's memory": plain_profile.fits,
                },
                {
                    "plan": "memory-aware plan",
                    "status": aware.status,
                    "time per sample": aware.objective,
                    "stages": len(aware.placement.stages) if aware.ok else None,
                    "fits this schedule's memory": aware.ok,
                },
            ]
            st.dataframe(pd.DataFrame(rows), hide_index=True, key="timeline_aware_table")

# ----------------------------------------------------------------------------- trace download
st.download_button(
    "Download Perfetto / Chrome trace (JSON)",
    data=chrome_trace_json(schedule, profile),
    file_name=f"schedule_{schedule_kind}_{microbatches}.json",
    mime="application/json",
    key="timeline_trace_download",
    help="Open it in https://ui.perfetto.dev or chrome://tracing (graph times taken as milliseconds).",
)
with st.expander("How the schedule is computed"):
    st.markdown(
        "* Each device runs, per microbatch, a **forward unit** (incoming transfers, forward compute, outgoing "
        "transfers) and in training a **backward unit** (the same for the backward nodes, plus the forward compute "
        "again with recomputation). Forward + backward unit = the device's load from the evaluator.\n"
        "* A unit starts when the device is free and the units it depends on (graph edges between devices, same "
        "microbatch) have ended.\n"
        "* **Inference** streams F0, F1, ...; **GPipe** runs all forwards then all backwards; **1F1B** runs "
        "min(K - k - 1, N) warm-up forwards on the stage at position k of K, then alternates one forward and one "
        "backward, then drains.\n"
        "* **Interleaved 1F1B** (torch's ScheduleInterleaved1F1B, Megatron's interleaving): with v virtual stages per "
        "device, stage i runs on the device of stage i mod D; each device cycles through its stages in rounds of "
        "microbatches.\n"
        "* **ZB-H1** (zero bubble): the backward unit splits into the input-gradient part I (what the neighbouring "
        "stage waits for) and the weight-gradient part W; device d defers d W units to fill the drain bubble (mirrored "
        "when the graph's gradient edges run from the first stage to the last). The split is the backward nodes' "
        "weightGradFraction field, else 1:1. A microbatch's activations stay until its W ends.\n"
        "* Memory: weights always; optimizer state (training); each microbatch's activations (output bytes of the "
        "stage's forward nodes, from the edge sizes) from its forward unit to the end of its backward unit."
    )
