"""Loose cases of issue #25, each checked by brute force.

* Two WITH tables that both expose ``k``, joined on ``a.k = b.k``: inlining the
  first one replaced the ``k`` inside the second's body as well, so the join read
  ``r.k = r.k`` (∞ against a true 1), and a filter of the second table on ``k``
  moved onto the first (upper 2 against a true ∞: unsound).
* A join along a NOT NULL foreign key that reads nothing else of the referenced
  table, under substitution (docs/rules.md, rule foreign-key-joins): ∞ (2 with a
  CD) against a true 0.

Random small databases (keyed tables, foreign keys, NULLs) are built; every
neighbour (add-remove and substitution) that keeps every key, foreign key and CD
is evaluated in SQLite with the statement itself.  The bound must never be below
the largest change seen, and a seeded search must reach it.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cqsens
from tests.conftest import scaled_examples
from tests.helpers import upper_of
from tests.oracle import Rows, sql_sensitivity

NEIGHBORS = ["add-remove", "substitute"]


def _keys_hold(db: Rows, names: tuple[str, ...]) -> bool:
    for name in names:
        keys = [row[0] for row in db[name]]
        if len(keys) != len(set(keys)):
            return False
    return True


def _random_database(rng: random.Random, candidates: Rows, ok: Callable[[Rows], bool]) -> Rows:
    while True:
        db = {name: rng.sample(rows, rng.randint(0, min(4, len(rows))))
              for name, rows in candidates.items()}
        if ok(db):
            return db


def _reached(sql: str, neighbor: str, bound: float, ddl: str, candidates: Rows,
             ok: Callable[[Rows], bool]) -> float:
    """The largest change a seeded search over 200 random databases finds (it stops at
    ``bound``)."""
    rng = random.Random(f"{sql} {neighbor}")
    best = 0.0
    for _ in range(200):
        db = _random_database(rng, candidates, ok)
        best = max(best, sql_sensitivity(ddl, [sql], db, candidates, ok, neighbor=neighbor)[0])
        if best >= bound:
            break
    return best


# ------------------------------------------------------------ two WITH tables exposing k

CTE_DDL = """
CREATE TABLE r (k INTEGER PRIMARY KEY, x INTEGER CHECK (x BETWEEN 0 AND 2));
CREATE TABLE s (k INTEGER PRIMARY KEY, y INTEGER CHECK (y BETWEEN 0 AND 2));
"""
CTE_CANDIDATES: Rows = {
    "r": [(k, x) for k in range(3) for x in (None, 0, 1, 2)],
    "s": [(k, y) for k in range(3) for y in (None, 0, 1, 2)],
}


def _cte_ok(db: Rows) -> bool:
    return _keys_hold(db, ("r", "s"))


cte_databases = st.fixed_dictionaries({
    name: st.lists(st.sampled_from(rows), max_size=4, unique=True)
    for name, rows in CTE_CANDIDATES.items()}).filter(_cte_ok)

CTE_CASES = [  # (statement, the same join written on the tables)
    ("WITH a AS (SELECT k, x FROM r), b AS (SELECT k, y FROM s) "
     "SELECT COUNT(*) FROM a JOIN b ON a.k = b.k",
     "SELECT COUNT(*) FROM r JOIN s ON r.k = s.k"),
    ("WITH a AS (SELECT k, x FROM r WHERE x > 0), b AS (SELECT k, y FROM s WHERE y > 0) "
     "SELECT COUNT(*) FROM a JOIN b ON a.k = b.k",
     "SELECT COUNT(*) FROM r JOIN s ON r.k = s.k WHERE r.x > 0 AND s.y > 0"),
    ("SELECT COUNT(*) FROM (SELECT k, x FROM r) a JOIN (SELECT k, y FROM s WHERE y > 0) b "
     "ON a.k = b.k",
     "SELECT COUNT(*) FROM r JOIN s ON r.k = s.k WHERE s.y > 0"),
    ("WITH a AS (SELECT k, x FROM r), b AS (SELECT k, y FROM s) "
     "SELECT SUM(a.x) FROM a JOIN b ON a.k = b.k",
     "SELECT SUM(r.x) FROM r JOIN s ON r.k = s.k"),
]


@pytest.mark.parametrize(("sql", "plain"), CTE_CASES)
@pytest.mark.parametrize("neighbor", NEIGHBORS)
def test_with_tables_read_as_the_join_they_name(sql: str, plain: str, neighbor: str) -> None:
    """Inlined, the WITH tables are the join of their tables: the same bounds, and a
    seeded search over random databases reaches the bound."""
    a = cqsens.analyze(sql, schema=CTE_DDL, neighbor=neighbor, prove_lower=False)
    b = cqsens.analyze(plain, schema=CTE_DDL, neighbor=neighbor, prove_lower=False)
    assert (a.upper, a.l1) == (b.upper, b.l1)
    assert a.l1 < float("inf")
    assert _reached(sql, neighbor, float(a.l1), CTE_DDL, CTE_CANDIDATES, _cte_ok) == a.l1


@pytest.mark.parametrize(("sql", "plain"), CTE_CASES)
@pytest.mark.parametrize("neighbor", NEIGHBORS)
@settings(max_examples=scaled_examples(15), deadline=None)
@given(db=cte_databases)
def test_with_table_bounds_are_sound(sql: str, plain: str, neighbor: str, db: Rows) -> None:
    a = upper_of(sql, CTE_DDL, neighbor)
    l1, l2 = sql_sensitivity(CTE_DDL, [sql], db, CTE_CANDIDATES, _cte_ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


def test_a_filter_on_k_stays_with_its_with_table() -> None:
    """``WHERE k = 1`` of b bounds s, not r: adding s(1, 0) meets every r row with x = 0,
    three here (it was 2, from r.k = 1 and s[y->k]<=2)."""
    sql = ("WITH a AS (SELECT k, x FROM r), b AS (SELECT k, y FROM s WHERE k = 1) "
           "SELECT COUNT(*) FROM a JOIN b ON a.x = b.y")
    cds = ["s[y->k]<=2"]
    a = cqsens.analyze(sql, schema=CTE_DDL, cds=cds, prove_lower=False)
    db: Rows = {"r": [(0, 0), (1, 0), (2, 0)], "s": []}
    l1, _ = sql_sensitivity(CTE_DDL, [sql], db, {"s": [(1, 0)]}, _cte_ok)
    assert l1 == 3
    assert a.upper >= l1


# ------------------------------------------------------------ NOT NULL foreign-key joins

FK_DDL = """
CREATE TABLE p (id INTEGER PRIMARY KEY, g INTEGER NOT NULL CHECK (g BETWEEN 0 AND 1));
CREATE TABLE q (id INTEGER PRIMARY KEY, pid INTEGER NOT NULL REFERENCES p (id),
                v INTEGER NOT NULL CHECK (v BETWEEN 0 AND 2),
                o INTEGER REFERENCES p (id));
