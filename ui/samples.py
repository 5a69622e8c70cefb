"""The sample graphs shipped in ``sample_graphs/``: their files, groups and labels (no session state)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = ROOT / "sample_graphs"
#: The paper's BERT-24 (inference, layer granularity): the first graph of the paper's own files.
PAPER_SAMPLE = SAMPLES_DIR / "throughput" / "layer" / "bert24_inference.json"
#: The graph a fresh session opens: a Llama-style transformer priced by the perf model on a real inventory.
DEFAULT_SAMPLE = SAMPLES_DIR / "models" / "llama3_8b_training.json"
#: Environment variable: the label of the sample a fresh session opens instead (e.g. ``throughput/layer/
#: bert24_inference`` for a class on the paper's graphs); a label that names no sample is ignored.
DEFAULT_SAMPLE_ENV = "PLACEMENT_DEFAULT_SAMPLE"


def default_sample() -> Path:
    """The sample a fresh session opens: :data:`DEFAULT_SAMPLE`, or the one :data:`DEFAULT_SAMPLE_ENV` names."""
    wanted = os.environ.get(DEFAULT_SAMPLE_ENV, "").strip()
    if wanted:
        for path in sample_files():
            if sample_label(path) == wanted:
                return path
    return DEFAULT_SAMPLE


#: Folders of ``sample_graphs/`` that hold no graphs of the paper's format.
NOT_GRAPHS = ("expert-splits", "calibration", "piper")


def sample_files() -> list[Path]:
    """Every graph file under ``sample_graphs/`` (split files of ``expert-splits/``, the measured runs and
    device profiles of ``calibration/`` and Piper's inputs of ``piper/``, read by the Parallel plan page, excluded)."""
    files = []
    for path in sorted(SAMPLES_DIR.rglob("*.json")):
        relative = path.relative_to(SAMPLES_DIR)
        if relative.parts[0] in NOT_GRAPHS:
            continue
        files.append(path)
    return files


def sample_group(path: Path) -> str:
    """``"layer · inference"``-style group of a sample file (granularity and phase)."""
    parts = path.relative_to(SAMPLES_DIR).parts
    granularity = "operator" if "operator" in parts else "layer"
    phase = "training" if "training" in path.stem else "inference"
    return f"{granularity} · {phase}"


def sample_label(path: Path) -> str:
    """Short label of a sample: ``throughput/layer/bert24_inference``."""
    return str(path.relative_to(SAMPLES_DIR).with_suffix(""))
