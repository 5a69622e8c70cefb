"""The private session-state keys of the shared state, and the hooks that keep the URL in step.

Every key here is private (prefix ``_ui_``, never a widget key). The modules that own the state
(:mod:`ui.graph_state`, :mod:`ui.plan_state`) read and write them; pages never do.

The URL follows the state through two hooks set once per run by :func:`ui.startup.ensure_default_graph`
(URL sync as a callback: the state modules never import :mod:`ui.scenario`, which imports them):
:func:`changed` after every change of the shared state, :func:`uploaded` after an upload is loaded.
Without hooks (a module used on its own, a plain test) both are no-ops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

PROBLEM = "_ui_base_problem"  # Problem as loaded (the file's own devices)
NAME = "_ui_graph_name"  # display name of the loaded graph
SOURCE = "_ui_graph_source"  # "sample:<relative path>" or "upload:<file name>"
DEVICES = "_ui_devices"  # current Devices (Devices page knobs applied)
RULES = "_ui_latency_rules"  # tuple of (pattern, factor)
SCALED = "_ui_scaled_graph"  # (key, Graph) cache of the graph with the rules applied
PRICED = "_ui_priced_graph"  # (key, Graph) cache of the graph re-priced for the inventory's catalogue kinds
METHOD = "_ui_method"  # chosen method name
OBJECTIVE = "_ui_objective"  # "throughput" or "latency"
TIME_LIMIT = "_ui_time_limit"  # seconds, for methods that take a time limit
PLAN = "_ui_selected_plan"  # (problem, result, label) or None
PLAN_ORIGIN = "_ui_selected_plan_origin"  # (origin, label) of the last plan picked: where it was picked
DEVICES_VERSION = "_ui_devices_version"  # bumped whenever devices change from outside the Devices widgets
MEMORY_MODEL = "_ui_memory_model"  # MemoryModel every page solves and reports with
DEVICES_ORIGIN = "_ui_devices_origin"  # "file" (the loaded file's own devices) or "custom" (set by the user)
KEPT_NOTE = "_ui_devices_kept_note"  # the graph name whose file devices were not applied (kept custom ones)
CURRENCY = "_ui_currency"  # the currency label of every price and cost
PROFILE = "_ui_device_profile"  # (measured Accelerator, file name) of the uploaded device profile, or None

_ON_CHANGE = "_ui_hook_changed"  # callable() run after every change of the shared state (URL sync)
_ON_UPLOAD = "_ui_hook_uploaded"  # callable(problem, name) run when a graph that is not a sample is loaded


def set_hooks(on_change: Callable[[], Any], on_upload: Callable[[Any, str], Any]) -> None:
    """Set this session's hooks: ``on_change()`` after each change, ``on_upload(problem, name)`` per upload."""
    st.session_state[_ON_CHANGE] = on_change
    st.session_state[_ON_UPLOAD] = on_upload


def changed() -> None:
    """Tell the hook that the shared state changed (the URL is rewritten at once: a page may change it late)."""
    hook = st.session_state.get(_ON_CHANGE)
    if hook is not None:
        hook()


def uploaded(problem: Any, name: str) -> None:
    """Tell the hook that an uploaded graph was loaded (a link naming its digest then opens it)."""
    hook = st.session_state.get(_ON_UPLOAD)
    if hook is not None:
        hook(problem, name)
