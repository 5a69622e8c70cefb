"""The page-level error guard: no traceback ever reaches a user.

Every page starts with ``guard.run_page(__file__, globals())``. That call runs the rest of the
page (the same file, executed again with a marker so that the inner call returns at once)
inside one ``try``, then stops the outer run. An error becomes one ``st.error`` line - the
:class:`placement.PlacementError` message, or the type and message of an unexpected exception,
with server paths removed - plus an expandable detail; the full traceback goes to the server
log only. The session state is left untouched, so the next interaction works as before.

Streamlit's control flow (``st.stop``, ``st.rerun``, ``st.switch_page``) raises
``BaseException`` subclasses and passes through.
"""

from __future__ import annotations

import builtins
import logging
import re
import traceback
from pathlib import Path
from typing import Any

import streamlit as st

import placement
from placement.errors import one_line

_LOGGER = logging.getLogger(__name__)
_MARK = "__ui_guarded__"
ROOT = Path(__file__).resolve().parent.parent
#: Directories and file names of anything path-like (the text is cut to 1,000 characters first).
#: A Windows path needs its drive letter, so that escapes such as backslash-n in quoted names are kept.
_PATH = re.compile(r"[A-Za-z]:\\(?:[^\s'\":,()\\]*\\)*|/(?:[^\s'\":,()/]*/)+")
#: Markdown that could turn user text in an error into a link, an image, a colored directive or math.
_MARKDOWN = re.compile(r"([\\\[\]$<>])")


def _compile(path: str):
    source = Path(path).read_text(encoding="utf-8")
    return compile(source, path, "exec")


def run_page(path: str, page_globals: dict[str, Any]) -> None:
    """Run the page at ``path`` under the guard and stop the outer run (see the module docstring).

    Parameters
    ----------
    path : str
        The page's ``__file__``.
    page_globals : dict
        The page's ``globals()``: the call returns at once inside the guarded run, and in a
        process-pool worker that re-imports the page (``__name__ == "__mp_main__"``).
    """
    if page_globals.get(_MARK) or page_globals.get("__name__") == "__mp_main__":
        return
    namespace = {
        "__name__": page_globals.get("__name__", "__main__"),
        "__file__": path,
        _MARK: True,
        "__builtins__": builtins,
    }
    try:
        exec(_compile(path), namespace)  # noqa: S102 - the page's own file, run a second time
    except Exception as exc:  # noqa: BLE001 - the point of the guard
        show_error(exc)
    st.stop()


def run(target) -> None:
    """Run ``target`` under the guard: an ``st.navigation`` page (anything with ``.run()``) or a callable.

    For an app that routes with ``st.navigation``, ``guard.run(st.navigation(pages))`` in the entry
    point guards every page at once (no per-page :func:`run_page` needed).
    """
    try:
        target.run() if hasattr(target, "run") else target()
    except Exception as exc:  # noqa: BLE001 - the point of the guard
        show_error(exc)


def clean(text: str) -> str:
    """One line without server paths: directories are dropped, file names kept; control characters escaped."""
    line = one_line(" ".join(str(text)[:1000].split()))
    return _PATH.sub("", line)[:400]


def markdown_safe(text: str) -> str:
    """``text`` with the Markdown that ``st.error`` would render as a link, image, directive or math escaped."""
    return _MARKDOWN.sub(r"\\\1", text)


def summary(exc: BaseException) -> str:
    """The line shown to the user for ``exc``."""
    if isinstance(exc, placement.PlacementError):
        return clean(str(exc))
    message = clean(str(exc))
    return f"Unexpected error in the engine: {type(exc).__name__}" + (f": {message}" if message else "")


def detail(exc: BaseException) -> str:
    """The expandable detail: the exception type, its message and the frames inside this project."""
    lines = [f"{type(exc).__module__}.{type(exc).__qualname__}: {clean(str(exc))}"]
    for frame in traceback.extract_tb(exc.__traceback__):
        try:
            where = Path(frame.filename).resolve().relative_to(ROOT)
        except ValueError:
            continue  # library frames: their paths say nothing to a user
        lines.append(f"  {where}:{frame.lineno} in {frame.name}")
    return "\n".join(lines)


def show_error(exc: BaseException) -> None:
    """Show ``exc`` as one ``st.error`` line plus an expandable detail; log the traceback on the server."""
    if not isinstance(exc, placement.PlacementError):
        _LOGGER.error("unexpected error in a page", exc_info=exc)
    st.error(
        f"{markdown_safe(summary(exc))} — the settings of this session are kept; change them or reload the page.",
        icon=":material/error:",
    )
    with st.expander("Details", expanded=False):
        st.code(detail(exc), language=None)
