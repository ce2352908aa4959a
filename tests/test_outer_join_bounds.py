"""The tighter outer-join bounds, checked by brute force (docs/rules.md, rule outer-joins).

Two refinements of the signed sum inner + preserved − semi-join:

* a LEFT JOIN on a key of its table matches at most once, so the term joining it
  and the term with EXISTS in its place are equal and cancel;
* counts and non-negative sums over outer joins only grow when a row is added, so
  under add-remove only the added terms' bounds count, and with one preserved
  table and one LEFT JOIN the larger of the inner join's and the preserved
  table's bound is enough.

Random small databases (keyed tables, a foreign key, a keyless bag, NULLs) are
built in SQLite; every neighbour (add-remove and substitution) that keeps every
key, CD and foreign key is evaluated with the statement itself.  The bound must
never be below the largest change seen, and on the cases marked tight a seeded
search over random databases must find a change equal to the bound.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cqsens
from tests.conftest import scaled_examples
from tests.oracle import Rows, sql_sensitivity
from tests.test_outer_joins import CASES as OUTER
from tests.test_union import CANDIDATES as UNION_CANDIDATES
from tests.test_union import CDS as UNION_CDS
from tests.test_union import DDL as UNION_DDL
from tests.test_union import _ok as union_ok
from tests.test_union import databases as union_databases

DDL = """
CREATE TABLE p (id INTEGER PRIMARY KEY, g INTEGER NOT NULL CHECK (g BETWEEN 0 AND 1),
                w INTEGER CHECK (w BETWEEN 0 AND 3));
CREATE TABLE q (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p (id),
                v INTEGER NOT NULL CHECK (v BETWEEN -1 AND 2));
CREATE TABLE b (x INTEGER CHECK (x BETWEEN 0 AND 2), y INTEGER CHECK (y BETWEEN 0 AND 2));
"""
CDS = ["q[pid->id]<=2", "b[x->*]<=2"]
CANDIDATES: Rows = {
    "p": [(i, g, w) for i in range(3) for g in (0, 1) for w in (None, 0, 3)],
    "q": [(i, pid, v) for i in range(4) for pid in (None, 0, 1) for v in (-1, 2)],
    "b": [(x, y) for x in (None, 0, 1) for y in (None, 0, 2)],
}


def _ok(db: Rows) -> bool:
    """Keys, the foreign key q.pid → p.id, q[pid->id]<=2 and b[x->*]<=2 (NULL counted too)."""
    for name in ("p", "q"):
        keys = [row[0] for row in db[name]]
        if len(keys) != len(set(keys)):
            return False
    ids = {row[0] for row in db["p"]}
    if any(pid is not None and pid not in ids for _, pid, _ in db["q"]):
        return False
    per: dict[tuple[str, object], int] = {}
    for _, pid, _ in db["q"]:
        if pid is not None:
            per["q", pid] = per.get(("q", pid), 0) + 1
    for x, _ in db["b"]:
        per["b", x] = per.get(("b", x), 0) + 1
    return all(n <= 2 for n in per.values())


databases = st.fixed_dictionaries({
    "p": st.lists(st.sampled_from(CANDIDATES["p"]), max_size=3, unique=True),
    "q": st.lists(st.sampled_from(CANDIDATES["q"]), max_size=4, unique=True),
    "b": st.lists(st.sampled_from(CANDIDATES["b"]), max_size=4),
}).filter(_ok)

# (statement, tight under add-remove, tight under substitution)
CASES = [
    # a key join (p.id): the query is COUNT(*) FROM q
    ("SELECT COUNT(*) FROM q LEFT JOIN p ON p.id = q.pid", True, True),
    ("SELECT COUNT(*) FROM b LEFT JOIN p ON p.id = b.x AND p.g = b.y", True, True),
    ("SELECT p.g AS g, COUNT(*) FROM q RIGHT JOIN p ON p.id = q.pid GROUP BY p.g", True, False),
    # one preserved table, one LEFT JOIN: the larger of inner join and preserved table
    ("SELECT COUNT(*) FROM p LEFT JOIN b ON b.x = p.id", True, False),
    ("SELECT p.g AS g, COUNT(*), SUM(p.w) FROM p LEFT JOIN b ON b.x = p.id GROUP BY p.g",
     True, False),
    ("SELECT COUNT(*) FROM b RIGHT JOIN p ON b.x = p.id", True, False),
    # several LEFT JOINs, a chain through a key, FULL JOIN: sound, not claimed tight
    ("SELECT COUNT(*) FROM p LEFT JOIN q ON q.pid = p.id LEFT JOIN b ON b.x = p.id",
     False, False),
    ("SELECT SUM(b.y) FROM b LEFT JOIN p ON p.id = b.x LEFT JOIN q ON q.pid = p.id",
     False, False),
    ("SELECT COUNT(*) FROM p FULL JOIN b ON b.x = p.id", False, False),
    # a sum that may be negative: not monotone, but one LEFT JOIN: the larger of the inner
    # join's and q's bounds under add-remove (4, not 10); q references p, so substitution
    # is not two add-remove steps (15, the sum of every term)
    ("SELECT SUM(q.v) FROM q LEFT JOIN b ON b.x = q.pid", True, False),
]
NEIGHBORS = ["add-remove", "substitute"]


def _analysis(sql: str, neighbor: str, ddl: str = DDL,
              cds: list[str] | None = None) -> cqsens.Analysis:
    """The statement's analysis, once per process for each (statement, neighbours, schema,
    CDs): a property's random databases do not change it."""
    return _analysed(sql, neighbor, ddl, tuple(CDS if cds is None else cds))


