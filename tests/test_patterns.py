"""Latency-multiplier patterns: glob semantics, and matching bounded whatever the input (issue 17)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from placement import Edge, Graph, InvalidGraphError, Node
from placement.patterns import MAX_PATTERN_CHARS, compile_pattern


@pytest.mark.parametrize(
    "pattern, name, expected",
    [
        ("attention", "Multi-Head ATTENTION block", True),
        ("attention", "mlp", False),
        ("attention|softmax", "x_softmax", True),
        ("node1[0-9]$", "node12", True),
        ("node1[0-9]$", "node123", False),
        ("^enc", "encoder", True),
        ("^enc", "the encoder", False),
        ("a*b", "xxaQQbyy", True),
        ("a?c", "abc", True),
        ("a?c", "ac", False),
        ("[!0-9]x", "5x", False),
        ("[^0-9]x", "ax", True),
        ("layer.0", "/layer.0/x", True),
        ("layer.0", "layer10", False),  # '.' is a literal dot, not "any character"
        (r"a\*b", "a*b", True),
        (r"a\*b", "axb", False),
        ("^(a+)+$", "aaaa", False),  # a literal here, never a regular expression
    ],
)
def test_glob_semantics(pattern, name, expected):
    assert compile_pattern(pattern).matches(name) is expected


@pytest.mark.parametrize("pattern", ["", "[abc", "x" * (MAX_PATTERN_CHARS + 1)])
def test_bad_patterns_are_one_line_errors(pattern):
    with pytest.raises(InvalidGraphError) as info:
        compile_pattern(pattern)
    assert "\n" not in str(info.value)


CATASTROPHIC = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_CPU, (5, 5))
from placement import Edge, Graph, Node
from placement.patterns import compile_pattern
names = ["a" * 9_999 + "!", "a" * 30 + "!", "ab" * 5000]
for pattern in ["^(a+)+$", "*a*a*a*a*a*a*a*a*a*a*a*a*b", "(a|aa)*$", "^" + "a?" * 60 + "a" * 60 + "$"]:
    compiled = compile_pattern(pattern)
    for name in names:
        compiled.matches(name)
graph = Graph(tuple(Node(i, 1, 1, name="a" * 5000 + "!") for i in range(200)), ())
graph.with_latency_scale("^(a+)+$", 2.0)
graph.with_latency_scale("*a*a*a*a*a*a*a*a*a*a*a*a*b", 2.0)
print("done")
"""


@pytest.mark.slow  # over 5 s
def test_catastrophic_patterns_are_bounded():
    """Patterns that freeze a backtracking regex engine finish well inside a 5 s CPU limit (RLIMIT_CPU)."""
    done = subprocess.run([sys.executable, "-c", CATASTROPHIC], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == "done"


def test_latency_scale_uses_the_glob():
    graph = Graph((Node(1, 1, 1, name="attn.q"), Node(2, 1, 1, name="mlp")), (Edge(1, 2, 0),))
    scaled = graph.with_latency_scale("ATTN*", 3.0)
    assert [n.accelerator_latency for n in scaled.nodes] == [3.0, 1.0]
