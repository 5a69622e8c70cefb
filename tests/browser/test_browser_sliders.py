"""Real-browser test of the Devices page's count sliders (issue 15: "sliders reset to 0").

Moving the accelerator count one step at a time from the file's 6 up to 16 must show every
value (10, 12 and 16 checked against the engine's time per sample); before the fix the slider's
maximum grew with the count (16 -> 18 when it passed 8) and the widget came back as a new one
at 0 (CPU only). The CPU-cores slider is moved the same way. The slider's maximum must not
change while it is dragged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from placement import Problem, load_problem

from .helpers import engine_time, metric, slider_thumb, step_slider, wait_for_text, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SAMPLE = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"


def test_count_sliders_keep_their_value_past_8(page, app_url, artifacts_dir):
    problem = load_problem(DEFAULT_SAMPLE)
    assert problem.devices.accelerator_count == 6 and problem.devices.cpus == 1
    page.goto(f"{app_url}/Devices")
    page.get_by_role("heading", name="Devices").first.wait_for()
    wait_idle(page)
    wait_for_text(metric(page, "Time per sample"), engine_time(problem))
    label = "Number of accelerators"
    maximum = slider_thumb(page, label).get_attribute("max")
    for target in (10, 12, 16):
        step_slider(page, label, target)
        devices = problem.devices.with_kind("accelerator", count=target)
        wait_for_text(metric(page, "Time per sample"), engine_time(Problem(problem.graph, devices)))
        assert slider_thumb(page, label).input_value() == str(target)
        assert slider_thumb(page, label).get_attribute("max") == maximum, "the maximum moved while dragging"
        page.screenshot(path=artifacts_dir / f"sliders_accelerators_{target}.png", full_page=True)

    cpu_label = "CPU cores"
    cpu_maximum = slider_thumb(page, cpu_label).get_attribute("max")
    for target in (10, 12):
        step_slider(page, cpu_label, target)
        devices = problem.devices.with_kind("accelerator", count=16).with_changes(cpus=target)
        wait_for_text(metric(page, "Time per sample"), engine_time(Problem(problem.graph, devices)))
        assert slider_thumb(page, cpu_label).input_value() == str(target)
        assert slider_thumb(page, cpu_label).get_attribute("max") == cpu_maximum
    assert slider_thumb(page, label).input_value() == "16"
    assert not page.locator('[data-testid="stException"]').count()
    page.screenshot(path=artifacts_dir / "sliders_cpus.png", full_page=True)
