"""Integer programs (PuLP; HiGHS in process, CBC as a fallback).

* :mod:`placement.ip.common` - solver selection, status, bound and gap, results;
* :mod:`placement.ip.positions` - ordered positions, contiguity and crossing indicators;
* :mod:`placement.ip.throughput` - contiguous and non-contiguous max-load;
* :mod:`placement.ip.latency` - single-sample latency;
* :mod:`placement.ip.memory_aware` - contiguous max-load under the schedule's peak memory.

No PuLP object leaves this package: every function returns a plain
:class:`~placement.model.Result` whose objective is recomputed by the independent evaluator.
"""

from .common import PROVEN_GAP, color_groups
from .latency import solve_latency_ip
from .memory_aware import solve_memory_aware_ip
from .throughput import solve_ip_contiguous, solve_ip_noncontiguous

__all__ = [
    "PROVEN_GAP",
    "color_groups",
    "solve_ip_contiguous",
    "solve_ip_noncontiguous",
    "solve_latency_ip",
    "solve_memory_aware_ip",
]
