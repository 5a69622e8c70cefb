"""Devices page: accelerators, CPU cores, memory, bandwidth and speed; presets; inventory; latency multipliers.

The current :class:`placement.Devices` lives in :mod:`ui.state`; the widgets here are
re-initialised from it whenever it changes elsewhere (a preset, the inventory editor, a new
graph) and write it back when moved. Every change applies live: the summary at the top
re-solves with the chosen method (cached).
"""

import math
from dataclasses import replace

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.model import MAX_DEVICE_COUNT, Recompute, ScheduleKind
from placement.patterns import compile_pattern
from ui import guard, live, state

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


st.title("Devices")
summary = st.container()

devices = state.current_devices()
first = devices.accelerators[0] if devices.accelerators else placement.AcceleratorKind("accelerator", 0)
file_devices = state.base_problem().devices

# ----------------------------------------------------------------------------- widget <-> devices
WIDGETS = (
    "dev_count",
    "dev_cpus",
    "dev_memory_limited",
    "dev_memory_gib",
    "dev_speed",
    "dev_bandwidth",
    "dev_overlap",
    "dev_cpu_pays",
    "dev_cpu_bandwidth",
)


def widget_values(devices: placement.Devices) -> dict:
    kind = devices.accelerators[0] if devices.accelerators else placement.AcceleratorKind("accelerator", 0)
    limited = math.isfinite(kind.memory)
    return {
        "dev_count": kind.count,
        "dev_cpus": devices.cpus,
        "dev_memory_limited": limited,
        "dev_memory_gib": kind.memory / 2**30 if limited else 16.0,
        "dev_speed": kind.speed,
        "dev_bandwidth": devices.bandwidth,
        "dev_overlap": devices.overlap,
        "dev_cpu_pays": devices.cpu_bandwidth is not None,
        "dev_cpu_bandwidth": devices.cpu_bandwidth if devices.cpu_bandwidth is not None else 1.0,
    }


values = widget_values(devices)
version = state.devices_version()
if state.sync_widgets("devices", values, version) or "_dev_bounds" not in st.session_state:
    # Slider bounds follow the state only when it changed elsewhere, never while a slider moves.
    st.session_state["_dev_bounds"] = (
        min(MAX_DEVICE_COUNT, state.stable_maximum(first.count)),
        min(MAX_DEVICE_COUNT, state.stable_maximum(devices.cpus)),
        # Factors from a file, link or card may lie outside the sliders' usual 0.05..8 (issue 27).
        (min(0.05, first.speed), max(8.0, first.speed)),
        (min(0.05, devices.bandwidth), max(8.0, devices.bandwidth)),
    )
max_count, max_cpus, speed_range, bandwidth_range = st.session_state["_dev_bounds"]

many_kinds = len(devices.accelerators) > 1
kind_note = f" (kind '{first.name}')" if many_kinds else ""

col_a, col_b = st.columns(2)
with col_a:
    st.slider(f"Number of accelerators{kind_note}", 0, max_count, key="dev_count")
    st.slider(
        "CPU cores",
        0,
        max_cpus,
        key="dev_cpus",
        help="Each core runs its nodes at their CPU latency; it pays no communication unless "
        "'CPU cores pay transfers' is on.",
    )
    st.toggle(
        "CPU cores pay transfers",
        key="dev_cpu_pays",
        help="Off (the paper's model): CPU cores pay no communication. On: a core pays the cost of every "
        "node whose output crosses its boundary, divided by bandwidth factor x CPU bandwidth "
        "(throughput only; single-sample latency ignores it).",
    )
    st.number_input(
        "CPU bandwidth",
        min_value=0.01,
        step=0.1,
        format="%.3f",
        key="dev_cpu_bandwidth",
        disabled=not st.session_state["dev_cpu_pays"],
        help="Transfers to/from a CPU core take cost / (bandwidth factor x CPU bandwidth).",
    )
    st.checkbox(f"Limit memory per accelerator{kind_note}", key="dev_memory_limited")
    st.number_input(
        "Memory per accelerator (GiB)",
        min_value=0.0,
        step=0.5,
        format="%.3f",
        key="dev_memory_gib",
        disabled=not st.session_state["dev_memory_limited"],
    )
