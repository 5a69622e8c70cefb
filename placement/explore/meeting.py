"""The meeting summary: one solved plan's headline numbers in one value, and as Markdown.

:func:`meeting_summary` gathers what a planning meeting asks about a plan, from the same
functions every page uses (so every number equals the one Devices and Placement show):

* the layout, stage by stage (:func:`placement.evaluate` loads);
* time per sample (steady state) and throughput; time per batch with pipeline fill and drain
  (passed in as :class:`BatchFigures`, the app's one simulation of the memory model's schedule);
* memory per device with its breakdown (:meth:`placement.solve.MemoryModel.breakdown`);
* cost per hour, per million samples and per run (:func:`placement.explore.cost.plan_cost`: every
  card held, idle ones included);
* what ``n`` more cards of each kind are worth (:class:`placement.explore.purchase.Worth`, two
  exact solves each);
* the idle devices.

Times are in ms (the graph's unit), memory in bytes, prices per hour in the user's currency.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import PlacementError
from ..evaluate import evaluate
from ..model import Devices, Problem, Result
from ..pipeline.memory import MemoryBreakdown
from ..solve import MemoryModel
from .cost import MS_PER_HOUR, PlanCost, format_money, plan_cost
from .purchase import Worth

GIB = 2.0**30


@dataclass(frozen=True)
class BatchFigures:
    """One batch of the memory model's schedule, pipeline fill and drain included (ms)."""

    label: str
    microbatches: int
    batch_time: float
    bubble: float

    def __post_init__(self) -> None:
        if self.microbatches < 1 or not (self.batch_time > 0 and math.isfinite(self.batch_time)):
            raise PlacementError(
                f"batch figures: microbatches >= 1 and a finite positive batch time "
                f"(got {self.microbatches}, {self.batch_time!r})"
            )

    @property
    def samples_per_second(self) -> float:
        """Samples per second over whole batches (fill and drain counted)."""
        return 1000.0 * self.microbatches / self.batch_time


@dataclass(frozen=True)
class StageLine:
    """One pipeline stage: its device, its nodes (count; first and last forward node by id), its load (ms)."""

    position: int
    device: str
    kind: str
    nodes: int
    first: str
    last: str
    load: float


@dataclass(frozen=True)
class MeetingSummary:
    """A plan's headline numbers (see the module docstring); built by :func:`meeting_summary`."""

    graph: str
    devices: str
    memory_model: str
    method: str
    status: str
    stages: tuple[StageLine, ...]
    time_per_sample: float
    batch: BatchFigures | None
    memory: tuple[MemoryBreakdown, ...]
    cost: PlanCost
    currency: str
    samples_per_run: int
    tokens_per_sample: float | None
    worth: tuple[Worth, ...]

    def __post_init__(self) -> None:
        if not (self.time_per_sample > 0 and math.isfinite(self.time_per_sample)):
            raise PlacementError(
                f"meeting summary: time per sample must be finite and positive (got {self.time_per_sample!r})"
            )
        if self.samples_per_run < 1:
            raise PlacementError(f"meeting summary: samples per run must be at least 1 (got {self.samples_per_run})")
        if self.tokens_per_sample is not None and not self.tokens_per_sample > 0:
            raise PlacementError(f"meeting summary: tokens per sample must be positive (got {self.tokens_per_sample})")

    @property
    def throughput(self) -> float:
        """Steady-state samples per second (no fill or drain)."""
        return 1000.0 / self.time_per_sample

    @property
    def tokens_per_second(self) -> float | None:
        """Steady-state tokens per second (None without tokens per sample)."""
        return None if self.tokens_per_sample is None else self.tokens_per_sample * self.throughput

    @property
    def batch_tokens_per_second(self) -> float | None:
        """Tokens per second over whole batches, fill and drain counted (None without both)."""
        if self.tokens_per_sample is None or self.batch is None:
            return None
        return self.tokens_per_sample * self.batch.samples_per_second

    @property
    def peak(self) -> MemoryBreakdown | None:
        """The device with the highest peak (None without devices)."""
        return max(self.memory, key=lambda row: row.peak, default=None)

    @property
    def fits(self) -> bool:
        """Whether every device's peak fits its memory."""
        return all(row.fits for row in self.memory)

    @property
    def run_hours(self) -> float:
        """Hours of one run of ``samples_per_run`` samples: whole batches with fill and drain when known.

        With a batch: ``ceil(samples / microbatches)`` batches x the batch time; else the steady state.
        """
        if self.batch is None:
            return self.samples_per_run * self.time_per_sample / MS_PER_HOUR
        batches = math.ceil(self.samples_per_run / self.batch.microbatches)
        return batches * self.batch.batch_time / MS_PER_HOUR

    @property
    def cost_per_run(self) -> float:
        """Price per hour of every device held x :attr:`run_hours`."""
        return self.cost.price_per_hour * self.run_hours

    @property
    def idle(self) -> tuple[tuple[str, int], ...]:
        """Per kind, the devices held that the plan leaves idle (only kinds with some)."""
        return tuple((kind, n) for kind, n in self.cost.idle if n > 0)

    def money(self, value: float | None) -> str:
        """An amount in the summary's currency (``"—"`` for None)."""
        return format_money(value, self.currency)


