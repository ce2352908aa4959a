"""Mutually exclusive CASE columns (docs/rules.md, rule exclusive-cases) against brute force.

Random small databases satisfying the keys, the CHECK and the CD; every neighbour
(a row added or removed, or a row replaced) is evaluated in SQLite and the ℓ1/ℓ2
change of the whole released vector (every SUM column, every group) is measured:
it never exceeds the bound, and on a database built for it reaches it.
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cqsens
from cqsens.engine.rules import Rule
from cqsens.pipeline import Analysis
from tests.conftest import scaled_examples
from tests.oracle import Rows, sql_sensitivity

DDL = """
CREATE TABLE t (id INTEGER PRIMARY KEY, c TEXT NOT NULL, g INTEGER NOT NULL,
                x INTEGER NOT NULL CHECK (x BETWEEN -2 AND 3));
CREATE TABLE s (id INTEGER PRIMARY KEY, t_id INTEGER NOT NULL,
                y INTEGER NOT NULL CHECK (y BETWEEN 0 AND 5));
"""
CDS = ["s[t_id->id]<=2"]
CANDIDATES: Rows = {
    "t": [(i, c, g, x) for i in range(3) for c in ("a", "b", "c", "d") for g in (0, 1)
          for x in (-2, 3)],
    "s": [(i, t, y) for i in range(3) for t in range(2) for y in (0, 5)],
}


def _ok(db: Rows) -> bool:
    """Keys of t and s, and at most two s rows per t_id."""
    for name in ("t", "s"):
        keys = [row[0] for row in db[name]]
        if len(keys) != len(set(keys)):
            return False
    per: dict[object, int] = {}
    for _, t, _ in db["s"]:
        per[t] = per.get(t, 0) + 1
    return all(n <= 2 for n in per.values())


databases = st.fixed_dictionaries({
    "t": st.lists(st.sampled_from(CANDIDATES["t"]), max_size=3, unique=True),
    "s": st.lists(st.sampled_from(CANDIDATES["s"]), max_size=3, unique=True),
}).filter(_ok)

# statements whose SUM columns are pairwise exclusive (the rule applies)
EXCLUSIVE = [
    "SELECT SUM(CASE WHEN c = 'a' THEN x ELSE 0 END) AS a, "
    "SUM(CASE WHEN c = 'b' THEN x ELSE 0 END) AS b, "
    "SUM(CASE WHEN c = 'c' THEN x ELSE 0 END) AS cc FROM t",
    "SELECT SUM(CASE WHEN c IN ('a', 'b') THEN x END) AS a, "
    "SUM(CASE WHEN c = 'c' AND x > 0 THEN x ELSE 0 END) AS b FROM t WHERE t.id > 0",
    "SELECT SUM(CASE WHEN t.c = 'a' THEN s.y ELSE 0 END) AS a, "
    "SUM(CASE WHEN t.c = 'b' THEN s.y END) AS b FROM t JOIN s ON s.t_id = t.id",
    "SELECT g AS g, SUM(CASE WHEN c = 'a' THEN x ELSE 0 END) AS a, "
    "SUM(CASE WHEN c = 'b' THEN x * 2 ELSE 0 END) AS b FROM t GROUP BY g",
    "SELECT SUM(CASE WHEN g = 0 THEN x WHEN g = 1 THEN 0 ELSE NULL END) AS a, "
    "SUM(CASE WHEN g = 1 THEN x ELSE 0 END) AS b, COUNT(*) AS n FROM t",
    # COUNTs of a CASE without ELSE (a row counts 0 or 1), FILTER, and with SUMs
    "SELECT COUNT(CASE WHEN c = 'a' THEN 1 END) AS a, COUNT(CASE WHEN c = 'b' THEN x END) AS b, "
    "COUNT(CASE WHEN c IN ('c', 'd') THEN 0 ELSE NULL END) AS cd FROM t",
    "SELECT g AS g, COUNT(*) FILTER (WHERE c = 'a') AS a, COUNT(*) FILTER (WHERE c = 'b') AS b "
    "FROM t GROUP BY g",
    "SELECT COUNT(CASE WHEN t.c = 'a' THEN 1 END) AS a, "
    "SUM(CASE WHEN t.c = 'b' THEN s.y ELSE 0 END) AS b FROM t JOIN s ON s.t_id = t.id",
    # complements: a set and the literals it excludes as written (TPC-H q12's line counts)
    "SELECT SUM(CASE WHEN c = 'a' OR c = 'b' THEN 1 ELSE 0 END) AS high, "
    "SUM(CASE WHEN c <> 'a' AND c <> 'b' THEN 1 ELSE 0 END) AS low FROM t",
    "SELECT g AS g, SUM(CASE WHEN c IN ('a', 'b') THEN x ELSE 0 END) AS a, "
    "SUM(CASE WHEN c NOT IN ('a', 'b', 'c') THEN x ELSE 0 END) AS b FROM t GROUP BY g",
    "SELECT COUNT(CASE WHEN c = '1-a' THEN 1 END) AS a, "
    "COUNT(CASE WHEN c != '1-a' AND x > 0 THEN 1 END) AS b FROM t",
]
# statements whose columns can hold on one row (the rule must not apply)
OVERLAPPING = [
    "SELECT SUM(CASE WHEN c <> 'a' THEN x ELSE 0 END) AS a, "
    "SUM(CASE WHEN c <> 'b' THEN x ELSE 0 END) AS b FROM t",
    "SELECT SUM(CASE WHEN c = 'a' THEN x ELSE 0 END) AS a, "
    "SUM(CASE WHEN c <> 'A' THEN x ELSE 0 END) AS b FROM t",
    "SELECT SUM(CASE WHEN c IN ('a', 'b') THEN x ELSE 0 END) AS a, "
    "SUM(CASE WHEN c <> 'a' THEN x ELSE 0 END) AS b FROM t",
    "SELECT SUM(CASE WHEN c IN ('a', 'b') AND c IN ('b', 'c') THEN x ELSE 0 END) AS a, "
    "SUM(CASE WHEN c <> 'c' THEN x ELSE 0 END) AS b FROM t",
    "SELECT SUM(CASE WHEN c = 'a' THEN x ELSE 0 END) AS a, "
    "SUM(CASE WHEN c IN ('a', 'b') THEN x ELSE 0 END) AS b FROM t",
    "SELECT SUM(CASE WHEN c = 'a' THEN x ELSE 0 END) AS a, "
    "SUM(CASE WHEN c = 'b' THEN x ELSE 1 END) AS b FROM t",
    "SELECT SUM(CASE WHEN c = 'a' THEN x ELSE 0 END) AS a, "
    "SUM(CASE WHEN c = 'A' THEN x ELSE 0 END) AS b FROM t",
    "SELECT SUM(CASE WHEN c = 'a' THEN x ELSE 0 END) AS a, "
    "SUM(CASE WHEN g = 1 THEN x ELSE 0 END) AS b FROM t",
    "SELECT COUNT(CASE WHEN c = 'a' THEN 1 ELSE 0 END) AS a, "
    "COUNT(CASE WHEN c = 'b' THEN 1 END) AS b FROM t",  # ELSE 0 is counted: every row
    "SELECT COUNT(CASE WHEN c = 'a' THEN 1 END) AS a, "
    "COUNT(CASE WHEN g = 1 THEN 1 END) AS b FROM t",
]
# one COUNT of a subset of the rows: a substitution can move a row out of it
SUBSETS = [
    "SELECT COUNT(CASE WHEN c = 'a' THEN 1 END) FROM t",
    "SELECT COUNT(*) FILTER (WHERE c = 'a') FROM t",
    "SELECT COUNT(CASE WHEN x > 0 THEN x END) FROM t",
]


def _applied(a: cqsens.Analysis) -> bool:
    """The released statistic's explanation cites the rule."""
    return any(f"rule {Rule.EXCLUSIVE_CASES.value})" in line for line in a.explanation)


