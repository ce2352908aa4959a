"""Outer joins that read the null-supplying side, checked by brute force.

In the term of the expansion that joins a LEFT JOIN's table its columns hold the joined
row's values; in the terms of the unmatched rows (the preserved side, minus the semi-join)
they are NULL, so ``COALESCE``, ``IS [NOT] NULL``, ``CASE`` and ``WHERE … IS NULL`` fold
in each term (docs/rules.md, rule outer-joins).  Random small databases with NULLs in the
join keys and in the values are built in SQLite and every one-row neighbour (add-remove
and substitution) is evaluated with the statement itself; with a privacy unit, every
person removed and random persons added (tests/person_oracle.py).  A release with the
noise off gives SQLite's answer to the statement as written.
"""

from __future__ import annotations

import functools
import math
import random
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cqsens
from cqsens.errors import UnsupportedQueryError
from cqsens.pipeline import Analysis
from tests.conftest import scaled_examples
from tests.helpers import release_json, released_rows, write_db
from tests.oracle import Rows, released, sql_sensitivity
from tests.person_oracle import change, person_moves, random_database
from tests.test_person_groups import _Evaluator, _world

# NULLs: r.a (joined on by u), s.r (the join key), s.c (a value), u.x
DDL = """
CREATE TABLE r (k INTEGER PRIMARY KEY, a INTEGER CHECK (a BETWEEN 0 AND 3),
                b INTEGER NOT NULL CHECK (b BETWEEN -2 AND 2));
CREATE TABLE s (k INTEGER PRIMARY KEY, r INTEGER, c INTEGER CHECK (c BETWEEN 1 AND 4));
CREATE TABLE u (x INTEGER CHECK (x BETWEEN 0 AND 3), y INTEGER NOT NULL CHECK (y BETWEEN 0 AND 3));
"""
CDS = ["s[r->k]<=2", "u[y->*]<=2"]
CANDIDATES: Rows = {
    "r": [(k, a, b) for k in range(3) for a in (None, 0, 3) for b in (-2, 1)],
    "s": [(k, r, c) for k in range(3) for r in (None, 0, 1) for c in (None, 1, 3)],
    "u": [(x, y) for x in (None, 0, 3) for y in (0, 3)],
}


def _ok(db: Rows) -> bool:
    """Keys, s[r->k]<=2 and u[y->*]<=2 (NULL counted as a value: stricter than needed)."""
    for name in ("r", "s"):
        keys = [row[0] for row in db[name]]
        if len(keys) != len(set(keys)):
            return False
    per: dict[tuple[str, object], int] = {}
    for key in [("s", row[1]) for row in db["s"]] + [("u", row[1]) for row in db["u"]]:
        per[key] = per.get(key, 0) + 1
    return all(n <= 2 for n in per.values())


databases = st.fixed_dictionaries({
    "r": st.lists(st.sampled_from(CANDIDATES["r"]), max_size=3, unique=True),
    "s": st.lists(st.sampled_from(CANDIDATES["s"]), max_size=3, unique=True),
    "u": st.lists(st.sampled_from(CANDIDATES["u"]), max_size=3),
}).filter(_ok)

CASES = [
    # COALESCE over the null side (TPC-DS q40's shape)
    "SELECT SUM(r.b - COALESCE(s.c, 0)) FROM r LEFT JOIN s ON s.r = r.k",
    # IS NULL / IS NOT NULL counts beside COUNT(*) (q72's shape), grouped
    "SELECT r.a AS g, SUM(CASE WHEN s.k IS NULL THEN 1 ELSE 0 END), SUM(CASE WHEN s.k IS NOT "
    "NULL THEN 1 ELSE 0 END), COUNT(*) FROM r LEFT JOIN s ON s.r = r.k GROUP BY r.a",
    # the anti-join (q78's shape): the matched term is dropped
    "SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k WHERE s.k IS NULL",
    "SELECT r.a AS g, SUM(r.b) FROM r LEFT JOIN s ON s.r = r.k AND s.c > 1 WHERE s.r IS NULL "
    "GROUP BY r.a",
    # a nullable column of the null side that no ON compares: not folded where matched
    "SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k WHERE s.c IS NULL",
    "SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k WHERE COALESCE(s.c, 0) < 2",
    # COUNT and SUM over the optional side
    "SELECT COUNT(s.c), SUM(s.c), COUNT(*) FROM r LEFT JOIN s ON s.r = r.k",
    # OR over both sides
    "SELECT SUM(CASE WHEN s.k IS NULL OR r.b > 0 THEN r.b ELSE s.c END) FROM r LEFT JOIN s "
    "ON s.r = r.k",
    # two LEFT JOINs, a star and a chain
    "SELECT SUM(CASE WHEN s.k IS NULL THEN r.b ELSE 0 END), COUNT(u.x) FROM r LEFT JOIN s "
    "ON s.r = r.k LEFT JOIN u ON u.y = r.k",
    "SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k LEFT JOIN u ON u.y = s.k WHERE u.y IS NULL",
    # a value that differs between matched and unmatched rows
    "SELECT SUM(CASE WHEN s.k IS NULL THEN 5 ELSE r.b END) FROM r LEFT JOIN s ON s.r = r.k",
    # RIGHT JOIN; FULL JOIN with both sides' IS NULL counts (q97's shape)
    "SELECT SUM(COALESCE(s.c, 5)) FROM s RIGHT JOIN r ON s.r = r.k",
    "SELECT SUM(CASE WHEN u.x IS NOT NULL AND s.k IS NULL THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN u.y IS NULL AND s.k IS NOT NULL THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN u.y IS NOT NULL AND s.k IS NOT NULL THEN 1 ELSE 0 END) "
    "FROM u FULL JOIN s ON s.k = u.y",
]


