"""UNION ALL, UNION and INTERSECT: the set-operations rule, checked by brute force.

Random small databases (two keyed tables and a keyless bag with NULLs) are built
in SQLite; every one-row neighbour (add-remove and substitution) is evaluated
with the statement itself, and the largest ℓ1 and ℓ2 changes of the released
vector must stay within cqsens's bounds (docs/rules.md, rule set-operations).
"""

from __future__ import annotations

import functools
import math

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

import cqsens
from cqsens.engine.rules import Rule
from cqsens.errors import UnsupportedQueryError
from cqsens.frontend.parse_sql import parse_query, parse_sql
from cqsens.ir.compound import CompoundQuery
from cqsens.pipeline import Analysis
from tests.conftest import scaled_examples
from tests.oracle import Rows, released, sql_sensitivity

DDL = """
CREATE TABLE r (k INTEGER PRIMARY KEY, a INTEGER NOT NULL CHECK (a BETWEEN 0 AND 3),
                b INTEGER NOT NULL CHECK (b BETWEEN -2 AND 2));
CREATE TABLE s (k INTEGER PRIMARY KEY, r INTEGER NOT NULL,
                c INTEGER NOT NULL CHECK (c BETWEEN 1 AND 4));
CREATE TABLE u (x INTEGER CHECK (x BETWEEN 0 AND 3), y INTEGER NOT NULL CHECK (y BETWEEN 0 AND 3));
"""
CDS = ["s[r->k]<=2", "u[y->*]<=2"]
CANDIDATES: Rows = {
    "r": [(k, a, b) for k in range(3) for a in (0, 3) for b in (-2, 1)],
    "s": [(k, r, c) for k in range(3) for r in range(2) for c in (1, 3)],
    "u": [(x, y) for x in (None, 0, 3) for y in (0, 1)],
}


def _ok(db: Rows) -> bool:
    """Keys, s[r->k]<=2 and u[y->*]<=2 (at most two rows of u per y, copies included)."""
    for name in ("r", "s"):
        keys = [row[0] for row in db[name]]
        if len(keys) != len(set(keys)):
            return False
    per_r: dict[object, int] = {}
    for _, r, _ in db["s"]:
        per_r[r] = per_r.get(r, 0) + 1
    per_y: dict[object, int] = {}
    for _, y in db["u"]:
        per_y[y] = per_y.get(y, 0) + 1
    return all(n <= 2 for n in [*per_r.values(), *per_y.values()])


databases = st.fixed_dictionaries({
    "r": st.lists(st.sampled_from(CANDIDATES["r"]), max_size=3, unique=True),
    "s": st.lists(st.sampled_from(CANDIDATES["s"]), max_size=3, unique=True),
    "u": st.lists(st.sampled_from(CANDIDATES["u"]), max_size=3),
}).filter(_ok)

