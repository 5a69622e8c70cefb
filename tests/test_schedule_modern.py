"""Interleaved 1F1B and zero bubble ZB-H1: hand-computed event times, action lists, memory, workloads.

The chain used throughout: stage ``k`` holds one forward node (latency 1) and one backward
node (latency 2, split 1:1 into an input-gradient part I and a weight-gradient part W
under ZB-H1); transfers are free, so every unit is one event and its times are the unit's.
The hand computations are in the comments: a unit starts when its device is free and the
units it waits for (same microbatch: F of the stage before, B/I of the stage after) ended.
"""

from __future__ import annotations

import glob

import pytest

from placement import Devices, DeviceSlot, Edge, Graph, Node, Placement, PlacementError, Problem, Stage, solve_dp
from placement.io import load_problem
from placement.pipeline.memory import in_flight, memory_profile, peak_table
from placement.pipeline.schedule import Action, compare_schedules, device_actions, format_actions, simulate

WORKLOADS = sorted(glob.glob("/work/shared/workloads/throughput/*/*training*.json"))


def chain(stages: int, weight_fraction=None) -> tuple[Problem, Placement]:
    """f0 -> ... -> f(S-1) -> b(S-1) -> ... -> b0; stage k = {f_k, b_k}; F = 1, B = 2, free transfers.

    Every forward node's output is 10 bytes (its activation); weights 0.
    """
    nodes, edges = [], []
    for k in range(stages):
        extra = {} if weight_fraction is None else {"weightGradFraction": weight_fraction}
        nodes.append(Node(k, 1.0, 1.0, color_class=k, name=f"f{k}"))
        nodes.append(Node(100 + k, 2.0, 2.0, is_backward=True, color_class=k, name=f"b{k}", extra=extra))
        if k + 1 < stages:
            edges.append(Edge(k, k + 1, 0.0, size=10.0))
            edges.append(Edge(100 + k + 1, 100 + k, 0.0, size=1.0))
    edges.append(Edge(stages - 1, 100 + stages - 1, 0.0, size=10.0))
    problem = Problem(Graph(tuple(nodes), tuple(edges)), Devices.paper(stages, 0))
    placement = Placement(tuple(Stage(DeviceSlot("accelerator", k), (k, 100 + k)) for k in range(stages)))
    return problem, placement


def timeline(schedule) -> list[list[tuple[str, float, float]]]:
    """Per device: (action, start, end) of every unit in the device's order."""
    out = []
    for device in schedule.devices:
        spans: dict[tuple[int, str, int], list[float]] = {}
        for event in schedule.events_of(device):
            op = {"forward": "F", "weight": "W"}.get(event.phase, "I" if schedule.kind == "zbh1" else "B")
            span = spans.setdefault((event.stage, op, event.microbatch), [event.start, event.end])
            span[0], span[1] = min(span[0], event.start), max(span[1], event.end)
        out.append(sorted(((f"{k}{op}{m}", s, e) for (k, op, m), (s, e) in spans.items()), key=lambda x: x[1]))
    return out


def spans(text: str) -> list[tuple[str, float, float]]:
    """'0F0 0 1, 0F1 1 2' -> [('0F0', 0, 1), ('0F1', 1, 2)]."""
    out = []
    for item in text.split(","):
        name, start, end = item.split()
        out.append((name, float(start), float(end)))
    return out


# ----------------------------------------------------------------------------- ZB-H1, hand computed

