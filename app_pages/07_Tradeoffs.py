"""Tradeoffs page: time per sample against accelerators, memory and bandwidth; Pareto frontier; sensitivity.

Every point is a real optimal solve (the exact DP) of the current graph with one device
parameter changed, run through :func:`placement.explore.sweep.sweep` (in parallel when it pays),
cached on the graph digest + devices. Clicking a point makes that plan the one the
Placement page shows. The decisions (when to sweep, where to solve, which plan was picked) are
in :mod:`ui.tradeoffs`, the cached sweeps in :mod:`ui.tradeoffs_runs`.
"""

import math

import streamlit as st

from placement import PlacementError, viz
from placement.explore.grids import bandwidth_values as bandwidth_grid
from placement.explore.grids import count_values as count_grid_1d
from placement.explore.sweep import DASK_ALLOW_ENV, allowed_dask_addresses, count_grid, pareto_front
from ui import guard, state, transformer_view
from ui import tradeoffs as to
from ui import tradeoffs_runs as runs
from ui import tradeoffs_view as view
from ui.navigation import page_file

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


def _settings(devices, names: list[str], large: bool) -> tuple[str, int, str, str]:
    """The kind to vary, the largest count, the run mode and the Dask address (widgets)."""
    col_kind, col_max, col_run = st.columns([2, 2, 3])
    with col_kind:
        view.keep_choice("to_kind", names, names[0])
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
    modes = to.run_modes(dask_addresses, large)
    with col_run:
        view.keep_choice("to_run_mode", modes, "auto")
        run_mode = st.selectbox(
            "Run the solves on",
            modes,
            format_func=to.RUN_MODES.get,
            key="to_run_mode",
            persist_state=state.PERSIST,
            help=to.RUN_MODE_HELP
            + (
                ""
                if dask_addresses
                else f" A Dask cluster appears here when the operator allow-lists its address in "
                f"{DASK_ALLOW_ENV} (see docs/models/tradeoffs.md)."
            ),
        )
    address = ""
    if run_mode == "dask":
        view.keep_choice("to_dask_address", dask_addresses, dask_addresses[0])
        address = st.selectbox(
            "Dask scheduler (allow-listed by the operator)",
            dask_addresses,
            key="to_dask_address",
            persist_state=state.PERSIST,
            help="The solves are sent to this Dask cluster (its workers need this project installed).",
        )
    return kind_name, max_count, run_mode, address


