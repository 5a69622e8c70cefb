"""One cost model for every page: what an hour of an inventory costs, and what one sample costs.

The rule (Devices, Placement, Plan a purchase and the meeting summary all call :func:`plan_cost`):

* an inventory is paid for in full: every card and CPU core held costs its ``price_per_hour``
  (the inventory's kind price; ``cpu_price_per_hour`` per core), **idle ones included** - a card
  the optimal plan leaves idle is still owned or rented;
* the **cost per sample** is ``price per hour of the inventory x time per sample (ms) / 3.6e6``;
* cards are **owned** (today's inventory) or **bought** (a purchase adds them); both cost the
  same per hour, and :class:`PlanCost` reports the two shares separately;
* amounts are in one **currency** the user names (a label only: no exchange rates).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..model import CPU_KIND, Devices, Placement

#: Milliseconds per hour (times are in milliseconds; prices per hour).
MS_PER_HOUR = 3_600_000.0
#: The currency label when the user names none.
DEFAULT_CURRENCY = "USD"


def cost_per_sample(price_per_hour: float, time_per_sample_ms: float | None) -> float | None:
    """Price of one sample: ``price per hour x time per sample (ms) / 3.6e6`` (None without a finite time)."""
    if time_per_sample_ms is None or not math.isfinite(time_per_sample_ms):
        return None
    return price_per_hour * time_per_sample_ms / MS_PER_HOUR


def devices_price(devices: Devices) -> float:
    """Price per hour of every device of an inventory (cards and CPU cores, used or idle)."""
    return (
        sum(kind.count * kind.price_per_hour for kind in devices.accelerators)
        + devices.cpus * devices.cpu_price_per_hour
    )


@dataclass(frozen=True)
class PlanCost:
    """The cost of running a plan on an inventory (prices per hour; times in ms).

    Attributes
    ----------
    price_per_hour : float
        Every device held, idle ones included (what the hour costs).
    used_price_per_hour : float
        The devices the plan gives work.
    bought_price_per_hour : float
        The cards beyond ``owned`` (0 without a purchase).
    idle : tuple of (str, int)
        Per kind (``"CPU"`` for cores), the devices held that the plan leaves idle.
    devices_held, devices_used : int
    time_per_sample : float or None
    """

    price_per_hour: float
    used_price_per_hour: float
    bought_price_per_hour: float
    idle: tuple[tuple[str, int], ...]
    devices_held: int
    devices_used: int
    time_per_sample: float | None

    @property
    def cost_per_sample(self) -> float | None:
        """Price per hour of the inventory x time per sample / 3.6e6 (None without a time)."""
        return cost_per_sample(self.price_per_hour, self.time_per_sample)

    @property
    def cost_per_million(self) -> float | None:
        """Cost of a million samples (None without a time)."""
        one = self.cost_per_sample
        return None if one is None else one * 1e6

    @property
    def idle_price_per_hour(self) -> float:
        """What the idle devices cost per hour."""
        return self.price_per_hour - self.used_price_per_hour

    def idle_text(self) -> str:
        """``"2 x V100, 4 x CPU"`` ("none" when every device works)."""
        return ", ".join(f"{n} x {kind}" for kind, n in self.idle if n) or "none"


def plan_cost(
    devices: Devices,
    placement: Placement | None,
    time_per_sample: float | None,
    owned: Mapping[str, int] | None = None,
) -> PlanCost:
    """The cost of ``placement`` on ``devices`` (module docstring); ``owned``: cards per kind owned before a purchase.

    Examples
    --------
    >>> from placement.model import AcceleratorKind, Devices
    >>> inventory = Devices(accelerators=(AcceleratorKind("A100", 2, 1e9, price_per_hour=3.0),), cpus=0)
    >>> cost = plan_cost(inventory, None, 3600.0)  # no plan: every card idle
    >>> cost.price_per_hour, cost.cost_per_sample, cost.idle_text()
    (6.0, 0.006, '2 x A100')
    """
    used: dict[str, int] = {}
    if placement is not None:
        for stage in placement.stages:
            if stage.nodes:
                used[stage.device.kind] = used.get(stage.device.kind, 0) + 1
    used_price = used.get(CPU_KIND, 0) * devices.cpu_price_per_hour
    bought = 0.0
    idle = []
    for kind in devices.accelerators:
        n_used = used.get(kind.name, 0)
        used_price += n_used * kind.price_per_hour
        idle.append((kind.name, kind.count - n_used))
        if owned is not None:
            bought += max(0, kind.count - owned.get(kind.name, kind.count)) * kind.price_per_hour
    if devices.cpu_price_per_hour > 0:  # unpriced CPU cores idle cost nothing
        idle.append(("CPU", devices.cpus - used.get(CPU_KIND, 0)))
    held = sum(kind.count for kind in devices.accelerators) + devices.cpus
    return PlanCost(
        devices_price(devices),
        used_price,
        bought,
        tuple(idle),
        held,
        sum(used.values()),
        time_per_sample if time_per_sample is not None and math.isfinite(time_per_sample) else None,
    )


def format_money(value: float | None, currency: str = DEFAULT_CURRENCY) -> str:
    """``"126.6 USD"``-style text (4 significant digits; "—" for None)."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:,.4g} {currency}".strip()