ZB_HAND = {
    # D = 2, M = 1: 0F0 [0,1]; 1F0 [1,2]; 1I0 [2,3]; 1W0 [3,4]; 0I0 waits for 1I0: [3,4]; 0W0 [4,5].
    (2, 1): ["0F0 0 1, 0I0 3 4, 0W0 4 5", "1F0 1 2, 1I0 2 3, 1W0 3 4"],
    # D = 2, M = 4 (device 1 defers one W): 1F1 waits for 0F1 (2) and its device (3); 0I0 waits for 1I0 (3) ...
    (2, 4): [
        "0F0 0 1, 0F1 1 2, 0I0 3 4, 0W0 4 5, 0F2 5 6, 0I1 6 7, 0W1 7 8, 0F3 8 9, 0I2 9 10, 0W2 10 11, "
        "0I3 11 12, 0W3 12 13",
        "1F0 1 2, 1I0 2 3, 1F1 3 4, 1I1 4 5, 1W0 5 6, 1F2 6 7, 1I2 7 8, 1W1 8 9, 1F3 9 10, 1I3 10 11, "
        "1W2 11 12, 1W3 12 13",
    ],
    # D = 2, M = 8: steady period 3; device 0 runs F_m [3m-1, 3m], I_(m-1) [3m, 3m+1], W_(m-1) [3m+1, 3m+2]
    # for m >= 2; device 1 F_m [3m, 3m+1], I_m [3m+1, 3m+2], W_(m-1) [3m+2, 3m+3] for m >= 1.
    (2, 8): [
        ", ".join(
            ["0F0 0 1, 0F1 1 2, 0I0 3 4, 0W0 4 5"]
            + [
                f"0F{m} {3 * m - 1} {3 * m}, 0I{m - 1} {3 * m} {3 * m + 1}, 0W{m - 1} {3 * m + 1} {3 * m + 2}"
                for m in range(2, 8)
            ]
            + ["0I7 23 24, 0W7 24 25"]
        ),
        ", ".join(
            ["1F0 1 2, 1I0 2 3"]
            + [
                f"1F{m} {3 * m} {3 * m + 1}, 1I{m} {3 * m + 1} {3 * m + 2}, 1W{m - 1} {3 * m + 2} {3 * m + 3}"
                for m in range(1, 8)
            ]
            + ["1W7 24 25"]
        ),
    ],
    # D = 3, M = 1: forwards 0..3, I/W back: 2I0 [3,4] 2W0 [4,5]; 1I0 [4,5] 1W0 [5,6]; 0I0 [5,6] 0W0 [6,7].
    (3, 1): ["0F0 0 1, 0I0 5 6, 0W0 6 7", "1F0 1 2, 1I0 4 5, 1W0 5 6", "2F0 2 3, 2I0 3 4, 2W0 4 5"],
    # D = 3, M = 4: device 2 defers two W, device 1 one.
    (3, 4): [
        "0F0 0 1, 0F1 1 2, 0F2 2 3, 0I0 5 6, 0W0 6 7, 0F3 7 8, 0I1 8 9, 0W1 9 10, 0I2 10 11, 0W2 11 12, "
        "0I3 12 13, 0W3 13 14",
        "1F0 1 2, 1F1 2 3, 1I0 4 5, 1F2 5 6, 1I1 6 7, 1W0 7 8, 1F3 8 9, 1I2 9 10, 1W1 10 11, 1I3 11 12, "
        "1W2 12 13, 1W3 13 14",
        "2F0 2 3, 2I0 3 4, 2F1 4 5, 2I1 5 6, 2F2 6 7, 2I2 7 8, 2W0 8 9, 2F3 9 10, 2I3 10 11, 2W1 11 12, "
        "2W2 12 13, 2W3 13 14",
    ],
    # D = 3, M = 8.
    (3, 8): [
        "0F0 0 1, 0F1 1 2, 0F2 2 3, 0I0 5 6, 0W0 6 7, 0F3 7 8, 0I1 8 9, 0W1 9 10, 0F4 10 11, 0I2 11 12, "
        "0W2 12 13, 0F5 13 14, 0I3 14 15, 0W3 15 16, 0F6 16 17, 0I4 17 18, 0W4 18 19, 0F7 19 20, 0I5 20 21, "
        "0W5 21 22, 0I6 22 23, 0W6 23 24, 0I7 24 25, 0W7 25 26",
        "1F0 1 2, 1F1 2 3, 1I0 4 5, 1F2 5 6, 1I1 6 7, 1W0 7 8, 1F3 8 9, 1I2 9 10, 1W1 10 11, 1F4 11 12, "
        "1I3 12 13, 1W2 13 14, 1F5 14 15, 1I4 15 16, 1W3 16 17, 1F6 17 18, 1I5 18 19, 1W4 19 20, 1F7 20 21, "
        "1I6 21 22, 1W5 22 23, 1I7 23 24, 1W6 24 25, 1W7 25 26",
        "2F0 2 3, 2I0 3 4, 2F1 4 5, 2I1 5 6, 2F2 6 7, 2I2 7 8, 2W0 8 9, 2F3 9 10, 2I3 10 11, 2W1 11 12, "
        "2F4 12 13, 2I4 13 14, 2W2 14 15, 2F5 15 16, 2I5 16 17, 2W3 17 18, 2F6 18 19, 2I6 19 20, 2W4 20 21, "
        "2F7 21 22, 2I7 22 23, 2W5 23 24, 2W6 24 25, 2W7 25 26",
    ],
}


