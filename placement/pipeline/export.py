"""Export a plan to the pipeline configuration of a training framework.

A plan (a :class:`~placement.model.Placement`, stages in pipeline order) becomes:

* ``"megatron"`` - Megatron-LM / Megatron-Core: pipeline, tensor and data-parallel sizes and
  the ``--pipeline-model-parallel-layout`` string (Megatron-Core's documented syntax: one
  group of layer letters per stage, stages separated by ``|``, ``E`` embedding, ``t``
  transformer (decoder) layer, ``m`` multi-token-prediction layer, ``L`` loss / output
  layer, ``x*n`` repeats; e.g. ``"Et*3|t*3|t*2L"``). With ``virtual`` stages per device the
  layout lists all ``v x D`` stages in order and stage ``i`` runs on pipeline rank
  ``i mod D`` - Megatron's interleaving, the convention of :mod:`placement.pipeline.schedule`.
* ``"torch"`` - ``torch.distributed.pipelining`` / torchtitan: the split points as module FQNs
  (``SplitPoint.BEGINNING`` of each stage's first module, for ``pipeline(...)``; torchtitan's
  ``pipeline_parallel_split_points``), and each stage's modules (torchtitan's
  ``module_fqns_per_model_part``, or a manual ``PipelineStage`` split).
* ``"deepspeed"`` - DeepSpeed ``PipelineModule``: the layer list and the explicit partition
  boundaries ``parts`` (stage ``s`` holds layers ``parts[s]:parts[s+1]``, DeepSpeed's own
  ``self.parts``), with ``partition_method="uniform"`` where the plan happens to be
  DeepSpeed's uniform split.

Modules of the graph
--------------------
A forward node belongs to the module named by its ``module`` field (an extra JSON field:
the FQN of the torch module, e.g. ``"layers.3"``) if any node of the graph has one - nodes
without it are then glue that belongs to no module - else to a module named after the node
(its ``name`` with ``/`` turned into ``.``; ``#id`` for unnamed nodes). Backward nodes are
left out: the frameworks run a module's backward where its forward runs. Modules are in
*model order*: by the position of their first node in a topological order of the forward
nodes (ties by file order).

For Megatron every module gets a layer type: its ``layerType`` field (``E``/``t``/``m``/``L``
or Megatron's names embedding/decoder/mtp/loss) if given, else from its FQN: a ``layers.N``
/ ``layerN`` / ``h.N`` / ``blocks.N`` component makes it part of transformer layer ``N``
(``t``), then ``embed...``/``wte``/``wpe`` is ``E``, ``mtp`` is ``m``, and
``head``/``lm_head``/``output``/``norm``/``ln_f``/``loss`` is ``L``.

Refusals (an :class:`~placement.errors.ExportError` with a one-line reason)
--------------------------------------------------------------------------
* a stage on a CPU core (the frameworks put every stage on an accelerator);
* stages on accelerators of different kinds (the frameworks assume one kind);
* a non-contiguous plan: a module split across stages, a stage whose modules are not one
  run of consecutive modules, or stages out of model order;
* Megatron only: a transformer layer split across stages, no embedding first or no loss
  layer last, a module of unknown layer type; ``D x v`` stages that ``virtual`` does not divide;
* DeepSpeed only: ``virtual > 1`` (``PipelineModule`` runs one stage per device).
"""

from __future__ import annotations

import heapq
import json
import re
from dataclasses import dataclass
from typing import Any

from ..errors import ExportError, label, quote
from ..model import CPU_KIND, Placement, Problem, ScheduleKind
from .registry import TORCH_SCHEDULES

EXPORT_TARGETS = ("megatron", "torch", "deepspeed")
MODULE_FIELD = "module"
LAYER_TYPE_FIELD = "layerType"
#: Megatron-Core's layer letters and names.
LAYER_LETTERS = {"E": "embedding", "t": "decoder", "m": "mtp", "L": "loss"}

