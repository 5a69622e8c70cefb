"""The meeting's question on a transformer: a :class:`TransformerScenario` and its :class:`MeetingAnswer`.

A scenario is a model (a preset of :data:`~placement.perf.transformer.MODELS` with its sequence length), a global
batch, the token budget of one training run, and an inventory of one catalogue GPU kind (count, GPUs per node,
a network bandwidth factor for "what if the network were half as fast") with a price per GPU-hour. The answer
is what ``python -m placement plan`` prints for it, computed by the same functions
(:func:`~placement.perf.search.search` and :func:`~placement.perf.plan_cli.launch_configs`): the launchable
layout proven optimal in the framework's space, time per step, tokens/s, the memory of the most loaded GPU by
part (optimizer state included) and whether it fits, cost per hour and per run, and the launch command. Every
time-derived number carries the error the measured runs justify (:mod:`placement.perf.error_statement`: the
calibration band inside the calibration runs, none when extrapolated) and the list of the run's properties
outside the measured runs (:mod:`placement.perf.coverage`); memory is the model's own (no band: it was not calibrated on
measured memory).

>>> s = TransformerScenario(model="llama3-8b", gpu="H100", gpus=64, global_batch=256, tokens=1e9, price_per_hour=2.0)
>>> a = meeting_answer(s)
>>> a.fits, a.layout_text.startswith("t=")
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from ..errors import InvalidModelSpecError, InvalidScenarioError, PlacementError
from .calibration import CalibrationBand
from .error_statement import ErrorStatement
from .hardware import ACCELERATORS, Accelerator, Cluster, accelerator
from .plan_cli import describe_layout, launch_configs
from .plan_run import CATALOGUE_CURRENCY, price_of
from .predict import Prediction
from .search import Plan, SearchResult, search
from .spaces import SPACES
from .transformer import MODELS, TransformerSpec, model_preset

#: Most GPUs a scenario plans for (the search's own bound is the model's; this keeps a page's search short).
MAX_GPUS = 1 << 17
#: Most sequences per global batch and tokens per run a scenario takes.
MAX_BATCH = 1 << 22
MAX_TOKENS = 1e16
#: The largest price per GPU-hour a scenario takes (any currency unit; the catalogue's are USD).
MAX_PRICE = 1e4
#: Prefix of a scenario's keys when it travels as settings of a shared link or a scenario card.
SETTINGS_PREFIX = "tf_"
SECONDS_PER_DAY = 86_400.0
#: Prefix of a custom model's fields in the settings.
SPEC_PREFIX = "tf_spec_"
_SPEC_FIELDS = tuple(TransformerSpec.__dataclass_fields__)


def _int(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
        raise InvalidScenarioError(f"transformer scenario: field {name!r} must be an integer (got {value!r})")
    if not low <= value <= high:
        raise InvalidScenarioError(
            f"transformer scenario: field {name!r} must be from {low:,} to {high:,} (got {value:,})"
        )
    return int(value)


def _float(value: Any, name: str, low: float, high: float, strict_low: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidScenarioError(f"transformer scenario: field {name!r} must be a finite number (got {value!r})")
    if value < low or value > high or (strict_low and value == low):
        side = ">" if strict_low else ">="
        raise InvalidScenarioError(
            f"transformer scenario: field {name!r} must be {side} {low:g} and <= {high:g} (got {value:g})"
        )
    return float(value)


@dataclass(frozen=True)
class TransformerScenario:
    """A transformer training run on an inventory of one catalogue GPU kind.

    Parameters
    ----------
    model : str
        A preset of :data:`placement.perf.transformer.MODELS` (``llama3-70b``, ``gpt3-175b``, ...), or the name of
        ``custom``.
    gpu : str
        A catalogue accelerator (:data:`placement.perf.hardware.ACCELERATORS`).
    gpus, gpus_per_node : int
        The inventory.
    global_batch : int
        Sequences per training step.
    seq_length : int or None
        Tokens per sequence (None: the preset's; the preset's own length is stored as None).
    tokens : float
        The token budget of one training run (its cost is the cost per run).
    price_per_hour : float or None
        Price per GPU-hour; None: the catalogue's (``Accelerator.price_per_hour``), which may be unset.
    network_factor : float
        Multiplier of the catalogue's network bandwidth per GPU (0.5: half the network).
    framework : str
        The search space (:data:`placement.perf.spaces.SPACES`).
    custom : TransformerSpec or None
        A model of its own (e.g. from a HuggingFace ``config.json``, :mod:`placement.perf.hf_config`) instead of a
        preset; ``model`` is then its name.
    """

    model: str = "llama3-70b"
    gpu: str = "H100"
    gpus: int = 1024
    global_batch: int = 1024
    seq_length: int | None = None
    tokens: float = 15e12
    price_per_hour: float | None = None
    network_factor: float = 1.0
    gpus_per_node: int = 8
    framework: str = "megatron"
    custom: TransformerSpec | None = None

    def __post_init__(self) -> None:
        if self.custom is not None:
            if not isinstance(self.custom, TransformerSpec):
                raise InvalidScenarioError("transformer scenario: field 'custom' must be a TransformerSpec")
            object.__setattr__(self, "model", self.custom.name)
        elif self.model not in MODELS:
            raise InvalidScenarioError(
                f"transformer scenario: field 'model' must be one of {', '.join(MODELS)} (got {self.model!r})"
            )
        try:
            object.__setattr__(self, "gpu", accelerator(str(self.gpu)).name)
        except PlacementError as exc:
            raise InvalidScenarioError(f"transformer scenario: field 'gpu': {exc}") from None
        object.__setattr__(self, "gpus", _int(self.gpus, "gpus", 1, MAX_GPUS))
        object.__setattr__(self, "gpus_per_node", _int(self.gpus_per_node, "gpus_per_node", 1, 72))
        object.__setattr__(self, "global_batch", _int(self.global_batch, "global_batch", 1, MAX_BATCH))
        if self.seq_length is not None:
            seq = _int(self.seq_length, "seq_length", 1, 1 << 22)
            object.__setattr__(self, "seq_length", None if seq == self._base.seq_length else seq)
        object.__setattr__(self, "tokens", _float(self.tokens, "tokens", 0.0, MAX_TOKENS, strict_low=True))
        if self.price_per_hour is not None:
            object.__setattr__(self, "price_per_hour", _float(self.price_per_hour, "price_per_hour", 0.0, MAX_PRICE))
        object.__setattr__(self, "network_factor", _float(self.network_factor, "network_factor", 0.0, 100.0, True))
        if self.framework not in SPACES:
            raise InvalidScenarioError(
                f"transformer scenario: field 'framework' must be one of {', '.join(SPACES)} (got {self.framework!r})"
            )

    @property
    def _base(self) -> TransformerSpec:
        return self.custom if self.custom is not None else model_preset(self.model)

    @property
    def spec(self) -> TransformerSpec:
        """The model's description (the preset or custom model at this sequence length)."""
        base = self._base
        return base if self.seq_length is None else base.with_changes(seq_length=self.seq_length)

    @property
    def accelerator(self) -> Accelerator:
        """The catalogue's GPU, priced at the scenario's price, else at the catalogue's USD price (``plan``'s
        :func:`~placement.perf.plan_run.price_of`)."""
        acc = ACCELERATORS[self.gpu]
        return replace(acc, price_per_hour=price_of(acc, self.price_per_hour, {}, CATALOGUE_CURRENCY))

    @property
    def price(self) -> float | None:
        """Price per GPU-hour in force (the scenario's, else the catalogue's; None when neither is set)."""
        return self.accelerator.price_per_hour

    @property
    def price_text(self) -> str:
        """The price and where it came from (typed, or the catalogue's default and its date)."""
        acc = self.accelerator
        if acc.price_per_hour is None:
            return "no price"
        if self.price_per_hour is not None:
            return f"{acc.price_per_hour:g} USD per GPU-hour (typed)"
        date = f" of {acc.price_date}" if acc.price_date else ""
        return f"{acc.price_per_hour:g} USD per GPU-hour (catalogue default{date})"

    @property
    def cluster(self) -> Cluster:
        """The inventory as the performance model's cluster (network bandwidth scaled by ``network_factor``)."""
        acc = self.accelerator
        nic = None if self.network_factor == 1.0 else acc.nic_bytes_per_s * self.network_factor
        return Cluster(acc, self.gpus, self.gpus_per_node, nic_bytes_per_s=nic)

    def with_changes(self, **changes: Any) -> TransformerScenario:
        """A copy with fields replaced (validated again)."""
        return replace(self, **changes)

    def more_nodes(self, nodes: int) -> TransformerScenario:
        """The same run with ``nodes`` more nodes of ``gpus_per_node`` GPUs."""
        return self.with_changes(gpus=self.gpus + int(nodes) * self.gpus_per_node)

    def describe(self) -> str:
        """One line: model, sequence, batch, inventory, network and price."""
        net = "" if self.network_factor == 1.0 else f", network x{self.network_factor:g}"
        price = self.price_text
        return (
            f"{self.model} (sequence {self.spec.seq_length:,}, global batch {self.global_batch:,}) on "
            f"{self.gpus:,} x {self.gpu} ({self.gpus_per_node} per node{net}), {format_tokens(self.tokens)} tokens per run, "
            f"{price}"
        )