@pytest.mark.parametrize("devices,microbatches", sorted(ZB_HAND))
def test_zbh1_hand_computed(devices, microbatches):
    problem, placement = chain(devices)
    s = simulate(problem, placement, microbatches, "zbh1")
    expected = [spans(line) for line in ZB_HAND[(devices, microbatches)]]
    assert timeline(s) == expected
    makespan = max(end for line in expected for _, _, end in line)
    assert s.makespan == makespan
    # Every device is busy 3 per microbatch (F 1 + I 1 + W 1).
    assert dict(s.idle) == {d: makespan - 3 * microbatches for d in s.devices}
    assert s.bubble_fraction == pytest.approx(1 - 3 * microbatches / makespan)
    assert s.period == 3
    # The events of each unit: F = one forward event, I = one backward event, W = one weight event.
    kinds = {(e.phase, e.kind) for e in s.events}
    assert kinds == {("forward", "forward"), ("backward", "backward"), ("weight", "weight")}


@pytest.mark.parametrize("devices,microbatches,one_f_one_b", [(2, 4, 15), (2, 8, 27), (3, 4, 18), (3, 8, 30)])
def test_zbh1_beats_1f1b_on_the_chain(devices, microbatches, one_f_one_b):
    # 1F1B on the same chain: steady period 3 plus fill and drain (D - 1) x (F + B) = 3 (D - 1).
    problem, placement = chain(devices)
    plain = simulate(problem, placement, microbatches, "1f1b")
    zb = simulate(problem, placement, microbatches, "zbh1")
    assert plain.makespan == one_f_one_b
    assert zb.makespan < plain.makespan and zb.bubble_fraction < plain.bubble_fraction


def test_weight_fraction_from_the_graph_and_override():
    problem, placement = chain(2, weight_fraction=0.25)
    s = simulate(problem, placement, 1, "zbh1")
    # I = 2 x 0.75 = 1.5, W = 0.5: 0F0 [0,1], 1F0 [1,2], 1I0 [2,3.5], 1W0 [3.5,4], 0I0 [3.5,5], 0W0 [5,5.5].
    assert timeline(s) == [spans("0F0 0 1, 0I0 3.5 5, 0W0 5 5.5"), spans("1F0 1 2, 1I0 2 3.5, 1W0 3.5 4")]
    s = simulate(problem, placement, 1, "zbh1", weight_fraction=1.0)
    assert timeline(s) == [spans("0F0 0 1, 0I0 2 2, 0W0 2 4"), spans("1F0 1 2, 1I0 2 2, 1W0 2 4")]
    bad, placement = chain(2, weight_fraction=1.5)
    with pytest.raises(PlacementError, match="node 100: field 'weightGradFraction' must be a number from 0 to 1"):
        simulate(bad, placement, 1, "zbh1")


# ----------------------------------------------------------------------------- interleaved, hand computed

