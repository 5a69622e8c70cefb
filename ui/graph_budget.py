"""The Graph page's own budget (issue 45.3): an upload's work estimated before it is done, and bounded views.

An upload is weighed from its bytes alone (:func:`estimate_upload`: the ``"id"`` and ``"sourceId"`` keys
counted, some milliseconds for 40 MB) before it is parsed: the page's work on a graph (parse, validation,
digest, the ideal bounds, the layout) grows with its nodes and edges, and a graph whose estimate passes
:data:`GRAPH_PAGE_WORK_S` is refused in one line naming its size and the ways out (a coarser graph, the
command line). A graph that is accepted is shown within bounds: the ideal count only up to
:data:`IDEAL_COUNT_MAX_NODES` nodes (the bounds always), the drawing on a sample of at most
:data:`FIGURE_MAX_NODES` nodes, the node table in pages of :data:`TABLE_PAGE_ROWS` rows; each says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import placement

#: CPU seconds the Graph page may spend on one graph (parse, validation, digest, ideal bounds, layout).
GRAPH_PAGE_WORK_S = 4.0
#: CPU seconds per node and per edge of that work: measured on chains of 5,000 and 20,000 nodes
#: (2026-12-04, process time): parse, validation and digest 40 us a node, ideal bounds 32 us, layout 12 us;
#: the edges' share (about a third of each step on a chain) counted apart, so that dense graphs weigh more.
PER_NODE_S = 60e-6
PER_EDGE_S = 25e-6
#: Nodes above which the Graph page does not count ideals (it shows their bounds): the count's work grows
#: with the square of a chain's length (0.3 s at 5,000 nodes, 9.9 s at 20,000, measured as above).
IDEAL_COUNT_MAX_NODES = 5_000
#: Nodes drawn at most: a larger graph is drawn on the first nodes of its topological order.
FIGURE_MAX_NODES = 2_000
#: Rows of the node table per page.
TABLE_PAGE_ROWS = 1_000

#: The ways out named by a refusal.
WAY_OUT = (
    "merge operators into layers or blocks for a coarser graph, or plan it with the command line "
    "(python -m placement solve FILE), which has no page to draw"
)


@dataclass(frozen=True)
class UploadEstimate:
    """The size of an upload read from its bytes, and the Graph page's estimated work for it."""

    size: int
    nodes: int
    edges: int

    @property
    def seconds(self) -> float:
        """Estimated CPU seconds of the Graph page's work on this graph."""
        return PER_NODE_S * self.nodes + PER_EDGE_S * self.edges

    def refusal(self, name: str) -> str | None:
        """One line refusing the upload ``name`` when its estimate passes the budget, else None."""
        if self.seconds <= GRAPH_PAGE_WORK_S:
            return None
        return (
            f"{name}: about {self.nodes:,} nodes and {self.edges:,} edges ({self.size / 2**20:.1f} MiB) would take "
            f"the Graph page about {self.seconds:.0f} CPU s to read, check and lay out, over its budget of "
            f"{GRAPH_PAGE_WORK_S:g} s (about {max_nodes():,} nodes on a chain): {WAY_OUT}"
        )


def estimate_upload(data: bytes) -> UploadEstimate:
    """Nodes and edges of a graph file in the paper's format, counted from its keys without parsing it.

    A key is counted with its quotes (``"id"``, ``"sourceId"``); the same word inside a name is escaped
    (``\\"id\\"``) and not counted. Duplicate keys would count twice: the estimate may only be high.
    """
    return UploadEstimate(len(data), data.count(b'"id"'), data.count(b'"sourceId"'))


def max_nodes() -> int:
    """Nodes of the longest chain within the budget (one edge per node)."""
    return int(GRAPH_PAGE_WORK_S / (PER_NODE_S + PER_EDGE_S))


def figure_sample(graph: placement.Graph) -> placement.Graph:
    """``graph`` when it has at most :data:`FIGURE_MAX_NODES` nodes, else the subgraph of its first ones.

    The first nodes of the topological order and the edges between them: a prefix of the pipeline, drawn
    as it is (an induced subgraph of a DAG is one, and keeps every rule of :class:`placement.Graph`).
    """
    if len(graph.nodes) <= FIGURE_MAX_NODES:
        return graph
    kept = set(graph.topological_order[:FIGURE_MAX_NODES])
    nodes = tuple(node for node in graph.nodes if node.id in kept)
    edges = tuple(edge for edge in graph.edges if edge.source in kept and edge.target in kept)
    return placement.Graph(nodes, edges, name=graph.name)


def table_pages(count: int) -> int:
    """Pages of :data:`TABLE_PAGE_ROWS` rows for ``count`` rows (at least one)."""
    return max(1, -(-count // TABLE_PAGE_ROWS))