def scenario_settings(scenario: TransformerScenario) -> dict[str, str | int | float | bool]:
    """The scenario as scalar settings of a shared link or card (keys prefixed ``tf_``; unset fields left out)."""
    out: dict[str, str | int | float | bool] = {}
    for name in TransformerScenario.__dataclass_fields__:
        value = getattr(scenario, name)
        if value is not None and name != "custom":
            out[SETTINGS_PREFIX + name] = value
    if scenario.custom is not None:  # a model of its own travels field by field (tf_spec_*)
        for name in _SPEC_FIELDS:
            value = getattr(scenario.custom, name)
            if value is not None:
                out[SPEC_PREFIX + name] = value.value if isinstance(value, Enum) else value
    return out


def scenario_from_settings(settings: Mapping[str, Any], source: str = "scenario") -> TransformerScenario | None:
    """The scenario carried by settings (None when they carry none); one-line error naming ``source``."""
    spec = {k.removeprefix(SPEC_PREFIX): v for k, v in settings.items() if k.startswith(SPEC_PREFIX)}
    fields = {
        key.removeprefix(SETTINGS_PREFIX): value
        for key, value in settings.items()
        if key.startswith(SETTINGS_PREFIX) and not key.startswith(SPEC_PREFIX)
    }
    if not fields:
        return None
    allowed = set(TransformerScenario.__dataclass_fields__) - {"custom"}
    unknown = [SETTINGS_PREFIX + k for k in sorted(set(fields) - allowed)]
    unknown += [SPEC_PREFIX + k for k in sorted(set(spec) - set(_SPEC_FIELDS))]
    if unknown:
        raise InvalidScenarioError(f"{source}: unknown transformer setting {unknown[0]!r}")
    try:
        if spec:
            fields["custom"] = TransformerSpec(**spec)
        return TransformerScenario(**fields)
    except (InvalidScenarioError, InvalidModelSpecError) as exc:
        raise InvalidScenarioError(f"{source}: {exc}") from None
    except (TypeError, ValueError) as exc:  # a missing field of the model, an unknown normalisation
        raise InvalidScenarioError(f"{source}: the transformer's model fields: {exc}") from None


