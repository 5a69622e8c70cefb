"""The Placement page's lower sections: peak memory, downloads, export to training frameworks."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

import placement
from placement import viz
from ui import state
from ui.placement_texts import EXPORT_LABELS, file_stem, peak_caption


def render_peaks(problem: placement.Problem, result: placement.Result, model, recomputing) -> None:
    """The highest per-device peak under the memory model, and every device's breakdown."""
    breakdown = model.breakdown(problem, result.placement, recomputing)
    highest = max(breakdown, key=lambda row: row.peak)
    col_peak, col_parts = st.columns([1, 4])
    col_peak.metric(
        "Peak memory (memory model)",
        viz.format_bytes(highest.peak),
        help=f"Highest per-device peak under {model.describe()}: {highest.device}, "
        f"{viz.format_bytes(highest.peak)} of {viz.format_bytes(highest.cap)}",
    )
    col_parts.caption(peak_caption(model, problem))
    col_parts.dataframe(pd.DataFrame(viz.memory_breakdown_rows(breakdown)), key="pl_peaks", hide_index=True)


def render_downloads(problem: placement.Problem, result: placement.Result, evaluation) -> None:
    """The split as the paper's JSON and as CSV."""
    loads = {entry.device: entry.load for entry in evaluation.devices}
    split_json = json.dumps(placement.placement_to_dict(result.placement, problem.devices, loads), indent=1)
    split_csv = pd.DataFrame(viz.placement_rows(problem, result.placement)).to_csv(index=False)
    stem = file_stem(state.current_graph_name())
    col_json, col_csv = st.columns(2)
    col_json.download_button(
        "Placement (paper JSON)",
        split_json,
        file_name=f"{stem}_{result.method}_split.json",
        mime="application/json",
        key="pl_download_json",
    )
    col_csv.download_button(
        "Placement (CSV)",
        split_csv,
        file_name=f"{stem}_{result.method}_split.csv",
        mime="text/csv",
        key="pl_download_csv",
    )


def render_export(problem: placement.Problem, result: placement.Result) -> None:
    """The plan as a pipeline configuration of Megatron-LM, torch.distributed.pipelining and DeepSpeed."""
    from placement.pipeline.export import EXPORT_TARGETS, export_json, export_plan

    stem = file_stem(state.current_graph_name())
    with st.container(key="pl_export"):
        st.subheader("Export to a training framework")
        st.caption(
            "The plan as a pipeline configuration: Megatron-LM's --pipeline-model-parallel-layout (transformer "
            "layer graphs), torch.distributed.pipelining / torchtitan split points (module FQNs from the node names "
            "or a 'module' field), DeepSpeed PipelineModule partition boundaries. Plans with CPU stages, mixed "
            "accelerator kinds or non-contiguous stages cannot be expressed; the reason is shown instead."
        )
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
        for column, target in zip(st.columns(len(EXPORT_TARGETS)), EXPORT_TARGETS):
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
                    st.markdown(f"**{EXPORT_LABELS[target]}**")
                    st.warning(f"Cannot export: {exc}")
                    continue
                st.download_button(
                    f"{EXPORT_LABELS[target]} config (JSON)",
                    export_json(export),
                    file_name=f"{stem}_{result.method}_{target}.json",
                    mime="application/json",
                    key=f"pl_export_{target}",
                )
                st.code(export.text, language="python" if target != "megatron" else "bash")
