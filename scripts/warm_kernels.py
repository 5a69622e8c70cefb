"""Compile the DP kernels once, at setup, so that the first solve in the app and the CLI is quick.

The lattice kernel (:mod:`placement.exact.lattice_search`, driven by :mod:`placement.exact.kernel`) is compiled by numba with ``cache=True``: the
machine code goes to ``placement/exact/__pycache__/*.nbc`` beside the source (an editable install
writes there; numba falls back to ``NUMBA_CACHE_DIR`` or a per-user folder where it cannot). Each
distinct argument signature is its own entry, so this script runs one small solve of every kind
the app and the CLI start with: the compiled ideal enumeration, the plain DP (one kind and several kinds, with and without the
tie-break, throughput and the live table of lowered counts; a lattice large enough for threads and pair mode), the memory-aware DP (1F1B and GPipe,
recomputation none / always / per stage). ``scripts/setup.sh`` runs it; run it again after
changing a kernel module. numba recompiles a function when its own file changes, not when a module it
calls changes (``row_search.py``, ``stage_eval.py``, ``borrow.py``, ``cells.py``, ``stage.py``, ``exactsum.py``,
``pairs.py``): so this script first compares a digest of every module of the numba-compiled packages
(:data:`KERNEL_PACKAGES`) with the one it stamped after its last run (``__pycache__/kernel_sources.sha256``)
and, when they differ (an edit, a ``git pull``), deletes their cached machine code (``__pycache__/*.nbi``,
``*.nbc``) before compiling; a stale kernel can never be loaded after setup.

Usage: ``PYTHONPATH=. .venv/bin/python scripts/warm_kernels.py`` (prints what it ran and how long).
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import replace
from pathlib import Path

import placement
from placement.exact.dp import solve_dp_table
from placement.model import AcceleratorKind

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_graphs"
#: Packages with numba-compiled, disk-cached functions (``cache=True``).
KERNEL_PACKAGES = (ROOT / "placement" / "exact", ROOT / "placement" / "multidim")
STAMP_NAME = "kernel_sources.sha256"


def sources_digest() -> str:
    """SHA-256 over the name and bytes of every module of :data:`KERNEL_PACKAGES`."""
    digest = hashlib.sha256()
    for package in KERNEL_PACKAGES:
        for path in sorted(package.glob("*.py")):
            digest.update(f"{package.name}/{path.name}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def clear_stale_caches(digest: str) -> int:
    """Delete the cached machine code of every kernel package whose stamp differs from ``digest``; files deleted."""
    deleted = 0
    for package in KERNEL_PACKAGES:
        cache = package / "__pycache__"
        stamp = cache / STAMP_NAME
        if stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == digest:
            continue
        for path in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
            path.unlink(missing_ok=True)
            deleted += 1
    return deleted


def write_stamps(digest: str) -> None:
    """Stamp every kernel package's cache with ``digest`` (after the kernels compiled from these sources)."""
    for package in KERNEL_PACKAGES:
        cache = package / "__pycache__"
        cache.mkdir(exist_ok=True)
        (cache / STAMP_NAME).write_text(digest + "\n", encoding="utf-8")


def _two_kinds(problem: placement.Problem) -> placement.Problem:
    kind = problem.devices.accelerators[0]
    slow = AcceleratorKind("slow", 2, kind.memory, speed=0.5, price_per_hour=1.0)
    return replace(problem, devices=problem.devices.with_changes(accelerators=(replace(kind, count=2), slow)))


def _walk(problem: placement.Problem) -> None:
    """The compiled enumeration of :mod:`placement.exact.ideal_walk` (small lattices use plain Python)."""
    from placement.exact import ideal_enum, ideals

    groups = ideals.contract(problem.graph)
    ideal_enum.compiled(groups.count, groups.order_edges, ideals.DEFAULT_MAX_IDEALS, 1 << 30, 1)


def main() -> None:
    started = time.perf_counter()
    digest = sources_digest()
    deleted = clear_stale_caches(digest)
    if deleted:
        print(f"{'kernel sources changed: cached files deleted':45s} {deleted:7d}")
    inference = placement.load_problem(SAMPLES / "throughput" / "layer" / "bert24_inference.json")
    training = placement.load_problem(SAMPLES / "ours" / "tiny_training.json")
    wide = placement.load_problem(SAMPLES / "ours" / "inception_wide_inference.json")
    inception = placement.load_problem(SAMPLES / "ours" / "inception_v3_inference.json")
    runs = [
        ("dp, default graph", lambda: placement.solve(inference, "dp")),
        ("dp, no tie-break", lambda: placement.solve(inference, "dp", tie_break=False)),
        ("dp, two kinds", lambda: placement.solve(_two_kinds(inference), "dp")),
        ("dp table (live, lowered counts)", lambda: solve_dp_table(inference, bound=math.inf)),
        ("dp, training graph", lambda: placement.solve(training, "dp")),
        ("ideal walk (lattices past 20,000 ideals)", lambda: _walk(inference)),
        # 40,339 ideals: the lattice's levels shared out among threads, and pair mode (few target rows)
        ("dp, threads and pair mode (inception_wide)", lambda: placement.solve(wide, "dp")),
        # reach (placement/exact/reach.py): inference lattices of 10,000 ideals or more
        ("dp with reach and threads (inception_v3)", lambda: placement.solve(inception, "dp")),
    ]
    for schedule in ("1f1b", "gpipe"):
        for recompute in ("none", "always", "per-stage"):
            runs.append(
                (
                    f"memory-aware {schedule}, recompute {recompute}",
                    lambda s=schedule, r=recompute: placement.solve(
                        training, "memory-aware", schedule=s, microbatches=4, recompute=r
                    ),
                )
            )
    runs.append(
        ("memory-aware, two kinds", lambda: placement.solve(_two_kinds(training), "memory-aware", microbatches=4))
    )
    for name, run in runs:
        t = time.perf_counter()
        run()
        print(f"{name:45s} {time.perf_counter() - t:7.2f} s")
    write_stamps(digest)
    print(f"{'all kernels compiled and cached':45s} {time.perf_counter() - started:7.2f} s")


if __name__ == "__main__":
    main()
