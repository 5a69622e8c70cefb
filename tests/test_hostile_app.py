"""The standing hostile corpus of the app's surfaces (issue 27.3 and 27.4).

Shared links (URL parameters), scenario cards, graph and ONNX uploads, the Parallel plan page's
workload upload and the latency-multiplier pattern each get hostile input: extreme numbers
(a rules factor of 1e308, a bandwidth of 5e-324, 1e9 devices), unknown values, a 60 MB card, deep
nesting, duplicate keys, path-like names, and user text with newlines, control characters, ANSI
escapes, markup and 10 kB names. Every case runs in a forked child of ``tests/hostile_runner.py``
under ``RLIMIT_CPU`` (:data:`CPU_S`) and ``RLIMIT_AS`` (+ :data:`ADDRESS_SPACE`), killed after
:data:`WALL_S`; its peak RSS (``os.wait4``) must stay under the runner's + :data:`PEAK_MB`.

A case passes when: no exception reaches the page; every error shown is one printable line of at
most :data:`MAX_LINE` characters; a refused input shows an error and leaves the loaded graph,
devices and multipliers as they were (a refused link leaves the default view); and one more run of
the page raises nothing (the page keeps working).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.test_hostile import HOSTILE_TEXT, _graph, _piper
from ui.navigation import page_file

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
CPU_S = 60  # RLIMIT_CPU of each case (seconds): a fresh session loads and solves the default graph
WALL_S = 150  # the runner kills a case after this long
ADDRESS_SPACE = 3 << 30  # RLIMIT_AS: the runner's address space + 3 GiB (a 60 MB upload is copied a few times)
PEAK_MB = 900  # peak RSS a case may add to the runner's
MAX_LINE = 1500  # characters of one error line (the message's 1,000 plus the page's own words)

DEFAULT = "throughput/layer/bert24_inference"
GRAPH_PAGE = page_file("Graph")
DEVICES_PAGE = page_file("Devices")


def _devices(**changes) -> dict:
    kind = {"name": "accelerator", "count": 2, "memory": 16e9, "speed": 1.0, "bandwidth": 1.0, "price_per_hour": 0.0}
    kind.update(changes.pop("kind", {}))
    plain = {"accelerators": [kind], "bandwidth": 1.0, "cpu_bandwidth": None, "cpu_price_per_hour": 0.0, "cpus": 1}
    plain["overlap"] = False
    plain.update(changes)
    return plain


def _link(**params) -> dict[str, str]:
    query = {"graph": f"sample:{DEFAULT}", "devices": json.dumps(_devices()), "method": "dp", "limit": "30"}
    query.update({key: value if isinstance(value, str) else json.dumps(value) for key, value in params.items()})
    return query


def _card(**fields) -> dict:
    card = {"format": "placement-scenario", "version": 1, "graph": f"sample:{DEFAULT}", "devices": _devices()}
    card.update(fields)
    return card


def _link_cases() -> list[dict]:
    """(name, query, page, refused)."""
    cases = [
        ("link: rules factor 1e308", _link(rules=[["*", 1e308]]), None, True),
        ("link: rules factor 1e308 on a pattern", _link(rules=[["attention", 1e308]]), DEVICES_PAGE, False),
        ("link: bandwidth 5e-324", _link(devices=_devices(bandwidth=5e-324)), DEVICES_PAGE, True),
        ("link: kind bandwidth 5e-324", _link(devices=_devices(kind={"bandwidth": 5e-324})), DEVICES_PAGE, True),
        ("link: speed 5e-324", _link(devices=_devices(kind={"speed": 5e-324})), DEVICES_PAGE, True),
        (
            "link: bandwidth 0.01 (under the slider's 0.05)",
            _link(devices=_devices(bandwidth=0.01)),
            DEVICES_PAGE,
            False,
        ),
        ("link: speed 20 (over the slider's 8)", _link(devices=_devices(kind={"speed": 20.0})), DEVICES_PAGE, False),
        ("link: 1e9 accelerators", _link(devices=_devices(kind={"count": 10**9})), None, True),
        ("link: 1e9 CPU cores", _link(devices=_devices(cpus=10**9)), None, True),
        (
            "link: memory 1e400",
            {**_link(), "devices": json.dumps(_devices()).replace("16000000000.0", "1e400")},
            None,
            False,  # JSON reads 1e400 as infinity: unlimited memory, a valid link
        ),
        ("link: unknown schedule", _link(settings={"timeline_schedule": "nonsense"}), page_file("Timeline"), True),
        ("link: microbatches 1e9", _link(settings={"timeline_microbatches": 10**9}), page_file("Timeline"), True),
        ("link: unknown method", _link(method="simulated-annealing"), page_file("Placement"), True),
        ("link: unknown objective", _link(objective="cheapest"), None, True),
        ("link: limit nan", _link(limit="nan"), None, True),
        ("link: limit 1e309", _link(limit="1e309"), None, True),
        ("link: devices not JSON", _link(devices="{accelerators:"), None, True),
        ("link: devices nested deeply", _link(devices="[" * 8000), None, True),
        ("link: devices over 8 kB", _link(devices=" " * 9000 + "{}"), None, True),
        ("link: rules not a list", _link(rules={"a": 1}), None, True),
        ("link: 1000 rules", _link(rules=[["a", 1]] * 1000), None, True),
        ("link: sample path traversal", _link(graph="sample:../../../../etc/passwd"), None, True),
        ("link: unknown upload digest", _link(graph="upload:" + "0" * 64), None, True),
        ("link: graph missing", {"devices": json.dumps(_devices())}, None, False),
    ]
    for tag, text in HOSTILE_TEXT.items():
        cases += [
            (f"link {tag}: graph", _link(graph=f"sample:{text}"), None, True),
            (f"link {tag}: method", _link(method=text), None, True),
            (f"link {tag}: rules pattern", _link(rules=[[text[:150] + "[", 0.5]]), None, True),
            (f"link {tag}: kind name", _link(devices=_devices(kind={"name": text, "count": -1})), None, True),
            (f"link {tag}: devices field", _link(devices={**_devices(), text: 1}), None, True),
            (f"link {tag}: settings key", _link(settings={text: 1}), None, True),
        ]
    cases += _plan_link_cases()
    return [
        {"name": name, "app": {"query": query, "page": page}, "refused": refused, "link": True}
        for name, query, page, refused in cases
    ]


def _plan(**changes) -> dict:
    """A picked plan as a link carries it (placement/scenario_plan.py): every node of the default graph on
    accelerator 0."""
    with open(ROOT / "sample_graphs" / f"{DEFAULT}.json") as handle:
        ids = [node["id"] for node in json.load(handle)["nodes"]]
    plan = {"label": "picked", "method": "dp", "status": "feasible", "objectiveKind": "throughput"}
    plan["stages"] = [["accelerator", 0, ids]]
    plan.update(changes)
    return plan


def _plan_link_cases() -> list[tuple]:
    """Shared links carrying a picked plan (issue 27.4: a surface added after the corpus was written)."""
    ids = _plan()["stages"][0][2]
    cases = [
        ("link plan: not an object", _link(plan=[1, 2]), None, True),
        ("link plan: unknown node", _link(plan=_plan(stages=[["accelerator", 0, [*ids, 10**6]]])), None, True),
        (
            "link plan: a node twice",
            _link(plan=_plan(stages=[["accelerator", 0, ids], ["accelerator", 1, ids[:1]]])),
            None,
            True,
        ),
        ("link plan: device 1e9", _link(plan=_plan(stages=[["accelerator", 10**9, ids]])), None, True),
        (
            "link plan: 5,000 stages",
            _link(plan=_plan(stages=[["accelerator", i, []] for i in range(5000)])),
            None,
            True,
        ),
        # a claimed bound is capped by the value the receiver recomputes: accepted, harmless
        ("link plan: bound 1e308 claimed", _link(plan=_plan(status="optimal", bound=1e308)), None, False),
        ("link plan: unknown status", _link(plan=_plan(status="proven")), None, True),
        ("link plan: nested deeply", _link(plan="[" * 8000), None, True),
        (
            "link plan: devices with 1e9 accelerators",
            _link(plan=_plan(devices=_devices(kind={"count": 10**9}))),
            None,
            True,
        ),
    ]
    for tag, text in HOSTILE_TEXT.items():
        cases += [
            # a label is shown as text (accepted) unless the link is over its size cap
            (f"link plan {tag}: label", _link(plan=_plan(label=text)), None, tag == "10kB"),
            (f"link plan {tag}: field", _link(plan={**_plan(), text[:100]: 1}), None, True),
        ]
    return cases


def _upload_cases(tmp: Path) -> list[dict]:
    files: dict[str, bytes] = {}

    def put(name: str, content: str | bytes) -> str:
        files[name] = content if isinstance(content, bytes) else content.encode()
        return str(tmp / name)

    card = [  # (name, file name, content)
        ("card: 60 MB", "big.json", b'{"format": "placement-scenario", "pad": "' + b"x" * (60 << 20) + b'"}'),
        ("card: counts 1e9", "c.json", json.dumps(_card(devices=_devices(kind={"count": 10**9})))),
        ("card: cpus 1e9", "c.json", json.dumps(_card(devices=_devices(cpus=10**9)))),
        ("card: deep nesting", "c.json", '{"format": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        ("card: deep inline graph", "c.json", json.dumps(_card()).replace("}", ', "inlineGraph": ' + "[" * 50_000, 1)),
        ("card: duplicate keys", "c.json", json.dumps(_card())[:-1] + ', "graph": "sample:other"}'),
        ("card: duplicate device keys", "c.json", json.dumps(_card()).replace('"cpus": 1', '"cpus": 1, "cpus": 2')),
        ("card: path-like sample", "c.json", json.dumps(_card(graph="sample:../../etc/passwd"))),
        (
            "card: path-like graph name",
            "c.json",
            json.dumps(_card(graph="upload:" + "f" * 16, graphName="/etc/passwd")),
        ),
        ("card: path-like file name", "../../../../tmp/evil.json", json.dumps(_card(version=99))),
        ("card: rules factor 1e308", "c.json", json.dumps(_card(latencyRules=[["*", 1e308]]))),
        ("card: bandwidth 5e-324", "c.json", json.dumps(_card(devices=_devices(bandwidth=5e-324)))),
        ("card: not JSON", "c.json", b"\x89PNG\r\n\x1a\n" + bytes(range(256))),
        ("card: top-level list", "c.json", "[1, 2]"),
    ]
    graph = [
        ("graph upload: deep nesting", "g.json", "[" * 200_000),
        (
            "graph upload: NaN latency",
            "g.json",
            json.dumps(_graph()).replace('"cpuLatency": 1.0', '"cpuLatency": NaN', 1),
        ),
        ("graph upload: 1e9 accelerators", "g.json", json.dumps(_graph(maxFPGAs=10**9))),
        ("graph upload: cycle", "g.json", json.dumps(_graph(edges=[(0, 1), (1, 2), (2, 0)]))),
        ("graph upload: binary", "g.json", bytes(range(256)) * 64),
    ]
    onnx = [("onnx upload: not a model", "m.onnx", bytes(range(256)) * 16)]
    piper = [("piper upload: deep nesting", "w.json", "[" * 100_000)]
    for tag, text in HOSTILE_TEXT.items():
        hostile = _graph()
        hostile["nodes"][0]["kinds"] = [text]
        safe_name = text.replace("/", "_").replace("\x00", "")[:200]  # a browser sends no NUL in a file name
        card += [
            (f"card {tag}: file name", f"{safe_name}.json", json.dumps(_card(version=text))),
            (f"card {tag}: graph", "c.json", json.dumps(_card(graph=f"sample:{text}"))),
            (f"card {tag}: unknown field", "c.json", json.dumps(_card(**{text: 1}))),
            (f"card {tag}: inline graph kind", "c.json", json.dumps(_card(inlineGraph=hostile))),
        ]
        graph += [
            (f"graph upload {tag}: file name", f"{safe_name}.json", b"not json"),
            (f"graph upload {tag}: node kind", "g.json", json.dumps(hostile)),
            (
                f"graph upload {tag}: latencies key",
                "g.json",
                json.dumps(_graph())
                .replace('"cpuLatency"', json.dumps(text) + ': "x", "cpuLatency"', 1)
                .replace(json.dumps(text), '"latencies": {' + json.dumps(text), 1)
                .replace(': "x",', ': "x"},', 1),
            ),
        ]
        onnx.append((f"onnx upload {tag}: file name", f"{safe_name}.onnx", b"\x08\x07" + text.encode()))
        piper.append(
            (
                f"piper upload {tag}: TMPCs key",
                "w.json",
                json.dumps(_piper(nodes=[{"id": 0, "TMPCs": {text: []}}], edges=[])),
            )
        )
    cases = []
    for group, key, page, items in (
        ("card", "scenario_upload", GRAPH_PAGE, card),
        ("graph", "graph_upload", GRAPH_PAGE, graph),
        ("onnx", "mi_onnx_upload", GRAPH_PAGE, onnx),
        ("piper", "md_upload", page_file("Parallel plan"), piper),
    ):
        for position, (name, file_name, content) in enumerate(items):
            path = put(f"{group}{position}.bin", content)
            case = {"name": name, "app": {"page": page, "actions": [["upload", key, file_name, path]]}, "refused": True}
            if group == "onnx":
                case["app"]["actions"].append(["click", "mi_onnx_import"])
            if group == "piper":  # the page opens on the app's graph; the uploader is on the Piper source
                case["app"]["actions"].insert(0, ["radio", "md_source", "a Piper workload"])
            cases.append(case)
    for tag, text in HOSTILE_TEXT.items():
        actions = [["text", "lat_pattern", text[:300] + "["], ["click", "lat_add"]]
        cases.append({"name": f"pattern {tag}", "app": {"page": DEVICES_PAGE, "actions": actions}, "refused": True})
    for name, content in files.items():
        (tmp / name).write_bytes(content)
    return cases


def _cases(tmp: Path) -> list[dict]:
    baseline = {"name": "baseline: a fresh session", "app": {}, "refused": False, "link": True}
    cases = [baseline, *_link_cases(), *_upload_cases(tmp)]
    for case in cases:
        case["app"].setdefault("timeout", WALL_S - 10)
    return cases


def _names() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        return [case["name"] for case in _cases(Path(tmp))]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile-app")
    cases = _cases(tmp)
    job = {
        "cases": cases,
        "cpu_s": CPU_S,
        "wall_s": WALL_S,
        "address_space": ADDRESS_SPACE,
        "parallel": 2,
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.hostile_runner"],
        input=json.dumps(job),
        text=True,
        capture_output=True,
        cwd=ROOT,
        timeout=3600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    by_name = {case["name"]: case for case in cases}
    return {r["name"]: (by_name[r["name"]], r) for r in report["results"]}, report["base_mb"]


def test_enough_cases(outcomes):
    assert len(outcomes[0]) >= 100


def _one_line(text: str) -> bool:
    return text.isprintable() and len(text) <= MAX_LINE


@pytest.mark.parametrize("name", _names())
def test_case_gets_one_line_and_the_page_keeps_working(outcomes, name):
    results, base_mb = outcomes
    case, result = results[name]
    assert result["exit"] == 0, (result["exit"], result["stderr"][-1500:])
    assert result["wall_s"] < WALL_S and result["cpu_s"] < CPU_S
    assert result["peak_mb"] < base_mb + PEAK_MB, (result["peak_mb"], base_mb)
    shown = json.loads(result["stdout"])
    assert not shown["exceptions"] and not shown["rerun_exceptions"], shown["exceptions"] + shown["rerun_exceptions"]
    errors = shown["first_errors"] + shown["errors"] + shown["rerun_errors"]
    assert all(_one_line(line) for line in errors), [line[:300] for line in errors]
    assert not any(line.startswith("Unexpected error") for line in errors), errors
    if case.get("link"):
        default = results["baseline: a fresh session"][1]
        if case["refused"]:
            assert len(shown["first_errors"]) == 1, shown["first_errors"]
            # The default view, as a session opened without a link.
            assert shown["after"] == json.loads(default["stdout"])["after"], shown["after"]
        else:
            assert not errors, errors
    else:
        assert shown["errors"], "a refused upload or pattern shows an error"
        assert shown["after"] == shown["before"], "the previous graph, devices and multipliers are kept"
