"""Figures added for the purchase, uncertainty and sweep pages, tested as plain functions."""

import math

from placement import load_problem, solve_dp, viz
from placement.explore.grids import memory_grid
from placement.explore.purchase import price_frontier, purchase_options
from placement.explore.uncertainty import monte_carlo

from .apptest_helpers import ROOT

DEFAULT = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_inference.json"


def test_purchase_figure_draws_the_frontier_and_rings_the_answer():
    problem = load_problem(DEFAULT)
    name = problem.devices.accelerators[0].name
    options = purchase_options(problem, {name: 1}, {name: 2.0})
    front = price_frontier(options)
    figure = viz.purchase_figure(options, front=front, answer=front[-1])
    traces = {t.name: t for t in figure.data}
    assert list(traces["frontier (cheapest for its speed)"].x) == [o.price_per_hour for o in front]
    assert list(traces["answer"].y) == [front[-1].time_per_sample]
    assert figure.layout.yaxis.type == "log"  # CPU only is ~50x slower than 7 cards: a log axis shows both
    rows = viz.purchase_rows(options)
    assert rows[-1]["cards to buy"] == f"1 x {name}"


def test_monte_carlo_and_bottleneck_figures():
    problem = load_problem(DEFAULT)
    mc = monte_carlo(problem, solve_dp(problem).placement, 0.2, samples=20, seed=1)
    figure = viz.monte_carlo_figure(mc)
    assert len(figure.data) == 2 and figure.data[0].xbins.size == figure.data[1].xbins.size
    assert [a.text for a in figure.layout.annotations] == ["P10", "P50", "P90"]
    bars = viz.bottleneck_figure(mc)
    assert math.isclose(sum(bars.data[0].y), 100.0)


def test_memory_sweep_figure_has_no_point_at_zero_and_a_memory_axis_in_mib_for_small_values(random_problem):
    problem = random_problem(2, n_forward=6, max_accelerators=3)
    points = memory_grid(problem, points=5)
    if not points:
        return
    figure = viz.sweep_figure(points, "memory", title="t")
    curve = figure.data[0]
    assert 0.0 not in list(curve.y)
    assert figure.layout.xaxis.title.text == "memory per accelerator (MiB)"  # sizes of a few bytes
    summary = viz.sweep_summary(points)
    assert summary.startswith(f"{len(points)} points:")


def test_graph_figure_labels_nodes_only_where_they_fit():
    small = load_problem(DEFAULT).graph  # 30-odd layers: labels fit
    figure = viz.graph_figure(small)
    labels = [t for t in figure.data if t.name == "node labels"]
    assert labels and len(labels[0].text) == len(small.nodes)
    assert all(len(text) <= viz.node_label_chars(viz.dag_layout(small)) for text in labels[0].text)
    big = load_problem(ROOT / "sample_graphs" / "throughput" / "layer" / "resnet50_inference.json").graph
    assert not [t for t in viz.graph_figure(big).data if t.name == "node labels"]  # 169 layers: no room
