"""One entry point for every method: ``solve(problem, method=...)``.

Methods are looked up by name in :data:`METHODS` (module path, function name), imported
lazily so that the DP does not pay for PuLP and vice versa. Every method takes a
:class:`~placement.model.Problem` and keyword options and returns a
:class:`~placement.model.Result`.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from .errors import PlacementError
from .model import Problem, Result

#: method name -> (module, function, objective it optimises or reports)
METHODS: dict[str, tuple[str, str, str]] = {
    "dp": ("placement.dp", "solve_dp", "throughput"),
    "ip": ("placement.ip.throughput", "solve_ip_contiguous", "throughput"),
    "ip-noncontiguous": ("placement.ip.throughput", "solve_ip_noncontiguous", "throughput"),
    "latency-ip": ("placement.ip.latency", "solve_latency_ip", "latency"),
    "greedy-latency": ("placement.baselines", "greedy_latency", "latency"),
    "pipedream": ("placement.baselines", "pipedream", "throughput"),
    "local-search": ("placement.baselines", "local_search", "throughput"),
    "one-accelerator": ("placement.baselines", "one_accelerator", "throughput"),
    "memory-aware": ("placement.memory_aware", "solve_memory_aware", "throughput"),
    "memory-aware-ip": ("placement.ip.memory_aware", "solve_memory_aware_ip", "throughput"),
}


def method_function(method: str) -> Callable[..., Result]:
    """The function implementing ``method`` (raises :class:`PlacementError` for an unknown name)."""
    if method not in METHODS:
        raise PlacementError(f"unknown method {method!r}; choose one of: {', '.join(METHODS)}")
    module, name, _ = METHODS[method]
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise PlacementError(f"method {method!r} is not available ({exc})") from None


def available_methods(objective: str | None = None) -> list[str]:
    """Names of the methods that can be imported (optionally only those for ``objective``)."""
    names = []
    for name, (_, _, goal) in METHODS.items():
        if objective is not None and goal != objective:
            continue
        try:
            method_function(name)
        except PlacementError:
            continue
        names.append(name)
    return names


def solve(problem: Problem, method: str = "dp", **options: Any) -> Result:
    """Solve ``problem`` with ``method``; options (``time_limit``, ``gap``, ...) go to the method."""
    return method_function(method)(problem, **options)
