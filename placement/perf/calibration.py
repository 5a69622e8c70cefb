"""The published runs the performance model is checked against, and its error band on them.

``sample_graphs/calibration/megatron_a100_2021.json``: Narayanan et al., SC 2021, Table 1 (ten GPT runs on
DGX A100 80 GB). A row's measured iteration time is ``flops_per_iteration / (tflops_per_gpu * 1e12 * gpus)``
with the paper's Eq. 3.

Assumptions where the table is silent (the same rule for every row, no per-row choice of constants):

* micro-batch size 1;
* pipeline rows (p > 1) use the interleaved schedule with the fewest chunks that divide the stage (v = 2 when
  L/p is even, else 3; every row's L/p admits one), as Megatron-LM's paper runs did (the 1T row: v = 2);
* 2021 Megatron-LM: fp16 mixed precision with fp16 gradients, full recomputation of every layer, unfused
  attention (scaled masked softmax), no sequence parallelism, no distributed optimizer, no overlap of
  tensor- or data-parallel communication (``tp_async_backward=False``), scatter/gather of pipeline sends over
  the tensor group.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import PlacementError
from .hardware import ACCELERATORS, Cluster, Dtype
from .layout import Attention, Layout, Recompute
from .transformer import TransformerSpec

#: The copied table (kept with its source line).
CALIBRATION_FILE = Path(__file__).resolve().parents[2] / "sample_graphs" / "calibration" / "megatron_a100_2021.json"


@dataclass(frozen=True)
class CalibrationBand:
    """The model's error on published runs: ``|predicted / measured - 1|`` of the iteration time."""

    max_abs_error: float
    mean_abs_error: float
    rows: int
    source: str


@dataclass(frozen=True)
class CalibrationRow:
    """One published run and what the model predicts for it."""

    label: str
    model: TransformerSpec
    cluster: Cluster
    layout: Layout
    measured_seconds: float
    measured_tflops: float


@dataclass(frozen=True)
class CalibrationResult:
    """A row with its prediction."""

    row: CalibrationRow
    predicted_seconds: float
    predicted_tflops: float
    memory_bytes: float
    fits: bool

    @property
    def ratio(self) -> float:
        """Predicted / measured iteration time."""
        return self.predicted_seconds / self.row.measured_seconds


def eq3_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int) -> float:
    """Narayanan et al. 2021, Eq. 3: FLOPs of one iteration with full recomputation."""
    return 96.0 * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))


def _virtual(layers: int, pipeline: int) -> int:
    if pipeline == 1:
        return 1
    per_stage = layers // pipeline
    for v in (2, 3):
        if per_stage % v == 0:
            return v
    return 1


def load_calibration(path: Path | str | None = None) -> list[CalibrationRow]:
    """The published runs of ``path`` (default :data:`CALIBRATION_FILE`) as model, cluster and layout."""
    path = Path(path) if path is not None else CALIBRATION_FILE
    try:
        data = json.loads(path.read_text())
        seq, vocab = int(data["common"]["seq_length"]), int(data["common"]["vocab_size"])
        columns = data["columns"]
        rows = [dict(zip(columns, r, strict=True)) for r in data["rows"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PlacementError(f"{path}: not a calibration table ({exc})") from None
    out = []
    for r in rows:
        layers, hidden, heads = int(r["layers"]), int(r["hidden"]), int(r["heads"])
        t, p, d, gpus = int(r["tensor_parallel"]), int(r["pipeline_parallel"]), int(r["data_parallel"]), int(r["gpus"])
        batch = int(r["global_batch"])
        model = TransformerSpec(layers=layers, hidden=hidden, heads=heads, seq_length=seq, vocab=vocab,
                                name=f"gpt-{r['params_billion']}b")  # fmt: skip
        layout = Layout(
            tensor=t, pipeline=p, data=d, virtual_stages=_virtual(layers, p), micro_batch=1, global_batch=batch,
            recompute=Recompute.FULL, dtype=Dtype.FP16, attention=Attention.UNFUSED, grad_reduce_fp32=False,
            tp_async_backward=False,
        )  # fmt: skip
        cluster = Cluster(ACCELERATORS["A100"], gpus, 8)
        measured = eq3_flops(batch, seq, layers, hidden, vocab) / (float(r["tflops_per_gpu"]) * 1e12 * gpus)
        out.append(CalibrationRow(model.name, model, cluster, layout, measured, float(r["tflops_per_gpu"])))
    return out
