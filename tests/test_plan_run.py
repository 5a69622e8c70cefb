"""The meeting answer at the command line (placement/perf/plan_run.py through ``plan``), a team's own model in
``plan`` and ``predict`` (``--model CONFIG.json``, ``-- <Megatron flags>``), and the launch hand-over's words."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from placement.perf.hardware import Cluster, accelerator
from placement.perf.launch import check_megatron, megatron_command, megatron_launch, shell_text
from placement.perf.search import search
from placement.perf.transformer import MODELS
from tests.cli_helper import cli
from tests.test_perf_hf_config import MIXTRAL_8X7B, QWEN2_7B

PLAN = ["plan", "--gpu", "H100", "--gpus", "64", "--global-batch", "256"]
LLAMA8_FLAGS = shlex.split(
    "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 --group-query-attention "
    "--num-query-groups 8 --seq-length 8192 --vocab-size 128256 --swiglu --normalization RMSNorm "
    "--position-embedding-type rope --disable-bias-linear --hidden-dropout 0 --attention-dropout 0 "
    "--untie-embeddings-and-output-weights"
)


def _json(*args: object) -> dict:
    run = cli(*args)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.fixture(scope="module")
def qwen_config(tmp_path_factory):
    path = tmp_path_factory.mktemp("hf") / "Qwen2-7B" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(QWEN2_7B))
    return path


def test_plan_and_predict_take_a_config_json(qwen_config, tmp_path):
    out = _json(*PLAN, "--model", qwen_config, "--seq-length", "4096", "--json")
    assert out["model"] == "Qwen2-7B" and out["parameters"] == {"total": 7_615_616_512}
    assert out["status"] == "optimal" and "--add-qkv-bias" in out["megatron_args"]
    mixtral = tmp_path / "config.json"
    mixtral.write_text(json.dumps(MIXTRAL_8X7B))
    flags = ["--tensor-model-parallel-size", "8", "--expert-model-parallel-size", "8", "--bf16", "--seq-length", "4096"]
    pred = _json("predict", "--gpu", "H100", "--gpus", "64", "--model", mixtral, "--json", "--", *flags)
    assert pred["parameters"] == {"total": 46_702_792_704, "active": 12_879_925_248}
    text = cli("predict", "--gpu", "H100", "--gpus", "64", "--model", "mixtral-8x7b", "--", *flags).stdout
    assert "parameters 46,702,792,704 (46.70 B), 12,879,925,248 active per token (2 of 8 experts)" in text


def test_plan_model_from_megatron_flags_is_the_preset():
    """``plan -- <flags>`` plans the model the flags describe: Llama 3 8B's flags give the preset's plan."""
    by_flags = _json(*PLAN, "--json", "--", *LLAMA8_FLAGS, "--tensor-model-parallel-size", "2")
    by_name = _json(*PLAN, "--model", "llama3-8b", "--json")
    assert by_flags["parameters"]["total"] == MODELS["llama3-8b"].parameters() == 8_030_261_248
    assert by_flags["plan"]["prediction"] == by_name["plan"]["prediction"]
    # a parallel size: the flags' layout compared (H100 is outside the calibration runs: not a finding)
    assert by_flags["comparison"]["verdict"] == "not a finding (extrapolated)"
    # shape flags after -- change a given model: 16 layers instead of 32
    half = _json(*PLAN, "--model", "llama3-8b", "--json", "--", "--num-layers", "16")
    assert half["parameters"]["total"] == 8_030_261_248 - 16 * 218_112_000


def test_plan_needs_a_model():
    run = cli(*PLAN)
    assert run.returncode == 2 and "--model PRESET|CONFIG.json or Megatron shape flags" in run.stderr


def test_run_time_and_cost_with_the_catalogue_price():
    """No --price: the catalogue's USD price; cost per run = GPUs x price x run seconds / 3600."""
    out = _json(*PLAN, "--model", "llama3-8b", "--tokens", "1e12", "--json")
    price = accelerator("H100").usd_per_hour
    assert price > 0 and out["price_per_gpu_hour"] == price and out["currency"] == "USD"
    run, pred = out["run"], out["plan"]["prediction"]
    assert run["seconds"] == pytest.approx(1e12 / pred["tokens_per_second"])
    assert run["cost"] == pytest.approx(64 * price * run["seconds"] / 3600)
    assert run["iterations"] == pytest.approx(1e12 / (256 * 8192))
    text = cli(*PLAN, "--model", "llama3-8b", "--tokens", "1e12").stdout
    assert f"price: {price:g} USD per GPU-hour (catalogue default" in text
    assert f"run of 1T tokens (1,000,000,000,000): {round(run['iterations'] + 0.5):,} iterations, " in text
    assert (
        f"{run['days']:,.2f} days (extrapolated: no measured runs of this framework on this GPU)" in text
        and f"{run['cost']:,.0f} USD" in text
    )
    assert f"cost: {64 * price:,.0f} USD per hour (64 GPUs)" in text