@functools.cache
def _analysis(sql: str, neighbor: str) -> Analysis:
    """The upper bound of ``sql``, once per test process (it does not depend on the
    random database)."""
    return cqsens.analyze(sql, schema=DDL, cds=CDS, neighbor=neighbor, prove_lower=False)


@pytest.mark.parametrize("sql", CASES)
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@settings(max_examples=scaled_examples(12), deadline=None)
@given(db=databases)
def test_null_side_reads_are_sound(sql: str, neighbor: str, db: Rows) -> None:
    a = _analysis(sql, neighbor)
    l1, l2 = sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


@pytest.mark.parametrize("sql", CASES)
def test_null_side_bounds_are_finite_and_reached_somewhere(sql: str) -> None:
    """Each form is analysed (not refused) with a finite bound, and some database and
    neighbour move its answer: the brute force above is not vacuous."""
    a = _analysis(sql, "add-remove")
    assert math.isfinite(float(a.l1)) and a.l1 > 0
    assert any("NULL in the terms of the unmatched rows" in n for n in a.notes), a.notes
    rng = random.Random(sql)
    worst = 0.0
    for _ in range(40):
        db = {name: rng.sample(rows, rng.randint(0, 3)) for name, rows in CANDIDATES.items()}
        if _ok(db):
            worst = max(worst, sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok)[0])
    assert 0 < worst <= a.l1


def test_the_anti_join_is_the_preserved_side_minus_the_semi_join() -> None:
    a = _analysis(CASES[2], "add-remove")
    assert a.l1 == 2  # r alone (1) + r ⋉ s (1); the matched term keeps no row
    assert any("1 term(s) whose WHERE no row passes dropped" in n for n in a.notes)
    # where the IS NULL column is not compared by ON, the matched term stays
    kept = _analysis(CASES[4], "add-remove")
    assert not any("dropped" in n for n in kept.notes)
    # COALESCE(s.c, 0) is 0 in the unmatched rows: the folded terms are bounded as sums
    summed = _analysis(CASES[0], "add-remove")
    assert summed.l1 == 16  # (2 + 4)·2 (inner join) + 2 (r) + 2 (r ⋉ s)


def test_the_answer_is_sqlites_on_a_fixed_database() -> None:
    """The folding changes the analysis only: the statement's answer is SQLite's."""
    db: Rows = {"r": [(0, 0, 1), (1, None, -2), (2, 3, 1)], "s": [(0, 0, None), (1, 0, 3),
                                                                   (2, None, 1)],
                "u": [(3, 0), (None, 3)]}
    assert released(DDL, [CASES[0]], db) == {(0,): [1 - 2 - 2 + 1.0]}
    assert released(DDL, [CASES[2]], db) == {(0,): [2.0]}
    assert released(DDL, [CASES[6]], db) == {(0,): [1.0, 3.0, 4.0]}


def test_a_where_keeping_both_kinds_of_rows_of_several_joins_is_named() -> None:
    """OR over two outer-joined tables' IS NULL keeps rows matched in one and padded in
    the other, and the reverse: refused, naming it (docs/rules.md, rule outer-joins)."""
    sql = ("SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k LEFT JOIN u ON u.y = r.k "
           "WHERE s.k IS NULL OR u.y IS NULL")
    with pytest.raises(UnsupportedQueryError) as info:
        cqsens.analyze(sql, schema=DDL, cds=CDS)
    assert info.value.construct == ("a WHERE that keeps matched and unmatched rows of "
                                    "several tables of LEFT JOIN")


