"""Bags against brute force: tables without a key may hold equal rows, COUNT(*) counts
every copy, and ``R[col->*]<=k`` bounds the copies (docs/rules.md, rule bags)."""

from __future__ import annotations

import functools
import math
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqsens.pipeline import analyze
from tests.conftest import scaled_examples

DDL = "CREATE TABLE R (a INTEGER, b INTEGER); CREATE TABLE S (b INTEGER, c INTEGER);"
JOIN = "SELECT COUNT(*) FROM R r, S s WHERE r.b = s.b"
SELF = "SELECT COUNT(*) FROM R r1, R r2 WHERE r1.b = r2.b"
DOMAIN = [1, 2]
Row = tuple[int, int]


def _count(sql: str, r: list[Row], s: list[Row]) -> int:
    conn = sqlite3.connect(":memory:")
    conn.executescript(DDL)
    conn.executemany("INSERT INTO R VALUES (?, ?)", r)
    conn.executemany("INSERT INTO S VALUES (?, ?)", s)
    (n,) = conn.execute(sql).fetchone()
    return int(n)


def _rows_per(rows: list[Row], position: int, k: int | None) -> bool:
    return k is None or max(Counter(row[position] for row in rows).values(), default=0) <= k


@st.composite
def tables(draw: st.DrawFn, position: int, k: int | None) -> list[Row]:
    pairs = st.tuples(st.sampled_from(DOMAIN), st.sampled_from(DOMAIN))
    rows = draw(st.lists(pairs, max_size=5))
    out: list[Row] = []
    for row in rows:
        if _rows_per([*out, row], position, k):
            out.append(row)
    return out


def _worst(sql: str, r: list[Row], s: list[Row], kr: int | None, ks: int | None) -> int:
    base = _count(sql, r, s)
    worst = 0
    candidates = [(x, y) for x in DOMAIN for y in DOMAIN]
    for i in range(len(r)):
        worst = max(worst, abs(base - _count(sql, r[:i] + r[i + 1:], s)))
    for i in range(len(s)):
        worst = max(worst, abs(base - _count(sql, r, s[:i] + s[i + 1:])))
    for row in candidates:
        if _rows_per([*r, row], 1, kr):
            worst = max(worst, abs(_count(sql, [*r, row], s) - base))
        if _rows_per([*s, row], 0, ks):
            worst = max(worst, abs(_count(sql, r, [*s, row]) - base))
    return worst


@functools.cache
def _upper(sql: str, cds: tuple[str, ...]) -> float:
    """The upper bound of ``sql`` under ``cds``, once per test process (the random tables of
    the property below do not change it)."""
    return analyze(sql, schema=DDL, cds=list(cds), prove_lower=False).upper


@pytest.mark.parametrize(("kr", "ks"), [(None, None), (None, 2), (2, 2), (3, 1)])
@given(data=st.data())
@settings(max_examples=scaled_examples(30))
def test_bag_joins_are_sound(kr: int | None, ks: int | None, data: st.DataObject) -> None:
    r = data.draw(tables(1, kr))
    s = data.draw(tables(0, ks))
    cds = [*([f"R[b->*]<={kr}"] if kr else []), *([f"S[b->*]<={ks}"] if ks else [])]
    for sql in (JOIN, SELF):
        upper = _upper(sql, tuple(cds))
        assert _worst(sql, r, s, kr, ks) <= upper


def test_reproducers() -> None:
    """1,000 equal login rows: one added account changes the count by 1,000."""
    ddl = ("CREATE TABLE accounts (id INT PRIMARY KEY); "
           "CREATE TABLE logins (acct INT, device INT);")
    q = "SELECT COUNT(*) FROM accounts a, logins l WHERE a.id = l.acct"
    assert analyze(q, schema=ddl, cds=["logins[acct->device]<=3"]).upper == math.inf
    bounded = analyze(q, schema=ddl, cds=["logins[acct->*]<=3"])
    assert bounded.upper == 3 and bounded.lower == 3
    # a third copy of a row in a self-join: 4 -> 9 answers, so no FD on b bounds it
    assert _count(SELF, [(1, 1), (1, 1)], []) == 4 and _count(SELF, [(1, 1)] * 3, []) == 9
    assert analyze(SELF, schema=DDL, fds=["R[b->a]"]).upper == math.inf
    # true change 5 (2 copies -> 3 copies: 4 -> 9): 2k − 1, the pair of the new copy with
    # itself counted once (docs/rules.md, rule new-answers)
    assert _count(SELF, [(1, 1)] * 3, []) - _count(SELF, [(1, 1)] * 2, []) == 5
    assert analyze(SELF, schema=DDL, cds=["R[b->*]<=3"], prove_lower=False).upper == 5


def test_keys_keep_set_semantics() -> None:
    ddl = ("CREATE TABLE R (a INTEGER PRIMARY KEY, b INTEGER); "
           "CREATE TABLE S (b INTEGER, c INTEGER, PRIMARY KEY (b, c));")
    assert not analyze(JOIN, schema=ddl).query_obj.row_positions
    assert analyze("SELECT COUNT(DISTINCT r.a) FROM R r, S s WHERE r.b = s.b", schema=DDL) \
        .query_obj.row_positions == {}


def test_rows_per_value_without_a_row_identity(tmp_path: Path) -> None:
    """``R[col->*]`` names the row identity the query gave R; where there is none (CQ text,
    COUNT(DISTINCT ...) only) it stays a rows-per-value dependency, never read as the last
    column: k rows per value hold at most k values of each other column."""
    cq = analyze("Q(z) :- R(x, y), S(y, z)", kind="cq", cds=["S[1->*]<=2"])
    assert [str(d) for d in cq.sigma] == ["S[1->*]<=2"] and not cq.sigma.deps
    assert cq.upper == 2 and cq.lower == 2  # an added R row meets the 2 rows of S with its y
    constraints = tmp_path / "c.txt"
    constraints.write_text("S[b->*]<=2\n")
    distinct = analyze("SELECT COUNT(DISTINCT r.a) FROM R r, S s WHERE r.b = s.c", schema=DDL,
                       constraints=str(constraints))
    assert not any("S" == d.relation for d in distinct.sigma.deps)
    assert [str(d) for d in distinct.sigma.rows] == ["S[1->*]<=2"]
    counted = analyze(JOIN, schema=DDL, constraints=str(constraints), prove_lower=False)
    assert "S[1->3]<=2" in {str(d) for d in counted.sigma}  # S(b, c, row): row is position 3
