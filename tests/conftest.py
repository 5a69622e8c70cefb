"""Shared fixtures."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_graphs"

# The app tests (AppTest and the browser's server, which inherits this environment) open the paper's BERT-24
# as a fresh session's graph, the numbers they pin; the tests of the shipped default (a transformer on
# catalogue GPUs, tests/test_default_scenario.py) remove this variable.
os.environ.setdefault("PLACEMENT_DEFAULT_SAMPLE", "throughput/layer/bert24_inference")


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


#: What Streamlit logs (``streamlit.dataframe_util``, INFO, with a traceback) when a table's frame is no Arrow
#: table, typically a column of numbers and text: it then rewrites the column as text itself.
ARROW_REWRITE = "Serialization of dataframe to Arrow table was unsuccessful"


@pytest.fixture(autouse=True)
def _tables_are_arrow_tables():
    """Every table a page shows in this process (AppTest) converts to Arrow as it is: one type per column."""
    import logging

    rewritten: list[str] = []

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if ARROW_REWRITE in record.getMessage():
                rewritten.append(str(record.exc_info[1]) if record.exc_info else record.getMessage())

    logger = logging.getLogger("streamlit.dataframe_util")
    handler = Seen(logging.INFO)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    assert not rewritten, f"a table's column mixes types (Streamlit rewrote it): {rewritten[0]}"
