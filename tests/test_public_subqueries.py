"""Public subqueries are constants (issue 23): a WHERE condition whose subqueries read only
public tables is a fixed filter, whatever the subqueries compute (aggregates, HAVING, NOT IN,
NOT EXISTS, a scalar threshold).  Checked against brute force in SQLite: every neighbour of
small random databases that keep the public table fixed."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens import analyze
from cqsens.cli.main import cli
from cqsens.errors import InputError
from cqsens.release import noise

SCHEMA = """
CREATE TABLE part (p_partkey INTEGER PRIMARY KEY, p_brand TEXT NOT NULL, p_size INTEGER NOT NULL);
CREATE TABLE lineitem (l_id INTEGER PRIMARY KEY,
                       l_partkey INTEGER NOT NULL REFERENCES part(p_partkey),
                       l_quantity INTEGER NOT NULL CHECK (l_quantity BETWEEN 1 AND 5));
"""

QUERIES = [
    "SELECT SUM(l_quantity) FROM lineitem WHERE l_partkey IN "
    "(SELECT p_partkey FROM part WHERE p_size > 1 GROUP BY p_partkey HAVING COUNT(*) > 0)",
    "SELECT COUNT(*) FROM lineitem l WHERE NOT EXISTS "
    "(SELECT 1 FROM part p WHERE p.p_partkey = l.l_partkey AND p.p_brand = 'x')",
    "SELECT COUNT(*) FROM lineitem WHERE l_quantity < (SELECT AVG(p_size) FROM part)",
    "SELECT l_partkey, COUNT(*) FROM lineitem WHERE l_partkey NOT IN "
    "(SELECT p_partkey FROM part WHERE p_brand = 'y') GROUP BY l_partkey",
    "SELECT AVG(l_quantity) FROM lineitem WHERE l_quantity >= "
    "(SELECT MIN(p_size) FROM part) OR l_partkey IN (SELECT p_partkey FROM part)",
]


Released = dict[tuple[object, ...], float | None]


def _evaluate(conn: sqlite3.Connection, sql: str) -> Released:
    rows = conn.execute(sql).fetchall()
    return {tuple(r[:-1]): None if r[-1] is None else float(r[-1]) for r in rows}


def _change(a: Released, b: Released, average: bool) -> float:
    """ℓ1 change; a SUM of no row is 0, an AVG is compared only where both are defined
    (its rule's assumption, docs/rules.md, rule avg)."""
    total = 0.0
    for k in set(a) | set(b):
        x, y = a.get(k), b.get(k)
        if average and (x is None or y is None):
            continue
        total += abs((x or 0.0) - (y or 0.0))
    return total


@pytest.mark.parametrize("sql", QUERIES)
def test_public_subquery_bound_holds_against_brute_force(sql: str) -> None:
    a = analyze(sql, schema=SCHEMA, public=["part"])
    assert a.lower is None and "public tables" in a.lower_note
    assert any("public-subqueries" in n for n in a.notes)
    rng = random.Random(sql)
    worst = 0.0
    for _ in range(40):
        conn = sqlite3.connect(":memory:")
        conn.executescript(SCHEMA)
        parts = [(k, rng.choice("xy"), rng.randint(0, 4)) for k in range(rng.randint(1, 4))]
        conn.executemany("INSERT INTO part VALUES (?, ?, ?)", parts)
        lines = [(i, rng.choice(parts)[0], rng.randint(1, 5)) for i in range(rng.randint(1, 6))]
        conn.executemany("INSERT INTO lineitem VALUES (?, ?, ?)", lines)
        base = _evaluate(conn, sql)
        moves = [("DELETE FROM lineitem WHERE l_id = ?", (row[0],)) for row in lines]
        moves += [("INSERT INTO lineitem VALUES (?, ?, ?)", (100, p[0], q))
                  for p in parts for q in (1, 5)]
        for statement, args in moves:
            conn.execute("SAVEPOINT s")
            conn.execute(statement, args)
            worst = max(worst, _change(base, _evaluate(conn, sql), 'AVG' in sql))
            conn.execute("ROLLBACK TO s")
        conn.close()
    assert worst <= float(a.l1), (worst, a.l1)


def test_a_subquery_over_a_private_table_is_still_refused() -> None:
    # correlated: not a constant (an uncorrelated one is a two-stage release, rule two-stage)
    with pytest.raises(InputError, match="subquery"):
        analyze("SELECT COUNT(*) FROM lineitem l WHERE l.l_quantity < (SELECT "
                "AVG(m.l_quantity) FROM lineitem m WHERE m.l_partkey = l.l_partkey)",
                schema=SCHEMA, public=["part"])
    # part not declared public: NOT EXISTS is no constant, its flips are a part of their own
    a = analyze(QUERIES[1], schema=SCHEMA)
    assert any("semi-join-flips" in line for line in a.explanation)
    assert not any("public-subqueries" in n for n in a.notes)


def test_the_release_runs_the_subquery_in_the_database(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def laplace(values: Sequence[float], **_: object) -> tuple[list[float], float]:
        return list(values), 1.0

    monkeypatch.setattr(noise, "sample_laplace", laplace)
    path, schema = tmp_path / "d.db", tmp_path / "schema.sql"
    schema.write_text(SCHEMA)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.executemany("INSERT INTO part VALUES (?, ?, ?)", [(1, "x", 3), (2, "y", 1)])
    conn.executemany("INSERT INTO lineitem VALUES (?, ?, ?)",
                     [(1, 1, 2), (2, 2, 4), (3, 2, 5), (4, 1, 1)])
    conn.commit()
    for sql in QUERIES[:3]:
        truth = conn.execute(sql).fetchone()[0]
        result = CliRunner().invoke(cli, ["release", "--sql", sql, "--schema", str(schema),
                                          "--db", f"sqlite:///{path}", "--epsilon", "1",
                                          "--public", "part", "--format", "json"])
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["groups"][0]["value"] == truth, sql
    conn.close()
