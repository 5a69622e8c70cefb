"""Chrome / Perfetto trace export: structure of the trace event JSON."""

from __future__ import annotations

import json

import pytest

from placement import PlacementError
from placement.pipeline.memory import memory_profile
from placement.pipeline.schedule import simulate
from placement.pipeline.trace import chrome_trace, chrome_trace_json
from tests.test_schedule import two_stage_training


def test_trace_structure():
    problem, placement = two_stage_training()
    schedule = simulate(problem, placement, 4, "1f1b")
    profile = memory_profile(problem, schedule, 2.0)
    trace = json.loads(chrome_trace_json(schedule, profile, microseconds_per_unit=1000.0))
    assert set(trace) >= {"traceEvents", "displayTimeUnit"}
    events = trace["traceEvents"]
    for event in events:
        assert event["ph"] in ("X", "M", "C")
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
        assert isinstance(event["name"], str)
    # Metadata: one named process per device (pipeline order) and named threads.
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert names == {1: "accelerator 0 (stage 0)", 2: "accelerator 1 (stage 1)"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert threads[(1, 1)] == "compute" and threads[(1, 2)] == "transfers"
    # Complete events: one per schedule event, ts/dur in microseconds.
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == len(schedule.events)
    for e in complete:
        assert e["ts"] >= 0 and e["dur"] >= 0
        assert e["cat"] in ("forward", "backward", "transfer", "recompute")
        assert e["tid"] == (2 if e["cat"] == "transfer" else 1)
    # Hand-computed 1F1B (tests/test_schedule.py): device 1's B0 unit is b1 [7, 11] then send [11, 13].
    b0 = [e for e in complete if e["pid"] == 2 and e["name"] == "B0"]
    assert b0 == [
        {
            "ph": "X",
            "name": "B0",
            "cat": "backward",
            "pid": 2,
            "tid": 1,
            "ts": 7000.0,
            "dur": 4000.0,
            "args": {"microbatch": 0, "stage": 1, "phase": "backward", "start": 7.0, "end": 11.0},
        }
    ]
    send = [e for e in complete if e["pid"] == 2 and e["name"] == "send 0"]
    assert [(e["ts"], e["dur"]) for e in send] == [(11000.0, 2000.0)]
    # Memory counters: device 0 reaches 31 + 2 x 100 bytes.
    counters = [e for e in events if e["ph"] == "C" and e["pid"] == 1]
    assert max(e["args"]["GiB"] for e in counters) == pytest.approx(231 / 2**30)
    assert trace["otherData"]["makespan"] == 50


def test_trace_without_memory_and_other_units():
    problem, placement = two_stage_training()
    schedule = simulate(problem, placement, 1, "inference")
    trace = chrome_trace(schedule, microseconds_per_unit=1.0)
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [(e["pid"], e["name"], e["ts"], e["dur"]) for e in complete] == [
        (1, "F0", 0.0, 2.0),
        (1, "send 0", 2.0, 1.0),
        (2, "recv 0", 3.0, 1.0),
        (2, "F0", 4.0, 3.0),
    ]
    assert not [e for e in trace["traceEvents"] if e["ph"] == "C"]
    with pytest.raises(PlacementError):
        chrome_trace(schedule, microseconds_per_unit=0)
