"""Witnesses for every released aggregate and both neighbour models.

A lower bound on the sensitivity of a released statistic is a pair of
neighbouring databases ``B`` and ``B'`` — one row added (add-remove) or one row
changed (substitution) — both satisfying everything declared, on which the
user's own SQL is run in SQLite; the lower bound is the ℓ1 norm of the change of
the released vector (one entry per aggregate, per group for GROUP BY), and its
ℓ2 norm is reported beside it.  SQLite has no MEDIAN (in SQLite syntax the
user's MEDIAN reads ``PERCENTILE_CONT(x, 0.5)``): Python aggregate functions
``median`` and ``percentile_cont`` computing :func:`statistics.median` of the
values the query selects are registered on the connection, so the user's SQL
still runs unchanged.

The construction starts from the COUNT witness ``(A, t)`` of the query's body
(:func:`cqsens.witness.search.find_witness`) and tries a few variants:

* add-remove: ``B = A`` or ``A`` plus a fresh copy of ``A ∪ {t}`` (so that
  AVG, MEDIAN, MIN and MAX are defined on both sides), ``B' = B ∪ {t}``;
* substitution: ``B = C ∪ {t}`` and ``B' = C ∪ {t'}`` with ``C`` as above and
  ``t'`` a fresh copy of ``t`` (which joins nothing, or joins the copy), or
  ``t`` with its aggregated value changed;

then the aggregated values are set to the ends ``m`` or ``M`` of their range:
each value joined only in ``B``, only in ``B'``, or in both gets ``m`` or ``M``
(eight combinations).  The classic constructions are among them: ``{m}`` plus
``M`` for AVG and MEDIAN (a change of (M − m)/2), ``{M}`` plus ``m`` for MIN,
``m`` changed to ``M`` under substitution, Δ new rows at ``max(|m|, |M|)`` for
SUM.  Every candidate is checked from scratch (:func:`is_aggregate_witness`) and
the best kept.  See docs/rules.md, rule ``aggregate-witness``.
"""

from __future__ import annotations

import math
import sqlite3
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from cqsens.frontend.sqlgen import sqlite_query
from cqsens.ir.cq import CQ, AggregateQuery, Var
from cqsens.ir.exact import Exact
from cqsens.ir.expr import Predicate
from cqsens.witness.evaluate import Database, Value, connect, cq_sql
from cqsens.witness.model import Witness

__all__ = [
    "AggregateWitness",
    "Released",
    "aggregate_sql",
    "released_change",
    "released_pair",
    "released_values",
]

Released = dict[tuple[Value | None, ...], tuple[Value | None, ...]]
"""Group key (``()`` without GROUP BY) → the values of the aggregates in that group."""

_SUMS = ("count", "count_distinct", "sum")  # an absent group or NULL counts as 0


class _Median:
    """SQLite aggregate: the median of the non-NULL values (NULL when there are none)."""

    def __init__(self) -> None:
        self.values: list[float | int] = []

    def step(self, value: Any) -> None:
        if isinstance(value, (int, float)):
            self.values.append(value)

    def finalize(self) -> float | int | None:
        return statistics.median(self.values) if self.values else None


class _Percentile(_Median):
    """SQLite aggregate ``PERCENTILE_CONT(x, q)`` (linear interpolation; the median at
    ``q = 0.5``), the form MEDIAN takes in SQLite syntax."""

    def __init__(self) -> None:
        super().__init__()
        self.q = 0.5

    def step(self, value: Any, q: Any = 0.5) -> None:
        super().step(value)
        self.q = float(q)

    def finalize(self) -> float | int | None:
        if not self.values:
            return None
        xs = sorted(self.values)
        if self.q == 0.5:
            return statistics.median(xs)
        pos = self.q * (len(xs) - 1)
        low = int(pos)
        high = min(low + 1, len(xs) - 1)
        return xs[low] + (xs[high] - xs[low]) * (pos - low)