with col_b:
    st.slider(
        f"Accelerator speed factor{kind_note}",
        *speed_range,
        step=0.05,
        key="dev_speed",
        help="Nodes run their accelerator latency divided by this factor "
        "(unless the graph gives a latency for this kind).",
    )
    st.slider(
        "Bandwidth factor",
        *bandwidth_range,
        step=0.05,
        key="dev_bandwidth",
        help="Transfers take cost / bandwidth factor (x the kind's own bandwidth).",
    )
    st.toggle(
        "Overlap compute and communication",
        key="dev_overlap",
        help="An accelerator's load becomes max(compute, communication) instead of their sum "
        "(the paper's appendix variant).",
    )

memory = st.session_state["dev_memory_gib"] * 2**30 if st.session_state["dev_memory_limited"] else math.inf
if (
    st.session_state["dev_memory_limited"]
    and st.session_state["dev_memory_gib"] == values["dev_memory_gib"]
    and math.isfinite(first.memory)
):
    memory = first.memory  # untouched: keep the exact byte count of the file
new_first = replace(
    first, count=int(st.session_state["dev_count"]), memory=memory, speed=float(st.session_state["dev_speed"])
)
kinds = (new_first,) + tuple(devices.accelerators[1:])
if not devices.accelerators and new_first.count == 0:
    kinds = ()  # the inventory table removed every kind: do not bring one back
from_widgets = devices.with_changes(
    accelerators=kinds,
    cpus=int(st.session_state["dev_cpus"]),
    bandwidth=float(st.session_state["dev_bandwidth"]),
    overlap=bool(st.session_state["dev_overlap"]),
    cpu_bandwidth=float(st.session_state["dev_cpu_bandwidth"]) if st.session_state["dev_cpu_pays"] else None,
)
if from_widgets != devices:
    state.set_devices(from_widgets)
    state.mark_synced("devices", state.devices_version())  # the widgets already show them
    devices = from_widgets

# ----------------------------------------------------------------------------- memory model (every page uses it)
st.subheader("Memory model")
MEMORY_MODELS = {
    "weights": "Weights only (the paper's model)",
    "training": "Training: weights + optimizer state + activations in flight",
}
model = state.current_memory_model()
for key, value in (
    ("dev_mm_kind", "training" if model.training else "weights"),
    ("dev_mm_schedule", model.schedule),
    ("dev_mm_microbatches", model.microbatches),
    ("dev_mm_optimizer", model.optimizer_multiplier),
    ("dev_mm_recompute", model.recompute),
):
    state.init_widget(key, value)
