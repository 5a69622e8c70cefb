"""Timelines as traces: the transformer schedule (placement/perf/trace.py) and the graph pipeline, from the CLI
(``plan --trace``, ``solve --trace``), parse as Chrome trace JSON with one track (process) per device."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement import cli
from placement.perf.layout import Schedule
from placement.perf.meeting import TransformerScenario, meeting_answer
from placement.perf.trace import MAX_EVENTS, chrome_trace, microbatches_drawn

ROOT = Path(__file__).resolve().parent.parent
GRAPH = ROOT / "sample_graphs" / "throughput" / "layer" / "bert24_training.json"


def tracks(trace: dict) -> dict[int, str]:
    """pid -> process name; every complete event on a named process, ts and dur non-negative."""
    assert set(trace) >= {"traceEvents", "displayTimeUnit"}
    events = trace["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    complete = [e for e in events if e["ph"] == "X"]
    assert complete
    for e in complete:
        assert e["pid"] in names and e["ts"] >= 0 and e["dur"] >= 0 and isinstance(e["name"], str)
    return names


def test_transformer_trace_one_track_per_pipeline_rank():
    scenario = TransformerScenario(model="llama3-8b", gpus=64, global_batch=256)
    answer = meeting_answer(scenario)
    plan = answer.result.plan
    trace = json.loads(json.dumps(chrome_trace(scenario.spec, plan, scenario.cluster)))
    names = tracks(trace)
    assert len(names) == plan.layout.pipeline
    assert all(name.startswith(f"pipeline rank {pid - 1} ") for pid, name in names.items())
    ops = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    per_rank = 2 * plan.layout.microbatches * plan.layout.virtual_stages
    assert len(ops) == plan.layout.pipeline * per_rank
    assert trace["otherData"]["step_seconds"] == answer.step_seconds
    end = max(e["ts"] + e["dur"] for e in ops) / 1e6
    assert end == pytest.approx(trace["otherData"]["schedule_seconds"])
    assert end <= answer.step_seconds


def test_long_schedules_are_cut():
    assert microbatches_drawn(8, 10, 1, Schedule.ONE_F_ONE_B) == 10
    shown = microbatches_drawn(64, 100_000, 2, Schedule.INTERLEAVED)
    assert shown % 64 == 0 and 64 * 2 * 2 * shown <= MAX_EVENTS


def test_cli_writes_both_traces(tmp_path, capsys):
    plan_out, graph_out = tmp_path / "plan.json", tmp_path / "graph.json"
    args = ["plan", "--model", "llama3-8b", "--gpu", "H100", "--gpus", "64", "--global-batch", "256"]
    assert cli.main([*args, "--trace", str(plan_out), "--json"]) == 0
    pipeline = json.loads(capsys.readouterr().out)["plan"]["layout"]["pipeline"]
    assert len(tracks(json.loads(plan_out.read_text()))) == pipeline
    assert cli.main(["solve", str(GRAPH), "--trace", str(graph_out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    used = [d for d in [*result["accelerators"], *result.get("cpus", [])] if d["nodes"]]
    assert len(tracks(json.loads(graph_out.read_text()))) == len(used) > 1


def test_cli_trace_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "missing" / "t.json"
    args = ["plan", "--model", "llama3-8b", "--gpu", "H100", "--gpus", "64", "--global-batch", "256"]
    assert cli.main([*args, "--trace", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--trace" in err and "cannot write" in err


def test_the_schedule_legend_says_recomputation_only_when_the_layout_recomputes():
    from placement.perf.timeline import schedule_blocks
    from placement.viz import perf as viz_perf

    blocks = schedule_blocks("1f1b", [(1.0, 2.0), (1.0, 2.0)], 4)
    names = {t.name for t in viz_perf.schedule_figure(blocks, "t", recompute=False).data}
    assert "backward" in names and not any("recomputation" in n for n in names)
    names = {t.name for t in viz_perf.schedule_figure(blocks, "t").data}
    assert "backward (with recomputation)" in names
