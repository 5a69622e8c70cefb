"""Direct answers for a purchase: what to buy, what more cards are worth, the cost/speed frontier.

Every candidate inventory (a count per accelerator kind, from 0 to what is owned plus what may
be bought) is solved exactly (:func:`placement.explore.sweep.sweep` with the ``"counts"`` parameter, the
DP by default), so every answer is the true optimum over the candidates, not an estimate:

* :func:`purchase_options` - every candidate with its optimal time per sample and its price;
* :func:`cheapest_under` - the cheapest candidate whose time per sample is at most a target;
* :func:`fastest_within` - the fastest candidate whose price is at most a budget;
* :func:`price_frontier` - the candidates no other is both cheaper and faster than;
* :func:`worth_of_more` - what ``n`` more cards of one kind change (time, throughput, cost per sample).

Prices are per hour per card (the inventory's ``price_per_hour``, or overrides), plus the
inventory's ``cpu_price_per_hour`` per CPU core; a candidate's price is that of every device in
it, idle ones included (the one cost model of every page, :mod:`placement.explore.cost`). Times are in the graph's unit (milliseconds for the paper's files), so the cost per sample
is ``price per hour x time per sample / 3,600,000``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from ..errors import PlacementError
from ..model import Devices, Problem
from .cost import MS_PER_HOUR, cost_per_sample, devices_price  # noqa: F401  (re-exported: one cost model)
from .sweep import SweepPoint, count_label, sweep

#: At most this many candidate inventories are solved by default (each is one exact solve).
MAX_OPTIONS = 1000


@dataclass(frozen=True)
class Option:
    """One candidate inventory, solved.

    Attributes
    ----------
    counts : tuple of int
        Count of each accelerator kind, in inventory order.
    label : str
        E.g. ``"4 x V100 + 2 x T4"``.
    price_per_hour : float
        Price of every device in the candidate (cards and CPU cores).
    added : tuple of int
        Cards of each kind beyond today's inventory (0 where the candidate has fewer).
    point : SweepPoint
        The exact solve (problem, result, devices used).
    """

    counts: tuple[int, ...]
    label: str
    price_per_hour: float
    added: tuple[int, ...]
    point: SweepPoint

    @property
    def ok(self) -> bool:
        """True when a plan exists."""
        return self.point.ok

    @property
    def time_per_sample(self) -> float | None:
        """The optimal time per sample (None when nothing fits)."""
        return self.point.time_per_sample

    @property
    def cost_per_sample(self) -> float | None:
        """``price_per_hour x time_per_sample / 3.6e6``."""
        return cost_per_sample(self.price_per_hour, self.time_per_sample)


def _with_prices(devices: Devices, prices: Mapping[str, float] | None) -> Devices:
    if not prices:
        return devices
    names = {kind.name for kind in devices.accelerators}
    for name, price in prices.items():
        if name not in names:
            raise PlacementError(f"price for unknown accelerator kind {name!r}; kinds: {', '.join(sorted(names))}")
        if not (isinstance(price, (int, float)) and math.isfinite(price) and price >= 0):
            raise PlacementError(f"{name}: price per hour must be a non-negative number (got {price!r})")
    kinds = tuple(
        replace(kind, price_per_hour=float(prices.get(kind.name, kind.price_per_hour))) for kind in devices.accelerators
    )
    return devices.with_changes(accelerators=kinds)


def candidate_counts(
    devices: Devices, extra: Mapping[str, int], max_options: int = MAX_OPTIONS
) -> tuple[tuple[int, ...], ...]:
    """Every count vector with ``0 <= count <= owned + extra`` per kind (not all zero unless there are CPU cores).

    Raises
    ------
    PlacementError
        For an unknown kind, a negative extra count, or more than ``max_options`` candidates.
    """
    names = [kind.name for kind in devices.accelerators]
    for name, count in extra.items():
        if name not in names:
            raise PlacementError(f"cards to buy of unknown accelerator kind {name!r}; kinds: {', '.join(names)}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise PlacementError(f"{name}: cards to buy must be a non-negative integer (got {count!r})")
    maxima = [kind.count + extra.get(kind.name, 0) for kind in devices.accelerators]
    total = math.prod(m + 1 for m in maxima)
    if total > max_options:
        raise PlacementError(
            f"{total:,} candidate inventories (counts 0 to {', '.join(map(str, maxima))}) is over "
            f"the limit of {max_options:,}: lower the maximum counts to buy"
        )
    grid = [c for c in itertools.product(*(range(m + 1) for m in maxima)) if any(c) or devices.cpus > 0]
    return tuple(grid)


def purchase_options(
    problem: Problem,
    extra: Mapping[str, int],
    prices: Mapping[str, float] | None = None,
    method: str = "dp",
    executor: Any = None,
    progress: Callable[[int, int], None] | None = None,
    max_options: int = MAX_OPTIONS,
    **options: Any,
) -> tuple[Option, ...]:
    """Solve every candidate inventory from 0 to ``owned + extra`` cards of each kind.

    Parameters
    ----------
    problem : Problem
        The graph and today's inventory (its counts are what is owned; CPU cores stay as they are).
    extra : mapping
        Kind name -> at most how many more cards of that kind may be bought.
    prices : mapping, optional
        Kind name -> price per hour of one card (default: the inventory's ``price_per_hour``).
    method : str
        Solver method (the exact DP by default).
    executor, progress
        As in :func:`placement.explore.sweep.sweep` (a process pool or Dask executor, ``progress(done, total)``).
    max_options : int
        Refuse (with a :class:`PlacementError`) more candidates than this.
    **options
        Passed to the solver.

    Returns
    -------
    tuple of Option
        In grid order (the first kind's count varies slowest).
    """
    devices = _with_prices(problem.devices, prices)
    base = replace(problem, devices=devices)
    grid = candidate_counts(devices, extra, max_options)
    points = sweep(base, "counts", grid, method=method, executor=executor, progress=progress, **options)
    owned = [kind.count for kind in devices.accelerators]
    out = []
    for counts, point in zip(grid, points):
        config = point.problem.devices
        out.append(
            Option(
                tuple(counts),
                count_label(config, counts),
                devices_price(config),
                tuple(max(0, c - o) for c, o in zip(counts, owned)),
                point,
            )
        )
    return tuple(out)


#: Relative tolerance of targets and budgets: pages show 6 significant digits, so a typed-in displayed
#: value may be up to 5e-6 (relative) below the exact one (18.3765 shown for 18.376521); 1e-5 keeps
#: today's setup inside a target copied from the screen.
TARGET_TOLERANCE = 1e-5


def today(options: Sequence[Option], devices: Devices) -> Option | None:
    """The candidate holding exactly today's inventory ``devices`` (None if it is not among ``options``)."""
    owned = tuple(kind.count for kind in devices.accelerators)
    return next((o for o in options if tuple(o.counts) == owned), None)


def cheapest_under(options: Sequence[Option], max_time: float, rel_tol: float = TARGET_TOLERANCE) -> Option | None:
    """The cheapest option whose time per sample is at most ``max_time`` (ties: the faster; None if none).

    ``rel_tol``: times up to ``max_time x (1 + rel_tol)`` count as meeting it (:data:`TARGET_TOLERANCE`).
    """
    limit = max_time * (1 + rel_tol)
    fits = [o for o in options if o.ok and cast(float, o.time_per_sample) <= limit]  # ok: a time
    return min(fits, key=lambda o: (o.price_per_hour, o.time_per_sample, sum(o.counts)), default=None)


def fastest_within(options: Sequence[Option], budget: float, rel_tol: float = TARGET_TOLERANCE) -> Option | None:
    """The fastest option whose price per hour is at most ``budget`` (ties: the cheaper; None if none)."""
    fits = [o for o in options if o.ok and o.price_per_hour <= budget * (1 + rel_tol)]
    return min(fits, key=lambda o: (o.time_per_sample, o.price_per_hour, sum(o.counts)), default=None)


def price_frontier(options: Sequence[Option]) -> tuple[Option, ...]:
    """Options no other option beats on both price per hour and time per sample, sorted by price.

    Among options with equal (price, time) the one with fewer cards is kept.
    """
    usable = sorted((o for o in options if o.ok), key=lambda o: (o.price_per_hour, o.time_per_sample, sum(o.counts)))
    front: list[Option] = []
    best = math.inf
    for option in usable:  # sorted by price: an option is on the front iff it is faster than every cheaper one
        time_per_sample = cast(float, option.time_per_sample)  # ok: a time
        if time_per_sample < best * (1 - 1e-12):
            if front and front[-1].price_per_hour == option.price_per_hour:
                continue  # same price, slower than the kept one (sorted by time within a price)
            front.append(option)
            best = time_per_sample
    return tuple(front)


@dataclass(frozen=True)
class Worth:
    """What ``added`` more cards of ``kind`` change.

    ``before``/``after`` are the exact optima of today's inventory and of the larger one.
    """

    kind: str
    added: int
    before: Option
    after: Option

    @property
    def time_saved(self) -> float | None:
        """Time per sample saved (ms; None when either has no plan)."""
        if not (self.before.ok and self.after.ok):
            return None
        return cast(float, self.before.time_per_sample) - cast(float, self.after.time_per_sample)  # both ok

    @property
    def speedup(self) -> float | None:
        """Throughput ratio after / before (None when either has no plan)."""
        if not (self.before.ok and self.after.ok) or cast(float, self.after.time_per_sample) <= 0:
            return None
        return cast(float, self.before.time_per_sample) / cast(float, self.after.time_per_sample)  # both ok

    @property
    def sentence(self) -> str:
        """The answer in words."""
        name = f"card{'s' if self.added != 1 else ''} of kind {self.kind}"
        if not self.after.ok:
            return f"Even with {self.added} more {name}, no plan fits."  # "1 more card", "2 more cards"
        if not self.before.ok:
            return (
                f"Today nothing fits; with {self.added} more {name} the time per sample is "
                f"{self.after.time_per_sample:.6g} ms."
            )
        saved, speedup = cast(float, self.time_saved), self.speedup  # both ok: a time saved
        if saved <= cast(float, self.before.time_per_sample) * 1e-12:
            return (
                f"{self.added} more {name} change{'s' if self.added == 1 else ''} nothing: the optimal time per sample stays "
                f"{self.before.time_per_sample:.6g} ms (the best plan does not use them)."
            )
        text = (
            f"{self.added} more {name} take{'s' if self.added == 1 else ''} the time per sample from {self.before.time_per_sample:.6g} to "
            f"{self.after.time_per_sample:.6g} ms ({saved:.4g} ms saved, {speedup:.3f}x the throughput)"
        )
        before_cost = cast(float, self.before.cost_per_sample)  # both ok: finite times, so costs
        after_cost = cast(float, self.after.cost_per_sample)
        if self.after.price_per_hour > 0:
            text += (
                f"; price per hour {self.before.price_per_hour:,.4g} -> {self.after.price_per_hour:,.4g}, "
                f"cost per million samples {before_cost * 1e6:,.4g} -> {after_cost * 1e6:,.4g}"
            )
        return text + "."


def worth_of_more(
    problem: Problem,
    kind: str,
    added: int,
    prices: Mapping[str, float] | None = None,
    method: str = "dp",
    **options: Any,
) -> Worth:
    """Solve today's inventory and the one with ``added`` more cards of ``kind``; compare them exactly.

    Raises
    ------
    PlacementError
        For an unknown kind or a negative count.
    """
    if isinstance(added, bool) or not isinstance(added, int) or added < 0:
        raise PlacementError(f"{kind}: the number of cards to add must be a non-negative integer (got {added!r})")
    devices = _with_prices(problem.devices, prices)
    devices.kind(kind)
    owned = tuple(k.count for k in devices.accelerators)
    more = tuple(c + (added if k.name == kind else 0) for k, c in zip(devices.accelerators, owned))
    base = replace(problem, devices=devices)
    points = sweep(base, "counts", [owned, more], method=method, **options)
    made = []
    for counts, point in zip((owned, more), points):
        config = point.problem.devices
        made.append(
            Option(
                counts,
                count_label(config, counts),
                devices_price(config),
                tuple(max(0, c - o) for c, o in zip(counts, owned)),
                point,
            )
        )
    return Worth(kind, added, made[0], made[1])