_LAYER = re.compile(r"(?:^|\.)((?:layers?|h|blocks?)\.?(\d+))(?=$|\.)", re.IGNORECASE)
_EMBEDDING = re.compile(r"(?:^|[._])(embed\w*|wte|wpe|tok_embeddings)(?=$|[._])", re.IGNORECASE)
_MTP = re.compile(r"(?:^|[._])mtp\w*(?=$|[._])", re.IGNORECASE)
_LOSS = re.compile(
    r"(?:^|[._])(head|lm_head|output|norm|ln_f|final_layernorm|final_norm|loss)(?=$|[._])", re.IGNORECASE
)


@dataclass(frozen=True)
class ModulePlan:
    """The plan seen as modules: ``stages[k]`` lists stage ``k``'s modules, a run of ``modules``."""

    modules: tuple[str, ...]
    stages: tuple[tuple[str, ...], ...]
    kind: str

    @property
    def boundaries(self) -> tuple[int, ...]:
        """DeepSpeed's ``parts``: stage ``s`` holds ``modules[parts[s]:parts[s+1]]``."""
        out = [0]
        for stage in self.stages:
            out.append(out[-1] + len(stage))
        return tuple(out)


@dataclass(frozen=True)
class Export:
    """A plan as one framework's configuration.

    ``config`` is JSON-ready (what :func:`export_json` writes); ``text`` is what to paste
    (command-line flags, a TOML or Python snippet).
    """

    target: str
    config: tuple[tuple[str, Any], ...]
    text: str

    def as_dict(self) -> dict[str, Any]:
        return dict(self.config)


def module_of(node) -> str:
    """The default module name of a node (module docstring)."""
    return node.name.replace("/", ".") if node.name else f"#{node.id}"


