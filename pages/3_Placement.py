"""Placement page: solve the current graph on the current devices; the split, loads, memory, downloads."""

import json

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.solve import available_methods
from ui import guard, state

guard.run_page(__file__, globals())  # one-line errors, never a traceback

st.set_page_config(page_title="Placement - device placement", layout="wide")
state.ensure_default_graph()

st.title("Placement")

# ----------------------------------------------------------------------------- a plan picked elsewhere
plan = state.selected_plan()
if plan is not None:
    col_note, col_back = st.columns([4, 1], vertical_alignment="center")
    col_note.info(f"Showing a picked plan: {plan[2]}. The device settings of that plan apply here.")
    if col_back.button("Back to the live solve", key="pl_back_live"):
        state.clear_selected_plan()
        st.rerun()

# ----------------------------------------------------------------------------- method, objective, limit
OBJECTIVES = {"throughput": "Throughput (time per sample)", "latency": "Latency (one sample)"}
state.init_widget("pl_objective", state.current_objective())
state.init_widget("pl_time_limit", state.current_time_limit())
col_obj, col_method, col_limit = st.columns([2, 2, 1])
with col_obj:
    objective = st.radio("Objective", list(OBJECTIVES), format_func=OBJECTIVES.get, key="pl_objective",
                         horizontal=True, disabled=plan is not None)
state.set_objective(objective)
methods = available_methods(objective)
if not methods:
    st.warning(f"No method for the {objective} objective is available yet (installed methods: "
               f"{', '.join(available_methods()) or 'none'}).")
    st.stop()
if st.session_state.get("pl_method") not in methods:
    st.session_state["pl_method"] = state.current_method() if state.current_method() in methods else methods[0]
with col_method:
    method = st.selectbox("Method", methods, key="pl_method", disabled=plan is not None,
                          help="dp: the exact dynamic program (optimal contiguous split). Integer programs and "
                               "baselines appear as they become available.")
state.set_method(method)
takes_limit = "time_limit" in state.method_options(method, time_limit=1.0)
with col_limit:
    limit = st.number_input("Time limit (s)", min_value=1.0, max_value=3600.0, step=5.0, key="pl_time_limit",
                            disabled=not takes_limit or plan is not None,
                            help="For integer programs: stop after this long and report the best plan found "
                                 "with its optimality gap.")
state.set_time_limit(limit)

# ----------------------------------------------------------------------------- solve (cached)
problem = state.result_problem()
with st.spinner(f"Solving with {method}..." if plan is None else "Loading the plan..."):
    result = state.current_result()

if not result.ok:
    message = f"**{result.status}** ({result.method}): {result.reason or 'no placement found'}"
    if result.status == "infeasible":
        st.error(message + "  \nTry more accelerators or CPU cores, or more memory per accelerator "
                           "(Devices page).")
    elif result.status == "no solution":
        st.warning(message + f"  \nNo plan within the {limit:g} s time limit: raise it or use another method.")
    else:
        st.error(message)
    st.stop()

evaluation = placement.evaluate(problem, result.placement)
if result.status == "feasible":
    gap = f"{result.gap:.2%}" if result.gap is not None else "unknown"
    st.warning(f"Not proven optimal ({result.method} stopped at its limit): optimality gap {gap}"
               + (f", lower bound {result.bound:.6g}" if result.bound is not None else "") + ".")
if not evaluation.feasible:
    st.warning("The evaluator finds rule violations: " + "; ".join(evaluation.violations[:5]))

cols = st.columns(5)
numbers = [
    ("Time per sample", f"{evaluation.max_load:.6g}", "The max-load over devices (evaluator)"),
    ("Throughput", f"{evaluation.throughput:.6g}", "Samples per time unit: 1 / time per sample"),
    ("Latency (one sample)", f"{evaluation.latency:.6g}", "Single-sample latency of this placement (evaluator)"),
]
if result.objective_kind == "latency":
    numbers = [numbers[2], numbers[0], numbers[1]]
for col, (label, value, help_text) in zip(cols, numbers):
    col.metric(label, value, help=help_text)
cols[3].metric("Devices used", f"{len(result.placement.stages)} of {len(problem.devices.slots())}")
cols[4].metric("Status", result.status, help=f"{result.method} in {result.seconds:.3f} s")

# ----------------------------------------------------------------------------- figures
device_of = result.placement.device_of
order = [stage.device for stage in result.placement.stages]
st.plotly_chart(
    viz.graph_figure(problem.graph, device_of=device_of, layout=state.graph_layout(problem.graph),
                     device_order=order, title="Partitioned graph (colour = device, pipeline order in the legend)"),
    key="pl_graph", config={"scrollZoom": True, "displaylogo": False})
col_load, col_memory = st.columns(2)
slots = order + [slot for slot in problem.devices.slots() if slot not in order]
with col_load:
    st.plotly_chart(viz.load_figure(evaluation, slots=slots, overlap=problem.devices.overlap,
                                    title="Load per device: compute + communication"), key="pl_load")
with col_memory:
    st.plotly_chart(viz.memory_figure(evaluation, slots=slots), key="pl_memory")

st.dataframe(pd.DataFrame(viz.device_rows(evaluation)), key="pl_devices", hide_index=True)

# ----------------------------------------------------------------------------- downloads
loads = {entry.device: entry.load for entry in evaluation.devices}
split_json = json.dumps(placement.placement_to_dict(result.placement, problem.devices, loads), indent=1)
split_csv = pd.DataFrame(viz.placement_rows(problem, result.placement)).to_csv(index=False)
stem = state.current_graph_name().replace("/", "_").removesuffix(".json") or "graph"
col_json, col_csv, _ = st.columns([1, 1, 3])
col_json.download_button("Placement (paper JSON)", split_json, file_name=f"{stem}_{result.method}_split.json",
                         mime="application/json", key="pl_download_json")
col_csv.download_button("Placement (CSV)", split_csv, file_name=f"{stem}_{result.method}_split.csv",
                        mime="text/csv", key="pl_download_csv")