st.radio(
    "What accelerator memory must hold",
    list(MEMORY_MODELS),
    format_func=MEMORY_MODELS.get,
    key="dev_mm_kind",
    horizontal=True,
    help="Every page solves and reports with this model. Training: the exact DP (or the "
    "contiguous IP) plans with the schedule's peak memory per device.",
)
training_model = st.session_state["dev_mm_kind"] == "training"
col_s, col_m, col_o, col_r = st.columns([1.8, 1.8, 1.5, 1.6])  # room for the recompute choices
col_s.selectbox(
    "Schedule",
    (ScheduleKind.ONE_F_ONE_B.value, ScheduleKind.GPIPE.value),
    key="dev_mm_schedule",
    disabled=not training_model,
    format_func={ScheduleKind.ONE_F_ONE_B.value: "1F1B (PipeDream-Flush)", ScheduleKind.GPIPE.value: "GPipe"}.get,
)
col_m.slider("Microbatches (M)", 1, 64, key="dev_mm_microbatches", disabled=not training_model)
col_o.number_input(
    "Optimizer state (x weights)",
    0.0,
    16.0,
    value=None,
    step=0.5,
    key="dev_mm_optimizer",
    disabled=not training_model,
    placeholder="mixed-precision Adam",
    help="Bytes of optimizer state per byte of forward weights. Empty (the default): Adam with mixed precision "
    "for the graph's weight type: 16-bit weights keep an fp32 master copy and two fp32 moments, 12 bytes per "
    "2-byte weight (x6; with the fp16 weight and gradient, 16 bytes per parameter); fp32 weights (the paper's "
    "files) keep the two moments (x2). SGD with momentum: 1; 0 leaves it out.",
)
RECOMPUTE_LABELS = {
    Recompute.NONE.value: "No recomputation",
    Recompute.ALWAYS.value: "Every stage",
    Recompute.PER_STAGE.value: "Per stage (exact DP)",
}
col_r.selectbox(
    "Recompute",
    tuple(RECOMPUTE_LABELS),
    format_func=RECOMPUTE_LABELS.get,
    key="dev_mm_recompute",
    disabled=not training_model,
    help="Recompute activations in the backward pass: a recomputing stage stashes only its inputs and runs "
    "its forward pass again. Per stage: the exact DP chooses for each stage (the IP offers none or every stage).",
)
try:
    state.set_memory_model(
        placement.MemoryModel(
            training=training_model,
            schedule=st.session_state["dev_mm_schedule"],
            microbatches=int(st.session_state["dev_mm_microbatches"]),
            optimizer_multiplier=(
                None if st.session_state["dev_mm_optimizer"] is None else float(st.session_state["dev_mm_optimizer"])
            ),
            recompute=st.session_state["dev_mm_recompute"],
        )
    )
except placement.PlacementError as exc:
    st.error(f"Memory model not applied: {exc}")

# ----------------------------------------------------------------------------- presets
st.subheader("Presets")
preset_cols = st.columns(4) + st.columns(4)  # two rows, so that no button label is clipped
for i, (col, name) in enumerate(zip(preset_cols, state.PRESETS)):
    if col.button(name, key=f"dev_preset_{i}", width="stretch"):
        if name == "File's own settings":
            state.use_file_devices()
        else:
            state.set_devices(state.device_preset(name, devices, file_devices))
        st.rerun()
st.caption(state.devices_origin_text())
st.caption(
    "File's own settings: the inventory in the graph file. Paper model: identical accelerators "
    "(current count, first kind's memory), current CPU cores, bandwidth x1, no overlap. "
    "The others scale the current settings."
)

# ----------------------------------------------------------------------------- inventory
st.subheader("Accelerator inventory")
st.caption(
    "One row per accelerator kind. Memory empty = unlimited. Speed divides node latencies, bandwidth "
    "divides transfer costs on that kind. Add rows for heterogeneous devices."
)
COLUMNS = ["name", "count", "memory (GiB)", "speed", "bandwidth", "price/hour"]
source_key = "_dev_inventory_source"
if st.session_state.get(source_key, (None,))[0] != state.devices_version():
    frame = pd.DataFrame(
        [
            {
                "name": k.name,
                "count": k.count,
                "memory (GiB)": k.memory / 2**30 if math.isfinite(k.memory) else None,
                "speed": k.speed,
                "bandwidth": k.bandwidth,
                "price/hour": k.price_per_hour,
            }
            for k in devices.accelerators
        ],
        columns=COLUMNS,
    ).astype(
        {
            "name": "string",
            "count": "int64",
            "memory (GiB)": "float64",
            "speed": "float64",
            "bandwidth": "float64",
            "price/hour": "float64",
        }
    )
    st.session_state[source_key] = (state.devices_version(), frame, tuple(devices.accelerators))
