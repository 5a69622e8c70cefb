"""The meeting of issue 39 in a real browser: Llama 3 70B on 1,024 H100 (layout, step time, tokens/s, memory fits,
cost per run, launch command), then "8 more nodes", then "half the network bandwidth"; the same numbers on every
page that shows the transformer scenario and in the CLI (``plan --json``, in process).
"""

from __future__ import annotations

import json
import re

import pytest

from placement.perf.meeting import TransformerScenario, figures, meeting_answer
from ui.navigation import PAGES as NAV

from ..cli_helper import cli
from .helpers import rerun_after, set_number, wait_idle

pytestmark = pytest.mark.browser

PRICE = 2.5
BASE = TransformerScenario(price_per_hour=PRICE)
PAGES = ("Plan a purchase", "Tradeoffs", "Uncertainty", "Timeline", "Plan view")


def go(page, title: str, timeout: float = 120.0) -> None:
    """Open the page titled ``title`` from the sidebar (its URL path from ui.navigation.PAGES)."""
    path = next(url for _, name, _, url, _ in NAV if name == title)
    page.locator(f'[data-testid="stSidebarNav"] a[href$="/{path}"]').click()
    page.wait_for_url(re.compile(rf"/{path}(\?.*)?$"))
    page.get_by_role("heading", name=title).first.wait_for()
    wait_idle(page, settle=0.5, timeout=timeout)


def cli_plan(scenario: TransformerScenario) -> dict:
    """``placement plan --json`` for the scenario (the CLI's numbers)."""
    args = ["plan", "--model", scenario.model, "--gpu", scenario.gpu, "--gpus", str(scenario.gpus)]
    args += ["--global-batch", str(scenario.global_batch), "--price", str(PRICE), "--tokens", f"{scenario.tokens:g}"]
    if scenario.network_factor != 1.0:
        args += ["--nic-gbps", f"{scenario.cluster.inter_bytes_per_s / 1e9:.17g}"]
    run = cli(*args, "--json")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def figures_table(page) -> str:
    """The text of the scenario's figures table (the one with 'time per step')."""
    table = page.locator("table", has_text="time per step").first
    table.wait_for(timeout=60_000)
    return table.inner_text()


def assert_figures(page, scenario: TransformerScenario) -> dict[str, str]:
    answer = meeting_answer(scenario)
    out = cli_plan(scenario)
    assert out["plan"]["prediction"]["iteration_seconds"] == answer.step_seconds
    assert out["run"]["cost"] == answer.cost_per_run
    rows = figures(answer)
    shown = figures_table(page)
    for label in ("GPUs", "layout", "time per step", "tokens/s", "memory per GPU", "cost per hour", "cost per run"):
        assert rows[label] in shown, (label, rows[label], shown)
    assert "run of 15T tokens" in shown
    return rows


def test_the_meeting_on_real_gpus(page, app_url, artifacts_dir):
    page.set_viewport_size({"width": 1400, "height": 1800})
    page.goto(f"{app_url}/Meeting_summary")
    page.get_by_role("heading", name="Meeting summary").first.wait_for()
    wait_idle(page, timeout=120)
    page.get_by_text(re.compile(r"^Edit the transformer scenario")).first.click()
    set_number(page, "USD per GPU-hour (empty: the catalogue's)", str(PRICE), timeout=120)
    rows = assert_figures(page, BASE)
    command = meeting_answer(BASE).launch_command
    codes = page.locator('[data-testid="stCode"]').all_inner_texts()
    assert any(" ".join(command.split()) in " ".join(c.split()) for c in codes), codes  # uncut, lines joined
    assert command.startswith("torchrun ")  # with its launcher
    assert "fits" in rows["memory per GPU"]
    page.screenshot(path=artifacts_dir / "meeting_transformer.png", full_page=True)

    for name in PAGES:
        go(page, name)
        body = page.locator('[data-testid="stMain"]').inner_text()
        assert BASE.describe() in body, name
        assert "perf-v1" in body, name
    go(page, "Uncertainty")
    step = rows["time per step"].split(" s")[0]
    assert f"time per step (s)\t{step} (no measured range)" in page.locator("table").first.inner_text()
    assert "extrapolated" in page.locator('[data-testid="stMain"]').inner_text()  # H100: no band applies
    go(page, "Plan view")
    assert rows["layout"] in page.locator('[data-testid="stMain"]').inner_text()
    go(page, "Timeline")
    assert page.get_by_role("button", name=re.compile("transformer schedule as a Perfetto")).count() == 1

    go(page, "Meeting summary")
    with rerun_after(page, timeout=120):
        page.get_by_role("button", name="8 more nodes").click()
    wait_idle(page, timeout=120)
    more = BASE.more_nodes(8)
    assert assert_figures(page, more)["GPUs"] == "1,088 x H100"
    with rerun_after(page, timeout=120):
        page.get_by_role("button", name="Half the network bandwidth").click()
    wait_idle(page, timeout=120)
    half = more.with_changes(network_factor=0.5)
    assert_figures(page, half)
    page.screenshot(path=artifacts_dir / "meeting_transformer_half_network.png", full_page=True)
    go(page, "Plan view")
    body = page.locator('[data-testid="stMain"]').inner_text()
    assert half.describe() in body and meeting_answer(half).layout_text in body
