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

import contextlib
import math
import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from cqsens.frontend.sqlgen import sqlite_query
from cqsens.ir.cq import CQ, AggregateQuery, Var
from cqsens.ir.exact import Exact, json_number
from cqsens.ir.expr import Predicate
from cqsens.witness.evaluate import Database, Value, connect, cq_sql
from cqsens.witness.model import Witness
from cqsens.witness.sql_aggregates import (
    CURRENT,
    EXACT_AGGREGATES,
    Ambiguous,
    ExactResults,
    Median,
    Percentile,
    sql_value,
)

__all__ = [
    "AggregateWitness",
    "Released",
    "aggregate_sql",
    "concrete",
    "exact_text",
    "released_change",
    "released_pair",
    "evaluate_released",
    "released_values",
    "show_released",
    "sql_value",
]

Released = dict[tuple[Value | None, ...], tuple[Value | Fraction | None, ...]]
"""Group key (``()`` without GROUP BY) → the exact values of the aggregates in that group
(an int or a Fraction; NULL is None)."""

_SUMS = ("count", "count_distinct", "sum")  # an absent group or NULL counts as 0


_TOLERANCE = Fraction(1, 10**9)
"""How far SQLite's own float result may lie from the exact one, relative to the
magnitude Σ|x| of the values it adds up (a cross-check, never a comparison of bounds)."""
_ONE = Fraction(1)


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
            return _beside_aggregates(query, names)
        positions.append(shown)
    if len(names) - len(positions) != len(query.aggregates):
        return None
    return positions


def _squeezed(name: str) -> str:
    return re.sub(r"\s+", "", name).strip('"').lower()


def _beside_aggregates(query: AggregateQuery, names: Sequence[str]) -> list[int] | None:
    """The positions of the columns that are not the query's aggregates (the group keys as
    the SQL shows them: an alias, ``EXTRACT(YEAR FROM d)``), the aggregates found by their
    labels; None when one is not found."""
    squeezed = [_squeezed(n) for n in names]
    mine: list[int] = []
    for agg in query.aggregates:
        at = [i for i, n in enumerate(squeezed) if n == _squeezed(agg.output or agg.label)
              and i not in mine]
        if not at:
            return None
        mine.append(at[0])
    return [i for i in range(len(names)) if i not in mine] or None


def _rows(conn: sqlite3.Connection, sql: str) -> tuple[list[tuple[Any, ...]], list[str]]:
    cursor = conn.execute(sql)
    return cursor.fetchall(), [d[0] for d in cursor.description]


def _agrees(value: Fraction, native: Any, scale: Fraction) -> bool:
    """SQLite's own result ``native`` lies within the tolerance of the exact ``value``.

    A double equal to the double nearest ``value`` (with ``|value| <= max(1, scale)``, as
    for every sum, average and percentile of values of magnitude Σ ≤ ``scale``) agrees
    without reading its text: its text and ``value`` both round to it, so they lie within
    one unit in its last place, under 10⁻¹⁵ of ``max(1, scale)``."""
    if native is None or isinstance(native, str):
        return False
    if isinstance(native, float) and math.isfinite(native) and _within(value, scale):
        with contextlib.suppress(OverflowError):  # a value beyond every double
            if native == float(value):
                return True
    try:
        return abs(sql_value(native) - value) <= _TOLERANCE * max(Fraction(1), scale)
    except ValueError:
        return False


def _within(value: Fraction, scale: Fraction) -> bool:
    """``|value| <= max(1, scale)``, compared in integers (no Fraction made)."""
    n, d = abs(value.numerator), value.denominator
    return n <= d or n * scale.denominator <= scale.numerator * d


def _exact_rows(conn: sqlite3.Connection, sql: str, native: list[tuple[Any, ...]],
                skip: set[int]) -> list[tuple[Any, ...]] | None:
    """The rows of ``sql`` with every aggregate computed exactly (the cells at ``skip``,
    the group keys, as SQLite returns them), cross-checked against SQLite's own rows
    ``native``: None when a cell cannot be read exactly or SQLite's own value is too
    far from it."""
    registry = CURRENT.registry = ExactResults()
    for (name, arity), cls in EXACT_AGGREGATES.items():
        conn.create_aggregate(name, arity, cls)
    try:
        mine, _ = _rows(conn, sql)
    finally:
        CURRENT.registry = None
    order = sorted(skip)
    theirs_by_key = {tuple(r[p] for p in order): r for r in native}
    if len(mine) != len(native) or len(theirs_by_key) != len(native):
        return None
    out: list[tuple[Any, ...]] = []
    try:
        for cells in mine:
            theirs = theirs_by_key.get(tuple(cells[p] for p in order))
            if theirs is None:
                return None
            row = tuple(c if i in skip else registry.read(c) for i, c in enumerate(cells))
            if any(isinstance(v, Fraction) and not _agrees(v, theirs[i], registry.scale(cells[i]))
                   for i, v in enumerate(row) if i not in skip):
                return None
            out.append(tuple(v.numerator if isinstance(v, Fraction) and v.denominator == 1
                             else v for v in row))
    except (Ambiguous, ValueError):
        return None
    return out


