"""The pages' one door to the shared state: every name below, re-exported from the topic modules.

Pages write ``from ui import state`` and ``state.current_problem()``; the work is done in

* :mod:`ui.graph_state` - the graph (:func:`set_graph`, :func:`current_graph_name`, :func:`base_problem`),
  the devices (:func:`current_devices`, :func:`set_devices`), latency multipliers
  (:func:`latency_rules`, :func:`set_latency_rules`), the graph re-priced for the inventory's catalogue
  kinds and an uploaded device profile (:func:`priced_graph`, :func:`cost_source_text`, :func:`current_profile`,
  :func:`set_profile`), the memory model (:func:`current_memory_model`,
  :func:`set_memory_model`: every solve of every page uses it), the currency, :func:`current_problem`;
* :mod:`ui.plan_state` - the method, objective and time limit, a plan picked elsewhere
  (:func:`set_selected_plan`, :func:`selected_plan`, :func:`clear_selected_plan`, :func:`result_problem`)
  and :func:`current_result`;
* :mod:`ui.caches` - :func:`solve_cached` (cached on the graph digest + devices + method + options);
* :mod:`ui.graph_info` - cached layout, ideal count and ideal bounds of a graph;
* :mod:`ui.widgets` - widget state, one way for every page (:data:`PERSIST`, :func:`init_widget`,
  :func:`sync_widgets`, :func:`stable_maximum`);
* :mod:`ui.formatting`, :mod:`ui.plan_metrics`, :mod:`ui.presets`, :mod:`ui.samples`.

Shared state lives in private session keys (:mod:`ui.session_keys`, prefix ``_ui_``). The start of a
run (open the link's scenario, keep the URL in step) is :func:`ui.startup.ensure_default_graph`; this
module and the ones it reads never import :mod:`ui.scenario` (the URL sync reaches them as a callback).
"""

from __future__ import annotations

from ui.caches import (
    clear_caches,
    effective_method,
    method_objective,
    method_options,
    problem_key,
    solve_cached,
    takes_time_limit,
)
from ui.formatting import (
    TIME_UNIT,
    cost_source_caption,
    describe_devices,
    format_time,
    latency_text,
    method_name,
    money,
    not_optimal_note,
    plan_cost_line,
    time_unit,
    time_unit_note,
)
from ui.graph_info import IDEALS_CAP, describe_ideal_bounds, graph_layout, ideal_bounds, ideal_count
from ui.graph_state import (
    base_problem,
    cost_source_text,
    current_currency,
    current_devices,
    current_graph,
    current_graph_name,
    current_graph_source,
    current_memory_model,
    current_problem,
    current_profile,
    devices_origin,
    devices_origin_text,
    devices_version,
    latency_rules,
    load_sample,
    priced_graph,
    priced_kinds,
    set_currency,
    set_devices,
    set_graph,
    set_latency_rules,
    set_memory_model,
    set_profile,
    use_file_devices,
)
from ui.plan_metrics import BatchTiming, batch_timing, plan_cost
from ui.plan_state import (
    DEFAULT_TIME_LIMIT,
    clear_selected_plan,
    current_method,
    current_objective,
    current_result,
    current_time_limit,
    live_method,
    result_problem,
    selected_plan,
    selected_plan_origin,
    set_method,
    set_objective,
    set_selected_plan,
    set_time_limit,
)
from ui.presets import PRESETS, device_preset
from ui.samples import (
    DEFAULT_SAMPLE,
    PAPER_SAMPLE,
    ROOT,
    SAMPLES_DIR,
    default_sample,
    sample_files,
    sample_group,
    sample_label,
)
from ui.widgets import (
    PERSIST,
    UPLOAD_LIMIT_MB,
    forget_upload,
    init_widget,
    mark_synced,
    stable_maximum,
    sync_widgets,
)

__all__ = [
    "BatchTiming",
    "DEFAULT_SAMPLE",
    "DEFAULT_TIME_LIMIT",
    "PAPER_SAMPLE",
    "IDEALS_CAP",
    "PERSIST",
    "PRESETS",
    "ROOT",
    "SAMPLES_DIR",
    "TIME_UNIT",
    "UPLOAD_LIMIT_MB",
    "forget_upload",
    "base_problem",
    "batch_timing",
    "clear_caches",
    "clear_selected_plan",
    "cost_source_caption",
    "cost_source_text",
    "current_currency",
    "current_devices",
    "current_graph",
    "current_graph_name",
    "current_graph_source",
    "current_memory_model",
    "current_method",
    "current_objective",
    "current_problem",
    "current_profile",
    "current_result",
    "current_time_limit",
    "default_sample",
    "describe_devices",
    "describe_ideal_bounds",
    "device_preset",
    "devices_origin",
    "devices_origin_text",
    "devices_version",
    "effective_method",
    "format_time",
    "graph_layout",
    "ideal_bounds",
    "ideal_count",
    "init_widget",
    "latency_rules",
    "latency_text",
    "live_method",
    "load_sample",
    "mark_synced",
    "method_name",
    "method_objective",
    "method_options",
    "money",
    "not_optimal_note",
    "plan_cost",
    "priced_graph",
    "priced_kinds",
    "plan_cost_line",
    "problem_key",
    "result_problem",
    "sample_files",
    "sample_group",
    "sample_label",
    "selected_plan",
    "selected_plan_origin",
    "set_currency",
    "set_devices",
    "set_graph",
    "set_latency_rules",
    "set_memory_model",
    "set_profile",
    "set_method",
    "set_objective",
    "set_selected_plan",
    "set_time_limit",
    "solve_cached",
    "stable_maximum",
    "sync_widgets",
    "takes_time_limit",
    "time_unit",
    "time_unit_note",
    "use_file_devices",
]