INTERLEAVED_HAND = {
    # D = 2, v = 2 (stages 0, 2 on device 0; 1, 3 on device 1), M = 1: the chain runs straight through.
    (2, 1): ["0F0 0 1, 2F0 2 3, 2B0 6 8, 0B0 10 12", "1F0 1 2, 3F0 3 4, 3B0 4 6, 1B0 8 10"],
    # D = 2, M = 4 (two rounds of two microbatches); e.g. 3F1 waits for 2F1 (4) and device 1 (free at 6).
    (2, 4): [
        "0F0 0 1, 0F1 1 2, 2F0 2 3, 2F1 3 4, 0F2 4 5, 2B0 6 8, 0F3 8 9, 2B1 9 11, 2F2 11 12, 0B0 12 14, "
        "2F3 14 15, 0B1 15 17, 2B2 18 20, 2B3 21 23, 0B2 23 25, 0B3 25 27",
        "1F0 1 2, 1F1 2 3, 3F0 3 4, 3B0 4 6, 3F1 6 7, 3B1 7 9, 1F2 9 10, 1B0 10 12, 1F3 12 13, 1B1 13 15, "
        "3F2 15 16, 3B2 16 18, 3F3 18 19, 3B3 19 21, 1B2 21 23, 1B3 23 25",
    ],
    # D = 3, v = 2, M = 1: straight through 6 stages: F k at [k, k+1], B k at [6 + 2(5-k), 8 + 2(5-k)].
    (3, 1): [
        "0F0 0 1, 3F0 3 4, 3B0 10 12, 0B0 16 18",
        "1F0 1 2, 4F0 4 5, 4B0 8 10, 1B0 14 16",
        "2F0 2 3, 5F0 5 6, 5B0 6 8, 2B0 12 14",
    ],
}


@pytest.mark.parametrize("devices,microbatches", sorted(INTERLEAVED_HAND))
def test_interleaved_hand_computed(devices, microbatches):
    problem, placement = chain(2 * devices)
    s = simulate(problem, placement, microbatches, "interleaved", virtual=2)
    assert timeline(s) == [spans(line) for line in INTERLEAVED_HAND[(devices, microbatches)]]
    assert s.virtual == 2 and len(s.devices) == devices
    assert s.devices == tuple(DeviceSlot("accelerator", d) for d in range(devices))
    for d, device in enumerate(s.devices):
        assert s.stages_of(device) == (d, d + devices)
    assert s.period == 6  # two stages of F 1 + B 2 per device


def reference_times(problem_stages: int, devices: int, virtual: int, microbatches: int, kind: str):
    """Start/end of every unit by longest-path relaxation over (device order + chain dependencies).

    An independent computation (no event sweep): repeat ``start = max(end of the previous unit on
    the device, ends of the units it waits for)`` until nothing changes.
    """
    orders = [device_actions(kind, r, devices, microbatches, virtual) for r in range(devices)]
    back = "I" if kind == "zbh1" else "B"
    length = {"F": 1.0, "B": 2.0, "I": 1.0, "W": 1.0}
    start: dict[tuple[int, str, int], float] = {}
    end: dict[tuple[int, str, int], float] = {}
    for order in orders:
        for a in order:
            start[(a.stage, a.op, a.microbatch)] = 0.0
    changed = True
    while changed:
        changed = False
        for order in orders:
            previous = None
            for a in order:
                k, op, m = a.stage, a.op, a.microbatch
                waits = [previous] if previous else []
                if op == "F" and k > 0:
                    waits.append((k - 1, "F", m))
                if op == back:
                    waits.append((k, "F", m))
                    if k + 1 < problem_stages:
                        waits.append((k + 1, back, m))
                if op == "W":
                    waits.append((k, "I", m))
                t = max([end.get(w, 0.0) for w in waits], default=0.0)
                if t != start[(k, op, m)] or (k, op, m) not in end:
                    start[(k, op, m)] = t
                    end[(k, op, m)] = t + length[op]
                    changed = True
                previous = (k, op, m)
    return [
        [(str(a), start[(a.stage, a.op, a.microbatch)], end[(a.stage, a.op, a.microbatch)]) for a in order]
        for order in orders
    ]


