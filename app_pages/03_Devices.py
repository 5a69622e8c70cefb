"""Devices page: catalogue GPUs, a measured device profile, CPU cores, memory, bandwidth, what-if speed; presets;
inventory; latency multipliers.

The current :class:`placement.Devices` lives in :mod:`ui.state`; the widgets here are
re-initialised from it whenever it changes elsewhere (a preset, the inventory editor, a new
graph) and write it back when moved (:mod:`ui.devices_form`). Every change applies live: the
summary at the top re-solves with the chosen method (cached). The sections below the sliders
are in :mod:`ui.devices_view`.
"""

import streamlit as st

import placement
from ui import devices_form as form
from ui import devices_view as view
from ui import guard, state

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


def _sliders(devices: placement.Devices) -> dict:
    """The sliders and switches of the first accelerator kind, CPU cores and the global factors.

    Returns the values they were given from the devices (to tell an untouched memory from a moved one).
    """
    values = form.widget_values(devices)
    if state.sync_widgets("devices", values, state.devices_version()) or "_dev_bounds" not in st.session_state:
        # Slider bounds follow the state only when it changed elsewhere, never while a slider moves.
        st.session_state["_dev_bounds"] = form.slider_bounds(devices)
    max_count, max_cpus, speed_range, bandwidth_range = st.session_state["_dev_bounds"]
    first = form.first_kind(devices)
    kind_note = f" (kind '{first.name}')" if len(devices.accelerators) > 1 or first.name != "accelerator" else ""
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
            f"Speed factor, what-if{kind_note}",
            *speed_range,
            step=0.05,
            key="dev_speed",
            help="A what-if multiplier: nodes run the graph's time for this kind divided by this factor (1 = as "
            "priced: the catalogue GPU's time for a catalogue kind, the file's time otherwise).",
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
    return values


def _presets(devices: placement.Devices) -> None:
    """One button per device preset (two rows, so that no label is clipped)."""
    st.subheader("Presets")
    file_devices = state.base_problem().devices
    preset_cols = st.columns(4) + st.columns(4)
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


def main() -> None:
    """Draw the page: the live summary on top (drawn last, once every widget has written the state back)."""
    st.title("Devices")
    summary = st.container()
    devices = state.current_devices()
    view.render_catalogue(devices)
    view.render_profile(devices)
    shown = _sliders(devices)
    from_widgets = form.devices_from_widgets(devices, st.session_state, shown)
    if from_widgets != devices:
        state.set_devices(from_widgets)
        state.mark_synced("devices", state.devices_version())  # the widgets already show them
        devices = from_widgets
    view.render_memory_model()
    _presets(devices)
    view.render_inventory(devices)
    view.render_latency_rules()
    with summary:
        view.render_summary()
        state.cost_source_caption()


main()
