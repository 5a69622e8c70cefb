"""AppTest: the session's transformer scenario on the Meeting summary, Purchase, Tradeoffs, Uncertainty, Timeline
and Plan view (ui/transformer.py, ui/transformer_view.py): the numbers are those of placement.perf.meeting (the
functions ``plan`` calls), the what-ifs change every page, links carry the scenario, the trace downloads."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from placement.perf.meeting import TransformerScenario, figures, meeting_answer, scenario_from_settings
from placement.scenario import scenario_from_query
from ui.navigation import page_file

from .apptest_helpers import ROOT, goto, start

pytestmark = pytest.mark.usefixtures("clear_streamlit_caches")
MEETING = page_file("Meeting summary")
PAGES = ("Meeting summary", "Plan a purchase", "Tradeoffs", "Uncertainty", "Timeline", "Plan view")
#: The meeting's question at 2.5 USD per GPU-hour (typed on the page: the catalogue may have no price).
PRICED = TransformerScenario(price_per_hour=2.5)


def text(at: AppTest) -> str:
    """Every markdown, caption and code block of the page, joined."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [c.value for c in at.code]
    return "\n".join(parts)


def priced_meeting() -> AppTest:
    at = start(MEETING)
    at.number_input(key="tf_w_price").set_value(2.5).run()
    assert not at.exception and not at.error
    return at


def test_a_fresh_meeting_shows_a_gpu_kind_tokens_per_second_and_the_launch_command():
    at = start(MEETING)
    answer = meeting_answer(TransformerScenario())
    shown = text(at)
    rows = figures(answer)
    for label in ("GPUs", "layout", "time per step", "tokens/s", "memory per GPU", "optimizer state per GPU"):
        assert f"| {label} | {rows[label]} |" in shown, label
    assert "1,024 x H100" in shown
    assert answer.cost_per_run and answer.cost_per_run > 0  # the catalogue's default price
    assert f"| cost per run | {rows['cost per run']} |" in shown and " USD" in rows["cost per run"]
    assert answer.launch_command in [c.value for c in at.code]  # uncut
    assert "outside the calibration runs" in [e.label for e in at.expander][-1] or any(
        "outside the calibration runs" in e.label for e in at.expander
    )


def test_the_same_numbers_on_every_page():
    at = priced_meeting()
    rows = figures(meeting_answer(PRICED))
    assert f"| cost per run | {rows['cost per run']} |" in text(at)
    assert f"| cost per hour | {rows['cost per hour']} |" in text(at)
    step = rows["time per step"].split(" (")[0]
    for name in PAGES[1:]:
        goto(at, page_file(name))
        assert not at.error, (name, [e.value for e in at.error])
        shown = text(at)
        assert PRICED.describe() in shown, name
        assert "perf-v1" in shown, name  # the model that produced the numbers
    goto(at, page_file("Uncertainty"))
    # H100 is outside the calibration runs: the page states the same error as predict and plan, with no band
    error = meeting_answer(PRICED).error
    assert error is not None and error.kind == "extrapolated"
    assert f"**Error: {error.headline}**" in text(at) and f"{step} (band" not in text(at)
    assert f"error: {error.headline}" in text(at)  # the section's caption (error_statement's lines)
    goto(at, page_file("Plan view"))
    assert rows["layout"] in text(at)


def test_what_ifs_change_the_scenario_of_every_page():
    at = priced_meeting()
    at.button(key="tf_more_nodes").click().run()
    more = meeting_answer(PRICED.more_nodes(8))
    assert "| GPUs | 1,088 x H100 |" in text(at)
    assert f"| time per step | {figures(more)['time per step']} |" in text(at)
    at.button(key="tf_half_network").click().run()
    half = meeting_answer(PRICED.more_nodes(8).with_changes(network_factor=0.5))
    assert f"| tokens/s | {figures(half)['tokens/s']} |" in text(at)
    goto(at, page_file("Plan view"))
    assert half.scenario.describe() in text(at)
    assert half.layout_text in text(at)


def test_a_link_carries_the_scenario_and_a_bad_one_is_refused():
    at = priced_meeting()
    at.button(key="tf_more_nodes").click().run()
    query = dict(at.query_params)
    carried = scenario_from_settings(dict(scenario_from_query(query).settings))
    assert carried == PRICED.more_nodes(8)
    other = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    for key, value in query.items():
        other.query_params[key] = value
    other.run()
    goto(other, MEETING)
    assert "| GPUs | 1,088 x H100 |" in text(other)

    settings = json.loads(query["settings"])
    settings["tf_gpus"] = 0
    bad = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    for key, value in {**query, "settings": json.dumps(settings)}.items():
        bad.query_params[key] = value
    bad.run()
    errors = [e.value for e in bad.error]
    assert any("field 'gpus'" in e and "\n" not in e for e in errors), errors


def test_timeline_downloads_the_schedule_as_a_trace():
    at = start(page_file("Timeline"))
    answer = meeting_answer(TransformerScenario())
    buttons = [b for b in at.get("download_button") if "transformer schedule" in b.proto.label]
    assert buttons
    assert len(at.get("plotly_chart")) >= 1
    assert f"{answer.step_seconds:.3g} s" in text(at)


QWEN = {
    "model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14,
    "num_hidden_layers": 24, "num_key_value_heads": 2, "vocab_size": 151936, "max_position_embeddings": 32768,
    "tie_word_embeddings": True,
}  # fmt: skip


def upload(at: AppTest, name: str, data: bytes) -> None:
    """Put a file into the config.json uploader (AppTest has no uploader API: its widget state)."""
    from streamlit.runtime.uploaded_file_manager import UploadedFile, UploadedFileRec

    rec = UploadedFileRec(file_id=name, name=name, type="application/json", data=data)
    at.session_state["tf_w_config"] = UploadedFile(rec, None)


def test_a_huggingface_config_becomes_the_scenarios_model_and_a_bad_one_is_one_line():
    from placement.perf.hf_config import spec_from_hf_config

    at = start(MEETING)
    upload(at, "qwen_config.json", b'{"model_type": "bert"}')
    at.run()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "model_type" in errors[0] and "\n" not in errors[0], errors
    assert "llama3-70b" in text(at)  # the scenario stays
    upload(at, "qwen_config.json", json.dumps(QWEN).encode())
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    spec = spec_from_hf_config(QWEN, "qwen_config.json")
    scenario = TransformerScenario(custom=spec)
    assert scenario.describe() in text(at)
    assert f"| time per step | {figures(meeting_answer(scenario))['time per step']} |" in text(at)
    carried = scenario_from_settings(dict(scenario_from_query(dict(at.query_params)).settings))
    assert carried == scenario and carried.custom == spec
