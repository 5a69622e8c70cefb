"""Widget state, one way for every page (Streamlit drops a widget's value when its page is left).

* A widget whose value belongs to its page (a sweep range, a chosen option) is created with a
  ``key`` and ``persist_state=PERSIST``, its first value given by :func:`init_widget`
  (never ``value=`` as well); Streamlit then keeps it across page switches.
* A widget that shows shared state (the devices, the graph) is re-synced from that state with
  :func:`sync_widgets` whenever the state changed elsewhere, and writes it back when moved.
* Widget bounds never depend on the widget's own value (a slider whose ``max_value`` moves
  becomes a new widget and falls back to its minimum): use :func:`stable_maximum`.
"""

from __future__ import annotations

import math
from typing import Any

import streamlit as st

import placement

#: Pass as ``persist_state=`` to every keyed widget whose value must outlive a page switch.
PERSIST = "session"
#: The per-widget upload cap of every JSON uploader, in Streamlit's MB (2**20 bytes): the dropzone shows it,
#: and the page still refuses any file over :data:`placement.MAX_FILE_BYTES` with a one-line error.
UPLOAD_LIMIT_MB = max(1, -(-placement.MAX_FILE_BYTES // 2**20))


def init_widget(key: str, value: Any) -> None:
    """Give widget ``key`` the value ``value`` unless it already has one (call before creating the widget)."""
    if key not in st.session_state:
        st.session_state[key] = value


def sync_widgets(group: str, values: dict[str, Any], version: Any) -> bool:
    """Show shared state in the widgets ``values`` (key -> value) of ``group``.

    When ``version`` (e.g. :func:`ui.graph_state.devices_version`) differs from the one the group last
    showed, every widget is set to its value (the state changed elsewhere); otherwise only widgets
    without a value get one (back on the page). Returns True when the widgets were re-set.
    Call :func:`mark_synced` after the widgets wrote the state back themselves.
    """
    marker = f"_ui_synced_{group}"
    if st.session_state.get(marker) != version:
        for key, value in values.items():
            st.session_state[key] = value
        st.session_state[marker] = version
        return True
    for key, value in values.items():
        init_widget(key, value)
    return False


def mark_synced(group: str, version: Any) -> None:
    """Record that the widgets of ``group`` already show the state at ``version``."""
    st.session_state[f"_ui_synced_{group}"] = version


def stable_maximum(value: float, floor: int = 16) -> int:
    """A slider maximum for ``value`` that a drag cannot move: at least ``floor``, a power of two >= 2 x value.

    Computed from the state when it changed elsewhere (not from the slider), it stays put while
    the slider moves: a slider whose bounds change is a new widget and falls back to its minimum.
    """
    top = max(int(floor), 2 * int(math.ceil(value)))
    return 1 << (top - 1).bit_length()


def forget_upload(file_id: str) -> bool:
    """Drop an uploaded file's bytes from Streamlit's upload store now; False where there is nothing to drop.

    The store keeps every file a session uploaded until the session ends (and ``server.disconnectedSessionTTL``,
    120 s, after its tab closes): a refused 42.7 MB upload held its bytes in the server that long. Streamlit's
    own chat input removes its files the same way (the in-memory store only).
    """
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager  # noqa: PLC0415
    from streamlit.runtime.scriptrunner import get_script_run_ctx  # noqa: PLC0415

    ctx = get_script_run_ctx()
    if ctx is None or not isinstance(ctx.uploaded_file_mgr, MemoryUploadedFileManager):
        return False
    ctx.uploaded_file_mgr.remove_file(session_id=ctx.session_id, file_id=file_id)
    return True
