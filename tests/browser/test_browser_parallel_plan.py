"""Real-browser check of the Parallel plan page: BERT-32 on 512 devices, stage table and curve.

Opens the page, sets 512 devices, 8 GiB and 25 GiB/s, waits for the plan and the curve of 8..1024
devices, checks the time per sample against the engine and saves screenshots under test-artifacts/.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from placement.multidim.dp import solve_multidim
from placement.multidim.io import read_piper

from .helpers import go, metric, set_number, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
BERT = ROOT / "sample_graphs" / "piper" / "bert32a100.json"


def test_parallel_plan_bert_512(page, app_url, artifacts_dir):
    p = read_piper(BERT)
    p = replace(p, kinds=(replace(p.kinds[0], count=512, memory=8 * 2**30, bandwidth=25 * 2**30),))
    expected = solve_multidim(p)

    page.set_default_timeout(300_000)
    page.goto(app_url)
    page.get_by_role("heading", name="Device placement explorer").wait_for()
    wait_idle(page)
    go(page, "Parallel plan")
    page.get_by_text("a Piper workload", exact=True).click()  # the default source is the app's graph
    wait_idle(page)
    # each field's rerun is a solve: the test's 300 s budget
    set_number(page, "devices", "512", timeout=300)
    set_number(page, "memory per device (GiB)", "8", timeout=300)
    set_number(page, "bandwidth (GiB/s)", "25", timeout=300)
    value = metric(page, "time per sample")
    value.wait_for()
    assert value.inner_text().strip() == f"{expected.time_per_sample:.6g} ms"
    table = page.locator('[data-testid="stDataFrame"]').first
    table.wait_for()
    charts = page.locator('[data-testid="stPlotlyChart"]')
    charts.nth(1).wait_for()
    points = charts.nth(1).locator(".scatterlayer .trace").first.locator("path.point")
    points.nth(7).wait_for()
    assert points.count() == 8  # 8..1024 devices, all feasible
    page.screenshot(path=artifacts_dir / "parallel_plan_bert512.png", full_page=True)


def test_parallel_plan_of_the_loaded_graph(page, app_url, artifacts_dir):
    """Source "the graph loaded in the app" (the default sample, paper format): the plan of its generated options."""
    from placement.io import load_problem
    from placement.multidim.convert import options_from_graph
    from ui.samples import default_sample  # the paper's BERT-24 under the tests (tests/conftest.py)

    GiB = 2**30
    loaded = load_problem(default_sample())
    base = options_from_graph(loaded)
    kind = base.kinds[0]
    # the page shows memory and bandwidth in GiB rounded to 3 decimals, and plans with the shown values
    problem = options_from_graph(
        loaded,
        memory=round(kind.memory / GiB, 3) * GiB,
        bandwidth=round(kind.bandwidth / GiB, 3) * GiB,
        microbatches=base.microbatches,
    )
    expected = solve_multidim(problem)
    assert expected.status == "optimal"

    page.set_default_timeout(300_000)
    page.goto(app_url)
    page.get_by_role("heading", name="Device placement explorer").wait_for()
    wait_idle(page)
    go(page, "Parallel plan")
    page.get_by_text("the graph loaded in the app", exact=True).click()
    wait_idle(page)
    assert page.get_by_label("devices", exact=True).input_value() == str(kind.count)  # the inventory's count
    value = metric(page, "time per sample")
    value.wait_for()
    assert value.inner_text().strip() == f"{expected.time_per_sample:.6g} ms"
    page.get_by_text("Devices page (one device per stage, no data/tensor parallelism):").wait_for()
    page.locator('[data-testid="stDataFrame"]').first.wait_for()
    page.locator('[data-testid="stPlotlyChart"]').nth(1).wait_for()
    page.screenshot(path=artifacts_dir / "parallel_plan_loaded_graph.png", full_page=True)