def aggregate_sql(query: AggregateQuery, columns: Mapping[str, tuple[str, ...]]) -> str | None:
    """The SELECT the witness runs: the user's SQL in SQLite syntax (the generated
    counting SELECT for a CQ), or None when SQLite cannot express it."""
    if query.sql:
        return sqlite_query(query.sql, query.dialect)
    return cq_sql(query.cq, columns)


def _group_positions(query: AggregateQuery, names: Sequence[str]) -> list[int] | None:
    """Positions of the GROUP BY columns in the result, found by their column names.

    A grouping variable joined over several tables has one name per column it
    fills (``e.dept = d.id``); the result shows one of them."""
    lowered = [n.lower().split(".")[-1].strip('"') for n in names]
    positions: list[int] = []
    for term in query.group_by:
        found = [query.columns.get(a.relation, ())[p].lower()
                 for a in query.cq.relation_atoms() for p, x in enumerate(a.terms)
                 if x == term and p < len(query.columns.get(a.relation, ()))]
        shown = next((lowered.index(n) for n in found
                      if n in lowered and lowered.index(n) not in positions), None)
        if shown is None:
            return None
        positions.append(shown)
    if len(names) - len(positions) != len(query.aggregates):
        return None
    return positions


def released_values(query: AggregateQuery, db: Database, sql: str) -> Released | None:
    """What the query releases on ``db``, run in SQLite; None when the result cannot be
    read as one row per group (GROUP BY columns not shown by name)."""
    conn = connect(db)
    conn.create_aggregate("median", 1, _Median)  # type: ignore[arg-type]
    conn.create_aggregate("percentile_cont", 2, _Percentile)  # type: ignore[arg-type]
    try:
        cursor = conn.execute(sql)
        rows = cursor.fetchall()
        names = [d[0] for d in cursor.description]
    finally:
        conn.close()
    if not query.group_by:
        if len(rows) != 1 or len(rows[0]) != len(query.aggregates):
            return None
        return {(): tuple(rows[0])}
    keys = _group_positions(query, names)
    if keys is None:
        return None
    out: Released = {}
    for row in rows:
        key = tuple(row[p] for p in keys)
        if key in out:
            return None
        out[key] = tuple(v for i, v in enumerate(row) if i not in keys)
    return out


def _number(value: Value | None) -> Fraction | None:
    if value is None or isinstance(value, str):
        return None
    return Fraction(value)


def released_change(
    query: AggregateQuery, before: Released, after: Released
) -> tuple[Fraction, float] | None:
    """(ℓ1, ℓ2) of the change of the released vector, or None when an entry the rules
    assume defined (AVG, MEDIAN, MIN, MAX of no row) is undefined on one side."""
    kinds = [a.kind for a in query.aggregates]
    l1 = Fraction(0)
    squares = Fraction(0)
    for key in sorted(set(before) | set(after), key=repr):
        for i, kind in enumerate(kinds):
            x = _number(before[key][i]) if key in before else None
            y = _number(after[key][i]) if key in after else None
            if kind in _SUMS:
                x, y = x or Fraction(0), y or Fraction(0)
            if x is None or y is None:
                if x is None and y is None:
                    continue
                return None
            l1 += abs(x - y)
            squares += (x - y) ** 2
    return l1, math.sqrt(squares)


def released_pair(query: AggregateQuery, before: Database, after: Database,
                  sql: str) -> tuple[Released, Released, tuple[Fraction, float]] | None:
    """What ``sql`` releases on both databases and the (ℓ1, ℓ2) change, or None when
    SQLite fails, a result cannot be read, or an entry is undefined on one side."""
    try:
        rb, ra = released_values(query, before, sql), released_values(query, after, sql)
    except sqlite3.Error:
        return None
    if rb is None or ra is None:
        return None
    change = released_change(query, rb, ra)
    return None if change is None else (rb, ra, change)