def main() -> None:
    """Draw the page."""
    st.title("Tradeoffs")
    transformer_view.tradeoffs_section()  # the session's transformer scenario (ui/transformer.py)
    problem = state.current_problem()
    devices = problem.devices
    st.markdown(f"**{state.current_graph_name()}** on {state.describe_devices(devices)}")
    state.cost_source_caption()
    if not devices.accelerators:
        st.warning("The inventory has no accelerator kind: add one on the Devices page to see tradeoffs.")
        st.stop()
    names = [kind.name for kind in devices.accelerators]
    # Large graphs (exact solves of minutes): a first chart without solving, the sweeps on Run, in worker processes.
    large = not to.starts_by_itself(state.ideal_count(problem.graph))
    kind_name, max_count, run_mode, address = _settings(devices, names, large)

    digest, devices_key = state.problem_key(problem)
    # The memory model in force decides the solver: the exact DP, or the memory-aware DP under training memory.
    memory_model = state.current_memory_model()
    method, model_options = memory_model.method_for("dp")
    model_options = tuple(sorted(model_options.items()))
    has_sizes = sum(node.size for node in problem.graph.nodes) > 0
    count_values = count_grid_1d(max_count)
    bandwidth_values = bandwidth_grid(devices.bandwidth)
    grid_values = count_grid(devices, max_points=to.GRID_POINTS) if len(names) > 1 else ()
    n_solves = to.planned_solves(count_values, bandwidth_values, grid_values, has_sizes)

    # Sweeps run on demand only (issue 26): a page never starts minutes of work by itself, and Stop ends the workers.
    solver = "exact DP" if method == "dp" else f"{method}, memory model: {memory_model.describe()}"
    request = (digest, devices_key, kind_name, max_count, run_mode, address, method, model_options)
    if large:
        view.first_look(request, problem, kind_name, max_count, memory_model.training)
    col_note = view.run_buttons(request, problem, n_solves, solver)
    if large:  # never time an exact solve in the page's own thread here: it could take minutes, unstoppable
        base_seconds = math.inf
        about = "each can take minutes on this graph"
    else:
        try:
            with st.spinner("Timing one solve..."):
                base_seconds = runs.base_seconds(digest, devices_key, problem, method, model_options)
        except PlacementError as exc:
            st.error(str(exc))
            st.stop()
        about = f"one takes about {base_seconds * 1000:.0f} ms here"
    executor, where = view.executor(run_mode, address, base_seconds, n_solves)
    col_note.caption(
        f"{n_solves} optimal solves ({solver}; {about}), run in {where}; results are cached per graph and "
        "device settings."
    )
    state.init_widget("to_sensitivity", base_seconds < to.SENSITIVITY_AUTO_S)
    show_sensitivity = st.toggle(
        "Sensitivity: find where the current plan stops being optimal",
        key="to_sensitivity",
        disabled=memory_model.training,
        persist_state=state.PERSIST,
        help="Bisection with real solves (10 to 30 per parameter). On by default when one solve is fast.",
    )
    context = (problem, digest, devices_key, max_count, memory_model, show_sensitivity)

    def run_sweep(parameter: str, values: tuple, title: str, vary_kind: str | None = kind_name):
        return runs.run_sweep(
            digest,
            devices_key,
            parameter,
            values,
            vary_kind,
            title,
            problem,
            executor,
            method,
            model_options,
            retry_here=not large,
        )

    prefix = "" if kind_name == "accelerator" else f"{kind_name} "
    picked_slot = st.container()
    tab_counts, tab_memory, tab_bandwidth, tab_pareto = st.tabs(
        ["Accelerators", "Memory", "Bandwidth", "Pareto frontier"]
    )
    with tab_counts:
        with st.spinner("Solving..."):
            counts_points = run_sweep("accelerators", count_values, f"{kind_name} count sweep")
        st.session_state["_to_exact"] = (request, counts_points)  # drawn on the first look next time
        sens = view.sensitivity(context, "accelerators", kind_name)
        view.errors(counts_points)
        title = f"time per sample vs number of {prefix}accelerators"
        figure = viz.sweep_figure(counts_points, "accelerators", sensitivity=sens, title=title)
        view.chart(figure, "to_chart_accelerators", counts_points, "accelerators")
        view.numbers(counts_points, "to_table_accelerators")
    with tab_memory:
        with st.spinner("Solving..."):
            memory_points = (
                runs.run_memory_grid(digest, devices_key, kind_name, f"{kind_name} memory sweep", problem, executor)
                if has_sizes
                else ()
            )
        if not memory_points:
            st.info(
                "Memory per accelerator changes nothing here: the graph's nodes have no memory sizes, or the "
                f"fastest plan puts nothing on {kind_name} devices."
            )
        else:
            sens = view.sensitivity(context, "memory", kind_name)
            view.errors(memory_points)
            title = f"time per sample vs memory per {prefix}accelerator"
            view.chart(
                viz.sweep_figure(memory_points, "memory", sensitivity=sens, title=title),
                "to_chart_memory",
                memory_points,
                "memory",
            )
            st.caption(
                "Memory values are placed around where the optimal plan changes: every solve also shows "
                "the least memory its plan needs, where the same time per sample still holds."
            )
            view.numbers(memory_points, "to_table_memory")
    with tab_bandwidth:
        with st.spinner("Solving..."):
            bandwidth_points = run_sweep("bandwidth", bandwidth_values, "bandwidth sweep", None)
        sens = view.sensitivity(context, "bandwidth", None)
        view.errors(bandwidth_points)
        figure = viz.sweep_figure(bandwidth_points, "bandwidth", sensitivity=sens, log_x=True)
        view.chart(figure, "to_chart_bandwidth", bandwidth_points, "bandwidth")
        view.numbers(bandwidth_points, "to_table_bandwidth")
    with tab_pareto:
        with st.spinner("Solving..."):
            grid_points = run_sweep("counts", grid_values, "device-count grid", None) if grid_values else ()
        state.init_widget("to_pareto_axis", "devices")
        axis = st.radio(
            "Cost axis",
            list(to.PARETO_AXES),
            format_func=to.PARETO_AXES.get,
            key="to_pareto_axis",
            persist_state=state.PERSIST,
            horizontal=True,
        )
        # Configurations that differ in what they cost (counts and memory), all at the current bandwidth.
        pool = to.pareto_pool(grid_points, counts_points, memory_points)
        front = pareto_front(pool, x=axis)
        if axis == "price" and not any(p.price_per_hour for p in pool):
            st.info("No device has a price per hour: set prices in the inventory on the Devices page.")
        st.caption(
            to.configurations_text(bool(grid_points), max_count, kind_name, bool(memory_points), len(front), len(pool))
        )
        view.chart(viz.pareto_figure(pool, x=axis, front=front), "to_chart_pareto", pool, "Pareto frontier")
        view.numbers(front, "to_table_pareto", "Frontier", expanded=True)

    with picked_slot:
        if state.selected_plan_origin() == to.ORIGIN:
            col_text, col_go = st.columns([4, 1], vertical_alignment="center")
            col_text.success(f"Selected: {state.selected_plan()[2]}. The Placement page now shows this plan.")
            if col_go.button("Show on Placement page", key="to_open_placement", type="primary"):
                st.switch_page(page_file("Placement"))
        else:
            st.caption("Click a point of any chart to pick its plan for the Placement page.")


# A spawned process-pool worker re-imports the script that was running when it started
# (as "__mp_main__"): it must draw nothing there.
if __name__ != "__mp_main__":
    main()