# ----------------------------------------------------------------------------- person level

PERSON_WORLD = _world(nullable_oid=True)
PERSON_CASES = [
    # (sql, number of released values, grouped)
    ("SELECT SUM(o.amt - COALESCE(i.qty, 0)) FROM orders o LEFT JOIN items i ON i.oid = o.oid",
     1, False),
    ("SELECT COUNT(*) FROM orders o LEFT JOIN items i ON i.oid = o.oid WHERE i.iid IS NULL",
     1, False),
    ("SELECT o.amt, SUM(CASE WHEN i.iid IS NULL THEN 1 ELSE 0 END), SUM(CASE WHEN i.iid IS NOT "
     "NULL THEN i.qty ELSE 0 END) FROM orders o LEFT JOIN items i ON i.oid = o.oid AND "
     "i.qty > 1 GROUP BY o.amt", 2, True),
    ("SELECT COUNT(*) FROM users u LEFT JOIN orders o ON o.uid = u.id WHERE o.oid IS NULL",
     1, False),
]


@pytest.mark.parametrize(("sql", "width", "grouped"), PERSON_CASES)
def test_null_side_reads_hold_per_person(sql: str, width: int, grouped: bool) -> None:
    a = cqsens.analyze(sql, schema=PERSON_WORLD.ddl(), cds=PERSON_WORLD.cd_texts(),
                       unit="users", prove_lower=False)
    assert math.isfinite(float(a.l1)) and a.unit == "users(id)"
    rng = random.Random(sql)
    worst, changed = 0.0, 0
    for _ in range(80):
        db = random_database(rng, PERSON_WORLD, rows=4)
        ev = _Evaluator(sql, width, grouped, db)
        try:
            for removed, added, what in person_moves(rng, PERSON_WORLD, db, substitute=False,
                                                     attempts=6):
                l1, l2 = change(ev.base, ev.released(removed, added))
                assert l1 <= float(a.l1) + 1e-9 and l2 <= float(a.l2) + 1e-9, (what, l1, a.l1)
                worst = max(worst, l1)
                changed += l1 > 0
        finally:
            ev.close()
    assert changed > 0 and worst > 0


# ----------------------------------------------------------------------------- release

RELEASED = [CASES[i] for i in (0, 2, 6, 9, 10, 11, 12)]  # one released row each


@pytest.mark.parametrize("seed", range(3))
def test_release_with_the_noise_off_is_the_sql_answer(seed: int, tmp_path: Path,
                                                      noiseless: None) -> None:
    """`cqsens release` runs the statement as written: with the noise off, SQLite's answer."""
    rng = random.Random(seed)
    db: Rows = {}
    while not db or not _ok(db):
        db = {name: rng.sample(rows, rng.randint(1, 3)) for name, rows in CANDIDATES.items()}
    conn = sqlite3.connect(":memory:")
    conn.executescript(DDL)
    for name, rows in db.items():
        conn.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in rows[0])})", rows)
    write_db(tmp_path / "d.db", conn)
    for sql in RELEASED:
        truth = [float(v or 0) for v in conn.execute(sql).fetchone()]
        args = ["--sql", sql, *(a for cd in CDS for a in ("--cd", cd))]
        (got,) = released_rows(release_json(tmp_path, DDL, args))
        assert [float(v or 0) for v in got] == pytest.approx(truth), (sql, got, truth)
    conn.close()


@pytest.mark.parametrize("sql", [
    "SELECT SUM(r.b) FROM r LEFT JOIN s ON s.r = r.k AND r.b > 0",
    "SELECT SUM(r.b + COALESCE(s.c, 0)) FROM r LEFT JOIN s ON s.r = r.k AND s.c > 2",
])
def test_release_clamps_to_every_term_s_range(sql: str, tmp_path: Path, noiseless: None) -> None:
    """The terms of an outer join read different ranges of one column (the ON filters only
    the joined terms): the release clamps a value to what some term allows, not to the first
    term's range, so with the noise off it is SQLite's answer."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(DDL)
    conn.executemany("INSERT INTO r VALUES (?, ?, ?)", [(1, 0, -2), (2, 1, 2), (3, 2, -1)])
    conn.executemany("INSERT INTO s VALUES (?, ?, ?)", [(1, 2, 3), (2, 1, 1)])
    write_db(tmp_path / "d.db", conn)
    truth = [float(v or 0) for v in conn.execute(sql).fetchone()]
    args = ["--sql", sql, *(a for cd in CDS for a in ("--cd", cd))]
    (got,) = released_rows(release_json(tmp_path, DDL, args))
    assert [float(v or 0) for v in got] == pytest.approx(truth), (got, truth)
