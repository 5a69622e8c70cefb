"""Streamlit glue for the what-if explorer (the only package besides app_pages/ that imports Streamlit).

:mod:`ui.state` keeps the shared session state: the loaded graph, the device settings, the
latency multipliers, the chosen method and the cached solves. Costs are never computed here:
everything numeric comes from :mod:`placement`.
"""
