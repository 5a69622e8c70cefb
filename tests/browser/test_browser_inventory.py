"""Real-browser test of the accelerator inventory editor on the Devices page (issue 5).

The inventory is an ``st.data_editor``, drawn by Streamlit as a glide-data-grid canvas. The
test edits it like a user: it clicks a cell of the canvas (its position computed from the
canvas box and the grid's row height), moves with the arrow keys, types a value and presses
Enter. After each edit the "Time per sample" metric must show exactly what
:func:`placement.solve_dp` gives for the edited devices, built here the way the page turns
table rows into :class:`placement.AcceleratorKind` (memory in GiB).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from placement import AcceleratorKind, Devices, Problem, evaluate, load_problem, solve_dp

from .helpers import metric, wait_for_text, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SAMPLE = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"  # the app's default
ROW_HEIGHT = 35  # glide-data-grid rows and header in Streamlit
COLUMNS = ["name", "count", "memory (GiB)", "speed", "bandwidth", "price/hour"]


def engine_time(problem: Problem) -> str:
    """The time per sample as the page formats it (6 significant digits), from solve_dp + evaluate."""
    result = solve_dp(problem)
    assert result.status == "optimal"
    return f"{evaluate(problem, result.placement).max_load:.6g}"


def grid_canvas(page):
    return page.locator('[data-testid="stDataFrame"]').first.locator('canvas[data-testid="data-grid-canvas"]')


def shown_cell(page, row: int, column: str) -> str:
    """The text of a cell from the grid's accessibility table (rendered inside the canvas)."""
    cell = grid_canvas(page).locator(f'[data-testid="glide-cell-{COLUMNS.index(column) + 1}-{row}"]')
    return cell.inner_text(timeout=5000).strip() if cell.count() else ""


def edit_cell(page, row: int, column: str, text: str) -> None:
    """Select the name cell of ``row`` with a click, move right to ``column``, type ``text``, press Enter."""
    wait_idle(page)
    canvas = grid_canvas(page)
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    # The name column starts after the narrow row-marker column; 10 % of the width is inside it.
    # The grid's scroller lies over the canvas (it takes the events): click by page coordinates.
    page.mouse.click(box["x"] + box["width"] * 0.10, box["y"] + ROW_HEIGHT * (row + 1) + ROW_HEIGHT / 2)
    page.screenshot(path="/tmp/explore/d1.png", clip={"x": box["x"], "y": box["y"]-40, "width": box["width"], "height": 200})
    for _ in range(COLUMNS.index(column)):
        page.keyboard.press("ArrowRight")
    page.keyboard.type(text, delay=20)
    page.screenshot(path="/tmp/explore/d2.png", clip={"x": box["x"], "y": box["y"]-40, "width": box["width"], "height": 200})
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Accelerator inventory").click()  # leave the grid
    wait_idle(page)


def test_editing_the_inventory_updates_the_time_per_sample(page, app_url, artifacts_dir):
    problem = load_problem(DEFAULT_SAMPLE)
    first = problem.devices.accelerators[0]
    assert first.count > 3

    page.goto(f"{app_url}/Devices")
    page.get_by_role("heading", name="Devices").first.wait_for()
    wait_idle(page)
    time_per_sample = metric(page, "Time per sample")
    wait_for_text(time_per_sample, engine_time(problem))
    page.screenshot(path=artifacts_dir / "inventory_01_before.png", full_page=True)

    # Change the count of the first kind.
    edit_cell(page, 0, "count", "3")
    kinds = (replace(first, count=3),)
    wait_for_text(time_per_sample, engine_time(Problem(problem.graph, problem.devices.with_changes(accelerators=kinds))))
    assert shown_cell(page, 0, "count") == "3"
    page.screenshot(path=artifacts_dir / "inventory_02_count.png", full_page=True)

    # Add a second, faster kind with 8 GiB per device.
    page.locator('[data-testid="stDataFrame"]').first.hover()
    page.get_by_role("button", name="Add row").click()
    wait_idle(page)
    page.screenshot(path=artifacts_dir / "inventory_03_added.png", full_page=True)
