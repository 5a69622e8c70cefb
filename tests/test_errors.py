"""User text in error messages (issue 27.3): quoted, escaped, capped; every PlacementError is one line."""

from __future__ import annotations

import ast

from hypothesis import given
from hypothesis import strategies as st

from placement.errors import MAX_MESSAGE_CHARS, InvalidGraphError, PlacementError, label, one_line, quote


@given(st.text(max_size=300), st.integers(min_value=1, max_value=120))
def test_quote_is_one_printable_line_of_bounded_length(text, limit):
    shown = quote(text, limit)
    assert shown.isprintable() and len(shown.splitlines()) == 1
    assert len(shown) <= 4 * limit + 40  # each character escapes to at most \\Uxxxxxxxx... bounded per character
    if len(text) <= limit:
        assert ast.literal_eval(shown) == text  # short text: exactly repr, so it reads back
    else:
        marker = f"…{shown[0]} ({len(text):,} characters)"  # the text itself may hold "…": cut at the marker
        assert shown.endswith(marker)
        assert ast.literal_eval(shown[: -len(marker)] + shown[0]) == text[:limit]


def test_quote_escapes_what_could_forge_a_line_or_a_terminal():
    hostile = "evil\nimport os\r\x1b[31mred\x00\u2028\u2029\x85\u202e"
    shown = quote(hostile)
    for raw in ("\n", "\r", "\x1b", "\x00", "\u2028", "\u2029", "\x85", "\u202e"):
        assert raw not in shown
    assert "\\n" in shown and "\\x1b" in shown and "\\u2028" in shown


def test_quote_caps_a_10_kB_name():
    shown = quote("n" * 10_000)
    assert shown == "'" + "n" * 80 + "…' (10,000 characters)"


def test_label_keeps_short_printable_file_names_bare():
    assert label("graph.json") == "graph.json"
    assert label("a\nb.json") == "'a\\nb.json'"
    assert label("x" * 500).endswith("(500 characters)")


@given(st.text(max_size=3000))
def test_one_line_is_one_printable_line_within_the_cap(text):
    line = one_line(text)
    assert line.isprintable() and len(line) <= MAX_MESSAGE_CHARS
    if text.isprintable() and len(text) <= MAX_MESSAGE_CHARS:
        assert line == text  # ordinary messages are unchanged


def test_every_placement_error_renders_as_one_line():
    error = InvalidGraphError("node 3: name 'a\nb' broke\x1b[2J a rule " + "x" * 5000)
    text = str(error)
    assert isinstance(error, PlacementError) and text.isprintable() and len(text) <= MAX_MESSAGE_CHARS
    assert text.startswith("node 3: name 'a\\nb' broke\\x1b[2J a rule")
    assert str(PlacementError("plain message")) == "plain message"


def test_the_page_guard_escapes_markdown_that_would_link_or_render():
    from ui import guard

    shown = guard.markdown_safe("see [x](javascript:alert(1)) ![i](http://e/i.png) $x$ <b> :red[r]")
    assert "[x]" not in shown and "![i]" not in shown and "$x$" not in shown and ":red[r]" not in shown
    assert guard.summary(InvalidGraphError("a\nb\x1b[31m")) == "a\\nb\\x1b[31m"
