"""Semi-joins under OR and NOT, and COUNT(*) over EXCEPT (issue 23, items 5 and 6; docs/rules.md,
rules semi-join-flips and set-operations): the bound checked against brute force in SQLite on
small random databases, every row (row level) or every person (person level) removed, and a
sample of rows added, each neighbour kept only when it satisfies every declared constraint."""

from __future__ import annotations

import math
import random
import sqlite3
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqsens import analyze
from cqsens.errors import InputError
from cqsens.witness.evaluate import Database
from tests.conftest import scaled_examples
from tests.helpers import release_json, released_rows, write_db

ROWS = """
CREATE TABLE r (id INTEGER PRIMARY KEY, a INTEGER NOT NULL CHECK (a BETWEEN 1 AND 3),
                g INTEGER NOT NULL CHECK (g BETWEEN 1 AND 2),
                v INTEGER NOT NULL CHECK (v BETWEEN -2 AND 3));
CREATE TABLE s (id INTEGER PRIMARY KEY, b INTEGER CHECK (b BETWEEN 1 AND 3),
                w INTEGER NOT NULL CHECK (w BETWEEN 1 AND 2));
CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER NOT NULL CHECK (a BETWEEN 1 AND 3),
                w INTEGER NOT NULL CHECK (w BETWEEN 1 AND 2));
"""
ROW_CDS = ["r[a->id]<=3", "s[b->id]<=2", "t[a->id]<=2"]
_LIMITS = {("r", "a"): 3, ("s", "b"): 2, ("t", "a"): 2}
_DOMAINS = {"r": [(a, g, v) for a in (1, 2, 3) for g in (1, 2) for v in range(-2, 4)],
            "s": [(b, w) for b in (None, 1, 2, 3) for w in (1, 2)],
            "t": [(a, w) for a in (1, 2, 3) for w in (1, 2)]}
_KEYED = {"r": 0, "s": 0, "t": 0}  # the CD's column, position after the id

ROW_LEVEL = [
    # NOT EXISTS: an added t row flips the r rows of its value of a
    "SELECT COUNT(*) FROM r WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.a = r.a)",
    # OR of two EXISTS, a <> inside the second subquery
    "SELECT COUNT(*) FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.b = r.a) "
    "OR EXISTS (SELECT 1 FROM t WHERE t.a = r.a AND t.w <> r.g)",
    # NOT IN over a NOT NULL column, SUM of signed values
    "SELECT SUM(r.v) FROM r WHERE r.a NOT IN (SELECT t.a FROM t WHERE t.w = 1)",
    # NOT IN over a nullable column whose NULLs the subquery's WHERE rejects, a histogram
    "SELECT r.g, COUNT(*) FROM r WHERE r.a NOT IN (SELECT s.b FROM s WHERE s.b > 1) "
    "GROUP BY r.g",
    # count(DISTINCT), SUM and a plain predicate beside NOT EXISTS, grouped
    "SELECT r.g, COUNT(DISTINCT r.a), SUM(r.v) FROM r WHERE r.v > 0 OR NOT EXISTS "
    "(SELECT 1 FROM s WHERE s.b = r.a AND s.w <> r.g) GROUP BY r.g",
    # IN and NOT EXISTS under NOT / OR together
    "SELECT COUNT(DISTINCT r.a) FROM r WHERE NOT (r.a IN (SELECT t.a FROM t) "
    "AND NOT EXISTS (SELECT 1 FROM s WHERE s.b = r.a))",
    # LEFT JOIN … IS NULL (an anti-join, read by rule outer-joins) beside the flips' route
    "SELECT COUNT(*) FROM r LEFT JOIN t ON t.a = r.a WHERE t.id IS NULL",
    "SELECT r.g, SUM(r.v) FROM r LEFT JOIN s ON s.b = r.a AND s.w = r.g "
    "WHERE s.w IS NULL GROUP BY r.g",
    # COUNT(*) over EXCEPT of set-semantics branches
    "SELECT COUNT(*) FROM (SELECT DISTINCT r.a, r.g FROM r EXCEPT "
    "SELECT DISTINCT t.a, t.w FROM t EXCEPT SELECT s.b, s.w FROM s) AS x",
    # EXCEPT then UNION (left to right), a histogram of the result
    "SELECT x.a, COUNT(*) FROM (SELECT r.a FROM r EXCEPT SELECT t.a FROM t "
    "UNION SELECT s.b FROM s WHERE s.w = 2) AS x GROUP BY x.a",
]


