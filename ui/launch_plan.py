"""The Parallel plan page's section "Launchable layout (transformer training)".

Model preset or custom shape, GPU kind and count (default: the session's inventory where it has a kind the
performance model knows), framework; shows the optimum of the framework's space (placement/perf/search.py)
with its launch command and configs, the layers, memory and step of every pipeline rank (a free split's
``--pipeline-model-parallel-layout`` string), the memory and time breakdowns, the pipeline schedule timeline, the
predicted numbers with the model id
and calibration band, and a box to paste any Megatron-LM command and see its prediction beside the optimum.
"""

from __future__ import annotations

import json
import shlex

import streamlit as st

from placement import PlacementError
from placement.perf.coverage import properties
from placement.perf.hardware import ACCELERATORS, GIB, Cluster, accelerator
from placement.perf.launch import deepspeed_config, megatron_command, torchtitan_toml
from placement.perf.layout import Layout, Recompute, Schedule, stage_layers
from placement.perf.megatron import parse_megatron_args
from placement.perf.memory import memory_breakdown
from placement.perf.plan_cli import describe_layout, launch_configs
from placement.perf.pp_layout import pipeline_layout_string
from placement.perf.predict import Prediction, predict, stage_seconds
from placement.perf.search import SearchResult, search
from placement.perf.spaces import SPACES
from placement.perf.timeline import schedule_blocks
from placement.perf.transformer import MODELS, TransformerSpec
from placement.viz import perf as viz_perf

from . import state

CUSTOM = "custom shape"


def _inventory_default() -> tuple[str, int]:
    """(GPU kind, count) from the session's inventory when it has a kind the model knows, else (H100, 64)."""
    try:
        for kind in state.current_devices().accelerators:
            try:
                return accelerator(kind.name).name, max(1, int(kind.count))
            except PlacementError:
                continue
    except Exception:  # noqa: BLE001 - no inventory yet (a fresh session): the defaults below
        pass
    return "H100", 64


@st.cache_data(show_spinner=False, max_entries=16)
def _search(model: TransformerSpec, cluster: Cluster, batch: int, space: str) -> SearchResult:
    return search(model, cluster, batch, space)


def _model_inputs() -> TransformerSpec:
    names = [*MODELS, CUSTOM]
    choice = st.selectbox("model", names, index=names.index("llama3-70b"), key="lp_model")
    if choice != CUSTOM:
        preset = MODELS[choice]
        seq = st.number_input("sequence length", 128, 1 << 20, preset.seq_length, step=128, key="lp_seq")
        return preset.with_changes(seq_length=int(seq))
    c = st.columns(4)
    layers = c[0].number_input("layers", 1, 1000, 32, key="lp_layers")
    hidden = c[1].number_input("hidden size", 64, 1 << 17, 4096, step=64, key="lp_hidden")
    heads = c[2].number_input("attention heads", 1, 1024, 32, key="lp_heads")
    groups = c[3].number_input("query groups (GQA)", 1, 1024, 8, key="lp_groups")
    c = st.columns(4)
    ffn = c[0].number_input("FFN hidden size", 64, 1 << 18, 14336, step=64, key="lp_ffn")
    vocab = c[1].number_input("vocabulary", 1, 1 << 20, 128256, key="lp_vocab")
    seq = c[2].number_input("sequence length", 128, 1 << 20, 8192, step=128, key="lp_seq_custom")
    swiglu = c[3].checkbox("SwiGLU", value=True, key="lp_swiglu")
    return TransformerSpec(
        layers=int(layers), hidden=int(hidden), heads=int(heads), query_groups=int(groups), ffn_hidden=int(ffn),
        vocab=int(vocab), seq_length=int(seq), swiglu=bool(swiglu), name="custom",
    )  # fmt: skip


def _metrics(pred: Prediction) -> None:
    error = pred.error
    band = f" ± {error.value:.0%}" if error.value is not None else " (extrapolated)"
    m = st.columns(4)
    m[0].metric("iteration", f"{pred.iteration_seconds:.3f} s{band}")
    m[1].metric("tokens/s", f"{pred.tokens_per_second:,.0f}")
    m[2].metric("TFLOP/s per GPU", f"{pred.tflops_per_gpu:.1f}")
    m[3].metric("MFU", f"{pred.mfu:.1%}")


