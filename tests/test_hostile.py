"""Hostile inputs to the CLI (issue 16.4): exit 2, one stderr line, no traceback, bounded time and memory.

Every case is generated here and run by ``tests/hostile_runner.py`` in a forked child under
``RLIMIT_CPU`` and ``RLIMIT_AS``; the child's own peak RSS and CPU time come from ``os.wait4``.
Nothing is timed in this process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from placement.io import MAX_FILE_BYTES

ROOT = Path(__file__).resolve().parent.parent
CPU_S = 20  # RLIMIT_CPU of each case (seconds)
WALL_S = 60  # the runner kills a case after this long
ADDRESS_SPACE = 1 << 30  # RLIMIT_AS: the runner's address space + 1 GiB
PEAK_MB = 300  # peak RSS a case may add to the runner's (after its imports)


def _node(i: int, **extra) -> dict:
    return {"id": i, "supportedOnFpga": 1, "cpuLatency": 1.0, "fpgaLatency": 0.5, "isBackwardNode": 0, **extra}


def _graph(n: int = 3, edges=None, **top) -> dict:
    edges = [(i, i + 1) for i in range(n - 1)] if edges is None else edges
    return {
        "maxFPGAs": 2,
        "maxCPUs": 1,
        "maxSizePerFPGA": 1e9,
        "nodes": [_node(i) for i in range(n)],
        "edges": [{"sourceId": a, "destId": b, "cost": 0.1} for a, b in edges],
        **top,
    }


def _text(graph: dict) -> str:
    return json.dumps(graph)


def _with_node_field(field: str, literal: str) -> str:
    """A graph whose node 0 has ``field`` set to a raw JSON literal (NaN, Infinity, huge numbers)."""
    graph = _graph()
    graph["nodes"][0][field] = "@@"
    return _text(graph).replace('"@@"', literal)


#: User text that must never break the one-line promise (issue 27.3): a newline with a line of
#: Python after it, control characters and ANSI escapes, Unicode line separators and a bidi
#: override, Markdown/HTML markup and a 10 kB name.
HOSTILE_TEXT = {
    "newline": "evil\nimport os; os.system('echo pwned')\n",
    "control": "a\x00\x07\x08\r\x1b[2J\x1b[31mred\x1b[0m\x7f",
    "separators": "line\u2028para\u2029next\x85\u202eevil",
    "markup": "<script>alert(1)</script>[x](javascript:alert(1)) **b** $x$ :red[r] ![i](http://e/i.png)",
    "10kB": "n" * 10_000,
}


def _piper(**top) -> dict:
    option = {"id": "o", "timePerSample": 1.0, "parameterSize": 1.0}
    nodes = [{"id": i, "name": f"n{i}", "TMPCs": {"1": [option]}} for i in range(2)]
    return {
        "maxDevices": 2,
        "maxMemoryPerDevice": 1e12,
        "bandwidth": 1e9,
        "mbsInBatch": 2,
        "nodes": nodes,
        "edges": [{"sourceId": 0, "destId": 1}],
        **top,
    }


#: A valid Megatron-LM launch for ``predict`` (the transformer performance model's subcommand).
MEGATRON = ["--num-layers", "2", "--hidden-size", "1024", "--num-attention-heads", "16", "--seq-length", "1024"]
MEGATRON += ["--micro-batch-size", "1", "--global-batch-size", "8"]


def _predict_cases() -> list[dict]:
    """``predict`` flags: hostile text and extreme sizes (unknown Megatron flags are ignored, by design)."""
    cases = []
    for tag, text in HOSTILE_TEXT.items():
        cases += [
            {"name": f"predict {tag}: --gpu", "argv": ["predict", "--gpu", text, "--gpus", "8", "--", *MEGATRON]},
            {"name": f"predict {tag}: --gpus", "argv": ["predict", "--gpu", "H100", "--gpus", text, "--", *MEGATRON]},
            {
                "name": f"predict {tag}: Megatron value",
                "argv": ["predict", "--gpu", "H100", "--gpus", "8", "--", *MEGATRON, "--num-layers", text],
            },
        ]
    extreme = [
        ("1e9 GPUs", ["--gpus", "1000000000", "--"]),
        ("NaN NVLink", ["--gpus", "8", "--nvlink-gbps", "nan", "--"]),
        ("1e11 layers", ["--gpus", "8", "--", "--num-layers", "100000000000"]),
        ("hidden 1e30", ["--gpus", "8", "--", "--hidden-size", "1" + "0" * 30]),
        ("batch 0", ["--gpus", "8", "--", "--global-batch-size", "0"]),
    ]
    for tag, flags in extreme:
        split = flags.index("--")
        argv = ["predict", "--gpu", "H100", *flags[:split], "--", *MEGATRON, *flags[split + 1 :]]
        cases.append({"name": f"predict: {tag}", "argv": argv})
    return cases + _layout_cases()


#: ``predict`` with pipeline size 2 (4 layers): the uneven-split and free-layout flags apply.
PIPELINED = ["predict", "--gpu", "H100", "--gpus", "8", "--", *MEGATRON, "--num-layers", "4"]
PIPELINED += ["--pipeline-model-parallel-size", "2"]


def _layout_cases() -> list[dict]:
    """Megatron-Core's ``--pipeline-model-parallel-layout`` string (placement/perf/pp_layout.py) and the uneven
    split ``--decoder-first/last-pipeline-num-layers``: hostile text, repetitions that unroll past memory, extreme
    counts and the flags' conflicts (issue 27.4: surfaces added after the corpus was written)."""
    layout = "--pipeline-model-parallel-layout"
    first, last = "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"
    cases = []
    for tag, text in HOSTILE_TEXT.items():
        for label, flag, value in [
            ("layout", layout, text),
            ("layout, inside a stage", layout, f"Ett|{text}|ttL"),
            ("first layers", first, text),
            ("last layers", last, text),
        ]:
            cases.append({"name": f"predict {tag}: {label}", "argv": [*PIPELINED, flag, value]})
    extreme = [
        ("layout repeats 1e9 characters", [layout, "(tttttttttt)*100000000"]),
        ("layout repeats 1e11 layers", [layout, "t*99999999999"]),
        ("layout count of 5000 digits", [layout, "(t)*" + "9" * 5000]),
        ("layout 2,000 repetitions", [layout, "E" + "(t)*99999|" * 2000 + "L"]),
        ("layout nested repetition", [layout, "E((t)*1000)*1000|L"]),
        ("layout 20,000 empty stages", [layout, "E" + "|" * 20_000 + "ttttL"]),
        ("layout empty", [layout, ""]),
        ("layout and uneven split together", [layout, "Ett|ttL", first, "2"]),
        ("first layers negative", [first, "-1"]),
        ("first layers 1e11", [first, "100000000000"]),
        ("last layers past the model", [last, "5"]),
        ("first and last past the model", [first, "3", last, "3"]),
        ("first layers 5000 digits", [first, "9" * 5000]),
    ]
    for tag, flags in extreme:
        cases.append({"name": f"predict: {tag}", "argv": [*PIPELINED, *flags]})
    deepspeed = ["plan", "--model", "llama3-8b", "--gpu", "H100", "--framework", "deepspeed"]
    for tag, flags in [
        ("no GPUs", ["--gpus", "0", "--global-batch", "8"]),
        ("batch 0", ["--gpus", "8", "--global-batch", "0"]),
        ("0 GPUs per node", ["--gpus", "8", "--gpus-per-node", "0", "--global-batch", "8"]),
        ("sequence 0", ["--gpus", "8", "--global-batch", "8", "--seq-length", "0"]),
        ("NaN price", ["--gpus", "8", "--global-batch", "8", "--price", "nan"]),
    ]:
        cases.append({"name": f"plan deepspeed (offload space): {tag}", "argv": [*deepspeed, *flags]})
    return cases