@functools.cache
def _analysed(sql: str, neighbor: str, ddl: str, cds: tuple[str, ...]) -> cqsens.Analysis:
    return cqsens.analyze(sql, schema=ddl, cds=list(cds), neighbor=neighbor, prove_lower=False)


@pytest.mark.parametrize(("sql", "tight_ar", "tight_sub"), CASES)
@pytest.mark.parametrize("neighbor", NEIGHBORS)
@settings(max_examples=scaled_examples(15), deadline=None)
@given(db=databases)
def test_outer_join_bounds_are_sound(sql: str, tight_ar: bool, tight_sub: bool,
                                     neighbor: str, db: Rows) -> None:
    a = _analysis(sql, neighbor)
    l1, l2 = sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


def _random_database(rng: random.Random, candidates: Rows, ok: Callable[[Rows], bool],
                     bags: tuple[str, ...]) -> Rows:
    while True:
        db = {name: [rng.choice(rows) for _ in range(rng.randint(0, 4))] if name in bags
              else rng.sample(rows, rng.randint(0, 4)) for name, rows in candidates.items()}
        if ok(db):
            return db


def _reached(sql: str, neighbor: str, bound: float, ddl: str, candidates: Rows,
             ok: Callable[[Rows], bool], bags: tuple[str, ...]) -> float:
    """The largest change a seeded search over 300 random databases finds (it stops at
    ``bound``)."""
    rng = random.Random(f"{sql} {neighbor}")
    best = 0.0
    for _ in range(300):
        db = _random_database(rng, candidates, ok, bags)
        best = max(best, sql_sensitivity(ddl, [sql], db, candidates, ok, neighbor=neighbor)[0])
        if best >= bound:
            break
    return best


@pytest.mark.parametrize(("sql", "neighbor"), [
    (sql, n) for sql, ar, sub in CASES for n, tight in zip(NEIGHBORS, (ar, sub), strict=True)
    if tight])
def test_outer_join_bounds_are_reached(sql: str, neighbor: str) -> None:
    """A neighbour of a random database changes the statement by exactly the bound."""
    a = _analysis(sql, neighbor)
    assert _reached(sql, neighbor, float(a.l1), DDL, CANDIDATES, _ok, ("b",)) == a.l1


# the schema of tests/test_outer_joins.py: no foreign key, so substitution goes in two steps
REACHED_WITHOUT_FK = [
    (OUTER[0], "add-remove"), (OUTER[2], "add-remove"), (OUTER[4], "add-remove"),
    (OUTER[4], "substitute"), (OUTER[9], "add-remove"), (OUTER[9], "substitute"),
    (OUTER[10], "add-remove"),
    # signed SUM(r.b) beside COUNT(*), one LEFT JOIN: 6 (add-remove) and 12 (substitution)
    (OUTER[12], "add-remove"), (OUTER[12], "substitute"),
]


@pytest.mark.parametrize(("sql", "neighbor"), REACHED_WITHOUT_FK)
def test_outer_join_bounds_are_reached_without_foreign_keys(sql: str, neighbor: str) -> None:
    a = _analysis(sql, neighbor, UNION_DDL, UNION_CDS)
    assert _reached(sql, neighbor, float(a.l1), UNION_DDL, UNION_CANDIDATES, union_ok,
                    ("u",)) == a.l1