# (statement, the statements whose results are released side by side, for the brute force)
CASES = [
    # several releases side by side
    ("SELECT COUNT(*) FROM r UNION ALL SELECT COUNT(*) FROM s JOIN r ON s.r = r.k", [
        "SELECT COUNT(*) FROM r", "SELECT COUNT(*) FROM s JOIN r ON s.r = r.k"]),
    ("SELECT r.a AS g, COUNT(*) FROM r GROUP BY r.a UNION SELECT u.y AS g, SUM(u.x) FROM u "
     "GROUP BY u.y ORDER BY 1", [
         "SELECT r.a AS g, COUNT(*) FROM r GROUP BY r.a",
         "SELECT u.y AS g, SUM(u.x) FROM u GROUP BY u.y"]),
    # aggregates over UNION ALL: sums of the parts
    ("SELECT COUNT(*) FROM (SELECT r.a AS v FROM r UNION ALL SELECT s.c FROM s JOIN r "
     "ON s.r = r.k UNION ALL SELECT u.x FROM u) AS t", []),
    ("SELECT SUM(t.v), COUNT(*) FROM (SELECT r.b AS v FROM r WHERE r.a > 0 UNION ALL "
     "SELECT s.c FROM s) AS t WHERE t.v > -2", []),
    ("SELECT t.g AS g, SUM(t.v) FROM (SELECT r.a AS g, r.b AS v FROM r UNION ALL "
     "SELECT u.y, u.x FROM u) AS t GROUP BY t.g", []),
    ("SELECT COUNT(t.v) FROM (SELECT u.x AS v FROM u UNION ALL SELECT u.y FROM u) AS t", []),
    ("WITH w AS (SELECT r.k AS key FROM r UNION ALL SELECT s.r FROM s) "
     "SELECT COUNT(*) FROM w JOIN r ON r.k = w.key", []),
    # COUNT(*) over UNION / INTERSECT: distinct rows
    ("SELECT COUNT(*) FROM (SELECT r.a FROM r UNION SELECT s.c FROM s UNION "
     "SELECT u.x FROM u) AS t", []),
    ("SELECT COUNT(*) FROM (SELECT r.a, r.b FROM r INTERSECT SELECT s.c, s.r FROM s) AS t", []),
    ("SELECT COUNT(*) FROM (SELECT u.x FROM u INTERSECT ALL SELECT u.y FROM u) AS t", [
        "SELECT COALESCE(SUM(MIN(p.n, q.n)), 0) FROM (SELECT u.x AS v, COUNT(*) AS n FROM u "
        "GROUP BY u.x) AS p JOIN (SELECT u.y AS v, COUNT(*) AS n FROM u GROUP BY u.y) AS q "
        "ON p.v IS q.v"]),  # SQLite has no INTERSECT ALL: Σ min of the multiplicities
    ("SELECT COUNT(*) FROM (SELECT r.a + r.b AS v FROM r JOIN s ON s.r = r.k UNION "
     "SELECT u.x * 2 FROM u) AS t WHERE t.v > 0", []),
    ("SELECT t.v AS g, COUNT(*) FROM (SELECT r.a AS v FROM r UNION ALL SELECT u.x FROM u "
     "INTERSECT SELECT s.c FROM s) AS t GROUP BY t.v", []),
    ("SELECT COUNT(*) FROM (SELECT 1 FROM r UNION SELECT 1 FROM u) AS t", []),
    ("WITH w AS (SELECT u.y FROM u UNION SELECT s.r FROM s JOIN r ON r.k = s.r) "
     "SELECT COUNT(*) FROM w", []),
]


def _as_read(sql: str) -> str:
    """``sql`` as cqsens reads it (standard SQL: INTERSECT binds tighter than UNION), in
    SQLite's syntax (SQLite runs a compound SELECT left to right)."""
    return sqlglot.transpile(sql, write="sqlite")[0]


@functools.cache
def _analysis(sql: str, neighbor: str) -> Analysis:
    """The upper bound of ``sql``, computed once per test process: it does not depend on the
    random database, so the property's examples all check the same analysis."""
    return cqsens.analyze(sql, schema=DDL, cds=CDS, neighbor=neighbor, prove_lower=False)


