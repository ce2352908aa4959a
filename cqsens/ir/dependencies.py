"""Functional and cardinality dependencies between two positions of a relation.

A cardinality dependency ``R[i->j]<=k`` says that a value at position ``i`` of
``R`` has at most ``k`` distinct values at position ``j``; a functional
dependency ``R[i->j]`` is the case ``k = 1``.  ``#Σ R[i->j]`` is the least
``k`` declared for ``(R, i, j)``, or ∞ (and 1 when ``i == j``).  Positions are
stored 0-based and printed 1-based, as the paper and the CLI write them.

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries.
   ICALP 2016, Sections 4 (FDs) and 5 (CDs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "AnyDependency", "Dependency", "MultiDependency", "Sigma", "multi_violations",
    "rows_violations", "satisfies", "violations",
]


class _Bound:
    """What both kinds of dependency share: the bound ``k`` and the text ``R[...->j]<=k``."""

    __slots__ = ()
    relation: str
    j: int
    k: int

    @property
    def is_fd(self) -> bool:
        """True for a functional dependency (k = 1)."""
        return self.k == 1

    def _text(self, sources: str) -> str:
        """``R[sources->j]<=k``, 1-based (``*``: the row identity, j = -1, not yet placed)."""
        text = f"{self.relation}[{sources}->{'*' if self.j < 0 else self.j + 1}]"
        return text if self.k == 1 else f"{text}<={self.k}"


@dataclass(frozen=True, slots=True, order=True)
class Dependency(_Bound):
    """``R[i->j]<=k`` with 0-based positions ``i`` and ``j``; ``k = 1`` is an FD."""

    relation: str
    i: int
    j: int
    k: int = 1

    def __str__(self) -> str:
        return self._text(str(self.i + 1))


@dataclass(frozen=True, slots=True, order=True)
class MultiDependency(_Bound):
    """``R[i1,i2,...->j]<=k``: the values at several positions together have at most
    ``k`` values at ``j`` (a composite key gives the FDs ``k = 1``).  0-based positions."""

    relation: str
    sources: tuple[int, ...]
    j: int
    k: int = 1

    def __str__(self) -> str:
        return self._text(",".join(str(i + 1) for i in self.sources))


AnyDependency = Dependency | MultiDependency


@dataclass(frozen=True, slots=True)
class Sigma:
    """A set of dependencies with the ``#Σ R[i->j]`` lookup.

    >>> s = Sigma.of([Dependency("R", 0, 1, 3), Dependency("R", 0, 1, 2)])
    >>> s.weight("R", 0, 1), s.weight("R", 1, 0), s.weight("R", 0, 0)
    (2, inf, 1)
    """

    deps: frozenset[Dependency]
    multi: frozenset[MultiDependency] = frozenset()
    rows: frozenset[Dependency] = frozenset()  # R[i->*]<=k on a table without row identity

    @staticmethod
    def of(deps: Iterable[AnyDependency] = ()) -> Sigma:
        """Build from any iterable of dependencies (one source or several); a dependency
        whose target is the row (``j < 0``, ``R[i->*]<=k``) goes to ``rows``."""
        items = list(deps)
        single = [d for d in items if isinstance(d, Dependency) and d.j >= 0]
        rows = [d for d in items if isinstance(d, Dependency) and d.j < 0]
        multi = [d for d in items if isinstance(d, MultiDependency)]
        return Sigma(frozenset(single), frozenset(multi), frozenset(rows))

    def rows_weight(self, relation: str, i: int) -> float:
        """The least ``k`` of ``R[i->*]<=k`` (at most k rows share a value at i), or ∞.

        At most k rows share a value, so they hold at most k distinct values at any
        other position, and at most k distinct tuples of values at several."""
        return min((d.k for d in self.rows if d.relation == relation and d.i == i),
                   default=math.inf)

    def weight(self, relation: str, i: int, j: int) -> float:
        """``#Σ R[i->j]``: the least declared k, 1 when i == j, else ∞."""
        if i == j:
            return 1
        best: float = math.inf
        for d in self.deps:
            if d.relation == relation and d.i == i and d.j == j and d.k < best:
                best = d.k
        return best

    def weights(self) -> dict[tuple[str, int, int], int]:
        """``(R, i, j) → least k`` for every declared pair."""
        out: dict[tuple[str, int, int], int] = {}
        for d in self.deps:
            key = (d.relation, d.i, d.j)
            if key not in out or d.k < out[key]:
                out[key] = d.k
        return out

    def fds(self) -> Sigma:
        """The k = 1 part (the chase's); rows-per-value dependencies are not chased."""
        return Sigma(frozenset(d for d in self.deps if d.is_fd),
                     frozenset(d for d in self.multi if d.is_fd))

    def __bool__(self) -> bool:
        return bool(self.deps) or bool(self.multi) or bool(self.rows)

    def __iter__(self) -> Iterator[AnyDependency]:
        yield from sorted(self.deps)
        yield from sorted(self.multi)
        yield from sorted(self.rows)

    def __len__(self) -> int:
        return len(self.deps) + len(self.multi) + len(self.rows)

    def __str__(self) -> str:
        return "{" + ", ".join(str(d) for d in self) + "}"


