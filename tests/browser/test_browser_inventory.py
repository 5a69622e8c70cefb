"""Real-browser test of the accelerator inventory editor on the Devices page (issue 5).

The inventory is an ``st.data_editor``, drawn by Streamlit as a glide-data-grid canvas. The
test edits it like a user: it clicks a cell of the canvas (its position computed from the
canvas box and the grid's row height), moves with the arrow keys, types a value and presses
Enter. After each edit the "Time per sample" metric must show exactly what
:func:`placement.solve_dp` gives for the edited devices, built here the way the page turns
table rows into :class:`placement.AcceleratorKind` (memory in GiB), and the summary line must
describe them (so an edit that lands in the wrong column fails even where the optimum stays).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from placement import AcceleratorKind, Problem, load_problem
from ui.state import describe_devices

from .helpers import engine_time, metric, wait_for_text, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_LABEL = "throughput/layer/bert24_inference"  # the app's default graph
DEFAULT_SAMPLE = ROOT / "sample_graphs" / f"{SAMPLE_LABEL}.json"
ROW_HEIGHT = 35  # glide-data-grid rows and header in Streamlit
COLUMNS = ["name", "count", "memory (GiB)", "speed", "bandwidth", "price/hour"]


def grid_canvas(page):
    return page.locator('[data-testid="stDataFrame"]').first.locator('canvas[data-testid="data-grid-canvas"]')


def select_cell(page, row: int, column: str) -> None:
    """Select a cell: click the name cell of ``row`` on the canvas, then move right with the arrow keys.

    The grid keeps an accessibility table inside the canvas whose cells carry
    ``aria-selected``: it tells whether the selection landed. glide-data-grid ignores a click
    on the cell that the previous click selected when the selection has moved away since
    (e.g. Enter moved it down), so a retry first clicks another row.
    """
    canvas = grid_canvas(page)
    target = canvas.locator(f'td[data-testid="glide-cell-{COLUMNS.index(column) + 1}-{row}"]')
    target.wait_for(state="attached")
    canvas.evaluate("el => el.scrollIntoView({block: 'center'})")  # whole rows in view, not just its top edge
    box = canvas.bounding_box()

    def click_row(r: int) -> None:
        # The name column starts after the narrow row-marker column; 10 % of the width is inside it.
        # The grid's scroller lies over the canvas and takes the events: click by page coordinates.
        page.mouse.click(box["x"] + box["width"] * 0.10, box["y"] + ROW_HEIGHT * (r + 1) + ROW_HEIGHT / 2)

    for attempt in range(3):
        if attempt:
            click_row(0 if row else 1)
        click_row(row)
        for _ in range(COLUMNS.index(column)):
            page.keyboard.press("ArrowRight")
        try:
            page.wait_for_function(
                "cell => cell.getAttribute('aria-selected') === 'true'", arg=target.element_handle(), timeout=2000
            )
            return
        except Exception:  # noqa: BLE001 - not selected: retry
            continue
    raise AssertionError(f"could not select the {column!r} cell of row {row}")


def edit_cell(page, row: int, column: str, text: str) -> None:
    """Type ``text`` into a cell like a user: select it, Enter opens its editor, type, Enter commits."""
    wait_idle(page)
    select_cell(page, row, column)
    page.keyboard.press("Enter")  # opens the cell's editor (an input in the overlay portal)
    page.locator("#portal .gdg-input").first.wait_for()
    page.keyboard.press("Control+A")
    page.keyboard.type(text, delay=20)
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Accelerator inventory").click()  # leave the grid
    wait_idle(page)


def test_editing_the_inventory_updates_the_time_per_sample(page, app_url, artifacts_dir):
    problem = load_problem(DEFAULT_SAMPLE)
    first = problem.devices.accelerators[0]
    assert len(problem.devices.accelerators) == 1 and first.count > 3
    shown = []

    def expect(kinds: tuple) -> None:
        """The page shows these kinds in its summary line and the engine's time per sample for them."""
        devices = problem.devices.with_changes(accelerators=kinds)
        wait_for_text(
            page.locator('[data-testid="stMarkdown"]', has_text=" on ").first,
            f"{SAMPLE_LABEL} on {describe_devices(devices)}",
        )
        expected = engine_time(Problem(problem.graph, devices))
        wait_for_text(metric(page, "Time per sample"), expected)
        shown.append(expected)

    page.goto(f"{app_url}/Devices")
    page.get_by_role("heading", name="Devices").first.wait_for()
    wait_idle(page)
    expect((first,))
    page.screenshot(path=artifacts_dir / "inventory_01_before.png", full_page=True)

    # Change the count of the first kind.
    edit_cell(page, 0, "count", "3")
    kinds = (replace(first, count=3),)
    expect(kinds)
    page.screenshot(path=artifacts_dir / "inventory_02_count.png", full_page=True)

    # Add a second kind: 2 devices, twice as fast, 8 GiB each (one edit, one re-solve at a time).
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.evaluate("el => el.scrollIntoView({block: 'center'})")  # the toolbar above the grid in view, not under it
    grid.hover()
    add = page.get_by_role("button", name="Add row")
    try:
        add.click(timeout=5000)
    except PlaywrightTimeoutError:  # the grid's scroller lay over the toolbar: click the button itself
        add.dispatch_event("click")
    wait_idle(page)
    # A new row counts once its required cells (name, count, speed, bandwidth) are filled: nothing is
    # assumed for the user; empty memory means unlimited and the page says so.
    edit_cell(page, 1, "name", "fast")
    edit_cell(page, 1, "count", "2")
    edit_cell(page, 1, "speed", "2")
    edit_cell(page, 1, "bandwidth", "1")
    kinds += (AcceleratorKind("fast", 2, speed=2.0),)
    expect(kinds)
    edit_cell(page, 1, "memory (GiB)", "8")
    kinds = (kinds[0], replace(kinds[1], memory=8 * 2**30))  # the table is in GiB, the engine in bytes
    expect(kinds)
    assert not page.locator('[data-testid="stAlertContentError"]').count()
    page.screenshot(path=artifacts_dir / "inventory_03_two_kinds.png", full_page=True)
    # Every edit but the memory one moved the number, so each wait above saw a change; the
    # memory edit (8 GiB is enough here) shows in the summary line.
    assert shown[0] != shown[1] != shown[2]
