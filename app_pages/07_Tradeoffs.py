"""Tradeoffs page: time per sample against accelerators, memory and bandwidth; Pareto frontier; sensitivity.

Every point is a real optimal solve (the exact DP) of the current graph with one device
parameter changed, run through :func:`placement.explore.sweep.sweep` (in parallel when it pays),
cached on the graph digest + devices. Clicking a point makes that plan the one the
Placement page shows.
"""

from dataclasses import replace

import pandas as pd
import streamlit as st

from placement import PlacementError, viz
from placement.explore.grids import bandwidth_values as bandwidth_grid
from placement.explore.grids import count_values as count_grid_1d
from placement.explore.grids import memory_grid, stop_executor, use_pool
from placement.explore.sweep import (
    DASK_ALLOW_ENV,
    allowed_dask_addresses,
    count_grid,
    executor_for,
    pareto_front,
    sensitivity,
    solve_point,
    sweep,
)
from placement.model import Status
from ui import guard, state

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)

RUN_MODES = {
    "auto": "Automatic (processes when it pays)",
    "process": "Local process pool",
    "sequential": "This process, one after another",
    "dask": "Dask cluster",
}
#: The sweeps start by themselves only on graphs with at most this many ideals (each solve then takes
#: milliseconds); larger graphs wait for the Run button (issue 26: Inception-like, 40,339 ideals, took minutes).
AUTO_RUN_IDEALS = 2000
#: Sensitivity analysis runs by default when one solve takes less than this (seconds).
SENSITIVITY_AUTO_S = 0.05


# ----------------------------------------------------------------------------- cached computations
@st.cache_resource(show_spinner=False, max_entries=4, on_release=stop_executor)
def _executor(address: str):
    """One executor per address ("" = local process pool), kept for the whole server."""
    return executor_for(address or None)


@st.cache_data(show_spinner=False, max_entries=256)
def _sweep(
    digest: str,
    devices_key: str,
    parameter: str,
    values: tuple,
    kind: str | None,
    title: str,
    _problem,
    _executor_value,
    method: str = "dp",
    options: tuple = (),
):
    """One sweep, cached on the graph digest, the devices and the values (the executor never changes numbers).

    The progress bar is created and removed in here, so that a cache hit replays nothing visible.
    """
    bar = st.progress(0.0, text=f"{title}: starting")

    def progress(done: int, total: int) -> None:
        if total:
            bar.progress(done / total, text=f"{title}: {done} of {total} solves")

    points = sweep(
        _problem,
        parameter,
        values,
        kind=kind,
        executor=_executor_value,
        progress=progress,
        method=method,
        **dict(options),
    )
    broken = [p for p in points if p.status == Status.ERROR and (p.result.reason or "").startswith("worker failed")]
    if broken and _executor_value is not None:
        # A broken pool (or lost cluster) must not poison the cache: solve here instead.
        _executor.clear()
        points = sweep(
            _problem, parameter, values, kind=kind, executor=None, progress=progress, method=method, **dict(options)
        )
    bar.empty()
    return points


@st.cache_data(show_spinner=False, max_entries=64)
def _memory_grid(digest: str, devices_key: str, kind: str, title: str, _problem, _executor_value):
    """The memory sweep (:func:`placement.explore.grids.memory_grid`), cached like :func:`_sweep`, with its own progress bar."""
    bar = st.progress(0.0, text=f"{title}: starting")

    def progress(done: int, total: int) -> None:
        if total:
            bar.progress(min(done / total, 1.0), text=f"{title}: {done} of about {total} solves")

    points = memory_grid(_problem, kind, executor=_executor_value, progress=progress)
    bar.empty()
    return points


@st.cache_data(show_spinner=False, max_entries=256)
def _sensitivity(digest: str, devices_key: str, parameter: str, kind: str | None, max_count: int, _problem):
    return sensitivity(_problem, parameter, kind=kind, max_count=max_count)


@st.cache_data(show_spinner=False, max_entries=64)
def _base_seconds(digest: str, devices_key: str, _problem, method: str = "dp", options: tuple = ()) -> float:
    """Seconds one solve of the current problem takes (decides whether a process pool pays).

    Solved twice: the first call may include loading the compiled DP kernel.
    """
    solve_point(_problem, method, options)
    return solve_point(_problem, method, options).seconds


