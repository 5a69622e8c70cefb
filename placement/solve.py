"""One entry point for every method: ``solve(problem, method=...)``, and the registry of methods.

Every method is described once, by a :class:`MethodSpec` in :data:`METHODS`: its name, a
title, the function implementing it (imported lazily, so that the DP does not pay for PuLP
and vice versa), the objective it optimises, whether it is exact, and its options (name,
type, default, help). :func:`solve`, the command line (flags and help), :mod:`placement.explore.compare`
and the app all read this registry, so an option exists everywhere once it is listed here,
and an unknown or inapplicable option is an error everywhere.

Adding an option to a method is one line in its ``options``::

    Option("progress", Callable, None, "called with (done, total) while the search runs", cli=False),

The function must accept it as a keyword with the same default (a test checks every entry).

The memory model (:class:`MemoryModel`) says what an accelerator's memory must hold: the
paper's "weights only", or training memory under a pipeline schedule. Under the latter the
throughput methods are run as their memory-aware variants (:meth:`MemoryModel.method_for`).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .errors import PlacementError
from .exact.ideals import DEFAULT_MAX_IDEALS
from .exact.limits import TIE_BREAK_MAX_PAIRS
from .model import Objective, Placement, Problem, Recompute, Result, ScheduleKind, Status
from .pipeline.registry import SCHEDULES, schedule_label

if TYPE_CHECKING:
    from .pipeline.memory import MemoryBreakdown

# The pipeline memory model (placement.pipeline.memory, with the schedules' event tables) is imported where a
# training memory model is evaluated, not with the registry: the command line's parser reads the registry, and
# ``solve --method multidim`` never uses the memory model (about 6 ms of its start-up).


def __getattr__(name: str) -> Any:
    """``DEFAULT_OPTIMIZER_MULTIPLIER`` (re-exported from :mod:`placement.pipeline.memory` on first use)."""
    if name == "DEFAULT_OPTIMIZER_MULTIPLIER":
        from .pipeline.memory import DEFAULT_OPTIMIZER_MULTIPLIER

        return DEFAULT_OPTIMIZER_MULTIPLIER
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_OPTIMIZER_MULTIPLIER",  # noqa: F822 - provided by the module __getattr__ above
    "METHODS",
    "MemoryModel",
    "MethodSpec",
    "Objective",
    "Option",
    "ScheduleKind",
    "Status",
    "available_methods",
    "method_function",
    "method_spec",
    "recomputing_devices",
    "solve",
]

_TYPE_WORDS = {float: "a number", int: "an integer", bool: "true or false", str: "a string", Callable: "a function"}


@dataclass(frozen=True)
class Option:
    """One keyword option of a method.

    Parameters
    ----------
    name : str
        Keyword name (the CLI flag is ``--name-with-dashes``).
    type : type
        ``float``, ``int``, ``bool``, ``str`` or ``collections.abc.Callable``.
    default : Any
        The value the method uses when the option is not given (must equal the function's default).
    help : str
        One line for ``--help`` and the app.
    choices : tuple of str, optional
        Allowed values of a ``str`` option.
    minimum : float, optional
        Smallest allowed value of a number.
    positive : bool
        Numbers must be > ``minimum`` (not >=).
    cli : bool
        Whether the command line offers a flag for it.
    unlimited : bool
        Whether ``inf`` is allowed (a limit that can be lifted); other numbers must be finite.
    aliases : tuple of (value, choice) pairs
        Values of another type a ``str`` option still accepts, each standing for a choice
        (``recompute``: ``False`` is ``"none"``, ``True`` is ``"always"``).
    """

    name: str
    type: Any  # float, int, bool, str or collections.abc.Callable (a special form, not a ``type``)
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    minimum: float | None = 0
    positive: bool = False
    cli: bool = True
    unlimited: bool = False
    aliases: tuple[tuple[Any, str], ...] = ()

    def __post_init__(self) -> None:
        if self.type not in _TYPE_WORDS:
            raise TypeError(f"option {self.name!r}: unsupported type {self.type!r}")

    @property
    def flag(self) -> str:
        """The command-line flag (``--time-limit``); booleans defaulting to True get ``--no-...``."""
        stem = self.name.replace("_", "-")
        return f"--no-{stem}" if self.type is bool and self.default is True else f"--{stem}"

    def check(self, value: Any, owner: str) -> Any:
        """``value`` converted to the option's type, or :class:`PlacementError` naming owner, option and rule.

        ``owner`` is who takes the option, e.g. ``"method 'dp'"``.
        """
        where = f"{owner}: option {self.name!r}"
        if value is None and self.default is None:
            return None
        if self.type is Callable:
            if not callable(value):
                raise PlacementError(f"{where} must be a function (got {value!r})")
            return value
        if self.type is bool:
            if not isinstance(value, bool):
                raise PlacementError(f"{where} must be true or false (got {value!r})")
            return value
        for alias, choice in self.aliases:
            if type(value) is type(alias) and value == alias:
                return choice
        if self.type is str:
            if not isinstance(value, str) or (self.choices is not None and value not in self.choices):
                choose = f"one of: {', '.join(self.choices)}" if self.choices else "a string"
                if self.aliases:
                    choose += " (or " + ", ".join(f"{str(a).lower()} for {c}" for a, c in self.aliases) + ")"
                raise PlacementError(f"{where} must be {choose} (got {value!r})")
            return value
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (self.type is int and not (isinstance(value, int) or float(value).is_integer()))
        ):
            raise PlacementError(f"{where} must be {_TYPE_WORDS[self.type]} (got {value!r})")
        number = self.type(value)
        if isinstance(number, float) and not math.isfinite(number) and not (self.unlimited and number == math.inf):
            raise PlacementError(f"{where} must be {'a number or inf' if self.unlimited else 'finite'} (got {value!r})")
        if self.minimum is not None and (number <= self.minimum if self.positive else number < self.minimum):
            bound = ">" if self.positive else ">="
            raise PlacementError(f"{where} must be {bound} {self.minimum:g} (got {value!r})")
        return number


@dataclass(frozen=True)
class MethodSpec:
    """Everything the package, the CLI and the app know about one method.

    Parameters
    ----------
    name : str
        The method's name (``solve(problem, name)``, ``--method name``).
    title : str
        A human title for menus and tables.
    module, function : str
        Where the implementing function lives (imported on first use).
    objective : Objective
        What it minimises (``"throughput"``: max-load, ``"latency"``).
    exact : bool
        Whether an "optimal" status is a proof (False for heuristics, which report "feasible").
    options : tuple of Option
        Its keyword options, in help order.
    memory_variant : str, optional
        The method that solves the same problem under the training memory model
        (:class:`MemoryModel`); None when it has none.
    """

    name: str
    title: str
    module: str
    function: str
    objective: Objective
    exact: bool
    options: tuple[Option, ...] = ()
    memory_variant: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "objective", Objective(self.objective))
        names = [option.name for option in self.options]
        if len(set(names)) != len(names):
            raise ValueError(f"method {self.name!r}: an option is listed twice")

    @property
    def has_time_limit(self) -> bool:
        """Whether the method takes a ``time_limit`` (and may stop with a gap)."""
        return "time_limit" in self.option_names

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(option.name for option in self.options)

    @property
    def takes_memory_model(self) -> bool:
        """Whether the method plans with the training memory model's options (schedule, microbatches, ...)."""
        return all(name in self.option_names for name in MemoryModel.OPTION_NAMES)

    def option(self, name: str) -> Option:
        for option in self.options:
            if option.name == name:
                return option
        raise PlacementError(self._unknown(name))

    def _unknown(self, name: str) -> str:
        known = ", ".join(self.option_names) or "none"
        return f"method {self.name!r} has no option {name!r} (its options: {known})"

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The options validated and converted; :class:`PlacementError` for an unknown or bad one.

        A choice that another method's option of the same name takes is named as unsupported here,
        with the methods that support it.
        """
        checked = {}
        for name, value in options.items():
            option = self.option(name)
            try:
                checked[name] = option.check(value, f"method {self.name!r}")
            except PlacementError:
                others = [m for m, spec in METHODS.items() if _takes_choice(spec, name, value)]
                if not option.choices or not others:
                    raise
                raise PlacementError(
                    f"method {self.name!r} does not support {name}={value!r} "
                    f"(its choices: {', '.join(option.choices)}; {value!r} is supported by: {', '.join(others)})"
                ) from None
        return checked

    def defaults(self) -> dict[str, Any]:
        """Option name -> default value."""
        return {option.name: option.default for option in self.options}

    def load(self) -> Callable[..., Result]:
        """The implementing function (raises :class:`PlacementError` if its module cannot be imported)."""
        try:
            return getattr(importlib.import_module(self.module), self.function)
        except (ImportError, AttributeError) as exc:
            raise PlacementError(f"method {self.name!r} is not available ({exc})") from None


def _takes_choice(spec: MethodSpec, name: str, value: Any) -> bool:
    """Whether ``spec`` has a choice option ``name`` that lists ``value``."""
    option = next((o for o in spec.options if o.name == name), None)
    return option is not None and bool(option.choices) and isinstance(value, str) and value in (option.choices or ())


# ----------------------------------------------------------------------------- the options, once each
def _time_limit(default: float | None) -> Option:
    return Option(
        "time_limit", float, default, "seconds before stopping with the best plan found and its gap", positive=True
    )


_GAP = Option("gap", float, None, "relative optimality gap at which the solver may stop")
_SOLVER = Option(
    "solver", str, "highs", "integer-program solver (cbc is PuLP's bundled fallback)", choices=("highs", "cbc")
)
_WARM_START = Option("warm_start", bool, True, "start the integer program from a heuristic plan")
_MAX_IDEALS = Option("max_ideals", int, DEFAULT_MAX_IDEALS, "give up past this many ideals of the graph", positive=True)
_SCHEDULE = Option(
    "schedule",
    str,
    ScheduleKind.ONE_F_ONE_B.value,
    "pipeline schedule deciding the microbatches in flight per stage",
    choices=SCHEDULES,
)
_MICROBATCHES = Option("microbatches", int, 8, "microbatches per batch", minimum=1)
_OPTIMIZER = Option(
    "optimizer_multiplier",
    float,
    None,
    "optimizer state per byte of forward weights (default: Adam with mixed precision, 6 for 16-bit weights "
    "[fp32 master + two fp32 moments = 12 bytes per 2-byte weight], 2 for fp32 weights; SGD momentum: 1; "
    "0 leaves it out)",
)
#: Recomputation choices: none, every stage, or each stage's own choice (the exact DP only).
RECOMPUTE_CHOICES = tuple(r.value for r in Recompute)


def _recompute(*choices: str) -> Option:
    return Option(
        "recompute",
        str,
        Recompute.NONE.value,
        "recompute activations in the backward pass (a recomputing stage stashes only its inputs): "
        "none, always, or per-stage (each stage chooses)",
        choices=choices,
        aliases=((False, Recompute.NONE.value), (True, Recompute.ALWAYS.value)),
    )


_RECOMPUTE = _recompute(*RECOMPUTE_CHOICES)
_BYTES_PER_COST = Option(
    "bytes_per_cost", float, None, "bytes per transfer-cost unit for edges without a size", positive=True
)
_MEMORY_OPTIONS = (_SCHEDULE, _MICROBATCHES, _OPTIMIZER, _RECOMPUTE, _BYTES_PER_COST)
#: The memory-aware IP recomputes on every stage or none (no per-stage choice).
_IP_MEMORY_OPTIONS = (
    _SCHEDULE,
    _MICROBATCHES,
    _OPTIMIZER,
    _recompute(Recompute.NONE.value, Recompute.ALWAYS.value),
    _BYTES_PER_COST,
)
_IP_OPTIONS = (_time_limit(None), _GAP, _SOLVER, _WARM_START)


def _method(
    name: str, title: str, where: str, objective: str, exact: bool, *options: Option, memory_variant: str | None = None
) -> MethodSpec:
    module, function = where.rsplit(".", 1)
    return MethodSpec(name, title, module, function, Objective(objective), exact, tuple(options), memory_variant)


#: Method name -> its description (read-only). Keep in sync with nothing else: this is the only list.
METHODS: Mapping[str, MethodSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            _method(
                "dp",
                "Exact DP (optimal contiguous split)",
                "placement.exact.dp.solve_dp",
                "throughput",
                True,
                _MAX_IDEALS,
                Option(
                    "tie_break",
                    bool,
                    True,
                    "among optimal splits, the least sum of stage durations, then fewest devices",
                ),
                Option(
                    "tie_break_max_pairs",
                    float,
                    None,
                    f"make the tie-break pass only if it searches at most this many ideal pairs (estimated first; "
                    f"default {TIE_BREAK_MAX_PAIRS:,}; inf: always)",
                    minimum=0,
                    unlimited=True,
                ),
                Option("progress", Callable, None, "called with (ideals done, total) during the search", cli=False),
                memory_variant="memory-aware",
            ),
            _method(
                "ip",
                "Integer program (contiguous)",
                "placement.ip.throughput.solve_ip_contiguous",
                "throughput",
                True,
                *_IP_OPTIONS,
                memory_variant="memory-aware-ip",
            ),
            _method(
                "ip-noncontiguous",
                "Integer program (non-contiguous)",
                "placement.ip.throughput.solve_ip_noncontiguous",
                "throughput",
                True,
                *_IP_OPTIONS,
            ),
            _method(
                "latency-ip",
                "Integer program (single-sample latency)",
                "placement.ip.latency.solve_latency_ip",
                "latency",
                True,
                *_IP_OPTIONS,
                Option("subgraphs_per_accelerator", int, 1, "contiguous subgraphs (calls) per accelerator", minimum=1),
                Option("q", int, None, "alias of subgraphs_per_accelerator", minimum=1, cli=False),
                Option(
                    "local_search_seconds",
                    float,
                    None,
                    "seconds of latency local search for the warm start (default: a sixth of the limit, at most 10)",
                ),
                Option(
                    "strong_cuts",
                    bool,
                    None,
                    "transfer-aware path rows and memory covers (default: on for graphs of up to 120 nodes)",
                    cli=False,
                ),
                Option(
                    "model",
                    str,
                    "both",
                    "integer program: ours, the paper's, or both one after the other (better plan, larger bound)",
                    choices=("both", "ours", "paper"),
                ),
            ),
            _method(
                "greedy-latency",
                "Greedy (the paper's latency baseline)",
                "placement.heuristics.greedy_latency",
                "latency",
                False,
                Option("order", str, "paper", "tie-break of the topological order", choices=("paper", "lexicographic")),
            ),
            _method("pipedream", "PipeDream-style chain DP", "placement.heuristics.pipedream", "throughput", False),
            _method(
                "local-search",
                "Local search (seeded)",
                "placement.heuristics.local_search",
                "throughput",
                False,
                Option("seed", int, 0, "random seed"),
                Option("restarts", int, 10, "random restarts", minimum=1),
                _time_limit(60.0),
                Option("max_moves", int, 10_000, "improving moves per restart", minimum=1),
            ),
            _method(
                "one-accelerator",
                "Everything on one accelerator",
                "placement.heuristics.one_accelerator",
                "throughput",
                False,
                Option("ignore_memory", bool, False, "report the load even when the graph does not fit"),
            ),
            _method(
                "memory-aware",
                "Exact DP with training memory (schedule-aware)",
                "placement.exact.memory_aware.solve_memory_aware",
                "throughput",
                True,
                *_MEMORY_OPTIONS,
                _MAX_IDEALS,
                memory_variant="memory-aware",
            ),
            _method(
                "memory-aware-ip",
                "Integer program with training memory (schedule-aware)",
                "placement.ip.memory_aware.solve_memory_aware_ip",
                "throughput",
                True,
                *_IP_MEMORY_OPTIONS,
                *_IP_OPTIONS,
                memory_variant="memory-aware-ip",
            ),
        )
    }
)


def method_spec(method: str) -> MethodSpec:
    """The registry entry of ``method`` (:class:`PlacementError` for an unknown name)."""
    spec = METHODS.get(method)
    if spec is None:
        raise PlacementError(f"unknown method {method!r}; choose one of: {', '.join(METHODS)}")
    return spec


def method_function(method: str) -> Callable[..., Result]:
    """The function implementing ``method`` (raises :class:`PlacementError` for an unknown name)."""
    return method_spec(method).load()


def available_methods(objective: str | None = None) -> list[str]:
    """Names of the methods that can be imported (optionally only those for ``objective``)."""
    names = []
    for name, spec in METHODS.items():
        if objective is not None and spec.objective != objective:
            continue
        try:
            spec.load()
        except PlacementError:
            continue
        names.append(name)
    return names


def solve(problem: Problem, method: str = "dp", **options: Any) -> Result:
    """Solve ``problem`` with ``method``.

    Parameters
    ----------
    problem : Problem
        Graph and devices.
    method : str
        A key of :data:`METHODS` (default: the exact DP).
    **options
        The method's options (see ``METHODS[method].options``), e.g. ``time_limit`` for the
        integer programs. An unknown option, one the method does not take, or a value of the
        wrong type raises :class:`PlacementError` naming it.

    Returns
    -------
    Result

    Examples
    --------
    >>> from placement import load_problem, solve
    >>> problem = load_problem("sample_graphs/throughput/layer/bert24_inference.json")
    >>> result = solve(problem, "dp")
    >>> result.status, round(result.objective, 4)
    (<Status.OPTIMAL: 'optimal'>, 17.7899)
    >>> solve(problem, "dp", time_limit=1)
    Traceback (most recent call last):
    ...
    placement.errors.PlacementError: method 'dp' has no option 'time_limit' (its options: max_ideals, tie_break, tie_break_max_pairs, progress)
    """
    spec = method_spec(method)
    checked = spec.check_options(options)
    return spec.load()(problem, **checked)


# ----------------------------------------------------------------------------- the memory model
@dataclass(frozen=True)
class MemoryModel:
    """What an accelerator's memory must hold.

    ``training=False`` is the paper's model: the sizes of its nodes (weights). ``training=True``:
    weights + optimizer state (``optimizer_multiplier`` x forward weights; None, the default: Adam with mixed
    precision, :func:`placement.pipeline.memory.default_optimizer_multiplier`) + the activations of
    the microbatches in flight under ``schedule`` with ``microbatches`` microbatches (stage
    inputs only, plus one microbatch's activations, on a recomputing device); see :mod:`placement.pipeline.memory`.
    ``recompute`` is ``"none"``, ``"always"`` or ``"per-stage"`` (each stage chooses; the exact
    DP only); True and False stand for ``"always"`` and ``"none"``.

    Examples
    --------
    >>> MemoryModel().describe()
    "weights only (the paper's model)"
    >>> MemoryModel(training=True).method_for("dp")
    ('memory-aware', {'schedule': '1f1b', 'microbatches': 8, 'optimizer_multiplier': None, 'recompute': 'none'})
    >>> MemoryModel(training=True, recompute=True).recompute
    'always'
    """

    training: bool = False
    schedule: str = ScheduleKind.ONE_F_ONE_B.value
    microbatches: int = 8
    optimizer_multiplier: float | None = None
    recompute: str = Recompute.NONE.value
    OPTION_NAMES = ("schedule", "microbatches", "optimizer_multiplier", "recompute")

    def __post_init__(self) -> None:
        spec = METHODS["memory-aware"]
        if not isinstance(self.training, bool):
            raise PlacementError(f"memory model: training must be true or false (got {self.training!r})")
        for name in self.OPTION_NAMES:
            object.__setattr__(self, name, spec.option(name).check(getattr(self, name), "the memory model"))
        object.__setattr__(self, "schedule", str(self.schedule))

    def options(self) -> dict[str, Any]:
        """The memory-aware methods' options for this model (empty for weights only)."""
        if not self.training:
            return {}
        return {name: getattr(self, name) for name in self.OPTION_NAMES}

    def describe(self) -> str:
        """One line naming the model in force (for headlines)."""
        if not self.training:
            return "weights only (the paper's model)"
        schedule = schedule_label(self.schedule)
        optimizer = (
            "mixed-precision Adam" if self.optimizer_multiplier is None else f"x{self.optimizer_multiplier:g} weights"
        )
        text = (
            f"training: weights + optimizer state ({optimizer}) + activations in flight "
            f"under {schedule}, {self.microbatches} microbatch{'es' if self.microbatches != 1 else ''}"
        )
        return (
            text
            + {
                Recompute.NONE: "",
                Recompute.ALWAYS: ", recomputation",
                Recompute.PER_STAGE: ", recomputation per stage",
            }[Recompute.of(self.recompute)]
        )

    def supports(self, method: str) -> bool:
        """Whether ``method`` can plan under this model."""
        return not self.training or method_spec(method).memory_variant is not None

    def method_for(self, method: str) -> tuple[str, dict[str, Any]]:
        """The method (and its memory options) that solves like ``method`` under this model.

        Weights only: ``method`` unchanged. Training: its memory-aware variant (the DP becomes
        ``memory-aware``, the contiguous IP ``memory-aware-ip``); :class:`PlacementError` for a
        method that has none.
        """
        if not self.training:
            return method, {}
        variant = method_spec(method).memory_variant
        if variant is None:
            raise PlacementError(
                f"method {method!r} plans with weights only; under the training memory model "
                f"use one of: {', '.join(n for n in METHODS if METHODS[n].memory_variant)}"
            )
        return variant, self.options()

    def peaks(
        self, problem: Problem, placement: Placement, recomputing: Iterable[Any] | None = None
    ) -> tuple[tuple[Any, float, float], ...]:
        """(device, peak bytes, cap) of every device of ``placement`` under this model.

        ``recomputing``: the devices that recompute (a per-stage plan's choice); by default every
        device under ``"always"``, none under ``"none"``, and under ``"per-stage"`` each device's
        smaller peak (a stage may recompute where it must).
        """
        if not self.training:
            return tuple((d.device, d.memory, d.memory_cap) for d in _evaluate(problem, placement).devices)
        from .pipeline.memory import peak_table

        every = tuple(stage.device for stage in placement.stages)

        def table(devices):
            return peak_table(problem, placement, self.schedule, self.microbatches, self.optimizer_multiplier, devices)

        if recomputing is not None:
            return table(tuple(recomputing))
        if self.recompute != Recompute.PER_STAGE:
            return table(every if self.recompute == Recompute.ALWAYS else ())
        return tuple(
            (device, min(plain, again), cap) for (device, plain, cap), (_, again, _) in zip(table(()), table(every))
        )

    def breakdown(
        self, problem: Problem, placement: Placement, recomputing: Iterable[Any] | None = None
    ) -> tuple[MemoryBreakdown, ...]:
        """Each device's peak under this model split into weights, gradients, optimizer, activations and reserve.

        The peaks equal :meth:`peaks` (``recomputing`` as there).
        """
        from .pipeline.memory import memory_breakdown

        if not self.training:
            return memory_breakdown(problem, placement, None)
        every = tuple(stage.device for stage in placement.stages)

        def table(devices):
            return memory_breakdown(
                problem, placement, self.schedule, self.microbatches, self.optimizer_multiplier, devices
            )

        if recomputing is not None:
            return table(tuple(recomputing))
        if self.recompute != Recompute.PER_STAGE:
            return table(every if self.recompute == Recompute.ALWAYS else ())
        return tuple(min(plain, again, key=lambda b: b.peak) for plain, again in zip(table(()), table(every)))

    def optimizer_for(self, problem: Problem) -> float:
        """The optimizer multiplier in force on ``problem``'s graph (resolving the mixed-precision Adam default)."""
        from .pipeline.memory import resolve_optimizer_multiplier

        return resolve_optimizer_multiplier(problem.graph, self.optimizer_multiplier)

    def violations(
        self, problem: Problem, placement: Placement, recomputing: Iterable[Any] | None = None
    ) -> tuple[str, ...]:
        """One message per device whose peak memory under this model exceeds its capacity (see :meth:`peaks`)."""
        return tuple(
            f"{device}: needs {peak:,.0f} bytes under {self.describe()}, holds {cap:,.0f}"
            for device, peak, cap in self.peaks(problem, placement, recomputing)
            if peak > cap
        )


def recomputing_devices(result: Result) -> tuple[Any, ...] | None:
    """The devices a memory-aware result recomputes on (its ``recompute_devices`` stat); None when not reported.

    Pass it to :meth:`MemoryModel.peaks` to show a per-stage plan's own choice.
    """
    listed = result.stat("recompute_devices")
    if listed is None or result.placement is None:
        return None
    names = set(listed.split(",")) if listed else set()
    return tuple(s.device for s in result.placement.stages if f"{s.device.kind}:{s.device.index}" in names)


def _evaluate(problem: Problem, placement: Placement):
    from .evaluate import evaluate

    return evaluate(problem, placement)