def _calibration(pred: Prediction, key: str) -> None:
    """How far the model was from measured runs, and the run's properties outside them (where it extrapolates)."""
    error = pred.error
    band = error.band
    if band is None:
        st.caption(f"Model {pred.model_id}: {error.headline}.")
        return
    text = (
        f"Model {pred.model_id}: error {error.headline}. The calibration runs: within ±{band.max_abs_error:.0%} "
        f"(mean {band.mean_abs_error:.1%}) of the iteration time of {band.rows} measured runs ({band.source})."
    )
    outside = pred.outside_calibration
    if not outside:
        st.caption(text + " Every property compared is within those runs.")
        return
    st.caption(text + f" This run is outside them in {properties(len(outside))}: there the model extrapolates.")
    with st.expander(f"{properties(len(outside))} outside the calibration runs", key=key):
        st.markdown("\n".join(f"- {item}" for item in outside))


def _downloads(model: TransformerSpec, result: SearchResult) -> None:
    layout = result.plan.layout
    c = st.columns(3)
    for col, (label, name, make, key) in zip(
        c,
        (
            (
                "Megatron-LM arguments",
                "megatron_args.txt",
                lambda: " ".join(megatron_command(model, layout)) + "\n",
                "lp_dl_megatron",
            ),
            ("torchtitan TOML", "torchtitan.toml", lambda: torchtitan_toml(model, layout), "lp_dl_toml"),
            (
                "DeepSpeed JSON",
                "ds_config.json",
                lambda: json.dumps(deepspeed_config(model, layout), indent=2),
                "lp_dl_json",
            ),
        ),
        strict=True,
    ):
        try:
            col.download_button(label, make(), name, key=key)
        except PlacementError as exc:  # the plan uses what that framework cannot run
            col.caption(f"{label}: {exc}")


def _rank_layers(model: TransformerSpec, cluster: Cluster, layout: Layout) -> None:
    """Layers, memory and step of every pipeline rank, and how Megatron-LM is told the split."""
    p = layout.pipeline
    if p == 1:
        return
    counts = stage_layers(model, layout)
    if layout.free_split:
        how = f"a free split: `--pipeline-model-parallel-layout {pipeline_layout_string(model, layout)}`"
    elif layout.uneven:
        how = (
            f"`--decoder-first-pipeline-num-layers {layout.first_stage_layers} "
            f"--decoder-last-pipeline-num-layers {layout.last_stage_layers}`"
        )
    else:
        how = "an even split"
    st.markdown(f"**Layers per pipeline rank** ({how}): " + " / ".join(str(n) for n in counts))
    steps = stage_seconds(model, cluster, layout)
    st.dataframe(
        [
            {
                "rank": i,
                "layers": n,
                "also holds": "embedding" if i == 0 else "output layer" if i == p - 1 else "",
                "GiB": memory_breakdown(model, layout, stage=i).total / GIB,
                "step s (one micro-batch)": sum(steps[i]),
            }
            for i, n in enumerate(counts)
        ],
        hide_index=True,
        key="lp_rank_table",
    )


def _pasted(cluster: Cluster, result: SearchResult) -> None:
    text = st.text_area(
        "paste a Megatron-LM command (its flags; `torchrun ... pretrain_gpt.py` is ignored)",
        "",
        key="lp_paste",
        height=100,
    )
    if not text.strip():
        return
    try:
        argv = shlex.split(text.replace("\\\n", " "))
        pasted_model, layout, notes = parse_megatron_args(argv, cluster.gpus)
        pred = predict(pasted_model, cluster, layout)
    except (PlacementError, ValueError) as exc:
        st.error(f"pasted command: {str(exc).splitlines()[0]}")
        return
    st.markdown(f"**Pasted layout**: {describe_layout(layout)}" + ("" if pred.fits else " — **does not fit**"))
    _metrics(pred)
    if notes:
        st.caption("; ".join(notes))
    _calibration(pred, "lp_pasted_outside")
    rows = {"pasted": pred}
    if result.plan is not None:
        rows = {"optimum": result.plan.prediction, "pasted": pred}
    st.dataframe(
        [
            {
                "layout": name,
                "iteration s": p.iteration_seconds,
                "tokens/s": p.tokens_per_second,
                "TFLOP/s per GPU": p.tflops_per_gpu,
                "MFU": p.mfu,
                "GiB per GPU": p.memory.total / GIB,
                "fits": p.fits,
                "properties outside the calibration runs": len(p.outside_calibration),
            }
            for name, p in rows.items()
        ],
        hide_index=True,
        key="lp_compare_table",
    )
    st.plotly_chart(
        viz_perf.memory_figure({k: p.memory.as_dict() for k, p in rows.items()}, cluster.accelerator.memory_bytes),
        key="lp_compare_memory",
    )
    st.plotly_chart(viz_perf.time_figure({k: p.time.as_dict() for k, p in rows.items()}), key="lp_compare_time")


