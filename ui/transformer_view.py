"""The transformer scenario's sections on the Meeting summary, Purchase, Tradeoffs, Uncertainty, Timeline and
Plan view pages (the numbers: :mod:`placement.perf.meeting`, the same functions ``plan`` calls).

Every time-derived number shows the range of the error the measured runs justify (none when extrapolated); every
section says which model produced it, states that error (:func:`placement.perf.error_statement.error_statement`)
and lists the run's properties outside the calibration runs (:func:`calibration`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

import pandas as pd
import streamlit as st

from placement.errors import PlacementError
from placement.perf.coverage import properties
from placement.perf.hardware import ACCELERATORS, GIB
from placement.perf.launch import deepspeed_config, torchtitan_toml
from placement.perf.layout import Recompute, stage_layers
from placement.perf.meeting import MeetingAnswer, TransformerScenario, figures, format_tokens, kind_scenarios
from placement.perf.memory import memory_breakdown
from placement.perf.predict import stage_seconds
from placement.perf.search import Plan
from placement.perf.timeline import schedule_blocks
from placement.perf.trace import chrome_trace_json, microbatches_drawn
from placement.viz import perf as viz_perf
from ui import transformer

#: What-ifs of the meeting: label -> change of the scenario.
NODES_ADDED = 8

#: Key of the container that holds a page's transformer section (its element carries the CSS class
#: ``st-key-transformer_scenario``: the graph scenario's sections are the page's other elements).
SECTION_KEY = "transformer_scenario"


def _section(draw: Callable[[], None]) -> Callable[[], None]:
    """``draw`` inside the page's transformer-scenario container (:data:`SECTION_KEY`)."""

    @functools.wraps(draw)
    def drawn() -> None:
        with st.container(key=SECTION_KEY):
            draw()

    return drawn


def _table(rows: dict[str, str]) -> None:
    """Label/value rows as a markdown table (text a browser and AppTest can read)."""
    lines = ["| figure | value |", "|---|---|"] + [f"| {k} | {v.replace('|', '/')} |" for k, v in rows.items()]
    st.markdown("\n".join(lines))


def calibration(answer: MeetingAnswer, key: str) -> None:
    """The model, the error its numbers may be stated with, and the run's properties outside the calibration runs."""
    if not answer.feasible or answer.error is None:
        return
    pred = answer.result.plan.prediction  # type: ignore[union-attr]
    lines = answer.error.lines()
    st.caption(
        f"Numbers of the transformer performance model {pred.model_id}; {'; '.join(lines[:2])}. Memory is the "
        "model's own (no band: it was not calibrated on measured memory)."
    )
    if answer.outside:
        with st.expander(f"{properties(len(answer.outside))} outside the calibration runs", key=key):
            st.markdown("\n".join(f"- {item}" for item in answer.outside))


def banner(answer: MeetingAnswer, editable_here: bool = False) -> None:
    """The section's heading: the scenario in one line."""
    st.subheader("Transformer scenario")
    where = "" if editable_here else " (edit it on the Meeting summary)"
    st.markdown(f"**{answer.scenario.describe()}**{where}")
    if not answer.feasible:
        st.warning(f"No layout fits: {answer.result.reason} (proven by the exact search).")


def _launch(answer: MeetingAnswer) -> None:
    command = answer.launch_command
    if command:
        what = "torchtitan" if "torchtitan_command" in answer.configs else "torchrun running Megatron-LM"
        st.markdown(f"**Launch command** ({what}, uncut; copy with the button):")
        st.code(command, language="bash", wrap_lines=True)
    checks = answer.configs.get("checks", ())
    if not checks:
        st.caption("Not checked by the framework's own parser here (Plan view checks it).")
    for check in checks:  # a framework not installed here: "not checked", not a rejection
        (st.caption if check["ok"] or not check["checked"] else st.warning)(check["line"])


def _what_ifs(scenario: TransformerScenario) -> None:
    """Buttons that change the session's scenario (and so every page)."""
    c = st.columns(3)
    if c[0].button(f"{NODES_ADDED} more nodes", key="tf_more_nodes"):
        transformer.set_scenario(scenario.more_nodes(NODES_ADDED))
        st.rerun()
    if c[1].button("Half the network bandwidth", key="tf_half_network"):
        transformer.set_scenario(scenario.with_changes(network_factor=scenario.network_factor / 2))
        st.rerun()
    if c[2].button("Back to the meeting's question", key="tf_reset"):
        transformer.set_scenario(transformer.DEFAULT)
        st.rerun()


def _shown_plan() -> tuple[MeetingAnswer, TransformerScenario, Plan] | None:
    """The session's answer (its banner drawn), its scenario and plan; None when off or infeasible."""
    answer = transformer.answer()
    if answer is None:
        return None
    banner(answer)
    plan = answer.result.plan
    if not answer.feasible or plan is None:
        return None
    return answer, answer.scenario, plan