#: A valid ``plan`` command (the launch planner's search): each hostile case replaces one flag's value.
PLAN = {"--model": "llama3-8b", "--gpu": "H100", "--gpus": "8", "--global-batch": "8"}


def _plan_cases() -> list[dict]:
    """``plan`` flags (model preset, accelerator, mixed cluster, framework, price) fed hostile text."""
    cases = []
    for tag, text in HOSTILE_TEXT.items():
        for flag, value in [
            ("--model", text),
            ("--gpu", text),
            ("--gpu", f"{text}:2,H100:2"),
            ("--framework", text),
            ("--price", text),
            ("--seq-length", text),
        ]:
            given = {**PLAN, flag: value}
            if flag == "--gpu" and ":" in value:
                given.pop("--gpus")  # a mixed cluster names its counts
            argv = ["plan"] + [part for pair in given.items() for part in pair]
            label = f"{flag} mixed" if ":" in value and flag == "--gpu" else flag
            cases.append({"name": f"plan {tag}: {label}", "argv": argv})
    return cases


def _graph_cases(tmp: Path) -> list[dict]:
    """``graph`` (a transformer's priced graph file) fed hostile text and counts; nothing is written."""
    out = str(tmp / "graph_out.json")
    base = ["graph", "--model", "llama3-8b", "--gpu", "H100:2", "-o", out]
    cases = []
    for tag, text in HOSTILE_TEXT.items():
        for label, flag, value in [
            ("--model", "--model", text),
            ("--gpu", "--gpu", text),
            ("--gpu mixed", "--gpu", f"H100:2,{text}:2"),
            ("--gpu count", "--gpu", f"H100:{text}"),
            ("--seq-length", "--seq-length", text),
            ("--micro-batch", "--micro-batch", text),
        ]:
            cases.append({"name": f"graph {tag}: {label}", "argv": [*base, flag, value]})
    extreme = [
        ("1e12 GPUs", ["--gpu", "H100:1000000000000"]),
        ("sequence 1e30", ["--seq-length", "1" + "0" * 30]),
        ("config.json that is not there", ["--model", str(tmp / "no_config.json")]),
        ("output into a missing folder", ["-o", str(tmp / "missing" / "g.json")]),
    ]
    for tag, flags in extreme:
        cases.append({"name": f"graph: {tag}", "argv": [*base, *flags]})
    return cases