def stage_lines(problem: Problem, result: Result) -> tuple[StageLine, ...]:
    """The plan's stages in pipeline order with their loads (ms) from :func:`placement.evaluate`."""
    if result.placement is None:
        return ()
    loads = {entry.device: entry.load for entry in evaluate(problem, result.placement).devices}
    nodes = problem.graph.node_by_id
    lines = []
    for position, stage in enumerate(s for s in result.placement.stages if s.nodes):
        ordered = sorted(stage.nodes)
        forward = [i for i in ordered if not nodes[i].is_backward] or ordered  # name the forward nodes
        lines.append(
            StageLine(
                position + 1,
                str(stage.device),
                stage.device.kind,
                len(ordered),
                nodes[forward[0]].name,
                nodes[forward[-1]].name,
                loads.get(stage.device, 0.0),
            )
        )
    return tuple(lines)


def default_more(devices: Devices) -> dict[str, int]:
    """Default "how many more" per kind: the same spend for every kind, from the inventory.

    The first kind doubles (its count more); every other kind gets as many cards as that spend
    buys at its own price (8 A100 at 3/h buy 24/h, that is 16 V100 at 1.5/h). Without prices
    every kind doubles. At least 1 card each.
    """
    kinds = devices.accelerators
    if not kinds:
        return {}
    first = kinds[0]
    budget = first.count * first.price_per_hour
    out = {}
    for kind in kinds:
        if kind is first or budget <= 0 or kind.price_per_hour <= 0:
            out[kind.name] = max(1, kind.count)
        else:
            out[kind.name] = max(1, round(budget / kind.price_per_hour))
    return out


def meeting_summary(
    problem: Problem,
    result: Result,
    memory_model: MemoryModel,
    *,
    graph_name: str = "",
    devices_text: str = "",
    batch: BatchFigures | None = None,
    recomputing: Iterable | None = None,
    currency: str = "USD",
    samples_per_run: int = 1_000_000,
    tokens_per_sample: float | None = None,
    worth: Sequence[Worth] = (),
) -> MeetingSummary:
    """The meeting summary of a solved plan.

    Parameters
    ----------
    problem, result : Problem, Result
        The solved plan (``result.ok``); :class:`PlacementError` without one.
    memory_model : MemoryModel
        The model the peaks are reported under (``recomputing``: a per-stage plan's own choice,
        :func:`placement.solve.recomputing_devices`).
    batch : BatchFigures, optional
        One batch with fill and drain (the app's simulation of the memory model's schedule).
    currency, samples_per_run, tokens_per_sample
        Label of amounts; samples of one run (cost per run); tokens in one sample (tokens/s).
    worth : sequence of Worth
        What more cards of each kind are worth (:func:`placement.explore.purchase.worth_of_more`).

    Returns
    -------
    MeetingSummary
    """
    if not result.ok or result.placement is None:
        raise PlacementError(f"meeting summary: no plan to summarise ({result.method}: {result.status})")
    evaluation = evaluate(problem, result.placement)
    breakdown = memory_model.breakdown(problem, result.placement, recomputing)
    return MeetingSummary(
        graph=graph_name or problem.graph.name,
        devices=devices_text,
        memory_model=memory_model.describe(),
        method=result.method,
        status=str(result.status),
        stages=stage_lines(problem, result),
        time_per_sample=evaluation.max_load,
        batch=batch,
        memory=tuple(breakdown),
        cost=plan_cost(problem.devices, result.placement, evaluation.max_load),
        currency=currency,
        samples_per_run=int(samples_per_run),
        tokens_per_sample=tokens_per_sample,
        worth=tuple(worth),
    )


