"""Person-local subqueries (issue 23): with a privacy unit, a condition whose subqueries read
only the outer row's own person (anchored on a key that determines the person) is kept out of
the analysed query; checked against brute force in SQLite, removing every person of small
random databases (users → orders → items)."""

from __future__ import annotations

import random
import sqlite3

import pytest

from cqsens import analyze
from cqsens.witness.evaluate import Database

SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, age INTEGER NOT NULL CHECK (age BETWEEN 0 AND 3));
CREATE TABLE orders (oid INTEGER PRIMARY KEY, uid INTEGER NOT NULL REFERENCES users(id),
                     total INTEGER NOT NULL CHECK (total BETWEEN 0 AND 3));
CREATE TABLE items (iid INTEGER PRIMARY KEY, oid INTEGER NOT NULL REFERENCES orders(oid),
                    q INTEGER NOT NULL CHECK (q BETWEEN 0 AND 3));
"""
CDS = ["orders[uid->oid]<=2", "items[oid->iid]<=3"]

LOCAL = [
    # the items that are the largest of their order
    "SELECT COUNT(*) FROM items i WHERE NOT EXISTS "
    "(SELECT 1 FROM items j WHERE j.oid = i.oid AND j.q > i.q)",
    # orders with no item
    "SELECT COUNT(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.oid = o.oid)",
    # users whose orders total more than 2, by a scalar subquery of their own rows
    "SELECT SUM(u.age) FROM users u WHERE (SELECT SUM(o.total) FROM orders o "
    "WHERE o.uid = u.id) > 2",
    # items of orders whose items sum to at least 3 (aggregate and HAVING inside)
    "SELECT COUNT(*) FROM items i WHERE i.oid IN (SELECT j.oid FROM items j "
    "WHERE j.oid = i.oid GROUP BY j.oid HAVING SUM(j.q) >= 3)",
]


def _database(rng: random.Random) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    oid = iid = 0
    for uid in range(rng.randint(1, 3)):
        conn.execute("INSERT INTO users VALUES (?, ?)", (uid, rng.randint(0, 3)))
        for _ in range(rng.randint(0, 2)):
            oid += 1
            conn.execute("INSERT INTO orders VALUES (?, ?, ?)", (oid, uid, rng.randint(0, 3)))
            for _ in range(rng.randint(0, 3)):
                iid += 1
                conn.execute("INSERT INTO items VALUES (?, ?, ?)", (iid, oid, rng.randint(0, 3)))
    return conn


def _loaded(db: Database) -> sqlite3.Connection:
    """``db`` under SCHEMA's own DDL (keys, foreign keys and CHECKs enforced by SQLite)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript(SCHEMA)
    conn.execute("BEGIN")
    conn.execute("PRAGMA defer_foreign_keys = ON")
    for relation, rows in db.rows.items():
        marks = ", ".join("?" for _ in db.columns[relation])
        conn.executemany(f"INSERT INTO {relation} VALUES ({marks})", list(rows))
    conn.execute("COMMIT")
    return conn


def _value(conn: sqlite3.Connection, sql: str) -> float:
    return float(conn.execute(sql).fetchone()[0] or 0)


@pytest.mark.parametrize("sql", LOCAL)
def test_person_local_bound_holds_against_brute_force(sql: str) -> None:
    a = analyze(sql, schema=SCHEMA, cds=CDS, unit="users")
    assert any("person-local" in n for n in a.notes)
    assert a.upper != float("inf")
    if a.lower is not None:  # a person's pair, the user's whole SQL run on both databases
        assert a.witness is not None and 0 <= a.lower <= a.upper
        before, after = (_loaded(d) for d in (a.witness.database, a.witness.after))
        assert abs(_value(after, sql) - _value(before, sql)) == float(a.lower)
    rng = random.Random(sql)
    worst = 0.0
    for _ in range(150):
        conn = _database(rng)
        base = _value(conn, sql)
        for (uid,) in conn.execute("SELECT id FROM users").fetchall():
            conn.execute("SAVEPOINT s")
            conn.execute("DELETE FROM items WHERE oid IN (SELECT oid FROM orders WHERE uid = ?)",
                         (uid,))
            conn.execute("DELETE FROM orders WHERE uid = ?", (uid,))
            conn.execute("DELETE FROM users WHERE id = ?", (uid,))
            worst = max(worst, abs(base - _value(conn, sql)))
            conn.execute("ROLLBACK TO s")
        conn.close()
    assert worst <= float(a.upper), (worst, a.upper)
    assert worst > 0  # the brute force exercised the condition


