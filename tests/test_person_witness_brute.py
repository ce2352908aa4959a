"""Constructed person witnesses on a small schema, against brute force.

Random fan-out limits (``orders[uid->oid]<=k``, ``items[oid->n]<=m``) and statements
that need the constructions of cqsens/witness/person_build.py and per_person.py: an OR of
conjunctions over two tables (one disjunct met), a CASE's literal, summed products at
the ends of their CHECK ranges, a person-local EXISTS over a second line of the same
order, a GROUP BY, an aggregate over per-person groups.  Every reported lower bound is
re-checked here: both databases loaded under the DDL (keys, foreign keys, CHECKs),
fan-outs counted, the statement's change recomputed in SQLite.  Then every person the
limits allow (each order's ``v`` and ``tag``, each line's ``w``, over the whole CHECK
domains) is enumerated: the statements read only one person's rows, so the largest
change one person makes is the true sensitivity, and the lower bound never exceeds it.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqsens.pipeline import analyze
from cqsens.witness.person import PersonWitness
from tests.conftest import scaled_examples
from tests.test_witness_person_build import _fanouts_hold, _load

TEMPLATE = """
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE orders (oid INTEGER PRIMARY KEY, uid INTEGER NOT NULL REFERENCES users(id),
                     v INTEGER CHECK (v BETWEEN {v_low} AND {v_high}),
                     tag TEXT CHECK (tag IN ('a', 'b')));
CREATE TABLE items (oid INTEGER NOT NULL REFERENCES orders(oid), n INTEGER,
                    w INTEGER CHECK (w BETWEEN {w_low} AND {w_high}), PRIMARY KEY (oid, n));
"""
DDL = TEMPLATE.format(v_low=0, v_high=2, w_low=-1, w_high=1)
TAGS = ("a", "b")

# (statement, the positions of its aggregate columns)
QUERIES: list[tuple[str, tuple[int, ...]]] = [
    ("SELECT COUNT(*) FROM orders o, items i WHERE i.oid = o.oid AND "
     "((o.v = 1 AND i.w = 1) OR (o.tag = 'b' AND i.w = -1))", (0,)),
    ("SELECT SUM(CASE WHEN tag = 'b' THEN v ELSE 0 END) FROM orders", (0,)),
    ("SELECT SUM(w * (1 - v)) FROM items, orders WHERE items.oid = orders.oid", (0,)),
    ("SELECT COUNT(*) FROM items i WHERE EXISTS (SELECT * FROM items j "
     "WHERE j.oid = i.oid AND j.w <> i.w)", (0,)),
    ("SELECT tag, SUM(v), COUNT(*) FROM orders GROUP BY tag", (1, 2)),
    ("SELECT c, COUNT(*) FROM (SELECT u.id, COUNT(o.oid) AS c FROM users u "
     "LEFT JOIN orders o ON u.id = o.uid GROUP BY u.id) AS d GROUP BY c", (1,)),
]


def _released(conn: sqlite3.Connection, sql: str, aggregates: tuple[int, ...]) -> \
        dict[tuple[Any, ...], Fraction]:
    out: dict[tuple[Any, ...], Fraction] = {}
    for row in conn.execute(sql).fetchall():
        group = tuple(v for i, v in enumerate(row) if i not in aggregates)
        for i in aggregates:
            out[(group, i)] = Fraction(str(row[i])) if row[i] is not None else Fraction(0)
    return out


def _l1(a: dict[tuple[Any, ...], Fraction], b: dict[tuple[Any, ...], Fraction]) -> Fraction:
    return sum((abs(b.get(k, Fraction(0)) - a.get(k, Fraction(0))) for k in set(a) | set(b)),
               Fraction(0))


def _orders(m: int, vs: range, ws: range) -> Iterator[tuple[int, str, tuple[int, ...]]]:
    """One order: its v, its tag and its lines' w (up to m lines)."""
    for v, tag in itertools.product(vs, TAGS):
        for lines in range(m + 1):
            for line_ws in itertools.product(ws, repeat=lines):
                yield v, tag, line_ws


