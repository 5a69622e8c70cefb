"""The transformer scenario and its meeting answer (placement/perf/meeting.py): the numbers are ``plan``'s."""

from __future__ import annotations

import json
import math

import pytest

from placement import cli
from placement.errors import InvalidScenarioError
from placement.perf.hardware import ACCELERATORS
from placement.perf.launch import shell_text
from placement.perf.meeting import (
    TransformerScenario,
    figures,
    format_tokens,
    kinds_side_by_side,
    meeting_answer,
    scenario_from_settings,
    scenario_settings,
)
from placement.perf.search import search
from placement.perf.transformer import MODELS

SMALL = TransformerScenario(model="llama3-8b", gpu="H100", gpus=64, global_batch=256, tokens=1e12, price_per_hour=2.0)


@pytest.fixture(scope="module")
def small():
    return meeting_answer(SMALL)


def plan_json(capsys, *args: str) -> dict:
    assert cli.main(["plan", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_answer_is_plans_json(small, capsys):
    out = plan_json(
        capsys, "--model", "llama3-8b", "--gpu", "H100", "--gpus", "64", "--global-batch", "256",
        "--price", "2", "--tokens", "1e12",
    )  # fmt: skip
    pred = out["plan"]["prediction"]
    assert small.step_seconds == pred["iteration_seconds"]
    assert small.tokens_per_second == pred["tokens_per_second"]
    assert small.memory == pred["memory"]
    assert small.cost_per_step == out["plan"]["cost_per_iteration"]
    assert small.run_seconds == out["run"]["seconds"]
    assert small.cost_per_run == out["run"]["cost"]
    assert small.launch_command == shell_text(out["megatron_launch"])
    assert list(small.outside) == pred["outside_calibration"]


def test_run_figures_follow_from_the_plan(small):
    tokens_per_step = SMALL.global_batch * SMALL.spec.seq_length
    assert small.tokens_per_second == pytest.approx(tokens_per_step / small.step_seconds)
    assert small.run_seconds == pytest.approx(SMALL.tokens / small.tokens_per_second)
    assert small.cost_per_hour == 64 * 2.0
    assert small.cost_per_run == pytest.approx(128.0 * small.run_seconds / 3600)
    assert small.steps * small.step_seconds == pytest.approx(small.run_seconds)
    assert small.headroom == pytest.approx(small.capacity - small.memory["total"])
    assert small.fits and small.headroom >= 0


def test_figures_carry_no_band_where_the_model_extrapolates(small):
    """H100 is outside the calibration runs (A100): no band is carried to any figure, the error says why.
    (A band's range on the figures: tests/test_error_statement.py.)"""
    rows = figures(small)
    assert small.band is None and small.banded(small.step_seconds) is None
    assert small.error.kind == "extrapolated" and "no measured runs" in small.error.headline
    summary = small.as_dict()
    assert summary["calibration_band"] is None and summary["error"]["kind"] == "extrapolated"
    for label in ("time per step", "tokens/s", "run of 1T tokens", "cost per run", "memory per GPU", "layout"):
        assert "(band " not in rows[label], label
    assert rows["cost per run"].startswith(f"{small.cost_per_run:,.0f} USD")
    assert "fits" in rows["memory per GPU"]


def test_without_a_typed_price_the_catalogues_is_used():
    scenario = SMALL.with_changes(price_per_hour=None, gpu="L4")
    catalogue = ACCELERATORS["L4"].usd_per_hour
    assert catalogue > 0 and scenario.price == catalogue
    assert "catalogue default" in scenario.describe()
    answer = meeting_answer(scenario)
    assert answer.cost_per_hour == 64 * catalogue
    assert answer.cost_per_run == pytest.approx(64 * catalogue * answer.run_seconds / 3600)
    assert "(typed)" in SMALL.describe()


def test_more_nodes_and_half_network_are_plans(capsys):
    base = TransformerScenario(model="llama3-8b", gpus=64, global_batch=256)
    more = base.more_nodes(8)
    assert more.gpus == 128
    half = base.with_changes(network_factor=0.5)
    assert half.cluster.inter_bytes_per_s == base.cluster.inter_bytes_per_s / 2
    out = plan_json(
        capsys, "--model", "llama3-8b", "--gpu", "H100", "--gpus", "64", "--global-batch", "256",
        "--nic-gbps", str(ACCELERATORS["H100"].nic_bytes_per_s / 2e9),
    )  # fmt: skip
    assert meeting_answer(half).step_seconds == out["plan"]["prediction"]["iteration_seconds"]
    direct = search(more.spec, more.cluster, 256, "megatron")
    assert meeting_answer(more).step_seconds == direct.plan.iteration_seconds


def test_kinds_side_by_side():
    answers = kinds_side_by_side(SMALL, ["A100", "H100", "B200"], prices={"A100": 1.0})
    assert [a.scenario.gpu for a in answers] == ["A100", "H100", "B200"]
    assert answers[0].scenario.price == 1.0 and answers[1].scenario.price == 2.0
    h100, b200 = answers[1], answers[2]
    assert b200.step_seconds < h100.step_seconds  # the faster kind
    for a in answers:
        assert a.fits and a.headroom >= 0


def test_kinds_side_by_side_is_plans_compare_gpus(capsys):
    out = plan_json(
        capsys, "--model", "llama3-8b", "--gpu", "H100", "--gpus", "64", "--global-batch", "256",
        "--tokens", "1e12", "--compare-gpus", "A100,B200",
    )  # fmt: skip
    answers = kinds_side_by_side(SMALL.with_changes(price_per_hour=None), ["A100", "B200"])
    rows = out.get("kinds") or out.get("compare") or out.get("rows")
    assert rows is not None, sorted(out)
    for answer, row in zip(answers, rows, strict=True):
        assert json.dumps(row).count(repr(answer.step_seconds)) >= 1
        assert json.dumps(row).count(repr(answer.cost_per_run)) >= 1


def test_settings_round_trip_and_defaults():
    assert scenario_from_settings(scenario_settings(SMALL)) == SMALL
    custom = SMALL.with_changes(custom=MODELS["mixtral-8x7b"].with_changes(name="team-moe"), seq_length=2048)
    back = scenario_from_settings(scenario_settings(custom))
    assert back == custom and back.custom == custom.custom and back.model == "team-moe"
    assert back.spec.seq_length == 2048 and meeting_answer(back).step_seconds == meeting_answer(custom).step_seconds
    assert scenario_from_settings({"currency": "EUR"}) is None
    default = TransformerScenario()
    assert (default.model, default.gpu, default.gpus, default.tokens) == ("llama3-70b", "H100", 1024, 15e12)
    assert format_tokens(15e12) == "15T" and format_tokens(3e11) == "300B"


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"tf_model": "gpt-9"}, "field 'model'"),
        ({"tf_gpu": "TPU9"}, "field 'gpu'"),
        ({"tf_gpus": 0}, "field 'gpus'"),
        ({"tf_gpus": 2.5}, "field 'gpus'"),
        ({"tf_tokens": math.inf}, "field 'tokens'"),
        ({"tf_tokens": -1.0}, "field 'tokens'"),
        ({"tf_price_per_hour": -3.0}, "field 'price_per_hour'"),
        ({"tf_network_factor": 0.0}, "field 'network_factor'"),
        ({"tf_framework": "jax"}, "field 'framework'"),
        ({"tf_global_batch": True}, "field 'global_batch'"),
        ({"tf_layers": 1e12}, "unknown transformer setting 'tf_layers'"),
        (
            {
                "tf_model": "x",
                "tf_spec_layers": 10**12,
                "tf_spec_hidden": 64,
                "tf_spec_heads": 1,
                "tf_spec_seq_length": 128,
                "tf_spec_vocab": 10,
            },
            "layers must be an integer",
        ),  # fmt: skip
        ({"tf_model": "x", "tf_spec_layers": 2}, "the transformer's model fields"),
        ({"tf_model": "x", "tf_spec_depth": 2}, "unknown transformer setting 'tf_spec_depth'"),
        ({"tf_model": "x", "tf_custom": "y"}, "unknown transformer setting 'tf_custom'"),
    ],
)
def test_bad_settings_one_line(settings, words):
    with pytest.raises(InvalidScenarioError) as info:
        scenario_from_settings(settings, "link")
    text = str(info.value)
    assert words in text and text.startswith("link: ") and "\n" not in text


def test_plan_prints_run_time_and_cost(capsys):
    args = ["plan", "--model", "llama3-8b", "--gpu", "H100", "--gpus", "64", "--global-batch", "256"]
    assert cli.main([*args, "--price", "2", "--tokens", "1e12"]) == 0
    text = capsys.readouterr().out
    answer = meeting_answer(SMALL)
    assert f"{answer.run_days:,.2f} days" in text and f"{answer.cost_per_run:,.0f} USD" in text
    assert cli.main([*args, "--tokens", "-5"]) == 2
    assert "--tokens" in capsys.readouterr().err
