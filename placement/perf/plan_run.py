"""The meeting's answer at the command line: prices, time and money per run, GPU kinds side by side, nearest counts.

Used by ``python -m placement plan`` (:mod:`placement.perf.plan_cli`):

* :func:`parse_prices` reads ``--price`` (``2.5``, or ``A100=1.8,H100=2.5`` per kind); :func:`price_of` picks a
  kind's price: the one given, else the catalogue's default USD price (``Accelerator.usd_per_hour``) when the
  currency is USD, else none.
* :func:`run_figures` - a run of ``tokens`` tokens on a plan: iterations, seconds, cost per hour and per run
  (:meth:`Plan.run_seconds`, :meth:`Plan.cost_per_run`: tokens over the predicted tokens/s).
* :func:`compare_kinds` - the same model, batch, GPU count and token budget on several kinds: each kind's plan
  with days and money per run, memory, headroom and fit.
* :func:`nearest_counts` - when a GPU count has no layout, the nearest counts below and above that have one
  (whole nodes; each found by the search itself).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import PlacementError, quote
from .hardware import GIB, Accelerator, Cluster, accelerator
from .params import DEFAULT_PARAMS, PerfParams
from .search import Plan, SearchResult, search
from .transformer import TransformerSpec

#: The catalogue's prices are in this currency.
CATALOGUE_CURRENCY = "USD"
#: Largest price per GPU-hour taken (any currency).
MAX_PRICE = 1e6
#: GPU counts tried on each side by :func:`nearest_counts` before it gives up.
NEAREST_TRIES = 32
SECONDS_PER_DAY = 86_400.0


def _price_number(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise PlacementError(f"--price {quote(where)}: {quote(text, 40)} is not a number") from None
    if not (math.isfinite(value) and 0 <= value <= MAX_PRICE):
        raise PlacementError(f"--price {quote(where)}: must be a finite number from 0 to {MAX_PRICE:g}")
    return value


def parse_prices(text: str | None) -> tuple[float | None, dict[str, float]]:
    """``--price``: one price per GPU-hour for every kind, or ``KIND=PRICE,...`` per catalogue kind.

    Returns ``(price or None, {canonical kind name: price})``.
    """
    if text is None:
        return None, {}
    if "=" not in text:
        return _price_number(text.strip(), text), {}
    prices: dict[str, float] = {}
    for part in text.split(","):
        kind, eq, number = part.partition("=")
        if not eq:
            raise PlacementError(f"--price {quote(text)}: {quote(part, 40)} is not KIND=PRICE")
        prices[accelerator(kind).name] = _price_number(number.strip(), text)
    return None, prices


def price_of(acc: Accelerator, price: float | None, prices: Mapping[str, float], currency: str) -> float | None:
    """The price per GPU-hour of ``acc``: given for its kind, else given for all, else the catalogue's (USD only)."""
    if acc.name in prices:
        return prices[acc.name]
    if price is not None:
        return price
    if currency == CATALOGUE_CURRENCY and acc.usd_per_hour > 0:
        return float(acc.usd_per_hour)
    return None


def priced(cluster: Cluster, price: float | None) -> Cluster:
    """The cluster with its accelerator priced at ``price`` per GPU-hour."""
    return cluster.with_changes(accelerator=replace(cluster.accelerator, price_per_hour=price))


def price_source(acc: Accelerator, price: float | None, given: bool, currency: str) -> str:
    """Where a price came from, in words."""
    if price is None:
        return f"no price in {currency} (give --price)"
    if given:
        return f"{price:g} {currency} per GPU-hour (--price)"
    date = f" {acc.price_date}" if acc.price_date else ""
    return f"{price:g} {currency} per GPU-hour (catalogue default{date}, editable with --price)"


