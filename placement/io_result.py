"""The one serializer of :class:`~placement.model.Result`: plain JSON data and back, every field type-checked.

Re-exported by :mod:`placement.io`; the sweep executors send worker results through it.
"""

from __future__ import annotations

from typing import Any, cast

from .errors import PlacementError
from .model import DeviceSlot, Placement, Result, Stage, make_result


def result_to_dict(result: Result) -> dict[str, Any]:
    """A result as JSON-ready plain data (the one result serializer; :func:`result_from_dict` reads it back).

    A Dask worker sends its result back so (:mod:`placement.explore.executors`).
    """
    placement = None
    if result.placement is not None:
        placement = [
            {
                "kind": st.device.kind,
                "index": st.device.index,
                "nodes": list(st.nodes),
                "calls": [list(c) for c in st.calls] if st.calls is not None else None,
            }
            for st in result.placement.stages
        ]
    stats = [[str(k), v] for k, v in result.stats if v is None or isinstance(v, (bool, int, float, str))]
    return {
        "status": result.status,
        "method": result.method,
        "objective": result.objective,
        "placement": placement,
        "seconds": result.seconds,
        "objective_kind": result.objective_kind,
        "reason": result.reason,
        "bound": result.bound,
        "gap": result.gap,
        "stats": stats,
    }


def _plain_number(value: Any, what: str, optional: bool = True) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlacementError(f"worker result: {what} must be a number (got {type(value).__name__})")
    return float(value)


def _plain_ids(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise PlacementError(f"worker result: {what} must be a list of integers")
    return tuple(value)


def result_from_dict(data: Any) -> Result:
    """Rebuild a :class:`Result` from :func:`result_to_dict` data, checking every field's type.

    Raises
    ------
    PlacementError
        When the data is not exactly such plain data (one line naming the field).
    """
    if not isinstance(data, dict):
        raise PlacementError("worker result: not an object")
    for key in ("status", "method", "objective_kind"):
        if not isinstance(data.get(key), str):
            raise PlacementError(f"worker result: {key} must be a string")
    if data.get("reason") is not None and not isinstance(data["reason"], str):
        raise PlacementError("worker result: reason must be a string")
    placement = None
    if data.get("placement") is not None:
        if not isinstance(data["placement"], list):
            raise PlacementError("worker result: placement must be a list of stages")
        stages = []
        for raw in data["placement"]:
            if (
                not isinstance(raw, dict)
                or not isinstance(raw.get("kind"), str)
                or not isinstance(raw.get("index"), int)
                or isinstance(raw.get("index"), bool)
            ):
                raise PlacementError("worker result: a stage needs a kind (string) and an index (integer)")
            calls = raw.get("calls")
            if calls is not None:
                if not isinstance(calls, list):
                    raise PlacementError("worker result: calls must be a list")
                calls = tuple(_plain_ids(c, "a call") for c in calls)
            stages.append(
                Stage(DeviceSlot(raw["kind"], raw["index"]), _plain_ids(raw.get("nodes"), "stage nodes"), calls)
            )
        placement = Placement(tuple(stages))
    stats = data.get("stats", [])
    if not isinstance(stats, list) or not all(
        isinstance(item, list)
        and len(item) == 2
        and isinstance(item[0], str)
        and (item[1] is None or isinstance(item[1], (bool, int, float, str)))
        for item in stats
    ):
        raise PlacementError("worker result: stats must be a list of [name, plain value] pairs")
    try:
        return make_result(
            data["method"],
            data["status"],
            seconds=cast(float, _plain_number(data.get("seconds"), "seconds", optional=False)),
            objective=_plain_number(data.get("objective"), "objective"),
            placement=placement,
            objective_kind=data["objective_kind"],
            reason=data.get("reason"),
            bound=_plain_number(data.get("bound"), "bound"),
            gap=_plain_number(data.get("gap"), "gap"),
            stats=tuple((k, v) for k, v in stats),
        )
    except ValueError as exc:
        raise PlacementError(f"worker result: {exc}") from None
