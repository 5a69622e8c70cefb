"""Shared fixtures."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_graphs"


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    return SAMPLES


@pytest.fixture(scope="session")
def random_problem():
    """Factory ``random_problem(seed, training=False, ...) -> Problem``: the one generator, :mod:`tests.randgraphs`."""
    from .randgraphs import random_problem as generate

    return generate


@pytest.fixture
def clear_streamlit_caches():
    """Streamlit caches are process-global: clear them around each AppTest test."""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture(autouse=True)
def _restore_main_module():
    """Streamlit's script runner leaves an ``AppTest`` script as ``sys.modules["__main__"]``; put pytest's back.

    A ``spawn`` process pool started later in this process (the sweeps' executors) re-runs ``__main__``'s
    file in each child: after ``AppTest.from_function`` that is a temporary script whose run fails there.
    """
    import sys

    saved = sys.modules.get("__main__")
    yield
    if saved is not None:
        sys.modules["__main__"] = saved