def test_substitution_in_two_steps_needs_no_foreign_key() -> None:
    """With a foreign key, removing a referenced row leaves the class: the two-step
    bound is not used (brute force: changing p's group moves its two q rows)."""
    sql = "SELECT p.g AS g, COUNT(*) FROM p LEFT JOIN q ON q.pid = p.id GROUP BY p.g"
    a = _analysis(sql, "substitute")
    steps = _analysis(sql, "add-remove")
    db: Rows = {"p": [(0, 0, None)], "q": [(0, 0, 2), (1, 0, 2)], "b": []}
    l1, _ = sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok, neighbor="substitute")
    assert l1 > 2 * steps.l1 and l1 <= a.l1


# ---------------------------------------------------------------- parts that read other tables

BY_TABLE = [  # (statement, the statements released side by side, for the brute force)
    ("SELECT COUNT(*) FROM (SELECT r.a AS v FROM r UNION ALL SELECT s.c FROM s "
     "UNION ALL SELECT u.x FROM u) AS t", []),
    ("SELECT COUNT(*) FROM r UNION ALL SELECT COUNT(*) FROM s UNION ALL SELECT SUM(u.x) FROM u",
     ["SELECT COUNT(*) FROM r", "SELECT COUNT(*) FROM s", "SELECT SUM(u.x) FROM u"]),
    ("SELECT COUNT(*) FROM (SELECT r.a FROM r UNION SELECT s.c FROM s JOIN r ON s.r = r.k "
     "UNION SELECT u.x FROM u) AS t", []),
]


@pytest.mark.parametrize(("sql", "sides"), BY_TABLE)
@pytest.mark.parametrize("neighbor", NEIGHBORS)
@settings(max_examples=scaled_examples(15), deadline=None)
@given(db=union_databases)
def test_parts_of_other_tables_do_not_add_up(sql: str, sides: list[str], neighbor: str,
                                             db: Rows) -> None:
    """A row of one table changes only the parts that read it (docs/rules.md, rule
    set-operations, 5)."""
    a = _analysis(sql, neighbor, UNION_DDL, UNION_CDS)
    l1, l2 = sql_sensitivity(UNION_DDL, sides or [sql], db, UNION_CANDIDATES, union_ok,
                             neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


@pytest.mark.parametrize(("sql", "sides"), BY_TABLE[:2])
def test_parts_of_other_tables_reach_the_bound(sql: str, sides: list[str]) -> None:
    """Measured: 1 row of u moves the vector by 3 (SUM(u.x)), not 1 + 1 + 3."""
    a = _analysis(sql, "add-remove", UNION_DDL, UNION_CDS)
    rng = random.Random(sql)
    best = 0.0
    for _ in range(300):
        db = _random_database(rng, UNION_CANDIDATES, union_ok, ("u",))
        best = max(best, sql_sensitivity(UNION_DDL, sides or [sql], db, UNION_CANDIDATES,
                                         union_ok)[0])
        if best >= a.l1:
            break
    assert best == a.l1


SHADOW = ("WITH r AS (SELECT s.r AS k, s.c AS a, s.c AS b FROM s) "
          "SELECT COUNT(*) FROM u LEFT JOIN r ON r.k = u.y")


@pytest.mark.parametrize("neighbor", NEIGHBORS)
@settings(max_examples=scaled_examples(15), deadline=None)
@given(db=union_databases)
def test_a_with_table_named_like_a_keyed_table_is_not_keyed(neighbor: str, db: Rows) -> None:
    """``r`` is a WITH table over s here, not the table r: s.r is no key, so the LEFT JOIN
    is not dropped and the count is not read as monotone in the table r's columns."""
    a = _analysis(SHADOW, neighbor, UNION_DDL, UNION_CDS)
    l1, _ = sql_sensitivity(UNION_DDL, [SHADOW], db, UNION_CANDIDATES, union_ok,
                            neighbor=neighbor)
    assert l1 <= a.l1


def test_a_with_table_named_like_a_keyed_table_moves_by_two() -> None:
    """Two u rows of y = 1 and one s row of r = 1: a second s row of r = 1 gives each u
    row a second match (the dropped join would have claimed 1)."""
    a = _analysis(SHADOW, "add-remove", UNION_DDL, UNION_CDS)
    db: Rows = {"r": [], "s": [(0, 1, 1)], "u": [(0, 1), (3, 1)]}
    l1, _ = sql_sensitivity(UNION_DDL, [SHADOW], db, UNION_CANDIDATES, union_ok)
    assert l1 == 2 <= a.l1
