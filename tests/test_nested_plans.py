"""Nested rewrites (passes that apply inside one another), checked by brute force.

Each statement below was refused before the plan passes (a LEFT JOIN in a UNION
ALL branch or under ROLLUP, a UNION in a derived table in a UNION branch...).
On random small databases (the tables of ``tests/test_union.py``), every one-row
neighbour (add-remove and substitution) is evaluated in SQLite with the
statement itself, or, where SQLite cannot run it (ROLLUP, CUBE, several
releases side by side), with the statements whose results it releases side by
side; the largest ℓ1 and ℓ2 changes must stay within cqsens's bounds
(docs/rules.md, rule set-operations: nesting).
"""

from __future__ import annotations

import functools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cqsens
from cqsens.analysis import Analysis
from cqsens.errors import UnsupportedQueryError
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.parse_sql import parse_query
from cqsens.ir.compound import CompoundQuery
from tests.conftest import scaled_examples
from tests.oracle import Rows, released, sql_sensitivity
from tests.test_union import CANDIDATES, CDS, DDL, _ok, databases

LJ = "FROM r LEFT JOIN s ON s.r = r.k"
DERIVED = "(SELECT r.a AS g FROM r UNION ALL SELECT u.y FROM u) AS t"
# (statement, the statements whose results it releases side by side; [] = itself)
CASES: list[tuple[str, list[str]]] = [
    (f"SELECT COUNT(*) {LJ} UNION ALL SELECT COUNT(*) FROM u",
     [f"SELECT COUNT(*) {LJ}", "SELECT COUNT(*) FROM u"]),
    (f"SELECT r.a AS g, COUNT(*) {LJ} GROUP BY ROLLUP (r.a)",
     [f"SELECT r.a AS g, COUNT(*) {LJ} GROUP BY r.a", f"SELECT COUNT(*) {LJ}"]),
    (f"SELECT COUNT(*) FROM (SELECT r.a AS v {LJ} UNION ALL SELECT u.x FROM u) AS t", []),
    ("SELECT COUNT(*) FROM (SELECT t2.v AS v FROM (SELECT r.a AS v FROM r UNION ALL "
     "SELECT u.x FROM u) AS t2 UNION ALL SELECT s.c FROM s) AS t", []),
    ("SELECT r.a AS g, COUNT(*) FROM r GROUP BY ROLLUP (r.a) UNION ALL "
     "SELECT u.y AS g, COUNT(*) FROM u GROUP BY u.y",
     ["SELECT r.a AS g, COUNT(*) FROM r GROUP BY r.a", "SELECT COUNT(*) FROM r",
      "SELECT u.y AS g, COUNT(*) FROM u GROUP BY u.y"]),
    (f"SELECT COUNT(*) FROM {DERIVED} UNION ALL SELECT COUNT(*) FROM s",
     [f"SELECT COUNT(*) FROM {DERIVED}", "SELECT COUNT(*) FROM s"]),
    (f"SELECT t.g AS g, COUNT(*) FROM {DERIVED} GROUP BY ROLLUP (t.g)",
     [f"SELECT t.g AS g, COUNT(*) FROM {DERIVED} GROUP BY t.g", f"SELECT COUNT(*) FROM {DERIVED}"]),
    ("SELECT COUNT(*) FROM (SELECT r.k AS v FROM r UNION ALL SELECT u.y FROM u) AS t "
     "LEFT JOIN s ON s.r = t.v", []),
    (f"SELECT COUNT(*) FROM (SELECT r.a AS v {LJ}) AS t WHERE t.v > 0", []),
    ("SELECT COUNT(*) FROM s RIGHT JOIN r ON s.r = r.k UNION ALL SELECT SUM(u.x) FROM u",
     ["SELECT COUNT(*) FROM s RIGHT JOIN r ON s.r = r.k", "SELECT SUM(u.x) FROM u"]),
    (f"SELECT r.a AS g1, r.b AS g2, SUM(r.b) {LJ} GROUP BY CUBE (r.a, r.b)",
     [f"SELECT r.a AS g1, r.b AS g2, SUM(r.b) {LJ} GROUP BY r.a, r.b",
      f"SELECT r.a AS g1, SUM(r.b) {LJ} GROUP BY r.a",
      f"SELECT r.b AS g2, SUM(r.b) {LJ} GROUP BY r.b", f"SELECT SUM(r.b) {LJ}"]),
    ("SELECT COUNT(*) FROM u FULL JOIN s ON s.c = u.x UNION SELECT COUNT(*) FROM r",
     ["SELECT COUNT(*) FROM u FULL JOIN s ON s.c = u.x", "SELECT COUNT(*) FROM r"]),
    (f"SELECT t.g AS g, SUM(t.v) FROM (SELECT r.a AS g, r.b AS v {LJ}) AS t "
     "GROUP BY ROLLUP (t.g)",
     [f"SELECT r.a AS g, SUM(r.b) {LJ} GROUP BY r.a", f"SELECT SUM(r.b) {LJ}"]),
    (f"SELECT r.a AS g, COUNT(*) {LJ} GROUP BY ROLLUP (r.a) UNION ALL "
     "SELECT s.c AS g, COUNT(*) FROM s GROUP BY s.c",
     [f"SELECT r.a AS g, COUNT(*) {LJ} GROUP BY r.a", f"SELECT COUNT(*) {LJ}",
      "SELECT s.c AS g, COUNT(*) FROM s GROUP BY s.c"]),
    (f"SELECT t.g AS g, SUM(t.v) FROM (SELECT r.a AS g, r.b AS v {LJ} WHERE r.b > -2 "
     "UNION ALL SELECT u.y, u.x FROM u) AS t GROUP BY t.g", []),
    ("SELECT COUNT(*), SUM(t.v) FROM (SELECT r.b AS v FROM r LEFT JOIN s ON s.r = r.k "
     "LEFT JOIN u ON u.y = s.c UNION ALL SELECT s.c FROM s) AS t", []),
    (f"WITH w AS (SELECT r.a AS v {LJ}) SELECT COUNT(*) FROM w WHERE w.v > 0", []),
    (f"WITH w AS (SELECT r.b AS v {LJ}), x AS (SELECT w.v AS v FROM w UNION ALL "
     "SELECT u.x FROM u) SELECT SUM(x.v) FROM x", []),
    (f"SELECT COUNT(*) FROM (SELECT r.b AS v FROM r UNION ALL SELECT t3.v AS v FROM "
     f"(SELECT r.a AS v {LJ}) AS t3 WHERE t3.v < 3) AS t", []),
    ("SELECT t.a AS g, COUNT(*) FROM (SELECT r.a FROM r UNION SELECT s.c FROM s) AS t "
     "GROUP BY ROLLUP (t.a)",
     ["SELECT t.a AS g, COUNT(*) FROM (SELECT r.a FROM r UNION SELECT s.c FROM s) AS t "
      "GROUP BY t.a", "SELECT COUNT(*) FROM (SELECT r.a FROM r UNION SELECT s.c FROM s) AS t"]),
]


