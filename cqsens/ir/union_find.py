"""Classes of equal items (union-find with path halving), for any hashable items.

The SQL translation unifies terms with it (:class:`cqsens.frontend.sql_terms.TermClasses`),
the person-local rewriting classes of equal columns, and the log planner the columns and
literals that can meet (:mod:`cqsens.logs.plan`).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["UnionFind"]

T = TypeVar("T", bound=Hashable)


class UnionFind(Generic[T]):
    """Classes of items; the root of a class (:meth:`find`) represents it.

    Examples
    --------
    >>> uf: UnionFind[str] = UnionFind()
    >>> uf.link(uf.find("a"), uf.find("b"))
    >>> uf.find("a"), uf.find("c")
    ('b', 'c')
    """

    def __init__(self) -> None:
        self.parent: dict[T, T] = {}

    def find(self, x: T) -> T:
        """The root of ``x``'s class (``x`` itself when it is new)."""
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def link(self, root: T, into: T) -> None:
        """Put the class of root ``root`` into the class of root ``into``."""
        self.parent[root] = into