"""
FK_CANDIDATES: Rows = {
    "p": [(i, g) for i in range(3) for g in (0, 1)],
    "q": [(i, pid, v, o) for i in range(3) for pid in range(3) for v in (0, 2)
          for o in (None, 0, 1)],
}


def _fk_ok(db: Rows) -> bool:
    """Keys, both foreign keys, q[pid->id]<=2."""
    if not _keys_hold(db, ("p", "q")):
        return False
    ids = {row[0] for row in db["p"]}
    if any(pid not in ids or (o is not None and o not in ids) for _, pid, _, o in db["q"]):
        return False
    per: dict[object, int] = {}
    for _, pid, _, _ in db["q"]:
        per[pid] = per.get(pid, 0) + 1
    return all(n <= 2 for n in per.values())


fk_databases = st.fixed_dictionaries({
    "p": st.lists(st.sampled_from(FK_CANDIDATES["p"]), max_size=3, unique=True),
    "q": st.lists(st.sampled_from(FK_CANDIDATES["q"]), max_size=4, unique=True),
}).filter(_fk_ok)

FK_CDS = ["q[pid->id]<=2"]
INF = float("inf")
# (statement, substitution bound before rule foreign-key-joins, now, the brute-force truth)
FK_CASES = [
    ("SELECT COUNT(*) FROM q JOIN p ON p.id = q.pid", 2, 0, 0),
    ("SELECT COUNT(*) FROM p JOIN q ON q.pid = p.id WHERE q.v = 2", 2, 1, 1),
    ("SELECT COUNT(*) FROM q WHERE EXISTS (SELECT 1 FROM p WHERE p.id = q.pid)", 2, 0, 0),
    ("SELECT SUM(q.v) FROM q JOIN p ON p.id = q.pid", 4, 2, 2),
    # kept: a filter on p (a changed g moves both q rows of p), a nullable foreign key
    # (a NULL o meets no p row; sound, not tight), a semi-join that counts p's rows (the
    # smaller query would count the distinct pid of q, not q's rows)
    ("SELECT COUNT(*) FROM p WHERE EXISTS (SELECT 1 FROM q WHERE q.pid = p.id)", 1, 1, 1),
    ("SELECT COUNT(*) FROM q JOIN p ON p.id = q.pid WHERE p.g = 1", 2, 2, 2),
    ("SELECT COUNT(*) FROM q JOIN p ON p.id = q.o", INF, INF, 1),
]


@pytest.mark.parametrize(("sql", "before", "now", "truth"), FK_CASES)
def test_foreign_key_joins_under_substitution(sql: str, before: float, now: float,
                                              truth: int) -> None:
    """The bound is the table's; the truth, found by a seeded search, is never above it."""
    a = cqsens.analyze(sql, schema=FK_DDL, cds=FK_CDS, neighbor="substitute",
                       prove_lower=False)
    assert a.l1 == now <= before
    assert _reached(sql, "substitute", truth, FK_DDL, FK_CANDIDATES, _fk_ok) == truth <= now
    dropped = any("foreign-key-joins" in n for n in a.notes)
    assert dropped == (now < before)


