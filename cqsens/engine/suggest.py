"""Advice for unbounded queries: the fewest dependencies that would bound them.

A query is unbounded under Σ when some atom cannot reach some free variable by
a walk of finite-weight steps from its elements or a constant.  Declaring a
dependency ``R[i->j]`` (an FD, or a CD with any finite k) turns the steps from
position i to position j of R's atoms into finite ones.  :func:`suggest` finds
a smallest set of such single-column dependencies, over the relations and
positions of the query's core, that makes every free variable reachable from
every atom; the caller re-runs the analysis with them to confirm.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cqsens.ir.cq import CQ, Atom, Term, Var
from cqsens.ir.dependencies import Dependency, Sigma

__all__ = ["Suggestion", "suggest"]


@dataclass(frozen=True, slots=True)
class Suggestion:
    """Dependencies that bound the query (empty, and ``disconnected`` when none can: some
    free variable shares no atom chain with some atom, the query is disconnected there or
    the link goes through a filter)."""

    dependencies: tuple[Dependency, ...]
    disconnected: bool = False
    alternatives: tuple[tuple[Dependency, ...], ...] = ()


class _Reach:
    """Reachability over the steps a set of dependencies makes finite.

    The terms are numbered and a set of terms is an int with one bit per term, so that
    the many checks of :func:`suggest` (thousands of candidate sets on a wide query)
    each build the graph and walk it in a few integer operations per step."""

    def __init__(self, cq: CQ, public: frozenset[str] = frozenset(),
                 skip: frozenset[Atom] = frozenset()) -> None:
        atoms = [a for a in cq.relation_atoms() if a not in skip]
        constants = list(cq.constants())
        index: dict[Term, int] = {}
        for term in (*(t for a in atoms for t in a.terms), *constants, *cq.free):
            index.setdefault(term, len(index))
        free = _bits(index, cq.free)
        seeds = _bits(index, constants)
        # the atoms that must reach every free variable, each with the terms it starts from
        self.starts = [_bits(index, atom.terms) | seeds for atom in atoms
                       if free & ~_bits(index, atom.terms) and atom.relation not in public]
        self.free = free
        self.steps: dict[tuple[str, int, int], list[tuple[int, int]]] = {}
        for atom in atoms:
            for i, a in enumerate(atom.terms):
                for j, b in enumerate(atom.terms):
                    if i != j and a != b:
                        self.steps.setdefault((atom.relation, i, j), []).append(
                            (index[a], 1 << index[b]))
        self.size = len(index)

    def bounded(self, deps: Sequence[tuple[str, int, int]]) -> bool:
        """Every atom reaches every free variable along the steps of ``deps``."""
        return self.reaches(self.edges(deps))

    def edges(self, deps: Iterable[tuple[str, int, int]],
              base: Sequence[int] | None = None) -> list[int]:
        """Term → the terms one step of ``deps`` leads to (a bitset each), added to a copy
        of ``base`` when given."""
        edges = list(base) if base is not None else [0] * self.size
        steps = self.steps
        for key in deps:
            for a, b in steps.get(key, ()):
                edges[a] |= b
        return edges

    def reaches(self, edges: Sequence[int]) -> bool:
        """Every atom reaches every free variable along ``edges``."""
        return self.walk(edges) is not None

    def walk(self, edges: Sequence[int]) -> list[int] | None:
        """The steps a breadth-first walk from every atom used to reach every free variable
        (term → the terms it was the first to reach, a bitset each), or None when some atom
        does not reach them all.  While those steps stay, every atom still reaches them."""
        free = self.free
        used = [0] * self.size
        for start in self.starts:
            seen = frontier = start
            while frontier and free & ~seen:
                reached = 0
                while frontier:
                    low = frontier & -frontier
                    a = low.bit_length() - 1
                    new = edges[a] & ~seen & ~reached
                    if new:
                        used[a] |= new
                        reached |= new
                    frontier ^= low
                frontier = reached
                seen |= reached
            if free & ~seen:
                return None
        return used

    def closures(self, edges: Sequence[int]) -> list[int]:
        """The terms each atom reaches along ``edges`` (a bitset each, in ``starts``'s order)."""
        out = []
        for start in self.starts:
            seen = frontier = start
            while frontier:
                reached = 0
                while frontier:
                    low = frontier & -frontier
                    reached |= edges[low.bit_length() - 1]
                    frontier ^= low
                frontier = reached & ~seen
                seen |= frontier
            out.append(seen)
        return out

    def sources(self, keys: Iterable[tuple[str, int, int]]) -> int:
        """The terms the steps of ``keys`` start from (a bitset)."""
        out = 0
        for key in keys:
            for a, _ in self.steps.get(key, ()):
                out |= 1 << a
        return out


class _Dropping:
    """The graph of a set of dependencies from which keys are dropped one at a time: each
    step counts the keys that give it, so that dropping a key changes only its own steps
    (the graph is the one :meth:`_Reach.edges` builds from the keys kept), and the steps
    the last walk used are kept: dropping a key none of whose steps the walk used leaves
    every atom reaching every free variable, with no new walk."""

    def __init__(self, reach: _Reach, keys: Iterable[tuple[str, int, int]]) -> None:
        self.reach = reach
        self.count: dict[tuple[int, int], int] = {}
        for key in keys:
            for step in reach.steps.get(key, ()):
                self.count[step] = self.count.get(step, 0) + 1
        self.graph = reach.edges(())
        for a, b in self.count:
            self.graph[a] |= b
        used = reach.walk(self.graph)
        assert used is not None, "the keys given bound the query"
        self.used = used

    def bounded_without(self, key: tuple[str, int, int]) -> bool:
        """Whether the keys kept but ``key`` still bound the query; ``key`` is dropped
        when they do, kept when they do not."""
        gone = []
        for step in self.reach.steps.get(key, ()):
            self.count[step] -= 1
            if not self.count[step]:
                gone.append(step)
        graph = self.graph
        for a, b in gone:
            graph[a] &= ~b
        if not any(self.used[a] & b for a, b in gone):
            return True  # the walk's steps all stay
        used = self.reach.walk(graph)
        if used is not None:
            self.used = used
            return True
        for step in self.reach.steps.get(key, ()):
            self.count[step] += 1
        for a, b in gone:
            graph[a] |= b
        return False


def _bits(index: Mapping[Term, int], terms: Iterable[Term]) -> int:
    """The set of ``terms`` as an int (bit ``index[t]`` for each)."""
    out = 0
    for term in terms:
        out |= 1 << index[term]
    return out


def suggest(
    cq: CQ, sigma: Sigma, *, max_size: int = 3, max_checks: int = 5_000,
    public: frozenset[str] = frozenset(), skip: frozenset[Atom] = frozenset(),
    avoid: frozenset[tuple[str, int]] = frozenset(),
) -> Suggestion:
    """A smallest set of single-column dependencies that makes ``cq`` bounded.

    Parameters
    ----------
    cq : CQ
        The (chased, core) query.
    sigma : Sigma
        The dependencies already declared.
    max_size : int
        Largest set tried exhaustively; beyond it a greedy choice is made.
    max_checks : int
        Budget of candidate sets examined.
    public, skip : frozenset
        Public tables and atoms that never play the added row (a foreign key
        into them): no dependency is needed for them.
    avoid : frozenset
        ``(relation, position)`` never proposed as a source (measure and
        free-text columns); when only such dependencies would bound the query,
        nothing is proposed (and ``disconnected`` stays False).

    Returns
    -------
    Suggestion
        Empty ``dependencies`` when the query is already bounded, or with a
        ``reason`` when no single-column dependency can bound it (a free
        variable in a component with no path to some atom).

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> q = parse_cq("Q(xdoc) :- Doc(xdoc, 'O', xhos), Pat(xpat, 'F', xhos), PatDoc(xpat, xdoc)")
    >>> s = suggest(q, Sigma.of())
    >>> [[str(d) for d in option] for option in (s.dependencies, *s.alternatives)]
    [['Doc[3->1]'], ['PatDoc[1->2]'], ['Doc[2->1]']]
    """
    declared = [key for key in sigma.weights()]
    reach = _Reach(cq, public, skip)
    if reach.bounded(declared):
        return Suggestion(())
    known = set(declared)
    found_keys: dict[tuple[str, int, int], None] = {}
    from_constant: set[tuple[str, int, int]] = set()
    for atom in cq.relation_atoms():
        for i, a in enumerate(atom.terms):
            for j, b in enumerate(atom.terms):
                key = (atom.relation, i, j)
                if i != j and a != b and isinstance(b, Var) and key not in known:
                    found_keys[key] = None
                if not isinstance(a, Var):
                    from_constant.add(key)
    # prefer dependencies from a variable column (a key-like rule) over those from a constant
    candidates = sorted(found_keys, key=lambda key: (key in from_constant, key))
    if not reach.bounded(declared + candidates):
        return Suggestion((), disconnected=True)
    candidates = [key for key in candidates if key[:2] not in avoid]
    if not reach.bounded(declared + candidates):
        return Suggestion(())
    checks = 0
    base = reach.edges(declared)
    # an atom the declared keys leave short is helped only by a key stepping from a term
    # it reaches: a set without one leaves it short, with no walk
    short = [seen for seen in reach.closures(base) if reach.free & ~seen]
    for size in range(1, max_size + 1):
        if math.comb(len(candidates), size) > max_checks:
            break  # too many sets to try them all: fall back to the greedy choice
        found: list[tuple[Dependency, ...]] = []
        for combo in itertools.combinations(candidates, size):
            checks += 1
            if checks > max_checks or len(found) > 3:
                break
            sources = reach.sources(combo)
            if all(seen & sources for seen in short) and reach.reaches(reach.edges(combo, base)):
                found.append(tuple(Dependency(r, i, j) for r, i, j in combo))
        if found:
            return Suggestion(found[0], alternatives=tuple(found[1:]))
    # greedy: drop what is not needed, in the candidates' order
    dropping = _Dropping(reach, declared + candidates)
    chosen = [key for key in candidates if not dropping.bounded_without(key)]
    return Suggestion(tuple(Dependency(r, i, j) for r, i, j in chosen))