@pytest.mark.parametrize(("sql", "sides"), CASES)
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@settings(max_examples=scaled_examples(12), deadline=None)
@given(db=databases)
def test_set_operations_are_sound(sql: str, sides: list[str], neighbor: str, db: Rows) -> None:
    a = _analysis(sql, neighbor)
    statements = [_as_read(s) for s in sides or [sql]]
    l1, l2 = sql_sensitivity(DDL, statements, db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


@pytest.mark.parametrize(("sql", "sides"), CASES)
def test_lower_bound_is_a_real_change_of_the_whole_statement(sql: str, sides: list[str]) -> None:
    a = cqsens.analyze(sql, schema=DDL, cds=CDS)
    assert a.l1 != math.inf
    if a.lower is None:
        assert "none proven" in a.lower_note
        return
    assert 0 <= a.lower <= a.l1
    w = a.witness
    if w is None:
        assert a.lower == 0
        return
    before = {r: list(rows) for r, rows in w.shown_tables().items()}
    for name in ("r", "s", "u"):
        before.setdefault(name, [])
    after = {**before, w.relation: [*before[w.relation], w.shown_row]}
    statements = [_as_read(s) for s in sides or [sql.split(" ORDER BY")[0]]]
    x = released(DDL, statements, before)
    y = released(DDL, statements, after)
    width = max(len(v) for v in [*x.values(), *y.values()])
    change = sum(abs(p - q) for g in set(x) | set(y)
                 for p, q in zip(x.get(g, [0.0] * width), y.get(g, [0.0] * width), strict=True))
    assert change == pytest.approx(float(a.lower))


def test_bounds_add_as_the_rule_says() -> None:
    both = cqsens.analyze("SELECT COUNT(*) FROM r UNION ALL SELECT COUNT(*) FROM s JOIN r "
                          "ON s.r = r.k", schema=DDL, cds=CDS)
    assert (both.l1, [x.l1 for x in both.aggregates]) == (3, [1, 2])
    assert both.l2 > 2.236 and both.l2 - math.sqrt(5) < 1e-9  # √(1² + 2²), rounded up
    summed = cqsens.analyze("SELECT COUNT(*) FROM (SELECT r.a FROM r UNION ALL SELECT s.c "
                            "FROM s JOIN r ON s.r = r.k) AS t", schema=DDL, cds=CDS)
    assert (summed.l1, summed.l2) == (3, 3)
    distinct = cqsens.analyze("SELECT t.a AS g, COUNT(*) FROM (SELECT r.a FROM r UNION "
                              "SELECT s.c FROM s) AS t GROUP BY t.a", schema=DDL, cds=CDS,
                              neighbor="substitute")
    # r and s are different tables: a row changes one part, Δ = max(1, 1) (rule
    # set-operations, 5), and the histogram rule gives 2·Δ under substitution
    assert distinct.aggregates[0].count_bound == 1 and distinct.l1 == 2
    assert any("rule set-operations" in n for n in distinct.notes)
    derivation = distinct.aggregates[0].derivation
    assert derivation.rule is Rule.SET_OPERATIONS and derivation.value == distinct.l1
    assert [p.rule for p in derivation.premises] == [Rule.GROUP_BY_HISTOGRAM]
    assert derivation.premises[0].inputs["delta"] == 1
    assert summed.aggregates[0].derivation.rule is Rule.SET_OPERATIONS


def test_parts_are_conjunctive_queries() -> None:
    q = parse_query("SELECT COUNT(*) FROM (SELECT r.a + r.b AS v FROM r UNION SELECT 1 FROM s) "
                    "AS t", schema=parse_sql_schema())
    assert isinstance(q, CompoundQuery) and q.combination == "count"
    assert [p.aggregates[0].kind for p in q.parts] == ["count_distinct", "count_distinct"]
    assert [len(p.cq.head) for p in q.parts] == [2, 0]  # the columns read; a constant row
    with pytest.raises(UnsupportedQueryError, match="UNION ALL"):
        parse_sql("SELECT COUNT(*) FROM r UNION ALL SELECT COUNT(*) FROM s",
                  schema=parse_sql_schema())


def parse_sql_schema():  # type: ignore[no-untyped-def]
    from cqsens.frontend.ddl import schema_from_ddl
    return schema_from_ddl(DDL)


@pytest.mark.parametrize(("sql", "construct"), [
    ("SELECT COUNT(*) FROM r EXCEPT SELECT COUNT(*) FROM s", "EXCEPT"),
    ("SELECT SUM(t.a) FROM (SELECT r.a FROM r EXCEPT SELECT s.c FROM s) AS t",
     "SUM(t.a) over EXCEPT"),
    ("SELECT AVG(t.a) FROM (SELECT r.a FROM r UNION ALL SELECT s.c FROM s) AS t",
     "AVG(t.a) over UNION ALL"),
    ("SELECT SUM(t.a) FROM (SELECT r.a FROM r UNION SELECT s.c FROM s) AS t",
     "SUM(t.a) over UNION"),
    ("SELECT COUNT(*) FROM (SELECT r.a FROM r UNION SELECT s.c FROM s) AS t JOIN r "
     "ON r.a = t.a", "a join with UNION"),
    ("SELECT COUNT(*) FROM (SELECT r.a, r.b FROM r UNION ALL SELECT s.c FROM s) AS t",
     "parts of different widths"),
    ("SELECT COUNT(*) FROM (SELECT * FROM r UNION ALL SELECT * FROM nosuch) AS t",
     "over table nosuch"),
    ("SELECT r.a FROM r UNION SELECT s.c FROM s", "UNION of row queries"),
    ("SELECT COUNT(*) FROM r UNION SELECT s.c FROM s", "aggregate query and a row query"),
    ("SELECT COUNT(*) FROM r WHERE r.a IN (SELECT s.c FROM s UNION SELECT u.x FROM u)",
     "subquery"),
])
def test_set_operations_that_are_not_read_are_named(sql: str, construct: str) -> None:
    with pytest.raises(UnsupportedQueryError, match=construct.split("(")[0]) as info:
        cqsens.analyze(sql, schema=DDL)
    assert info.value.construct is not None and construct in info.value.construct