def module_plan(problem: Problem, placement: Placement) -> ModulePlan:
    """Modules in model order and each stage's run of them; refuses what no framework can express.

    Raises
    ------
    ExportError
        For CPU stages, mixed accelerator kinds or a non-contiguous plan (module docstring).
    """
    graph = problem.graph
    if not placement.stages:
        raise ExportError("the plan has no stages")
    for k, stage in enumerate(placement.stages):
        if stage.device.kind == CPU_KIND:
            raise ExportError(f"stage {k} runs on {stage.device}: runtime pipelines put every stage on an accelerator")
    kinds = sorted({stage.device.kind for stage in placement.stages})
    if len(kinds) > 1:
        raise ExportError(f"the stages use accelerator kinds {', '.join(kinds)}: runtime pipelines assume one kind")
    stage_of = {n: k for k, stage in enumerate(placement.stages) for n in stage.nodes}
    forward = [n for n in graph.nodes if not n.is_backward]
    missing = [n.id for n in forward if n.id not in stage_of]
    if missing:
        raise ExportError(f"node {missing[0]}: not placed by the plan")
    named = any(MODULE_FIELD in n.extra for n in forward)

    def name(node) -> str | None:
        if not named:
            return module_of(node)
        value = node.extra.get(MODULE_FIELD)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise ExportError(
                f"node {node.id}: field '{MODULE_FIELD}' must be a module name (got {quote(repr(value), 40)})"
            )
        return value

    # Topological order of the forward nodes, ties by file order (Kahn's algorithm on positions).
    position = {n.id: i for i, n in enumerate(graph.nodes)}
    ids = {n.id for n in forward}
    indegree = {n: 0 for n in ids}
    for edge in graph.edges:
        if edge.source in ids and edge.target in ids:
            indegree[edge.target] += 1
    ready = [(position[n], n) for n in ids if indegree[n] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, n = heapq.heappop(ready)
        order.append(n)
        for v in graph.successors[n]:
            if v in indegree:
                indegree[v] -= 1
                if indegree[v] == 0:
                    heapq.heappush(ready, (position[v], v))
    modules: list[str] = []
    module_stage: dict[str, int] = {}
    for n in order:
        module = name(graph.node_by_id[n])
        if module is None:
            continue
        k = stage_of[n]
        if module not in module_stage:
            module_stage[module] = k
            modules.append(module)
        elif module_stage[module] != k:
            raise ExportError(
                f"module {quote(module)} is split across stages {module_stage[module]} and {k} "
                "(node {n}): runtime pipelines split between modules".replace("{n}", str(n))
            )
    if not modules:
        raise ExportError("the graph has no forward modules to split")
    stages: list[list[str]] = [[] for _ in placement.stages]
    last = -1
    for module in modules:
        k = module_stage[module]
        if k < last:
            raise ExportError(
                f"the plan is not contiguous in model order: module {quote(module)} on stage {k} comes after "
                f"modules of stage {last}"
            )
        if stages[k] and k != last:
            raise ExportError(
                f"the plan is not contiguous: stage {k} holds module {quote(stages[k][-1])} and {quote(module)} but "
                "not the modules between them"
            )
        stages[k].append(module)
        last = k
    for k, run in enumerate(stages):
        if not run:
            raise ExportError(f"stage {k} ({placement.stages[k].device}) holds no module")
    return ModulePlan(tuple(modules), tuple(tuple(s) for s in stages), kinds[0])


def _positive(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ExportError(f"{what} must be a positive integer (got {quote(repr(value), 40)})")
    return value


def _ranks(plan: ModulePlan, virtual: int) -> int:
    stages = len(plan.stages)
    if stages % virtual:
        raise ExportError(
            f"{stages} stages cannot run with {virtual} virtual stages per device: the number of stages "
            f"must be a multiple of {virtual}"
        )
    return stages // virtual


def layer_type(problem: Problem, module: str, nodes=()) -> tuple[str, str]:
    """(Megatron letter, layer key) of a module: the key names the transformer layer of a ``t``."""
    for node in nodes:
        given = node.extra.get(LAYER_TYPE_FIELD)
        if given is not None:
            letter = {v: k for k, v in LAYER_LETTERS.items()}.get(str(given).lower(), str(given))
            if letter not in LAYER_LETTERS:
                raise ExportError(
                    f"node {node.id}: field '{LAYER_TYPE_FIELD}' must be one of "
                    f"{', '.join(LAYER_LETTERS)} or {', '.join(LAYER_LETTERS.values())} (got {given!r})"
                )
            return letter, module if letter == "t" else letter
    match = _LAYER.search(module)
    if match:
        return "t", f"t{int(match.group(2))}"
    if _EMBEDDING.search(module):
        return "E", "E"
    if _MTP.search(module):
        return "m", module
    if _LOSS.search(module):
        return "L", "L"
    raise ExportError(
        f"module {module}: unknown Megatron layer type (give the node a '{LAYER_TYPE_FIELD}' field: E, t, m or L)"
    )


def _letters(keys: list[tuple[str, str]]) -> str:
    """'E', 't', 't', 't' -> 'Et*3' (one letter per layer: modules of one layer are collapsed)."""
    out: list[list[Any]] = []  # [letter, count] pairs, the count bumped in place
    previous = None
    for letter, key in keys:
        if key == previous:
            continue
        previous = key
        if out and out[-1][0] == letter and letter in "tm":
            out[-1][1] += 1
        else:
            out.append([letter, 1])
    return "".join(letter if count == 1 else f"{letter}*{count}" for letter, count in out)


def export_megatron(
    problem: Problem, placement: Placement, virtual: int = 1, tensor_parallel: int = 1, data_parallel: int = 1
) -> Export:
    """Megatron-LM flags for the plan (module docstring)."""
    plan = module_plan(problem, placement)
    virtual = _positive(virtual, "virtual stages per device")
    tp = _positive(tensor_parallel, "tensor-parallel size")
    dp = _positive(data_parallel, "data-parallel size")
    pp = _ranks(plan, virtual)
    nodes_of: dict[str, list] = {}
    forward = [n for n in problem.graph.nodes if not n.is_backward]
    named = any(MODULE_FIELD in n.extra for n in forward)
    for node in forward:
        module = node.extra.get(MODULE_FIELD) if named else module_of(node)
        if module:
            nodes_of.setdefault(module, []).append(node)
    key_stage: dict[str, int] = {}
    stage_keys: list[list[tuple[str, str]]] = []
    for k, stage in enumerate(plan.stages):
        keys = [layer_type(problem, module, nodes_of.get(module, ())) for module in stage]
        for letter, key in keys:
            if letter == "t" and key_stage.setdefault(key, k) != k:
                raise ExportError(
                    f"transformer layer {label(key[1:], 40)} is split across stages {key_stage[key]} and {k}: "
                    "Megatron's layout places whole layers"
                )
        stage_keys.append(keys)
    flat = [letter for keys in stage_keys for letter, _ in keys]
    embeddings = flat.count("E")
    if not embeddings or flat[:embeddings] != ["E"] * embeddings:
        raise ExportError(
            "not a transformer layer graph for Megatron: the first modules must be the embedding (E) "
            "and no later module may be one"
        )
    losses = flat.count("L")
    if not losses or flat[len(flat) - losses :] != ["L"] * losses:
        raise ExportError(
            "not a transformer layer graph for Megatron: the last modules must be the loss / output "
            "layer (L) and no earlier module may be one"
        )
    # Several E modules (token + position tables) or L modules (norm + head) are one Megatron layer each.
    layout = "|".join(_letters(keys) for keys in stage_keys)
    layers = len({key for keys in stage_keys for letter, key in keys if letter == "t"})
    args = [
        f"--pipeline-model-parallel-size {pp}",
        f"--tensor-model-parallel-size {tp}",
        f"--num-layers {layers}",
        f"--pipeline-model-parallel-layout '{layout}'",
    ]
    config = {
        "target": "megatron",
        "pipeline_model_parallel_size": pp,
        "tensor_model_parallel_size": tp,
        "data_parallel_size": dp,
        "world_size": pp * tp * dp,
        "virtual_pipeline_model_parallel_size": virtual,
        "num_layers": layers,
        "pipeline_model_parallel_layout": layout,
        "accelerator_kind": plan.kind,
        "stages": [list(s) for s in plan.stages],
        "args": " ".join(args),
    }
    text = (
        f"# Megatron-LM: {pp * tp * dp} GPUs = pipeline {pp} x tensor {tp} x data {dp} "
        f"(data parallel = world size / (pipeline x tensor))\n" + " \\\n  ".join(args) + "\n"
    )
    return Export("megatron", tuple(config.items()), text)


def export_torch(problem: Problem, placement: Placement, virtual: int = 1, schedule: str = "1f1b") -> Export:
    """torch.distributed.pipelining / torchtitan split points for the plan (module docstring)."""
    plan = module_plan(problem, placement)
    virtual = _positive(virtual, "virtual stages per device")
    ranks = _ranks(plan, virtual)
    if schedule not in TORCH_SCHEDULES:
        raise ExportError(f"no torch schedule for {quote(schedule)}; choose one of: {', '.join(TORCH_SCHEDULES)}")
    if virtual > 1 and schedule in (ScheduleKind.GPIPE, ScheduleKind.ONE_F_ONE_B):
        schedule = "interleaved"
    split_points = [stage[0] for stage in plan.stages[1:]]
    config = {
        "target": "torch",
        "pipeline_parallel_degree": ranks,
        "stages_per_rank": virtual,
        "split_points": split_points,
        "module_fqns_per_model_part": [list(s) for s in plan.stages],
        "schedule": TORCH_SCHEDULES[schedule],
        "accelerator_kind": plan.kind,
        "torchtitan": {
            "parallelism": {
                "pipeline_parallel_degree": ranks,
                "pipeline_parallel_split_points": split_points,
                "pipeline_parallel_schedule": TORCH_SCHEDULES[schedule].removeprefix("Schedule"),
            }
        },
    }
    spec = "".join(f"    {fqn!r}: SplitPoint.BEGINNING,\n" for fqn in split_points)
    text = (
        f"# torch.distributed.pipelining: {len(plan.stages)} stage(s), stage i runs on rank i % {ranks}\n"
        "from torch.distributed.pipelining import SplitPoint, pipeline\n"
        f"split_spec = {{\n{spec}}}\n"
        "pipe = pipeline(model, mb_args=(example_microbatch,), split_spec=split_spec)\n"
        f"# schedule: torch.distributed.pipelining.{TORCH_SCHEDULES[schedule]}\n"
        "# torchtitan: [parallelism]\n"
        f"# pipeline_parallel_degree = {ranks}\n"
        f"# pipeline_parallel_split_points = {json.dumps(split_points)}\n"
    )
    return Export("torch", tuple(config.items()), text)


def uniform_parts(num_items: int, num_parts: int) -> tuple[int, ...]:
    """DeepSpeed's ``partition_uniform`` (``deepspeed.runtime.utils``) boundaries."""
    parts = [0] * (num_parts + 1)
    if num_items <= num_parts:
        for p in range(num_parts + 1):
            parts[p] = min(p, num_items)
        return tuple(parts)
    chunksize = num_items // num_parts
    residual = num_items - (chunksize * num_parts)
    for i in range(num_parts + 1):
        parts[i] = i * chunksize + min(i, residual)
    return tuple(parts)


def export_deepspeed(problem: Problem, placement: Placement, virtual: int = 1) -> Export:
    """DeepSpeed PipelineModule partition for the plan (module docstring)."""
    plan = module_plan(problem, placement)
    if _positive(virtual, "virtual stages per device") != 1:
        raise ExportError("DeepSpeed's PipelineModule runs one stage per device: interleaved plans cannot be expressed")
    parts = list(plan.boundaries)
    uniform = tuple(parts) == uniform_parts(len(plan.modules), len(plan.stages))
    method = "uniform" if uniform else "explicit"
    config = {
        "target": "deepspeed",
        "num_stages": len(plan.stages),
        "layers": list(plan.modules),
        "parts": parts,
        "partition_method": method,
        "accelerator_kind": plan.kind,
        "stages": [list(s) for s in plan.stages],
    }
    if uniform:
        text = (
            f"# DeepSpeed: the plan is DeepSpeed's uniform split of {len(plan.modules)} layers\n"
            f'PipelineModule(layers=layers, num_stages={len(plan.stages)}, partition_method="uniform")\n'
        )
    else:
        text = (
            "# DeepSpeed: explicit partition boundaries (stage s holds layers[parts[s]:parts[s + 1]])\n"
            "from deepspeed.pipe import PipelineModule\n\n\n"
            "class PlannedPipelineModule(PipelineModule):\n"
            f"    PARTS = {parts}\n\n"
            '    def _partition_layers(self, method="uniform"):\n'
            "        self.parts = list(self.PARTS)\n\n\n"
            f"module = PlannedPipelineModule(layers=layers, num_stages={len(plan.stages)})\n"
        )
    text += "# layers, in order: " + ", ".join(plan.modules) + "\n"
    return Export("deepspeed", tuple(config.items()), text)


def export_plan(
    problem: Problem,
    placement: Placement,
    target: str,
    *,
    virtual: int = 1,
    tensor_parallel: int = 1,
    data_parallel: int = 1,
    schedule: str = "1f1b",
) -> Export:
    """Export ``placement`` to ``target`` (one of :data:`EXPORT_TARGETS`).

    Parameters
    ----------
    problem, placement : Problem, Placement
        The graph (with module names, see the module docstring) and the plan.
    target : str
        ``"megatron"``, ``"torch"`` or ``"deepspeed"``.
    virtual : int
        Virtual stages per device (stage ``i`` on device ``i mod D``).
    tensor_parallel, data_parallel : int
        Megatron's tensor- and data-parallel sizes.
    schedule : str
        For torch: the schedule of :mod:`placement.pipeline.schedule` to name.

    Raises
    ------
    ExportError
        With a one-line reason when the plan cannot be expressed.
    """
    if target == "megatron":
        return export_megatron(problem, placement, virtual, tensor_parallel, data_parallel)
    if target == "torch":
        return export_torch(problem, placement, virtual, schedule)
    if target == "deepspeed":
        return export_deepspeed(problem, placement, virtual)
    raise ExportError(f"unknown export target {quote(target)}; choose one of: {', '.join(EXPORT_TARGETS)}")


def export_json(export: Export) -> str:
    """The export's configuration as a JSON document (with the paste-ready text as ``"snippet"``)."""
    return json.dumps({**export.as_dict(), "snippet": export.text}, indent=1)
