"""The cheapest joint derivation: a directed-hypergraph bound on joint assignments.

Every dependency of Σ gives, in every atom of its relation, a *hyperedge*
from the elements at its source positions to the elements at its target
positions, weighted by its bound ``k``:

* ``R[i->j]<=k`` and ``R[i1,i2->j]<=k`` (composite keys give ``k = 1``): from the
  source elements to the element at ``j``;
* ``R[i->*]<=k`` (at most k rows share a value of ``i``): from the element at
  ``i`` to *every* other element of the atom at once (k rows, so k joint values).

A *derivation* fires hyperedges one after another, each once all its sources
are derived, starting from the derived elements (the atom playing the added
tuple and the constants); its cost is the product of the weights it fires.
Fixing the derived elements, a hyperedge of weight ``k`` multiplies the number
of joint values of the derived elements by at most ``k`` on a database of C_Σ,
so a derivation that derives every free variable bounds their joint values by
its cost (docs/rules.md, rule ``cheapest-derivation``).  Weight-1 hyperedges
(keys and FDs) are followed for free.

The bound is the minimum over derivations.  More dependencies only add
hyperedges (or lower weights), so the minimum can only go down: the bound is
monotone in what the user declares.  :func:`cheapest_derivation` finds the
minimum exactly by best-first branch and bound over the sets of derived
elements (closed under the free hyperedges), starting from the best of several
greedy derivations; when the search exceeds its budget it returns the best
derivation found, which is still sound.

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries.
   ICALP 2016, Theorem 17 (products of cardinalities along paths).
.. [2] G. Gallo, G. Longo, S. Pallottino, S. Nguyen. Directed hypergraphs and
   applications. Discrete Applied Mathematics 42(2-3), 1993.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cqsens.budget import checkpoint
from cqsens.engine.paths import Step, Weight
from cqsens.ir.cq import CQ, Term
from cqsens.ir.dependencies import Sigma

__all__ = ["Derivation", "Hyperedge", "SEARCH_BUDGET", "cheapest_derivation", "hyperedges"]

SEARCH_BUDGET = 400
"""States the exact search expands before it settles for the best derivation found."""
SEARCH_WORK = 20_000
SEARCH_MIN = 50
"""Large graphs: at most SEARCH_WORK hyperedge firings, at least SEARCH_MIN expansions."""
GREEDY_ROUTES = 12
"""Each greedy round weighs the routes to this many of the cheapest underived goals."""
FIRSTS = 8
"""Greedy derivations that start by paying for one given hyperedge (the cheapest first)."""
FIRSTS_MAX_EDGES = 64
"""Beyond this many paid hyperedges only the two plain greedy orders are tried."""


@dataclass(frozen=True, slots=True)
class Hyperedge:
    """``sources -> targets`` through one atom, at most ``weight`` joint target values
    per joint value of the sources; ``step`` is how it is explained."""

    sources: tuple[Term, ...]
    targets: tuple[Term, ...]
    weight: int
    step: Step


@dataclass(frozen=True, slots=True)
class Derivation:
    """A derivation reaching every target: its ``cost`` (the product of its weights),
    its ``steps`` in firing order, and whether the search proved it the cheapest."""

    cost: Weight
    steps: tuple[Step, ...]
    exact: bool


def hyperedges(cq: CQ, sigma: Sigma) -> list[Hyperedge]:
    """The hyperedges of Σ in the relation atoms of ``cq`` (filters carry none).

    For each (sources, targets) pair only the least weight is kept.

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> from cqsens.ir.dependencies import Dependency
    >>> [str(e.step) for e in hyperedges(parse_cq("Q(y) :- R(x, y)"),
    ...                                   Sigma.of([Dependency("R", 0, 1, 3)]))]
    ['x -> y via R[1->2] (×3)']
    """
    best: dict[tuple[tuple[Term, ...], tuple[Term, ...]], Hyperedge] = {}

    def add(edge: Hyperedge) -> None:
        key = (edge.sources, edge.targets)
        old = best.get(key)
        if old is None or edge.weight < old.weight:
            best[key] = edge

    for atom in cq.relation_atoms():
        terms = atom.terms
        for d in sorted(sigma.deps):
            if d.relation == atom.relation and max(d.i, d.j) < atom.arity \
                    and terms[d.i] != terms[d.j]:
                add(Hyperedge((terms[d.i],), (terms[d.j],), d.k,
                              Step(d.relation, d.i, d.j, terms[d.i], terms[d.j], d.k)))
        for m in sorted(sigma.multi):
            if m.relation != atom.relation or max(*m.sources, m.j) >= atom.arity:
                continue
            src = tuple(dict.fromkeys(terms[i] for i in m.sources))
            if terms[m.j] in src:
                continue
            more = tuple((i, terms[i]) for i in m.sources[1:])
            add(Hyperedge(src, (terms[m.j],), m.k,
                          Step(m.relation, m.sources[0], m.j, terms[m.sources[0]], terms[m.j],
                               m.k, more)))
        for r in sorted(sigma.rows):
            if r.relation != atom.relation or r.i >= atom.arity:
                continue
            others = tuple(dict.fromkeys(t for t in terms if t != terms[r.i]))
            if not others:
                continue
            j = next(p for p, t in enumerate(terms) if t == others[0])
            add(Hyperedge((terms[r.i],), others, r.k,
                          Step(r.relation, r.i, j, terms[r.i], others[0], r.k, per_row=True,
                               also=others[1:])))
    return sorted(best.values(), key=lambda e: (e.weight, str(e.step)))


class _Graph:
    """The hypergraph on bit masks: one bit per element, edges as (source, target) masks.

    Only edges that derive a *relevant* element (a goal, or a source of an edge
    deriving a relevant one) are kept; the others never help reach the goal.
    """

    def __init__(self, edges: Sequence[Hyperedge], start: Iterable[Term],
                 goal: Iterable[Term]) -> None:
        start_terms = list(dict.fromkeys(start))
        goal_terms = list(dict.fromkeys(goal))
        index: dict[Term, int] = {}
        for t in itertools.chain(start_terms, goal_terms,
                                 (t for e in edges for t in (*e.sources, *e.targets))):
            index.setdefault(t, len(index))
        self.edges = list(edges)
        self.src = [_mask(index, e.sources) for e in edges]
        self.tgt = [_mask(index, e.targets) for e in edges]
        self.start = _mask(index, start_terms)
        self.goal = _mask(index, goal_terms) & ~self.start
        relevant = self.goal
        changed = True
        while changed:
            changed = False
            for n in range(len(edges)):
                if self.tgt[n] & relevant and self.src[n] & ~relevant:
                    relevant |= self.src[n]
                    changed = True
        self.relevant = relevant
        kept = [n for n in range(len(edges)) if self.tgt[n] & relevant & ~self.start]
        self.free = [n for n in kept if edges[n].weight == 1]
        self.paid = [n for n in kept if edges[n].weight > 1]

    def fires(self, n: int, state: int) -> bool:
        """Edge ``n`` has every source derived and derives a new relevant element."""
        return self.src[n] & ~state == 0 and self.tgt[n] & ~state & self.relevant != 0

    def close(self, state: int, fired: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
        """Follow every weight-1 edge whose sources are derived (keys and FDs: free)."""
        out = list(fired)
        changed = True
        while changed:
            changed = False
            for n in self.free:
                if self.fires(n, state):
                    state |= self.tgt[n]
                    out.append(n)
                    changed = True
        return state, tuple(out)

    def fire(self, state: int, fired: tuple[int, ...],
             edges: Iterable[int]) -> tuple[int, tuple[int, ...]]:
        """Fire ``edges`` in order (each must have its sources derived), then close."""
        out = list(fired)
        for n in edges:
            if self.src[n] & ~state == 0 and self.tgt[n] & ~state:
                state |= self.tgt[n]
                out.append(n)
        return self.close(state, tuple(out))

    def prune(self, fired: Sequence[int]) -> tuple[Weight, tuple[Step, ...]]:
        """Keep the fired edges the goal needs (each element from its first producer);
        their cost and steps in firing order."""
        producer: dict[int, int] = {}
        derived = self.start
        for n in fired:
            for b in _bits(self.tgt[n] & ~derived):
                producer[b] = n
            derived |= self.tgt[n]
        keep: set[int] = set()
        todo = list(_bits(self.goal))
        seen: set[int] = set()
        while todo:
            b = todo.pop()
            if b in seen or b & self.start:
                continue
            seen.add(b)
            n = producer[b]
            if n not in keep:
                keep.add(n)
                todo.extend(_bits(self.src[n]))
        cost: Weight = 1
        steps: list[Step] = []
        for n in dict.fromkeys(fired):
            if n in keep:
                cost *= self.edges[n].weight
                steps.append(self.edges[n].step)
        return cost, tuple(steps)

    def routes(self, state: int) -> dict[int, tuple[Weight, int]]:
        """Per element bit, the cost of a cheapest route from ``state`` and the edge
        that ends it (-1 in ``state``): Knuth's superior-function shortest paths, an
        edge firing once all its sources are settled, its targets costing its weight
        times its sources' costs.  :meth:`route` reads a route's edges back."""
        best: dict[int, tuple[Weight, int]] = {b: (1, -1) for b in _bits(state)}
        waiting: dict[int, list[int]] = {}
        left: dict[int, int] = {}
        ready: list[int] = []
        for n in (*self.free, *self.paid):
            missing = list(_bits(self.src[n] & ~state))
            left[n] = len(missing)
            for b in missing:
                waiting.setdefault(b, []).append(n)
            if not missing:
                ready.append(n)
        counter = itertools.count()
        heap: list[tuple[Weight, int, int, int]] = []
        while True:
            for n in ready:
                cost: Weight = self.edges[n].weight
                for s in _bits(self.src[n]):
                    cost *= best[s][0]
                for b in _bits(self.tgt[n] & ~state):
                    if b not in best:
                        heapq.heappush(heap, (cost, next(counter), b, n))
            ready = []
            while heap and heap[0][2] in best:
                heapq.heappop(heap)
            if not heap:
                return best
            cost, _, b, n = heapq.heappop(heap)
            best[b] = (cost, n)
            for m in waiting.get(b, ()):
                left[m] -= 1
                if left[m] == 0:
                    ready.append(m)

    def route(self, best: dict[int, tuple[Weight, int]], bit: int) -> tuple[int, ...]:
        """The edges of the route :meth:`routes` found to ``bit``, each after the edges
        deriving its sources."""
        out: dict[int, None] = {}
        stack: list[tuple[int, bool]] = [(bit, False)]
        done: set[int] = set()
        while stack:
            b, expanded = stack.pop()
            n = best[b][1]
            if n < 0 or b in done:
                continue
            if expanded:
                done.add(b)
                out.setdefault(n, None)
                continue
            stack.append((b, True))
            stack.extend((s, False) for s in _bits(self.src[n]) if s not in done)
        return tuple(out)


def _mask(index: dict[Term, int], terms: Iterable[Term]) -> int:
    out = 0
    for t in terms:
        out |= 1 << index[t]
    return out


def _bits(mask: int) -> Iterable[int]:
    while mask:
        low = mask & -mask
        yield low
        mask ^= low


def _greedy(g: _Graph, state: int, fired: tuple[int, ...], *,
            cheapest_first: bool) -> tuple[int, tuple[int, ...]] | None:
    """Complete a derivation greedily: each round fires the candidate (one paid edge,
    or a cheapest route to an underived goal) with the most goals per log of cost
    (``cheapest_first``: the cheapest route).  None when some goal is unreachable."""
    while g.goal & ~state:
        checkpoint("derivation")
        routes = g.routes(state)
        reached = sorted((routes[b][0], b) for b in _bits(g.goal & ~state) if b in routes)
        candidates = [g.route(routes, b) for _, b in reached[:GREEDY_ROUTES]]
        if not candidates:
            return None
        if not cheapest_first:
            candidates += [(n,) for n in g.paid if g.fires(n, state)]
        best: tuple[float, Weight, tuple[int, tuple[int, ...]]] | None = None
        for edges in candidates:
            new_state, new_fired = g.fire(state, fired, edges)
            cost = _product(g, new_fired[len(fired):])
            gain = bin(new_state & g.goal & ~state).count("1")
            if cheapest_first:
                score = -float(math.log(cost)) if cost > 1 else math.inf
            else:
                score = math.inf if cost == 1 else gain / math.log(cost)
            if best is None or (score, -cost) > (best[0], -best[1]):
                best = (score, cost, (new_state, new_fired))
        assert best is not None
        state, fired = best[2]
    return state, fired


def _product(g: _Graph, fired: Iterable[int]) -> Weight:
    out: Weight = 1
    for n in fired:
        out *= g.edges[n].weight
    return out


def _exact(g: _Graph, start: tuple[int, tuple[int, ...]], ceiling: Weight,
           budget: int) -> tuple[tuple[int, ...] | None, bool]:
    """Best-first branch and bound over derived sets below ``ceiling``: the cheapest
    derivation (or None when none is below the ceiling), and whether the search
    finished (False: the budget ran out first)."""
    counter = itertools.count()
    heap: list[tuple[Weight, int, int, tuple[int, ...]]] = [(1, next(counter), *start)]
    seen: dict[int, Weight] = {start[0]: 1}
    found: tuple[int, ...] | None = None
    expanded = 0
    while heap:
        cost, _, state, fired = heapq.heappop(heap)
        if cost >= ceiling:
            break
        if seen.get(state, math.inf) < cost:
            continue
        expanded += 1
        if expanded > budget:
            return found, False
        if expanded % 64 == 0:
            checkpoint("derivation")
        for n in g.paid:
            if not g.fires(n, state):
                continue
            total = cost * g.edges[n].weight
            if total >= ceiling:
                continue
            new_state, new_fired = g.fire(state, fired, (n,))
            if seen.get(new_state, math.inf) <= total:
                continue
            seen[new_state] = total
            if g.goal & ~new_state == 0:
                ceiling, found = total, new_fired
                continue
            heapq.heappush(heap, (total, next(counter), new_state, new_fired))
    return found, True


def cheapest_derivation(edges: Sequence[Hyperedge], sources: Iterable[Term],
                        targets: Iterable[Term], *, ceiling: Weight = math.inf,
                        budget: int = SEARCH_BUDGET) -> Derivation | None:
    """The cheapest derivation of ``targets`` from ``sources`` over ``edges``.

    Greedy derivations (the best ratio of goals per log of cost, with each of the
    first paid edges tried, and cheapest route first; only when some hyperedge has
    several sources or targets) give a first bound; a best-first branch and bound
    below it then proves it optimal or finds a cheaper one.

    Parameters
    ----------
    edges : sequence of Hyperedge
        From :func:`hyperedges`.
    sources, targets : iterables of Term
        The derived elements at the start, and those to derive.
    ceiling : Weight
        Only derivations strictly cheaper than this are of interest (a bound
        the caller already has); None is returned when there is none.
    budget : int
        States the exact search may expand.

    Returns
    -------
    Derivation or None
        ``exact`` is True when no derivation below ``ceiling`` is cheaper.

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> from cqsens.ir.cq import Var
    >>> from cqsens.ir.dependencies import Dependency, MultiDependency
    >>> q = parse_cq("Q(a, b, c) :- R(k, a, b, c)")
    >>> sigma = Sigma.of([Dependency("R", 0, 1, 7), Dependency("R", 0, 2, 7),
    ...                   Dependency("R", 0, 3, 7), MultiDependency("R", (0, 1), 2),
    ...                   MultiDependency("R", (0, 1), 3)])
    >>> d = cheapest_derivation(hyperedges(q, sigma), [Var("k")], q.free)
    >>> d.cost, d.exact
    (7, True)
    """
    g = _Graph(edges, sources, targets)
    start = g.close(g.start, ())
    if g.goal & ~start[0] == 0:
        cost, steps = g.prune(start[1])
        return Derivation(cost, steps, True) if cost < ceiling else None
    found: tuple[int, ...] | None = None
    best = ceiling
    # With one source and one target per hyperedge a derivation is a tree of steps,
    # which the caller's trees already approximate: only the exact search is added.
    hyper = any(len(e.sources) > 1 or len(e.targets) > 1 for e in g.edges)
    firsts: list[tuple[int, tuple[int, ...]]] = [start] if hyper else []
    if hyper and len(g.paid) <= FIRSTS_MAX_EDGES:  # pay for one hyperedge, then greedy
        firsts += [g.fire(*start, (n,)) for n in g.paid if g.fires(n, start[0])][:FIRSTS]
    for first in firsts:
        for cheapest in (False, True):
            done = _greedy(g, *first, cheapest_first=cheapest)
            if done is None:
                continue
            cost, _ = g.prune(done[1])
            if cost < best:
                best, found = cost, done[1]
            if first is not start:
                break
    # each expansion tries every paid hyperedge: large graphs get fewer expansions
    exact_found, exact = _exact(g, start, best,
                                min(budget, max(SEARCH_MIN, SEARCH_WORK // max(1, len(g.paid)))))
    if exact_found is not None:
        found = exact_found
    if found is None:
        return None
    cost, steps = g.prune(found)
    return Derivation(cost, steps, exact)