_, source_frame, source_kinds = st.session_state[source_key]
edited = st.data_editor(
    source_frame,
    key=f"dev_inventory_{st.session_state[source_key][0]}",
    num_rows="dynamic",
    hide_index=True,
    column_config={
        "name": st.column_config.TextColumn("name", required=True),
        "count": st.column_config.NumberColumn("count", min_value=0, step=1, required=True),
        "memory (GiB)": st.column_config.NumberColumn("memory (GiB)", min_value=0.0, format="%.3f"),
        "speed": st.column_config.NumberColumn("speed", min_value=0.01, format="%.3f", required=True),
        "bandwidth": st.column_config.NumberColumn("bandwidth", min_value=0.01, format="%.3f", required=True),
        "price/hour": st.column_config.NumberColumn("price/hour", min_value=0.0, format="%.2f"),
    },
)


def kinds_from_frame(frame: pd.DataFrame, before: tuple) -> tuple:
    """Accelerator kinds from the edited table (unchanged rows keep their exact values)."""
    kinds = []
    for position, row in enumerate(frame.to_dict("records")):

        def value(column, default, row=row):
            item = row.get(column)
            return default if item is None or (isinstance(item, float) and math.isnan(item)) or item is pd.NA else item

        name = str(value("name", "")).strip()
        if not name:
            raise placement.InvalidDevicesError(f"inventory row {position + 1}: a name is required")
        memory_gib = value("memory (GiB)", None)
        for column in ("speed", "bandwidth"):  # no silent default for a new row
            if value(column, None) is None:
                raise placement.InvalidDevicesError(
                    f"inventory row {position + 1} ({name}): enter a {column} (1 = like the reference accelerator)"
                )
        kind = placement.AcceleratorKind(
            name=name,
            count=int(value("count", 0)),
            memory=float(memory_gib) * 2**30 if memory_gib is not None else math.inf,
            speed=float(value("speed", 1.0)),
            bandwidth=float(value("bandwidth", 1.0)),
            price_per_hour=float(value("price/hour", 0.0)),
        )
        for old in before:  # the table rounds nothing, but GiB <-> bytes may: keep the original bytes
            if (
                old.name == kind.name
                and math.isfinite(old.memory)
                and math.isfinite(kind.memory)
                and abs(old.memory - kind.memory) <= 1e-9 * old.memory
            ):
                kind = replace(kind, memory=old.memory)
        kinds.append(kind)
    return tuple(kinds)


try:
    edited_kinds = kinds_from_frame(edited, source_kinds)
    if edited_kinds != source_kinds:
        state.set_devices(devices.with_changes(accelerators=edited_kinds))
        st.rerun()
except (placement.PlacementError, ValueError, TypeError) as exc:
    st.error(f"Inventory not applied: {exc}")
state.init_widget("dev_currency", state.current_currency())
col_currency, col_cost_note = st.columns([1, 4], vertical_alignment="bottom")
col_currency.text_input(
    "Currency",
    key="dev_currency",
    max_chars=8,
    help="The label of every price and cost in the app (a label only: no exchange rates).",
)
try:
    state.set_currency(st.session_state["dev_currency"])
except placement.PlacementError as exc:
    st.error(f"Currency not applied: {exc}")
col_cost_note.caption(
    f"Prices are per hour per card in {state.current_currency()}. Every page counts the cost of every card held, "
    "idle ones included (an owned card costs the same whether the plan uses it or not): cost per sample = "
    "price per hour of the inventory x time per sample."
)
unlimited = [k.name for k in state.current_devices().accelerators if not math.isfinite(k.memory)]
if unlimited:
    st.caption(
        ":material/info: Unlimited memory (memory left empty) on: " + ", ".join(unlimited) + ". Enter GiB to limit it."
    )