def test_given_price_and_currency():
    text = cli(*PLAN, "--model", "llama3-8b", "--tokens", "1e12", "--price", "3", "--currency", "EUR").stdout
    assert "price: 3 EUR per GPU-hour (--price)" in text and "cost: 192 EUR per hour" in text
    # another currency without a price: the catalogue's USD prices do not apply
    text = cli(*PLAN, "--model", "llama3-8b", "--tokens", "1e12", "--currency", "EUR").stdout
    assert "price: no price in EUR (give --price)" in text and "EUR per hour" not in text
    out = _json(*PLAN, "--model", "llama3-8b", "--price", "H100=4,A100=1", "--json")
    assert out["price_per_gpu_hour"] == 4


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--price", "nan"], "--price 'nan': must be a finite number"),
        (["--price", "H100=x"], "'x' is not a number"),
        (["--price", "Z80=1"], "unknown accelerator"),
        (["--currency", ""], "--currency '': must be a label"),
        (["--tokens", "0"], "--tokens 0.0: must be"),
        (["--compare-gpus", ","], "give 1 to 16 kinds"),
        (["--compare-gpus", "H100", "--pareto"], "--compare-gpus and --pareto"),
    ],
)
def test_bad_money_flags_one_line(argv, words):
    run = cli(*PLAN, "--model", "llama3-8b", *argv)
    assert run.returncode == 2 and words in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_compare_gpus_side_by_side():
    out = _json(*PLAN, "--model", "llama3-8b", "--tokens", "1e12", "--compare-gpus", "A100,H100", "--json")
    rows = {r["gpu"]: r for r in out["compare"]}
    assert list(rows) == ["A100", "H100"]
    for kind, row in rows.items():
        alone = _json("plan", "--gpu", kind, "--gpus", "64", "--global-batch", "256", "--model", "llama3-8b",
                      "--tokens", "1e12", "--json")  # fmt: skip
        assert row["iteration_seconds"] == alone["plan"]["prediction"]["iteration_seconds"]
        assert row["run"]["cost"] == pytest.approx(alone["run"]["cost"])
        assert row["price_per_gpu_hour"] == accelerator(kind).usd_per_hour
        assert row["headroom_bytes"] == pytest.approx(row["memory_capacity"] - row["memory_bytes"]) and row["fits"]
    text = cli(*PLAN, "--model", "llama3-8b", "--tokens", "1e12", "--compare-gpus", "A100,H100").stdout
    assert "GPU kinds side by side (run of 1T" in text
    h100 = rows["H100"]
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("H100"))
    assert f"{h100['run']['days']:,.1f}" in line and f"{h100['run']['cost']:,.0f} USD" in line and "yes" in line


def test_a_count_without_layout_names_the_nearest_counts():
    """Llama 3 70B, batch 1,024 on 1,000 H100s: no layout; 992 and 1,008 have one and no count between does."""
    run = cli("plan", "--model", "llama3-70b", "--gpu", "H100", "--gpus", "1000", "--global-batch", "1024")
    assert run.returncode == 0
    assert "no layout for 1,000 GPUs; nearest counts with a layout: 992 GPUs (" in run.stdout
    assert "1,008 GPUs (" in run.stdout
    model, h100 = MODELS["llama3-70b"], accelerator("H100")
    assert search(model, Cluster(h100, 1000, 8), 1024, "megatron").plan is None  # the one count between
    assert all(search(model, Cluster(h100, n, 8), 1024, "megatron").plan is not None for n in (992, 1008))


def test_launch_command_has_its_launcher_uncut_and_copyable():
    model = MODELS["llama3-8b"]
    plan = search(model, Cluster(accelerator("H100"), 64, 8), 256, "megatron").plan
    argv = megatron_launch(model, plan.layout, 8)
    assert argv[:3] == ["torchrun", "--nproc-per-node=8", "--nnodes=8"] and "pretrain_gpt.py" in argv
    assert argv[argv.index("pretrain_gpt.py") + 1 :] == megatron_command(model, plan.layout)
    text = shell_text(argv)
    assert shlex.split(text.replace("\\\n", " ")) == argv  # the shell reads back every token ($VARS unquoted)
    assert all(len(line) <= 104 for line in text.splitlines())
    out = cli(*PLAN, "--model", "llama3-8b").stdout
    assert "Megatron-LM launch command (on every node" in out and text in out
    # a pipeline layout string with | and ( ) is quoted for the shell
    assert shlex.split(shell_text(["x", "--pipeline-model-parallel-layout", "Ett|(t)*2|tL"])) == [
        "x", "--pipeline-model-parallel-layout", "Ett|(t)*2|tL",
    ]  # fmt: skip


def test_a_framework_not_installed_is_not_checked_rather_than_rejected(monkeypatch):
    model = MODELS["llama3-8b"]
    plan = search(model, Cluster(accelerator("H100"), 64, 8), 256, "megatron").plan
    monkeypatch.setitem(sys.modules, "megatron.core.transformer", None)  # import raises ImportError
    check = check_megatron(model, plan.layout)
    assert not check.checked and not check.ok
    assert check.line() == "megatron.core.transformer.TransformerConfig: not checked (Megatron not installed)"
    out = cli(*PLAN, "--model", "llama3-8b").stdout
    assert "not checked (Megatron not installed)" in out and "REJECTED" not in out


def test_pareto_table_has_days_and_cost_per_run():
    args = ["plan", "--model", "llama3-8b", "--gpu", "A100", "--gpus", "16", "--global-batch", "64"]
    out = _json(*args, "--pareto", "--price", "2", "--tokens", "1e10", "--json")
    for p in out["pareto"]:
        seconds = 1e10 / p["prediction"]["tokens_per_second"]
        assert p["run"]["cost"] == pytest.approx(p["gpus"] * 2 * seconds / 3600)
    text = cli(*args, "--pareto", "--price", "2", "--tokens", "1e10").stdout
    assert "seconds, GiB per GPU, GPUs, days per 10B-token run, USD per run, layout" in text
    first = out["pareto"][0]
    assert f"  {first['run']['days']:,.2f}  {first['run']['cost']:,.0f}  " in text