@pytest.mark.parametrize(
    "kind,devices,virtual,microbatches",
    [
        ("interleaved", 2, 2, 8),
        ("interleaved", 3, 2, 4),
        ("interleaved", 3, 2, 8),
        ("interleaved", 2, 3, 6),
        ("zbh1", 4, 1, 8),
        ("zbh1", 2, 2, 4),
        ("zbh1", 3, 2, 6),
    ],
)
def test_schedules_match_an_independent_longest_path(kind, devices, virtual, microbatches):
    problem, placement = chain(devices * virtual)
    s = simulate(problem, placement, microbatches, kind, virtual=virtual)
    assert timeline(s) == reference_times(devices * virtual, devices, virtual, microbatches, kind)


def test_interleaved_checks_and_defaults():
    problem, placement = chain(6)
    assert simulate(problem, placement, 4, "interleaved").virtual == 2
    assert simulate(problem, placement, 3, "interleaved", virtual=3).devices == (
        DeviceSlot("accelerator", 0),
        DeviceSlot("accelerator", 1),
    )
    with pytest.raises(PlacementError, match="6 stages cannot be interleaved with 4 virtual stages"):
        simulate(problem, placement, 4, "interleaved", virtual=4)
    problem4, placement4 = chain(4)
    with pytest.raises(PlacementError, match="multiple of 2"):
        simulate(problem4, placement4, 5, "interleaved", virtual=2)  # torch: M a multiple of the rounds (2)
    with pytest.raises(PlacementError, match="one stage per device"):
        simulate(problem, placement, 4, "1f1b", virtual=2)
    problem, placement = chain(3)
    assert simulate(problem, placement, 4, "interleaved").virtual == 1  # odd stage count: no interleaving


# ----------------------------------------------------------------------------- actions as data


def test_actions_print_like_torch():
    problem, placement = chain(2)
    s = simulate(problem, placement, 4, "zbh1")
    assert [[str(a) for a in order] for order in s.actions] == [
        "0F0 0F1 0I0 0W0 0F2 0I1 0W1 0F3 0I2 0W2 0I3 0W3".split(),
        "1F0 1I0 1F1 1I1 1W0 1F2 1I2 1W1 1F3 1I3 1W2 1W3".split(),
    ]
    text = format_actions(s)
    assert text.splitlines()[0] == "accelerator 0 | 0F0 0F1 0I0 0W0 0F2 0I1 0W1 0F3 0I2 0W2 0I3 0W3"
    assert Action.parse("12W3") == Action(12, "W", 3) and str(Action(0, "B", 7)) == "0B7"
    with pytest.raises(PlacementError, match="expected <stage><F|B|I|W><microbatch>"):
        Action.parse("F0")
    s = simulate(problem, placement, 2, "1f1b")
    assert [[str(a) for a in order] for order in s.actions] == [
        ["0F0", "0F1", "0B0", "0B1"],
        ["1F0", "1B0", "1F1", "1B1"],
    ]


# ----------------------------------------------------------------------------- memory


def test_zbh1_memory_holds_stashes_until_w():
    problem, placement = chain(2)
    s = simulate(problem, placement, 4, "zbh1")
    profile = memory_profile(problem, s)
    # Device 1 runs 1F0 1I0 1F1 1I1 1W0: two stashes of 10 bytes alive from 1F1 (t=3) until 1W0 ends (6).
    d1 = profile.devices[1]
    assert d1.peak == 20 and d1.peak_time == 3 and d1.in_flight == 2
    assert s.peak_in_flight == (2, 2)
    assert [row[1] for row in peak_table(problem, placement, "zbh1", 4)] == [20, 20]
    # 1F1B frees at the end of B: device 1 holds one.
    plain = memory_profile(problem, simulate(problem, placement, 4, "1f1b"))
    assert [d.peak for d in plain.devices] == [20, 10]
    assert in_flight("zbh1", 1, 2, 4) == 2 and in_flight("interleaved", 0, 2, 4, virtual=2) == 5