# ----------------------------------------------------------------------------- selection
def _picked_index(event) -> int | None:
    """The ``customdata`` index of the first selected point of a chart event, if any."""
    if not event:
        return None
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for point in points or ():
        data = point.get("customdata") if isinstance(point, dict) else None
        if isinstance(data, (list, tuple)) and data:
            data = data[0]
        if isinstance(data, (int, float)):
            return int(data)
    return None


def main() -> None:
    """Draw the page."""
    st.title("Tradeoffs")

    problem = state.current_problem()
    devices = problem.devices
    st.markdown(f"**{state.current_graph_name()}** on {state.describe_devices(devices)}")
    if not devices.accelerators:
        st.warning("The inventory has no accelerator kind: add one on the Devices page to see tradeoffs.")
        st.stop()

    # ----------------------------------------------------------------------------- settings
    names = [kind.name for kind in devices.accelerators]
    col_kind, col_max, col_run = st.columns([2, 2, 3])
    with col_kind:
        state.init_widget("to_kind", names[0])
        if st.session_state["to_kind"] not in names:
            st.session_state["to_kind"] = names[0]
        kind_name = st.selectbox(
            "Accelerator kind to vary",
            names,
            key="to_kind",
            persist_state=state.PERSIST,
            disabled=len(names) == 1,
            help="Counts, memory and speed sweeps change this kind only.",
        )
    devices.kind(kind_name)  # the kind must exist (raises a one-line error otherwise)
    with col_max:
        state.init_widget("to_max_count", 16)
        max_count = st.slider("Accelerators up to", 1, 32, key="to_max_count", persist_state=state.PERSIST)
    # Dask only towards the clusters the operator allow-listed (never an address typed in the page).
    dask_addresses = allowed_dask_addresses()
    modes = [mode for mode in RUN_MODES if mode != "dask" or dask_addresses]
    with col_run:
        state.init_widget("to_run_mode", "auto")
        if st.session_state["to_run_mode"] not in modes:
            st.session_state["to_run_mode"] = "auto"
        run_mode = st.selectbox(
            "Run the solves on",
            modes,
            format_func=RUN_MODES.get,
            key="to_run_mode",
            persist_state=state.PERSIST,
            help=None
            if dask_addresses
            else f"A Dask cluster appears here when the operator allow-lists its address in "
            f"{DASK_ALLOW_ENV} (see the README).",
        )
    address = ""
    if run_mode == "dask":
        state.init_widget("to_dask_address", dask_addresses[0])
        if st.session_state["to_dask_address"] not in dask_addresses:
            st.session_state["to_dask_address"] = dask_addresses[0]
        address = st.selectbox(
            "Dask scheduler (allow-listed by the operator)",
            dask_addresses,
            key="to_dask_address",
            persist_state=state.PERSIST,
            help="The solves are sent to this Dask cluster (its workers need this project installed).",
        )

    digest, devices_key = state.problem_key(problem)
    # The memory model in force decides the solver: the exact DP, or the memory-aware DP under training memory.
    memory_model = state.current_memory_model()
    method, model_options = memory_model.method_for("dp")
    model_options = tuple(sorted(model_options.items()))

    total_size = sum(node.size for node in problem.graph.nodes)
    count_values = count_grid_1d(max_count)
    bandwidth_values = bandwidth_grid(devices.bandwidth)
    memory_solves = 14 if total_size > 0 else 0  # about; placed around where the plan changes
    grid_values = count_grid(devices, max_points=120) if len(names) > 1 else ()
    n_solves = len(count_values) + len(bandwidth_values) + memory_solves + len(grid_values)

    # Sweeps run on demand only (issue 26): a page never starts minutes of work by itself, and Stop ends the workers.
    request = (digest, devices_key, kind_name, max_count, run_mode, address, method, model_options)
    col_go, col_stop, col_note = st.columns([1, 1, 3], vertical_alignment="center")
    if col_go.button("Run the sweeps", key="to_run", type="primary"):
        st.session_state["_to_request"] = request
    if col_stop.button(
        "Stop", key="to_stop", help="Stop the sweeps now: queued solves are dropped and the worker processes end."
    ):
        st.session_state.pop("_to_request", None)
        _executor.clear()  # releases every pool: its workers are terminated (stop_executor)
        st.session_state["_to_stopped"] = True
    elif st.session_state.get("_to_request") == request:
        st.session_state.pop("_to_stopped", None)
    solver = "exact DP" if method == "dp" else f"{method}, memory model: {memory_model.describe()}"
    # Small graphs (few ideals: each solve takes milliseconds) still sweep on opening.
    ideals = state.ideal_count(problem.graph)  # cached; None past the DP's cap
    small = ideals is not None and ideals <= AUTO_RUN_IDEALS
    if small and not st.session_state.get("_to_stopped") and st.session_state.get("_to_request") != request:
        st.session_state["_to_request"] = request
    if st.session_state.get("_to_request") != request:
        if st.session_state.get("_to_stopped", False):
            st.warning("Stopped: the sweeps' workers were ended. Results finished before the stop stay cached.")
        col_note.caption(
            f"{n_solves} optimal solves ({solver}), each of the current graph with one setting changed. "
            "Press Run the sweeps to start them (each chart appears as its sweep ends; Stop ends them)."
        )
        st.stop()
    try:
        with st.spinner("Timing one solve..."):
            base_seconds = _base_seconds(digest, devices_key, problem, method, model_options)
    except PlacementError as exc:
        st.error(str(exc))
        st.stop()

    def _executor_for_mode():
        if run_mode == "sequential":
            return None
        if run_mode == "auto" and not use_pool(base_seconds, n_solves):
            return None
        if run_mode == "dask" and address:
            try:
                return _executor(address)
            except PlacementError as exc:
                st.error(f"{exc}. Using a local process pool instead.")
        return _executor("")

    executor = _executor_for_mode()
    where = (
        "this process"
        if executor is None
        else f"the Dask cluster at {address}"
        if run_mode == "dask" and address
        else "a local process pool"
    )
    col_note.caption(
        f"{n_solves} optimal solves ({solver}; one takes about {base_seconds * 1000:.0f} ms here), run in "
        f"{where}; results are cached per graph and device settings."
    )
    state.init_widget("to_sensitivity", base_seconds < SENSITIVITY_AUTO_S)
    show_sensitivity = st.toggle(
        "Sensitivity: find where the current plan stops being optimal",
        key="to_sensitivity",
        disabled=memory_model.training,
        persist_state=state.PERSIST,
        help="Bisection with real solves (10 to 30 per parameter). On by default when one solve is fast.",
    )

    def run_sweep(parameter: str, values: tuple, title: str, vary_kind: str | None = kind_name):
        return _sweep(
            digest, devices_key, parameter, values, vary_kind, title, problem, executor, method, model_options
        )

    # ----------------------------------------------------------------------------- selection
    def _pick(points, index: int | None, source: str) -> None:
        """Make the picked point the plan the Placement page shows."""
        if index is None:
            return
        chosen = next((p for p in points if p.index == index), None)
        if chosen is None:
            return
        if not chosen.ok:
            st.warning(f"{chosen.label}: no plan ({chosen.result.reason or chosen.status}).")
            return
        label = f"Tradeoffs ({source}): {chosen.label}, time per sample {state.format_time(chosen.time_per_sample)}"
        current = state.selected_plan()
        if current is None or current[2] != label:
            state.set_selected_plan(chosen.problem, chosen.result, label)

    def _chart(figure, key: str, points, source: str) -> None:
        event = st.plotly_chart(figure, key=key, on_select="rerun", selection_mode="points")
        _pick(points, _picked_index(event), source)

    def _sensitivity_note(parameter: str, vary_kind: str | None):
        if memory_model.training:
            st.caption("Sensitivity checks plans with weights only: it is off under the training memory model.")
            return None
        if not show_sensitivity:
            return None
        try:
            result = _sensitivity(digest, devices_key, parameter, vary_kind, max_count, problem)
        except PlacementError as exc:
            st.caption(f"Sensitivity not available: {exc}")
            return None
        st.info(result.sentence, icon=":material/tune:")
        return result

    def _table(points, key: str) -> None:
        with st.expander("Numbers", expanded=False):
            st.dataframe(pd.DataFrame(viz.sweep_rows(points)), key=key, hide_index=True)

    def _errors(points) -> None:
        failed = [p for p in points if p.status == Status.ERROR]
        if failed:
            st.error(f"{len(failed)} solve(s) failed, e.g. {failed[0].label}: {failed[0].result.reason}")
        st.caption(viz.sweep_summary(points))

    prefix = "" if kind_name == "accelerator" else f"{kind_name} "

    picked_slot = st.container()
    tab_counts, tab_memory, tab_bandwidth, tab_pareto = st.tabs(
        ["Accelerators", "Memory", "Bandwidth", "Pareto frontier"]
    )

    with tab_counts:
        with st.spinner("Solving..."):
            counts_points = run_sweep("accelerators", count_values, f"{kind_name} count sweep")
        sens = _sensitivity_note("accelerators", kind_name)
        _errors(counts_points)
        _chart(
            viz.sweep_figure(
                counts_points,
                "accelerators",
                sensitivity=sens,
                title=f"time per sample vs number of {prefix}accelerators",
            ),
            "to_chart_accelerators",
            counts_points,
            "accelerators",
        )
        _table(counts_points, "to_table_accelerators")

    with tab_memory:
        with st.spinner("Solving..."):
            memory_points = (
                _memory_grid(digest, devices_key, kind_name, f"{kind_name} memory sweep", problem, executor)
                if total_size > 0
                else ()
            )
        if not memory_points:
            st.info(
                "Memory per accelerator changes nothing here: the graph's nodes have no memory sizes, or the "
                f"fastest plan puts nothing on {kind_name} devices."
            )
        else:
            sens = _sensitivity_note("memory", kind_name)
            _errors(memory_points)
            _chart(
                viz.sweep_figure(
                    memory_points,
                    "memory",
                    sensitivity=sens,
                    title=f"time per sample vs memory per {prefix}accelerator",
                ),
                "to_chart_memory",
                memory_points,
                "memory",
            )
            st.caption(
                "Memory values are placed around where the optimal plan changes: every solve also shows "
                "the least memory its plan needs, where the same time per sample still holds."
            )
            _table(memory_points, "to_table_memory")

    with tab_bandwidth:
        with st.spinner("Solving..."):
            bandwidth_points = run_sweep("bandwidth", bandwidth_values, "bandwidth sweep", None)
        sens = _sensitivity_note("bandwidth", None)
        _errors(bandwidth_points)
        _chart(
            viz.sweep_figure(bandwidth_points, "bandwidth", sensitivity=sens, log_x=True),
            "to_chart_bandwidth",
            bandwidth_points,
            "bandwidth",
        )
        _table(bandwidth_points, "to_table_bandwidth")

    with tab_pareto:
        with st.spinner("Solving..."):
            grid_points = run_sweep("counts", grid_values, "device-count grid", None) if grid_values else ()
        AXES = {"devices": "Devices used", "memory": "Memory provisioned", "price": "Price per hour"}
        state.init_widget("to_pareto_axis", "devices")
        axis = st.radio(
            "Cost axis",
            list(AXES),
            format_func=AXES.get,
            key="to_pareto_axis",
            persist_state=state.PERSIST,
            horizontal=True,
        )
        # Configurations that differ in what they cost (counts and memory), all at the current bandwidth.
        sources = list(grid_points) if grid_points else list(counts_points)
        sources += list(memory_points)
        pool = tuple(replace(p, index=k) for k, p in enumerate(sources))
        front = pareto_front(pool, x=axis)
        if axis == "price" and not any(p.price_per_hour for p in pool):
            st.info("No device has a price per hour: set prices in the inventory on the Devices page.")
        st.caption(
            "Configurations: "
            + (
                "every combination of per-kind counts"
                if grid_points
                else f"1 to {max_count} " + ("" if kind_name == "accelerator" else f"{kind_name} ") + "accelerators"
            )
            + (" and the memory sweep" if memory_points else "")
            + f". {len(front)} of {len(pool)} are on the frontier (no other is both cheaper and faster)."
        )
        _chart(viz.pareto_figure(pool, x=axis, front=front), "to_chart_pareto", pool, "Pareto frontier")
        with st.expander("Frontier", expanded=True):
            st.dataframe(pd.DataFrame(viz.sweep_rows(front)), key="to_table_pareto", hide_index=True)

    # ----------------------------------------------------------------------------- the picked plan
    picked = state.selected_plan()
    with picked_slot:
        if picked is not None and picked[2].startswith("Tradeoffs"):
            col_text, col_go = st.columns([4, 1], vertical_alignment="center")
            col_text.success(f"Selected: {picked[2]}. The Placement page now shows this plan.")
            if col_go.button("Show on Placement page", key="to_open_placement", type="primary"):
                st.switch_page("app_pages/3_Placement.py")
        else:
            st.caption("Click a point of any chart to pick its plan for the Placement page.")


# A spawned process-pool worker re-imports the script that was running when it started
# (as "__mp_main__"): it must draw nothing there.
if __name__ != "__mp_main__":
    main()
