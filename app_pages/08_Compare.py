"""Compare page: every available method on the current graph and devices (like the paper's results table).

Methods run one after another with a progress line per method, and the table fills in as
each finishes. The table and the plan handed to Placement: :mod:`ui.compare_table`.
"""

import pandas as pd
import streamlit as st

from placement import viz
from placement.explore.compare import rows_to_records, run_method, with_ratios
from placement.model import Status
from placement.solve import available_methods
from ui import compare_table as ct
from ui import guard, state
from ui.navigation import page_file

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


def _settings() -> tuple[str, list[str], float]:
    """The objective, the chosen methods and the time limit per method."""
    state.init_widget("cmp_objective", state.current_objective())
    col_obj, col_limit = st.columns([3, 2])
    with col_obj:
        objective = st.radio(
            "Objective",
            list(ct.OBJECTIVES),
            format_func=ct.OBJECTIVES.get,
            key="cmp_objective",
            persist_state=state.PERSIST,
            horizontal=True,
        )
    methods = available_methods()  # any method's plan can be scored on either objective
    if not methods:
        st.warning("No method is available.")
        st.stop()
    if (
        st.session_state.get("_cmp_objective_seen") != objective
        or "cmp_methods" not in st.session_state
        or not set(st.session_state["cmp_methods"]) <= set(methods)
    ):
        st.session_state["cmp_methods"] = ct.default_methods(objective, methods)
        st.session_state["_cmp_objective_seen"] = objective
    with col_limit:
        state.init_widget("cmp_time_limit", min(state.current_time_limit(), 60.0))
        time_limit = st.number_input(
            "Time limit per method (s)",
            min_value=1.0,
            max_value=600.0,
            step=5.0,
            key="cmp_time_limit",
            persist_state=state.PERSIST,
        )
    chosen = st.multiselect(
        "Methods",
        methods,
        key="cmp_methods",
        persist_state=state.PERSIST,
        format_func=state.method_name,
        help="Methods that optimise the other objective are scored on this one too (status 'feasible', no bound).",
    )
    return objective, chosen, float(time_limit)


def _frame(rows, objective: str) -> pd.DataFrame:
    return ct.compare_frame(rows, objective, state.time_unit(), state.method_name)


def _run(problem, objective: str, chosen: list[str], time_limit: float, memory_model, table_slot) -> list:
    """Solve with every chosen method, one after another; the table fills in as each finishes."""
    rows = []
    progress = st.progress(0.0, text="Starting")
    for position, method in enumerate(chosen):
        progress.progress(
            position / len(chosen),
            text=f"Running {state.method_name(method)} ({position + 1} of {len(chosen)}, up to {time_limit:g} s)...",
        )
        rows.append(run_method(problem, method, objective, time_limit, memory_model))
        rows = with_ratios(rows)
        table_slot.dataframe(_frame(rows, objective), hide_index=True)  # partial table while the rest run
    progress.empty()
    return rows


def _pick_plan(rows, problem) -> None:
    """Hand one method's plan to the Placement page."""
    with_plans = ct.rows_with_plans(rows)
    if not with_plans:
        return
    col_pick, col_show = st.columns([3, 1], vertical_alignment="bottom")
    picked = col_pick.selectbox(
        "Show a method's plan on the Placement page",
        [r.method for r in with_plans],
        key="cmp_pick",
        format_func=state.method_name,
    )
    if col_show.button("Show plan", key="cmp_show"):
        row = next(r for r in with_plans if r.method == picked)
        label = f"{state.method_name(row.method)} from the Compare page"
        state.set_selected_plan(problem, ct.row_result(row), label, origin="compare")
        st.switch_page(page_file("Placement"))


def main() -> None:
    """Draw the page."""
    st.title("Compare methods")
    problem = state.current_problem()
    st.markdown(f"**{state.current_graph_name()}** on {state.describe_devices(problem.devices)}")
    state.cost_source_caption()
    st.caption(state.time_unit_note())
    objective, chosen, time_limit = _settings()
    memory_model = state.current_memory_model()
    key = (state.problem_key(problem), objective, tuple(chosen), float(time_limit), memory_model)
    stored = st.session_state.get("_cmp_result")
    run = st.button("Run comparison", key="cmp_run", type="primary", disabled=not chosen)
    note = st.empty()
    table_slot = st.empty()
    if run:
        stored = (key, _run(problem, objective, chosen, time_limit, memory_model, table_slot), problem)
        st.session_state["_cmp_result"] = stored
    if stored is None:
        note.info(
            "Press **Run comparison** to solve with every chosen method, one after another (integer programs "
            "and the local search stop at the time limit and report their gap)."
        )
        st.stop()
    if stored[0] != key:
        note.caption("Settings changed since this table was computed: press Run comparison to refresh it.")
    rows = stored[1]
    table_slot.dataframe(
        _frame(rows, stored[0][1]),
        key="cmp_table",
        hide_index=True,
        column_config={"reason": st.column_config.TextColumn(width="large")},
    )
    failed = [r for r in rows if r.status == Status.ERROR]
    if failed:  # e.g. a method whose estimated work is past its cap (placement.budget): one line each
        for row in failed:
            st.caption(
                f"{state.method_name(row.method)} was not solved: {guard.markdown_safe(guard.clean(str(row.reason)))}"
            )
    records = rows_to_records(rows)
    for record in records:
        record["method"] = state.method_name(record["method"])
    st.plotly_chart(viz.compare_figure(records, stored[0][1]), key="cmp_chart")
    _pick_plan(rows, stored[2])


main()