def _quote_cases(tmp: Path, files: dict[str, str | bytes]) -> list[dict]:
    """Every CLI error path that echoes user text, fed each of :data:`HOSTILE_TEXT`."""
    cases: list[dict] = []
    one = json.dumps({"fpgas": [{"nodes": [0, 1, 2]}], "cpus": []})
    files["split_one.json"] = one
    for tag, text in HOSTILE_TEXT.items():
        graph = _graph()
        graph["nodes"][0]["kinds"] = [text]
        files[f"q_{tag}_node_kind.json"] = _text(graph)
        files[f"q_{tag}_kind_name.json"] = _text(_graph(deviceKinds=[{"name": text, "count": -1}]))
        files[f"q_{tag}_kind_twice.json"] = _text(
            _graph(deviceKinds=[{"name": text, "count": 1}, {"name": text, "count": 1}])
        )
        graph = _graph()
        graph["nodes"][0]["latencies"] = {text: "fast"}
        files[f"q_{tag}_latency_key.json"] = _text(graph)
        graph = _graph()
        graph["nodes"][0]["id"] = text
        files[f"q_{tag}_string_id.json"] = _text(graph)
        graph = _graph()  # export: one module split over two stages
        for node in graph["nodes"]:
            node["module"] = text
        files[f"q_{tag}_module.json"] = _text(graph)
        files[f"q_{tag}_piper_key.json"] = _text(_piper(nodes=[{"id": 0, "TMPCs": {text: []}}], edges=[]))
        option = {"id": text, "timePerSample": 1.0}
        files[f"q_{tag}_piper_option.json"] = _text(
            _piper(nodes=[{"id": 0, "TMPCs": {"1": [option, option]}}], edges=[])
        )

        def path(name: str) -> str:
            return str(tmp / name)

        cases += [
            {"name": f"quote {tag}: solve, node kinds entry", "argv": ["solve", path(f"q_{tag}_node_kind.json")]},
            {"name": f"quote {tag}: solve, kind name", "argv": ["solve", path(f"q_{tag}_kind_name.json")]},
            {"name": f"quote {tag}: solve, kind twice", "argv": ["solve", path(f"q_{tag}_kind_twice.json")]},
            {"name": f"quote {tag}: solve, latencies key", "argv": ["solve", path(f"q_{tag}_latency_key.json")]},
            {"name": f"quote {tag}: solve, string id", "argv": ["solve", path(f"q_{tag}_string_id.json")]},
            {"name": f"quote {tag}: solve, missing file", "argv": ["solve", path(f"missing {text[:200]}.json")]},
            {
                "name": f"quote {tag}: solve, --accelerators",
                "argv": ["solve", path("good.json"), "--accelerators", text],
            },
            {"name": f"quote {tag}: solve, --memory", "argv": ["solve", path("good.json"), "--memory", text]},
            {"name": f"quote {tag}: solve, --method", "argv": ["solve", path("good.json"), "--method", text]},
            {"name": f"quote {tag}: solve, extra argument", "argv": ["solve", path("good.json"), text]},
            {
                "name": f"quote {tag}: evaluate, kind name",
                "argv": ["evaluate", path(f"q_{tag}_kind_name.json"), path("split_one.json")],
            },
            {
                "name": f"quote {tag}: export, --to",
                "argv": ["export", path("split_one.json"), "--graph", path("good.json"), "--to", text],
            },
            {
                "name": f"quote {tag}: export, --schedule",
                "argv": ["export", path("split_one.json"), "--graph", path("good.json"), "--to", "torch"]
                + ["--schedule", text],
            },
            {
                "name": f"quote {tag}: export, module split over stages",
                "argv": ["export", path("split_repeated_ok.json"), "--graph", path(f"q_{tag}_module.json")]
                + ["--to", "torch"],
            },
            {
                "name": f"quote {tag}: multidim, TMPCs key",
                "argv": ["solve", path(f"q_{tag}_piper_key.json"), "--method", "multidim"],
            },
            {
                "name": f"quote {tag}: multidim, option id twice",
                "argv": ["solve", path(f"q_{tag}_piper_option.json"), "--method", "multidim"],
            },
        ]
        if "\x00" not in text and len(text) < 200:  # a file name may hold anything but NUL and '/'
            name = f"q_{tag}_{text.replace('/', '_')}.json"
            files[name] = "not json"
            cases.append({"name": f"quote {tag}: solve, file name", "argv": ["solve", path(name)]})
    cases += _predict_cases() + _plan_cases() + _graph_cases(tmp)
    for tag, text in HOSTILE_TEXT.items():  # the work caps of issue 27.2
        for flag in ("--max-work", "--max-ip-size"):
            argv = ["solve", str(tmp / "good.json"), flag, text]
            cases.append({"name": f"quote {tag}: solve, {flag}", "argv": argv})
    files["split_repeated_ok.json"] = json.dumps({"fpgas": [{"nodes": [0]}, {"nodes": [1, 2]}], "cpus": []})
    return cases


