"""Outer joins beside WITH tables: the outer-joins refinements, checked by brute force.

A plain WITH table (no schema table's name; a SELECT of schema tables with inner
joins and filters only) only grows when a row is added, so the refinements of
docs/rules.md, rule outer-joins, hold for it: the larger of the inner join's and
the preserved table's bounds when the preserved side is one table (or a WITH table
over one table) that the joined side does not read; counts only grow.  Random small
databases (two keyed tables and a keyless bag with NULLs) are built in SQLite and
every one-row neighbour is evaluated with the statement itself.
"""

from __future__ import annotations

import functools

import pytest
import sqlglot
from hypothesis import given, settings

import cqsens
from cqsens.errors import UnsupportedQueryError
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.outer_ctes import plain_ctes
from cqsens.pipeline import Analysis
from tests.conftest import scaled_examples
from tests.oracle import Rows, sql_sensitivity
from tests.test_outer_join_bounds import _reached
from tests.test_union import CANDIDATES, CDS, DDL, _ok, databases

# (statement, add-remove bound, substitution bound, tight under add-remove)
CASES = [
    # a LEFT JOIN onto a filtered WITH table over s: as ON s.c > 1 (4 / 3 before)
    ("WITH w AS (SELECT s.r, s.c FROM s WHERE s.c > 1) "
     "SELECT COUNT(*) FROM r LEFT JOIN w ON w.r = r.k", 2, 2, True),
    # signed SUM beside COUNT(*), grouped, onto a WITH table (12 / 24 before)
    ("WITH w AS (SELECT s.r FROM s WHERE s.c > 1) SELECT r.a AS g, SUM(r.b), COUNT(*) "
     "FROM r LEFT JOIN w ON w.r = r.k GROUP BY r.a", 6, 12, True),
    # the preserved side a WITH table over one table (8 / 16 before)
    ("WITH v AS (SELECT r.k, r.b FROM r WHERE r.a > 0) "
     "SELECT SUM(v.b) FROM v LEFT JOIN s ON s.r = v.k", 4, 8, True),
    # a WITH table joining two tables: one u row adds several of its rows (unbounded)
    ("WITH w AS (SELECT s.r, u.x FROM s JOIN u ON u.y = s.c) "
     "SELECT COUNT(*) FROM r LEFT JOIN w ON w.r = r.k", None, None, False),
    # the joined WITH table reads the preserved table: not one table beside another
    ("WITH w AS (SELECT r.k AS rk, r.a FROM r) "
     "SELECT COUNT(*) FROM r LEFT JOIN w ON w.rk = r.a", None, None, False),
    # a LEFT JOIN inside the WITH table, counted outside
    ("WITH w AS (SELECT r.k, r.a, r.b FROM r LEFT JOIN s ON s.r = r.k) "
     "SELECT COUNT(*) FROM w", 2, 2, True),
    ("WITH w AS (SELECT r.a AS a FROM r LEFT JOIN s ON s.r = r.k) "
     "SELECT w.a AS g, COUNT(*) FROM w GROUP BY w.a", 2, 4, True),
    ("WITH w AS (SELECT r.a, r.b FROM r LEFT JOIN s ON s.r = r.k) SELECT SUM(w.b) FROM w",
     4, 8, True),
]


@functools.cache
def _analysis(sql: str, neighbor: str) -> Analysis:
    return cqsens.analyze(sql, schema=DDL, cds=CDS, neighbor=neighbor, prove_lower=False)


@pytest.mark.parametrize(("sql", "ar", "sub", "tight"), CASES)
def test_the_bounds(sql: str, ar: int | None, sub: int | None, tight: bool) -> None:
    if ar is not None:
        assert _analysis(sql, "add-remove").l1 == ar
    if sub is not None:
        assert _analysis(sql, "substitute").l1 == sub


@pytest.mark.parametrize(("sql", "ar", "sub", "tight"), CASES)
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@settings(max_examples=scaled_examples(12), deadline=None)
@given(db=databases)
def test_outer_joins_beside_with_tables_are_sound(sql: str, ar: int | None, sub: int | None,
                                                  tight: bool, neighbor: str, db: Rows) -> None:
    a = _analysis(sql, neighbor)
    l1, l2 = sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


@pytest.mark.parametrize("sql", [c[0] for c in CASES if c[3]])
def test_outer_joins_beside_with_tables_reach_the_bound(sql: str) -> None:
    a = _analysis(sql, "add-remove")
    assert _reached(sql, "add-remove", float(a.l1), DDL, CANDIDATES, _ok, ("u",)) == a.l1


def test_a_with_table_that_aggregates_keeps_no_refinement() -> None:
    """Not plain (GROUP BY inside): the outer join gets no refinement (it is refused)."""
    sql = ("WITH w AS (SELECT s.r, COUNT(*) AS n FROM s GROUP BY s.r) "
           "SELECT COUNT(*) FROM r LEFT JOIN w ON w.r = r.k")
    assert plain_ctes(sqlglot.parse_one(sql), schema_from_ddl(DDL)) is None
    with pytest.raises(UnsupportedQueryError):
        cqsens.analyze(sql, schema=DDL, cds=CDS, prove_lower=False)