@pytest.mark.parametrize(("sql", "before", "now", "truth"), FK_CASES)
@pytest.mark.parametrize("neighbor", NEIGHBORS)
@settings(max_examples=scaled_examples(15), deadline=None)
@given(db=fk_databases)
def test_foreign_key_join_bounds_are_sound(sql: str, before: float, now: float, truth: int,
                                           neighbor: str, db: Rows) -> None:
    a = upper_of(sql, FK_DDL, neighbor, tuple(FK_CDS))
    l1, l2 = sql_sensitivity(FK_DDL, [sql], db, FK_CANDIDATES, _fk_ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


def test_foreign_key_join_without_a_dependency() -> None:
    """No CD: the join was ∞ under substitution (a changed p row was taken to move every
    q row referencing it); it counts q's rows, which a change keeps."""
    a = cqsens.analyze(FK_CASES[0][0], schema=FK_DDL, neighbor="substitute")
    assert (a.upper, a.lower) == (0, 0)


# ------------------------------------------------------------ tables with finitely many rows

FINITE_DDL = """
CREATE TABLE u (k INTEGER PRIMARY KEY CHECK (k IN (1, 2)), name TEXT);
CREATE TABLE f (x TEXT PRIMARY KEY, k INTEGER);
CREATE TABLE r (k INT PRIMARY KEY CHECK (k BETWEEN 1 AND 2), name TEXT);
"""
FINITE_CANDIDATES: Rows = {
    "u": [(k, n) for k in (1, 2) for n in (None, "a", "b")],
    "f": [(x, k) for x in ("a", "b", "c") for k in (None, 1)],
    "r": [(k, n) for k in (1, 1.5, 2) for n in ("a", "b")],
}


def _finite_ok(db: Rows) -> bool:
    return _keys_hold(db, ("u", "f", "r"))


finite_databases = st.fixed_dictionaries({
    name: st.lists(st.sampled_from(rows), max_size=4, unique=True)
    for name, rows in FINITE_CANDIDATES.items()}).filter(_finite_ok)

# (statement, add-remove bound before rule finite-tables, now, tight now)
FINITE_CASES = [
    ("SELECT COUNT(*) FROM f JOIN u ON f.x = u.name", INF, 2, True),
    ("SELECT COUNT(*) FROM u a JOIN u b ON a.name = b.name", INF, 3, True),
    ("SELECT COUNT(DISTINCT u.k) FROM f JOIN u ON f.x = u.name", 2, 2, True),  # finite-domains
    # a range on an INT key: 1.5 is a key too (SQLite stores it), so no finite table
    ("SELECT COUNT(*) FROM f JOIN r ON f.x = r.name", INF, INF, False),
]


@pytest.mark.parametrize(("sql", "before", "now", "tight"), FINITE_CASES)
def test_finite_tables_bound_the_fan_out(sql: str, before: float, now: float,
                                         tight: bool) -> None:
    a = cqsens.analyze(sql, schema=FINITE_DDL, prove_lower=False)
    assert a.l1 == now <= before
    assert any("u holds at most 2 row(s)" in n for n in a.notes) == (" u " in sql)
    if tight:
        assert _reached(sql, "add-remove", now, FINITE_DDL, FINITE_CANDIDATES,
                        _finite_ok) == now


def test_a_range_on_an_int_key_admits_more_rows_than_its_integers() -> None:
    """SQLite keeps r(1), r(1.5), r(2) under CHECK (k BETWEEN 1 AND 2): adding f('a')
    meets three rows, more than the two integers of the range."""
    sql = FINITE_CASES[3][0]
    db: Rows = {"u": [], "f": [], "r": [(1, "a"), (1.5, "a"), (2, "a")]}
    l1, _ = sql_sensitivity(FINITE_DDL, [sql], db, {"f": [("a", None)]}, _finite_ok)
    assert l1 == 3


@pytest.mark.parametrize(("sql", "before", "now", "tight"), FINITE_CASES)
@pytest.mark.parametrize("neighbor", NEIGHBORS)
@settings(max_examples=scaled_examples(15), deadline=None)
@given(db=finite_databases)
def test_finite_table_bounds_are_sound(sql: str, before: float, now: float, tight: bool,
                                       neighbor: str, db: Rows) -> None:
    a = upper_of(sql, FINITE_DDL, neighbor)
    l1, l2 = sql_sensitivity(FINITE_DDL, [sql], db, FINITE_CANDIDATES, _finite_ok,
                             neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9
