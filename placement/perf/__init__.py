"""A performance and memory model of transformer training (Megatron-LM style parallelism).

Closed-form per layer: GEMMs with shape-dependent efficiency, fused or unfused attention, streaming kernels
at HBM speed, alpha-beta collectives placed as Megatron places its groups, pipeline bubbles, data-parallel
reduction with or without overlap, the optimizer step; memory by part with Korthikanti et al.'s activation
formulas. Calibrated once on published runs (``sample_graphs/calibration/``); see the docs page
``docs/models/transformer.md``.

>>> from placement.perf import ACCELERATORS, Cluster, Layout, MODELS, predict
>>> p = predict(MODELS["gpt3-175b"], Cluster(ACCELERATORS["A100"], 1024),
...             Layout(tensor=8, pipeline=8, data=16, virtual_stages=2, global_batch=1536,
...                    sequence_parallel=True, zero_stage=1, recompute="selective"))
>>> p.fits, p.model_id
(True, 'perf-v1')
"""

from .calibration import (
    CALIBRATION_FILE,
    CalibrationResult,
    CalibrationRow,
    eq3_flops,
    load_calibration,
)
from .claims import Claim, compare_claim
from .collectives import (
    Group,
    GroupKind,
    Links,
    allgather_seconds,
    allreduce_seconds,
    alltoall_seconds,
    megatron_group,
    p2p_seconds,
    reduce_scatter_seconds,
    strided_group,
)
from .coverage import Envelope, calibration_envelope, outside_calibration
from .device_runs import DeviceRunRow, device_run_rows
from .eager import EagerPrediction, eager_predict
from .eager_memory import EagerMemory, eager_memory_parts

# The launchable-layout search on this model (after the model's own names: it imports them).
from .free_split import best_free_split
from .hardware import ACCELERATORS, Accelerator, Cluster, Dtype, accelerator
from .hetero import HeteroPlan, HeteroResult, search_hetero
from .hf_config import model_from_argument, spec_from_hf_config
from .kernels import flash_attention_seconds, gemm_efficiency, gemm_seconds, streaming_seconds
from .launch import deepspeed_config, megatron_command, torchtitan_toml
from .layout import (
    Attention,
    Float8Recipe,
    Float8Training,
    Kernels,
    Layout,
    Recompute,
    RecomputeMethod,
    Schedule,
    check_layout,
    stage_layers,
)
from .megatron import megatron_args, parse_megatron_args, parse_megatron_command
from .memory import (
    MemoryBreakdown,
    korthikanti_layer_bytes,
    layer_activation_bytes,
    layers_in_flight,
    memory_breakdown,
    stage_parameters,
)
from .params import DEFAULT_PARAMS, PerfParams
from .pareto import pareto_front as layout_pareto_front
from .partial_split import best_partial_split
from .predict import (
    MODEL_ID,
    CalibrationBand,
    Prediction,
    TimeBreakdown,
    calibration_band,
    calibration_results,
    iteration_flops,
    iteration_time,
    layer_forward_flops,
    predict,
)
from .profile import DeviceProfile, load_profile, profile_from_dict, save_profile
from .profiled import accelerator_from_profile
from .search import Plan, SearchResult, search
from .spaces import SPACES, Framework, SearchSpace, get_space
from .transformer import MODELS, Norm, TransformerSpec, model_preset

__all__ = [
    "model_from_argument",
    "spec_from_hf_config",
    "best_free_split",
    "best_partial_split",
    "ACCELERATORS",
    "Accelerator",
    "Attention",
    "CALIBRATION_FILE",
    "CalibrationBand",
    "CalibrationResult",
    "CalibrationRow",
    "Claim",
    "DeviceProfile",
    "DeviceRunRow",
    "EagerMemory",
    "EagerPrediction",
    "device_run_rows",
    "eager_memory_parts",
    "eager_predict",
    "accelerator_from_profile",
    "compare_claim",
    "load_profile",
    "profile_from_dict",
    "save_profile",
    "Cluster",
    "Envelope",
    "DEFAULT_PARAMS",
    "Dtype",
    "Group",
    "GroupKind",
    "Layout",
    "Float8Recipe",
    "Float8Training",
    "Kernels",
    "Links",
    "MODELS",
    "MODEL_ID",
    "MemoryBreakdown",
    "Norm",
    "PerfParams",
    "Prediction",
    "Recompute",
    "RecomputeMethod",
    "Schedule",
    "TimeBreakdown",
    "TransformerSpec",
    "accelerator",
    "allgather_seconds",
    "allreduce_seconds",
    "alltoall_seconds",
    "calibration_band",
    "calibration_envelope",
    "calibration_results",
    "check_layout",
    "stage_layers",
    "eq3_flops",
    "flash_attention_seconds",
    "gemm_efficiency",
    "gemm_seconds",
    "iteration_flops",
    "iteration_time",
    "korthikanti_layer_bytes",
    "layer_activation_bytes",
    "layer_forward_flops",
    "layers_in_flight",
    "load_calibration",
    "megatron_args",
    "megatron_group",
    "memory_breakdown",
    "model_preset",
    "outside_calibration",
    "p2p_seconds",
    "parse_megatron_args",
    "parse_megatron_command",
    "predict",
    "reduce_scatter_seconds",
    "stage_parameters",
    "streaming_seconds",
    "strided_group",
    # launchable-layout search
    "SPACES",
    "Framework",
    "HeteroPlan",
    "HeteroResult",
    "Plan",
    "SearchResult",
    "SearchSpace",
    "deepspeed_config",
    "get_space",
    "layout_pareto_front",
    "megatron_command",
    "search",
    "search_hetero",
    "torchtitan_toml",
]