def _true_sensitivity(sql: str, aggregates: tuple[int, ...], k: int, m: int,
                      ddl: str = DDL, vs: range = range(0, 3),
                      ws: range = range(-1, 2)) -> Fraction:
    """The largest change one person makes: every person the limits allow, added to the
    empty database (the statements read only the person's own rows)."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(ddl)
    empty = _released(conn, sql, aggregates)
    best = Fraction(0)
    for count in range(k + 1):
        for person in itertools.combinations_with_replacement(list(_orders(m, vs, ws)), count):
            conn.execute("DELETE FROM items")
            conn.execute("DELETE FROM orders")
            conn.execute("DELETE FROM users")
            conn.execute("INSERT INTO users VALUES (1, 'x')")
            for oid, (v, tag, lines) in enumerate(person, start=1):
                conn.execute("INSERT INTO orders VALUES (?, 1, ?, ?)", (oid, v, tag))
                conn.executemany("INSERT INTO items VALUES (?, ?, ?)",
                                 [(oid, n, w) for n, w in enumerate(lines, start=1)])
            best = max(best, _l1(empty, _released(conn, sql, aggregates)))
    conn.close()
    return best


@pytest.mark.slow
@pytest.mark.parametrize(("k", "m"), [(1, 1), (1, 2), (2, 1), (2, 2)])
@pytest.mark.parametrize(("sql", "aggregates"), QUERIES)
def test_constructed_person_witness_is_valid_and_reaches_brute_force(
        k: int, m: int, sql: str, aggregates: tuple[int, ...]) -> None:
    """Every case of the small space (each limit, each statement): the witness is
    valid, never above the true sensitivity, and on these statements reaches it."""
    a = analyze(sql, schema=DDL, cds=[f"orders[uid->oid]<={k}", f"items[oid->n]<={m}"],
                unit="users", witness_time=0.5)
    truth = _true_sensitivity(sql, aggregates, k, m)
    assert truth <= Fraction(str(a.upper))  # the upper bound is sound here too
    if a.lower is None:
        assert truth == 0  # no pair of neighbours differs: nothing to prove
        return
    assert _checked(a, DDL, sql, aggregates, k, m, truth) == truth


def _checked(a: Any, ddl: str, sql: str, aggregates: tuple[int, ...], k: int, m: int,
             truth: Fraction) -> Fraction:
    """The witness re-checked (DDL, fan-outs, the change recomputed); its change."""
    w = a.witness
    assert isinstance(w, PersonWitness) and w.query_sql
    before, after = _load(w.database, ddl), _load(w.after, ddl)
    fanouts = [("SELECT MAX(n) FROM (SELECT COUNT(DISTINCT oid) n FROM orders GROUP BY uid)", k),
               ("SELECT MAX(c) FROM (SELECT COUNT(DISTINCT n) c FROM items GROUP BY oid)", m)]
    assert _fanouts_hold(before, fanouts) and _fanouts_hold(after, fanouts)
    change = _l1(_released(before, w.query_sql, aggregates),
                 _released(after, w.query_sql, aggregates))
    assert change == Fraction(str(a.lower)) and 0 < change <= truth
    return change


@settings(max_examples=scaled_examples(10), deadline=None)
@given(k=st.integers(1, 2), v=st.lists(st.integers(-2, 2), min_size=2, max_size=2),
       w=st.lists(st.integers(-2, 2), min_size=2, max_size=2),
       which=st.sampled_from([0, 1, 2, 4]))
def test_witness_with_random_check_ranges_stays_below_brute_force(
        k: int, v: list[int], w: list[int], which: int) -> None:
    """Random CHECK ranges (negative ends included: the summed values' ends then differ
    in sign) with one line per order: a reported lower bound is a valid pair of
    neighbours and never exceeds the true sensitivity."""
    (v_low, v_high), (w_low, w_high) = sorted(v), sorted(w)
    ddl = TEMPLATE.format(v_low=v_low, v_high=v_high, w_low=w_low, w_high=w_high)
    sql, aggregates = QUERIES[which]
    a = analyze(sql, schema=ddl, cds=[f"orders[uid->oid]<={k}", "items[oid->n]<=1"],
                unit="users", witness_time=0.5)
    truth = _true_sensitivity(sql, aggregates, k, 1, ddl, range(v_low, v_high + 1),
                              range(w_low, w_high + 1))
    assert truth <= Fraction(str(a.upper))
    if a.lower == 0:  # the upper bound is 0: nothing to witness
        assert a.upper == 0 and truth == 0
    elif a.lower is not None:
        _checked(a, ddl, sql, aggregates, k, 1, truth)