def format_rate(value: float | None) -> str:
    """``62,667`` for rates of 1000 and more, 4 significant digits below ("—" for None)."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.4g}"


def _gib(value: float) -> str:
    return f"{value / GIB:,.2f} GiB" if math.isfinite(value) else "unlimited"


def worth_row(worth: Worth, currency: str) -> dict[str, str]:
    """One column of the side-by-side comparison: label -> text (same keys for every kind)."""
    after = worth.after

    def per_million(option) -> str:
        cost = option.cost_per_sample
        return format_money(None if cost is None else cost * 1e6, currency)

    time = after.time_per_sample
    return {
        "inventory": after.label,
        "time per sample": f"{time:.6g} ms" if time is not None else "no plan fits",
        "throughput": f"{1000.0 / time:.6g} /s" if time is not None and time > 0 else "—",
        "speedup": f"{worth.speedup:.3f}x" if worth.speedup is not None else "—",
        "price per hour": format_money(after.price_per_hour, currency),
        "cost per 1M samples": per_million(after),
        "devices used": f"{after.point.devices_used} of {sum(after.counts) + after.point.problem.devices.cpus}"
        if after.ok
        else "—",
    }


def summary_markdown(summary: MeetingSummary) -> str:
    """The summary as Markdown (the page's "Download summary"): the same numbers as on screen."""
    s = summary
    lines = [
        f"# Meeting summary: {s.graph}",
        "",
        f"- Devices: {s.devices}" if s.devices else "",
        f"- Memory model: {s.memory_model}",
        f"- Method: {s.method} ({s.status})",
        "",
        "## Speed",
        "",
        "| | |",
        "|---|---|",
        f"| Time per sample (steady state) | {s.time_per_sample:.6g} ms |",
        f"| Throughput (steady state) | {s.throughput:.6g} samples/s |",
    ]
    if s.batch is not None:
        lines += [
            f"| Time per batch ({s.batch.label}, fill and drain) | {s.batch.batch_time:.6g} ms |",
            f"| Throughput with fill and drain | {s.batch.samples_per_second:.4g} samples/s "
            f"(bubble {s.batch.bubble:.1%}) |",
        ]
    if s.tokens_per_second is not None:
        lines.append(
            f"| Tokens/s (steady state, {s.tokens_per_sample:g} tokens per sample) | {format_rate(s.tokens_per_second)} |"
        )
    if s.batch_tokens_per_second is not None:
        lines.append(f"| Tokens/s with fill and drain | {format_rate(s.batch_tokens_per_second)} |")
    lines += [
        "",
        "## Cost",
        "",
        "| | |",
        "|---|---|",
        f"| Price per hour (all {s.cost.devices_held} devices held) | {s.money(s.cost.price_per_hour)} |",
        f"| Cost per 1M samples (steady state) | {s.money(s.cost.cost_per_million)} |",
        f"| Cost per run ({s.samples_per_run:,} samples, {s.run_hours:.4g} h) | {s.money(s.cost_per_run)} |",
        "",
        "## Layout",
        "",
        "| stage | device | nodes | first | last | load (ms) |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {t.position} | {t.device} | {t.nodes} | {t.first} | {t.last} | {t.load:.6g} |" for t in s.stages]
    if s.idle:
        lines += ["", f"Idle devices: {idle_text(s)}. {IDLE_ADVICE}"]
    lines += [
        "",
        "## Memory per device",
        "",
        "| device | weights | gradients | optimizer | activations | peak | memory | free | fits |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {b.device} | {_gib(b.weights)} | {_gib(b.gradients)} | {_gib(b.optimizer)} | {_gib(b.activations)} "
        f"| {_gib(b.peak)} | {_gib(b.cap)} | {_gib(b.free)} | {'yes' if b.fits else 'NO'} |"
        for b in s.memory
    ]
    if s.worth:
        rows = [worth_row(w, s.currency) for w in s.worth]
        lines += ["", "## What more cards are worth", ""]
        lines.append("| | today | " + " | ".join(f"+{w.added} {w.kind}" for w in s.worth) + " |")
        lines.append("|---" * (len(rows) + 2) + "|")
        today = worth_row_today(s.worth[0], s.currency)
        for key in rows[0]:
            lines.append(f"| {key} | {today[key]} | " + " | ".join(r[key] for r in rows) + " |")
    return "\n".join(line for i, line in enumerate(lines) if line or (i and lines[i - 1])) + "\n"


def worth_row_today(worth: Worth, currency: str) -> dict[str, str]:
    """The "today" column of the comparison (``worth.before``, the same for every kind)."""
    row = worth_row(Worth(worth.kind, 0, worth.before, worth.before), currency)
    row["speedup"] = "1x"
    return row


#: What the page and the Markdown say when devices sit idle.
IDLE_ADVICE = (
    "The optimal pipeline leaves them idle; data parallelism (replicas of the pipeline) can use them: "
    "see the Parallel plan page."
)


def idle_text(summary: MeetingSummary) -> str:
    """``"2 x V100"``-style list of the idle devices ("none")."""
    return ", ".join(f"{n} x {kind}" for kind, n in summary.idle) or "none"