#: Limits of the planner-work cases (issue 27.2): refused (or solved) within this much CPU time and
#: this peak RSS of the child (MB, the runner's imported modules included).
WORK_CPU_S, WORK_PEAK_MB = 5, 500


def _piper_dag(n: int, edges) -> dict:
    option = {"id": "o", "timePerSample": 1.0, "parameterSize": 1.0}
    nodes = [{"id": i, "name": f"n{i}", "TMPCs": {"1": [option]}} for i in range(n)]
    return _piper(nodes=nodes, edges=[{"sourceId": a, "destId": b, "communicationCost": 1.0} for a, b in edges])


def _work_cases(tmp: Path, files: dict[str, Any]) -> list[dict]:
    """Shapes whose multidim lattice is past the caps (dense DAGs, a long chain, a wide antichain), and
    ``--deadline``: each refused in one line within :data:`WORK_CPU_S` and :data:`WORK_PEAK_MB`."""

    def dense(n: int) -> list[tuple[int, int]]:
        return [(a, b) for a in range(n) for b in range(a + 1, n)]  # n (n - 1) / 2 edges

    layers = [(a, b) for a in range(600) for b in range(a + 20 - a % 20, a + 40 - a % 20) if b < 600]
    built: dict[str, Callable[[], str]] = {  # built when the corpus runs, not when it is collected
        "w_dense600.json": lambda: _text(_graph(600, edges=dense(600))),
        "w_dense600_piper.json": lambda: _text(_piper_dag(600, dense(600))),
        "w_dense400.json": lambda: _text(_graph(400, edges=dense(400))),
        "w_layers600.json": lambda: _text(_graph(600, edges=layers)),  # 30 layers of 20, all edges between
        "w_chain20k.json": lambda: _text(_graph(20_000)),
        "w_antichain50k_piper.json": lambda: _text(_piper_dag(50_000, [])),
        "w_chain300.json": lambda: _text(_graph(300)),
        "w_chain5000.json": lambda: _text(_graph(5000)),
        "w_antichain400.json": lambda: _text(_graph(400, edges=[])),
    }
    files.update(built)
    limits = {"cpu_s": WORK_CPU_S, "wall_s": 60, "peak_mb": WORK_PEAK_MB}
    not_multidim = {"w_chain300.json", "w_chain5000.json", "w_antichain400.json"}
    cases = [
        {"name": f"multidim {name[2:-5]}", "argv": ["solve", str(tmp / name), "--method", "multidim"], **limits}
        for name in files
        if name.startswith("w_") and name not in not_multidim
    ]
    cases += _planner_cases(tmp, limits)
    chain = str(tmp / "w_chain300.json")
    cases += [
        {
            # The multidim solve of chain300 takes about 0.6 s of a 1 s process here: a 0.2 s deadline stops it.
            "name": "deadline 0.2 s: multidim chain300",
            "argv": ["--deadline", "0.2", "solve", chain, "--method", "multidim"],
            **limits,
        },
        {
            "name": "deadline after the subcommand",
            "argv": ["solve", chain, "--method", "multidim", "--deadline", "0.2"],
            **limits,
        },
        {"name": "deadline NaN", "argv": ["--deadline", "nan", "solve", chain]},
        {"name": "deadline negative", "argv": ["--deadline", "-1", "solve", chain]},
        {
            "name": "deadline 1e400 (none), missing file",
            "argv": ["--deadline", "1e400", "solve", str(tmp / "missing.json")],
        },
    ]
    return cases


#: The planners other than multidim (issue 27.2) whose work grows with the square of the graph (or more):
#: each refused by its estimate in one line on a dense 600-node DAG and a 5,000-node chain.
ESTIMATED_METHODS = ("dp", "memory-aware", "pipedream", "ip", "ip-noncontiguous", "memory-aware-ip", "latency-ip")
ESTIMATED_METHODS += ("local-search",)

#: Limits of a planner case that answers (exit 0) within its --time-limit: CPU seconds (HiGHS may use
#: two threads), peak RSS (MB, the runner's imports included).
ANSWER_CPU_S, ANSWER_PEAK_MB = 15, 500


