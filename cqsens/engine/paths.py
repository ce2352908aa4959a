"""Paths in a query's canonical structure and their cardinalities under Σ.

A *step* ``(R, i, a, j, b)`` goes from ``a`` to ``b`` through an atom of ``R``
holding ``a`` at position ``i`` and ``b`` at ``j``; its weight is ``#Σ R[i->j]``
(the most values ``b`` can take per value of ``a`` on a database of C_Σ).  The
cardinality of a path is the product of the weights after its last step that
lands on a constant (a constant's value is fixed, so counting restarts there).

cqsens computes least cardinalities as a shortest-path problem over *walks*
(Dijkstra on exact integer products — weights are ≥ 1, so products only grow)
from every element of the atom **and every constant of the query**: a walk
bounds the number of values just as a path does, and a constant is a source
whatever tuple is added.  This is never above the paper's minimum over simple
paths from the atom, which :func:`simple_path_cardinality` computes literally
(exponential; used for the paper's values and as a test oracle).

The *arborescence* bound counts joint assignments: a tree of steps rooted at
the atom's elements and the constants that reaches every free variable bounds
the number of assignments of the free variables by the product of its weights
(each child has at most its weight of values per value of its parent).
Both are stated and proved in docs/rules.md, rules ``walks-from-constants`` and
``joint-assignment-tree``.

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries.
   ICALP 2016, Section 4 (Paths, equation (1)).
.. [2] J. Edmonds. Optimum branchings. J. Res. Nat. Bur. Standards 71B, 1967.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import networkx as nx

from cqsens.budget import checkpoint
from cqsens.engine.homomorphism import BudgetExceeded
from cqsens.ir.cq import CQ, Atom, Const, Term, Var, format_term
from cqsens.ir.dependencies import Sigma

__all__ = [
    "Step",
    "Route",
    "step_graph",
    "least_cardinalities",
    "hyper_cardinalities",
    "arborescence_bound",
    "simple_path_cardinality",
    "simple_path_cardinalities",
]

Weight = int | float  # an int, or math.inf
EDMONDS_MAX_NODES = 30  # beyond this many reachable elements the Dijkstra tree alone is used


@dataclass(frozen=True, slots=True)
class Step:
    """One step ``source -> target`` through ``relation[i->j]`` (0-based) of weight ``weight``."""

    relation: str
    i: int
    j: int
    source: Term
    target: Term
    weight: Weight
    more: tuple[tuple[int, Term], ...] = ()  # further sources of a composite dependency
    per_row: bool = False  # from R[i->*]<=k: at most k rows, so k values at j
    also: tuple[Term, ...] = ()  # further targets reached jointly (a per-row step's row)

    def __str__(self) -> str:
        w = "∞" if self.weight == math.inf else str(self.weight)
        sources = ", ".join(format_term(t) for t in (self.source, *(t for _, t in self.more)))
        positions = ",".join(str(i + 1) for i in (self.i, *(i for i, _ in self.more)))
        target = "*" if self.per_row else f"{self.j + 1}"
        targets = ", ".join(format_term(t) for t in (self.target, *self.also))
        return f"{sources} -> {targets} via {self.relation}[{positions}->{target}] (×{w})"


@dataclass(frozen=True, slots=True)
class Route:
    """A least walk to an element: its cardinality, start and steps (empty: start = end)."""

    cardinality: Weight
    start: Term
    steps: tuple[Step, ...] = ()

    def describe(self) -> str:
        """Human text of the walk."""
        if not self.steps:
            return f"{format_term(self.start)} (in the atom)" if isinstance(
                self.start, Var
            ) else f"{format_term(self.start)}"
        return "; ".join(str(s) for s in self.steps)


def step_graph(cq: CQ, sigma: Sigma) -> dict[Term, dict[Term, Step]]:
    """Adjacency ``u -> v -> least-weight step`` over the finite-weight steps.

    Filter atoms carry no dependency, so they give no finite step.  A rows-per-value
    dependency ``R[i->*]<=k`` on a table without row identity gives a step of weight
    ``k`` from position ``i`` to every other position (at most k rows share the value,
    so they hold at most k values there).
    """
    by_relation: dict[str, list[tuple[int, int, int]]] = {}
    for (relation, i, j), k in sorted(sigma.weights().items()):
        by_relation.setdefault(relation, []).append((i, j, k))
    per_row: dict[str, list[tuple[int, int, int]]] = {}
    for d in sorted(sigma.rows):  # R[i->*]<=k: k rows, so k values at every other j
        per_row.setdefault(d.relation, []).append((d.i, -1, d.k))
    out: dict[Term, dict[Term, Step]] = {}
    for atom in cq.sorted_atoms():
        if atom.is_filter:
            continue
        steps = [(i, j, w, False) for i, j, w in by_relation.get(atom.relation, ())]
        steps += [(i, j, w, True) for i, _, w in per_row.get(atom.relation, ())
                  for j in range(atom.arity) if j != i]
        for i, j, w, rows in steps:
            if max(i, j) >= atom.arity:
                continue
            a, b = atom.terms[i], atom.terms[j]
            if a == b:
                continue
            old = out.setdefault(a, {}).get(b)
            if old is None or w < old.weight:
                out[a][b] = Step(atom.relation, i, j, a, b, w, per_row=rows)
    return out


def _start(sources: Iterable[Term]) -> tuple[Iterator[int], list[tuple[Weight, int, Term, Route]]]:
    """The tie-breaking counter and the heap of a Dijkstra search from ``sources``, each at
    cardinality 1."""
    counter = itertools.count()
    heap: list[tuple[Weight, int, Term, Route]] = []
    for s in dict.fromkeys(sources):
        heapq.heappush(heap, (1, next(counter), s, Route(1, s)))
    return counter, heap


def least_cardinalities(
    graph: dict[Term, dict[Term, Step]], sources: Iterable[Term]
) -> dict[Term, Route]:
    """Least walk cardinality from any source to every reachable element (Dijkstra).

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> from cqsens.ir.dependencies import Dependency
    >>> q = parse_cq("Q(x) :- R(a, b), S(b, x)")
    >>> g = step_graph(q, Sigma.of([Dependency("R", 0, 1, 2), Dependency("S", 0, 1, 3)]))
    >>> least_cardinalities(g, [Var("a")])[Var("x")].cardinality
    6
    """
    best: dict[Term, Route] = {}
    counter, heap = _start(sources)
    while heap:
        if len(heap) % 256 == 0:
            checkpoint("walks")
        card, _, node, route = heapq.heappop(heap)
        if node in best:
            continue
        best[node] = route
        for nxt, step in graph.get(node, {}).items():
            if nxt not in best:
                total = card * step.weight
                longer = Route(total, route.start, route.steps + (step,))
                heapq.heappush(heap, (total, next(counter), nxt, longer))
    return best


def hyper_cardinalities(
    cq: CQ, sigma: Sigma, graph: dict[Term, dict[Term, Step]], sources: Iterable[Term]
) -> dict[Term, Route]:
    """Least cardinalities when composite dependencies (several sources) are declared.

    Knuth's generalisation of Dijkstra's algorithm to superior functions: a
    step ``R[i1,i2->j]<=k`` fires once all its sources are settled, and gives
    its target the cardinality ``k · Π card(sources)`` (at most k values of the
    target per joint value of the sources, and at most the product of the
    sources' counts of joint values).  The function is monotone and at least
    each of its arguments, so settling elements in order of cardinality is
    exact.  With single-source steps only it is :func:`least_cardinalities`.

    References
    ----------
    .. [1] D. E. Knuth. A generalization of Dijkstra's algorithm. Information
       Processing Letters 6(1), 1977.
    """
    hyper: list[tuple[tuple[Term, ...], Term, Step]] = []
    for d in sorted(sigma.multi):
        for atom in cq.relation_atoms():
            if atom.relation != d.relation or max(*d.sources, d.j) >= atom.arity:
                continue
            src = tuple(atom.terms[i] for i in d.sources)
            target = atom.terms[d.j]
            if target in src:
                continue
            more = tuple((i, atom.terms[i]) for i in d.sources[1:])
            hyper.append((src, target, Step(d.relation, d.sources[0], d.j, src[0], target,
                                             d.k, more)))
    for u, edges in graph.items():
        for v, step in edges.items():
            hyper.append(((u,), v, step))
    waiting: dict[Term, list[int]] = {}
    for n, (src, _, _) in enumerate(hyper):
        for t in set(src):
            waiting.setdefault(t, []).append(n)
    left = [len(set(src)) for src, _, _ in hyper]
    best: dict[Term, Route] = {}
    counter, heap = _start(sources)
    while heap:
        checkpoint("walks")
        card, _, node, route = heapq.heappop(heap)
        if node in best:
            continue
        best[node] = route
        for n in waiting.get(node, ()):
            left[n] -= 1
            if left[n]:
                continue
            src, target, step = hyper[n]
            if target in best:
                continue
            total: Weight = step.weight
            steps: dict[Step, None] = {}
            for t in dict.fromkeys(src):
                total = total * best[t].cardinality
                steps.update(dict.fromkeys(best[t].steps))
            steps[step] = None
            heapq.heappush(heap, (total, next(counter), target,
                                  Route(total, route.start, tuple(steps))))
    return best


def arborescence_bound(
    graph: dict[Term, dict[Term, Step]],
    sources: Iterable[Term],
    targets: Iterable[Var],
) -> tuple[Weight, tuple[Step, ...]]:
    """Bound the joint assignments of ``targets`` by a tree of steps from ``sources``.

    Builds the step graph restricted to what ``sources`` reach, adds a root with
    weight-1 edges to the sources, takes a minimum spanning arborescence on log
    weights (Edmonds), prunes leaves that are not targets, and returns the
    exact integer product of the remaining weights with the tree's steps.
    Returns ``(inf, ())`` when some target is unreachable.

    Notes
    -----
    Sound: fixing the root's values, a child reached by a step of weight w
    takes at most w values per value of its parent, so the tree's nodes take at
    most the product of weights joint values.  The tree is a heuristic
    (a minimum Steiner arborescence is NP-hard); callers take the smaller of
    this and the per-variable product.
    """
    source_set = list(dict.fromkeys(sources))
    target_set = set(targets)
    if not target_set:
        return 1, ()
    reach = least_cardinalities(graph, source_set)
    if not target_set <= set(reach):
        return math.inf, ()
    # The shortest-walk tree (Dijkstra's predecessors) is one arborescence reaching
    # every target; Edmonds' minimum spanning arborescence, pruned, is often better.
    dijkstra_steps: set[Step] = set()
    for t in target_set:  # the routes form a tree: stop where a route joins one seen
        for step in reversed(reach[t].steps):
            if step in dijkstra_steps:
                break
            dijkstra_steps.add(step)
    best_steps = tuple(sorted(dijkstra_steps, key=lambda s: (str(s.source), str(s.target))))
    best = _product(best_steps)
    # Any tree reaching the targets enters each target by one step: the product of
    # their lightest incoming steps is a floor. At the floor, Edmonds cannot do better.
    lightest_in: dict[Term, Weight] = {}
    for edges in graph.values():
        for v, step in edges.items():
            if step.weight < lightest_in.get(v, math.inf):
                lightest_in[v] = step.weight
    floor: Weight = 1
    for t in target_set:
        if t not in source_set:
            floor *= lightest_in.get(t, math.inf)
    if best <= floor or len(reach) > EDMONDS_MAX_NODES:
        # at the floor nothing is better; on large graphs Edmonds' cost is not
        # worth it and the Dijkstra tree stays a sound bound
        return best, best_steps
    edmonds = _edmonds_steps(graph, source_set, reach, target_set)
    if edmonds is not None and _product(edmonds) < best:
        best_steps, best = edmonds, _product(edmonds)
    return best, best_steps


def _product(steps: Iterable[Step]) -> Weight:
    product: Weight = 1
    for s in steps:
        product *= s.weight
    return product


def _edmonds_steps(
    graph: dict[Term, dict[Term, Step]],
    source_set: list[Term],
    reach: dict[Term, Route],
    target_set: set[Var],
) -> tuple[Step, ...] | None:
    root = ("__root__",)
    g = nx.DiGraph()
    g.add_node(root)
    for s in source_set:
        g.add_edge(root, s, weight=0.0)
    tie = itertools.count(1)
    for u, edges in graph.items():
        if u not in reach:
            continue
        for v, step in edges.items():
            if v in reach and v not in source_set:
                # a tiny distinct offset breaks ties (exact products are recomputed after)
                g.add_edge(u, v, weight=math.log(step.weight) + next(tie) * 1e-9, step=step)
    try:
        tree = nx.minimum_spanning_arborescence(g, attr="weight", preserve_attrs=True)
    except nx.NetworkXException:
        return None
    changed = True
    while changed:
        changed = False
        for node in list(tree.nodes):
            if node is not root and tree.out_degree(node) == 0 and node not in target_set:
                tree.remove_node(node)
                changed = True
    return tuple(
        sorted(
            (d["step"] for _, _, d in tree.edges(data=True) if "step" in d),
            key=lambda s: (str(s.source), str(s.target)),
        )
    )


def simple_path_cardinality(
    cq: CQ,
    sigma: Sigma,
    atom: Atom,
    target: Var,
    *,
    budget: int | None = 100_000,
) -> Weight:
    """The paper's ``min over simple paths p: atom ~> target of #Σ(p)``.

    Enumerates simple paths (no element visited twice) from each element of
    ``atom`` over every step of the canonical structure, weights ∞ included
    (a later constant resets the count), exactly as equation (1) of the paper.

    Raises
    ------
    BudgetExceeded
        More than ``budget`` path extensions were needed.

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> from cqsens.ir.dependencies import Dependency
    >>> q = parse_cq("Q(x) :- A(a), E(a, v), F(v, 'k'), G(v, x)")
    >>> fds = Sigma.of([Dependency("F", 1, 0), Dependency("G", 0, 1)])
    >>> simple_path_cardinality(q, fds, Atom("A", (Var("a"),)), Var("x"))
    inf
    """
    return simple_path_cardinalities(cq, sigma, atom, [target], budget=budget)[target]


def simple_path_cardinalities(
    cq: CQ,
    sigma: Sigma,
    atom: Atom,
    targets: Sequence[Var],
    *,
    budget: int | None = 100_000,
    graph: dict[Term, dict[Term, Step]] | None = None,
) -> dict[Var, Weight]:
    """:func:`simple_path_cardinality` for several targets, sharing the work.

    Walks from the atom and the constants (V) never exceed the simple-path
    value, and the lightest walk from the atom alone (W) never falls below it (a
    walk shortcuts to a simple path with a smaller product).  Where V == W that
    is the answer; only the other targets are enumerated.
    """
    graph = step_graph(cq, sigma) if graph is None else graph
    from_atom = least_cardinalities(graph, atom.terms)
    with_consts = least_cardinalities(
        graph, [*atom.terms, *sorted(cq.constants(), key=lambda c: c.sort_key())]
    )
    out: dict[Var, Weight] = {}
    for target in targets:
        w = from_atom[target].cardinality if target in from_atom else math.inf
        v = with_consts[target].cardinality if target in with_consts else math.inf
        out[target] = w if v == w else _enumerate(cq, sigma, atom, target, budget)
    return out


def _enumerate(
    cq: CQ, sigma: Sigma, atom: Atom, target: Var, budget: int | None, *, exhaustive: bool = False
) -> Weight:
    """Enumerate simple paths (branch and bound; ``exhaustive`` visits every one)."""
    if target in atom.terms:
        return 1
    weights = sigma.weights()
    adjacency: dict[Term, list[tuple[Term, Weight]]] = {}
    for other in cq.sorted_atoms():
        if other.is_filter:
            continue
        for i, a in enumerate(other.terms):
            for j, b in enumerate(other.terms):
                if i != j and a != b:
                    adjacency.setdefault(a, []).append(
                        (b, weights.get((other.relation, i, j), math.inf))
                    )
    for edges in adjacency.values():
        edges.sort(key=lambda e: e[1])  # finite, light steps first: good bounds early
    constants = {t for t in adjacency if isinstance(t, Const)}
    best: Weight = math.inf
    left = [budget]

    def walk(node: Term, since_const: Weight, visited: set[Term]) -> None:
        nonlocal best
        if left[0] is not None:
            left[0] -= 1
            if left[0] < 0:
                raise BudgetExceeded
            if left[0] % 1024 == 0:
                checkpoint("paper's path enumeration")
        if best == 1 and not exhaustive:
            return
        # branch and bound: a heavier prefix can only win by resetting at a constant
        if not exhaustive and since_const >= best and constants <= visited:
            return
        for nxt, w in adjacency.get(node, ()):
            if nxt in visited:
                continue
            card: Weight = 1 if isinstance(nxt, Const) else since_const * w
            if nxt == target:
                best = min(best, card)
                continue
            visited.add(nxt)
            walk(nxt, card, visited)
            visited.discard(nxt)

    for start in dict.fromkeys(atom.terms):
        walk(start, 1, {start})
    return best
