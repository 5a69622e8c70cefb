"""Compare page: every available method on the current graph and devices (like the paper's results table).

Methods run one after another with a progress line per method, and the table fills in as
each finishes.
"""

import math

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.model import Status
from placement.solve import available_methods
from ui import guard, state
from ui.navigation import page_file

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


st.title("Compare methods")

try:
    from placement.explore.compare import DEFAULT_METHODS, rows_to_records, run_method, with_ratios
except ImportError as exc:  # written by another helper; the page explains instead of crashing
    st.warning(f"The comparison module (placement.explore.compare) is not available yet: {exc}")
    st.stop()

problem = state.current_problem()
st.markdown(f"**{state.current_graph_name()}** on {state.describe_devices(problem.devices)}")
st.caption(state.time_unit_note())

OBJECTIVES = {"throughput": "Throughput (time per sample)", "latency": "Latency (one sample)"}
state.init_widget("cmp_objective", state.current_objective())
col_obj, col_limit = st.columns([3, 2])
with col_obj:
    objective = st.radio(
        "Objective",
        list(OBJECTIVES),
        format_func=OBJECTIVES.get,
        key="cmp_objective",
        persist_state=state.PERSIST,
        horizontal=True,
    )
methods = available_methods()  # any method's plan can be scored on either objective
if not methods:
    st.warning("No method is available.")
    st.stop()
defaults = [m for m in DEFAULT_METHODS.get(objective, ()) if m in methods] or list(methods)
if (
    st.session_state.get("_cmp_objective_seen") != objective
    or "cmp_methods" not in st.session_state
    or not set(st.session_state["cmp_methods"]) <= set(methods)
):
    st.session_state["cmp_methods"] = defaults
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

UNIT = state.time_unit()
VALUE_COLUMN = {"throughput": f"time per sample ({UNIT})", "latency": f"latency ({UNIT})"}


def _frame(rows, objective: str) -> pd.DataFrame:
    """The table shown: method names, empty cells as blanks (never "None")."""
    records = rows_to_records(rows)
    table = pd.DataFrame(
        records, columns=["method", "objective", "ratio_to_best", "status", "gap", "seconds", "bound", "reason"]
    )
    table["method"] = [state.method_name(m) for m in table["method"]]
    table["reason"] = table["reason"].fillna("")

    # Empty cells stay empty (a null number shows as "None"): numbers as text, blanks where there is none.
    def text(values, form):
        return [
            "" if v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v))) else form(v) for v in values
        ]

    table["objective"] = text(table["objective"], lambda v: f"{v:.10g}")
    table["bound"] = text(table["bound"], lambda v: f"{v:.10g}")
    table["ratio_to_best"] = text(table["ratio_to_best"], lambda v: f"{v:.8g}")
    table["gap"] = text(table["gap"], lambda v: f"{v:.2%}")
    table["seconds"] = text(table["seconds"], lambda v: f"{v:.3f}")
    return table.rename(
        columns={
            "objective": VALUE_COLUMN[objective],
            "ratio_to_best": "ratio to best",
            "bound": f"lower bound ({UNIT})",
        }
    )


def _show(table: pd.DataFrame, slot) -> None:
    slot.dataframe(
        table,
        key="cmp_table",
        hide_index=True,
        column_config={"reason": st.column_config.TextColumn(width="large")},
    )


memory_model = state.current_memory_model()
key = (state.problem_key(problem), objective, tuple(chosen), float(time_limit), memory_model)
stored = st.session_state.get("_cmp_result")
run = st.button("Run comparison", key="cmp_run", type="primary", disabled=not chosen)
note = st.empty()
table_slot = st.empty()
if run:
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
    stored = (key, rows, problem)
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
_show(_frame(rows, stored[0][1]), table_slot)
records = rows_to_records(rows)
for record in records:
    record["method"] = state.method_name(record["method"])
st.plotly_chart(viz.compare_figure(records, stored[0][1]), key="cmp_chart")

with_plans = [row for row in rows if row.placement is not None and row.status in (Status.OPTIMAL, Status.FEASIBLE)]
if with_plans:
    col_pick, col_show = st.columns([3, 1], vertical_alignment="bottom")
    picked = col_pick.selectbox(
        "Show a method's plan on the Placement page",
        [r.method for r in with_plans],
        key="cmp_pick",
        format_func=state.method_name,
    )
    if col_show.button("Show plan", key="cmp_show"):
        row = next(r for r in with_plans if r.method == picked)
        spec = placement.METHODS[row.method]
        other = spec.objective != row.objective_kind  # scored on an objective the method does not optimise
        result = placement.make_result(
            row.method,
            row.status,
            seconds=row.seconds,
            objective=row.objective,
            placement=row.placement,
            objective_kind=row.objective_kind,
            bound=row.bound,
            gap=row.gap,
            reason=f"{row.method} optimises {spec.objective}, this plan is scored on {row.objective_kind}"
            if other and row.status == Status.FEASIBLE
            else row.reason,
        )
        state.set_selected_plan(stored[2], result, f"{state.method_name(row.method)} from the Compare page")
        st.switch_page(page_file("Placement"))