# ----------------------------------------------------------------------------- latency multipliers
st.subheader("Latency multipliers")
st.caption(
    "Scale the latency (accelerator and CPU) of every node whose name matches a pattern "
    "(case-insensitive, anywhere in the name; `*` any text, `?` one character, `[0-9]` a set, `|` or, "
    "`^`/`$` start/end), e.g. `attention` x0.6 for a faster kernel."
)
rules = list(state.latency_rules())
col_p, col_f, col_add, col_clear = st.columns([3, 1, 1, 1], vertical_alignment="bottom")
col_p.text_input("Node name pattern", key="lat_pattern", placeholder="e.g. attention|softmax")
col_f.number_input("Factor", min_value=0.0, value=0.5, step=0.1, key="lat_factor")
if col_add.button("Add multiplier", key="lat_add"):
    pattern = st.session_state.get("lat_pattern", "").strip()
    if not pattern:
        st.error("Enter a pattern first.")
    else:
        try:
            state.set_latency_rules(rules + [(pattern, float(st.session_state["lat_factor"]))])
            rules = list(state.latency_rules())
        except placement.PlacementError as exc:
            st.error(str(exc))
if col_clear.button("Clear multipliers", key="lat_clear", disabled=not rules):
    state.set_latency_rules(())
    rules = []
if rules:
    names = [node.name or "" for node in state.base_problem().graph.nodes]
    st.dataframe(
        pd.DataFrame(
            [
                {"pattern": p, "factor": f, "matching nodes": sum(1 for n in names if compile_pattern(p).matches(n))}
                for p, f in rules
            ]
        ),
        key="lat_rules",
        hide_index=True,
    )

# ----------------------------------------------------------------------------- live summary (top of page)
with summary:
    devices = state.current_devices()
    st.markdown(f"**{state.current_graph_name()}** on {state.describe_devices(devices)}")
    problem = state.current_problem()
    method = state.live_method()
    with st.spinner(f"Solving with {state.method_name(method)}..."):
        result = state.solve_cached(problem, method, live=True)
    if live.from_table(result):
        st.caption(live.note(result))
    if method != state.current_method():
        st.caption(
            f"Live numbers use the exact DP; the Placement page runs {state.current_method()} "
            f"(up to {state.current_time_limit():g} s)."
        )
    method = result.method  # the method that ran (memory-aware under the training memory model)
    cols = st.columns(3) + st.columns(3)  # two rows: no headline number cut at 1024 px
    if result.ok:
        evaluation = placement.evaluate(problem, result.placement)
        cols[0].metric(
            "Time per sample",
            state.format_time(evaluation.max_load),
            help=f"Steady state: the max device load ({state.method_name(method)}), once the pipeline is full",
        )
        cols[1].metric(
            "Throughput",
            f"{evaluation.throughput * 1000:.6g} /s",
            help="Steady-state samples per second (no fill or drain)",
        )
        timing = state.batch_timing(problem, result)
        if timing is not None:
            cols[2].metric(
                "Time per batch",
                state.format_time(timing.batch_time),
                help=f"One batch of {timing.label()}, pipeline fill and drain included: "
                f"{timing.samples_per_second:.4g} samples/s, bubble {timing.bubble:.1%} (memory model's schedule).",
            )
        cols[3].metric("Devices used", f"{len(result.placement.stages)} of {len(devices.slots())}")
        cols[4].metric("Solve status", result.status)
        cost_value, cost_help = state.plan_cost_line(problem, result)
        cols[5].metric("Cost per 1M samples", cost_value, help=cost_help)
        if timing is not None:
            st.caption(
                f"Time per sample and throughput are the steady state; a batch of {timing.label()} takes "
                f"{state.format_time(timing.batch_time)} with fill and drain ({timing.samples_per_second:.4g} "
                "samples/s)."
            )
        order = [stage.device for stage in result.placement.stages]
        slots = order + [slot for slot in devices.slots() if slot not in order]
        st.plotly_chart(
            viz.load_figure(
                evaluation,
                slots=slots,
                overlap=devices.overlap,
                title="Load per device (details on the Placement page)",
            ),
            key="dev_load",
        )
    else:
        st.error(f"{method}: {result.status}: {result.reason}")