def _timeline(model: TransformerSpec, cluster: Cluster, layout: Layout) -> None:
    """The plan's pipeline schedule (at most 4p micro-batches drawn, so that the picture stays readable)."""
    if layout.pipeline == 1 or layout.schedule is Schedule.ZB_H1:
        return
    p = layout.pipeline
    m = min(layout.microbatches, 4 * p)
    shown = f"{m} of {layout.microbatches} micro-batches" if m < layout.microbatches else f"{m} micro-batches"
    blocks = schedule_blocks(layout.schedule, stage_seconds(model, cluster, layout), m, layout.virtual_stages)
    st.plotly_chart(
        viz_perf.schedule_figure(
            blocks, f"Pipeline schedule ({layout.schedule}, {shown})", layout.recompute is not Recompute.NONE
        ),
        key="lp_timeline",
    )


def render() -> None:
    """Draw the section (the Parallel plan page calls this once)."""
    st.divider()
    st.header("Launchable layout (transformer training)")
    st.caption(
        "The fastest layout a framework can launch (one t, p, d, cp, ... for the whole model), proven optimal in "
        "the transformer performance model by an exact search (docs: models/launchable-plans.md)."
    )
    model = _model_inputs()
    kind, count = _inventory_default()
    kinds = list(ACCELERATORS)
    c = st.columns(4)
    gpu = c[0].selectbox("GPU", kinds, index=kinds.index(kind), key="lp_gpu")
    gpus = c[1].number_input("GPUs", 1, 65536, count, key="lp_gpus")
    per_node = c[2].number_input("GPUs per node", 1, 72, 8, key="lp_per_node")
    batch = c[3].number_input("global batch (sequences)", 1, 1 << 20, 1024, key="lp_batch")
    framework = st.selectbox("framework", list(SPACES), key="lp_framework")
    try:
        cluster = Cluster(ACCELERATORS[gpu], int(gpus), int(per_node))
        with st.spinner("searching"):
            result = _search(model, cluster, int(batch), framework)
    except PlacementError as exc:
        st.error(str(exc))
        return
    if result.plan is None:
        st.warning(f"No layout fits: {result.reason} (proven by the exact search).")
    else:
        pred = result.plan.prediction
        st.success(
            f"Optimal in the model {pred.model_id} ({result.stats.shapes} shapes, {result.stats.predictions} "
            f"predictions, {result.seconds:.2f} s) over: {result.space_title}"
        )
        st.markdown(f"**Plan**: {describe_layout(result.plan)}")
        _metrics(pred)
        _rank_layers(model, cluster, result.plan.layout)
        _calibration(pred, "lp_plan_outside")
        configs = launch_configs(model, result.plan, framework, cluster.gpus_per_node)
        if "megatron_args" in configs:
            st.code(" ".join(configs["megatron_args"]), language="bash")
        if "torchtitan_command" in configs:
            st.caption("torchtitan 0.2.2 (TOML job configs): save the torchtitan TOML below as torchtitan.toml, then")
            st.code(" ".join(configs["torchtitan_command"]), language="bash")
        for check in configs["checks"]:  # a framework not installed here: "not checked", not a rejection
            (st.caption if check["ok"] or not check["checked"] else st.warning)(check["line"])
        _downloads(model, result)
        st.plotly_chart(
            viz_perf.memory_figure({"optimum": pred.memory.as_dict()}, cluster.accelerator.memory_bytes),
            key="lp_memory",
        )
        st.plotly_chart(viz_perf.time_figure({"optimum": pred.time.as_dict()}), key="lp_time")
        _timeline(model, cluster, result.plan.layout)
    _pasted(cluster, result)
