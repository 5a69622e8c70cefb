"""placement/budget.py in the app (issue 27.2): the Compare page names each method estimated past its cap
(a caption and the table's error row) and keeps working; the other methods still run."""

from __future__ import annotations

from placement import budget
from ui.navigation import page_file
from ui.state import method_name

from .apptest_helpers import start


def test_compare_page_shows_the_methods_past_their_caps_and_keeps_working(monkeypatch):
    # AppTest runs the page in this process: the lowered cap is the one its estimate reads
    monkeypatch.setattr(budget, "DEFAULT_MAX_DP_WORK", 100)
    at = start(page_file("Compare"))
    chosen = ["dp", "pipedream", "one-accelerator"]
    at.multiselect(key="cmp_methods").set_value(chosen).run()
    at.number_input(key="cmp_time_limit").set_value(5.0).run()
    at.button(key="cmp_run").click().run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    status = dict(zip(table["method"], table["status"]))
    assert status[method_name("dp")] == "error" and status[method_name("pipedream")] == "error", status
    assert status[method_name("one-accelerator")] != "error", status
    captions = [c.value for c in at.caption if "was not solved" in c.value]
    assert len(captions) == 2 and all("DP kernel steps" in c and "\n" not in c for c in captions), captions
    assert not at.error
    at.run()  # the page keeps working
    assert not at.exception and not at.error
