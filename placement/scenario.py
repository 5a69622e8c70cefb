"""Scenarios: everything that defines a view of the explorer, as plain data that can be shared.

A :class:`Scenario` names the graph (a sample label, or the digest of an uploaded graph), the
devices, the latency multipliers, the method, objective and time limit, and page settings
such as the pipeline schedule. It travels two ways:

* as URL query parameters (:func:`scenario_to_query` / :func:`scenario_from_query`): short,
  the graph by reference only;
* as a "scenario card" JSON file (:func:`scenario_to_json` / :func:`parse_scenario`): the same
  fields, plus the graph inline when it was uploaded (validated like any uploaded graph).

The devices travel in the one device format of :mod:`placement.io` (:func:`~placement.io.devices_to_dict`);
links and cards written in the older format still open (:mod:`placement.scenario_devices`).

Every malformed input raises :class:`~placement.errors.InvalidScenarioError` with one line
naming the source, the field and the rule broken.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidScenarioError, PlacementError, label, quote
from .io import MAX_FILE_BYTES, UNLIMITED, devices_to_dict, graph_from_dict, graph_to_dict, parse_json
from .model import Devices, Graph, Objective
from .scenario_devices import MAX_DEVICES as MAX_DEVICES  # re-exported
from .scenario_devices import read_devices
from .scenario_plan import PickedPlan, plan_from_plain, plan_to_plain

#: Value of the card's ``format`` field.
CARD_FORMAT = "placement-scenario"
CARD_VERSION = 1
OBJECTIVES = tuple(objective.value for objective in Objective)
MAX_TIME_LIMIT = 3600.0
MAX_RULES = 50
MAX_SETTINGS = 50
MAX_TEXT = 200
_SETTING_KEY = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_SAMPLE_LABEL = re.compile(r"^[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")
_DIGEST = re.compile(r"^[0-9a-f]{8,64}$")

Setting = str | int | float | bool


@dataclass(frozen=True)
class Scenario:
    """One view of the explorer.

    Parameters
    ----------
    graph : str
        ``"sample:<label>"`` (a file under ``sample_graphs/``) or ``"upload:<digest>"`` (a graph
        the user uploaded or imported; :attr:`Graph.digest`).
    devices : Devices
        The device inventory in force.
    method, objective : str
        The solver method and objective (``"throughput"`` or ``"latency"``).
    time_limit : float
        Seconds, for methods that take a time limit.
    latency_rules : tuple of (str, float)
        Latency multipliers ``(pattern, factor)`` in order.
    settings : tuple of (str, scalar)
        Page settings (e.g. the pipeline schedule), sorted by key.
    graph_name : str
        Display name of the graph.
    inline_graph : Graph or None
        The graph itself, carried by a scenario card when the graph was uploaded.
    plan : PickedPlan or None
        The plan picked on a page (:mod:`placement.scenario_plan`), shown instead of a fresh solve.
    """

    graph: str
    devices: Devices
    method: str = "dp"
    objective: str = Objective.THROUGHPUT.value
    time_limit: float = 30.0
    latency_rules: tuple[tuple[str, float], ...] = ()
    settings: tuple[tuple[str, Setting], ...] = ()
    graph_name: str = ""
    inline_graph: Graph | None = None
    plan: PickedPlan | None = None

    def __post_init__(self) -> None:
        where = "scenario"
        _check_graph_ref(self.graph, f"{where}: field 'graph'")
        if not isinstance(self.devices, Devices):
            raise InvalidScenarioError(f"{where}: field 'devices' must be a Devices")
        _check_text(self.method, f"{where}: field 'method'")
        if self.objective not in OBJECTIVES:
            raise InvalidScenarioError(
                f"{where}: field 'objective' must be one of {', '.join(OBJECTIVES)} (got {self.objective!r})"
            )
        limit = self.time_limit
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 < limit <= MAX_TIME_LIMIT:
            raise InvalidScenarioError(f"{where}: field 'time_limit' must be a number in (0, {MAX_TIME_LIMIT:g}] s")
        object.__setattr__(self, "time_limit", float(limit))
        object.__setattr__(self, "latency_rules", _check_rules(self.latency_rules, f"{where}: field 'latency_rules'"))
        object.__setattr__(self, "settings", _check_settings(self.settings, f"{where}: field 'settings'"))
        _check_text(self.graph_name, f"{where}: field 'graph_name'", allow_empty=True)
        if self.inline_graph is not None and not isinstance(self.inline_graph, Graph):
            raise InvalidScenarioError(f"{where}: field 'inline_graph' must be a Graph")
        if self.plan is not None and not isinstance(self.plan, PickedPlan):
            raise InvalidScenarioError(f"{where}: field 'plan' must be a PickedPlan")

    @property
    def is_sample(self) -> bool:
        return self.graph.startswith("sample:")

    @property
    def sample_label(self) -> str | None:
        """The sample's label (``throughput/layer/bert24_inference``), or None for an uploaded graph."""
        return self.graph.removeprefix("sample:") if self.is_sample else None

    @property
    def digest(self) -> str | None:
        """The uploaded graph's digest, or None for a sample."""
        return None if self.is_sample else self.graph.removeprefix("upload:")

    def setting(self, key: str, default: Any = None) -> Any:
        return dict(self.settings).get(key, default)


