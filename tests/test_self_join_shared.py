"""Self-joins on a bounded column: 2k − 1, not 2k (docs/rules.md, rule new-answers).

``r r1 JOIN r r2 ON r1.a = r2.a`` with at most k rows per value of ``a``: adding
one row to a group of k − 1 adds (k−1) + (k−1) + 1 pairs.  Random small
databases satisfying the key and the CD, every neighbour evaluated in SQLite:
the change never exceeds the bound, and the database built for it reaches it
(the witness proves it too).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import cqsens
from tests.conftest import scaled_examples
from tests.oracle import Rows, sql_sensitivity

DDL = "CREATE TABLE r (id INTEGER PRIMARY KEY, a INTEGER NOT NULL, " \
      "b INTEGER NOT NULL CHECK (b BETWEEN 0 AND 2));"
CANDIDATES: Rows = {"r": [(i, a, b) for i in range(5) for a in range(2) for b in (0, 2)]}

PAIRS = "SELECT COUNT(*) FROM r r1 JOIN r r2 ON r1.a = r2.a"
QUERIES = [
    PAIRS,
    "SELECT COUNT(*) FROM r r1 JOIN r r2 ON r1.a = r2.a AND r1.b = r2.b",
    "SELECT COUNT(*) FROM r r1 JOIN r r2 ON r1.a = r2.a JOIN r r3 ON r3.a = r1.a",
    "SELECT SUM(r2.b) FROM r r1 JOIN r r2 ON r1.a = r2.a",
    "SELECT COUNT(*) FROM r r1 JOIN r r2 ON r1.a = r2.a WHERE r1.b > 0",
    "SELECT COUNT(*) FROM r r1 JOIN r r2 ON r1.b = r2.id",
]


def _ok(k: int) -> Callable[[Rows], bool]:
    def ok(db: Rows) -> bool:
        ids = [row[0] for row in db["r"]]
        per: dict[object, int] = {}
        for _, a, _ in db["r"]:
            per[a] = per.get(a, 0) + 1
        return len(ids) == len(set(ids)) and all(n <= k for n in per.values())
    return ok


@functools.cache
def _upper(sql: str, ddl: str, cd: str, neighbor: str) -> cqsens.Analysis:
    """The upper bound of ``sql`` under ``cd``, once per test process: it does not depend on
    the random database, so the properties' examples all check the same analysis."""
    return cqsens.analyze(sql, schema=ddl, cds=[cd], neighbor=neighbor, prove_lower=False)


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("target", ["id", "*"])
@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@settings(max_examples=scaled_examples(10), deadline=None)
@given(rows=st.lists(st.sampled_from(CANDIDATES["r"]), max_size=4, unique=True))
def test_bound_holds_on_every_neighbour(k: int, target: str, sql: str, neighbor: str,
                                        rows: list[tuple[object, ...]]) -> None:
    """``r[a->*]<=k`` (rows per value, accepted on a table with a key) and ``r[a->id]<=k``."""
    ok = _ok(k)
    db: Rows = {"r": rows}
    assume(ok(db))
    a = _upper(sql, DDL, f"r[a->{target}]<={k}", neighbor)
    l1, _ = sql_sensitivity(DDL, [sql], db, CANDIDATES, ok, neighbor=neighbor)
    assert l1 <= a.l1


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("target", ["id", "*"])
def test_pairs_bound_is_two_k_minus_one_and_reached(k: int, target: str) -> None:
    a = cqsens.analyze(PAIRS, schema=DDL, cds=[f"r[a->{target}]<={k}"])
    assert a.upper == 2 * k - 1
    ok = _ok(k)
    db: Rows = {"r": [(i, 0, 0) for i in range(k - 1)]}
    l1, _ = sql_sensitivity(DDL, [PAIRS], db, CANDIDATES, ok)
    assert l1 == a.upper
    assert a.lower == a.upper  # the witness proves it


def test_other_shapes_keep_the_sum() -> None:
    """A filter (the row may fail it) or a join across columns: no answer is shared for
    sure, so the atoms' bounds add."""
    cds = ["r[a->id]<=3"]
    filtered = cqsens.analyze(QUERIES[4], schema=DDL, cds=cds, prove_lower=False)
    pairs = cqsens.analyze(PAIRS, schema=DDL, cds=cds, prove_lower=False)
    assert filtered.upper == pairs.upper + 1


LINES = ("CREATE TABLE lines (o INTEGER NOT NULL, n INTEGER NOT NULL, "
         "q INTEGER NOT NULL CHECK (q BETWEEN 0 AND 1), PRIMARY KEY (o, n));")
LINE_ROWS = [(o, n, q) for o in range(2) for n in range(3) for q in (0, 1)]


def _lines_ok(db: Rows) -> bool:
    """The composite key (o, n) and at most two lines per o."""
    keys = [row[:2] for row in db["lines"]]
    per: dict[object, int] = {}
    for o, _, _ in db["lines"]:
        per[o] = per.get(o, 0) + 1
    return len(keys) == len(set(keys)) and all(n <= 2 for n in per.values())


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM lines l1 JOIN lines l2 ON l1.o = l2.o",
    "SELECT SUM(l2.q) FROM lines l1 JOIN lines l2 ON l1.o = l2.o WHERE l1.q = 1",
])
@settings(max_examples=scaled_examples(10), deadline=None)
@given(rows=st.lists(st.sampled_from(LINE_ROWS), max_size=4, unique=True))
def test_rows_per_value_on_a_composite_key(sql: str, rows: list[tuple[object, ...]]) -> None:
    """``lines[o->*]<=2`` on a table whose key is (o, n): at most two rows per o."""
    db: Rows = {"lines": rows}
    assume(_lines_ok(db))
    a = _upper(sql, LINES, "lines[o->*]<=2", "add-remove")
    assert a.upper < float("inf")
    l1, _ = sql_sensitivity(LINES, [sql], db, {"lines": LINE_ROWS}, _lines_ok)
    assert l1 <= a.l1