def _cds_hold(db: dict[str, list[tuple[object, ...]]]) -> bool:
    for (table, _), k in _LIMITS.items():
        values = [row[1] for row in db[table] if row[1] is not None]
        if any(values.count(v) > k for v in set(values)):
            return False
    return True


def _random_db(rng: random.Random) -> dict[str, list[tuple[object, ...]]]:
    while True:
        db: dict[str, list[tuple[object, ...]]] = {}
        for table, domain in _DOMAINS.items():
            picks = [rng.choice(domain) for _ in range(rng.randint(0, 5))]
            db[table] = [(i + 1, *row) for i, row in enumerate(picks)]
        if _cds_hold(db):
            return db


#: One in-memory database per schema, emptied and refilled for each database checked
#: (creating the tables anew for each of the ~10,000 neighbours was a third of the time).
_SCHEMAS: dict[str, tuple[sqlite3.Connection, list[str]]] = {}


def _conn(db: dict[str, list[tuple[object, ...]]], ddl: str) -> sqlite3.Connection:
    """A connection whose tables (``ddl``, CHECKs enforced) hold exactly ``db``; valid until
    the next call."""
    if ddl not in _SCHEMAS:
        conn = sqlite3.connect(":memory:")
        conn.executescript(ddl)
        names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        _SCHEMAS[ddl] = conn, [name for (name,) in names]
    conn, tables = _SCHEMAS[ddl]
    for table in tables:
        conn.execute(f"DELETE FROM {table}")
    for table, rows in db.items():
        for row in rows:
            conn.execute(f"INSERT INTO {table} VALUES ({', '.join('?' for _ in row)})", row)
    conn.commit()
    return conn


def _released(conn: sqlite3.Connection, sql: str) -> dict[tuple[object, ...], Fraction]:
    """The released values: per group (the leading non-aggregate columns), per aggregate."""
    out: dict[tuple[object, ...], Fraction] = {}
    grouped = sql.lstrip().upper().startswith(("SELECT R.G,", "SELECT X.A,"))
    for row in conn.execute(sql).fetchall():
        key, values = (row[:1], row[1:]) if grouped else ((), row)
        for j, value in enumerate(values):
            out[(*key, j)] = Fraction(value or 0)
    return out


def _l1(before: dict[tuple[object, ...], Fraction],
        after: dict[tuple[object, ...], Fraction]) -> Fraction:
    return sum((abs(after.get(k, Fraction(0)) - before.get(k, Fraction(0)))
                for k in before.keys() | after.keys()), Fraction(0))


def _row_neighbours(db: dict[str, list[tuple[object, ...]]], rng: random.Random
                    ) -> Iterator[dict[str, list[tuple[object, ...]]]]:
    for table, rows in db.items():
        for i in range(len(rows)):
            yield {**db, table: rows[:i] + rows[i + 1:]}
    for table, domain in _DOMAINS.items():
        for row in rng.sample(domain, 4):
            grown = {**db, table: [*db[table], (100, *row)]}
            if _cds_hold(grown):
                yield grown


def _witness_pair(witness: object, ddl: str) -> list[sqlite3.Connection]:
    """The witness's two databases, each loaded into SQLite with ``ddl``."""
    assert witness is not None
    out = []
    for d in (witness.database, witness.after):  # type: ignore[attr-defined]
        assert isinstance(d, Database)
        conn = sqlite3.connect(":memory:")
        conn.executescript(ddl)
        for relation, rows in d.rows.items():
            marks = ", ".join("?" for _ in d.columns[relation])
            conn.executemany(f"INSERT INTO {relation} VALUES ({marks})", list(rows))
        out.append(conn)
    return out


