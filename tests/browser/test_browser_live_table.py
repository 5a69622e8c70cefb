"""Real-browser test: a lowered accelerator count is answered from the last DP table (issue 12, item 3).

On the Devices page the accelerator count goes down from the file's 6 to 4, one slider step at
a time; the summary shows the caption "Answered from the last table" and the engine's time per
sample for 4 accelerators. The Placement page then shows the same answer with the caption and
its "Solve afresh" button, which brings the tie-broken solve (same time per sample, no caption).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from placement import Problem, load_problem

from .helpers import engine_time, go, metric, rerun_after, step_slider, wait_for_text, wait_idle, wait_workers_quiet

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SAMPLE = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"
CAPTION = "Answered from the last table"


def step_down_to(page, label: str, target: int, problem: Problem) -> None:
    """Lower the slider to ``target`` one step at a time: after each step's run, the engine's answer for the
    count the slider shows (a press while the previous run was still on its way had once left the count at 0
    in a full-suite run: 924.06 ms shown, the time on no accelerator)."""

    def answered(shown: int) -> None:
        fewer = Problem(problem.graph, problem.devices.with_kind("accelerator", count=shown))
        wait_for_text(metric(page, "Time per sample"), engine_time(fewer))

    step_slider(page, label, target, on_step=answered)


def test_lowered_count_is_answered_from_the_table(page, app_url, artifacts_dir):
    problem = load_problem(DEFAULT_SAMPLE)
    assert problem.devices.accelerator_count == 6
    page.goto(f"{app_url}/Devices")
    page.get_by_role("heading", name="Devices").first.wait_for()
    wait_idle(page)
    wait_for_text(metric(page, "Time per sample"), engine_time(problem))
    assert not page.get_by_text(CAPTION).count()
    # The table of that solve is built in a solve worker, niced 10, and an answer waits for it at most as long
    # as the fresh solve took (then it solves afresh, no caption): on a busy machine the build lost that race
    # once (CI, 2026-11-26). Lowering a count answers from the table only once it is built; wait for that.
    print(f"\nlive table: the app's workers were quiet after {wait_workers_quiet(app_url):.1f} s")

    step_down_to(page, "Number of accelerators", 4, problem)
    smaller = Problem(problem.graph, problem.devices.with_kind("accelerator", count=4))
    wait_for_text(metric(page, "Time per sample"), engine_time(smaller))
    caption = page.get_by_text(CAPTION).first
    caption.wait_for()
    assert "6 x accelerator, 1 CPU core" in caption.inner_text()
    page.screenshot(path=artifacts_dir / "live_table_devices.png", full_page=True)

    go(page, "Placement")
    wait_for_text(metric(page, "Time per sample"), engine_time(smaller))
    page.get_by_text(CAPTION).first.wait_for()
    page.screenshot(path=artifacts_dir / "live_table_placement.png", full_page=False)
    with rerun_after(page):  # wait_idle alone may return before the click's run has started
        page.get_by_role("button", name="Solve afresh (tie-break)").click()
    wait_for_text(metric(page, "Time per sample"), engine_time(smaller))
    page.get_by_text(CAPTION).first.wait_for(state="detached", timeout=30_000)  # the run's stale elements go
    assert not page.get_by_text(CAPTION).count()
    assert not page.locator('[data-testid="stException"]').count()