def _planner_cases(tmp: Path, limits: dict) -> list[dict]:
    """dp, memory-aware, pipedream, the integer programs and local search on a dense 600-node DAG, a
    5,000-node chain and a 400-node antichain: refused in one line, or answered within the time limit."""
    cases = []
    for name in ("w_dense600.json", "w_chain5000.json"):
        for method in ESTIMATED_METHODS:
            argv = ["solve", str(tmp / name), "--method", method]
            cases.append({"name": f"estimate {method} {name[2:-5]}", "argv": argv, **limits})
    antichain = str(tmp / "w_antichain400.json")
    for method in ("dp", "memory-aware"):  # 2^400 ideals: the ideal count's cap
        cases.append({"name": f"estimate {method} antichain400", "argv": ["solve", antichain, "--method", method]})
    answers = {"cpu_s": ANSWER_CPU_S, "wall_s": 60, "peak_mb": ANSWER_PEAK_MB, "answers": True}
    for method, flags in [
        ("pipedream", []),
        ("ip", ["--time-limit", "2"]),
        ("latency-ip", ["--time-limit", "2"]),
        ("local-search", ["--time-limit", "2"]),
        ("greedy-latency", []),
    ]:
        argv = ["solve", antichain, "--method", method, *flags]
        cases.append({"name": f"answers {method} antichain400", "argv": argv, **answers})
    chain = str(tmp / "w_chain5000.json")
    for method, flags in [
        ("greedy-latency", []),
        ("one-accelerator", []),
        ("ip", ["--no-warm-start", "--time-limit", "2"]),
    ]:
        argv = ["solve", chain, "--method", method, *flags]
        cases.append({"name": f"answers {method} chain5000", "argv": argv, **answers})
    return cases


#: A valid HuggingFace config.json (Llama 3 8B's shape): each hostile model config changes one field.
HF_CONFIG = {
    "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
}  # fmt: skip


def hostile_model_configs() -> dict[str, str | bytes]:
    """Bad HuggingFace ``config.json`` files (``--model CONFIG.json``, :mod:`placement.perf.hf_config`) by file name:
    unknown ``model_type``, missing and wrongly typed fields, absurd sizes, NaN, a list, deep nesting, over 1 MB,
    and hostile text as the model type and as a field's value."""

    def changed(**fields: object) -> str:
        return json.dumps({k: v for k, v in {**HF_CONFIG, **fields}.items() if v is not None})

    out: dict[str, str | bytes] = {
        "m_unknown_type.json": changed(model_type="bert"),
        "m_no_type.json": changed(model_type=None),
        "m_missing_layers.json": changed(num_hidden_layers=None),
        "m_string_hidden.json": changed(hidden_size="4096"),
        "m_float_layers.json": changed(num_hidden_layers=32.5),
        "m_bool_heads.json": changed(num_attention_heads=True),
        "m_1e12_layers.json": changed(num_hidden_layers=10**12),
        "m_5000_digit_vocab.json": changed(vocab_size=7).replace('"vocab_size": 7', '"vocab_size": ' + "9" * 5000),
        "m_nan_hidden.json": changed(hidden_size=0).replace('"hidden_size": 0', '"hidden_size": NaN'),
        "m_negative_ffn.json": changed(intermediate_size=-1),
        "m_kv_not_dividing.json": changed(num_key_value_heads=5),
        "m_experts_1e12.json": changed(model_type="mixtral", num_local_experts=10**12),
        "m_topk_past_experts.json": changed(model_type="mixtral", num_local_experts=2, num_experts_per_tok=3),
        "m_list.json": "[1, 2, 3]",
        "m_deep.json": '{"a":' * 100_000 + "1" + "}" * 100_000,
        "m_2MB.json": changed(padding="x" * 2_000_000),
        "m_binary.json": bytes(range(256)) * 64,
    }
    for tag, text in HOSTILE_TEXT.items():
        out[f"m_{tag}_type.json"] = changed(model_type=text)
        out[f"m_{tag}_value.json"] = changed(hidden_size=text)
    return out


#: ``predict --framework torchtitan`` on 8 GPUs (torchtitan 0.2.2's own flags after --).
TITAN = ["predict", "--gpu", "H100", "--gpus", "8", "--framework", "torchtitan"]
TITAN_JOB = ["--model.flavor", "8B", "--training.seq_len", "1024", "--training.local_batch_size", "1"]


