"""A statement made of several aggregate queries joined by a set operation.

``SELECT COUNT(*) FROM a UNION ALL SELECT COUNT(*) FROM b`` releases two counts;
``SELECT COUNT(*) FROM (q1 UNION q2) AS t`` one count made of two parts.  Each
part is an :class:`~cqsens.ir.cq.AggregateQuery` analysed on its own; how the
parts' sensitivities combine is ``combination`` (docs/rules.md, rule
set-operations):

``"concat"``
    the parts are released side by side: ℓ1 adds, ℓ2 is the root of the sum of
    squares;
``"sum"``
    every released value is the sum of the parts' values (aggregates over a
    ``UNION ALL``): ℓ1 and ℓ2 add;
``"count"``
    a count of result rows (``COUNT(*)`` over ``UNION`` or ``INTERSECT``): one
    row changes it by at most the sum of the parts' count bounds Δᵢ, and the
    COUNT or histogram rule applies to that sum.

A part may itself be a CompoundQuery (the frontend's passes nest: a LEFT JOIN in
a UNION ALL branch, a LEFT JOIN under ROLLUP): its analysis is combined first,
and it enters its parent as one part.  Under ``"concat"`` any part is allowed,
under ``"sum"`` only a nested sum (a signed sum of signed sums), under
``"count"`` none (docs/rules.md, rule set-operations).
"""

from __future__ import annotations

from dataclasses import dataclass

from cqsens.ir.cq import AggregateQuery

__all__ = ["COMBINATIONS", "FLIPS_OPERATOR", "CompoundQuery"]

COMBINATIONS: tuple[str, ...] = ("concat", "sum", "count")
FLIPS_OPERATOR = "EXISTS / IN under OR / NOT"
"""The operator of a split by rule semi-join-flips (docs/rules.md)."""


@dataclass(frozen=True, slots=True)
class CompoundQuery:
    """Parts joined by ``operator`` (``UNION ALL``, ``UNION``, ``INTERSECT``...).

    ``sql`` is the whole statement without its post-processing clauses (run in
    SQLite to check a lower bound), ``text`` the statement as written, ``names``
    how the output calls each part (``part i`` when empty).

    ``signs`` (``"sum"`` only, empty when every part is added) gives +1 or −1 per
    part; ``monotone`` is ``""`` unless the statement's released values only grow
    when rows are added (an outer-join split of counts and non-negative sums,
    docs/rules.md, rule outer-joins): then, under add-remove, ``"sum"`` bounds the
    change by the added parts' bounds alone and ``"max"`` (one preserved table, one
    LEFT JOIN, one row per individual) by their largest; ``"signed-max"`` is the same
    split with sums of signed values, whose change (add-remove, one row per individual)
    is still at most the largest of the added parts' bounds, though the values do not
    only grow.
    """

    parts: tuple[AggregateQuery | CompoundQuery, ...]
    combination: str
    operator: str
    sql: str
    dialect: str | None = None
    source: str = "<sql>"
    text: str = ""
    notes: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    signs: tuple[int, ...] = ()
    monotone: str = ""

    def name(self, index: int) -> str:
        """How the output names part ``index`` (from 0): ``part 1``, ``grouping set (a)``."""
        return self.names[index] if index < len(self.names) else f"part {index + 1}"

    @property
    def rule(self) -> str:
        """The rule of docs/rules.md that combines the parts."""
        if self.operator == FLIPS_OPERATOR:
            return "semi-join-flips"
        if "JOIN" in self.operator:
            return "outer-joins"
        return "set-operations" if any(w in self.operator for w in ("UNION", "INTERSECT",
                                                                      "EXCEPT")) \
            else "grouping-sets"

    @property
    def grouped(self) -> bool:
        """True when the parts are histograms (GROUP BY)."""
        return any(p.grouped if isinstance(p, CompoundQuery) else bool(p.group_by)
                   for p in self.parts)

    def relations(self) -> frozenset[str]:
        """The relations every part reads."""
        return frozenset(r for p in self.parts
                         for r in (p.relations() if isinstance(p, CompoundQuery)
                                   else p.cq.relations()))

    def leaves(self) -> tuple[AggregateQuery, ...]:
        """The conjunctive parts, left to right, at any depth."""
        return tuple(q for p in self.parts
                     for q in (p.leaves() if isinstance(p, CompoundQuery) else (p,)))
