"""The start of every run (app.py): open the link's scenario or the default sample, and let the URL follow.

This module sits above both :mod:`ui.state` and :mod:`ui.scenario`: it hands the scenario's URL sync
and upload memory to the state as callbacks (:func:`ui.session_keys.set_hooks`), so the state
never imports the scenario module (no import cycle).
"""

from __future__ import annotations

import streamlit as st

from ui import scenario, session_keys, worker
from ui.graph_state import load_sample
from ui.samples import default_sample


def ensure_default_graph() -> None:
    """On the first visit open the URL's scenario, else the default sample (:func:`ui.samples.default_sample`).

    Then keep the URL's query parameters on the current scenario (see :mod:`ui.scenario`).
    """
    session_keys.set_hooks(scenario.sync_url, scenario.remember_upload)
    worker.start_solvers()  # the solve workers warm up in the background from the server's first run
    if st.session_state.get(session_keys.PROBLEM) is None:
        if not scenario.restore_from_url():
            load_sample(default_sample())
    scenario.mark_restored()
    scenario.show_restore_error()
    scenario.sync_url()