def _torchtitan_cases(tmp: Path, files: dict[str, Any]) -> list[dict]:
    """torchtitan's job description (issue 44.2): unknown flags, contradictory degrees, a batch that does not
    divide, hostile values, and job config TOMLs that are broken, mistyped, NaN, huge, 50 MB, a pipe, a directory."""
    flags = [
        ("unknown flag", ["--parallelism.bogus_degree", "2"]),
        ("unknown section", ["--bogus.tensor_parallel_degree", "2"]),
        ("degrees past the GPUs", ["--parallelism.data_parallel_shard_degree", "4", "--parallelism.tensor_parallel_degree", "4"]),
        ("degrees not dividing the GPUs", ["--parallelism.tensor_parallel_degree", "3"]),
        ("replicas not dividing the GPUs", ["--parallelism.data_parallel_replicate_degree", "3"]),
        ("local batch not dividing", ["--training.global_batch_size", "12"]),
        ("micro-batch not dividing", ["--parallelism.pipeline_parallel_degree", "2", "--training.local_batch_size", "3",
                                      "--parallelism.pipeline_parallel_microbatch_size", "2"]),
        ("unknown schedule", ["--parallelism.pipeline_parallel_degree", "2", "--parallelism.pipeline_parallel_schedule", "DualPipeV"]),
        ("unknown flavor", ["--model.flavor", "3B"]),
        ("degree 1e30", ["--parallelism.tensor_parallel_degree", "1" + "0" * 30]),
        ("degree of 5000 digits", ["--parallelism.tensor_parallel_degree", "9" * 5000]),
        ("negative degree", ["--parallelism.tensor_parallel_degree", "-8"]),
        ("selective option of 5000 digits", ["--activation_checkpoint.selective_ac_option", "9" * 5000]),
        ("memory budget mode", ["--activation_checkpoint.mode", "memory_budget"]),
        ("bare value", ["8"]),
    ]  # fmt: skip
    cases = [{"name": f"predict torchtitan: {tag}", "argv": [*TITAN, "--", *TITAN_JOB, *extra]} for tag, extra in flags]
    for tag, text in HOSTILE_TEXT.items():
        cases.append(
            {"name": f"predict torchtitan {tag}: flag name", "argv": [*TITAN, "--", *TITAN_JOB, "--" + text, "1"]}
        )
        cases.append(
            {
                "name": f"predict torchtitan {tag}: degree",
                "argv": [*TITAN, "--", *TITAN_JOB, "--parallelism.tensor_parallel_degree", text],
            }
        )
        cases.append({"name": f"predict torchtitan {tag}: flavor", "argv": [*TITAN, "--", "--model.flavor", text]})
    good = '[model]\nflavor = "8B"\n[training]\nseq_len = 1024\nlocal_batch_size = 1\n'
    configs = {
        "t_syntax.toml": "[model\nflavor = 8B",
        "t_type.toml": good + '[parallelism]\ntensor_parallel_degree = "two"\n',
        "t_bool_degree.toml": good + "[parallelism]\ntensor_parallel_degree = true\n",
        "t_nan.toml": good + "[parallelism]\ntensor_parallel_degree = nan\n",
        "t_float.toml": good + "[parallelism]\ntensor_parallel_degree = 2.0\n",
        "t_huge.toml": good + "[parallelism]\ntensor_parallel_degree = 9223372036854775807\n",
        "t_unknown_field.toml": good + "[parallelism]\nbogus = 1\n",
        "t_unknown_section.toml": good + "[bogus]\nx = 1\n",
        "t_top_level_key.toml": "x = 1\n" + good,
        "t_contradiction.toml": good + "[parallelism]\ndata_parallel_shard_degree = 8\ntensor_parallel_degree = 2\n",
        "t_binary.toml": bytes(range(256)) * 64,
        "t_deep.toml": "[model]\nconverters = " + "[" * 100_000 + "]" * 100_000 + "\n",
        "t_2MB.toml": good + "# " + "x" * 2_000_000 + "\n",
    }
    files.update(configs)
    paths = {name: str(tmp / name) for name in configs}
    paths.update({"50 MB": str(tmp / "over_cap.json"), "pipe": str(tmp / "fifo.json"), "directory": str(tmp / "a_directory.json"),
                  "missing": str(tmp / "missing.toml")})  # fmt: skip
    for name, path in paths.items():
        cases.append({"name": f"predict torchtitan --config {name}", "argv": [*TITAN, "--config", path]})
    return cases


def _model_config_cases(tmp: Path, files: dict[str, Any]) -> list[dict]:
    """``predict --model`` and ``plan --model`` on each of :func:`hostile_model_configs`, a 50 MB file, a pipe, a
    directory and hostile text as the argument itself."""
    configs = hostile_model_configs()
    files.update(configs)
    paths = {name: str(tmp / name) for name in configs}
    paths.update({"50 MB": str(tmp / "over_cap.json"), "pipe": str(tmp / "fifo.json"), "directory": str(tmp / "a_directory.json")})  # fmt: skip
    paths.update({f"argument {tag}": text for tag, text in HOSTILE_TEXT.items()})
    cases = _torchtitan_cases(tmp, files)
    for name, path in paths.items():
        predict = ["predict", "--gpu", "H100", "--gpus", "8", "--model", path, "--", "--bf16"]
        plan = ["plan", "--model", path, "--gpu", "H100", "--gpus", "8", "--global-batch", "8"]
        cases += [{"name": f"predict --model {name}", "argv": predict}, {"name": f"plan --model {name}", "argv": plan}]
    return cases


