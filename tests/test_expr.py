"""Typed expressions: Python evaluation agrees with SQLite, SQL round-trips, ranges are sound."""

from __future__ import annotations

import math
import sqlite3
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cqsens.errors import UnsupportedQueryError
from cqsens.frontend.parse_sql import parse_sql
from cqsens.frontend.sqlgen import ColumnRef, predicate_sql
from cqsens.ir.expr import (
    Abs,
    And,
    Arith,
    Between,
    Case,
    Coalesce,
    Compare,
    Expr,
    InList,
    IsNull,
    Kind,
    Like,
    Literal,
    Negate,
    Not,
    Or,
    Predicate,
    Slot,
    bind,
    literal_of,
    render,
)
from cqsens.ir.semantics import Undecided, evaluate, slot_ranges

VALUES = st.one_of(st.none(), st.integers(-5, 5), st.sampled_from([0.5, -2.5, 3.0]),
                   st.sampled_from(["", "a", "A", "ab", "b%", "5", "Ab_c"]))


def literals() -> st.SearchStrategy[Literal]:
    return st.one_of(
        st.integers(-4, 4).map(lambda v: Literal(v, Kind.INTEGER)),
        st.sampled_from(["1.5", "-0.5", "2.0"]).map(lambda v: Literal(Decimal(v), Kind.DECIMAL)),
        st.sampled_from(["a", "A%", "_b", "%", "5", ""]).map(lambda v: Literal(v, Kind.TEXT)),
        st.just(Literal(None, Kind.NULL)),
    )


def exprs() -> st.SearchStrategy[Expr]:
    leaves: st.SearchStrategy[Expr] = st.one_of(st.integers(0, 1).map(Slot), literals())
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.builds(Arith, st.sampled_from(["+", "-", "*"]), inner, inner),
            st.builds(Negate, inner),
            st.builds(Abs, inner),
            st.builds(lambda a, b: Coalesce((a, b)), inner, inner),
        ),
        max_leaves=4,
    )


def predicates() -> st.SearchStrategy[Predicate]:
    e = exprs()
    base: st.SearchStrategy[Predicate] = st.one_of(
        st.builds(Compare, st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), e, e),
        st.builds(Between, e, e, e, st.booleans()),
        st.builds(lambda x, items, n: InList(x, tuple(items), n),
                  e, st.lists(e, min_size=1, max_size=3), st.booleans()),
        st.builds(Like, e, e, st.booleans()),
        st.builds(IsNull, e, st.booleans()),
    )
    return st.recursive(
        base,
        lambda inner: st.one_of(
            st.builds(lambda a, b: And((a, b)), inner, inner),
            st.builds(lambda a, b: Or((a, b)), inner, inner),
            st.builds(Not, inner),
        ),
        max_leaves=4,
    )


_CONN = sqlite3.connect(":memory:")


def _sqlite(predicate: Predicate, values: list[object]) -> bool | None:
    (result,) = _CONN.execute("SELECT " + predicate_sql(predicate, values)).fetchone()  # type: ignore[arg-type]
    return None if result is None else bool(result)


@given(predicates(), VALUES, VALUES)
def test_python_evaluation_agrees_with_sqlite(predicate: Predicate, a: object, b: object) -> None:
    try:
        ours = evaluate(predicate, [a, b])  # type: ignore[list-item]
    except Undecided:
        return
    assert ours == _sqlite(predicate, [a, b]), render(predicate, [repr(a), repr(b)])


@pytest.mark.parametrize("condition", [
    "t.a > 30", "t.a BETWEEN 20 AND 40", "t.b LIKE 'A%'", "t.b NOT LIKE 'A%'",
    "t.a IN (1, 2, 3)", "t.a NOT IN (1, 2)", "t.b IS NOT NULL", "t.b IS NULL",
    "NOT (t.a < 25)", "(t.a < 25 OR t.c > 500)", "t.a + t.c < 900", "ABS(t.a - 500) < 100",
    "t.c * 2 >= t.a", "COALESCE(t.a, 0) > 1", "CASE WHEN t.a > 1 THEN 2 ELSE 3 END = 2",
    "-t.a < 3", "t.a - (t.c - 1) > 0", "(t.a + t.c) * 2 > 1", "t.d >= DATE '1994-01-01'",
    "t.a / 2 > 1", "SUBSTR(t.b, 1, 2) = 'AB'", "t.b ILIKE 'x%'", "t.a NOT BETWEEN -5 AND 1.25",
])
def test_filters_round_trip_through_sql(condition: str) -> None:
    """SQL → typed filter → SQL (sqlgen) → typed filter gives the same predicate."""
    schema_columns = ("a", "b", "c", "d")
    query = parse_sql(f"SELECT COUNT(*) FROM T t WHERE {condition}")
    (atom,) = [a for a in query.cq.atoms if a.is_filter]
    assert atom.predicate is not None
    args = [ColumnRef("t", str(v).removeprefix("t_")) for v in atom.terms]
    text = predicate_sql(atom.predicate, args, dialect=None)
    again = parse_sql(f"SELECT COUNT(*) FROM T t WHERE {text}")
    (atom2,) = [a for a in again.cq.atoms if a.is_filter]
    assert atom2.predicate == atom.predicate
    assert all(str(v).removeprefix("t_") in schema_columns + ("rest",) for v in atom.terms)


