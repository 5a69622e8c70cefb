"""The session's transformer scenario: one model on one inventory of catalogue GPUs, behind every page.

The scenario (:class:`placement.perf.meeting.TransformerScenario`) lives in the session; a fresh session opens on
Llama 3 70B on 1,024 H100 with a 15T-token run. The Meeting summary edits it (:func:`editor`, what-ifs "more
nodes" and "half the network bandwidth"); the Meeting summary, Purchase, Tradeoffs, Uncertainty, Timeline and
Plan view show its launchable plan (:mod:`ui.transformer_view`). Shared links and scenario cards carry it as
``tf_*`` settings (:func:`settings`, :func:`apply_settings`).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from placement.errors import InvalidModelSpecError, InvalidScenarioError, PlacementError
from placement.io import parse_json
from placement.perf.hardware import ACCELERATORS
from placement.perf.hf_config import FAMILIES, MAX_CONFIG_BYTES, spec_from_hf_config
from placement.perf.meeting import (
    MeetingAnswer,
    TransformerScenario,
    meeting_answer,
    scenario_from_settings,
    scenario_settings,
)
from placement.perf.spaces import SPACES
from placement.perf.transformer import MODELS
from ui.widgets import PERSIST

_SCENARIO = "_ui_tf_scenario"
_SHOWN = "_ui_tf_shown"
#: A fresh session's scenario: the meeting's question (issue 39).
DEFAULT = TransformerScenario(model="llama3-70b", gpu="H100", gpus=1024, global_batch=1024, tokens=15e12)
#: Editor widgets: key -> scenario field.
WIDGETS = {
    "tf_w_model": "model",
    "tf_w_seq": "seq_length",
    "tf_w_batch": "global_batch",
    "tf_w_tokens": "tokens",
    "tf_w_gpu": "gpu",
    "tf_w_gpus": "gpus",
    "tf_w_per_node": "gpus_per_node",
    "tf_w_price": "price_per_hour",
    "tf_w_network": "network_factor",
    "tf_w_framework": "framework",
}


def current() -> TransformerScenario | None:
    """The session's transformer scenario (None when the user turned it off)."""
    if not st.session_state.get(_SHOWN, True):
        return None
    return st.session_state.get(_SCENARIO, DEFAULT)


def set_scenario(scenario: TransformerScenario | None) -> None:
    """Make ``scenario`` the session's (None: turn it off); the editor's widgets follow."""
    st.session_state[_SHOWN] = scenario is not None
    if scenario is not None:
        st.session_state[_SCENARIO] = scenario
    for key in WIDGETS:
        st.session_state.pop(key, None)


@st.cache_data(show_spinner=False, max_entries=32)
def answer_for(scenario: TransformerScenario) -> MeetingAnswer:
    """:func:`placement.perf.meeting.meeting_answer`, cached per scenario (the same for every page)."""
    return meeting_answer(scenario)


@st.cache_data(show_spinner=False, max_entries=8)
def checked_answer(scenario: TransformerScenario) -> MeetingAnswer:
    """The answer with the framework's own parser's verdict on the launch configuration (seconds: an import)."""
    return meeting_answer(scenario, check=True)


def answer() -> MeetingAnswer | None:
    """The session scenario's answer (None when off)."""
    scenario = current()
    if scenario is None:
        return None
    with st.spinner("Searching the launchable layouts..."):
        return answer_for(scenario)


def settings() -> dict[str, Any]:
    """The scenario as settings of a shared link or card (empty when off)."""
    scenario = current()
    return {} if scenario is None else scenario_settings(scenario)


def read_settings(values: dict[str, Any], source: str) -> TransformerScenario | None:
    """The scenario a link or card carries (None: none); one-line :class:`InvalidScenarioError` otherwise."""
    return scenario_from_settings(values, source)


def apply_settings(scenario: TransformerScenario | None) -> None:
    """Apply what :func:`read_settings` returned (a link without one keeps the session's)."""
    if scenario is not None:
        set_scenario(scenario)


def _widget_values(scenario: TransformerScenario) -> dict[str, Any]:
    values = {key: getattr(scenario, name) for key, name in WIDGETS.items()}
    if scenario.custom is not None:  # the preset box (disabled) shows the fresh scenario's preset
        values["tf_w_model"] = DEFAULT.model
    values["tf_w_seq"] = scenario.spec.seq_length
    values["tf_w_tokens"] = scenario.tokens / 1e9
    return values


def _from_widgets(scenario: TransformerScenario) -> TransformerScenario:
    ss = st.session_state
    changes: dict[str, Any] = {name: ss[key] for key, name in WIDGETS.items() if key in ss}
    if scenario.custom is not None:  # the model is the uploaded config's (the preset box is disabled)
        changes.pop("model", None)
    if "tokens" in changes:
        changes["tokens"] = float(changes["tokens"]) * 1e9
    if changes.get("model") != scenario.model and changes.get("seq_length") == scenario.spec.seq_length:
        changes["seq_length"] = None  # a new model at its own sequence length
    return scenario.with_changes(**changes)