def _write(tmp: Path, files: dict) -> None:
    for name, content in files.items():
        content = content() if callable(content) else content  # the large work cases: built only when run
        (tmp / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    with open(tmp / "over_cap.json", "wb") as handle:  # sparse: over the cap without using the disk
        handle.truncate(MAX_FILE_BYTES + 1)
    os.mkfifo(tmp / "fifo.json")
    (tmp / "a_directory.json").mkdir()


def _build_cases(tmp: Path, write: bool = True) -> list[dict]:
    files: dict[str, Any] = {}
    good = _text(_graph())
    files["good.json"] = good
    files["antichain1k.json"] = _text(_graph(1000, edges=[]))
    files["antichain50k.json"] = _text(_graph(50_000, edges=[]))
    files["star2k.json"] = _text(_graph(2001, edges=[(0, i) for i in range(1, 2001)]))
    files["empty.json"] = ""
    files["deep_lists.json"] = "[" * 200_000 + "]" * 200_000
    files["deep_objects.json"] = '{"a":' * 100_000 + "1" + "}" * 100_000
    files["bom.json"] = b"\xef\xbb\xbf" + good.encode()
    files["latin1.json"] = good.replace("maxCPUs", "maxCPU\xe9").encode("latin-1")
    files["binary.json"] = bytes(range(256)) * 64
    files["digits5000.json"] = good.replace('"maxFPGAs": 2', '"maxFPGAs": ' + "9" * 5000)
    files["hugeint_latency.json"] = _with_node_field("cpuLatency", "1" + "0" * 400)
    files["hugeint_size.json"] = _with_node_field("size", "1" + "0" * 4000)
    files["hugeint_id.json"] = good.replace('"id": 0', '"id": 1' + "0" * 400).replace(
        '"sourceId": 0', '"sourceId": 1' + "0" * 400
    )
    files["nan_latency.json"] = _with_node_field("cpuLatency", "NaN")
    files["inf_latency.json"] = _with_node_field("fpgaLatency", "Infinity")
    files["neg_inf_size.json"] = _with_node_field("size", "-Infinity")
    files["nan_count.json"] = good.replace('"maxFPGAs": 2', '"maxFPGAs": NaN')
    files["inf_memory_string.json"] = good.replace('"maxSizePerFPGA": 1000000000.0', '"maxSizePerFPGA": "lots"')
    files["fpgas_1e9.json"] = good.replace('"maxFPGAs": 2', '"maxFPGAs": 1e9')
    files["cpus_1e9.json"] = good.replace('"maxCPUs": 1', '"maxCPUs": 1000000000')
    files["fpgas_negative.json"] = good.replace('"maxFPGAs": 2', '"maxFPGAs": -1')
    files["kinds_count_1e9.json"] = _text(_graph(deviceKinds=[{"name": "H100", "count": 10**9, "memory": 8e10}]))
    files["kinds_named_cpu.json"] = _text(_graph(deviceKinds=[{"name": "cpu", "count": 1}]))
    graph = _graph()
    graph["edges"].append(dict(graph["edges"][0]))
    files["duplicate_edge.json"] = _text(graph)
    files["self_loop.json"] = _text(_graph(edges=[(0, 1), (1, 1)]))
    files["cycle.json"] = _text(_graph(edges=[(0, 1), (1, 2), (2, 0)]))
    files["unknown_endpoint.json"] = _text(_graph(edges=[(0, 1), (1, 99)]))
    graph = _graph()
    graph["nodes"][1]["id"] = 0
    files["duplicate_id.json"] = _text(graph)
    graph = _graph()
    graph["nodes"][0]["kinds"] = ["TPU-that-does-not-exist"]
    files["kinds_naming_nothing.json"] = _text(graph)
    graph = _graph()
    graph["nodes"][0]["kinds"] = [7]
    files["kinds_not_names.json"] = _text(graph)
    files["top_level_list.json"] = "[1, 2, 3]"
    files["nodes_not_list.json"] = _text({**_graph(), "nodes": {"0": 1}})
    graph = _graph()
    graph["nodes"][0]["id"] = "zero"
    files["string_id.json"] = _text(graph)
    graph = _graph()
    graph["nodes"][0]["isBackwardNode"] = 1
    files["backward_to_forward.json"] = _text(graph)
    files["split_unknown.json"] = json.dumps({"fpgas": [{"nodes": [0, 1, 2, 99]}], "cpus": []})
    files["split_repeated.json"] = json.dumps({"fpgas": [{"nodes": [0, 1]}, {"nodes": [1, 2]}], "cpus": []})
    files["split_deep.json"] = "[" * 200_000
    files["split_not_nodes.json"] = json.dumps({"fpgas": [{"nodes": "all"}]})
    quoted = _quote_cases(tmp, files) + _work_cases(tmp, files) + _model_config_cases(tmp, files)
    if write:
        _write(tmp, files)

    def path(name: str) -> str:
        return str(tmp / name)

    cases = [
        {"name": f"solve {name}", "argv": ["solve", path(name)]}
        for name in files
        if not name.startswith(("split_", "good", "q_", "w_", "m_"))
    ]
    cases += [
        {"name": "solve over 50 MiB", "argv": ["solve", path("over_cap.json")]},
        {"name": "solve named pipe", "argv": ["solve", path("fifo.json")]},
        {"name": "solve /dev/zero", "argv": ["solve", "/dev/zero"]},
        {"name": "solve directory", "argv": ["solve", path("a_directory.json")]},
        {"name": "solve missing file", "argv": ["solve", path("missing.json")]},
        {
            "name": "star 2k compare-free refusal (ip-free methods)",
            "argv": ["solve", path("star2k.json"), "--method", "memory-aware"],
        },
        {
            "name": "one-accelerator 1e9 accelerators",
            "argv": ["solve", path("good.json"), "--method", "one-accelerator", "--accelerators", "1000000000"],
        },
        {
            "name": "pipedream 1e9 cpus",
            "argv": ["solve", path("good.json"), "--method", "pipedream", "--cpus", "1000000000"],
        },
        {
            "name": "latency-ip 1e9 subgraphs",
            "argv": ["solve", path("good.json"), "--method", "latency-ip", "--subgraphs-per-accelerator", "1000000000"],
        },
        {
            "name": "latency-ip too many calls",
            "argv": [
                "solve",
                path("antichain1k.json"),
                "--method",
                "latency-ip",
                "--accelerators",
                "256",
                "--subgraphs-per-accelerator",
                "64",
            ],
        },
        {"name": "negative accelerators", "argv": ["solve", path("good.json"), "--accelerators", "-1"]},
        {"name": "NaN memory option", "argv": ["solve", path("good.json"), "--memory", "nan"]},
        {"name": "huge accelerators option", "argv": ["solve", path("good.json"), "--accelerators", "9" * 5000]},
        {"name": "unknown method", "argv": ["solve", path("good.json"), "--method", "rm -rf"]},
        {
            "name": "evaluate split naming unknown node",
            "argv": ["evaluate", path("good.json"), path("split_unknown.json")],
        },
        {
            "name": "evaluate split repeating a node",
            "argv": ["evaluate", path("good.json"), path("split_repeated.json")],
        },
        {"name": "evaluate deeply nested split", "argv": ["evaluate", path("good.json"), path("split_deep.json")]},
        {
            "name": "evaluate split with bad nodes",
            "argv": ["evaluate", path("good.json"), path("split_not_nodes.json")],
        },
        {"name": "evaluate split from /dev/zero", "argv": ["evaluate", path("good.json"), "/dev/zero"]},
        {"name": "evaluate split from a pipe", "argv": ["evaluate", path("good.json"), path("fifo.json")]},
    ]
    return cases + quoted


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    cases = _build_cases(tmp)
    job = {
        "cases": cases,
        "cpu_s": CPU_S,
        "wall_s": WALL_S,
        "address_space": ADDRESS_SPACE,
        "parallel": max(2, min(4, os.cpu_count() or 2)),
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.hostile_runner"],
        input=json.dumps(job),
        text=True,
        capture_output=True,
        cwd=ROOT,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    return {r["name"]: r for r in report["results"]}, report["base_mb"]


def test_enough_cases(outcomes):
    assert len(outcomes[0]) >= 120


def _cases_by_name() -> dict[str, dict]:
    # The cases with their limits, without keeping the files (for parametrisation).
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return {case["name"]: case for case in _build_cases(Path(tmp), write=False)}


_CASES = _cases_by_name()


@pytest.mark.parametrize("name", list(_CASES))
def test_case_is_refused_in_one_line_within_limits(outcomes, name):
    results, base_mb = outcomes
    result = results[name]
    lines = result["stderr"].splitlines()
    assert "Traceback" not in result["stderr"], result["stderr"][-1500:]
    case = _CASES[name]
    if case.get("answers") and result["exit"] == 0:  # a planner that answers within its limits
        assert not lines and "status:" in result["stdout"], (lines[:5], result["stdout"][:300])
    else:
        assert result["exit"] == 2, (result["exit"], result["stderr"][-500:])
        assert len(lines) == 1, lines[:5]
        assert lines[0].isprintable() and len(lines[0]) <= 1100, lines[0][:300]  # escaped, capped user text
    assert result["wall_s"] < case.get("wall_s", WALL_S) and result["cpu_s"] < case.get("cpu_s", CPU_S)
    if "peak_mb" in case:  # an absolute cap (issue 27.2: under 500 MB)
        assert result["peak_mb"] < case["peak_mb"], (result["peak_mb"], base_mb)
    assert result["peak_mb"] < base_mb + PEAK_MB, (result["peak_mb"], base_mb)
