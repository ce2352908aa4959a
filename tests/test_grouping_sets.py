"""ROLLUP, CUBE and GROUPING SETS: one histogram per grouping set, checked by brute force.

SQLite has no ROLLUP, so the brute force runs one GROUP BY per grouping set and
releases their results side by side; every one-row neighbour (add-remove and
substitution) must change them by no more than cqsens's ℓ1 and ℓ2 (docs/rules.md,
rule grouping-sets).
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings

import cqsens
from cqsens.errors import UnsupportedQueryError
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.parse_sql import parse_query
from cqsens.ir.compound import CompoundQuery
from cqsens.pipeline import Analysis
from tests.conftest import scaled_examples
from tests.oracle import Rows, sql_sensitivity
from tests.test_union import CANDIDATES, CDS, DDL, _ok, databases

JOIN = "FROM r JOIN s ON s.r = r.k"
CASES = [
    (f"SELECT r.a AS g1, s.c AS g2, COUNT(*) {JOIN} GROUP BY ROLLUP (r.a, s.c)", [
        f"SELECT r.a AS g1, s.c AS g2, COUNT(*) {JOIN} GROUP BY r.a, s.c",
        f"SELECT r.a AS g1, COUNT(*) {JOIN} GROUP BY r.a",
        f"SELECT COUNT(*) {JOIN}"]),
    ("SELECT u.x AS g1, u.y AS g2, SUM(u.x), COUNT(*) FROM u GROUP BY CUBE (u.x, u.y)", [
        "SELECT u.x AS g1, u.y AS g2, SUM(u.x), COUNT(*) FROM u GROUP BY u.x, u.y",
        "SELECT u.x AS g1, SUM(u.x), COUNT(*) FROM u GROUP BY u.x",
        "SELECT u.y AS g2, SUM(u.x), COUNT(*) FROM u GROUP BY u.y",
        "SELECT SUM(u.x), COUNT(*) FROM u"]),
    (f"SELECT r.b AS g1, s.c AS g2, GROUPING(s.c), SUM(r.a) {JOIN} "
     "GROUP BY r.b, GROUPING SETS ((s.c), ()) ORDER BY 1", [
         f"SELECT r.b AS g1, s.c AS g2, SUM(r.a) {JOIN} GROUP BY r.b, s.c",
         f"SELECT r.b AS g1, SUM(r.a) {JOIN} GROUP BY r.b"]),
]


@functools.cache
def _analysis(sql: str, neighbor: str) -> Analysis:
    """The upper bound of ``sql``, computed once per test process: it does not depend on the
    random database, so the property's examples all check the same analysis."""
    return cqsens.analyze(sql, schema=DDL, cds=CDS, neighbor=neighbor, prove_lower=False)


@pytest.mark.parametrize(("sql", "sets"), CASES)
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@settings(max_examples=scaled_examples(12), deadline=None)
@given(db=databases)
def test_grouping_sets_are_sound(sql: str, sets: list[str], neighbor: str, db: Rows) -> None:
    a = _analysis(sql, neighbor)
    l1, l2 = sql_sensitivity(DDL, sets, db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


@pytest.mark.parametrize(("sql", "sets"), CASES)
def test_one_histogram_per_grouping_set(sql: str, sets: list[str]) -> None:
    per_set = [cqsens.analyze(s, schema=DDL, cds=CDS, prove_lower=False) for s in sets]
    a = cqsens.analyze(sql, schema=DDL, cds=CDS, prove_lower=False)
    assert a.l1 == sum(p.l1 for p in per_set)
    squares = sum(p.l2 ** 2 for p in per_set)
    assert squares <= a.l2 ** 2 and float(a.l2) - float(squares) ** 0.5 < 1e-9
    assert len(a.aggregates) == sum(len(p.aggregates) for p in per_set)
    assert a.aggregates[0].label.startswith("grouping set (")
    q = parse_query(sql, schema=schema_from_ddl(DDL))
    assert isinstance(q, CompoundQuery) and len(q.parts) == len(sets)


def test_mysql_with_rollup() -> None:
    a = cqsens.analyze("SELECT r.a, COUNT(*) FROM r GROUP BY r.a WITH ROLLUP", schema=DDL,
                       dialect="mysql")
    assert (a.l1, a.lower) == (2, 2)  # a new r row adds 1 to its group and 1 to the total


@pytest.mark.parametrize(("sql", "construct"), [
    ("SELECT COUNT(*) FROM r GROUP BY CUBE (r.a, r.b, r.k, r.a, r.b, r.k, r.a)", "CUBE"),
])
def test_grouping_sets_that_are_not_read_are_named(sql: str, construct: str) -> None:
    with pytest.raises(UnsupportedQueryError) as info:
        cqsens.analyze(sql, schema=DDL)
    assert info.value.construct == construct