def _check_witness(sql: str, lower: object, witness: object, ddl: str) -> None:
    """A reported lower bound is the change of the statement as written on its witness."""
    assert witness is not None
    pair = [_released(conn, sql) for conn in _witness_pair(witness, ddl)]
    assert _l1(*pair) == Fraction(str(lower))


@pytest.mark.parametrize("sql", ROW_LEVEL)
def test_row_level_bound_holds_against_brute_force(sql: str) -> None:
    a = analyze(sql, schema=ROWS, cds=ROW_CDS)
    rule = ("set-operations" if "EXCEPT" in sql else "outer-joins" if "LEFT JOIN" in sql
            else "semi-join-flips")
    assert any(rule in line for line in a.explanation)
    assert a.upper != math.inf
    if a.lower is not None and a.lower != 0:
        _check_witness(sql, a.lower, a.witness, ROWS)
    rng = random.Random(sql)
    worst = Fraction(0)
    for _ in range(120):
        db = _random_db(rng)
        base = _released(_conn(db, ROWS), sql)
        for other in _row_neighbours(db, rng):
            worst = max(worst, _l1(base, _released(_conn(other, ROWS), sql)))
    assert worst <= a.upper, (worst, a.upper)
    assert worst > 0  # the brute force exercised the condition


def test_not_in_over_a_nullable_column_is_unbounded_and_really_is() -> None:
    """One s row with a NULL b makes ``r.a NOT IN (SELECT s.b FROM s)`` unknown for every r
    row: the IN's NULL case is a part of its own, unbounded without a bound on r."""
    sql = "SELECT COUNT(*) FROM r WHERE r.a NOT IN (SELECT s.b FROM s)"
    a = analyze(sql, schema=ROWS, cds=ROW_CDS)
    assert a.upper == math.inf
    assert any("a NULL s.b in the subquery" in line for line in a.explanation)
    db = {"r": [(i, 1 + i % 3, 1, 0) for i in range(1, 10)], "s": [], "t": []}
    before = _released(_conn(db, ROWS), sql)
    after = _released(_conn({**db, "s": [(1, None, 1)]}, ROWS), sql)
    assert _l1(before, after) == 9  # every r row: grows with r


def test_substitution_is_refused_with_the_rule() -> None:
    """The flips are counted by the parts' growth, which add-remove neighbours give (each
    semi-join only gains, or only loses, rows); below EXCEPT a removal may add result rows
    as an addition does: both are refused under substitution, by name."""
    with pytest.raises(InputError, match="semi-join-flips"):
        analyze(ROW_LEVEL[0], schema=ROWS, cds=ROW_CDS, neighbor="substitute")
    with pytest.raises(InputError, match="set-operations"):
        analyze(next(q for q in ROW_LEVEL if "EXCEPT" in q), schema=ROWS, cds=ROW_CDS,
                neighbor="substitute")


def test_an_aggregating_subquery_under_not_is_refused_by_name() -> None:
    sql = ("SELECT COUNT(*) FROM r WHERE NOT EXISTS (SELECT t.a FROM t GROUP BY t.a "
           "HAVING COUNT(*) > 1 AND t.a = r.a)")
    with pytest.raises(InputError, match="NOT EXISTS .subquery. under OR / NOT"):
        analyze(sql, schema=ROWS, cds=ROW_CDS)


def test_a_with_table_inside_the_atom_is_refused_by_name() -> None:
    """A WITH table may aggregate (no monotone semi-join): refused, not read as a table."""
    sql = ("WITH w AS (SELECT t.a FROM t GROUP BY t.a HAVING COUNT(*) > 1) "
           "SELECT COUNT(*) FROM r WHERE NOT EXISTS (SELECT 1 FROM w WHERE w.a = r.a)")
    with pytest.raises(InputError, match="a WITH table in the subquery"):
        analyze(sql, schema=ROWS, cds=ROW_CDS)


