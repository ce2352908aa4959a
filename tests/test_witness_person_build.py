"""The person built along the bound's steps (cqsens/witness/person_build.py), re-checked
independently: both databases loaded into SQLite under the schema's own DDL (keys, foreign
keys, NOT NULL and CHECKs enforced by SQLite), the declared fan-outs counted in SQL, and
the user's query run on both."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqsens.frontend.sqlgen import sqlite_query
from cqsens.pipeline import analyze
from cqsens.witness.evaluate import Database, quote_ident
from cqsens.witness.person import PersonWitness

ROOT = Path(__file__).resolve().parents[1]
TPCH = ROOT / "examples" / "tpch"
PUBLIC = ("nation", "region", "part", "supplier", "partsupp")
# the queries whose person witness the construction proves, with the lower bound = upper
TIGHT = ("q03.sql", "q04.sql")
PROVEN = ("q05.sql", "q06.sql", "q10.sql", "q12.sql")


def _load(db: Database, ddl: str) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript(ddl)
    conn.execute("BEGIN")
    conn.execute("PRAGMA defer_foreign_keys = ON")  # checked at COMMIT, in any row order
    for relation, rows in db.rows.items():
        marks = ", ".join("?" for _ in db.columns[relation])
        conn.executemany(f"INSERT INTO {quote_ident(relation)} VALUES ({marks})", list(rows))
    conn.execute("COMMIT")  # a broken foreign key fails here (immediate keys fail above)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    return conn


# the aggregate columns of each query's SELECT list (the others are its groups)
AGGREGATES = {"q03.sql": (1,), "q04.sql": (1,), "q05.sql": (1,), "q06.sql": (0,),
              "q10.sql": (2,), "q12.sql": (1, 2), "q14.sql": (0,)}


def _released(conn: sqlite3.Connection, sql: str, aggregates: tuple[int, ...]) -> \
        Counter[Any]:
    out: Counter[Any] = Counter()
    for row in conn.execute(sql).fetchall():
        group = tuple(v for i, v in enumerate(row) if i not in aggregates)
        for i in aggregates:
            out[(group, i)] += Fraction(str(row[i])) if row[i] is not None else 0
    return out


def _l1(a: Counter[Any], b: Counter[Any]) -> Fraction:
    return sum((abs(Fraction(b.get(k, 0)) - Fraction(a.get(k, 0))) for k in set(a) | set(b)),
               Fraction(0))


def _fanouts_hold(conn: sqlite3.Connection, checks: list[tuple[str, int]]) -> bool:
    return all((conn.execute(sql).fetchone()[0] or 0) <= k for sql, k in checks)


TPCH_FANOUTS = [
    ("SELECT MAX(n) FROM (SELECT COUNT(DISTINCT o_orderkey) n FROM orders GROUP BY o_custkey)", 41),
    ("SELECT MAX(n) FROM (SELECT COUNT(DISTINCT l_linenumber) n FROM lineitem "
     "GROUP BY l_orderkey)", 7),
    ("SELECT MAX(n) FROM (SELECT COUNT(DISTINCT n_nationkey) n FROM nation "
     "GROUP BY n_regionkey)", 5),
]


def _tpch(name: str) -> Any:
    return analyze(TPCH / "queries" / name, schema=TPCH / "standard" / "schema.sql",
                   constraints=TPCH / "queries" / "constraints.txt", unit="customer",
                   public=PUBLIC, witness_time=0.5)


@pytest.mark.slow
@pytest.mark.parametrize("name", TIGHT + PROVEN)
def test_tpch_person_witness_rechecked_in_sqlite(name: str) -> None:
    a = _tpch(name)
    w = a.witness
    assert isinstance(w, PersonWitness) and a.lower is not None and a.lower > 0
    ddl = (TPCH / "standard" / "schema.sql").read_text()
    before, after = _load(w.database, ddl), _load(w.after, ddl)
    assert _fanouts_hold(before, TPCH_FANOUTS) and _fanouts_hold(after, TPCH_FANOUTS)
    sql = sqlite_query((TPCH / "queries" / name).read_text(), None)
    assert sql is not None
    sql = re.sub(r"\s+LIMIT\s+\d+\s*$", "", sql)  # cqsens releases every group (q03's LIMIT 10
    # acts on the noisy result)
    change = _l1(_released(before, sql, AGGREGATES[name]),
                 _released(after, sql, AGGREGATES[name]))
    assert change == Fraction(str(a.lower)) and 0 < change <= Fraction(str(a.upper))
    # exactly one customer apart: the added rows are one customer, its orders, their lines
    added = {r: len(w.after.rows[r]) - len(w.database.rows.get(r, ())) for r in w.after.rows}
    assert added["customer"] == 1 and all(added[t] == 0 for t in PUBLIC if t in added)
    if name in TIGHT:
        assert a.lower == a.upper


SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE orders (oid INTEGER PRIMARY KEY, uid INTEGER NOT NULL REFERENCES users(id),
                     day DATE, v INTEGER CHECK (v BETWEEN 0 AND {high}));
CREATE TABLE items (oid INTEGER NOT NULL REFERENCES orders(oid), n INTEGER,
                    w INTEGER CHECK (w BETWEEN {low} AND 20), PRIMARY KEY (oid, n));
"""


@settings(max_examples=8, deadline=None)
@given(k=st.integers(1, 6), m=st.integers(1, 4), high=st.integers(1, 30),
       low=st.integers(-20, 0), cut=st.integers(0, 15),
       query=st.sampled_from([
           "SELECT COUNT(*) FROM orders WHERE v >= {cut} AND day >= DATE '2020-01-01'",
           "SELECT SUM(w) FROM items, orders WHERE items.oid = orders.oid AND v <= {cut}",
           "SELECT SUM(v) FROM orders WHERE day < DATE '2020-01-01' + INTERVAL '1' MONTH",
           "SELECT COUNT(*) FROM items i, orders o WHERE i.oid = o.oid AND o.v >= 0",
       ]))
def test_constructed_person_is_a_checked_witness(k: int, m: int, high: int, low: int, cut: int,
                                                 query: str) -> None:
    """Random fan-outs, CHECK ranges and filters: a reported lower bound is re-checked in
    SQLite (DDL enforced, fan-outs counted, the query's change recomputed) and never
    exceeds the upper bound; with a reachable filter the constructed person is tight."""
    ddl = SCHEMA.format(high=high, low=low)
    sql = query.format(cut=min(cut, high))
    a = analyze(sql, schema=ddl, cds=[f"orders[uid->oid]<={k}", f"items[oid->n]<={m}"],
                unit="users", witness_time=0.5)
    assert a.upper != float("inf")
    if a.lower is None:
        return
    w = a.witness
    assert isinstance(w, PersonWitness)
    fanouts = [("SELECT MAX(n) FROM (SELECT COUNT(DISTINCT oid) n FROM orders GROUP BY uid)", k),
               ("SELECT MAX(c) FROM (SELECT COUNT(DISTINCT n) c FROM items GROUP BY oid)", m)]
    before, after = _load(w.database, ddl), _load(w.after, ddl)
    assert _fanouts_hold(before, fanouts) and _fanouts_hold(after, fanouts)
    own = sqlite_query(sql, None)
    assert own is not None
    total = [sum(Fraction(str(x)) for (x,) in c.execute(own).fetchall() if x is not None)
             for c in (before, after)]
    assert abs(total[1] - total[0]) == Fraction(str(a.lower)) <= Fraction(str(a.upper))
    if "COUNT" in sql or "SUM(v)" in sql:
        assert a.lower == a.upper  # k orders (× m lines) of one user, every filter met
