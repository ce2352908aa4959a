"""LEFT, RIGHT and FULL JOIN: the outer-joins rule, checked by brute force.

A preserved row counts max(1, m) = m + 1 − [m ≥ 1] times (m its matches), so a
COUNT or SUM over outer joins is a signed sum of conjunctive aggregates (inner
join, preserved side, semi-join) and changes by at most the sum of their
changes (docs/rules.md, rule outer-joins).  Random small databases (two keyed
tables and a keyless bag with NULLs) are built in SQLite; every one-row
neighbour (add-remove and substitution) is evaluated with the statement itself.
"""

from __future__ import annotations

import functools
import math

import pytest
from hypothesis import given, settings

import cqsens
from cqsens.errors import UnsupportedQueryError
from cqsens.pipeline import Analysis
from tests.conftest import scaled_examples
from tests.oracle import Rows, released, sql_sensitivity
from tests.test_union import CANDIDATES, CDS, DDL, _ok, databases

CASES = [
    "SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k",
    "SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k AND s.c > 1",  # a filter in ON
    "SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k AND r.a > 0",  # on the preserved side
    "SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k WHERE s.c > 1",  # WHERE: an inner join
    "SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k WHERE r.a > 0",
    "SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k LEFT JOIN u ON u.y = s.c",  # a chain
    "SELECT COUNT(*) FROM r JOIN s ON s.r = r.k LEFT JOIN u ON u.x = r.a",
    "SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k LEFT JOIN u ON u.y = r.a",  # a star
    "SELECT COUNT(*) FROM u LEFT JOIN s ON s.c = u.y AND u.x > 0",
    "SELECT COUNT(*) FROM r LEFT JOIN r AS r2 ON r2.k = r.a",  # a self-join
    "SELECT COUNT(*) FROM s RIGHT JOIN r ON s.r = r.k",
    "SELECT COUNT(*) FROM u FULL JOIN s ON s.c = u.x",
    "SELECT r.a AS g, SUM(r.b), COUNT(*) FROM r LEFT JOIN s ON s.r = r.k GROUP BY r.a",
    "SELECT SUM(u.x) FROM u LEFT JOIN r ON r.k = u.y LEFT JOIN s ON s.r = r.k",
    "SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k LEFT JOIN u ON u.y = s.c WHERE u.x = 3",
]


@functools.cache
def _analysis(sql: str, neighbor: str) -> Analysis:
    """The upper bound of ``sql``, computed once per test process: it does not depend on the
    random database, so the property's examples all check the same analysis."""
    return cqsens.analyze(sql, schema=DDL, cds=CDS, neighbor=neighbor, prove_lower=False)


@pytest.mark.parametrize("sql", CASES)
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@settings(max_examples=scaled_examples(12), deadline=None)
@given(db=databases)
def test_outer_joins_are_sound(sql: str, neighbor: str, db: Rows) -> None:
    a = _analysis(sql, neighbor)
    l1, l2 = sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


@pytest.mark.parametrize("sql", CASES)
def test_outer_join_lower_bound_is_real(sql: str) -> None:
    a = cqsens.analyze(sql, schema=DDL, cds=CDS)
    if a.witness is None:
        assert a.lower is None or a.lower == 0
        return
    before = {r: list(rows) for r, rows in a.witness.shown_tables().items()}
    for name in ("r", "s", "u"):
        before.setdefault(name, [])
    after = {**before, a.witness.relation: [*before[a.witness.relation], a.witness.shown_row]}
    x, y = released(DDL, [sql], before), released(DDL, [sql], after)
    change = sum(abs(p - q) for g in set(x) | set(y)
                 for p, q in zip(x.get(g, [0.0, 0.0]), y.get(g, [0.0, 0.0]), strict=False))
    assert a.lower is not None and change == pytest.approx(float(a.lower))
    assert a.lower <= a.l1


def test_left_join_bound_is_inner_plus_preserved_plus_semijoin() -> None:
    a = cqsens.analyze(CASES[0], schema=DDL, cds=CDS)
    assert a.l1 == 2  # a count only grows: max(2 (inner join), 1 (r)), not 2 + 1 + 1
    assert len(a.explanation) == 6 and "EXISTS" in a.explanation[3]
    assert "largest of the added parts'" in a.explanation[4]
    # SUM(r.b) may be negative: not monotone, but one table LEFT JOINed to another, so the
    # larger of the inner join's (4 + 2) and r's (2 + 1), not 6 + 3 + 3; twice it under
    # substitution, not 12 + 6 + 6 (tests/test_outer_join_bounds.py reaches both)
    signed = cqsens.analyze(CASES[12], schema=DDL, cds=CDS)
    assert signed.l1 == 6 and not any("only grow" in line for line in signed.explanation)
    assert any("moves with m and by no more" in line for line in signed.explanation)
    changed = cqsens.analyze(CASES[12], schema=DDL, cds=CDS, neighbor="substitute")
    assert changed.l1 == 12
    inner = cqsens.analyze(CASES[3], schema=DDL, cds=CDS)
    assert inner.l1 == 2 and any("read as an inner join" in n for n in inner.notes)
    star = cqsens.analyze(CASES[7], schema=DDL, cds=CDS)
    assert star.l1 == math.inf  # one u row joins every r row of its a


@pytest.mark.parametrize(("sql", "construct"), [
    # u.x may be NULL in a matched row: no anti-join (on a NOT NULL column it is one, read
    # as NOT EXISTS by rule semi-join-flips: tests/test_semijoin_flips.py)
    ("SELECT COUNT(*) FROM r LEFT JOIN u ON u.y = r.a WHERE u.x IS NULL",
     "a WHERE condition on the null-supplying side of LEFT JOIN"),
    ("SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k WHERE COALESCE(s.c, 0) = 0",
     "a WHERE condition on the null-supplying side of LEFT JOIN"),
    ("SELECT SUM(s.c) FROM r LEFT JOIN s ON s.r = r.k",
     "a column of the null-supplying side of LEFT JOIN"),
    ("SELECT AVG(r.a) FROM r LEFT JOIN s ON s.r = r.k", "AVG(r.a) over LEFT JOIN"),
    ("SELECT COUNT(*) FROM r JOIN u ON u.y = r.a RIGHT JOIN s ON s.r = r.k",
     "RIGHT JOIN beside other joins"),
    ("SELECT COUNT(*) FROM r FULL JOIN s ON s.r = r.k WHERE r.a > 0",
     "FULL JOIN beside other joins or a WHERE"),
    ("SELECT COUNT(*) FROM r LEFT JOIN s USING (k)", "LEFT JOIN ... USING"),
    ("SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k LEFT JOIN u ON u.y = s.c OR u.x = 1",
     "LEFT JOIN whose ON keeps NULLs of s"),
])
def test_outer_joins_that_are_not_read_are_named(sql: str, construct: str) -> None:
    with pytest.raises(UnsupportedQueryError) as info:
        cqsens.analyze(sql, schema=DDL)
    assert info.value.construct == construct
