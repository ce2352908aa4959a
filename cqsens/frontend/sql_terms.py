"""Terms of the SQL translation: classes of equal terms, literal constants, variable names.

sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

import re

from sqlglot import exp

from cqsens.ir.cq import Const, Term, Var
from cqsens.ir.union_find import UnionFind

__all__ = ["TermClasses", "literal_const", "var_name"]


class TermClasses(UnionFind[Term]):
    """Classes of terms; a constant, else the earliest variable, represents each class."""

    def __init__(self, order: dict[Var, int]) -> None:
        super().__init__()
        self.order = order

    def union(self, a: Term, b: Term) -> bool | None:
        """Merge; constants win.

        Returns False on two constants that differ whatever the database's typing
        and collation ('F' and 'M'), None on two that might be equal (5 and '5',
        'a' and 'A'): the caller keeps the second as a filter.
        """
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        if isinstance(ra, Const) and isinstance(rb, Const):
            return False if ra.definitely_differs(rb) else None
        if isinstance(rb, Const) or (
            isinstance(ra, Var) and isinstance(rb, Var) and self._rank(rb) < self._rank(ra)
        ):
            ra, rb = rb, ra
        self.link(rb, ra)
        return True

    def _rank(self, v: Var) -> int:
        return self.order.get(v, 1 << 30)


def literal_const(node: exp.Expr) -> Const | None:
    if isinstance(node, exp.Paren):
        return literal_const(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        inner = literal_const(node.this)
        return None if inner is None or isinstance(inner.value, str) else Const(-inner.value)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return Const(node.this)
        text = node.this
        try:
            return Const(int(text))
        except ValueError:
            try:
                return Const(float(text))
            except ValueError:
                return None
    return None


_SAFE = re.compile(r"[^A-Za-z0-9_]")


def var_name(alias: str, column: str) -> str:
    prefix = "" if column.lower().startswith(alias.lower() + "_") else f"{alias}_"
    name = _SAFE.sub("_", f"{prefix}{column}")
    return name if re.match(r"[A-Za-z_]", name) else f"v_{name}"