# ----------------------------------------------------------------------------- checks
def _check_text(value: Any, where: str, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not allow_empty) or len(value) > MAX_TEXT:
        raise InvalidScenarioError(
            f"{where} must be a {'' if allow_empty else 'non-empty '}string of at most {MAX_TEXT} characters"
        )
    return value


def _check_graph_ref(value: Any, where: str) -> None:
    _check_text(value, where)
    kind, _, rest = value.partition(":")
    if kind == "sample" and _SAMPLE_LABEL.match(rest) and ".." not in rest.split("/"):
        return
    if kind == "upload" and _DIGEST.match(rest):
        return
    raise InvalidScenarioError(f"{where} must be 'sample:<label>' or 'upload:<hex digest>' (got {quote(value, 60)})")


def _number(value: Any, where: str) -> float:
    if value in (UNLIMITED, "Infinity"):  # refused by the callers' range checks with a clear message
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise InvalidScenarioError(f"{where} must be a number")
    return float(value)


def _check_rules(rules: Any, where: str) -> tuple[tuple[str, float], ...]:
    if not isinstance(rules, (list, tuple)) or len(rules) > MAX_RULES:
        raise InvalidScenarioError(f"{where} must be a list of at most {MAX_RULES} [pattern, factor] pairs")
    out = []
    for position, rule in enumerate(rules):
        if not isinstance(rule, (list, tuple)) or len(rule) != 2:
            raise InvalidScenarioError(f"{where}[{position}] must be a [pattern, factor] pair")
        pattern = _check_text(rule[0], f"{where}[{position}] pattern")
        factor = _number(rule[1], f"{where}[{position}] factor")
        if not 0 <= factor < math.inf:
            raise InvalidScenarioError(f"{where}[{position}] factor must be finite and non-negative")
        out.append((pattern, factor))
    return tuple(out)


def _check_settings(settings: Any, where: str) -> tuple[tuple[str, Setting], ...]:
    items = settings.items() if isinstance(settings, Mapping) else settings
    try:
        items = list(items)
    except TypeError:
        raise InvalidScenarioError(f"{where} must be an object of settings") from None
    if len(items) > MAX_SETTINGS:
        raise InvalidScenarioError(f"{where}: at most {MAX_SETTINGS} settings")
    out = {}
    for item in items:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise InvalidScenarioError(f"{where} must be an object of settings")
        key, value = item
        if not isinstance(key, str) or not _SETTING_KEY.match(key):
            raise InvalidScenarioError(
                f"{where}: setting name {quote(key, 40)} must be lower-case letters, digits and '_'"
            )
        if isinstance(value, str):
            _check_text(value, f"{where}: setting '{key}'", allow_empty=True)
        elif isinstance(value, float) and not math.isfinite(value):
            raise InvalidScenarioError(f"{where}: setting '{key}' must be finite")
        elif not isinstance(value, (bool, int, float)):
            raise InvalidScenarioError(f"{where}: setting '{key}' must be a string, number or boolean")
        out[key] = value
    return tuple(sorted(out.items()))