@dataclass(frozen=True)
class RunFigures:
    """A run of ``tokens`` tokens on one plan (seconds; money in the plan's currency, None without a price)."""

    tokens: float | None
    iterations: float | None
    seconds: float | None
    cost_per_hour: float | None
    cost_per_iteration: float | None
    cost: float | None

    @property
    def days(self) -> float | None:
        """:attr:`seconds` in days."""
        return None if self.seconds is None else self.seconds / SECONDS_PER_DAY

    def as_dict(self) -> dict[str, Any]:
        """JSON values (``days`` included)."""
        return {**self.__dict__, "days": self.days}


def run_figures(plan: Plan, model: TransformerSpec, tokens: float | None) -> RunFigures:
    """Iterations, time and cost of a run of ``tokens`` tokens on ``plan`` (per hour and per iteration always)."""
    per_hour = None if plan.price_per_hour is None else plan.gpus * plan.price_per_hour
    if tokens is None:
        return RunFigures(None, None, None, per_hour, plan.cost_per_iteration, None)
    per_iteration = plan.layout.global_batch * model.seq_length
    return RunFigures(
        tokens, tokens / per_iteration, plan.run_seconds(tokens), per_hour, plan.cost_per_iteration,
        plan.cost_per_run(tokens),
    )  # fmt: skip


def money(value: float | None, currency: str) -> str:
    """``1,234 USD`` (three significant digits below 100), or ``-`` without a price."""
    if value is None:
        return "-"
    return f"{value:,.0f} {currency}" if value >= 100 else f"{value:.3g} {currency}"


def tokens_text(tokens: float) -> str:
    """``15T`` / ``300B`` / ``2.5M`` tokens."""
    for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if tokens >= size:
            return f"{tokens / size:.4g}{suffix}"
    return f"{tokens:g}"


def run_lines(plan: Plan, model: TransformerSpec, tokens: float | None, currency: str, source: str) -> list[str]:
    """The plan's cost lines: per hour and per iteration, and with ``tokens`` the run's iterations, days and cost."""
    fig = run_figures(plan, model, tokens)
    within = f" ({plan.prediction.error.headline})"
    lines = [f"price: {source}"]
    if fig.cost_per_hour is not None:
        lines.append(
            f"cost: {money(fig.cost_per_hour, currency)} per hour ({plan.gpus:,} GPUs), "
            f"{money(fig.cost_per_iteration, currency)} per iteration{within}"
        )
    if tokens is not None and fig.iterations is not None and fig.days is not None:
        cost = "" if fig.cost is None else f", {money(fig.cost, currency)}"
        lines.append(
            f"run of {tokens_text(tokens)} tokens ({tokens:,.0f}): {math.ceil(fig.iterations):,} iterations, "
            f"{fig.days:,.2f} days{within}{cost}"
        )
    return lines


def nearest_counts(
    model: TransformerSpec,
    cluster: Cluster,
    global_batch: int,
    space: str,
    tries: int = NEAREST_TRIES,
    params: PerfParams = DEFAULT_PARAMS,
) -> list[Plan]:
    """The plans of the nearest GPU counts below and above ``cluster.gpus`` that have a layout (0 to 2 plans).

    Counts are whole nodes (or divisors of one node below it), tried outwards from ``cluster.gpus``,
    at most ``tries`` on each side.
    """
    g, n = cluster.gpus_per_node, cluster.gpus
    partial = [d for d in range(1, g) if g % d == 0]  # one partial node (GPUs dividing a node)
    counts = sorted({*partial, *range(g, max(n, g) + g * (tries + 1), g)})
    below = [c for c in reversed(counts) if c < n][:tries]
    above = [c for c in counts if c > n][:tries]
    found = []
    for side in (below, above):
        for count in side:
            result = search(model, cluster.with_changes(gpus=count), global_batch, space, params=params)
            if result.plan is not None:
                found.append(result.plan)
                break
    return found