@functools.cache
def _analysis(sql: str, neighbor: str) -> Analysis:
    """The upper bound of ``sql``, computed once per test process: it does not depend on the
    random database, so the property's examples all check the same analysis."""
    return cqsens.analyze(sql, schema=DDL, cds=CDS, neighbor=neighbor, prove_lower=False)


@pytest.mark.parametrize("sql", EXCLUSIVE + OVERLAPPING + SUBSETS)
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@settings(max_examples=scaled_examples(12), deadline=None)
@given(db=databases)
def test_bound_holds_on_every_neighbour(sql: str, neighbor: str, db: Rows) -> None:
    a = _analysis(sql, neighbor)
    l1, l2 = sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


@pytest.mark.parametrize("sql", EXCLUSIVE)
def test_the_rule_applies_to_exclusive_columns(sql: str) -> None:
    a = cqsens.analyze(sql, schema=DDL, cds=CDS, prove_lower=False)
    assert _applied(a)
    assert a.l1 < sum(agg.l1 for agg in a.aggregates)


@pytest.mark.parametrize("sql", OVERLAPPING)
def test_the_rule_does_not_apply_to_overlapping_columns(sql: str) -> None:
    a = cqsens.analyze(sql, schema=DDL, cds=CDS, prove_lower=False)
    assert not _applied(a)
    assert a.l1 == sum(agg.l1 for agg in a.aggregates)


