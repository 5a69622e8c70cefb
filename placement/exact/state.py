"""The lattice kernel's inputs and working arrays, as numba-friendly named tuples.

:func:`placement.exact.lattice_search.lattice_dp` takes its inputs in seven named tuples
(:class:`LatticeArrays`, :class:`GraphArrays`, :class:`TypeArrays`, :class:`StateArrays`,
:class:`Settings`, :class:`Table` and pair mode's :class:`placement.exact.pairs.Targets`); their
fields are the arrays of the contract in :mod:`placement.exact.lattice_search`. The search's
working arrays are one :class:`Workspace` (:func:`new_workspace`), allocated once per call.

The tuples are unpacked once per call at the top of :func:`lattice_dp` (a kernel call costs
about as much as before: one tuple per topic instead of 43 arguments); the per-pair loop then
reads plain arrays.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .exactsum import MAXP


class LatticeArrays(NamedTuple):
    """Ideals ``0..n_ideals-1`` (a superset has a larger index) and their cover edges in CSR form."""

    up_start: np.ndarray  # the cover edges of ideal i are up_start[i]:up_start[i + 1]
    up_group: np.ndarray  # per edge: the group it adds
    up_target: np.ndarray  # per edge: the ideal it leads to
    n_ideals: int


class GraphArrays(NamedTuple):
    """The graph contracted into groups, and its per-node quantities (contract: "Per-node quantities")."""

    group_start: np.ndarray  # the nodes of group g are group_nodes[group_start[g]:group_start[g + 1]]
    group_nodes: np.ndarray
    pred_start: np.ndarray  # the predecessors of node x are preds[pred_start[x]:pred_start[x + 1]]
    preds: np.ndarray
    out_degree: np.ndarray  # successors per node
    node_fwd: np.ndarray  # whether a node belongs to the forward pass
    node_val: np.ndarray  # [q, x]: additive terms (compute per type, forward compute, memory)
    cross_val: np.ndarray  # [c, x]: the communication term of x in scale class c
    in_val: np.ndarray  # [x]: the stage-input bytes of a forward node (recomputation)
    group_blocked: np.ndarray  # [t, g]: nodes of group g that cannot run on type t


class TypeArrays(NamedTuple):
    """The device types (contract: "Device types" and "Memory")."""

    compute: np.ndarray  # [t]: row of node_val with t's compute
    fwd: np.ndarray  # [t]: row of node_val with t's forward compute (-1: none)
    cross: np.ndarray  # [t]: scale class of t's communication (-1: none)
    cap: np.ndarray  # [t]: memory cap
    dur_cross: np.ndarray  # [t]: scale class of t's transfers in a stage's duration (-1: none)
    mem_w: int  # rows of node_val: weights, parameters, kept activations (-1: none)
    mem_p: int
    mem_a: int
    opt_mult: float  # optimizer bytes per parameter byte


class StateArrays(NamedTuple):
    """Device-count states: one device of type ``d`` more / fewer, and the in-flight count per state."""

    next_state: np.ndarray  # [d, s] (-1: none)
    prev_state: np.ndarray  # [d, s] (-1: none)
    flight: np.ndarray  # [s]: stages from this one to the end (memory of in-flight samples)
    n_states: int


class Settings(NamedTuple):
    """The run's scalars (contract: "Objectives", "Modes", "Pruning")."""

    overlap: bool  # a load is max(compute, communication) instead of their sum
    upper_bound: float  # no stage load above it is needed
    closure: bool  # rows closed under "one more device never hurts"
    mode_lo: int  # stage modes searched (MODE_PLAIN..MODE_RECOMPUTE)
    mode_hi: int
    count_only: bool  # only count the pairs (no loads)
    objective: int  # OBJECTIVE_MAX_LOAD or OBJECTIVE_TIE_BREAK


class Table(NamedTuple):
    """The DP table (:func:`placement.exact.lattice_search.new_table`) and the cells' floors."""

    best: np.ndarray  # [I, s]: the value of cell (I, s)
    parent_ideal: np.ndarray  # [I, s]: the ideal after the cell's first stage
    parent_type: np.ndarray  # [I, s]: its parent code (placement.exact.codes)
    useful: np.ndarray  # [I, s]: state s of row I is worth extending
    used: np.ndarray  # [I, s]: stages of the cell (objective 1; else 1 x 1)
    floor: np.ndarray  # [I, s]: at or below it the cell is final (1 x 1: every cell open)