@dataclass(frozen=True)
class AggregateWitness(Witness):
    """Neighbouring databases ``B`` (``database``) and ``B'`` (``after``) with the values
    the query releases on each, run in SQLite.

    ``row`` (in ``relation``) is the row of ``B`` that substitution replaces by
    ``replacement``, or the row ``B'`` adds under add-remove (then ``replacement`` is
    None and ``database`` is ``B``)."""

    after: Database = field(default_factory=lambda: Database({}))
    neighbor: str = "add-remove"
    replacement: tuple[Value, ...] | None = None
    released_before: Released = field(default_factory=dict)
    released_after: Released = field(default_factory=dict)
    l1: Fraction = Fraction(0)
    l2: float = 0.0

    @property
    def lower(self) -> float:
        """The ℓ1 change: the lower bound this witness proves (an exact number)."""
        value: Any = self.l1 if self.l1.denominator != 1 else int(self.l1)
        return value  # type: ignore[no-any-return]

    def summary(self) -> str:
        """One line for people."""
        if self.replacement is None:
            how = f"adding {self.relation}{self.shown_row!r}"
        else:
            how = (f"changing {self.relation}{self.shown_row!r} to "
                   f"{self.relation}{self._visible(self.relation, self.replacement)!r}")
        return (f"B has {self.database.size()} rows; {how} changes the released values from "
                f"{show_released(self.released_before)} to {show_released(self.released_after)} "
                f"(ℓ1 change {_fmt(self.l1)}, ℓ2 change {self.l2:.6g}; {self.construction})")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record."""
        return {
            "neighbor": self.neighbor,
            "rows": self.database.size(),
            "relation": self.relation,
            "tuple": list(self.shown_row),
            "replacement": (list(self._visible(self.relation, self.replacement))
                            if self.replacement is not None else None),
            "released_before": _jsonable(self.released_before),
            "released_after": _jsonable(self.released_after),
            "l1": _json_number(self.l1),
            "l2": self.l2,
            "construction": self.construction,
            "database": {r: [list(row) for row in rows] for r, rows in self.shown_tables().items()},
            "summary": self.summary(),
        }


def _fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{float(x):.6g}"


def _json_number(x: Fraction) -> int | float:
    return x.numerator if x.denominator == 1 else float(x)


def show_released(released: Released) -> str:
    """The released values as text: one value, a tuple, or groups."""
    if set(released) == {()}:
        values = released[()]
        return repr(values[0]) if len(values) == 1 else repr(values)
    return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in sorted(released.items(), key=repr)) + "}"


def _jsonable(released: Released) -> list[dict[str, Any]]:
    return [{"group": list(k), "values": list(v)} for k, v in sorted(released.items(), key=repr)]


def concrete(x: Exact) -> int | float:
    """An exact number as a value SQLite stores."""
    if isinstance(x, Fraction):
        return x.numerator if x.denominator == 1 else float(x)
    return x


def joined_values(cq: CQ, var: Var, db: Database) -> set[Value]:
    """The values ``var`` takes over the rows of the join of ``cq`` on ``db``."""
    head_cq = CQ((var,), cq.atoms, cq.name, cq.satisfiable)
    sql = cq_sql(head_cq, db.columns)
    prefix = "SELECT COUNT(*) FROM ("
    assert sql.startswith(prefix) and sql.endswith(")")
    conn = connect(db)
    try:
        return {r[0] for r in conn.execute(sql[len(prefix):-1]).fetchall()}
    finally:
        conn.close()


def renamed(db: Database, keep: Callable[[str, int, Value], bool], tag: int) -> Callable[
        [str, tuple[Value, ...]], tuple[Value, ...]]:
    """A fresh renaming of the rows of ``db``: every value not kept gets a new value."""
    table: dict[Value, Value] = {}

    def fresh(value: Value) -> Value:
        if value not in table:
            table[value] = (f"{value}~{tag}" if isinstance(value, str)
                            else 10_000_000 * tag + len(table) + 1)
        return table[value]

    def rename(relation: str, row: tuple[Value, ...]) -> tuple[Value, ...]:
        return tuple(v if keep(relation, p, v) else fresh(v) for p, v in enumerate(row))

    return rename


CheckFn = Callable[[Database], bool]
ChecksMap = Mapping[tuple[str, int], Sequence[Predicate]]