@pytest.mark.parametrize(("condition", "construct"), [
    ("t.a IS TRUE", "IS TRUE"),
    ("t.b LIKE 'a!%' ESCAPE '!'", "LIKE ... ESCAPE"),
])
def test_unsupported_filters_are_named(condition: str, construct: str) -> None:
    with pytest.raises(UnsupportedQueryError) as info:
        parse_sql(f"SELECT COUNT(*) FROM T t WHERE {condition}")
    assert info.value.construct == construct


def test_filter_atoms_are_one_relation_per_predicate() -> None:
    q = parse_sql("SELECT COUNT(*) FROM T t, T u WHERE t.a > 3 AND u.a > 3 AND u.c > 3")
    filters = sorted((a for a in q.cq.atoms if a.is_filter), key=str)
    assert [str(a) for a in filters] == ["[t_a > 3]", "[u_a > 3]", "[u_c > 3]"]
    assert len({a.relation for a in filters}) == 1
    assert not any(a.relation.startswith("$") for a in q.cq.atoms)


def test_bind_and_ranges() -> None:
    p = And((Compare(">", Slot(0), Literal(2, Kind.INTEGER)), Compare("<", Slot(0), Slot(1))))
    bound = bind(p, [Slot(0), literal_of(10)])
    assert render(bound) == "{0} > 2 AND {0} < 10"
    assert slot_ranges(bound) == {0: (2.0, 10.0)}
    assert slot_ranges(Or((bound, bound))) == {}
    assert slot_ranges(Between(Slot(0), Literal(-1, Kind.INTEGER), Literal(Decimal("2.5"),
                                                                          Kind.DECIMAL))) \
        == {0: (-1.0, 2.5)}
    assert slot_ranges(Not(Compare(">", Slot(0), Literal(1, Kind.INTEGER)))) == {}
    assert math.isinf(slot_ranges(Compare(">=", Slot(0), Literal(0, Kind.INTEGER)))[0][1])


@given(st.integers(-10, 10), st.integers(-10, 10), st.integers(-12, 12))
def test_slot_ranges_contain_every_satisfying_value(low: int, high: int, value: int) -> None:
    p = And((Compare(">=", Slot(0), Literal(low, Kind.INTEGER)),
             Compare(">", Literal(high, Kind.INTEGER), Slot(0)),
             Compare("<>", Case(((IsNull(Slot(0)), Literal(0, Kind.INTEGER)),), Slot(0)),
                     Literal(99, Kind.INTEGER))))
    lo, hi = slot_ranges(p)[0]
    if evaluate(p, [value]):
        assert lo <= value <= hi


# -- ranges of filters written with constant arithmetic --------------------------------

_cent = st.integers(-300, 300).map(lambda n: Decimal(n) / 100)


@given(_cent, _cent, st.sampled_from("+-*"), _cent, _cent, st.sampled_from("+-*"),
       st.lists(st.integers(-2, 2), min_size=1, max_size=6))
def test_a_folded_range_holds_every_value_sqlite_lets_through(
        a: Decimal, b: Decimal, op1: str, c: Decimal, d: Decimal, op2: str,
        nudges: list[int]) -> None:
    # slot_ranges folds `x BETWEEN a op b AND c op d` to the wider of SQL's exact DECIMAL
    # value and SQLite's doubles: every value SQLite admits (read as its text, as cqsens
    # reads stored REALs) lies in the range (docs/rules.md, rule value-bounds)
    from fractions import Fraction

    from cqsens.ir.expr import Arith, Between, Kind, Literal, Slot
    from cqsens.ir.semantics import slot_ranges

    def lit(x: Decimal) -> Literal:
        return Literal(x, Kind.DECIMAL)

    low_sql, high_sql = f"({a} {op1} {b})", f"({c} {op2} {d})"
    ranges = slot_ranges(Between(Slot(0), Arith(op1, lit(a), lit(b)), Arith(op2, lit(c), lit(d))))
    low, high = ranges[0]
    conn = sqlite3.connect(":memory:")
    try:
        ends = conn.execute(f"SELECT {low_sql}, {high_sql}").fetchone()
        for end in ends:
            value = float(end)
            for nudge in nudges:  # the doubles around each end SQLite computed
                v = value
                for _ in range(abs(nudge)):
                    v = math.nextafter(v, math.inf if nudge > 0 else -math.inf)
                admitted = conn.execute(f"SELECT ? BETWEEN {low_sql} AND {high_sql}",
                                        (v,)).fetchone()[0]
                if admitted:
                    assert low <= Fraction(repr(v)) <= high
    finally:
        conn.close()