@functools.cache
def _analysis(sql: str, neighbor: str) -> Analysis:
    return cqsens.analyze(sql, schema=DDL, cds=CDS, neighbor=neighbor, prove_lower=False)


@pytest.mark.parametrize(("sql", "sides"), CASES)
def test_nested_statement_is_a_nested_compound(sql: str, sides: list[str]) -> None:
    q = parse_query(sql, schema=schema_from_ddl(DDL))
    assert isinstance(q, CompoundQuery)
    assert len(q.leaves()) >= 3  # every case needs two rewrites, or an outer join (3 terms)
    assert all(isinstance(leaf.sql, str) for leaf in q.leaves())


@pytest.mark.parametrize(("sql", "sides"), CASES)
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@settings(max_examples=scaled_examples(20))  # 20 cases x 2 models: 800 databases under ci
@given(db=databases)
def test_nested_rewrites_are_sound(sql: str, sides: list[str], neighbor: str, db: Rows) -> None:
    a = _analysis(sql, neighbor)
    l1, l2 = sql_sensitivity(DDL, sides or [sql], db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


@pytest.mark.parametrize(("sql", "sides"), CASES)
def test_nested_lower_bound_is_real(sql: str, sides: list[str]) -> None:
    a = cqsens.analyze(sql, schema=DDL, cds=CDS)
    assert a.lower is None or a.lower <= a.l1
    if a.witness is None:
        assert a.lower is None or a.lower == 0
        return
    before = {r: list(rows) for r, rows in a.witness.shown_tables().items()}
    for name in ("r", "s", "u"):
        before.setdefault(name, [])
    after = {**before, a.witness.relation: [*before[a.witness.relation], a.witness.shown_row]}
    x, y = released(DDL, sides or [sql], before), released(DDL, sides or [sql], after)
    change = sum(abs(p - q) for g in set(x) | set(y)
                 for p, q in zip(x.get(g, [0.0] * 2), y.get(g, [0.0] * 2), strict=False))
    assert a.lower is not None and change == pytest.approx(float(a.lower))


def test_nesting_adds_the_parts() -> None:
    """A LEFT JOIN in a UNION ALL branch: ℓ1 is the outer join's ℓ1 plus the other part's
    when they read one table (u JOIN r), their largest when they do not (r, s and u: a row
    changes one of them; docs/rules.md, rule set-operations, 5)."""
    whole = _analysis(CASES[0][0], "add-remove")
    parts = [_analysis(s, "add-remove") for s in CASES[0][1]]
    assert whole.l1 == max(p.l1 for p in parts) < sum(p.l1 for p in parts)
    assert whole.l2 == max(p.l2 for p in parts)
    joined = f"SELECT COUNT(*) {LJ} UNION ALL SELECT COUNT(*) FROM u JOIN r ON r.k = u.y"
    sides = [f"SELECT COUNT(*) {LJ}", "SELECT COUNT(*) FROM u JOIN r ON r.k = u.y"]
    whole, parts = _analysis(joined, "add-remove"), [_analysis(s, "add-remove") for s in sides]
    assert whole.l1 == sum(p.l1 for p in parts)
    squares = sum(p.l2 ** 2 for p in parts)
    assert squares <= whole.l2 ** 2 and float(whole.l2) - math.sqrt(float(squares)) < 1e-9


@pytest.mark.parametrize(("sql", "construct"), [
    (f"SELECT COUNT(*) FROM (SELECT r.a {LJ} UNION SELECT u.x FROM u) AS t",
     "LEFT JOIN in a part of UNION / INTERSECT"),
    # s.c is NOT NULL, so "s.c IS NULL" is an anti-join (rule semi-join-flips); COALESCE is not
    (f"SELECT COUNT(*) {LJ} WHERE COALESCE(s.c, 0) = 0 UNION ALL SELECT COUNT(*) FROM u",
     "a WHERE condition on the null-supplying side of LEFT JOIN"),
    (f"SELECT COUNT(*) FROM (SELECT r.a AS v {LJ}) AS t "
     "WHERE EXISTS (SELECT 1 FROM s WHERE s.c = t.v)",
     "alias s inside and outside a derived table"),
    (f"SELECT COUNT(*) FROM (SELECT r.a AS v {LJ}) AS t WHERE t.k > 0", "column t.k"),
])
def test_nestings_that_are_not_read_are_named(sql: str, construct: str) -> None:
    with pytest.raises(UnsupportedQueryError) as info:
        cqsens.analyze(sql, schema=DDL, cds=CDS)
    assert info.value.construct == construct


# --------------------------------------------------------------- random nestings (hypothesis)

_BRANCHES = [
    "SELECT r.b AS v FROM r",
    "SELECT r.b AS v FROM r LEFT JOIN s ON s.r = r.k",
    "SELECT r.b AS v FROM r LEFT JOIN s ON s.r = r.k AND s.c > 1 WHERE r.a > 0",
    "SELECT s.c AS v FROM s RIGHT JOIN r ON s.r = r.k WHERE s.c > 1",
    "SELECT u.x AS v FROM u LEFT JOIN r ON r.k = u.y",
    "SELECT t2.v AS v FROM (SELECT r.a AS v FROM r UNION ALL SELECT u.y FROM u) AS t2",
    "SELECT t3.v AS v FROM (SELECT r.a AS v FROM r LEFT JOIN s ON s.r = r.k) AS t3 "
    "WHERE t3.v < 3",
]


@st.composite
def _nested(draw: st.DrawFn) -> str:
    """COUNT/SUM over a UNION ALL of 2-3 branches drawn from forms that each need a pass."""
    branches = draw(st.lists(st.sampled_from(_BRANCHES), min_size=2, max_size=3))
    aggregate = draw(st.sampled_from(["COUNT(*)", "SUM(t.v)", "COUNT(*), SUM(t.v)"]))
    return f"SELECT {aggregate} FROM ({' UNION ALL '.join(branches)}) AS t"


@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@settings(deadline=None)
@given(sql=_nested(), db=databases)
def test_random_nestings_are_sound(neighbor: str, sql: str, db: Rows) -> None:
    a = _analysis(sql, neighbor)
    l1, l2 = sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


def test_a_plan_has_at_most_max_plan_leaves() -> None:
    from cqsens.frontend.parse_sql import parse_plan
    from cqsens.frontend.plan import MAX_PLAN_LEAVES, leaves

    schema = schema_from_ddl(DDL)
    five = ", ".join(["r.a", "r.b", "r.k", "r.a + 1", "r.b + 1"])
    plan = parse_plan(f"SELECT SUM(r.b) {LJ} GROUP BY CUBE ({five})", schema=schema)
    assert len(leaves(plan)) == 32 * 3 <= MAX_PLAN_LEAVES
    with pytest.raises(UnsupportedQueryError) as info:
        parse_plan(f"SELECT SUM(r.b) {LJ} GROUP BY CUBE ({five}, r.k + 1)", schema=schema)
    assert info.value.construct == "statement with too many parts"