class _Last(threading.local):
    """This thread's last results of :func:`released_values`: (query, database, SQL) by
    identity → the query and database (kept, so their identities stay theirs), the result."""

    def __init__(self) -> None:
        self.kept: OrderedDict[tuple[int, int, str],
                               tuple[AggregateQuery, Database, Released | None]] = OrderedDict()


_LAST, _LAST_MAX = _Last(), 64


def released_values(query: AggregateQuery, db: Database, sql: str) -> Released | None:
    """:func:`evaluate_released`, kept for the same query and database objects (a witness
    search runs the same larger database against each of its persons)."""
    kept = _LAST.kept
    key = (id(query), id(db), sql)
    got = kept.get(key)
    if got is not None and got[0] is query and got[1] is db:
        kept.move_to_end(key)
        return None if got[2] is None else dict(got[2])
    out = evaluate_released(query, db, sql)
    kept[key] = (query, db, None if out is None else dict(out))
    if len(kept) > _LAST_MAX:
        kept.popitem(last=False)
    return out


def evaluate_released(query: AggregateQuery, db: Database, sql: str) -> Released | None:
    """What the query releases on ``db``, computed exactly; None when the result cannot be
    read as one row per group (GROUP BY columns not shown by name) or not exactly.

    The query runs in SQLite, then again with SUM, TOTAL, AVG and MEDIAN replaced by
    exact aggregates over the values' SQL text (a REAL ``0.1`` is 1/10), so that a
    witness is compared with a bound exactly; SQLite's own float result is only a
    cross-check (within 10⁻⁹ of the magnitude of the values added up).  A COUNT is an
    int, and a MIN or MAX returns a stored value, read from its text."""
    conn = connect(db)
    conn.create_aggregate("median", 1, Median)  # type: ignore[arg-type]
    conn.create_aggregate("percentile_cont", 2, Percentile)  # type: ignore[arg-type]
    try:
        native, names = _rows(conn, sql)
        keys = [] if not query.group_by else _group_positions(query, names)
        rows: list[tuple[Any, ...]] | None = native
        if keys is not None and any(isinstance(c, float) for row in native
                                    for i, c in enumerate(row) if i not in keys):
            rows = _exact_rows(conn, sql, native, set(keys))  # ints, texts, NULLs: as they are
    finally:
        conn.close()
    if rows is None or keys is None:
        return None
    if not query.group_by:
        if len(rows) != 1 or len(rows[0]) != len(query.aggregates):
            return None
        return {(): tuple(rows[0])}
    out: Released = {}
    for row in rows:
        key = tuple(row[p] for p in keys)
        if key in out:
            return None
        out[key] = tuple(v for i, v in enumerate(row) if i not in keys)
    return out


def _number(value: Fraction | Value | None) -> Fraction | None:
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
            if x == y:
                continue  # adds nothing to either norm
            d = x - y
            l1 += abs(d)
            squares += d * d
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
                f"(ℓ1 change {exact_text(self.l1)}, ℓ2 change {self.l2:.6g}; {self.construction})")

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
            "l1": json_number(self.l1),
            "l2": self.l2,
            "construction": self.construction,
            "database": {r: [list(row) for row in rows] for r, rows in self.shown_tables().items()},
            "summary": self.summary(),
        }


def exact_text(value: Any) -> str:
    """A released value for people, exactly: ``3``, ``2.5``, ``0.1``, ``20/3``, ``NULL``,
    a text quoted."""
    if value is None:
        return "NULL"
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool):
        return str(json_number(value))
    return repr(value)


def show_released(released: Released) -> str:
    """The released values as text, exactly: one value, a tuple, or groups."""
    def values(vs: tuple[Value | Fraction | None, ...]) -> str:
        shown = [exact_text(v) for v in vs]
        return shown[0] if len(shown) == 1 else "(" + ", ".join(shown) + ")"

    if set(released) == {()}:
        return values(released[()])
    return "{" + ", ".join(f"{k!r}: {values(v)}" for k, v in sorted(released.items(),
                                                                    key=repr)) + "}"


def _jsonable(released: Released) -> list[dict[str, Any]]:
    return [{"group": list(k), "values": [json_number(x) if isinstance(x, Fraction) else x
                                          for x in v]}
            for k, v in sorted(released.items(), key=repr)]


def concrete(x: Exact, toward: Exact | None = None) -> int | float:
    """An exact number as a value SQLite stores: a double written with the text of ``x``
    (:func:`sql_value` of it is ``x``).  When ``x`` has more digits than a double's text
    holds, the nearest such double on the side of ``toward`` (so that an end of a range
    stays inside the range), else toward zero."""
    if not isinstance(x, Fraction) or x.denominator == 1:
        return x.numerator if isinstance(x, Fraction) else x
    shown = float(x)
    direction = float(toward) if toward is not None else 0.0
    while sql_value(shown) != x and (sql_value(shown) - x) * (Fraction(direction) - x) < 0:
        shown = math.nextafter(shown, direction)  # text beyond x: step back toward the range
    return shown


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
