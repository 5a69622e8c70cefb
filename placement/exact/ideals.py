"""Groups (contracted color classes) and the lattice of ideals the DP searches.

A **group** is a set of nodes that must share a device: the nodes of one color class
(a forward node and its backward nodes), merged further where contracting classes
creates a cycle among forward nodes. Nodes without a color class are groups of their own.

The **order graph** on groups has an edge g -> h when a forward node of g feeds a forward
node of h. Groups with backward nodes only (no forward partner) are ordered by the
backward flow reversed: a backward edge h' -> g' between such a group and another group
gives the order edge g' -> h' (the paper's convention; it reproduces its ideal counts). An **ideal** is a down-closed set of groups of the order graph;
a contiguous split is a chain of ideals, each device running one difference.

The lattice is stored with its cover relation ("up-edges"): for each ideal, the groups
that can be added to it and the index of the ideal that results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..condense import condense
from ..errors import TooManyIdealsError
from ..model import Graph, smallest_first_order
from . import ideal_enum

#: Default cap on the number of ideals enumerated before giving up (memory stays ~ 100s of MB).
DEFAULT_MAX_IDEALS = 1_000_000


@dataclass(frozen=True)
class Groups:
    """Contraction of a graph into groups.

    Attributes
    ----------
    members : tuple of tuple of int
        Node ids of each group, groups numbered in a topological order of the order graph.
    group_of : dict
        Node id -> group index.
    order_edges : tuple of (int, int)
        Edges of the (acyclic) order graph between group indices.
    """

    members: tuple[tuple[int, ...], ...]
    group_of: dict
    order_edges: tuple[tuple[int, int], ...]

    @property
    def count(self) -> int:
        return len(self.members)


def contract(graph: Graph) -> Groups:
    """Contract color classes (and the cycles they create) into groups in topological order."""
    class_of = {node: k for k, cls in enumerate(graph.color_groups) for node in cls}
    has_forward: dict[int, bool] = {}
    for node in graph.nodes:
        cls = class_of[node.id]
        has_forward[cls] = has_forward.get(cls, False) or not node.is_backward
    class_edges: set[tuple[int, int]] = set()
    node_by_id = graph.node_by_id
    for edge in graph.edges:
        a, b = class_of[edge.source], class_of[edge.target]
        if a == b:
            continue
        source_backward, target_backward = node_by_id[edge.source].is_backward, node_by_id[edge.target].is_backward
        if not source_backward and not target_backward:
            class_edges.add((a, b))
        elif source_backward and target_backward and not (has_forward[a] and has_forward[b]):
            # Backward work flows from the last stage to the first: a group of backward nodes
            # only sits before the groups that feed it and after the groups it feeds.
            class_edges.add((b, a))
    n_classes = len(graph.color_groups)
    fast = smallest_first_order(range(n_classes), class_edges)
    if fast is not None:
        # Acyclic: every class is a group of its own, ranked by the smallest-index-first topological order.
        rank = {cls: i for i, cls in enumerate(fast)}
        class_to_group = rank
        edges = sorted((rank[a], rank[b]) for a, b in class_edges)
    else:
        # Cycles created by contraction: the classes on a cycle must share a device (ties: smallest class first).
        class_to_group, edges = condense(range(n_classes), class_edges, lambda cls: cls)
    members: list[list[int]] = [[] for _ in range(len(set(class_to_group.values())))]
    group_of = {}
    for node in graph.nodes:
        group = class_to_group[class_of[node.id]]
        members[group].append(node.id)
        group_of[node.id] = group
    return Groups(tuple(tuple(sorted(m)) if len(m) > 1 else tuple(m) for m in members), group_of, tuple(edges))


def _is_free(graph: Graph, nodes) -> bool:
    """True when every node has zero latency everywhere and may run on any device."""
    for node_id in nodes:
        node = graph.node_by_id[node_id]
        if node.cpu_latency or node.accelerator_latency or any(v for _, v in node.kind_latency):
            return False
        if not node.supported_on_accelerator or node.allowed_kinds is not None:
            return False
    return True


def reduce_groups(graph: Graph, groups: Groups) -> tuple[Groups, frozenset]:
    """Merge groups that can be moved onto a neighbour's device without raising any load.

    A *free* group (zero latency on every device, runnable anywhere) is merged

    * into its only order-graph predecessor, or its only successor, when every edge with a
      non-zero cost that touches it connects it to that neighbour (moving it there keeps
      the ideals down-closed and removes crossings only);
    * with the other free sources (free groups without predecessors whose edges all have
      zero cost), and likewise with the other such free sinks.

    Loads never rise, but the merged node's memory moves with it, so the merge is exact
    only for the loads: the returned set lists the nodes whose ``size`` must be ignored
    for the solve over the reduced lattice to be a relaxation (a lower bound); the DP then
    checks memory with the real sizes (see :mod:`placement.exact.dp`).

    Returns
    -------
    (Groups, frozenset)
        The reduced groups (topologically numbered) and the ids of the merged-in nodes.
    """
    if not any(_is_free(graph, m) for m in groups.members):
        return groups, frozenset()  # only free groups are ever merged
    import networkx as nx  # noqa: PLC0415 - deferred: the multidim CLI path never needs networkx

    members = {g: set(m) for g, m in enumerate(groups.members)}
    order = nx.DiGraph()
    order.add_nodes_from(members)
    order.add_edges_from(groups.order_edges)
    cost = graph.output_cost
    group_of = dict(groups.group_of)
    moved: set[int] = set()

    def costly_neighbours(g: int) -> set[int]:
        """Groups joined to g by an edge of non-zero cost."""
        out = set()
        for node in members[g]:
            for succ in graph.successors[node]:
                if cost[node] and group_of[succ] != g:
                    out.add(group_of[succ])
            for pred in graph.predecessors[node]:
                if cost[pred] and group_of[pred] != g:
                    out.add(group_of[pred])
        return out

    def merge(into: int, g: int) -> None:
        for node in members[g]:
            group_of[node] = into
        moved.update(members[g])
        members[into] |= members.pop(g)
        for p in list(order.predecessors(g)):
            if p != into:
                order.add_edge(p, into)
        for s in list(order.successors(g)):
            if s != into:
                order.add_edge(into, s)
        order.remove_node(g)

    changed = True
    while changed:
        changed = False
        for g in sorted(members):
            if g not in members or not _is_free(graph, members[g]):
                continue
            preds, succs = list(order.predecessors(g)), list(order.successors(g))
            costly = costly_neighbours(g)
            for neighbours in (preds, succs):
                if len(neighbours) == 1 and costly <= {neighbours[0]}:
                    merge(neighbours[0], g)
                    changed = True
                    break
        for side in ("sources", "sinks"):
            free = [
                g
                for g in sorted(members)
                if (order.in_degree(g) if side == "sources" else order.out_degree(g)) == 0
                and _is_free(graph, members[g])
                and not costly_neighbours(g)
            ]
            for g in free[1:]:
                merge(free[0], g)
                changed = True
    # The merges keep the order graph acyclic (each is a move that keeps ideals down-closed).
    rank = {g: i for i, g in enumerate(nx.lexicographical_topological_sort(order, key=lambda g: min(members[g])))}
    new_members: list[tuple[int, ...]] = [()] * len(rank)
    new_group_of = {}
    for g, i in rank.items():
        new_members[i] = tuple(sorted(members[g]))
        for node in members[g]:
            new_group_of[node] = i
    edges = tuple(sorted({(rank[a], rank[b]) for a, b in order.edges}))
    return Groups(tuple(new_members), new_group_of, edges), frozenset(moved)


@dataclass(frozen=True)
class IdealLattice:
    """All ideals of the order graph of ``groups``, by increasing size.

    Attributes
    ----------
    masks : list of int
        Ideal i as a bitmask over groups (bit g set = group g in the ideal). ``masks[0]`` is empty.
    sizes : numpy.ndarray
        Number of groups in each ideal (non-decreasing).
    up_start, up_group, up_target : numpy.ndarray
        Cover relation in CSR form: for ideal i, ``up_group[up_start[i]:up_start[i+1]]`` are the
        groups that can be added to it and ``up_target[...]`` the index of the resulting ideal.
    """

    masks: list
    sizes: np.ndarray
    up_start: np.ndarray
    up_group: np.ndarray
    up_target: np.ndarray

    @property
    def count(self) -> int:
        return len(self.masks)

    @property
    def full(self) -> int:
        """Index of the ideal holding every group."""
        return len(self.masks) - 1

    def groups_of(self, index: int) -> list[int]:
        mask = self.masks[index]
        return [g for g in range(mask.bit_length()) if mask >> g & 1]


#: Ideals the plain-Python enumeration finds before the compiled walk takes over (the walk costs numba's
#: start-up, about 0.3 s to load its machine code: it pays on larger lattices, and in a process that has
#: it loaded already it is used from the start). Both give the same lattice.
PLAIN_MAX_IDEALS = 20_000

#: Default cap on the memory the enumerated lattice may take (bytes, estimated as it grows).
DEFAULT_MAX_LATTICE_BYTES = 1 << 30

#: Exact width (Dilworth) is computed by matching on the transitive closure only up to this many
#: comparable pairs; above it the width is reported as a range (an antichain and a chain cover).
_MAX_CLOSURE_PAIRS = 200_000


@dataclass(frozen=True)
class IdealBounds:
    """Cheap facts about the lattice of ideals of an order graph, computed without enumerating it.

    Attributes
    ----------
    groups : int
        Number of groups (elements of the order).
    width_low, width_high : int
        The width (size of a maximum antichain, Dilworth) lies in ``[width_low, width_high]``;
        both are equal when it is known exactly.
    antichain : tuple of int
        Groups of an antichain of ``width_low`` groups (pairwise incomparable).
    chains : int
        Number of chains in the chain cover behind ``width_high``.
    lower : int
        A lower bound on the number of ideals: ``max(2 ** width_low, groups + 1)`` (every subset of
        an antichain generates its own ideal; the prefixes of a topological order are ideals).
    upper : int
        An upper bound: the product over the chains of the cover of (chain length + 1) (an ideal
        meets each chain in a prefix of it).
    """

    groups: int
    width_low: int
    width_high: int
    antichain: tuple[int, ...]
    chains: int
    lower: int
    upper: int

    @property
    def width_exact(self) -> bool:
        return self.width_low == self.width_high

    def describe_width(self) -> str:
        """``"width 7"`` or ``"width between 7 and 9"``."""
        if self.width_exact:
            return f"width {self.width_low:,}"
        return f"width between {self.width_low:,} and {self.width_high:,}"


def format_count(value: int) -> str:
    """A count that may be astronomically large: ``1,024`` or ``about 2^2000``."""
    if value < 10**15:
        return f"{value:,}"
    return f"about 2^{value.bit_length() - 1:,}"


def _generations(n: int, order_edges) -> tuple[list[int], list[list[int]]]:
    """Longest-path layer of each group (groups are numbered topologically) and the groups of each layer.

    A layer is an antichain: if g reaches h, h lies on a strictly later layer.
    """
    layer = [0] * n
    for a, b in sorted(order_edges):  # sorted by source: every source's layer is final when read
        if layer[a] + 1 > layer[b]:
            layer[b] = layer[a] + 1
    layers: list[list[int]] = [[] for _ in range(max(layer, default=0) + 1)]
    for g in range(n):
        layers[layer[g]].append(g)
    return layer, layers


def _antichain_bound(groups: Groups) -> tuple[int, tuple[int, ...]]:
    """The largest longest-path layer: an antichain, found in O(groups + edges) time."""
    if groups.count == 0:
        return 0, ()
    _, layers = _generations(groups.count, groups.order_edges)
    widest = max(layers, key=len)
    return len(widest), tuple(widest)


def _matching(n: int, pairs) -> dict[int, int]:
    """Maximum matching of the bipartite graph "g out -> h in" over ``pairs`` (integer labels, so
    that the result does not depend on string hashing)."""
    import networkx as nx  # noqa: PLC0415 - deferred: the multidim CLI path never needs networkx

    bipartite = nx.Graph()
    bipartite.add_nodes_from(range(2 * n))
    bipartite.add_edges_from((a, n + b) for a, b in pairs)
    matching = nx.bipartite.hopcroft_karp_matching(bipartite, top_nodes=range(n))
    return {a: b - n for a, b in matching.items() if a < n}


def _path_cover(n: int, order_edges) -> list[list[int]]:
    """A minimum cover of the groups by vertex-disjoint paths of the order graph (matching on its edges)."""
    successor = _matching(n, sorted(order_edges))
    has_predecessor = set(successor.values())
    paths = []
    for start in range(n):
        if start in has_predecessor:
            continue
        path = [start]
        while path[-1] in successor:
            path.append(successor[path[-1]])
        paths.append(path)
    return paths


def _exact_width(n: int, order_edges) -> int | None:
    """Dilworth's width by maximum matching on the comparability pairs (None when there are too many pairs)."""
    successors: list[list[int]] = [[] for _ in range(n)]
    for a, b in order_edges:
        successors[a].append(b)
    reach = [0] * n  # bitmask of the groups strictly above each group
    total = 0
    for g in reversed(range(n)):  # topological numbering: successors have larger indices
        mask = 0
        for h in successors[g]:
            mask |= reach[h] | (1 << h)
        reach[g] = mask
        total += mask.bit_count()
        if total > _MAX_CLOSURE_PAIRS:
            return None
    pairs = []
    for g in range(n):
        mask = reach[g]
        while mask:
            low = mask & -mask
            pairs.append((g, low.bit_length() - 1))
            mask ^= low
    return n - len(_matching(n, pairs))


