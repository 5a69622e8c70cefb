"""AppTest checks of widget state (issue 15 bugs, issue 11 item 5): sliders past 8, the inventory
kept across graph loads, widget values kept across page switches.

Every time per sample asserted is recomputed with the engine (solve_dp + evaluate).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from placement import AcceleratorKind, Problem, evaluate, load_problem, solve_dp
from ui.navigation import page_file

from .apptest_helpers import goto, metrics, start

pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_graphs"
DEFAULT = SAMPLES / "throughput" / "layer" / "bert24_inference.json"
OTHER = "throughput/layer/gnmt_inference"


def dp_time(problem: Problem) -> float:
    result = solve_dp(problem)
    assert result.status == "optimal"
    return evaluate(problem, result.placement).max_load


def shown_time(at) -> float:
    """The shown time per sample in ms ("14.3699 ms" -> 14.3699); the unit must be ms."""
    value, unit = metrics(at)["Time per sample"].replace(",", "").split()
    assert unit == "ms"
    return float(value)


def test_count_sliders_keep_their_value_past_8_and_their_maximum():
    at = start(page_file("Devices"))
    base = load_problem(DEFAULT)
    maximum = at.slider(key="dev_count").max
    cpu_maximum = at.slider(key="dev_cpus").max
    for count in (7, 8, 9, 10, 12, 16):
        at.slider(key="dev_count").set_value(count).run()
        assert not at.exception
        assert at.slider(key="dev_count").value == count
        assert at.slider(key="dev_count").max == maximum  # a moving maximum makes a new widget (back to 0)
        devices = base.devices.with_kind("accelerator", count=count)
        assert shown_time(at) == pytest.approx(dp_time(Problem(base.graph, devices)), rel=1e-5)
    for cpus in (8, 9, 10):
        at.slider(key="dev_cpus").set_value(cpus).run()
        assert at.slider(key="dev_cpus").value == cpus and at.slider(key="dev_cpus").max == cpu_maximum
    devices = base.devices.with_kind("accelerator", count=16).with_changes(cpus=10)
    assert shown_time(at) == pytest.approx(dp_time(Problem(base.graph, devices)), rel=1e-5)
    assert at.slider(key="dev_count").value == 16


def test_stable_maximum():
    from ui.state import stable_maximum

    assert stable_maximum(6) == 16 and stable_maximum(8) == 16 and stable_maximum(9) == 32
    assert stable_maximum(0) == 16 and stable_maximum(40) == 128
    for value in range(0, 200):
        assert stable_maximum(value) >= 2 * value  # the slider can always double the count


@pytest.mark.slow  # over 5 s
def test_a_hand_made_inventory_survives_loading_another_graph_until_file_settings_are_picked():
    at = start(page_file("Devices"))
    key = f"dev_inventory_{at.session_state['_dev_inventory_source'][0]}"
    at.session_state[key] = {
        "edited_rows": {0: {"count": 2, "price/hour": 3.0}},
        "added_rows": [
            {"name": "fast", "count": 1, "memory (GiB)": 8.0, "speed": 3.0, "bandwidth": 1.0, "price/hour": 4.5}
        ],
        "deleted_rows": [],
    }
    at.run()
    assert not at.exception and not at.error
    base = load_problem(DEFAULT)
    mine = base.devices.with_changes(
        accelerators=(
            AcceleratorKind("accelerator", 2, base.devices.accelerators[0].memory, price_per_hour=3.0),
            AcceleratorKind("fast", 1, 8 * 2**30, speed=3.0, price_per_hour=4.5),
        )
    )
    assert shown_time(at) == pytest.approx(dp_time(Problem(base.graph, mine)), rel=1e-5)
    assert any("your own" in c.value for c in at.caption)

    # Load another sample: the inventory stays and the page says so.
    goto(at, page_file("Graph"))
    at.selectbox(key="graph_sample").set_value(OTHER).run()
    assert not at.exception
    other = load_problem(SAMPLES / f"{OTHER}.json")
    assert any("your own" in c.value and OTHER in c.value for c in at.caption), [c.value for c in at.caption]
    goto(at, page_file("Devices"))
    assert shown_time(at) == pytest.approx(dp_time(Problem(other.graph, mine)), rel=1e-5)
    assert at.slider(key="dev_count").value == 2

    # "File's own settings" brings the file's devices, and later loads apply each file's own.
    at.button(key="dev_preset_0").click().run()
    assert shown_time(at) == pytest.approx(dp_time(other), rel=1e-5)
    assert any("the file's own" in c.value for c in at.caption)
    goto(at, page_file("Graph"))
    at.selectbox(key="graph_sample").set_value("throughput/layer/bert24_inference").run()
    goto(at, page_file("Devices"))
    assert shown_time(at) == pytest.approx(dp_time(base), rel=1e-5)


@pytest.mark.slow  # over 5 s
def test_graph_page_button_switches_to_the_file_settings():
    at = start(page_file("Devices"))
    at.slider(key="dev_count").set_value(3).run()
    goto(at, page_file("Graph"))
    at.selectbox(key="graph_sample").set_value(OTHER).run()
    other = load_problem(SAMPLES / f"{OTHER}.json")
    at.button(key="graph_file_devices").click().run()
    assert not at.exception
    assert any("the file's own" in c.value for c in at.caption)
    goto(at, page_file("Placement"))
    assert shown_time(at) == pytest.approx(dp_time(other), rel=1e-5)


def test_page_widgets_keep_their_values_across_page_switches():
    at = start(page_file("Compare"))
    at.number_input(key="cmp_time_limit").set_value(7.0).run()
    goto(at, page_file("Devices"))
    goto(at, page_file("Compare"))
    assert at.number_input(key="cmp_time_limit").value == 7.0


def test_an_imported_model_brings_the_devices_its_form_chose():
    at = start(page_file("Devices"))
    at.slider(key="dev_count").set_value(3).run()  # the user's own devices
    goto(at, page_file("Graph"))
    at.number_input(key="mi_accelerators").set_value(2)
    at.number_input(key="mi_layers").set_value(2)
    at.radio(key="mi_granularity").set_value("layer")
    at.button(key="mi_build").click().run()
    assert not at.exception
    assert any("the file's own" in c.value for c in at.caption)
    goto(at, page_file("Devices"))
    assert at.slider(key="dev_count").value == 2


def test_timeline_settings_survive_a_page_switch_without_private_copies():
    """The Timeline page keeps its widgets like every other page (persist_state), no ``_tl_saved_`` copies."""
    at = start(page_file("Timeline"))
    at.selectbox(key="timeline_schedule").set_value("gpipe").run()
    at.slider(key="timeline_microbatches").set_value(5).run()
    at.toggle(key="timeline_compare_gantts").set_value(True).run()
    assert not at.exception
    goto(at, page_file("Devices"))
    goto(at, page_file("Timeline"))
    assert at.selectbox(key="timeline_schedule").value == "gpipe"
    assert at.slider(key="timeline_microbatches").value == 5
    assert at.toggle(key="timeline_compare_gantts").value is True
    assert "_tl_saved_timeline_schedule" not in at.session_state
