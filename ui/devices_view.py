"""The Devices page's sections: catalogue GPUs, a measured device profile, memory model, inventory and currency,
latency multipliers, summary.

Each ``render_*`` draws its widgets and writes the shared state back (:mod:`ui.state`); the
conversions are plain functions in :mod:`ui.devices_form`.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.modelling.pricing import has_work
from ui import devices_form as form
from ui import live, state, worker


def _kept(key: str, default):
    """The ``value=`` of widget ``key``: its value in the session state, else ``default`` (the state is not written).

    A widget's browser component that is mounted afresh (under load a rerun can land while the page is
    redrawn) starts from its ``value=`` and sends it back: without it a text input came back empty
    ("Currency not applied: ... (got '')", issue 45). Every widget here whose default is not its
    minimum or empty takes its value this way.
    """
    return st.session_state.get(key, default)


def render_catalogue(devices: placement.Devices) -> None:
    """Pick GPUs from the hardware catalogue: a kind and a count, added to the inventory or as the only kind."""
    st.subheader("GPUs from the catalogue")
    names = list(form.ACCELERATORS)
    chosen = _kept("dev_cat_kind", "H100")
    col_kind, col_count, col_add, col_only = st.columns([2, 1.2, 1.3, 1.6], vertical_alignment="bottom")
    kind = col_kind.selectbox(
        "GPU kind",
        names,
        index=names.index(chosen) if chosen in names else 0,
        key="dev_cat_kind",
        help="The kinds of the hardware catalogue (its table is under the inventory).",
    )
    count = col_count.number_input(
        "Count",
        min_value=0,
        max_value=form.MAX_DEVICE_COUNT,
        step=1,
        value=_kept("dev_cat_count", 8),
        key="dev_cat_count",
    )
    changed = None
    if col_add.button("Add / set count", key="dev_cat_add", width="stretch"):
        changed = form.with_catalogue_kind(devices, kind, int(count))
    if col_only.button("Use only this kind", key="dev_cat_only", width="stretch"):
        changed = form.only_catalogue_kind(devices, kind, int(count))
    if changed is not None:
        state.set_devices(changed)
        st.rerun()
    st.caption(
        "The hardware catalogue (its table is under the inventory) gives each kind's memory, links and default "
        "price; the graph is re-priced for every catalogue kind in the inventory."
    )


def render_profile(devices: placement.Devices) -> None:
    """A device profile from ``python -m placement calibrate``: its measured device joins (or replaces) a kind.

    A bad file is one line and changes nothing; "Remove profile" gives the kind back to the catalogue.
    """
    ss = st.session_state
    st.subheader("Measured device profile")
    uploaded = st.file_uploader(
        f"Device profile from python -m placement calibrate (JSON, at most {form.MAX_PROFILE_BYTES // 2**20} MiB)",
        type=["json"],
        key="dev_profile_upload",
        max_upload_size=max(1, form.MAX_PROFILE_BYTES // 2**20),
        help="The measured device becomes a kind of the inventory, in the place of the catalogue kind it was "
        "measured on: the graph is priced from its measured matrix, attention and memory rates.",
    )
    current = state.current_profile()
    if uploaded is None:
        ss["_dev_profile_seen"], ss["_dev_profile_error"] = None, None
    elif ss.get("_dev_profile_seen") != (seen := (uploaded.file_id, uploaded.name, uploaded.size)):
        ss["_dev_profile_seen"], ss["_dev_profile_error"] = seen, None
        try:
            kind = form.read_profile(uploaded.name, uploaded.getvalue())
        except placement.PlacementError as exc:
            ss["_dev_profile_error"] = str(exc).splitlines()[0]
        else:
            count = int(ss.get("dev_cat_count", 8))
            changed = form.with_measured_kind(devices, kind, count, current[0].name if current else None)
            state.set_profile(kind, uploaded.name)
            state.set_devices(changed)
            st.rerun()
    if ss.get("_dev_profile_error"):
        st.error(f"Profile not applied: {ss['_dev_profile_error']} (the inventory stays as it was)")
    if current is None:
        st.caption(
            "A profile prices the kind it was measured on (an H100's prices the H100 row) from the rates measured "
            "on that device instead of the spec sheet; a device the catalogue lacks is added as a kind of its own."
        )
        return
    kind, file_name = current
    col_note, col_remove = st.columns([5, 1.3], vertical_alignment="center")
    in_inventory = any(k.name == kind.name for k in devices.accelerators)
    problem = state.base_problem()
    has_kernels = problem is not None and has_work(problem.graph)
    col_note.caption(form.profile_note(kind, file_name, in_inventory, has_kernels))
    if col_remove.button("Remove profile", key="dev_profile_remove", width="stretch"):
        state.set_devices(form.without_measured_kind(devices, kind))
        state.set_profile(None)
        st.rerun()


def render_memory_model() -> None:
    """The memory model every page solves and reports with."""
    st.subheader("Memory model")
    for key, value in form.memory_model_values(state.current_memory_model()).items():
        state.init_widget(key, value)
    st.radio(
        "What accelerator memory must hold",
        list(form.MEMORY_MODELS),
        format_func=form.MEMORY_MODELS.get,
        key="dev_mm_kind",
        horizontal=True,
        help="Every page solves and reports with this model. Training: the exact DP (or the "
        "contiguous IP) plans with the schedule's peak memory per device.",
    )
    weights_only = st.session_state["dev_mm_kind"] != "training"
    col_s, col_m, col_o, col_r = st.columns([1.8, 1.8, 1.5, 1.6])  # room for the recompute choices
    col_s.selectbox(
        "Schedule",
        tuple(form.TRAINING_SCHEDULES),
        key="dev_mm_schedule",
        disabled=weights_only,
        format_func=form.TRAINING_SCHEDULES.get,
    )
    col_m.slider("Microbatches (M)", 1, 64, key="dev_mm_microbatches", disabled=weights_only)
    col_o.number_input(
        "Optimizer state (x weights)",
        0.0,
        16.0,
        value=None,
        step=0.5,
        key="dev_mm_optimizer",
        disabled=weights_only,
        placeholder="mixed-precision Adam",
        help="Bytes of optimizer state per byte of forward weights. Empty (the default): Adam with mixed precision "
        "for the graph's weight type: 16-bit weights keep an fp32 master copy and two fp32 moments, 12 bytes per "
        "2-byte weight (x6; with the fp16 weight and gradient, 16 bytes per parameter); fp32 weights (the paper's "
        "files) keep the two moments (x2). SGD with momentum: 1; 0 leaves it out.",
    )
    col_r.selectbox(
        "Recompute",
        tuple(form.RECOMPUTE_LABELS),
        format_func=form.RECOMPUTE_LABELS.get,
        key="dev_mm_recompute",
        disabled=weights_only,
        help="Recompute activations in the backward pass: a recomputing stage stashes only its inputs and runs "
        "its forward pass again. Per stage: the exact DP chooses for each stage (the IP offers none or every stage).",
    )
    try:
        state.set_memory_model(form.memory_model_from_widgets(st.session_state))
    except placement.PlacementError as exc:
        st.error(f"Memory model not applied: {exc}")


def render_inventory(devices: placement.Devices) -> None:
    """The accelerator inventory table (one row per kind) and the currency of prices."""
    st.subheader("Accelerator inventory")
    st.caption(
        "One row per accelerator kind. A kind named as in the hardware catalogue (H100, A100, ...) runs the "
        "graph's times priced for that GPU; speed is a what-if multiplier on top (1 = as priced, 1.2 = 20 % "
        "faster). Memory empty = unlimited; bandwidth divides transfer costs on that kind; price per card-hour."
    )
    source_key = "_dev_inventory_source"
    if st.session_state.get(source_key, (None,))[0] != state.devices_version():
        frame = form.inventory_frame(devices)
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
            "price/hour": st.column_config.NumberColumn(
                f"price/hour ({state.current_currency()})", min_value=0.0, format="%.2f"
            ),
        },
    )
    try:
        edited_kinds = form.kinds_from_frame(edited, source_kinds)
        if edited_kinds != source_kinds:
            state.set_devices(devices.with_changes(accelerators=edited_kinds))
            st.rerun()
    except (placement.PlacementError, ValueError, TypeError) as exc:
        st.error(f"Inventory not applied: {exc}")
    col_currency, col_cpu_price, col_cost_note = st.columns([1, 1.4, 3.6], vertical_alignment="bottom")
    _cpu_price(col_cpu_price, devices)
    col_currency.text_input(
        "Currency",
        value=_kept("dev_currency", state.current_currency()),
        key="dev_currency",
        max_chars=8,
        help="The label of every price and cost in the app (a label only: no exchange rates).",
    )
    try:
        state.set_currency(st.session_state["dev_currency"])
    except placement.PlacementError as exc:
        st.error(f"Currency not applied: {exc}")
    col_cost_note.caption(
        f"Prices are per hour per card in {state.current_currency()} (the catalogue's defaults are USD; another "
        "currency is a label only: edit the prices). Every page counts the cost of every card "
        "held, idle ones included (an owned card costs the same whether the plan uses it or not): cost per "
        "sample = price per hour of the inventory x time per sample."
    )
    with st.expander("The hardware catalogue", expanded=False):
        st.dataframe(pd.DataFrame(form.catalogue_rows()), key="dev_catalogue", hide_index=True)
        st.caption(
            "Spec-sheet figures of each kind. The default price is USD per GPU-hour as of the date shown, a typical "
            "on-demand cloud price, not a quote: edit it per kind in the inventory table."
        )
    unlimited = [k.name for k in state.current_devices().accelerators if not math.isfinite(k.memory)]
    if unlimited:
        st.caption(
            ":material/info: Unlimited memory (memory left empty) on: "
            + ", ".join(unlimited)
            + ". Enter GiB to limit it."
        )


def _cpu_price(column, devices: placement.Devices) -> None:
    """The price of one CPU core per hour (the catalogue's CPU entry for inventories built from the catalogue).

    Its key follows the devices' version: a change made elsewhere (a preset, a link) shows as a new field
    holding the new price, and the field never needs its value written through the session state.
    """
    key = f"dev_cpu_price_{state.devices_version()}"
    price = column.number_input(
        f"CPU price per core-hour ({state.current_currency()})",
        min_value=0.0,
        value=float(st.session_state.get(key, devices.cpu_price_per_hour)),
        step=0.01,
        format="%.3f",
        key=key,
    )
    if price != devices.cpu_price_per_hour:
        state.set_devices(devices.with_changes(cpu_price_per_hour=float(price)))
        st.rerun()


def render_latency_rules() -> None:
    """Latency multipliers: a pattern and a factor, added to the list applied to node names."""
    st.subheader("Latency multipliers")
    st.caption(
        "Scale the latency (accelerator and CPU) of every node whose name matches a pattern "
        "(case-insensitive, anywhere in the name; `*` any text, `?` one character, `[0-9]` a set, `|` or, "
        "`^`/`$` start/end), e.g. `attention` x0.6 for a faster kernel."
    )
    rules = list(state.latency_rules())
    col_p, col_f, col_add, col_clear = st.columns([3, 1, 1, 1], vertical_alignment="bottom")
    col_p.text_input(
        "Node name pattern", value=_kept("lat_pattern", ""), key="lat_pattern", placeholder="e.g. attention|softmax"
    )
    col_f.number_input("Factor", min_value=0.0, value=_kept("lat_factor", 0.5), step=0.1, key="lat_factor")
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
                form.rule_rows(rules, names, worker.run(worker.count_matches, tuple(names), tuple(p for p, _ in rules)))
            ),
            key="lat_rules",
            hide_index=True,
        )


def render_summary() -> None:
    """The live solve of the current devices: headline numbers and the load per device."""
    devices = state.current_devices()
    st.markdown(f"**{state.current_graph_name()}** on {state.describe_devices(devices)}")
    problem = state.current_problem()
    method = state.live_method()
    with st.spinner(f"Solving with {state.method_name(method)}..."):
        result = state.solve_cached(problem, method, live=True)
    if live.from_table(result) or live.skipped(result):
        st.caption(live.note(result))
    if method != state.current_method():
        st.caption(
            f"Live numbers use the exact DP; the Placement page runs {state.current_method()} "
            f"(up to {state.current_time_limit():g} s)."
        )
    method = result.method  # the method that ran (memory-aware under the training memory model)
    if not result.ok:
        st.error(f"{method}: {result.status}: {result.reason}")
        return
    cols = st.columns(3) + st.columns(3)  # two rows: no headline number cut at 1024 px
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
    figure = viz.load_figure(
        evaluation, slots=slots, overlap=devices.overlap, title="Load per device (details on the Placement page)"
    )
    st.plotly_chart(figure, key="dev_load")
