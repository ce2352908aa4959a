"""GROUPING(…) as the constant it is in each grouping set (cqsens/frontend/grouping_values.py).

The statement's released values are the aggregates of each grouping set; GROUPING(…)
and the windows and CASEs over it are computed from the set alone, so the bound is
the bound of the aggregates, checked by brute force over every neighbour of random
databases (SQLite has no ROLLUP: one GROUP BY per set, as in test_grouping_sets.py).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from sqlglot import exp, parse_one

import cqsens
from cqsens.frontend.grouping_values import grouping_mask, substitute_grouping
from tests.conftest import scaled_examples
from tests.helpers import upper_of
from tests.oracle import Rows, sql_sensitivity
from tests.test_union import CANDIDATES, CDS, DDL, _ok, databases

JOIN = "FROM r JOIN s ON s.r = r.k"
RANKED = (f"SELECT SUM(r.a) AS total, r.b AS g1, s.c AS g2, GROUPING(r.b) + GROUPING(s.c) AS lvl, "
          "RANK() OVER (PARTITION BY GROUPING(r.b) + GROUPING(s.c), "
          "CASE WHEN GROUPING(s.c) = 0 THEN r.b END ORDER BY SUM(r.a) DESC) AS rk "
          f"{JOIN} GROUP BY ROLLUP (r.b, s.c) ORDER BY lvl DESC, rk")
# (statement, the statements whose results are released side by side, for the brute force)
CASES = [
    (RANKED, [f"SELECT r.b AS g1, s.c AS g2, SUM(r.a) {JOIN} GROUP BY r.b, s.c",
              f"SELECT r.b AS g1, SUM(r.a) {JOIN} GROUP BY r.b",
              f"SELECT SUM(r.a) {JOIN}"]),
    ("SELECT r.a AS g1, COUNT(*) + GROUPING(r.a) FROM r GROUP BY ROLLUP (r.a)",
     ["SELECT r.a AS g1, COUNT(*) FROM r GROUP BY r.a", "SELECT COUNT(*) FROM r"]),
    ("SELECT u.x AS g1, u.y AS g2, GROUPING(u.x, u.y), COUNT(*) * (1 + GROUPING(u.y)) FROM u "
     "GROUP BY CUBE (u.x, u.y)",
     ["SELECT u.x AS g1, u.y AS g2, COUNT(*) FROM u GROUP BY u.x, u.y",
      "SELECT u.x AS g1, COUNT(*) FROM u GROUP BY u.x",
      "SELECT u.y AS g2, COUNT(*) FROM u GROUP BY u.y", "SELECT COUNT(*) FROM u"]),
]


def _column(name: str) -> exp.Expr:
    return exp.column(name)


@pytest.mark.parametrize(("keys", "expected"), [
    (["a", "b"], 0), (["a"], 1), (["b"], 2), ([], 3),
])
def test_grouping_mask_is_the_standard_bit_order(keys: list[str], expected: int) -> None:
    # GROUPING(a, b): the last argument is the lowest bit, 1 when it is not grouped.
    assert grouping_mask([_column("a"), _column("b")], [_column(k) for k in keys]) == expected


@pytest.mark.parametrize(("keys", "expected"), [
    (["a", "b"], "RANK() OVER (PARTITION BY 0, a ORDER BY SUM(x) DESC)"),
    (["a"], "RANK() OVER (PARTITION BY 1, NULL ORDER BY SUM(x) DESC)"),
    ([], "RANK() OVER (PARTITION BY 2, NULL ORDER BY SUM(x) DESC)"),
])
def test_window_over_grouping_reads_only_keys(keys: list[str], expected: str) -> None:
    item = parse_one("RANK() OVER (PARTITION BY GROUPING(a) + GROUPING(b), "
                     "CASE WHEN GROUPING(b) = 0 THEN a END ORDER BY SUM(x) DESC)")
    assert substitute_grouping(item, [_column(k) for k in keys]).sql() == expected


def test_qualified_and_unqualified_columns_match() -> None:
    key = exp.column("i_category", table="item")
    assert grouping_mask([_column("I_CATEGORY")], [key]) == 0
    assert grouping_mask([exp.column("i_category", table="other")], [key]) == 1


def test_case_keeps_branches_over_columns() -> None:
    item = parse_one("CASE WHEN x > 0 THEN 1 WHEN GROUPING(a) = 1 THEN 2 ELSE 3 END")
    kept = "CASE WHEN x > 0 THEN 1 WHEN 1 = 1 THEN 2 ELSE 3 END"
    assert substitute_grouping(item, []).sql() == kept
    assert substitute_grouping(item, [_column("a")]).sql() == "CASE WHEN x > 0 THEN 1 ELSE 3 END"
    first = parse_one("CASE WHEN GROUPING(a) = 0 THEN a ELSE 'all' END")
    assert substitute_grouping(first, [_column("a")]).sql() == "a"
    assert substitute_grouping(first, []).sql() == "'all'"


def test_item_without_grouping_is_unchanged() -> None:
    item = parse_one("SUM(x) + 1")
    assert substitute_grouping(item, []) is item


@pytest.mark.parametrize(("sql", "sets"), CASES)
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@settings(max_examples=scaled_examples(12), deadline=None)
@given(db=databases)
def test_grouping_beside_aggregates_is_sound(sql: str, sets: list[str], neighbor: str,
                                             db: Rows) -> None:
    a = upper_of(sql, DDL, neighbor, tuple(CDS))
    l1, l2 = sql_sensitivity(DDL, sets, db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


@pytest.mark.parametrize(("sql", "sets"), CASES)
def test_bound_is_the_aggregates_bound(sql: str, sets: list[str]) -> None:
    per_set = [cqsens.analyze(s, schema=DDL, cds=CDS, prove_lower=False) for s in sets]
    a = cqsens.analyze(sql, schema=DDL, cds=CDS, prove_lower=False)
    assert a.l1 == sum(p.l1 for p in per_set)
    assert len(a.aggregates) == sum(len(p.aggregates) for p in per_set)


def test_having_on_grouping_is_post_processing() -> None:
    sql = ("SELECT r.a AS g1, COUNT(*) FROM r GROUP BY ROLLUP (r.a) "
           "HAVING GROUPING(r.a) = 0 OR COUNT(*) > 1")
    a = cqsens.analyze(sql, schema=DDL, cds=CDS, prove_lower=False)
    plain = cqsens.analyze("SELECT r.a AS g1, COUNT(*) FROM r GROUP BY ROLLUP (r.a)", schema=DDL,
                           cds=CDS, prove_lower=False)
    assert (a.l1, a.l2) == (plain.l1, plain.l2)
