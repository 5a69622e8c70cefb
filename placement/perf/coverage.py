"""Where a run stands against the measured runs the performance model was calibrated on.

The calibration band (:class:`~placement.perf.calibration.CalibrationBand`) says how far the model was from
the published runs. It is evidence only for runs like them: a prediction for another GPU, another precision,
ZeRO, offload, context parallelism or an architecture none of them had extrapolates the model's physics
beyond what was measured. :func:`outside_calibration` lists, in words, each property of a run that no
measured run shares, so that every number shown with the band also says where the band does not reach.

The envelope is read from the calibration table itself (:func:`calibration_envelope`): a discrete property
(the GPU, the precision, the ZeRO stage, ...) is covered when some measured run had the same value; a size
(GPUs, degrees, hidden size, ...) when it lies within the measured runs' range. A property that a new table
covers stops being listed, with no change here. The layouts' micro-batch size is not compared: the table does
not state it (:mod:`placement.perf.calibration` assumes 1); the virtual stages and schedule it assumes are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .calibration import CALIBRATION_FILE, CalibrationBand, load_calibration
from .hardware import Cluster
from .layout import Layout
from .transformer import TransformerSpec

Run = tuple[TransformerSpec, Cluster, Layout]


@dataclass(frozen=True)
class Feature:
    """One property of a run: ``label`` (the words shown), ``read`` (its value), ``ranged`` (a size, covered
    within the measured runs' range; otherwise a discrete value, covered when some measured run had it)."""

    label: str
    read: Callable[[TransformerSpec, Cluster, Layout], object]
    ranged: bool = False


def _split(layout: Layout) -> str:
    if layout.free_split:
        return "free (per-rank counts)"
    return "uneven (first/last)" if layout.uneven else "even"


def _power(cluster: Cluster) -> str:
    watts = cluster.accelerator.power_limit_watts
    return "none" if watts is None else f"{watts:g} W"


def _overlaps(layout: Layout) -> str:
    names = [
        name
        for name, on in (
            ("tensor-parallel backward", layout.tp_async_backward),
            ("gradient reduction", layout.overlap_grad_reduce),
            ("parameter gather", layout.overlap_param_gather),
            ("tensor-parallel communication", layout.tp_comm_overlap),
        )
        if on
    ]
    return ", ".join(names) or "none"


#: The properties compared, in the order they are listed.
FEATURES: tuple[Feature, ...] = (
    Feature("GPU", lambda m, c, lay: c.accelerator.name),
    Feature("power limit", lambda m, c, lay: _power(c)),
    Feature("GPUs", lambda m, c, lay: c.gpus, ranged=True),
    Feature("GPUs per node", lambda m, c, lay: c.gpus_per_node),
    Feature("NVLink GB/s", lambda m, c, lay: c.intra_bytes_per_s / 1e9, ranged=True),
    Feature("network GB/s per GPU", lambda m, c, lay: c.inter_bytes_per_s / 1e9, ranged=True),
    Feature("precision", lambda m, c, lay: lay.dtype.value),
    Feature("float8 linear layers", lambda m, c, lay: "none" if lay.float8 is None else lay.float8.recipe.value),
    Feature("gradient reduction", lambda m, c, lay: "fp32" if lay.fp32_grads() else "16-bit"),
    Feature("tensor parallel", lambda m, c, lay: lay.tensor, ranged=True),
    Feature("pipeline parallel", lambda m, c, lay: lay.pipeline, ranged=True),
    Feature("data parallel", lambda m, c, lay: lay.data, ranged=True),
    Feature("virtual stages", lambda m, c, lay: lay.virtual_stages, ranged=True),
    Feature("context parallel", lambda m, c, lay: lay.context),
    Feature("expert parallel", lambda m, c, lay: lay.expert),
    Feature("sequence parallel", lambda m, c, lay: lay.sequence_parallel),
    Feature("ZeRO stage (distributed optimizer / FSDP)", lambda m, c, lay: lay.zero_stage),
    Feature("HSDP replicas of the FSDP shard group", lambda m, c, lay: lay.replicate),
    Feature("optimizer state offloaded to CPU", lambda m, c, lay: lay.offload_optimizer),
    Feature("parameters offloaded to CPU", lambda m, c, lay: lay.offload_params),
    Feature("recomputation", lambda m, c, lay: lay.recompute.value),
    Feature("pipeline schedule", lambda m, c, lay: lay.schedule.value if lay.pipeline > 1 else "none"),
    Feature("layer split", lambda m, c, lay: _split(lay)),
    Feature("core attention", lambda m, c, lay: lay.attention.value),
    Feature("communication overlap", lambda m, c, lay: _overlaps(lay)),
    Feature("global batch", lambda m, c, lay: lay.global_batch, ranged=True),
    Feature("layers", lambda m, c, lay: m.layers, ranged=True),
    Feature("hidden size", lambda m, c, lay: m.hidden, ranged=True),
    Feature("sequence length", lambda m, c, lay: m.seq_length, ranged=True),
    Feature("vocabulary", lambda m, c, lay: m.vocab, ranged=True),
    Feature("MLP", lambda m, c, lay: "SwiGLU" if m.swiglu else "GELU"),
    Feature("attention heads per key/value head", lambda m, c, lay: m.heads // (m.query_groups or m.heads)),
    Feature("normalisation", lambda m, c, lay: m.norm.value),
    Feature("rotary positions", lambda m, c, lay: m.rope),
    Feature("experts per MoE layer", lambda m, c, lay: m.num_experts),
)


@dataclass(frozen=True)
class Envelope:
    """What the measured runs covered: per feature label, the set of values seen or the ``(low, high)`` range."""

    source: str
    runs: int
    values: tuple[tuple[str, tuple[object, ...]], ...]

    def covered(self, label: str) -> tuple[object, ...]:
        """The values (or the ``(low, high)`` range) of feature ``label`` in the measured runs."""
        return dict(self.values)[label]


def envelope_of(runs: Iterable[Run], source: str) -> Envelope:
    """The envelope of ``runs`` (each ``(model, cluster, layout)``)."""
    runs = list(runs)
    values: list[tuple[str, tuple[object, ...]]] = []
    for feature in FEATURES:
        seen = [feature.read(*run) for run in runs]
        if feature.ranged:
            values.append((feature.label, (min(seen), max(seen))))  # type: ignore[type-var]
        else:
            values.append((feature.label, tuple(sorted(set(seen), key=str))))
    return Envelope(source, len(runs), tuple(values))


@lru_cache(maxsize=4)
def calibration_envelope(path: Path | str | None = None) -> Envelope | None:
    """The envelope of the calibration table (default :data:`~placement.perf.calibration.CALIBRATION_FILE`;
    ``None`` when it is not installed)."""
    path = Path(path) if path is not None else CALIBRATION_FILE
    if not path.is_file():
        return None
    rows = load_calibration(path)
    return envelope_of(((row.model, row.cluster, row.layout) for row in rows), path.name)


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


#: The frameworks of the calibration table's runs (Megatron-LM, Narayanan et al. 2021).
CALIBRATED_FRAMEWORKS = ("megatron", "megatron-2021")


def outside_calibration(
    model: TransformerSpec,
    cluster: Cluster,
    layout: Layout,
    envelope: Envelope | None = None,
    framework: str = "megatron",
) -> tuple[str, ...]:
    """Each property of the run that no measured run shares, in words (empty: the run is like the measured ones).

    Parameters
    ----------
    model, cluster, layout : TransformerSpec, Cluster, Layout
        The run.
    envelope : Envelope or None
        What the measured runs covered (default: :func:`calibration_envelope` of the installed table; when that
        is missing nothing is listed, as no band is shown either).
    framework : str
        The framework whose launch is predicted (``plan --framework``); the calibration runs are Megatron-LM's
        (:data:`CALIBRATED_FRAMEWORKS`).

    Returns
    -------
    tuple of str
        E.g. ``"GPU H100 (calibration runs: A100)"``, ``"GPUs 4096 (calibration runs: 32 to 3072)"``.
    """
    envelope = envelope if envelope is not None else calibration_envelope()
    if envelope is None:
        return ()
    seen = dict(envelope.values)  # (once per call: ``Envelope.covered`` builds it per label)
    out = []
    if framework not in CALIBRATED_FRAMEWORKS:
        out.append(f"framework {framework} (calibration runs: Megatron-LM)")
    for feature in FEATURES:
        value = feature.read(model, cluster, layout)
        covered = seen[feature.label]
        if feature.ranged:
            low, high = covered
            if not low <= value <= high:  # type: ignore[operator]
                out.append(f"{feature.label} {_shown(value)} (calibration runs: {_shown(low)} to {_shown(high)})")
        elif value not in covered:
            listed = ", ".join(_shown(v) for v in covered)
            out.append(f"{feature.label} {_shown(value)} (calibration runs: {listed})")
    return tuple(out)


def properties(count: int) -> str:
    """``"1 property"``, ``"2 properties"``."""
    return f"{count} property" if count == 1 else f"{count} properties"


def calibration_lines(band: CalibrationBand | None, outside: tuple[str, ...], indent: str = "  ") -> list[str]:
    """The text lines that say how far the model was from measured runs, and where this run is outside them.

    Empty without a band (the table is not installed)."""
    if band is None:
        return []
    lines = [
        f"calibration: within ±{band.max_abs_error:.1%} (mean {band.mean_abs_error:.1%}) of the iteration time of "
        f"{band.rows} measured runs ({band.source})"
    ]
    if outside:
        lines.append(f"outside those runs in {properties(len(outside))} (there the model extrapolates):")
        lines += [f"{indent}{item}" for item in outside]
    else:
        lines.append("every property compared is within those runs")
    return lines
