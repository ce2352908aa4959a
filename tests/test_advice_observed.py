"""Advice with ``--db``: each proposal carries the value measured in the data.

Random SQLite databases of customers and orders (dangling references and NULLs
included) are built; ``cqsens analyze --db`` proposes the foreign key and the
fan-out ``orders[o_custkey->o_orderkey]``, and each proposal must end with the
values measured in the data, marked observed, not guaranteed, equal to what
independent SQL queries count.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens.cli.analyze import analyze_cmd
from cqsens.db.profile import OBSERVED_NOTE

DDL = """
CREATE TABLE customer (c_custkey INTEGER PRIMARY KEY, c_name TEXT);
CREATE TABLE orders (o_orderkey INTEGER PRIMARY KEY, o_custkey INTEGER,
                     o_total INTEGER CHECK (o_total BETWEEN 0 AND 100));
"""
SQL = "SELECT COUNT(*) FROM orders o JOIN customer c ON o.o_custkey = c.c_custkey"


def _database(path: Path, seed: int) -> sqlite3.Connection:
    rng = random.Random(seed)
    conn = sqlite3.connect(path)
    conn.executescript(DDL)
    customers = rng.randint(1, 8)
    conn.executemany("INSERT INTO customer VALUES (?, ?)",
                     [(i, f"n{i}") for i in range(customers)])
    conn.executemany("INSERT INTO orders VALUES (?, ?, ?)",
                     [(i, rng.choice([None, *range(customers + 2)]), rng.randint(0, 100))
                      for i in range(rng.randint(1, 40))])
    conn.commit()
    return conn


@pytest.mark.parametrize("seed", range(4))
def test_each_proposal_carries_what_the_data_show(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "shop.db"
    conn = _database(path, seed)
    fanout = conn.execute("SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(DISTINCT o_orderkey) "
                          "AS n FROM orders WHERE o_custkey IS NOT NULL GROUP BY o_custkey)"
                          ).fetchone()[0]
    rows, missing = conn.execute(
        "SELECT COUNT(*), SUM(NOT EXISTS (SELECT 1 FROM customer WHERE c_custkey = o_custkey)) "
        "FROM orders WHERE o_custkey IS NOT NULL").fetchone()
    conn.close()
    result = CliRunner().invoke(analyze_cmd, ["--db", f"sqlite:///{path}", "--sql", SQL,
                                              "--format", "json"])
    assert result.exit_code == 0, result.output
    advice = json.loads(result.output)["suggestion"]
    assert len(advice) == 2 and all(OBSERVED_NOTE in line for line in advice)
    fk, cd = advice
    assert "foreign key orders(o_custkey) → customer(c_custkey)" in fk
    found = re.search(r"(\d+) of (\d+) non-NULL reference", fk)
    if missing:
        assert found is not None and (int(found[1]), int(found[2])) == (missing, rows)
    else:
        assert f"{rows} non-NULL reference" in fk and "every one found in customer" in fk
    measured = re.search(r"at most (\d+) distinct o_orderkey per o_custkey", cd)
    assert measured is not None and int(measured[1]) == fanout


def test_without_db_nothing_is_measured(tmp_path: Path) -> None:
    schema = tmp_path / "schema.sql"
    schema.write_text(DDL)
    result = CliRunner().invoke(analyze_cmd, ["--schema", str(schema), "--sql", SQL,
                                              "--format", "json"])
    assert result.exit_code == 0, result.output
    advice = json.loads(result.output)["suggestion"]
    assert advice and not any(OBSERVED_NOTE in line for line in advice)