@_section
def meeting_section() -> None:
    """Meeting summary: the editor, the plan's numbers, launch command, memory, what-ifs."""
    scenario = transformer.editor()
    if scenario is None:
        return
    answer = transformer.answer()
    assert answer is not None  # noqa: S101 - the scenario is on
    banner(answer, editable_here=True)
    _what_ifs(scenario)
    if not answer.feasible:
        return
    _table(figures(answer))
    calibration(answer, "tf_meeting_outside")
    _launch(answer)
    _memory(answer, "tf_meeting_memory")
    st.divider()


def _memory(answer: MeetingAnswer, key: str) -> None:
    rows = {k.replace("_", " "): f"{v / GIB:.2f} GiB" for k, v in answer.memory.items()}
    st.markdown(f"**Memory of the most loaded GPU** (of {answer.capacity / GIB:.1f} GiB):")
    st.markdown("\n".join(["| part | GiB |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows.items()]))
    st.plotly_chart(viz_perf.memory_figure({answer.scenario.gpu: answer.memory}, answer.capacity), key=key)


def _options_table(answers: list[MeetingAnswer], label) -> pd.DataFrame:  # noqa: ANN001 - label: callable
    rows = []
    for a in answers:
        row = {"option": label(a), "layout": a.layout_text if a.feasible else f"none fits: {a.result.reason}"}
        if a.feasible:
            row.update(
                {
                    "s per step": round(a.step_seconds, 3),
                    "tokens/s": round(a.tokens_per_second),
                    "days per run": round(a.run_days, 1),
                    "USD per run": None if a.cost_per_run is None else round(a.cost_per_run),
                    "GiB per GPU": round(a.memory["total"] / GIB, 2),
                    "headroom GiB": round(a.headroom / GIB, 2),
                    "fits": a.fits,
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)


@_section
def purchase_section() -> None:
    """Purchase: what more nodes are worth, and GPU kinds side by side for the model and token budget."""
    answer = transformer.answer()
    if answer is None:
        return
    banner(answer)
    scenario = answer.scenario
    more = st.number_input("nodes to add", 1, 1024, NODES_ADDED, key="tf_purchase_nodes")
    options = [answer, transformer.answer_for(scenario.more_nodes(int(more)))]
    st.markdown(f"**Today against {int(more)} more nodes** ({format_tokens(scenario.tokens)} tokens per run):")
    st.dataframe(
        _options_table(options, lambda a: f"{a.scenario.gpus:,} x {a.scenario.gpu}"), hide_index=True, key="tf_more"
    )
    kinds = st.multiselect(
        "GPU kinds side by side", list(ACCELERATORS), default=["A100", "H100", "B200"], key="tf_kinds"
    )
    if kinds:
        side = [transformer.answer_for(s) for s in kind_scenarios(scenario, kinds)]
        st.markdown(f"**{scenario.gpus:,} GPUs of each kind**, {format_tokens(scenario.tokens)} tokens per run:")
        st.dataframe(_options_table(side, lambda a: a.scenario.gpu), hide_index=True, key="tf_kinds_table")
        feasible = [a for a in side if a.feasible]
        st.plotly_chart(
            viz_perf.run_figure(
                [a.scenario.gpu for a in feasible], [a.run_days for a in feasible], [a.cost_per_run for a in feasible]
            ),
            key="tf_kinds_figure",
        )
        st.caption(
            "Each kind at the catalogue's default USD price per GPU-hour (the scenario's own kind at the price typed "
            "on the Meeting summary, if one is); same GPU count, batch, tokens and network for every kind."
        )
    calibration(answer, "tf_purchase_outside")
    st.divider()


@_section
def tradeoffs_section() -> None:
    """Tradeoffs: time per step and cost per run against the GPU count (the nodes of the inventory, halved to
    doubled)."""
    answer = transformer.answer()
    if answer is None:
        return
    banner(answer)
    scenario = answer.scenario
    node = scenario.gpus_per_node
    nodes = max(1, scenario.gpus // node)
    counts = sorted({max(1, n) * node for n in (nodes // 2, (3 * nodes) // 4, nodes, nodes + NODES_ADDED, 2 * nodes)})
    answers = [transformer.answer_for(scenario.with_changes(gpus=n)) for n in counts]
    st.markdown(f"**Time and cost per run against the GPU count** ({format_tokens(scenario.tokens)} tokens):")
    st.dataframe(
        _options_table(answers, lambda a: f"{a.scenario.gpus:,} x {a.scenario.gpu}"), hide_index=True, key="tf_counts"
    )
    feasible = [a for a in answers if a.feasible]
    st.plotly_chart(
        viz_perf.run_figure(
            [f"{a.scenario.gpus:,}" for a in feasible],
            [a.run_days for a in feasible],
            [a.cost_per_run for a in feasible],
        ),
        key="tf_counts_figure",
    )
    calibration(answer, "tf_tradeoffs_outside")
    st.divider()


@_section
def uncertainty_section() -> None:
    """Uncertainty: each time-derived number's range under the calibration band, and where the band is no
    evidence (the run's properties outside the calibration runs)."""
    answer = transformer.answer()
    if answer is None:
        return
    banner(answer)
    if not answer.feasible:
        return
    band = answer.band
    rows = {}
    for name, value, inverse, unit in (
        ("time per step (s)", answer.step_seconds, False, "{:.3g}"),
        ("tokens/s", answer.tokens_per_second, True, "{:,.0f}"),
        ("days per run", answer.run_days, False, "{:,.1f}"),
        ("USD per run", answer.cost_per_run, False, "{:,.0f}"),
    ):
        if value is None:
            continue
        span = answer.banded(value, inverse)  # None where the error is extrapolated
        shown = f"band {unit.format(span[0])} to {unit.format(span[1])}" if span else "no measured range"
        rows[name] = f"{unit.format(value)} ({shown})"
    if band is None:
        headline = answer.error.headline if answer.error is not None else "no error statement"
        st.markdown(f"**Error: {headline}**: no range is carried to the numbers.")
    else:
        st.markdown(f"**Calibration band ±{band.max_abs_error:.1%}** of the step time, carried to every number:")
    _table(rows)
    calibration(answer, "tf_uncertainty_outside")
    st.divider()


@_section
def timeline_section() -> None:
    """Timeline: the plan's pipeline schedule of one step, and its Chrome/Perfetto trace download."""
    shown = _shown_plan()
    if shown is None:
        return
    answer, scenario, plan = shown
    layout = plan.layout
    try:
        m = min(microbatches_drawn(layout.pipeline, layout.microbatches, layout.virtual_stages, layout.schedule), 64)
        blocks = schedule_blocks(
            layout.schedule, stage_seconds(scenario.spec, scenario.cluster, layout), m, layout.virtual_stages
        )
        trace = chrome_trace_json(scenario.spec, plan, scenario.cluster)
    except PlacementError as exc:
        st.info(f"Schedule not drawn: {exc}")
        return
    title = f"Pipeline schedule of one step ({layout.schedule}, {m} of {layout.microbatches} micro-batches drawn)"
    st.plotly_chart(viz_perf.schedule_figure(blocks, title, layout.recompute is not Recompute.NONE), key="tf_schedule")
    st.download_button(
        "Download the transformer schedule as a Perfetto / Chrome trace (JSON)",
        data=trace,
        file_name=f"{scenario.model}_{scenario.gpus}x{scenario.gpu}_trace.json",
        mime="application/json",
        key="tf_trace_download",
    )
    st.caption(
        f"One track per pipeline rank ({layout.pipeline}); the trace holds every micro-batch up to "
        f"{microbatches_drawn(layout.pipeline, layout.microbatches, layout.virtual_stages, layout.schedule):,}. "
        f"The step of {answer.step_seconds:.3g} s also holds the data-parallel reduction and the optimizer step, "
        "not drawn."
    )
    calibration(answer, "tf_timeline_outside")
    st.divider()


@_section
def plan_view_section() -> None:
    """Plan view: the layout, layers, memory and step of every pipeline rank, the launch command and configs."""
    shown = _shown_plan()
    if shown is None:
        return
    answer, scenario, plan = shown
    st.markdown(f"**Layout**: {answer.layout_text}")
    layout = plan.layout
    steps = stage_seconds(scenario.spec, scenario.cluster, layout)
    rows = [
        {
            "rank": i,
            "layers": n,
            "GiB": round(memory_breakdown(scenario.spec, layout, stage=i).total / GIB, 2),
            "step s (one micro-batch)": round(sum(steps[i]), 4),
        }
        for i, n in enumerate(stage_layers(scenario.spec, layout))
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="tf_ranks")
    if st.toggle("Check the launch configuration with the framework's own parser", key="tf_check"):
        with st.spinner("Importing the framework's parser..."):
            answer = transformer.checked_answer(scenario)
    _launch(answer)
    c = st.columns(2)
    for col, (label, name, make, key) in zip(
        c,
        (
            ("torchtitan TOML", "torchtitan.toml", lambda: torchtitan_toml(scenario.spec, layout), "tf_dl_toml"),
            (
                "DeepSpeed JSON",
                "ds_config.json",
                lambda: json.dumps(deepspeed_config(scenario.spec, layout), indent=2),
                "tf_dl_json",
            ),
        ),
        strict=True,
    ):
        try:
            col.download_button(label, make(), name, key=key)
        except PlacementError as exc:  # the plan uses what that framework cannot run
            col.caption(f"{label}: {exc}")
    calibration(answer, "tf_plan_outside")
    st.divider()