def nearest_lines(plans: Sequence[Plan], gpus: int, tries: int = NEAREST_TRIES) -> list[str]:
    """One line: the nearest counts with a layout and their iteration times."""
    if not plans:
        return [f"no layout within {tries} node counts of {gpus:,} GPUs either way"]
    shown = ", ".join(f"{p.gpus:,} GPUs ({p.iteration_seconds:.4g} s per iteration)" for p in plans)
    return [f"no layout for {gpus:,} GPUs; nearest counts with a layout: {shown}"]


@dataclass(frozen=True)
class KindRow:
    """One GPU kind of :func:`compare_kinds`: its search result, price and run."""

    kind: str
    result: SearchResult
    price: float | None
    run: RunFigures | None

    def as_dict(self) -> dict[str, Any]:
        """JSON values."""
        plan = self.result.plan
        out: dict[str, Any] = {"gpu": self.kind, "status": str(self.result.status), "price_per_gpu_hour": self.price}
        if plan is None:
            return {**out, "reason": self.result.reason}
        pred = plan.prediction
        return {
            **out,
            "gpus": plan.gpus,
            "iteration_seconds": plan.iteration_seconds,
            "tokens_per_second": pred.tokens_per_second,
            "memory_bytes": plan.memory_bytes,
            "memory_capacity": pred.memory_capacity,
            "headroom_bytes": pred.memory_capacity - plan.memory_bytes,
            "fits": pred.fits,
            "run": None if self.run is None else self.run.as_dict(),
        }


def compare_kinds(
    model: TransformerSpec,
    cluster: Cluster,
    kinds: Sequence[str],
    global_batch: int,
    space: str,
    tokens: float | None,
    prices: tuple[float | None, Mapping[str, float]],
    currency: str,
) -> list[KindRow]:
    """The optimum of each kind of ``kinds`` on ``cluster``'s GPU count, nodes and links, priced by :func:`price_of`."""
    rows = []
    for kind in kinds:
        acc = accelerator(kind)
        price = price_of(acc, prices[0], prices[1], currency)
        sub = priced(cluster.with_changes(accelerator=acc), price)
        result = search(model, sub, global_batch, space)
        run = None if result.plan is None else run_figures(result.plan, model, tokens)
        rows.append(KindRow(acc.name, result, price, run))
    return rows


def compare_text(rows: Sequence[KindRow], tokens: float | None, currency: str) -> list[str]:
    """The kinds side by side: a table, one row per kind."""
    run = f"run of {tokens_text(tokens)}" if tokens is not None else "run (give --tokens)"
    head = ("GPU", "GPUs", "price/h", "iteration s", "tokens/s", "days/run", "cost/run",
            "GiB per GPU", "headroom", "fits")  # fmt: skip
    table = []
    for row in rows:
        plan = row.result.plan
        price = "-" if row.price is None else f"{row.price:g} {currency}"
        if plan is None:
            table.append((row.kind, "-", price, "no layout", "", "", "", "", "", "no"))
            continue
        pred, fig = plan.prediction, row.run
        days = "-" if fig is None or fig.days is None else f"{fig.days:,.1f}"
        capacity = pred.memory_capacity
        table.append((
            row.kind, f"{plan.gpus:,}", price, f"{plan.iteration_seconds:.4g}", f"{pred.tokens_per_second:,.0f}", days,
            money(None if fig is None else fig.cost, currency),
            f"{plan.memory_bytes / GIB:.1f} of {capacity / GIB:.0f}", f"{(capacity - plan.memory_bytes) / GIB:.1f} GiB",
            "yes" if pred.fits else "NO",
        ))  # fmt: skip
    widths = [max(len(str(r[i])) for r in (head, *table)) for i in range(len(head))]
    lines = [f"GPU kinds side by side ({run}; each kind's fastest layout, {currency}):"]
    for r in (head, *table):
        lines.append("  " + "  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    for row in rows:
        if row.result.plan is None:
            lines.append(f"  {row.kind}: no layout: {row.result.reason}")
    return lines
