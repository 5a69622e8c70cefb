"""How the pages write numbers and settings: times with their unit, devices, money, method names, notes."""

from __future__ import annotations

import streamlit as st

import placement
from placement.evaluate import LATENCY_INFERENCE_ONLY
from placement.solve import METHODS
from ui.graph_state import cost_source_text, current_currency, current_graph_source, current_memory_model
from ui.plan_metrics import plan_cost

#: Unit of every latency and transfer cost: the paper's graph format and the model importer use milliseconds.
TIME_UNIT = "ms"


def time_unit() -> str:
    """The unit of the loaded graph's times (``"ms"``: the paper's format and imported models use it)."""
    return TIME_UNIT


def time_unit_note() -> str:
    """One sentence saying which unit the numbers are in, and why."""
    if current_graph_source().startswith("upload:"):
        return (
            "Times are in the file's own unit; the paper's graph format uses milliseconds, so this app labels them ms."
        )
    return "Times are in milliseconds (ms), the unit of the paper's graph files and of imported models."


def cost_source_caption() -> None:
    """A caption naming the model behind the graph's times, the same on every page that shows them.

    :func:`placement.modelling.pricing.cost_source` of the graph in force: the perf model's kernel physics on a
    catalogue kind for built and imported graphs, "profiled" for the paper's graph files (their own measurements).
    """
    text = cost_source_text()
    if text:
        st.caption(f":material/science: Node times: {text}.")


def format_time(value: float | None, digits: int = 6) -> str:
    """A time with its unit, e.g. ``12.5 ms`` ("—" for None)."""
    if value is None:
        return "—"
    return f"{value:.{digits}g} {TIME_UNIT}"


def method_name(method: str) -> str:
    """The display name of a method id: its registry title (``METHODS``); the id itself when unknown.

    One description per method: menus, tables and the CLI's ``--help`` all read the registry.
    """
    spec = METHODS.get(method)
    return spec.title if spec is not None else method


def describe_devices(devices: placement.Devices) -> str:
    """One line such as ``8 x H100 (80 GiB, 2.5 USD/h) + 4 x A100 (80 GiB, 1.8 USD/h) + 32 CPU cores; ...``.

    A kind's speed (a what-if multiplier), link bandwidth and price appear when they are not the neutral 1, 1, 0.
    """
    from placement.viz import format_bytes

    kinds = [
        f"{k.count} x {k.name} ({format_bytes(k.memory)}"
        + (f", speed x{k.speed:g}" if k.speed != 1 else "")
        + (f", bandwidth x{k.bandwidth:.3g}" if k.bandwidth != 1 else "")
        + (f", {money(k.price_per_hour)}/h" if k.price_per_hour else "")
        + ")"
        for k in devices.accelerators
    ]
    text = " + ".join(kinds) if kinds else "no accelerators"
    text += f" + {devices.cpus} CPU core{'s' if devices.cpus != 1 else ''}"
    if devices.cpus and devices.cpu_price_per_hour:
        text += f" ({money(devices.cpu_price_per_hour)}/h each)"
    text += f"; bandwidth x{devices.bandwidth:g}"
    if devices.overlap:
        text += "; compute/communication overlap on"
    if devices.cpu_bandwidth is not None:
        text += f"; CPU cores pay transfers (CPU bandwidth x{devices.cpu_bandwidth:g})"
    return text + f"; memory model: {current_memory_model().describe()}"


def latency_text(problem: placement.Problem, latency: float) -> tuple[str, str]:
    """(value, help) of a single-sample latency metric: ``n/a`` with the reason when it is not finite."""
    if latency != float("inf"):
        return format_time(latency), "Single-sample latency of this placement (evaluator)"
    if problem.graph.is_training:
        return "n/a", LATENCY_INFERENCE_ONLY
    return "n/a", "The accelerator calls of this placement depend on each other in a cycle: no finite latency"


#: The latency bounds by the name ``latency-ip`` gives the active one (its ``bound_source`` stat).
BOUND_NAMES = {
    "critical_path": "critical-path bound",
    "work": "work bound",
    "chain": "chain bound",
    "memory_chain": "memory chain bound",
    "relaxation": "device-choice relaxation",
    "ip": "the integer programs' bound",
}


def not_optimal_note(result: placement.Result) -> str:
    """Why a "feasible" result is not proven optimal, in words true for its method."""
    spec = METHODS.get(result.method)
    source = BOUND_NAMES.get(result.stat("bound_source"))
    bound = f", lower bound {result.bound:.6g}" if result.bound is not None else ""
    bound += f" ({source})" if bound and source else ""
    gap = f": optimality gap {result.gap:.2%}{bound}" if result.gap is not None else ""
    if result.reason:
        return f"Not proven optimal ({result.reason}){gap}."
    if spec is not None and not spec.exact:
        return f"Not proven optimal: {result.method} is a heuristic (no bound)."
    if spec is not None and spec.has_time_limit:
        return f"Not proven optimal ({result.method} stopped at its time limit, {result.seconds:.1f} s){gap}."
    return f"Not proven optimal{gap or f' ({result.method} reports no proof)'}."


def money(value: float | None) -> str:
    """An amount in the current currency, e.g. ``126.6 USD`` ("—" for None)."""
    from placement.explore.cost import format_money

    return format_money(value, current_currency())


def plan_cost_line(problem: placement.Problem, result: placement.Result) -> tuple[str, str]:
    """``(value, help)`` of the "Cost per 1M samples" metric: price per hour of the inventory x time per sample.

    Every card and CPU core held counts, idle ones included (the one cost model,
    :mod:`placement.explore.cost`, as on Plan a purchase); "—" when no device has a price.
    """
    cost = plan_cost(problem, result)
    help_text = (
        f"Price per hour of all {cost.devices_held} devices held ({money(cost.price_per_hour)}; the plan uses "
        f"{cost.devices_used}, idle: {cost.idle_text()}) x time per sample ({format_time(cost.time_per_sample)}) "
        "/ 3,600,000 ms per hour, per million samples. Idle cards are paid for too; Plan a purchase counts the "
        "same way. Set prices and the currency on the Devices page."
    )
    if cost.cost_per_million is None or cost.price_per_hour == 0:
        return "—", help_text
    return money(cost.cost_per_million), help_text
