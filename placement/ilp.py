"""The integer programs' old home: re-exports of :mod:`placement.ip` (kept for existing imports)."""

from .ip.common import PROVEN_GAP, colour_groups
from .ip.latency import solve_latency_ip
from .ip.throughput import solve_ip_contiguous, solve_ip_noncontiguous

__all__ = ["PROVEN_GAP", "colour_groups", "solve_ip_contiguous", "solve_ip_noncontiguous", "solve_latency_ip"]
