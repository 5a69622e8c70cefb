"""Training graphs from inference graphs: a backward node per forward node.

For a forward graph ``G`` the training graph has, for every forward node ``v``:

* the forward node ``v`` itself (its color class set, see below);
* a backward node ``v'`` (id ``v + offset``, name ``"<name> (grad)"``, ``is_backward``)
  whose latencies (CPU, reference and per-kind) are ``backward_factor`` times ``v``'s.
  The default 2.0 follows the usual estimate that a backward pass costs about twice the
  forward FLOPs (one product for the input gradient and one for the weight gradient) and
  moves about twice the bytes, so its roofline time doubles too. Its ``size`` is
  ``gradient_memory_factor`` times ``v``'s (weight gradients, optimizer state);
* a node that records its kernels (``extra["work"]``, built or imported graphs) passes them to ``v'``, whose
  latencies :func:`placement.modelling.pricing.price_graph` then sets from the kernels' backward times
  (dgrad + wgrad products, the attention backward, twice the streamed bytes) instead of the factor;
* ``v`` and ``v'`` share a **color class** (the class of ``v`` if it had one, else a new
  one), so a device that runs a forward operator also runs its gradient.

Edges: every forward edge ``u -> v`` is kept and gives a gradient edge ``v' -> u'``
(the gradient of ``u``'s output flows back); every forward node has an activation edge
``u -> u'`` (its saved activations). ``u -> u'`` carries ``u``'s output cost (all edges
leaving ``u`` share one cost); ``v'`` sends the gradients of all its inputs, so its
output cost is the sum of the output costs of ``v``'s forward predecessors (and ``size``
likewise). No edge goes from a backward node to a forward node, as :class:`Graph` demands.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import InvalidGraphError
from ..model import Edge, Graph, Node

#: Backward time as a multiple of forward time (about 2x the FLOPs and bytes).
BACKWARD_FACTOR = 2.0


def backward_offset(graph: Graph) -> int:
    """The id offset of backward nodes: one more than the largest forward id."""
    return max((node.id for node in graph.nodes), default=-1) + 1


def _backward_extra(node: Node, backward_factor: float) -> dict[str, object]:
    """The backward node's ``extra``: scaled FLOPs and bytes; the forward's kernels (priced by their backward)."""
    extra: dict[str, object] = {
        k: v * backward_factor
        for k, v in node.extra.items()
        if k in ("flops", "bytesRead", "bytesWritten") and isinstance(v, (int, float))
    }
    for key in ("work",):
        if key in node.extra:
            extra[key] = node.extra[key]
    return extra


def training_graph(
    graph: Graph, backward_factor: float = BACKWARD_FACTOR, gradient_memory_factor: float = 1.0
) -> Graph:
    """The training graph of the forward (inference) graph ``graph``.

    Parameters
    ----------
    graph : Graph
        A forward graph (no backward nodes).
    backward_factor : float
        Backward latency / forward latency (default 2.0).
    gradient_memory_factor : float
        Backward node size / forward node size (default 1.0: one gradient per weight).

    Returns
    -------
    Graph
        Forward nodes then backward nodes (ids ``v + offset``), validated by :class:`Graph`.
    """
    if graph.is_training:
        raise InvalidGraphError("the graph already has backward nodes")
    for value, what in ((backward_factor, "backward factor"), (gradient_memory_factor, "gradient memory factor")):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
            raise InvalidGraphError(f"{what} must be a finite non-negative number (got {value!r})")
    offset = backward_offset(graph)
    next_class = max((n.color_class for n in graph.nodes if n.color_class is not None), default=-1) + 1
    forward, backward = [], []
    for node in graph.nodes:
        color = node.color_class
        if color is None:
            color, next_class = next_class, next_class + 1
        forward.append(replace(node, color_class=color))
        backward.append(
            Node(
                id=node.id + offset,
                name=f"{node.label} (grad)",
                cpu_latency=node.cpu_latency * backward_factor,
                accelerator_latency=node.accelerator_latency * backward_factor,
                supported_on_accelerator=node.supported_on_accelerator,
                is_backward=True,
                color_class=color,
                size=node.size * gradient_memory_factor,
                kind_latency=tuple((k, v * backward_factor) for k, v in node.kind_latency),
                allowed_kinds=node.allowed_kinds,
                extra=_backward_extra(node, backward_factor),
            )
        )
    sizes = {e.source: e.size for e in graph.edges}
    cost = graph.output_cost
    edges = [replace(e) for e in graph.edges]
    for node in graph.nodes:
        edges.append(Edge(node.id, node.id + offset, cost[node.id], sizes.get(node.id)))
    for node in graph.nodes:
        preds = graph.predecessors[node.id]
        if not preds:
            continue
        grad_cost = sum(cost[p] for p in preds)
        known = [sizes.get(p) for p in preds]
        known_sizes = [s for s in known if s is not None]
        grad_size = sum(known_sizes) if len(known_sizes) == len(known) else None
        for pred in preds:
            edges.append(Edge(node.id + offset, pred + offset, grad_cost, grad_size))
    return Graph(
        tuple(forward + backward),
        tuple(edges),
        # Named once: a builder's name may already say "training" (no "(training) (training)").
        name=graph.name if "training" in graph.name else f"{graph.name} (training)" if graph.name else "",
        extra=dict(graph.extra),
    )
