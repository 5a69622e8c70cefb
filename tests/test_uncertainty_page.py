"""AppTest of the Uncertainty page: the numbers shown are placement.explore.uncertainty's for the same seed."""

import pytest

from placement import load_problem, solve_dp
from placement.explore.uncertainty import monte_carlo
from ui.navigation import page_file

from .apptest_helpers import ROOT, goto, metrics, start

pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")
DEFAULT = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"


def test_monte_carlo_run_shows_the_seeded_quantiles():
    at = goto(start(), page_file("Uncertainty"))
    assert any("Run Monte Carlo" in i.value for i in at.info)
    at.number_input(key="unc_error").set_value(20.0)
    at.number_input(key="unc_samples").set_value(30)
    at.number_input(key="unc_seed").set_value(3)
    at.toggle(key="unc_reopt").set_value(True)
    at.selectbox(key="unc_schedule").set_value("inference")
    at.run()
    at.button(key="unc_run").click().run()
    assert not at.exception, at.exception
    problem = load_problem(DEFAULT)
    plan = solve_dp(problem).placement
    mc = monte_carlo(problem, plan, 0.2, samples=30, seed=3, schedule="inference", microbatches=1)
    shown = metrics(at)
    for label, value in zip(("P10", "P50", "P90"), mc.plan_quantiles):
        assert shown[f"{label} time per sample"] == f"{value:.5g} ms"
    for label, value in zip(("P10", "P50", "P90"), mc.reopt_quantiles):
        assert shown[f"Re-optimised {label}"] == f"{value:.5g} ms"
    assert shown["P(out of memory)"] == "0%"
    keys = [c.proto.id for c in at.get("plotly_chart")]
    assert any("unc_hist" in k for k in keys) and any("unc_bottleneck" in k for k in keys)
    # Same seed again: the same numbers (reproducible); another seed: other numbers.
    at.button(key="unc_run").click().run()
    assert metrics(at)["P50 time per sample"] == shown["P50 time per sample"]
    at.number_input(key="unc_seed").set_value(4).run()
    assert any("changed since this run" in c.value for c in at.caption)