# ----------------------------------------------------------------------------- plain dict (card body)
def scenario_to_dict(scenario: Scenario) -> dict[str, Any]:
    """The scenario as a scenario card (plain JSON data); the graph inline when :attr:`inline_graph` is set."""
    out: dict[str, Any] = {
        "format": CARD_FORMAT,
        "version": CARD_VERSION,
        "graph": scenario.graph,
        "graphName": scenario.graph_name,
        "devices": devices_to_dict(scenario.devices),
        "method": scenario.method,
        "objective": scenario.objective,
        "timeLimit": scenario.time_limit,
        "latencyRules": [list(rule) for rule in scenario.latency_rules],
        "settings": dict(scenario.settings),
    }
    if scenario.inline_graph is not None:
        out["inlineGraph"] = graph_to_dict(scenario.inline_graph)
    if scenario.plan is not None:
        out["plan"] = plan_to_plain(scenario.plan)
    return out


_CARD_KEYS = {
    "format",
    "version",
    "graph",
    "graphName",
    "devices",
    "method",
    "objective",
    "timeLimit",
    "latencyRules",
    "settings",
    "inlineGraph",
    "plan",
}


def scenario_from_dict(data: Any, source: str = "<scenario>") -> Scenario:
    """Read a scenario card's data (see :func:`scenario_to_dict`); one-line errors naming ``source`` and the field."""
    source = label(source)
    if not isinstance(data, dict):
        raise InvalidScenarioError(f"{source}: a scenario card must be a JSON object")
    if data.get("format") != CARD_FORMAT:
        raise InvalidScenarioError(f"{source}: field 'format' must be {CARD_FORMAT!r} (is this a scenario card?)")
    if data.get("version") != CARD_VERSION:
        raise InvalidScenarioError(f"{source}: field 'version' must be {CARD_VERSION}")
    unknown = sorted(set(data) - _CARD_KEYS)
    if unknown:
        raise InvalidScenarioError(f"{source}: unknown field {quote(unknown[0], 40)}")
    for key in ("graph", "devices"):
        if key not in data:
            raise InvalidScenarioError(f"{source}: missing field {key!r}")
    inline = None
    if data.get("inlineGraph") is not None:
        try:
            inline, _ = graph_from_dict(data["inlineGraph"], f"{source}: inlineGraph")
        except PlacementError as exc:
            raise InvalidScenarioError(str(exc)) from None
    try:
        return Scenario(
            graph=data["graph"],
            devices=read_devices(data["devices"], f"{source}: devices"),
            method=data.get("method", "dp"),
            objective=data.get("objective", Objective.THROUGHPUT.value),
            time_limit=_number(data.get("timeLimit", 30.0), f"{source}: field 'timeLimit'"),
            latency_rules=data.get("latencyRules", ()),
            settings=data.get("settings", {}),
            graph_name=data.get("graphName", ""),
            inline_graph=inline,
            plan=plan_from_plain(data["plan"], f"{source}: plan") if data.get("plan") else None,
        )
    except InvalidScenarioError as exc:
        raise InvalidScenarioError(str(exc).replace("scenario: ", f"{source}: ", 1)) from None


def scenario_to_json(scenario: Scenario) -> str:
    """The scenario card as JSON text (round-trips through :func:`parse_scenario`)."""
    return json.dumps(scenario_to_dict(scenario), indent=1)