class Workspace(NamedTuple):
    """The search's working arrays (levels are search depths: level k holds a stage of k groups)."""

    min_flight: int  # the smallest in-flight count of a state that can end a stage
    sums: np.ndarray  # [level, q]: running sums of the stage's quantities (restored on pop)
    errors: np.ndarray  # [level, q]: their error bounds (placement.exact.exactsum, steps 2-5)
    expansions: np.ndarray  # [level, q, :]: exact sums of the stage, rebuilt on demand
    expansion_len: np.ndarray  # [level, q]
    blocked: np.ndarray  # [level, t]: stage nodes that cannot run on type t
    low: np.ndarray  # [q]: the stage's quantities as intervals [low, high] (points once exact)
    high: np.ndarray
    load_low: np.ndarray  # [mode, t]: the stage's load per mode and type, as an interval
    load_high: np.ndarray
    duration_low: np.ndarray  # [t]: the stage's duration (objective 1), as an interval
    duration_high: np.ndarray
    type_alive: np.ndarray  # [t]: the stage passes type t's pruning tests
    scratch: np.ndarray  # room for one correctly rounded sum of three expansions
    node_links: tuple  # (group_start, group_nodes, pred_start, preds, node_fwd) for move_group
    node_state: tuple  # (in_stage, stage_succ, fwd_succ_in): the stage's membership and successor counts
    node_mark: np.ndarray  # [x]: the last mark round that noted node x (one round per push or pair)
    rebuild_mark: np.ndarray  # [x]: the last pair whose exact rebuild counted node x
    touched: np.ndarray  # nodes whose boundary terms a push may change ...
    was_crossing: np.ndarray  # ... and whether each crossed the boundary / fed the stage before it
    was_feeding: np.ndarray
    seen_in_row: np.ndarray  # [J]: the last row whose search reached J
    stack_ideal: np.ndarray  # [level]: the cover-edge search's path of supersets ...
    stack_edge: np.ndarray  # ... the next cover edge to try from each ...
    stack_group: np.ndarray  # ... and the group that made each level
    open_cells: np.ndarray  # the states of the row whose cell may still improve
    is_open: np.ndarray  # [s]
    limit: np.ndarray  # [t]: the largest value among the open cells a stage on t can improve


@njit(cache=True, nogil=True)
def new_workspace(lattice, graph, types, states):
    """The :class:`Workspace` of one kernel call."""
    n_ideals = lattice.n_ideals
    n_types = types.compute.shape[0]
    n_nodes = graph.out_degree.shape[0]
    n_states = states.n_states
    n_q = graph.node_val.shape[0] + graph.cross_val.shape[0] + 1  # additive values, crossing classes, stage input
    min_flight = 1 << 30
    for s in range(1, n_states):  # state 0 is never the target of a stage
        if states.flight[s] < min_flight:
            min_flight = states.flight[s]
    n_levels = n_ideals + 1
    if graph.group_start.shape[0] - 1 + 2 < n_levels:
        n_levels = graph.group_start.shape[0] - 1 + 2
    n_touch = n_nodes + graph.preds.shape[0] + 1
    node_links = (graph.group_start, graph.group_nodes, graph.pred_start, graph.preds, graph.node_fwd)
    node_state = (
        np.zeros(n_nodes, dtype=np.bool_),
        np.zeros(n_nodes, dtype=np.int64),
        np.zeros(n_nodes, dtype=np.int64),
    )
    return Workspace(
        min_flight,
        np.zeros((n_levels, n_q)),
        np.zeros((n_levels, n_q)),
        np.zeros((n_levels, n_q, MAXP)),
        np.zeros((n_levels, n_q), dtype=np.int64),
        np.zeros((n_levels, n_types), dtype=np.int64),
        np.zeros(n_q),
        np.zeros(n_q),
        np.full((2, n_types), np.inf),
        np.full((2, n_types), np.inf),
        np.zeros(n_types),
        np.zeros(n_types),
        np.zeros(n_types, dtype=np.bool_),
        np.empty(3 * MAXP),
        node_links,
        node_state,
        np.full(n_nodes, -1, dtype=np.int64),
        np.full(n_nodes, -1, dtype=np.int64),
        np.empty(n_touch, dtype=np.int64),
        np.empty(n_touch, dtype=np.bool_),
        np.empty(n_touch, dtype=np.bool_),
        np.full(n_ideals, -1, dtype=np.int64),
        np.empty(n_levels, dtype=np.int64),
        np.empty(n_levels, dtype=np.int64),
        np.empty(n_levels, dtype=np.int64),
        np.empty(n_states, dtype=np.int64),
        np.zeros(n_states, dtype=np.bool_),
        np.empty(n_types, dtype=np.float64),
    )
