"""The one exception family of the package.

Every error a user can cause (a bad file, a bad option) is a :class:`PlacementError`
whose message is one line naming the file, the node/edge/field and the rule broken.
"Infeasible" is never an exception: it is a result status.

User text (node, kind and field names, patterns, file names, flag and scenario values) enters a
message only through :func:`quote` (repr-style escaping, length cap) or :func:`label`; and every
:class:`PlacementError` renders through :func:`one_line`, so that no message, whatever slipped
through, spans two lines or runs past :data:`MAX_MESSAGE_CHARS` characters.
"""

from __future__ import annotations

#: Characters of user text shown by :func:`quote` before the ellipsis.
QUOTE_CHARS = 80
#: Longest message an error renders (the rest is cut with an ellipsis).
MAX_MESSAGE_CHARS = 1000


def _escape(char: str) -> str:
    # repr's escape of one character (backslash-n, backslash-x1b, ...); printable ones and spaces stay.
    return char if char == " " or char.isprintable() else repr(char)[1:-1]


def quote(text: object, limit: int = QUOTE_CHARS) -> str:
    r"""User text as a safe part of a one-line message: repr-style quoted, at most ``limit`` characters shown.

    Newlines, control characters (ANSI escapes included), line and paragraph separators and
    other unprintable characters are escaped the way :func:`repr` escapes them; longer text is
    cut with an ellipsis and its length is given.

    Examples
    --------
    >>> quote("relu")
    "'relu'"
    >>> print(quote("a" + chr(10) + "b" + chr(27) + "[31m"))
    'a\nb\x1b[31m'
    >>> quote("x" * 100, limit=5)
    "'xxxxx…' (100 characters)"
    """
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit:
        return repr(text)
    return f"{repr(text[:limit])[:-1]}…{repr(text[:limit])[-1]} ({len(text):,} characters)"


def label(text: object, limit: int = 120) -> str:
    """User text shown bare when it is short and printable (a file name), else as :func:`quote` does."""
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit and text.isprintable():
        return text
    return quote(text, limit)


def one_line(message: object, limit: int = MAX_MESSAGE_CHARS) -> str:
    r"""``message`` on one line: unprintable characters escaped, at most ``limit`` characters (then an ellipsis).

    Examples
    --------
    >>> print(one_line("first" + chr(10) + "second"))
    first\nsecond
    """
    text = message if isinstance(message, str) else str(message)
    text = text[: limit + 1]
    if not text.isprintable():
        text = "".join(_escape(char) for char in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class PlacementError(Exception):
    """Base class of every error raised by :mod:`placement`; its text is always one line (:func:`one_line`)."""

    def __str__(self) -> str:
        return one_line(super().__str__())


class InvalidGraphError(PlacementError, ValueError):
    """A graph file or graph object breaks a rule of the model."""


class InvalidSplitError(PlacementError, ValueError):
    """A split (placement) file or object does not fit its graph."""


class InvalidDevicesError(PlacementError, ValueError):
    """A device inventory is malformed (negative counts, bad memory, ...)."""


class TooManyIdealsError(PlacementError):
    """The graph has more ideals than the DP may enumerate within its limit."""


class SolverError(PlacementError):
    """An integer-programming solver failed or is unavailable."""


class ExportError(PlacementError):
    """A plan that a runtime configuration (Megatron-LM, torch, DeepSpeed) cannot express."""


class InvalidScenarioError(PlacementError, ValueError):
    """A scenario (URL query parameters or a scenario card) is malformed."""


class InvalidLayoutError(PlacementError, ValueError):
    """A parallel layout (or a Megatron-LM command line) breaks a rule of the training performance model."""


class InvalidModelSpecError(PlacementError, ValueError):
    """A transformer specification is malformed (non-positive sizes, heads not dividing the hidden size, ...)."""