def test_interleaved_memory_per_device_sums_its_stages():
    problem, placement = chain(4)
    s = simulate(problem, placement, 4, "interleaved", virtual=2)
    profile = memory_profile(problem, s)
    assert [d.stages for d in profile.devices] == [(0, 2), (1, 3)]
    # Device 0: 0F0 0F1 2F0 2F1 0F2 (5 stashes), 2B0 frees one, 0F3 (5 again), ...: peak 5 x 10.
    assert profile.devices[0].peak == 50
    closed = peak_table(problem, placement, "interleaved", 4, virtual=2)
    assert [row[1] for row in closed] == [d.peak for d in profile.devices]


@pytest.mark.parametrize("kind", ["interleaved", "zbh1"])
def test_order_sweep_peak_equals_time_sweep_with_recompute_and_optimizer(kind):
    problem, placement = chain(6)
    for m in (1, 4, 6):
        s = simulate(problem, placement, m, kind, recompute=True, virtual=2)
        profile = memory_profile(problem, s, optimizer_multiplier=2.0)
        closed = peak_table(problem, placement, kind, m, 2.0, recompute=[d for d in s.devices], virtual=2)
        assert [row[1] for row in closed] == pytest.approx([d.peak for d in profile.devices])


# ----------------------------------------------------------------------------- workloads


@pytest.mark.slow
@pytest.mark.skipif(not WORKLOADS, reason="shared workloads not present")
@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: p.split("/")[-2] + "/" + p.split("/")[-1])
def test_zbh1_bubble_below_1f1b_on_the_shared_training_workloads(path):
    problem = load_problem(path)
    placement = solve_dp(problem).placement
    for microbatches in (4, 8, 16):
        plain = simulate(problem, placement, microbatches, "1f1b")
        zb = simulate(problem, placement, microbatches, "zbh1")
        assert zb.bubble_fraction < plain.bubble_fraction, (microbatches, zb.bubble_fraction, plain.bubble_fraction)
        # Same work per device (F + I + W = F + B): only the idle time differs.
        assert sum(plain.makespan - i for _, i in plain.idle) == pytest.approx(sum(zb.makespan - i for _, i in zb.idle))


def test_compare_schedules_lists_every_schedule_and_reasons():
    problem, placement = chain(3)
    rows = compare_schedules(problem, placement, 4)
    assert [kind for kind, _, _ in rows] == ["inference", "gpipe", "1f1b", "interleaved", "zbh1"]
    reasons = {kind: reason for kind, s, reason in rows if s is None}
    assert reasons == {
        "interleaved": "3 stages cannot be interleaved with 2 virtual stages per device: the number "
        "of stages must be a multiple of 2"
    }


def test_zbh1_mirrors_the_deferral_when_gradients_flow_forward():
    from placement.pipeline.schedule import gradients_flow_forward

    problem, placement = chain(2)
    assert not gradients_flow_forward(problem, placement)
    # The paper's workloads draw gradient edges like the forward ones: b0 -> b1 (and f1 -> b1 ... the loss at b1).
    flipped = tuple(
        Edge(e.target, e.source, e.cost, size=e.size) if e.source >= 100 else e for e in problem.graph.edges
    )
    inverted = Problem(Graph(problem.graph.nodes, flipped), problem.devices)
    assert gradients_flow_forward(inverted, placement)
    s = simulate(inverted, placement, 4, "zbh1")
    # Device 0 now defers one W, device 1 none.
    assert [str(a) for a in s.actions[0]] == "0F0 0F1 0I0 0F2 0I1 0W0 0F3 0I2 0W1 0I3 0W2 0W3".split()
    assert [str(a) for a in s.actions[1]] == "1F0 1I0 1W0 1F1 1I1 1W1 1F2 1I2 1W2 1F3 1I3 1W3".split()
    assert s.makespan < simulate(inverted, placement, 4, "1f1b").makespan
