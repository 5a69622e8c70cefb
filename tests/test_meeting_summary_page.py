"""AppTest of the Meeting summary page: its numbers equal Devices', Placement's and the CLI's (issue 26 item 4).

Scenario of the issue: a GPT 24x2048 training graph from the model builder on 8 A100 + 4 V100
(priced 3 and 1.5 per hour, one CPU core), the training memory model (1F1B, 8 microbatches),
currency EUR; "8 more A100 or 16 more V100?".
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from types import SimpleNamespace

import pandas as pd
import pyarrow as pa
import pytest

from placement import MemoryModel, Problem, cli, solve
from placement.explore.purchase import worth_of_more
from placement.io import problem_to_json
from placement.model import DeviceSlot
from placement.modelling.builders import build_transformer
from placement.modelling.pricing import devices_for
from placement.perf.transformer import TransformerSpec
from placement.pipeline.memory import MemoryBreakdown
from placement.viz import format_bytes
from ui.meeting import memory_rows
from ui.navigation import page_file

from .apptest_helpers import goto, metrics, start

pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")
PAGE = page_file("Meeting summary")
MODEL = MemoryModel(training=True)
BATCH = 8
CONFIG = TransformerSpec(layers=24, hidden=2048, heads=16, seq_length=1024, vocab=50257, name="GPT 24x2048")


def scenario() -> Problem:
    kinds = {"A100": 8, "V100": 4}
    graph = build_transformer(CONFIG, kinds, cpus=1, training=True, micro_batch=BATCH, dtype="fp16").graph
    devices = devices_for(kinds, 1)
    prices = {"A100": 3.0, "V100": 1.5}
    kinds = tuple(replace(k, price_per_hour=prices[k.name]) for k in devices.accelerators)
    return Problem(graph, devices.with_changes(accelerators=kinds, cpu_price_per_hour=0.0))


def open_meeting(problem: Problem):
    at = start()
    ss = at.session_state
    name = problem.graph.name
    ss["_ui_base_problem"] = problem
    ss["_ui_graph_name"] = name
    ss["_ui_graph_source"] = f"model:{name}"  # as the Graph page's model builder loads it
    ss["_ui_devices"] = problem.devices
    ss["_ui_devices_origin"] = "custom"
    ss["_ui_memory_model"] = MODEL
    ss["_ui_currency"] = "EUR"
    ss["mi_model"], ss["mi_batch"], ss["mi_seq"] = "GPT transformer", BATCH, CONFIG.seq_length
    goto(at, PAGE)
    return at


def test_meeting_numbers_equal_devices_placement_and_cli(tmp_path, capsys):
    problem = scenario()
    at = open_meeting(problem)
    assert not at.error, [e.value for e in at.error]
    meeting = metrics(at)
    goto(at, page_file("Devices"))
    devices = metrics(at)
    goto(at, page_file("Placement"))
    placement_page = metrics(at)
    for label in ("Time per sample", "Time per batch", "Throughput", "Cost per 1M samples"):
        assert meeting[label] == devices[label] == placement_page[label], label
    assert meeting["Peak memory"] == placement_page["Peak memory (memory model)"]

    # The CLI on the same graph file and inventory (solve --method memory-aware --json).
    path = tmp_path / "gpt.json"
    path.write_text(problem_to_json(problem))
    assert cli.main(["solve", str(path), "--method", "memory-aware", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert meeting["Time per sample"] == f"{out['max_load']:.6g} ms"
    assert meeting["Peak memory"] == format_bytes(max(d["bytes"] for d in out["peak_memory"]))
    price = 8 * 3.0 + 4 * 1.5  # every card held, idle ones included
    assert meeting["Price per hour"] == f"{price:,.4g} EUR"
    assert meeting["Cost per 1M samples"] == f"{price * out['max_load'] / 3.6e6 * 1e6:,.4g} EUR"
    tokens = BATCH * CONFIG.seq_length  # the builder's batch x sequence: tokens/s with fill and drain
    assert "Tokens/s" in meeting and meeting["Tokens/s"] != "—"

    # What 8 more A100 (equal spend: 16 more V100) are worth: two exact solves, side by side.
    goto(at, PAGE)
    assert at.number_input(key="ms_more_0").value == 8 and at.number_input(key="ms_more_1").value == 16
    table = next(d.value for d in at.dataframe if "today" in d.value.columns)
    assert list(table.columns) == ["today", "+8 A100", "+16 V100"]
    method, options = MODEL.method_for("dp")
    for kind, n in (("A100", 8), ("V100", 16)):
        worth = worth_of_more(problem, kind, n, method=method, **options)
        assert table.loc["time per sample", f"+{n} {kind}"] == f"{worth.after.time_per_sample:.6g} ms"
    assert table.loc["time per sample", "today"] == meeting["Time per sample"]
    # Idle devices point to data parallelism; the Markdown carries the same numbers.
    result = solve(problem, method, **options)
    used = sum(1 for s in result.placement.stages if s.nodes)
    if used < 13:
        assert any("Parallel plan" in i.value for i in at.info)
    markdown = at.get("download_button")[0].proto.label
    assert markdown == "Download summary (Markdown)"
    assert f"{tokens:g}" in at.number_input(key="ms_tokens").value.__repr__()


def test_default_sample_without_prices_opens():
    """BERT-24 inference (one kind, no prices): no cost, the one kind doubles, no error."""
    at = start(PAGE)
    assert not at.error, [e.value for e in at.error]
    shown = metrics(at)
    assert shown["Cost per 1M samples"] == "—" and shown["Cost per run"] == "—" and shown["Tokens/s"] == "—"
    table = next(d.value for d in at.dataframe if "today" in d.value.columns)
    assert list(table.columns) == ["today", "+6 accelerator"]


def test_memory_table_has_one_type_per_column():
    """A CPU core's memory is "unlimited": text in a text column, never in a column of numbers.

    A column of numbers and text is no Arrow column: Streamlit then logged a traceback and rewrote the column
    (seen in a browser run's server log, 2026-11-26).
    """
    gib = 2.0**30
    card = MemoryBreakdown(DeviceSlot("A100", 0), 2 * gib, 2 * gib, 4 * gib, 1.5 * gib, cap=16 * gib, peak=9.5 * gib)
    core = MemoryBreakdown(DeviceSlot("cpu", 0), 1 * gib, 0.0, 0.0, 0.5 * gib, cap=math.inf, peak=1.5 * gib)
    rows = memory_rows(SimpleNamespace(memory=(card, core)))
    table = pa.Table.from_pandas(pd.DataFrame(rows))  # raises on a column of numbers and text
    assert table.column("memory").to_pylist() == ["16", "unlimited"]
    assert table.column("free").to_pylist() == ["6.5", "unlimited"]
    assert [row["weights"] for row in rows] == [2.0, 1.0] and [row["fits"] for row in rows] == ["yes", "yes"]
