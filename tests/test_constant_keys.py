"""Constant GROUP BY keys (cqsens/frontend/constant_keys.py), checked by brute force.

A branch label (``'store' AS channel``) grouped beside other keys groups the rows
as the other keys do; SQLite runs the statement as written, and every neighbour of
random databases must change its result by no more than cqsens's ℓ1 and ℓ2.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from sqlglot import parse_one

import cqsens
from cqsens.errors import UnsupportedQueryError
from cqsens.frontend.constant_keys import drop_constant_keys, is_constant_key
from tests.conftest import scaled_examples
from tests.helpers import upper_of
from tests.oracle import Rows, sql_sensitivity
from tests.test_union import CANDIDATES, CDS, DDL, _ok, databases

LABELLED = ("SELECT t.ch AS g1, t.x AS g2, COUNT(*), SUM(t.x) FROM "
            "(SELECT 'u' AS ch, u.x AS x FROM u WHERE u.x IS NOT NULL "
            "UNION ALL SELECT 'r' AS ch, r.a AS x FROM r) t GROUP BY t.ch, t.x")
CASES = [
    LABELLED,
    "SELECT 'all' AS g1, u.y AS g2, COUNT(*), SUM(u.y) FROM u GROUP BY 'all', u.y",
    "SELECT 1 + 1 AS g1, r.b AS g2, SUM(r.a) FROM r JOIN s ON s.r = r.k GROUP BY 1 + 1, r.b",
]


@pytest.mark.parametrize("sql", CASES)
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@settings(max_examples=scaled_examples(12), deadline=None)
@given(db=databases)
def test_constant_keys_are_sound(sql: str, neighbor: str, db: Rows) -> None:
    a = upper_of(sql, DDL, neighbor, tuple(CDS))
    l1, l2 = sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


# (statement with a constant key, the same statement without it)
PAIRS = [
    ("SELECT 'all' AS g1, u.y AS g2, COUNT(*) FROM u GROUP BY 'all', u.y",
     "SELECT u.y AS g2, COUNT(*) FROM u GROUP BY u.y"),
    ("SELECT 1 + 1 AS g1, r.b AS g2, SUM(r.a) FROM r JOIN s ON s.r = r.k GROUP BY 1 + 1, r.b",
     "SELECT r.b AS g2, SUM(r.a) FROM r JOIN s ON s.r = r.k GROUP BY r.b"),
    (LABELLED, "SELECT t.x AS g2, COUNT(*), SUM(t.x) FROM (SELECT u.x AS x FROM u WHERE "
     "u.x IS NOT NULL UNION ALL SELECT r.a AS x FROM r) t GROUP BY t.x"),
]


@pytest.mark.parametrize(("sql", "plain"), PAIRS)
def test_bounds_are_those_without_the_constant(sql: str, plain: str) -> None:
    a = cqsens.analyze(sql, schema=DDL, cds=CDS)
    b = cqsens.analyze(plain, schema=DDL, cds=CDS)
    assert any("a constant key" in note for note in a.notes)
    assert (a.upper, a.lower, a.l1, a.l2) == (b.upper, b.lower, b.l1, b.l2)
    assert a.l1 > 0


def test_drop_constant_keys() -> None:
    keys = list(parse_one("SELECT 1 FROM t GROUP BY 'a', x, 1 + 1").args["group"].expressions)
    kept, dropped = drop_constant_keys(keys)
    assert [k.sql() for k in kept] == ["x"] and [k.sql() for k in dropped] == ["'a'", "1 + 1"]
    only = keys[:1]
    assert drop_constant_keys(only) == (only, [])


@pytest.mark.parametrize(("key", "constant"), [
    ("'store'", True), ("1 + 1", True), ("CAST('a' AS TEXT)", True), ("x", False),
    ("f(1)", False), ("COUNT(*)", False), ("(SELECT 1)", False),
])
def test_which_keys_are_constant(key: str, constant: bool) -> None:
    assert is_constant_key(parse_one(key)) is constant


def test_constants_only_stay_refused() -> None:
    with pytest.raises(UnsupportedQueryError) as info:
        cqsens.analyze("SELECT 'a' AS g1, COUNT(*) FROM u GROUP BY 'a'", schema=DDL)
    assert info.value.construct == "GROUP BY expression"