def test_median_is_refused_by_name() -> None:
    sql = "SELECT MEDIAN(r.v) FROM r WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.a = r.a)"
    with pytest.raises(InputError, match="MEDIAN"):
        analyze(sql, schema=ROWS, cds=ROW_CDS)


# -- MIN, MAX and AVG: every touched group moves by at most M − m -----------------------------

#: (statement, positions of its MIN/MAX/AVG columns among the released values)
VALUE_LEVEL = [
    ("SELECT MIN(r.v) FROM r WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.a = r.a)", {0}),
    # one t row flips up to three r rows, in both groups
    ("SELECT r.g, MIN(r.v), MAX(r.v) FROM r WHERE NOT EXISTS (SELECT 1 FROM t "
     "WHERE t.a = r.a) GROUP BY r.g", {0, 1}),
    ("SELECT r.g, MAX(r.v), AVG(r.v) FROM r WHERE r.v > 0 OR NOT EXISTS (SELECT 1 FROM s "
     "WHERE s.b = r.a AND s.w <> r.g) GROUP BY r.g", {0, 1}),
    ("SELECT r.g, AVG(r.v), COUNT(*) FROM r WHERE r.a NOT IN (SELECT t.a FROM t "
     "WHERE t.w = 1) GROUP BY r.g", {0}),
    ("SELECT AVG(r.v), SUM(r.v) FROM r WHERE r.a IN (SELECT t.a FROM t) "
     "OR EXISTS (SELECT 1 FROM s WHERE s.b = r.a)", {0}),
]


def _value_l1(before: dict[tuple[object, ...], Fraction | None],
              after: dict[tuple[object, ...], Fraction | None], values: set[int]) -> Fraction:
    """ℓ1 distance, a MIN/MAX/AVG entry counted only where it is defined on both sides (the
    rules' assumption), a count or sum entry of a missing group counted as 0."""
    total = Fraction(0)
    for key in before.keys() | after.keys():
        x, y = before.get(key), after.get(key)
        if key[-1] in values:
            if x is not None and y is not None:
                total += abs(y - x)
        else:
            total += abs((y or Fraction(0)) - (x or Fraction(0)))
    return total


def _value_released(conn: sqlite3.Connection, sql: str
                    ) -> dict[tuple[object, ...], Fraction | None]:
    out: dict[tuple[object, ...], Fraction | None] = {}
    grouped = sql.upper().startswith(("SELECT R.G,", "SELECT U.AGE,"))
    for row in conn.execute(sql).fetchall():
        key, values = (row[:1], row[1:]) if grouped else ((), row)
        for j, value in enumerate(values):
            out[(*key, j)] = None if value is None else Fraction(value)
    return out


@pytest.mark.parametrize(("sql", "values"), VALUE_LEVEL)
def test_min_max_avg_row_level_bound_holds_against_brute_force(sql: str, values: set[int]
                                                               ) -> None:
    a = analyze(sql, schema=ROWS, cds=ROW_CDS)
    assert any("semi-join-flips" in line for line in a.explanation)
    assert a.upper != math.inf
    rng = random.Random(sql)
    worst = Fraction(0)
    for _ in range(120):
        db = _random_db(rng)
        base = _value_released(_conn(db, ROWS), sql)
        for other in _row_neighbours(db, rng):
            worst = max(worst, _value_l1(base, _value_released(_conn(other, ROWS), sql), values))
    assert worst <= a.upper, (worst, a.upper)
    assert worst > 0
    assert a.lower is not None and 0 < a.lower <= a.upper
    # the lower bound is the statement's own change on its witness (AVG as a float)
    pair = [_value_released(conn, sql) for conn in _witness_pair(a.witness, ROWS)]
    assert abs(_value_l1(*pair, values) - Fraction(str(a.lower))) < Fraction(1, 10**9)