@pytest.mark.parametrize("sql", [
    # not anchored: the other items may be anybody's
    "SELECT COUNT(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM items j WHERE j.q > i.q)",
    # anchored on a column that does not determine the person (another item than i: without
    # the <>, i itself is a j and the condition never holds, which the core sees)
    "SELECT COUNT(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM items j WHERE j.q = i.q "
    "AND j.iid <> i.iid)",
])
def test_a_subquery_that_reads_other_persons_is_bounded_by_its_flips(sql: str) -> None:
    """Not person-local: one person's items flip the condition of other persons' items, a
    part of its own (rule semi-join-flips), unbounded here (no bound on items per q)."""
    a = analyze(sql, schema=SCHEMA, cds=CDS, unit="users")
    assert not any("person-local" in n for n in a.notes)
    assert any("semi-join-flips" in line for line in a.explanation)
    assert a.upper == float("inf")


def test_without_a_unit_negation_is_bounded_by_its_flips() -> None:
    """At row level one added item can flip the condition of every item of its order: the
    part of the flips is bounded by the items per order (items[oid->iid]<=3); checked against
    every one-row removal of small random databases."""
    a = analyze(LOCAL[0], schema=SCHEMA, cds=CDS)
    assert any("semi-join-flips" in line for line in a.explanation)
    assert a.upper != float("inf")
    rng = random.Random(1)
    worst = 0.0
    for _ in range(100):
        conn = _database(rng)
        base = _value(conn, LOCAL[0])
        for (iid,) in conn.execute("SELECT iid FROM items").fetchall():
            conn.execute("SAVEPOINT s")
            conn.execute("DELETE FROM items WHERE iid = ?", (iid,))
            worst = max(worst, abs(base - _value(conn, LOCAL[0])))
            conn.execute("ROLLBACK TO s")
    assert 0 < worst <= float(a.upper)


def test_a_row_with_a_second_way_to_a_person_does_not_anchor() -> None:
    """items.uid beside items.oid: a person who owns items of other persons' orders
    removes them, which flips those orders' NOT EXISTS, more than the person's own answers
    (measured in SQLite: 3 with one order per person); so items.oid anchors nothing."""
    ddl = """
    CREATE TABLE users (id INTEGER PRIMARY KEY);
    CREATE TABLE orders (oid INTEGER PRIMARY KEY, uid INTEGER NOT NULL REFERENCES users(id));
    CREATE TABLE items (iid INTEGER PRIMARY KEY, oid INTEGER NOT NULL REFERENCES orders(oid),
                        uid INTEGER NOT NULL REFERENCES users(id));
    """
    cds = ["orders[uid->oid]<=1", "items[oid->iid]<=3", "items[uid->iid]<=3"]
    sql = ("SELECT COUNT(*) FROM orders o WHERE NOT EXISTS "
           "(SELECT 1 FROM items i WHERE i.oid = o.oid)")
    conn = sqlite3.connect(":memory:")
    conn.executescript(ddl)
    conn.executemany("INSERT INTO users VALUES (?)", [(1,), (2,), (3,), (4,)])
    conn.executemany("INSERT INTO orders VALUES (?, ?)", [(1, 1), (2, 2), (3, 3)])
    conn.executemany("INSERT INTO items VALUES (?, ?, ?)", [(1, 1, 4), (2, 2, 4), (3, 3, 4)])
    before = _value(conn, sql)
    conn.execute("DELETE FROM items WHERE uid = 4")
    conn.execute("DELETE FROM users WHERE id = 4")
    assert _value(conn, sql) - before == 3  # while one order per person bounds its own: 1
    a = analyze(sql, schema=ddl, cds=cds, unit="users")  # bounded by its flips instead
    assert not any("person-local" in n for n in a.notes)
    assert any("semi-join-flips" in line for line in a.explanation)
    assert a.upper >= 3