def _config_upload(scenario: TransformerScenario) -> None:
    """A HuggingFace ``config.json`` as the scenario's model (one line for a bad file; the scenario stays)."""
    ss = st.session_state
    if scenario.custom is not None:
        st.caption(f"Model: {scenario.model}, from an uploaded config.json ({scenario.spec.layers} layers).")
        if st.button("Use a preset instead", key="tf_w_preset"):
            set_scenario(scenario.with_changes(custom=None, model=DEFAULT.model, seq_length=None))
            st.rerun()
    uploaded = st.file_uploader(
        f"or a HuggingFace config.json ({', '.join(FAMILIES)}; at most {MAX_CONFIG_BYTES // 1000:,} kB)",
        type=["json"],
        key="tf_w_config",
        max_upload_size=max(1, MAX_CONFIG_BYTES // 2**20),
    )
    if uploaded is None:
        return
    seen = (uploaded.file_id, uploaded.name, uploaded.size)
    if ss.get("_ui_tf_config_seen") == seen:
        error = ss.get("_ui_tf_config_error")
        if error:
            st.error(f"{error} — the scenario's model stays.")
        return
    ss["_ui_tf_config_seen"], ss["_ui_tf_config_error"] = seen, None
    try:
        if uploaded.size > MAX_CONFIG_BYTES:
            raise InvalidModelSpecError(
                f"{uploaded.name}: file is {uploaded.size:,} bytes, over the {MAX_CONFIG_BYTES:,}-byte limit"
            )
        data = parse_json(uploaded.getvalue(), uploaded.name, InvalidModelSpecError)
        spec = spec_from_hf_config(data, uploaded.name)
        new = scenario.with_changes(custom=spec, seq_length=None)
    except PlacementError as exc:
        ss["_ui_tf_config_error"] = str(exc).splitlines()[0]
        st.error(f"{ss['_ui_tf_config_error']} — the scenario's model stays.")
        return
    set_scenario(new)
    st.rerun()


def editor() -> TransformerScenario | None:
    """The scenario's inputs (Meeting summary); returns the scenario in force (None when off)."""
    ss = st.session_state
    on = st.toggle(
        "Transformer scenario on every page",
        value=bool(ss.get(_SHOWN, True)),
        key="tf_w_on",
        help="A transformer training run on catalogue GPUs: the Meeting summary, Purchase, Tradeoffs, "
        "Uncertainty, Timeline and Plan view show its launchable plan above the graph's.",
    )
    if not on:
        ss[_SHOWN] = False
        return None
    ss[_SHOWN] = True
    scenario = ss.get(_SCENARIO, DEFAULT)
    for key, value in _widget_values(scenario).items():
        if key not in ss:
            ss[key] = value
    with st.expander("Edit the transformer scenario (model, batch, tokens, GPUs, price, network)", expanded=False):
        _config_upload(scenario)
        c = st.columns(4)
        c[0].selectbox(
            "model", list(MODELS), key="tf_w_model", persist_state=PERSIST, disabled=scenario.custom is not None
        )
        c[1].number_input("sequence length", 128, 1 << 20, step=1024, key="tf_w_seq", persist_state=PERSIST)
        c[2].number_input("global batch (sequences)", 1, 1 << 22, key="tf_w_batch", persist_state=PERSIST)
        c[3].number_input("tokens per run (billions)", 0.001, 1e7, key="tf_w_tokens", persist_state=PERSIST)
        c = st.columns(4)
        c[0].selectbox("GPU", list(ACCELERATORS), key="tf_w_gpu", persist_state=PERSIST)
        c[1].number_input("GPUs", 1, 1 << 17, key="tf_w_gpus", persist_state=PERSIST)
        c[2].number_input("GPUs per node", 1, 72, key="tf_w_per_node", persist_state=PERSIST)
        c[3].number_input(
            "USD per GPU-hour (empty: the catalogue's)",
            min_value=0.0,
            max_value=1e4,
            step=0.1,
            key="tf_w_price",
            persist_state=PERSIST,
        )
        c = st.columns(4)
        c[0].number_input("network bandwidth x", 0.01, 100.0, step=0.25, key="tf_w_network", persist_state=PERSIST)
        c[1].selectbox("framework", list(SPACES), key="tf_w_framework", persist_state=PERSIST)
    try:
        scenario = _from_widgets(scenario)
    except (InvalidScenarioError, PlacementError) as exc:
        st.error(f"Transformer scenario not changed: {exc}")
        return scenario
    ss[_SCENARIO] = scenario
    return scenario