def test_avg_is_bounded_as_min_in_the_parts() -> None:
    """AVG's add-remove refinement D/(D + 1)·(M − m) needs rows only added: a flip removes
    rows as it adds others, so each part reads AVG as MIN (M − m per touched group)."""
    sql = VALUE_LEVEL[3][0]
    a = analyze(sql, schema=ROWS, cds=ROW_CDS)
    parts = [line for line in a.explanation if line.startswith(("Without", "Rows flipped"))]
    assert parts and all("MIN(r.v)" in line and "AVG" not in line.split(" — ")[0]
                         for line in parts)
    # r.v in [-2, 3]: a touched group's average moves by at most 5, the count by its rows
    assert a.upper >= 5 + 1


# -- person level -----------------------------------------------------------------------------

PERSONS = """
CREATE TABLE users (id INTEGER PRIMARY KEY, age INTEGER NOT NULL CHECK (age BETWEEN 0 AND 3));
CREATE TABLE orders (oid INTEGER PRIMARY KEY, uid INTEGER NOT NULL REFERENCES users(id),
                     total INTEGER NOT NULL CHECK (total BETWEEN 0 AND 3),
                     ship INTEGER CHECK (ship BETWEEN 0 AND 3));
CREATE TABLE items (iid INTEGER PRIMARY KEY, oid INTEGER NOT NULL REFERENCES orders(oid),
                    q INTEGER NOT NULL CHECK (q BETWEEN 0 AND 3));
"""
PERSON_CDS = ["orders[uid->oid]<=2", "items[oid->iid]<=3", "users[age->id]<=2",
              "orders[total->oid]<=3", "items[q->iid]<=4"]

PERSON_LEVEL = [
    # q10's shape: a person-local EXISTS, and an OR of a person-local one with one that
    # reads other persons' orders (ship is not an owner key)
    "SELECT COUNT(*) FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.uid = u.id) "
    "AND (EXISTS (SELECT 1 FROM orders o2 WHERE o2.uid = u.id AND o2.total > 1) "
    "OR EXISTS (SELECT 1 FROM orders o3 WHERE o3.total = u.age))",
    # q69's shape: NOT EXISTS AND NOT EXISTS, one anchored, one not
    "SELECT SUM(u.age) FROM users u WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.uid = u.id) "
    "AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.total = u.age)",
    # q16's shape: count(DISTINCT) of orders with an EXISTS on another line of the order,
    # a <> inside, and a NOT EXISTS over other persons' orders
    "SELECT COUNT(DISTINCT i.oid), SUM(i.q) FROM items i WHERE EXISTS (SELECT 1 FROM items j "
    "WHERE j.oid = i.oid AND j.iid <> i.iid) AND NOT EXISTS (SELECT 1 FROM orders o "
    "WHERE o.total = i.q AND o.oid <> i.oid)",
]
#: person level, a MIN/MAX/AVG column at these positions
PERSON_VALUES = [
    ("SELECT u.age, AVG(o.total), MAX(o.total) FROM users u JOIN orders o ON o.uid = u.id "
     "WHERE NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.total = u.age AND o2.uid <> u.id) "
     "GROUP BY u.age", {0, 1}),
    ("SELECT MIN(i.q) FROM items i WHERE NOT EXISTS (SELECT 1 FROM orders o "
     "WHERE o.total = i.q AND o.oid <> i.oid)", {0}),
]


def _person_db(rng: random.Random) -> sqlite3.Connection | None:
    conn = sqlite3.connect(":memory:")
    conn.executescript(PERSONS)
    oid = iid = 0
    ages: list[int] = []
    totals: list[int] = []
    qs: list[int] = []
    for uid in range(rng.randint(1, 4)):
        ages.append(rng.randint(0, 3))
        conn.execute("INSERT INTO users VALUES (?, ?)", (uid, ages[-1]))
        for _ in range(rng.randint(0, 2)):
            oid += 1
            totals.append(rng.randint(0, 3))
            conn.execute("INSERT INTO orders VALUES (?, ?, ?, ?)",
                         (oid, uid, totals[-1], rng.choice([None, 0, 1, 2, 3])))
            for _ in range(rng.randint(0, 3)):
                iid += 1
                qs.append(rng.randint(0, 3))
                conn.execute("INSERT INTO items VALUES (?, ?, ?)", (iid, oid, qs[-1]))
    if any(ages.count(x) > 2 for x in ages) or any(totals.count(x) > 3 for x in totals) \
            or any(qs.count(x) > 4 for x in qs):
        return None
    return conn


