"""Plotly figures and plain tables for the app (figures only: pages place them).

Every function takes model values (graphs, placements, evaluations) and returns a
``plotly.graph_objects.Figure`` or plain Python rows; nothing here imports Streamlit or
computes a cost the evaluator does not already give. Coordinates and values are plain
Python lists (not NumPy arrays) so that the figure JSON stays readable.

One module per page topic (add a figure to the module of its page, or a new module):

* :mod:`._base`: shared helpers (colors, units, legends, small trace builders);
* :mod:`.graph`: DAG layout, graph figure, node labels, graph statistics and node table;
* :mod:`.loads`: per-device load and memory figures, placement tables, the methods comparison;
* :mod:`.plans`: linked plan views (count curve, device highlight) and the plan diff;
* :mod:`.timeline`: Gantt charts of pipeline schedules, memory over time, schedules side by side;
* :mod:`.tradeoffs`: sweep and Pareto figures;
* :mod:`.purchase` and :mod:`.uncertainty`: the purchase and uncertainty pages' figures;
* :mod:`.lattice`: the teaching mode's lattice of ideals;
* :mod:`.multidim`: multidimensional plans.

Every public name is re-exported here: ``from placement.viz import graph_figure`` keeps working.
"""

from __future__ import annotations

from ._base import CPU_COLORS, DEVICE_COLORS, GIB, UNPLACED_COLOR, device_colors, format_bytes
from .bounds import band_figure
from .graph import dag_layout, graph_figure, graph_stats, node_hover, node_label, node_label_chars, node_rows
from .lattice import label_sides, lattice_figure, teaching_layout
from .loads import compare_figure, device_rows, load_figure, memory_figure, placement_rows
from .multidim import multidim_curve_figure, multidim_stage_rows, multidim_timeline_figure
from .plans import count_curve_figure, highlight_device, plan_diff_figure, plan_diff_rows
from .purchase import purchase_figure, purchase_rows
from .timeline import (
    EVENT_COLORS,
    IDLE_COLOR,
    SCHEDULE_EVENT_COLORS,
    memory_breakdown_rows,
    memory_timeline_figure,
    peak_memory_rows,
    schedule_comparison_figure,
    schedule_comparison_rows,
    schedule_figure,
    timeline_figure,
)
from .tradeoffs import add_sensitivity_markers, pareto_figure, sweep_figure, sweep_rows, sweep_summary
from .uncertainty import bottleneck_figure, monte_carlo_figure

__all__ = [
    "CPU_COLORS",
    "DEVICE_COLORS",
    "EVENT_COLORS",
    "GIB",
    "IDLE_COLOR",
    "SCHEDULE_EVENT_COLORS",
    "UNPLACED_COLOR",
    "add_sensitivity_markers",
    "band_figure",
    "bottleneck_figure",
    "compare_figure",
    "count_curve_figure",
    "dag_layout",
    "device_colors",
    "device_rows",
    "format_bytes",
    "graph_figure",
    "graph_stats",
    "highlight_device",
    "label_sides",
    "lattice_figure",
    "load_figure",
    "teaching_layout",
    "memory_breakdown_rows",
    "memory_figure",
    "memory_timeline_figure",
    "monte_carlo_figure",
    "multidim_curve_figure",
    "multidim_stage_rows",
    "multidim_timeline_figure",
    "node_hover",
    "node_label",
    "node_label_chars",
    "node_rows",
    "pareto_figure",
    "peak_memory_rows",
    "placement_rows",
    "plan_diff_figure",
    "plan_diff_rows",
    "purchase_figure",
    "purchase_rows",
    "schedule_comparison_figure",
    "schedule_comparison_rows",
    "schedule_figure",
    "sweep_figure",
    "sweep_rows",
    "sweep_summary",
    "timeline_figure",
]