@dataclass(frozen=True)
class MeetingAnswer:
    """The launchable plan of a scenario and its numbers (``plan``'s, for the same inputs).

    ``result`` is the search's (``plan`` None when nothing fits; ``reason`` says why). Seconds, bytes, prices per
    GPU-hour of the scenario; ``band`` the calibration band of the time-derived numbers and ``outside`` the run's
    properties outside the calibration runs.
    """

    scenario: TransformerScenario
    result: SearchResult
    configs: Mapping[str, Any]

    @property
    def feasible(self) -> bool:
        """Some layout of the space fits."""
        return self.result.plan is not None

    def _plan(self) -> Plan:
        if self.result.plan is None:
            raise PlacementError(f"no layout fits: {self.result.reason}")
        return self.result.plan

    def _prediction(self) -> Prediction:
        return self._plan().prediction

    @property
    def layout_text(self) -> str:
        """The layout in ``plan``'s words (t, p, d, cp, ...)."""
        return describe_layout(self.result.plan) if self.result.plan is not None else "no layout fits"

    @property
    def step_seconds(self) -> float:
        """Predicted time of one training step (iteration), seconds."""
        return self._prediction().iteration_seconds

    @property
    def tokens_per_second(self) -> float:
        """Predicted training throughput."""
        return self._prediction().tokens_per_second

    @property
    def memory(self) -> dict[str, float]:
        """Bytes of the most loaded GPU by part (weights, gradients, optimizer state, activations, ..., total)."""
        return self._prediction().memory.as_dict()

    @property
    def capacity(self) -> float:
        """Bytes of one GPU."""
        return self._prediction().memory_capacity

    @property
    def fits(self) -> bool:
        """The plan's memory fits in the GPU (the search only returns plans that fit)."""
        return self.feasible and self._prediction().fits

    @property
    def headroom(self) -> float:
        """GPU bytes left on the most loaded GPU."""
        return self.capacity - self.memory["total"]

    @property
    def error(self) -> ErrorStatement | None:
        """What the model's error is known to be for the plan (:attr:`Prediction.error`; None without a plan)."""
        return self._prediction().error if self.feasible else None

    @property
    def band(self) -> CalibrationBand | None:
        """The calibration band where it applies (the run inside the calibration runs), else None."""
        error = self.error
        return error.band if error is not None and error.applies else None

    @property
    def outside(self) -> tuple[str, ...]:
        """The run's properties outside the calibration runs (where the model extrapolates)."""
        return self._prediction().outside_calibration if self.feasible else ()

    @property
    def steps(self) -> float:
        """Training steps of the run (tokens / tokens per step)."""
        return self.scenario.tokens / (self.scenario.global_batch * self.scenario.spec.seq_length)

    @property
    def run_seconds(self) -> float:
        """Wall time of the run: its tokens at the predicted tokens/s (:meth:`Plan.run_seconds`)."""
        return self._plan().run_seconds(self.scenario.tokens)

    @property
    def run_days(self) -> float:
        """:attr:`run_seconds` in days."""
        return self.run_seconds / SECONDS_PER_DAY

    @property
    def cost_per_hour(self) -> float | None:
        """GPUs x price per GPU-hour (None without a price)."""
        price = self.scenario.price
        return None if price is None else self.scenario.gpus * price

    @property
    def cost_per_run(self) -> float | None:
        """Cost of the run's tokens (:meth:`Plan.cost_per_run`; None without a price)."""
        return self._plan().cost_per_run(self.scenario.tokens)

    @property
    def cost_per_step(self) -> float | None:
        """Cost of one step (``plan --json``'s ``cost_per_iteration``)."""
        return self.result.plan.cost_per_iteration if self.result.plan is not None else None

    @property
    def launch_command(self) -> str:
        """The launch command with its launcher, uncut (``plan``'s): torchrun running Megatron-LM, or torchtitan."""
        from .launch import shell_text

        if "torchtitan_command" in self.configs:
            return shell_text(self.configs["torchtitan_command"])
        if "megatron_launch" in self.configs:
            return shell_text(self.configs["megatron_launch"])
        return ""

    def banded(self, value: float, inverse: bool = False) -> tuple[float, float] | None:
        """The range of a time-derived ``value`` under the stated error (``inverse`` for rates such as tokens/s);
        None where no error is stated (extrapolated)."""
        error = self.error
        return None if error is None else error.span(value, inverse)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (the numbers a page and the CLI show)."""
        out: dict[str, Any] = {"scenario": scenario_settings(self.scenario), "feasible": self.feasible}
        if not self.feasible:
            out["reason"] = self.result.reason
            return out
        band = self.band
        out.update(
            layout=self.layout_text,
            step_seconds=self.step_seconds,
            tokens_per_second=self.tokens_per_second,
            memory=self.memory,
            capacity=self.capacity,
            fits=self.fits,
            run_days=self.run_days,
            cost_per_hour=self.cost_per_hour,
            cost_per_run=self.cost_per_run,
            launch_command=self.launch_command,
            calibration_band=None if band is None else band.max_abs_error,
            error=self.error.as_dict() if self.error is not None else None,
            outside_calibration=list(self.outside),
        )
        return out


def meeting_answer(scenario: TransformerScenario, check: bool = False) -> MeetingAnswer:
    """Search the scenario's space (as ``plan`` does) and return the answer with its launch configuration
    (``check``: also the framework's own parser's verdict, as ``plan`` prints; importing it takes seconds)."""
    result = search(scenario.spec, scenario.cluster, scenario.global_batch, scenario.framework)
    configs: Mapping[str, Any] = {}
    if result.plan is not None:
        configs = launch_configs(scenario.spec, result.plan, scenario.framework, scenario.gpus_per_node, check)
    return MeetingAnswer(scenario, result, configs)


def kind_scenarios(
    scenario: TransformerScenario, kinds: Iterable[str], prices: Mapping[str, float] | None = None
) -> list[TransformerScenario]:
    """The scenario on each of ``kinds``, in the order given (same GPU count, batch, tokens and network).

    Each kind is priced at ``prices[kind]`` when given, else at the scenario's price for its own kind, else at
    the catalogue's price (which may be unset: the cost is then None).
    """
    out = []
    for kind in kinds:
        name = accelerator(kind).name
        price = (prices or {}).get(name, scenario.price_per_hour if name == scenario.gpu else None)
        out.append(scenario.with_changes(gpu=name, price_per_hour=price))
    return out


def kinds_side_by_side(
    scenario: TransformerScenario, kinds: Iterable[str], prices: Mapping[str, float] | None = None
) -> list[MeetingAnswer]:
    """:func:`meeting_answer` of each of :func:`kind_scenarios` (days and money per run, fit and headroom)."""
    return [meeting_answer(s) for s in kind_scenarios(scenario, kinds, prices)]


def format_tokens(tokens: float) -> str:
    """``15T`` / ``300B`` / ``2.5M``-style token counts (exact digits below a thousand)."""
    for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if tokens >= size:
            return f"{tokens / size:.4g}{suffix}"
    return f"{tokens:g}"


def figures(answer: MeetingAnswer, currency: str = "USD") -> dict[str, str]:
    """The answer's numbers as the pages and the browser test show them (label -> text).

    Time-derived figures (step time, tokens/s, run days, cost per run) end with the stated error's range (the
    calibration band inside the calibration runs; none when extrapolated); memory has none (the model's own). Without a layout: ``{"layout": "no layout fits: <reason>"}``.
    """
    s = answer.scenario
    out = {"GPUs": f"{s.gpus:,} x {s.gpu}"}
    if not answer.feasible:
        out["layout"] = f"no layout fits: {answer.result.reason}"
        return out

    def ranged(value: float, text: str, inverse: bool = False, fmt: str = "{:,.3g}") -> str:
        span = answer.banded(value, inverse)
        return text if span is None else f"{text} (band {fmt.format(span[0])} to {fmt.format(span[1])})"

    mem = answer.memory
    out["layout"] = answer.layout_text
    out["time per step"] = ranged(answer.step_seconds, f"{answer.step_seconds:.3g} s", fmt="{:.3g} s")
    out["tokens/s"] = ranged(answer.tokens_per_second, f"{answer.tokens_per_second:,.0f}", True, "{:,.0f}")
    out["memory per GPU"] = (
        f"{mem['total'] / 2**30:.2f} GiB of {answer.capacity / 2**30:.1f} GiB "
        f"({'fits' if answer.fits else 'DOES NOT FIT'}, {answer.headroom / 2**30:.2f} GiB free)"
    )
    out["optimizer state per GPU"] = f"{mem['optimizer_state'] / 2**30:.2f} GiB"
    days = answer.run_days
    out[f"run of {format_tokens(s.tokens)} tokens"] = ranged(days, f"{days:,.1f} days", fmt="{:,.1f} days")
    per_hour, per_run = answer.cost_per_hour, answer.cost_per_run
    if per_hour is None or per_run is None:
        out["cost per hour"] = out["cost per run"] = "no price (type one)"
    else:
        out["cost per hour"] = f"{per_hour:,.0f} {currency}"
        out["cost per run"] = ranged(per_run, f"{per_run:,.0f} {currency}", fmt="{:,.0f} " + currency)
    return out


def count_sweep(scenario: TransformerScenario, counts: Iterable[int]) -> list[MeetingAnswer]:
    """The scenario on each GPU count of ``counts`` (the Tradeoffs page's time against cost)."""
    return [meeting_answer(scenario.with_changes(gpus=int(n))) for n in counts]
