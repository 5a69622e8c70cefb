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
