"""AppTest checks of the Tradeoffs page.

Every number asserted is recomputed here with the engine (solve_dp on a copy of the
devices), never copied from the app.
"""

import base64
import itertools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from placement import AcceleratorKind, Devices, Problem, load_problem, solve_dp
from ui.navigation import page_file

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"
PAGE = page_file("Tradeoffs")


pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")


def open_page(run_mode: str = "sequential", devices: Devices | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    assert not at.exception, at.exception
    if devices is not None:
        at.session_state["_ui_devices"] = devices
    at.session_state["to_run_mode"] = run_mode
    at.switch_page(PAGE)
    at.run()
    assert not at.exception, at.exception
    return at


def _plain(values):
    """Figure JSON arrays: plain lists, or numpy's {"dtype", "bdata"} encoding."""
    if isinstance(values, dict) and "bdata" in values:
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"]).tolist()
    return values


def chart(at: AppTest, key: str) -> dict:
    for element in at.get("plotly_chart"):
        if element.proto.id and key in element.proto.id or getattr(element, "key", None) == key:
            return json.loads(element.proto.spec)
    raise AssertionError(f"no chart {key}")


def trace(spec: dict, name: str) -> dict:
    return next(t for t in spec["data"] if t.get("name") == name)


def test_sweeps_show_the_optimal_times_computed_in_a_process_pool():
    at = open_page(run_mode="process")
    base = load_problem(DEFAULT)
    curve = trace(chart(at, "to_chart_accelerators"), "optimal time per sample")
    xs, ys = _plain(curve["x"]), _plain(curve["y"])
    assert xs == [float(k) for k in range(1, 17)]
    for k, y in zip(xs, ys):
        expected = solve_dp(Problem(base.graph, base.devices.with_kind("accelerator", count=int(k))))
        assert y == pytest.approx(expected.objective, rel=1e-9)
    bandwidth = trace(chart(at, "to_chart_bandwidth"), "optimal time per sample")
    for x, y in zip(_plain(bandwidth["x"]), _plain(bandwidth["y"])):
        expected = solve_dp(Problem(base.graph, base.devices.with_changes(bandwidth=x)))
        assert y == pytest.approx(expected.objective, rel=1e-9)
    memory_spec = chart(at, "to_chart_memory")
    memory = trace(memory_spec, "optimal time per sample")
    unit = 2**20 if memory_spec["layout"]["xaxis"]["title"]["text"].endswith("(MiB)") else 2**30
    assert "accelerator accelerator" not in memory_spec["layout"]["title"]["text"]
    for x, y in zip(_plain(memory["x"]), _plain(memory["y"])):  # MiB or GiB on the axis
        expected = solve_dp(Problem(base.graph, base.devices.with_kind("accelerator", memory=x * unit)))
        assert y == pytest.approx(expected.objective, rel=1e-6)
    assert any("process pool" in c.value for c in at.caption)


def test_sensitivity_sentence_names_the_next_useful_accelerator():
    at = open_page()
    base = load_problem(DEFAULT)
    current = solve_dp(base).objective
    count = base.devices.accelerators[0].count
    # Independently: the first count above the current one with a strictly faster optimum.
    better = next(
        k
        for k in range(count + 1, 40)
        if solve_dp(Problem(base.graph, base.devices.with_kind("accelerator", count=k))).objective
        < current * (1 - 1e-9)
    )
    sentences = [i.value for i in at.info if i.value.startswith("With accelerators")]
    assert sentences and f"With {better} (" in sentences[0], sentences
    # The chart marks the current value and the change points.
    shapes = chart(at, "to_chart_accelerators")["layout"].get("shapes", [])
    assert {s["x0"] for s in shapes} >= {float(count), float(better)}


def test_clicking_a_frontier_point_selects_its_plan_for_the_placement_page():
    at = open_page()
    base = load_problem(DEFAULT)
    spec = chart(at, "to_chart_pareto")
    front = trace(spec, "Pareto frontier")
    xs, ys, ids = _plain(front["x"]), _plain(front["y"]), front["customdata"]
    assert xs == sorted(xs) and len(xs) >= 3
    pick = 2
    at.session_state["to_chart_pareto"] = {
        "selection": {
            "points": [
                {
                    "curve_number": 1,
                    "point_number": pick,
                    "point_index": pick,
                    "x": xs[pick],
                    "y": ys[pick],
                    "customdata": ids[pick],
                }
            ],
            "point_indices": [pick],
            "box": [],
            "lasso": [],
        }
    }
    at.run()
    assert not at.exception, at.exception
    problem, result, label = at.session_state["_ui_selected_plan"]
    assert label.startswith("Tradeoffs")
    # The selected plan is the real optimum of its own devices, with the point's time and device count.
    assert result.objective == pytest.approx(ys[pick])
    assert result.objective == pytest.approx(solve_dp(problem).objective)
    assert len(result.placement.stages) == xs[pick]
    assert problem.graph == base.graph
    assert any("Selected" in s.value for s in at.success)
    at.button(key="to_open_placement").click().run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Placement"]
    assert any("picked plan" in i.value for i in at.info)


def test_three_kinds_grid_pareto_matches_brute_force():
    base = load_problem(DEFAULT)
    memory = base.devices.accelerators[0].memory
    devices = Devices(
        (
            AcceleratorKind("fast", 2, memory, speed=2.0, price_per_hour=4.0),
            AcceleratorKind("mid", 2, memory, price_per_hour=2.0),
            AcceleratorKind("slow", 1, memory, speed=0.5, price_per_hour=0.5),
        ),
        cpus=1,
    )
    at = open_page(devices=devices)
    at.radio(key="to_pareto_axis").set_value("price").run()
    assert not at.exception, at.exception
    front = trace(chart(at, "to_chart_pareto"), "Pareto frontier")
    # Brute force over every combination of counts: (price of the used devices, optimal time).
    candidates = []
    for counts in itertools.product(range(3), range(3), range(2)):
        if not any(counts):
            continue
        kinds = tuple(replace(kind, count=n) for kind, n in zip(devices.accelerators, counts))
        result = solve_dp(Problem(base.graph, devices.with_changes(accelerators=kinds)))
        prices = {k.name: k.price_per_hour for k in kinds}
        price = sum(prices.get(s.device.kind, 0.0) for s in result.placement.stages)  # CPU cores cost 0 here
        candidates.append((price, result.objective))
    pareto = {(p, t) for p, t in candidates if not any(q <= p and u <= t and (q, u) != (p, t) for q, u in candidates)}
    # The page's pool also holds the memory sweep of "fast" (other configurations): so every point it shows
    # on the front is beaten by no grid configuration, and every grid Pareto point is matched or beaten.
    shown = list(zip(_plain(front["x"]), _plain(front["y"])))
    assert shown
    for price, time in shown:
        assert not any(
            q <= price + 1e-9 and u <= time * (1 + 1e-12) and (q < price - 1e-9 or u < time * (1 - 1e-9))
            for q, u in candidates
        ), (price, time)
    for price, time in pareto:
        assert any(q <= price + 1e-9 and u <= time * (1 + 1e-9) for q, u in shown), (price, time)
    assert any("Accelerator kind" in s.label for s in at.selectbox)


def _inception_page(monkeypatch) -> AppTest:
    """The Tradeoffs page on the Inception-like sample (40,339 ideals), failing on any exact solve."""
    from placement.explore import sweeps
    from ui import tradeoffs_runs

    from .apptest_helpers import goto

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    goto(at, page_file("Graph"))
    label = next(o for o in at.selectbox(key="graph_sample").options if "inception_wide" in o)
    at.selectbox(key="graph_sample").set_value(label).run()

    def no_exact_solve(*args, **kwargs):
        raise AssertionError("the page started an exact solve by itself")

    for module in (sweeps, tradeoffs_runs):
        monkeypatch.setattr(module, "solve_point", no_exact_solve)
    monkeypatch.setattr(sweeps, "solve", no_exact_solve)
    monkeypatch.setattr(tradeoffs_runs, "executor_for", no_exact_solve)  # no pool is started either
    goto(at, PAGE)
    return at


def test_a_large_graph_draws_the_band_at_once_and_starts_no_exact_solve(monkeypatch):
    """Issue 26 item 9: on the Inception-like sample a first chart, computed without any exact solve."""
    from placement.evaluate import evaluate
    from placement.explore.teaching import lower_bound
    from placement.heuristics import pipedream
    from placement.viz.bounds import LOWER_NAME, UPPER_NAME

    at = _inception_page(monkeypatch)
    assert not at.exception, at.exception
    spec = chart(at, "to_chart_band")
    with pytest.raises(AssertionError):
        chart(at, "to_chart_accelerators")  # the exact sweeps wait for Run
    base = load_problem(ROOT / "sample_graphs" / "ours" / "inception_wide_inference.json")
    lower, upper = trace(spec, LOWER_NAME), trace(spec, UPPER_NAME)
    assert _plain(lower["x"]) == list(range(1, 17))
    for k, low, high in zip(_plain(lower["x"]), _plain(lower["y"]), _plain(upper["y"])):
        varied = Problem(base.graph, base.devices.with_kind("accelerator", count=int(k)))
        assert low == pytest.approx(lower_bound(varied)[0], rel=1e-12)
        assert low <= high * (1 + 1e-12)
        if k in (1, 6, 16):  # the plan's time, valued again by the evaluator
            assert high == pytest.approx(evaluate(varied, pipedream(varied).placement).max_load, rel=1e-9)
    # at the sample's own 6 accelerators: the exact optimum (37.1975 ms, solved once outside the test) in the band
    assert _plain(lower["y"])[5] <= 37.1975 <= _plain(upper["y"])[5] * (1 + 1e-9)
    assert "_to_pool" not in at.session_state
    assert at.button(key="to_run") and at.button(key="to_stop")
    assert any("Press Run the sweeps" in c.value for c in at.caption)
    at.button(key="to_stop").click().run()
    assert any("Stopped" in w.value for w in at.warning)
    assert not at.exception, at.exception
