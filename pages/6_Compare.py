"""Compare page: every available method on the current graph and devices (like the paper's results table)."""

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.solve import available_methods
from ui import guard, state

guard.run_page(__file__, globals())  # one-line errors, never a traceback

st.set_page_config(page_title="Compare - device placement", layout="wide")
state.ensure_default_graph()

st.title("Compare methods")

try:
    from placement.compare import DEFAULT_METHODS, compare, rows_to_records
except ImportError as exc:  # written by another helper; the page explains instead of crashing
    st.warning(f"The comparison module (placement.compare) is not available yet: {exc}")
    st.stop()

problem = state.current_problem()
st.markdown(f"**{state.current_graph_name()}** on {state.describe_devices(problem.devices)}")

OBJECTIVES = {"throughput": "Throughput (time per sample)", "latency": "Latency (one sample)"}
state.init_widget("cmp_objective", state.current_objective())
col_obj, col_methods, col_limit = st.columns([2, 3, 1])
with col_obj:
    objective = st.radio("Objective", list(OBJECTIVES), format_func=OBJECTIVES.get, key="cmp_objective",
                         horizontal=True)
methods = available_methods()  # any method's plan can be scored on either objective
if not methods:
    st.warning("No method is available.")
    st.stop()
defaults = [m for m in DEFAULT_METHODS.get(objective, ()) if m in methods] or list(methods)
if st.session_state.get("_cmp_objective_seen") != objective or "cmp_methods" not in st.session_state \
        or not set(st.session_state["cmp_methods"]) <= set(methods):
    st.session_state["cmp_methods"] = defaults
    st.session_state["_cmp_objective_seen"] = objective
with col_methods:
    chosen = st.multiselect("Methods", methods, key="cmp_methods",
                            help="Methods that optimise the other objective are scored on this one too "
                                 "(status 'feasible', no bound).")
with col_limit:
    state.init_widget("cmp_time_limit", min(state.current_time_limit(), 60.0))
    time_limit = st.number_input("Time limit per method (s)", min_value=1.0, max_value=600.0, step=5.0,
                                 key="cmp_time_limit")

key = (state.problem_key(problem), objective, tuple(chosen), float(time_limit))
stored = st.session_state.get("_cmp_result")
if st.button("Run comparison", key="cmp_run", type="primary", disabled=not chosen):
    with st.spinner(f"Running {len(chosen)} method(s), up to {time_limit:g} s each..."):
        rows = compare(problem, objective, list(chosen), time_limit)
    stored = (key, rows, problem)
    st.session_state["_cmp_result"] = stored

if stored is None:
    st.info("Press **Run comparison** to solve with every chosen method (integer programs and the local search "
            "stop at the time limit and report their gap).")
    st.stop()
if stored[0] != key:
    st.caption("Settings changed since this table was computed: press Run comparison to refresh it.")

rows = stored[1]
records = rows_to_records(rows)
table = pd.DataFrame(records, columns=["method", "objective", "ratio_to_best", "status", "gap", "seconds", "bound",
                                       "reason"])
table = table.rename(columns={"objective": "time per sample" if stored[0][1] == "throughput" else "latency",
                              "ratio_to_best": "ratio to best"})
st.dataframe(table, key="cmp_table", hide_index=True,
             column_config={"gap": st.column_config.NumberColumn(format="percent"),
                            "seconds": st.column_config.NumberColumn(format="%.3f"),
                            "ratio to best": st.column_config.NumberColumn(format="%.4f")})
st.plotly_chart(viz.compare_figure(records, stored[0][1]), key="cmp_chart")

with_plans = [row for row in rows if getattr(row, "placement", None) is not None]
if with_plans:
    col_pick, col_show = st.columns([3, 1], vertical_alignment="bottom")
    picked = col_pick.selectbox("Show a method's plan on the Placement page", [r.method for r in with_plans],
                                key="cmp_pick")
    if col_show.button("Show plan", key="cmp_show"):
        row = next(r for r in with_plans if r.method == picked)
        result = placement.Result(status=row.status if row.status in ("optimal", "feasible") else "feasible",
                                  method=row.method, objective=row.objective, placement=row.placement,
                                  seconds=row.seconds, objective_kind=row.objective_kind, bound=row.bound,
                                  gap=row.gap)
        state.set_selected_plan(stored[2], result, f"{row.method} from the Compare page")
        st.switch_page("pages/3_Placement.py")
