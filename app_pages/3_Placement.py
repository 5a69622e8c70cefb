"""Placement page: solve the current graph on the current devices; the split, loads, memory, downloads."""

import json

import pandas as pd
import streamlit as st

import placement
from placement import viz
from placement.model import Objective, Status
from placement.solve import available_methods, recomputing_devices
from ui import guard, live, state

guard.run_page(__file__, globals())  # one-line errors, never a traceback (also when opened directly)


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
    objective = st.radio(
        "Objective",
        list(OBJECTIVES),
        format_func=OBJECTIVES.get,
        key="pl_objective",
        horizontal=True,
        disabled=plan is not None,
    )
state.set_objective(objective)
memory_model = state.current_memory_model()
methods = [m for m in available_methods(objective) if memory_model.supports(m)]
if memory_model.training:
    st.caption(
        f"Memory model: {memory_model.describe()} (Devices page). Methods plan with it: "
        + ", ".join(f"{m} runs as {state.effective_method(m)}" for m in methods if state.effective_method(m) != m)
        + "."
    )
if not methods and memory_model.training:
    st.warning(
        f"No method plans the {objective} objective under the training memory model: switch the memory "
        "model to weights only on the Devices page, or the objective to throughput."
    )
    st.stop()
if not methods:
    st.warning(
        f"No method for the {objective} objective is available yet (installed methods: "
        f"{', '.join(available_methods()) or 'none'})."
    )
    st.stop()
if st.session_state.get("pl_method") not in methods:
    st.session_state["pl_method"] = state.current_method() if state.current_method() in methods else methods[0]
with col_method:
    method = st.selectbox(
        "Method",
        methods,
        key="pl_method",
        disabled=plan is not None,
        format_func=state.method_name,
        help="Exact DP: the optimal contiguous split. Integer programs also place "
        "non-contiguously or optimise latency; the baselines are for comparison.",
    )
state.set_method(method)
takes_limit = state.takes_time_limit(method)
with col_limit:
    limit = st.number_input(
        "Time limit (s)",
        min_value=1.0,
        max_value=3600.0,
        step=5.0,
        key="pl_time_limit",
        disabled=not takes_limit or plan is not None,
        help="Only for methods with a time limit (integer programs, local search): stop "
        "after this long and report the best plan found with its optimality gap.",
    )
state.set_time_limit(limit)

# ----------------------------------------------------------------------------- solve (cached)
problem = state.result_problem()
with st.spinner(f"Solving with {method}..." if plan is None else "Loading the plan..."):
    result = state.current_result(live=True)

if not result.ok:
    message = f"**{result.status}** ({result.method}): {result.reason or 'no placement found'}"
    if result.status == Status.INFEASIBLE:
        st.error(message + "  \nTry more accelerators or CPU cores, or more memory per accelerator (Devices page).")
    elif result.status == Status.NO_SOLUTION:
        st.warning(message + f"  \nNo plan within the {limit:g} s time limit: raise it or use another method.")
    else:
        st.error(message)
    st.stop()

evaluation = placement.evaluate(problem, result.placement)
if live.from_table(result):  # a device count only went down: answered from the last DP table
    col_note, col_fresh = st.columns([4, 1], vertical_alignment="center")
    col_note.caption(live.note(result))
    if col_fresh.button("Solve afresh (tie-break)", key="pl_solve_afresh"):
        live.solve_afresh(problem)
        st.rerun()
if result.status == Status.FEASIBLE:
    st.warning(state.not_optimal_note(result))
if not evaluation.feasible:
    st.warning("The evaluator finds rule violations: " + "; ".join(evaluation.violations[:5]))
recomputing = recomputing_devices(result)  # a per-stage plan's own choice
out_of_memory = memory_model.violations(problem, result.placement, recomputing) if memory_model.training else ()
if out_of_memory:
    st.error("Runs out of memory under the memory model in force: " + "; ".join(out_of_memory[:3]))

# Rows of three, so that no headline number is cut at 1024 px (issue 26).
cols = st.columns(3) + st.columns(3) + st.columns(3)
numbers = [
    (
        "Time per sample",
        state.format_time(evaluation.max_load),
        "Steady state: the max-load over devices (evaluator), once the pipeline is full",
    ),
    (
        "Throughput",
        f"{evaluation.throughput * 1000:.6g} /s",
        "Steady-state samples per second: 1000 / time per sample in ms (no fill or drain)",
    ),
    ("Latency (one sample)", *state.latency_text(problem, evaluation.latency)),
]
if result.objective_kind == Objective.LATENCY:
    numbers = [numbers[2], numbers[0], numbers[1]]
for col, (label, value, help_text) in zip((cols[0], cols[1], cols[3]), numbers):
    col.metric(label, value, help=help_text)
timing = state.batch_timing(problem, result)
if timing is not None:
    cols[2].metric(
        "Time per batch",
        state.format_time(timing.batch_time),
        help=f"One batch of {timing.label()} from the first forward to the last unit, pipeline fill and drain "
        f"included ({timing.samples_per_second:.4g} samples/s, bubble {timing.bubble:.1%}); schedule and "
        "microbatches from the Devices page's memory model. The Timeline page draws it.",
    )