@pytest.mark.parametrize(("sql", "values"),
                         [(sql, set()) for sql in PERSON_LEVEL] + PERSON_VALUES)
def test_person_level_bound_holds_against_brute_force(sql: str, values: set[int]) -> None:
    """Every person removed (with their orders and items) from 150 random databases: the
    released vector moves by at most the bound (a MIN/MAX/AVG entry where it is defined on
    both sides)."""
    a = analyze(sql, schema=PERSONS, cds=PERSON_CDS, unit="users")
    assert any("semi-join-flips" in line for line in a.explanation)
    assert a.upper != math.inf
    rng = random.Random(sql)
    worst = Fraction(0)
    tried = 0
    while tried < 150:
        conn = _person_db(rng)
        if conn is None:
            continue
        tried += 1
        base = _value_released(conn, sql)
        for (uid,) in conn.execute("SELECT id FROM users").fetchall():
            conn.execute("SAVEPOINT p")
            conn.execute("DELETE FROM items WHERE oid IN (SELECT oid FROM orders WHERE uid = ?)",
                         (uid,))
            conn.execute("DELETE FROM orders WHERE uid = ?", (uid,))
            conn.execute("DELETE FROM users WHERE id = ?", (uid,))
            worst = max(worst, _value_l1(base, _value_released(conn, sql), values))
            conn.execute("ROLLBACK TO p")
    assert worst <= a.upper, (worst, a.upper)
    assert worst > 0


def test_person_local_atoms_add_no_part() -> None:
    """Of q10's three atoms only the one over other persons' orders adds a part."""
    a = analyze(PERSON_LEVEL[0], schema=PERSONS, cds=PERSON_CDS, unit="users")
    flipped = [line for line in a.explanation if line.startswith("Rows flipped by")]
    assert len(flipped) == 1 and "o3.total = u.age" in flipped[0]


@pytest.mark.parametrize("sql", [PERSON_LEVEL[1], PERSON_LEVEL[2]])
def test_release_runs_the_statement_as_written(sql: str, tmp_path: Path,
                                               noiseless: None) -> None:
    """``cqsens release`` with the noise off returns the SQL's own answer on random
    databases: the parts only bound it, the statement runs as written."""
    rng = random.Random(sql)
    for _ in range(3):
        conn = None
        while conn is None:
            conn = _person_db(rng)
        truth = [tuple(r) for r in conn.execute(sql).fetchall()]
        write_db(tmp_path / "d.db", conn)
        cds = [arg for c in PERSON_CDS for arg in ("--cd", c)]
        document = release_json(tmp_path, PERSONS, ["--sql", sql, "--unit", "users", *cds])
        got = released_rows(document)
        assert [tuple(0 if v is None else v for v in row) for row in got] == \
            [tuple(0 if v is None else v for v in row) for row in truth], (got, truth)


@pytest.mark.parametrize("sql", [ROW_LEVEL[2], ROW_LEVEL[5],
                                 next(q for q in ROW_LEVEL if "LEFT JOIN" in q),
                                 next(q for q in ROW_LEVEL if "EXCEPT" in q),
                                 VALUE_LEVEL[4][0]])
def test_row_level_release_is_the_sql_answer(sql: str, tmp_path: Path, noiseless: None) -> None:
    """Flips (SUM over NOT IN, COUNT(DISTINCT) under NOT), an anti-join and COUNT(*) over
    EXCEPT released with the noise off: the
    statement as written, run by the database (row level, ROW_CDS declared)."""
    rng = random.Random(sql)
    for _ in range(3):
        conn = _conn(_random_db(rng), ROWS)
        truth = [tuple(r) for r in conn.execute(sql).fetchall()]
        write_db(tmp_path / "d.db", conn)
        cds = [arg for c in ROW_CDS for arg in ("--cd", c)]
        got = released_rows(release_json(tmp_path, ROWS, ["--sql", sql, *cds]))
        # a SUM over no row is NULL in SQL, released as 0 (a MIN/AVG over none as NULL)
        truth = [tuple(0 if v is None else v for v in row) for row in truth]
        got = [tuple(0 if v is None else v for v in row) for row in got]
        assert sorted(got, key=repr) == sorted(truth, key=repr), (got, truth)