def violations(
    db: Mapping[str, Iterable[Sequence[object]]], sigma: Sigma
) -> list[tuple[Dependency, object, int]]:
    """The dependencies a database breaks: ``(dep, value at i, #distinct values at j)``.

    >>> violations({"R": [(1, 2), (1, 3)]}, Sigma.of([Dependency("R", 0, 1)]))
    [(Dependency(relation='R', i=0, j=1, k=1), 1, 2)]
    """
    return _broken(db, sigma.deps, lambda dep, row: row[dep.i])


_D = TypeVar("_D", Dependency, MultiDependency)
_K = TypeVar("_K")


def _broken(db: Mapping[str, Iterable[Sequence[object]]], deps: Iterable[_D],
            key: Callable[[_D, Sequence[object]], _K]) -> list[tuple[_D, _K, int]]:
    """``(dep, key, #distinct values at j)`` for every key of a row that has more than
    ``k`` values at ``j``, dependency by dependency (sorted)."""
    out: list[tuple[_D, _K, int]] = []
    for dep in sorted(deps):
        groups: dict[_K, set[object]] = {}
        for row in db.get(dep.relation, ()):
            groups.setdefault(key(dep, row), set()).add(row[dep.j])
        out += [(dep, value, len(targets)) for value, targets in groups.items()
                if len(targets) > dep.k]
    return out


def multi_violations(
    db: Mapping[str, Iterable[Sequence[object]]], sigma: Sigma
) -> list[tuple[MultiDependency, tuple[object, ...], int]]:
    """The several-source dependencies a database breaks: ``(dep, key values, #targets)``.

    >>> multi_violations({"R": [(1, 2, 3), (1, 2, 4)]}, Sigma.of([MultiDependency("R", (0, 1), 2)]))
    [(MultiDependency(relation='R', sources=(0, 1), j=2, k=1), (1, 2), 2)]
    """
    return _broken(db, sigma.multi, lambda dep, row: tuple(row[i] for i in dep.sources))


def rows_violations(
    db: Mapping[str, Iterable[Sequence[object]]], sigma: Sigma
) -> list[tuple[Dependency, object, int]]:
    """The rows-per-value dependencies ``R[i->*]<=k`` a database breaks: ``(dep, value at
    i, #rows)``.  Rows are counted as the database holds them (a set: each once); a NULL
    at i is no value.

    >>> rows_violations({"R": [(1, 2), (1, 3)]}, Sigma.of([Dependency("R", 0, -1, 1)]))
    [(Dependency(relation='R', i=0, j=-1, k=1), 1, 2)]
    """
    out: list[tuple[Dependency, object, int]] = []
    for dep in sorted(sigma.rows):
        counts: dict[object, int] = {}
        for row in db.get(dep.relation, ()):
            if row[dep.i] is not None:
                counts[row[dep.i]] = counts.get(row[dep.i], 0) + 1
        out += [(dep, value, n) for value, n in counts.items() if n > dep.k]
    return out


def satisfies(db: Mapping[str, Iterable[Sequence[object]]], sigma: Sigma) -> bool:
    """True when the database (relation → rows) satisfies every dependency of ``sigma``:
    :func:`violations`, :func:`multi_violations` and :func:`rows_violations` all empty.

    The rows of a relation are grouped once per source positions (not once per
    dependency), and a grouping whose groups each hold one row breaks no bound ``k ≥ 1``.

    >>> sigma = Sigma.of([MultiDependency("R", (0, 1), 2), Dependency("R", 0, 2, 2)])
    >>> satisfies({"R": [(1, 2, 3), (1, 3, 4)]}, sigma)
    True
    >>> satisfies({"R": [(1, 2, 3), (1, 2, 4)]}, sigma)
    False
    """
    by_source: dict[tuple[str, tuple[int, ...]], list[Dependency | MultiDependency]] = {}
    for dep in sigma.deps:
        by_source.setdefault((dep.relation, (dep.i,)), []).append(dep)
    for multi in sigma.multi:
        by_source.setdefault((multi.relation, multi.sources), []).append(multi)
    for (relation, sources), deps in by_source.items():
        if not _groups_hold(db.get(relation, ()), sources, deps):
            return False
    return not rows_violations(db, sigma)


def _groups_hold(rows: Iterable[Sequence[object]], sources: tuple[int, ...],
                 deps: Sequence[Dependency | MultiDependency]) -> bool:
    """No dependency of ``deps`` (all over ``sources``) has a key with more than ``k``
    distinct values at its ``j``."""
    listed = rows if isinstance(rows, (list, tuple, set, frozenset)) else list(rows)
    groups: dict[tuple[object, ...], list[Sequence[object]]] = {}
    for row in listed:
        groups.setdefault(tuple(row[i] for i in sources), []).append(row)
    if len(groups) == len(listed) and all(d.k >= 1 for d in deps):
        return True  # one row per key: one value at every j
    return all(len(members) <= d.k or len({r[d.j] for r in members}) <= d.k
               for d in deps for members in groups.values())