@pytest.mark.parametrize(("neighbor", "db"), [
    ("add-remove", {"t": [(0, "a", 0, 3)], "s": []}),
    ("substitute", {"t": [(0, "a", 0, 3)], "s": []}),
])
def test_the_bound_is_reached(neighbor: str, db: Rows) -> None:
    """One row of value 3 moves the vector by 3, or by 6 when it changes column (3 out of
    one, 3 into another); the columns' own bounds summed give 9 (15 under substitution)."""
    sql = EXCLUSIVE[0]
    a = cqsens.analyze(sql, schema=DDL, cds=CDS, neighbor=neighbor, prove_lower=False)
    l1, _ = sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 == a.l1
    assert sum(agg.l1 for agg in a.aggregates) > a.l1


def test_join_bound_is_reached() -> None:
    """Two s rows per t row: removing the t row of ``c = 'a'`` moves one column by 2 × 5."""
    sql = EXCLUSIVE[2]
    a = cqsens.analyze(sql, schema=DDL, cds=CDS, prove_lower=False)
    db: Rows = {"t": [(0, "a", 0, 3)], "s": [(0, 0, 5), (1, 0, 5)]}
    l1, _ = sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok)
    assert l1 == a.l1 == 10


@pytest.mark.parametrize("sql", SUBSETS)
def test_a_count_of_a_subset_moves_under_substitution(sql: str) -> None:
    """Changing the row of ``c = 'a'``, ``x = 3`` to ``c = 'b'``, ``x = -2`` takes it out
    of the counted subset: the bound under substitution is that change, not 0 (the
    rule count-substitution holds for COUNT(*) of a whole table only)."""
    a = cqsens.analyze(sql, schema=DDL, cds=CDS, neighbor="substitute", prove_lower=False)
    db: Rows = {"t": [(0, "a", 0, 3)], "s": []}
    l1, _ = sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok, neighbor="substitute")
    assert l1 == a.l1 > 0


@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
def test_exclusive_counts_reach_the_bound(neighbor: str) -> None:
    """One row counts in one column: a row added moves the vector by 1, a row changed
    from ``c = 'a'`` to ``c = 'b'`` by 2; the columns' own bounds summed give 3 (6)."""
    sql = EXCLUSIVE[5]
    a = cqsens.analyze(sql, schema=DDL, cds=CDS, neighbor=neighbor, prove_lower=False)
    db: Rows = {"t": [(0, "a", 0, 3)], "s": []}
    l1, _ = sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 == a.l1
    assert sum(agg.l1 for agg in a.aggregates) > a.l1