_ATOMS = st.sampled_from([
    "EXISTS (SELECT 1 FROM s WHERE s.b = r.a)",
    "EXISTS (SELECT 1 FROM s WHERE s.b = r.a AND s.w <> r.g)",
    "EXISTS (SELECT 1 FROM t WHERE t.a = r.a AND t.w = 1)",
    "r.a IN (SELECT t.a FROM t WHERE t.w = 2)",
    "r.g IN (SELECT s.w FROM s WHERE s.b = r.a)",
    "r.v > 0",
    "r.g = 1",
])


def _combined(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """``inner``, its negation, or a conjunction or disjunction of it with an atom."""
    return st.one_of(
        inner, inner.map(lambda c: f"NOT ({c})"),
        st.tuples(inner, _ATOMS, st.sampled_from(["AND", "OR"])).map(
            lambda p: f"({p[0]}) {p[2]} ({p[1]})"))


_CONDITIONS = _combined(_combined(_ATOMS))
_SELECTS = st.sampled_from(["COUNT(*)", "COUNT(DISTINCT r.a)", "SUM(r.v)",
                            "COUNT(*), SUM(r.v)"])


@settings(max_examples=scaled_examples(20))
@given(condition=_CONDITIONS.filter(lambda c: "SELECT" in c and ("NOT" in c or " OR " in c)),
       aggregates=_SELECTS)
def test_random_boolean_combinations_of_semi_joins_hold_against_brute_force(
        condition: str, aggregates: str) -> None:
    """Any AND / OR / NOT of EXISTS, IN and plain predicates: the bound is at least every
    change seen when one row is removed or added (row level)."""
    sql = f"SELECT {aggregates} FROM r WHERE {condition}"
    a = analyze(sql, schema=ROWS, cds=ROW_CDS)
    rng = random.Random(sql)
    for _ in range(25):
        db = _random_db(rng)
        base = _released(_conn(db, ROWS), sql)
        for other in _row_neighbours(db, rng):
            assert _l1(base, _released(_conn(other, ROWS), sql)) <= a.upper, sql


def test_a_released_sum_keeps_its_negative_values(tmp_path: Path, noiseless: None) -> None:
    """The parts sum ABS(v); the release clamps the statement's v to [−3, 3], not to ABS's
    [0, 3] (which turned SQLite's −4 into 0 with the noise off)."""
    conn = _conn({"r": [(1, 1, 1, -2), (2, 2, 1, -2), (3, 3, 2, 1)], "s": [], "t": [(1, 3, 1)]},
                 ROWS)
    sql = "SELECT SUM(r.v), AVG(r.v) FROM r WHERE r.a NOT IN (SELECT t.a FROM t WHERE t.w = 1)"
    assert conn.execute(sql).fetchall() == [(-4, -2.0)]
    write_db(tmp_path / "d.db", conn)
    cds = [arg for c in ROW_CDS for arg in ("--cd", c)]
    assert released_rows(release_json(tmp_path, ROWS, ["--sql", sql, *cds])) == [(-4, -2.0)]


def test_an_ungrouped_min_is_capped_at_its_range() -> None:
    """An ungrouped MIN stays in [m, M] = [−2, 3] on both sides: the largest part's bound
    (5), not the sum of the two parts' (10), and a witness reaches it."""
    a = analyze(VALUE_LEVEL[0][0], schema=ROWS, cds=ROW_CDS)
    assert (a.upper, a.l2, a.lower) == (5, 5, 5)
    both = analyze(VALUE_LEVEL[4][0], schema=ROWS, cds=ROW_CDS)
    avg, total = both.aggregates
    assert avg.l1 == 5 and both.upper == 5 + total.l1
