"""The sample graphs shipped in ``sample_graphs/``: their files, groups and labels (no session state)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = ROOT / "sample_graphs"
DEFAULT_SAMPLE = SAMPLES_DIR / "throughput" / "layer" / "bert24_inference.json"


def sample_files() -> list[Path]:
    """Every graph file under ``sample_graphs/`` (split files such as ``expert-splits/`` excluded)."""
    files = []
    for path in sorted(SAMPLES_DIR.rglob("*.json")):
        relative = path.relative_to(SAMPLES_DIR)
        if relative.parts[0] == "expert-splits":
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
