"""The Tradeoffs page's widgets: charts whose points pick a plan, number tables, failures, sensitivity notes."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from placement import PlacementError, viz
from placement.model import Status
from ui import state
from ui import tradeoffs as to
from ui import tradeoffs_runs as runs
from ui.tradeoffs import ORIGIN, executor_choice, pick_label, picked_index, where_text


def keep_choice(key: str, choices: list, default) -> None:
    """Give the persisted widget ``key`` its default, or back when its value is no longer offered."""
    state.init_widget(key, default)
    if st.session_state[key] not in choices:
        st.session_state[key] = default


def executor(run_mode: str, address: str, base_seconds: float, n_solves: int):
    """The executor the solves run on (None: this process), and where that is in words."""
    choice = executor_choice(run_mode, address, base_seconds, n_solves)
    if choice == "dask":
        try:
            return runs.executor(address), where_text(choice, address)
        except PlacementError as exc:
            st.error(f"{exc}. Using a local process pool instead.")
            choice = "pool"
    return (runs.executor("") if choice == "pool" else None), where_text(choice, address)


def chart(figure, key: str, points, source: str) -> None:
    """A sweep chart; clicking a point makes its plan the one the Placement page shows."""
    index = picked_index(st.plotly_chart(figure, key=key, on_select="rerun", selection_mode="points"))
    chosen = next((p for p in points if p.index == index), None) if index is not None else None
    if chosen is None:
        return
    if not chosen.ok:
        st.warning(f"{chosen.label}: no plan ({chosen.result.reason or chosen.status}).")
        return
    label = pick_label(source, chosen.label, state.format_time(chosen.time_per_sample))
    current = state.selected_plan()
    if current is None or current[2] != label:
        state.set_selected_plan(chosen.problem, chosen.result, label, origin=ORIGIN)


def numbers(points, key: str, title: str = "Numbers", expanded: bool = False) -> None:
    with st.expander(title, expanded=expanded):
        st.dataframe(pd.DataFrame(viz.sweep_rows(points)), key=key, hide_index=True)


def errors(points) -> None:
    failed = [p for p in points if p.status == Status.ERROR]
    if failed:
        st.error(f"{len(failed)} solve(s) failed, e.g. {failed[0].label}: {failed[0].result.reason}")
    st.caption(viz.sweep_summary(points))


def sensitivity(context, parameter: str, vary_kind: str | None):
    """The sentence saying where the current plan stops being optimal (when the toggle is on), or None."""
    problem, digest, devices_key, max_count, memory_model, show = context
    if memory_model.training:
        st.caption("Sensitivity checks plans with weights only: it is off under the training memory model.")
        return None
    if not show:
        return None
    try:
        result = runs.run_sensitivity(digest, devices_key, parameter, vary_kind, max_count, problem)
    except PlacementError as exc:
        st.caption(f"Sensitivity not available: {exc}")
        return None
    st.info(result.sentence, icon=":material/tune:")
    return result


def first_look(request: tuple, problem, kind_name: str, max_count: int, training: bool) -> None:
    """The band the exact optimum lies in, per count of ``kind_name``: no exact solve (under a second).

    The exact optima of a finished count sweep for the same settings are drawn on it.
    """
    digest, devices_key = request[0], request[1]
    band = runs.band(digest, devices_key, kind_name, max_count, problem, plans=not training)
    stored = st.session_state.get("_to_exact")
    exact = stored[1] if stored and stored[0] == request else ()
    prefix = "" if kind_name == "accelerator" else f"{kind_name} "
    title = f"First look: where the optimal time per sample lies, by number of {prefix}accelerators"
    st.plotly_chart(viz.band_figure(band, exact, title=title), key="to_chart_band")
    plan_words = (
        "" if training else ", and at most the time of a valid plan found in milliseconds (a PipeDream-style split)"
    )
    st.caption(
        f"Without an exact solve: for each count the optimum is at least the lower bound{plan_words}. "
        + ("The diamonds are exact optima already solved. " if exact else "")
        + "This graph is large: each exact solve can take minutes, so the exact sweeps run only on Run."
    )


def run_buttons(request: tuple, problem, n_solves: int, solver: str) -> st.delta_generator.DeltaGenerator:
    """Run and Stop; stops the page until the sweeps of ``request`` are asked for (small graphs: at once).

    Returns the place for the note beside the buttons.
    """
    col_go, col_stop, col_note = st.columns([2, 1, 4], vertical_alignment="center")
    if col_go.button("Run the sweeps", key="to_run", type="primary"):
        st.session_state["_to_request"] = request
    if col_stop.button(
        "Stop", key="to_stop", help="Stop the sweeps now: queued solves are dropped and the worker processes end."
    ):
        st.session_state.pop("_to_request", None)
        runs.stop_all()
        st.session_state["_to_stopped"] = True
    elif st.session_state.get("_to_request") == request:
        st.session_state.pop("_to_stopped", None)
    # Small graphs (few ideals: each solve takes milliseconds) still sweep on opening.
    stopped = st.session_state.get("_to_stopped", False)
    if to.starts_by_itself(state.ideal_count(problem.graph)) and not stopped:
        st.session_state["_to_request"] = request
    if st.session_state.get("_to_request") != request:
        if stopped:
            st.warning("Stopped: the sweeps' workers were ended. Results finished before the stop stay cached.")
        col_note.caption(
            f"{n_solves} optimal solves ({solver}), each of the current graph with one setting changed. "
            "Press Run the sweeps to start them (each chart appears as its sweep ends; Stop ends them)."
        )
        st.stop()
    return col_note
