"""Which model produced the times a page shows: one caption, the same on every page that shows graph times."""

from __future__ import annotations

import streamlit as st

from ui import state


def cost_source_caption() -> None:
    """A caption naming the model behind the graph's times (:func:`placement.modelling.pricing.cost_source`).

    The perf model's kernel physics for built and imported graphs, re-priced for the inventory's
    catalogue kinds; "profiled" for the paper's graph files, whose times are their own measurements.
    """
    text = state.cost_source_text()
    if text:
        st.caption(f":material/science: Node times: {text}.")