cols[4].metric("Devices used", f"{len(result.placement.stages)} of {len(problem.devices.slots())}")
cost_value, cost_help = state.plan_cost_line(problem, result)
cols[5].metric("Cost per 1M samples", cost_value, help=cost_help)
cols[6].metric("Status", result.status, help=f"{state.method_name(result.method)} in {result.seconds:.3f} s")
if timing is not None:
    st.caption(
        f"Time per sample is the steady state; one batch ({timing.label()}) takes "
        f"{state.format_time(timing.batch_time)} with fill and drain, {timing.samples_per_second:.4g} samples/s "
        f"({timing.bubble:.1%} of device time idle)."
    )

# ----------------------------------------------------------------------------- figures
device_of = result.placement.device_of
order = [stage.device for stage in result.placement.stages]
st.plotly_chart(
    viz.graph_figure(
        problem.graph,
        device_of=device_of,
        layout=state.graph_layout(problem.graph),
        device_order=order,
        title="Partitioned graph (color = device, pipeline order in the legend)",
    ),
    key="pl_graph",
    config={"scrollZoom": True, "displaylogo": False},
)
col_load, col_memory = st.columns(2)
slots = order + [slot for slot in problem.devices.slots() if slot not in order]
with col_load:
    st.plotly_chart(
        viz.load_figure(
            evaluation, slots=slots, overlap=problem.devices.overlap, title="Load per device: compute + communication"
        ),
        key="pl_load",
    )
with col_memory:
    st.plotly_chart(viz.memory_figure(evaluation, slots=slots), key="pl_memory")

st.dataframe(pd.DataFrame(viz.device_rows(evaluation)), key="pl_devices", hide_index=True)
breakdown = memory_model.breakdown(problem, result.placement, recomputing)
highest = max(breakdown, key=lambda row: row.peak)
col_peak, col_parts = st.columns([1, 4])
col_peak.metric(
    "Peak memory (memory model)",
    viz.format_bytes(highest.peak),
    help=f"Highest per-device peak under {memory_model.describe()}: {highest.device}, "
    f"{highest.peak:,.0f} bytes of {highest.cap:,.0f}",
)
col_parts.caption(
    f"Peak per device under {memory_model.describe()}"
    + (
        f" (optimizer state x{memory_model.optimizer_for(problem):g} forward weights; activations: bytes the "
        "forward nodes keep for the backward, for the microbatches in flight)"
        if memory_model.training
        else ""
    )
    + ": weights, gradients, optimizer state, activations, and the memory left free on the device."
)
col_parts.dataframe(pd.DataFrame(viz.memory_breakdown_rows(breakdown)), key="pl_peaks", hide_index=True)

# ----------------------------------------------------------------------------- downloads
loads = {entry.device: entry.load for entry in evaluation.devices}
split_json = json.dumps(placement.placement_to_dict(result.placement, problem.devices, loads), indent=1)
split_csv = pd.DataFrame(viz.placement_rows(problem, result.placement)).to_csv(index=False)
stem = state.current_graph_name().replace("/", "_").removesuffix(".json") or "graph"
col_json, col_csv, _ = st.columns([1, 1, 3])
col_json.download_button(
    "Placement (paper JSON)",
    split_json,
    file_name=f"{stem}_{result.method}_split.json",
    mime="application/json",
    key="pl_download_json",
)
col_csv.download_button(
    "Placement (CSV)", split_csv, file_name=f"{stem}_{result.method}_split.csv", mime="text/csv", key="pl_download_csv"
)

# ----------------------------------------------------------------------------- export to training frameworks
with st.container(key="pl_export"):
    st.subheader("Export to a training framework")
    st.caption(
        "The plan as a pipeline configuration: Megatron-LM's --pipeline-model-parallel-layout (transformer "
        "layer graphs), torch.distributed.pipelining / torchtitan split points (module FQNs from the node names "
        "or a 'module' field), DeepSpeed PipelineModule partition boundaries. Plans with CPU stages, mixed "
        "accelerator kinds or non-contiguous stages cannot be expressed; the reason is shown instead."
    )
    from placement.pipeline.export import EXPORT_TARGETS, export_json, export_plan

    state.init_widget("pl_export_virtual", 1)
    col_v, col_tp, col_dp, _ = st.columns([1, 1, 1, 2])
    export_virtual = col_v.number_input(
        "Virtual stages / device",
        1,
        8,
        step=1,
        key="pl_export_virtual",
        help="Stage i runs on device i mod (stages / v) (interleaved pipelines).",
    )
    export_tp = col_tp.number_input("Tensor parallel (Megatron)", 1, 64, step=1, key="pl_export_tp")
    export_dp = col_dp.number_input("Data parallel (Megatron)", 1, 4096, step=1, key="pl_export_dp")
    labels = {"megatron": "Megatron-LM", "torch": "torch / torchtitan", "deepspeed": "DeepSpeed"}
    columns = st.columns(len(EXPORT_TARGETS))
    for column, target in zip(columns, EXPORT_TARGETS):
        with column:
            try:
                export = export_plan(
                    problem,
                    result.placement,
                    target,
                    virtual=int(export_virtual),
                    tensor_parallel=int(export_tp),
                    data_parallel=int(export_dp),
                )
            except placement.PlacementError as exc:
                st.markdown(f"**{labels[target]}**")
                st.warning(f"Cannot export: {exc}")
                continue
            st.download_button(
                f"{labels[target]} config (JSON)",
                export_json(export),
                file_name=f"{stem}_{result.method}_{target}.json",
                mime="application/json",
                key=f"pl_export_{target}",
            )
            st.code(export.text, language="python" if target != "megatron" else "bash")
