"""The Teaching page's texts and tables as plain functions (no Streamlit): the DP's steps, the proof, your split."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

import placement
from placement.explore.teaching import MAX_TEACHING_GROUPS, starting_split
from ui.samples import SAMPLES_DIR

OURS = SAMPLES_DIR / "ours"
#: The small samples to teach on (label -> file); the first is the default. Branched graphs first,
#: so that the lattice is not a line.
SAMPLES = {
    "residual block (6 nodes, 2 branches)": OURS / "teach_residual_inference.json",
    "Inception-like module (7 nodes, 3 branches)": OURS / "teach_inception_mini_inference.json",
    "two-branch block, training (10 nodes)": OURS / "teach_two_branch_training.json",
    "4-layer chain, training (8 nodes)": OURS / "tiny_training.json",
}
CURRENT = "current graph (Graph page)"
#: Teaching draws every device: graphs on more devices than this are not offered.
MAX_TEACHING_DEVICES = 8
#: Font size of the figures: normal, and in presentation mode (for a projector).
FONT, PRESENTATION_FONT = 14, 20
PRESENTATION_CSS = (
    "<style>"
    '[data-testid="stMain"] p, [data-testid="stMain"] li, [data-testid="stMain"] label,'
    '[data-testid="stMain"] button {font-size: 1.35rem !important;}'
    '[data-testid="stMetricValue"] {font-size: 2.6rem !important;}'
    "</style>"
)


def graph_choices(current: placement.Problem | None) -> tuple[list[str], float]:
    """The graphs offered (the samples, and the current graph when it is small enough) and its group count."""
    groups = placement.contract(current.graph).count if current is not None else math.inf
    small = (
        current is not None and groups <= MAX_TEACHING_GROUPS and len(current.devices.slots()) <= MAX_TEACHING_DEVICES
    )
    return [*SAMPLES] + ([CURRENT] if small else []), groups


def ms_cell(value: float, final: bool = False) -> str:
    """A best[J] cell: ms, or infinity saying whether more pairs may still fill it."""
    if math.isfinite(value):
        return f"{value:.4g} ms"
    return "∞ (no feasible split)" if final else "∞ (none yet)"


def state_label(counts, types) -> str:
    """Device counts per type, e.g. ``"2 V100 + 1 cpu"``."""
    return " + ".join(f"{c} {t}" for c, t in zip(counts, types)) or "no devices"


def stage_text(trace, step: int, names: dict[int, str]) -> str:
    """The stage J \\ I of a step: its groups, nodes and load on one device of each type."""
    item = trace.steps[step]
    loads = "; ".join(
        f"on one {t}: " + (f"{load:.4g} ms" if math.isfinite(load) else f"**not allowed** ({reason or 'infeasible'})")
        for t, load, reason in zip(trace.types, item.loads, item.reasons or [""] * len(item.loads))
    )
    return (
        f"**Stage J \\ I** = groups {', '.join(f'g{g}' for g in item.stage_groups)} (nodes "
        f"{', '.join(names[n] for n in item.stage_nodes)}). Its load {loads}."
    )


def best_rows(trace, step: int) -> list[dict[str, str]]:
    """The table after ``step``: best[J] so far per device count, this step's improvements marked.

    J's row is final after its last pair: an infinite cell then means no split of J fits those devices.
    """
    item = trace.steps[step]
    final = all(later.ideal != item.ideal for later in trace.steps[step + 1 :])
    row = trace.best_after(step).get(item.ideal, {})
    improved = {state_: t for state_, _, t in item.improved}
    return [
        {
            "devices (at most)": state_label(s, trace.types),
            "best[J] so far (ms per sample)": ms_cell(row.get(s, math.inf), final),
            "improved now": f"last stage on {trace.types[improved[s]]}" if s in improved else "",
        }
        for s in trace.states
    ]


def why_text(why, ideals: int, pairs: int) -> str:
    """Why the optimal plan is optimal: the DP scored every pair; no split beats the lower bound."""
    proof = (
        "Every contiguous split is a chain of ideals ∅ ⊊ I1 ⊊ ... ⊊ all, one stage per step; the DP "
        f"scored every one of the {pairs:,} pairs I ⊊ J of the {ideals:,} ideals (the steps of the "
        "first tab), so no contiguous split has a smaller time per sample"
    )
    above = why.time_per_sample / why.lower_bound - 1 if why.lower_bound > 0 else 0.0
    return (
        f"**Why:** {proof}. No split at all can beat the lower bound {why.lower_bound:.4g} ms "
        f"({why.bound_reason}); this plan is {above:.1%} above it. The bottleneck is **{why.bottleneck}** "
        f"({why.bottleneck_compute:.4g} ms compute + {why.bottleneck_communication:.4g} ms communication): "
        "moving work off it is the only way down."
    )


def starting_frame(problem: placement.Problem, trace) -> pd.DataFrame:
    """The "Beat the solver" table to start from: every node on its device in the DP's best split on fewer devices."""
    slots = [str(slot) for slot in problem.devices.slots()]
    start = starting_split(trace)
    first = {n.id: (str(start.device_of[n.id]) if start is not None else slots[0]) for n in problem.graph.nodes}
    return pd.DataFrame(
        [
            {"node": n.id, "name": n.name or "", "backward": n.is_backward, "device": first[n.id]}
            for n in problem.graph.nodes
        ]
    )


def broken_rules(problem: placement.Problem, mine: placement.Placement, evaluation: Any) -> list[str]:
    """The rules a hand-made split breaks (the evaluator's, and contiguity: allowed, but outside the DP's search)."""
    broken = list(evaluation.violations)
    if not placement.is_contiguous(problem, mine):
        broken.append(
            "the split is not contiguous (some device's nodes are not a stage J \\ I of ideals): "
            "allowed, but outside the DP's search space"
        )
    return broken
