"""No traceback reaches the app (issue 16.3): a failing engine call on every page gives one line."""

from __future__ import annotations

import pytest
import streamlit as st

import placement
from tests.apptest_helpers import start
from ui import state
from ui.navigation import page_file

SECRET = "/srv/secret/checkout/placement/engine.py"


def _raise(kind):
    def failing(*args, **kwargs):
        if kind == "placement":
            raise placement.InvalidGraphError(f"node 7: field 'size' broke a rule (read from {SECRET})")
        raise RuntimeError(f"engine exploded in {SECRET} line 12")

    return failing


# (page, module attribute to break): an engine call each page makes on its first run.
PAGES = [
    ("app.py", "placement.viz.format_bytes"),
    (page_file("Graph"), "placement.viz.graph_stats"),
    (page_file("Devices"), "placement.viz.load_figure"),
    (page_file("Placement"), "placement.viz.memory_figure"),
    (page_file("Timeline"), "placement.viz.schedule_figure"),
    (page_file("Tradeoffs"), "placement.viz.sweep_figure"),
    (page_file("Compare"), "placement.explore.compare.run_method"),
]
#: Pages whose test runs over 5 s (the Compare page solves with every method around the failing one).
SLOW_PAGES = {page_file("Compare")}


def _break(monkeypatch, target: str, kind: str) -> None:
    module_name, attribute = target.rsplit(".", 1)
    module = __import__(module_name, fromlist=[attribute])
    monkeypatch.setattr(module, attribute, _raise(kind))


@pytest.fixture(autouse=True)
def _fresh_caches():
    state.clear_caches()
    st.cache_data.clear()
    yield
    state.clear_caches()
    st.cache_data.clear()


@pytest.mark.parametrize("kind", [pytest.param("placement", marks=pytest.mark.slow), "unexpected"])
@pytest.mark.parametrize(
    "page, target", [pytest.param(p, t, id=p, marks=[pytest.mark.slow] if p in SLOW_PAGES else []) for p, t in PAGES]
)
def test_failing_engine_call_shows_one_line(monkeypatch, page, target, kind):
    at = start()
    loaded = at.session_state["_ui_graph_name"]
    _break(monkeypatch, target, kind)
    if page != "app.py":
        at.switch_page(page)
    at.run()
    if page == page_file("Compare"):
        at.button(key="cmp_run").click().run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1, errors
    line = errors[0]
    assert "\n" not in line and "Traceback" not in line
    assert "/srv/secret" not in line and "engine.py" in line  # the file name stays, its directories go
    if kind == "placement":
        assert line.startswith("node 7: field 'size' broke a rule")
    else:
        assert line.startswith("Unexpected error in the engine: RuntimeError: engine exploded")
    assert [x.label for x in at.expander if x.label == "Details"]
    detail = at.get("code")[-1].value
    assert "/srv/secret" not in detail
    # The session keeps its state: the same graph, and the page works again once the engine does.
    assert at.session_state["_ui_graph_name"] == loaded
    monkeypatch.undo()
    at.run()
    if page == page_file("Compare"):
        at.button(key="cmp_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]


def test_guard_run_catches_and_cleans_outside_a_page():
    from ui import guard

    shown = []
    original = guard.show_error
    guard.show_error = shown.append
    try:
        guard.run(_raise("unexpected"))
        guard.run(lambda: None)
    finally:
        guard.show_error = original
    assert len(shown) == 1 and isinstance(shown[0], RuntimeError)
    assert (
        guard.summary(shown[0]) == "Unexpected error in the engine: RuntimeError: engine exploded in engine.py line 12"
    )
    assert guard.summary(placement.InvalidGraphError(f"bad {SECRET}")) == "bad engine.py"
