"""Derived tables' column lists written as projection aliases (frontend/column_lists.py)."""

from __future__ import annotations

import sqlite3

import pytest
import sqlglot

from cqsens.frontend.column_lists import inline_column_lists

ROWS = [(1, 10), (1, 20), (2, 5), (3, None)]


def _sqlite(sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a INT, b INT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", ROWS)
    try:
        return sorted(conn.execute(sql).fetchall(), key=repr)
    finally:
        conn.close()


@pytest.mark.parametrize(("sql", "aliased"), [
    ("SELECT n, k FROM (SELECT a, COUNT(b) FROM t GROUP BY a) AS s (k, n)",
     "SELECT n, k FROM (SELECT a AS k, COUNT(b) AS n FROM t GROUP BY a) AS s"),
    # an alias already written is replaced by the list's name
    ("SELECT x FROM (SELECT a AS y FROM t) s (x)",
     "SELECT x FROM (SELECT a AS x FROM t) s"),
    # a set operation takes its names from its first branch
    ("SELECT v FROM (SELECT a FROM t UNION ALL SELECT b FROM t) AS u (v)",
     "SELECT v FROM (SELECT a AS v FROM t UNION ALL SELECT b FROM t) AS u"),
    # nested derived tables
    ("SELECT m FROM (SELECT MAX(n) FROM (SELECT COUNT(*) FROM t GROUP BY a) AS i (n)) AS o (m)",
     "SELECT m FROM (SELECT MAX(n) AS m FROM (SELECT COUNT(*) AS n FROM t GROUP BY a) AS i) AS o"),
])
def test_the_list_becomes_the_aliases_and_sqlite_answers_the_same(sql: str,
                                                                 aliased: str) -> None:
    out = inline_column_lists(sqlglot.parse_one(sql)).sql(dialect="sqlite")
    assert out == sqlglot.parse_one(aliased).sql(dialect="sqlite")
    assert _sqlite(out) == _sqlite(aliased) != []


@pytest.mark.parametrize("sql", [
    "SELECT * FROM (SELECT * FROM t) AS s (x, y)",            # a star: left as written
    "SELECT x FROM (SELECT a, b FROM t) AS s (x)",            # counts differ
    "SELECT a FROM (SELECT a FROM t) AS s",                    # no list
])
def test_other_derived_tables_are_left_as_written(sql: str) -> None:
    tree = sqlglot.parse_one(sql)
    assert inline_column_lists(tree.copy()) == tree
