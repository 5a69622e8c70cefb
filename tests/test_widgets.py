"""ui/widgets.py: an uploaded file's bytes dropped from Streamlit's upload store."""

from __future__ import annotations

from types import SimpleNamespace

import streamlit.runtime.scriptrunner as scriptrunner
from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.uploaded_file_manager import UploadedFileRec

from ui import widgets


def test_forget_upload_drops_the_files_bytes_from_the_store(monkeypatch):
    """Issue 45.2: a refused upload's bytes leave the server now, not when the session ends."""
    store = MemoryUploadedFileManager("/_stcore/upload_file")
    store.add_file("s1", UploadedFileRec("f1", "huge.json", "application/json", b"x" * 1000))
    store.add_file("s1", UploadedFileRec("f2", "kept.json", "application/json", b"y" * 10))
    monkeypatch.setattr(
        scriptrunner, "get_script_run_ctx", lambda: SimpleNamespace(uploaded_file_mgr=store, session_id="s1")
    )
    assert widgets.forget_upload("f1") is True
    assert [f.file_id for f in store.get_files("s1", ["f1", "f2"])] == ["f2"]


def test_forget_upload_outside_a_script_run_does_nothing(monkeypatch):
    monkeypatch.setattr(scriptrunner, "get_script_run_ctx", lambda: None)
    assert widgets.forget_upload("f1") is False
