"""The memory-aware IP's old home: re-exports of :mod:`placement.ip.memory_aware` (kept for existing imports)."""

from .ip.memory_aware import METHOD, plan_value, solve_memory_aware_ip

__all__ = ["METHOD", "plan_value", "solve_memory_aware_ip"]
