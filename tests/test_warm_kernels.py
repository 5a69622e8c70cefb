"""scripts/warm_kernels.py: numba's cached kernels are deleted when any kernel module changed since the last warm-up."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "warm_kernels.py"


@pytest.fixture(scope="module")
def warm_kernels():
    spec = importlib.util.spec_from_file_location("warm_kernels_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def packages(warm_kernels, tmp_path, monkeypatch):
    made = []
    for name in ("exact", "multidim"):
        package = tmp_path / name
        (package / "__pycache__").mkdir(parents=True)
        (package / "kernel.py").write_text("x = 1\n")
        (package / "__pycache__" / "kernel.f-1.py311.nbi").write_text("index")
        (package / "__pycache__" / "kernel.f-1.py311.1.nbc").write_text("code")
        made.append(package)
    monkeypatch.setattr(warm_kernels, "KERNEL_PACKAGES", tuple(made))
    return made


def _cached(packages):
    return sorted(p.name for package in packages for p in (package / "__pycache__").glob("*.nb[ic]"))


def test_unstamped_caches_are_deleted_then_kept_while_the_sources_stay(warm_kernels, packages):
    digest = warm_kernels.sources_digest()
    assert warm_kernels.clear_stale_caches(digest) == 4  # never stamped: stale
    (packages[0] / "__pycache__" / "kernel.f-1.py311.nbi").write_text("index")  # compiled again
    warm_kernels.write_stamps(digest)
    assert warm_kernels.clear_stale_caches(warm_kernels.sources_digest()) == 0
    assert _cached(packages) == ["kernel.f-1.py311.nbi"]


def test_an_edit_to_any_module_clears_every_cache(warm_kernels, packages):
    warm_kernels.write_stamps(warm_kernels.sources_digest())
    (packages[1] / "helper.py").write_text("y = 2\n")  # a new helper module of the second package
    digest = warm_kernels.sources_digest()
    assert warm_kernels.clear_stale_caches(digest) == 4 and _cached(packages) == []
    (packages[0] / "kernel.py").write_text("x = 2\n")
    assert warm_kernels.sources_digest() != digest


def test_the_digest_covers_the_real_kernel_modules(warm_kernels):
    names = {p.name for package in warm_kernels.KERNEL_PACKAGES for p in package.glob("*.py")}
    assert {"lattice_search.py", "row_search.py", "stage_eval.py", "borrow.py", "kernel.py"} <= names
