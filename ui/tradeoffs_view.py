"""The Tradeoffs page's widgets: charts whose points pick a plan, number tables, failures, sensitivity notes."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from placement import PlacementError, viz
from placement.model import Status
from ui import state
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