def ideal_bounds(groups: Groups) -> IdealBounds:
    """Width of the order graph and lower/upper bounds on its number of ideals, without enumerating them.

    Runs in about linear time (plus a matching on the comparability pairs for small orders):
    well under a second for 50,000 groups.
    """
    n = groups.count
    width_low, antichain = _antichain_bound(groups)
    paths = _path_cover(n, groups.order_edges) if n else []
    width_high = len(paths)
    if width_low < width_high:
        exact = _exact_width(n, groups.order_edges)
        if exact is not None:
            width_low = width_high = exact  # the antichain stays the (smaller) witness found
    upper = 1
    for path in paths:
        upper *= len(path) + 1
    lower = max(1 << len(antichain), n + 1)
    return IdealBounds(
        groups=n,
        width_low=width_low,
        width_high=width_high,
        antichain=antichain,
        chains=len(paths),
        lower=min(lower, upper),
        upper=upper,
    )


def _lattice_bytes(n_bits: int) -> int:
    """Estimated bytes one ideal costs while enumerating: two n-bit ints, a dict entry, list slots."""
    int_bytes = 28 + 4 * ((n_bits + 29) // 30)
    return 2 * int_bytes + 120


def enumerate_ideals(
    groups: Groups, max_ideals: int = DEFAULT_MAX_IDEALS, max_bytes: int = DEFAULT_MAX_LATTICE_BYTES
) -> IdealLattice:
    """Enumerate every ideal of the order graph level by level (by number of groups).

    Before enumerating, an antichain (a longest-path layer) bounds the count from below: when
    ``2 ** width`` (or the number of groups + 1) already exceeds ``max_ideals`` the graph is
    refused at once. While enumerating, both the count and the estimated memory are capped.

    Raises
    ------
    TooManyIdealsError
        When the count would exceed ``max_ideals`` or the lattice ``max_bytes`` (the message gives
        the width, the bound and what to do instead).
    """
    n = groups.count
    width, antichain = _antichain_bound(groups)
    lower = max(1 << width, n + 1)
    if lower > max_ideals:
        raise TooManyIdealsError(_refusal_message(groups, max_ideals, width, lower, antichain))
    per_ideal = _lattice_bytes(n)
    walk = (
        None
        if ideal_enum.walk_loaded()
        else ideal_enum.plain(groups, max_ideals, max_bytes, per_ideal, PLAIN_MAX_IDEALS)
    )
    if walk is None:  # past the plain share (or the compiled walk is at hand): the same lattice, compiled
        walk = ideal_enum.compiled(groups.count, groups.order_edges, max_ideals, max_bytes, per_ideal)
    return _lattice(groups, max_ideals, max_bytes, walk)


def _lattice(groups: Groups, max_ideals: int, max_bytes: int, walk: ideal_enum.Walk) -> IdealLattice:
    """The :class:`IdealLattice` of a finished walk, or the refusal of one stopped by a cap."""
    if walk.too_many is not None:
        count, level, on_level = walk.too_many
        raise TooManyIdealsError(_too_many_message(groups, max_ideals, max_bytes, count, level, on_level))
    return IdealLattice(
        masks=walk.masks,
        sizes=np.asarray(walk.sizes, dtype=np.int32),
        up_start=np.asarray(walk.up_start, dtype=np.int64),
        up_group=np.asarray(walk.up_group, dtype=np.int32),
        up_target=np.asarray(walk.up_target, dtype=np.int32),
    )


#: What to do instead of the exact DP, named in every refusal.
ADVICE = (
    "coarsen the graph (merge operators into layers, e.g. the Graph page's 'Merge into layers' or fewer "
    "nodes per color class) or use an integer program: --method ip (contiguous split, time-limited), "
    "ip-noncontiguous, or latency-ip for latency"
)


def _refusal_message(groups: Groups, limit: int, width: int, lower: int, antichain) -> str:
    if (1 << width) >= lower:
        count = f"2^{width:,}" if width >= 50 else f"2^{width} = {lower:,}"
        why = (
            f"an antichain of {width:,} of its {groups.count:,} groups (width at least {width:,}) gives "
            f"at least {count} ideals"
        )
    else:
        why = f"its {groups.count:,} groups give at least {format_count(lower)} ideals"
    return f"the graph has too many ideals for the exact DP: {why}, over the cap of {limit:,}; {ADVICE}"


def _too_many_message(groups: Groups, limit: int, max_bytes: int, count: int, level: int, last_level: int) -> str:
    width, _ = _antichain_bound(groups)
    cap = f"the cap of {limit:,} ideals" if count > limit else f"the {max_bytes / 2**20:,.0f} MiB lattice memory cap"
    return (
        f"the graph has too many ideals for the exact DP: {count:,} ideals after {level:,} of {groups.count:,} "
        f"levels ({last_level:,} on the last level; width at least {width:,}) reach {cap}; {ADVICE}"
    )


def count_ideals(graph: Graph, max_ideals: int = DEFAULT_MAX_IDEALS) -> int:
    """Number of ideals of ``graph`` after contraction (raises :class:`TooManyIdealsError` past the cap)."""
    return enumerate_ideals(contract(graph), max_ideals).count