def parse_scenario(data: bytes | str, source: str = "<scenario card>") -> Scenario:
    """Parse a scenario card (size-limited to :data:`placement.MAX_FILE_BYTES`; one-line errors)."""
    source = label(source)
    if len(data) > MAX_FILE_BYTES:  # this module's limit (a test lowers it), checked before decoding
        what = f"file is {len(data):,} bytes," if isinstance(data, bytes) else "text is"
        raise InvalidScenarioError(f"{source}: {what} over the {MAX_FILE_BYTES:,}-byte limit")
    return scenario_from_dict(parse_json(data, source, InvalidScenarioError, unique_keys=True), source)


# ----------------------------------------------------------------------------- URL query parameters
#: Query parameter names, in URL order.
QUERY_KEYS = ("graph", "devices", "method", "objective", "limit", "rules", "settings", "plan")
MAX_QUERY_VALUE = 8192


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def scenario_to_query(scenario: Scenario) -> dict[str, str]:
    """The scenario as URL query parameters (strings); the graph by reference only."""
    out = {
        "graph": scenario.graph,
        "devices": _compact(devices_to_dict(scenario.devices)),
        "method": scenario.method,
        "objective": scenario.objective,
        "limit": f"{scenario.time_limit:g}",
    }
    if scenario.latency_rules:
        out["rules"] = _compact([list(rule) for rule in scenario.latency_rules])
    if scenario.settings:
        out["settings"] = _compact(dict(scenario.settings))
    if scenario.plan is not None:
        plan = _compact(plan_to_plain(scenario.plan))
        if len(plan) <= MAX_QUERY_VALUE:  # a larger plan travels in the scenario card only
            out["plan"] = plan
    return out


def scenario_from_query(params: Mapping[str, str], source: str = "link") -> Scenario:
    """Read :func:`scenario_to_query`'s parameters back; one-line errors naming the parameter.

    Missing parameters take their defaults except ``graph`` and ``devices``.
    """
    for key in ("graph", "devices"):
        if key not in params:
            raise InvalidScenarioError(f"{source}: missing parameter {key!r}")

    def text(key: str) -> str:
        value = params[key]
        if isinstance(value, list):  # repeated parameter: the last one wins, as in a browser form
            value = value[-1]
        if not isinstance(value, str) or len(value) > MAX_QUERY_VALUE:
            raise InvalidScenarioError(
                f"{source}: parameter {key!r} must be text of at most {MAX_QUERY_VALUE} characters"
            )
        return value

    def decoded(key: str) -> Any:
        try:
            return json.loads(text(key))
        except (json.JSONDecodeError, RecursionError):
            raise InvalidScenarioError(f"{source}: parameter {key!r} is not valid JSON") from None

    try:
        limit = float(text("limit")) if "limit" in params else 30.0
    except ValueError:
        raise InvalidScenarioError(f"{source}: parameter 'limit' must be a number of seconds") from None
    try:
        return Scenario(
            graph=text("graph"),
            devices=read_devices(decoded("devices"), f"{source}: parameter 'devices'"),
            method=text("method") if "method" in params else "dp",
            objective=text("objective") if "objective" in params else Objective.THROUGHPUT.value,
            time_limit=limit if math.isfinite(limit) else -1.0,
            latency_rules=decoded("rules") if "rules" in params else (),
            settings=decoded("settings") if "settings" in params else {},
            plan=plan_from_plain(decoded("plan"), f"{source}: parameter 'plan'") if "plan" in params else None,
        )
    except InvalidScenarioError as exc:
        message = str(exc)
        for field, parameter in (("'time_limit'", "'limit'"), ("'latency_rules'", "'rules'")):
            message = message.replace(f"field {field}", f"parameter {parameter}")
        raise InvalidScenarioError(
            message.replace("scenario: field", f"{source}: parameter", 1).replace("scenario: ", f"{source}: ", 1)
        ) from None
