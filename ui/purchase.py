"""The Plan a purchase page's table as plain functions (no Streamlit): what may be bought, and at what price."""

from __future__ import annotations

import math

import pandas as pd

import placement

#: Cards of each kind one may buy, as first offered; the most the table takes; the most "What more cards are worth" takes.
DEFAULT_MOST_TO_BUY, MAX_MOST_TO_BUY, MAX_MORE = 2, 64, 256
CATALOGUE_COLUMNS = {"kind": "string", "owned": "int64", "most to buy": "int64", "price/hour": "float64"}


def catalogue_frame(devices: placement.Devices) -> pd.DataFrame:
    """One row per accelerator kind: owned, the most to buy (first :data:`DEFAULT_MOST_TO_BUY`), price per hour."""
    rows = [
        {"kind": k.name, "owned": k.count, "most to buy": DEFAULT_MOST_TO_BUY, "price/hour": k.price_per_hour}
        for k in devices.accelerators
    ]
    return pd.DataFrame(rows, columns=list(CATALOGUE_COLUMNS)).astype(CATALOGUE_COLUMNS)


def read_catalogue(frame: pd.DataFrame) -> tuple[dict[str, int], dict[str, float]]:
    """(kind -> most to buy, kind -> price per hour) from the edited table."""
    records = frame.to_dict("records")
    extra = {str(row["kind"]): int(row["most to buy"]) for row in records}
    prices = {str(row["kind"]): float(row["price/hour"]) for row in records}
    return extra, prices


def candidate_count(devices: placement.Devices, extra: dict[str, int]) -> int:
    """How many candidate inventories there are: 0 to owned + most to buy of each kind."""
    return math.prod(k.count + extra.get(k.name, 0) + 1 for k in devices.accelerators)
