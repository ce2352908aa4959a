"""``SELECT *`` in derived tables, CTEs and UNION ALL branches (issue 23), expanded from the
schema's column order before the other passes.

Each statement is analysed as the same statement with its columns listed by hand, and its
bound is checked by brute force: the statement itself, star included, evaluated in SQLite
on every one-row neighbour of random small databases (the tables of tests/test_union.py).
A star that cannot be expanded exactly is refused by name."""

from __future__ import annotations

import functools
import json
import random
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given

import cqsens
from cqsens.analysis import Analysis
from cqsens.cli.main import cli
from cqsens.errors import UnsupportedQueryError
from tests.oracle import Rows, sql_sensitivity
from tests.test_union import CANDIDATES, CDS, DDL, _ok, databases

# (with a star, the same statement with the columns listed)
CASES = [
    ("SELECT COUNT(*) FROM (SELECT * FROM r WHERE r.b > 0) AS t",
     "SELECT COUNT(*) FROM (SELECT r.k, r.a, r.b FROM r WHERE r.b > 0) AS t"),
    ("SELECT t.a AS g, SUM(t.b) FROM (SELECT * FROM r) AS t GROUP BY t.a",
     "SELECT t.a AS g, SUM(t.b) FROM (SELECT r.k, r.a, r.b FROM r) AS t GROUP BY t.a"),
    ("SELECT COUNT(*), SUM(t.x) FROM (SELECT * FROM u UNION ALL SELECT * FROM u) AS t",
     "SELECT COUNT(*), SUM(t.x) FROM (SELECT u.x, u.y FROM u UNION ALL "
     "SELECT u.x, u.y FROM u) AS t"),
    ("SELECT COUNT(*) FROM (SELECT s.* FROM r, s WHERE s.r = r.k) AS t WHERE t.c > 1",
     "SELECT COUNT(*) FROM (SELECT s.k, s.r, s.c FROM r, s WHERE s.r = r.k) AS t "
     "WHERE t.c > 1"),
    ("WITH w AS (SELECT * FROM r) SELECT SUM(w.b) FROM w WHERE w.a > 1",
     "WITH w AS (SELECT r.k, r.a, r.b FROM r) SELECT SUM(w.b) FROM w WHERE w.a > 1"),
    ("SELECT COUNT(*) FROM (SELECT * FROM (SELECT * FROM u WHERE u.x > 0) AS a) AS b",
     "SELECT COUNT(*) FROM (SELECT a.x, a.y FROM (SELECT u.x, u.y FROM u WHERE u.x > 0) AS a)"
     " AS b"),
    ("SELECT t.y AS g, COUNT(*) FROM (SELECT * FROM u UNION ALL SELECT s.c, s.r FROM s) AS t "
     "GROUP BY t.y",
     "SELECT t.y AS g, COUNT(*) FROM (SELECT u.x, u.y FROM u UNION ALL SELECT s.c, s.r FROM s)"
     " AS t GROUP BY t.y"),
    ("SELECT COUNT(*) FROM (SELECT r.*, s.c FROM r JOIN s ON s.r = r.k) AS t WHERE t.a < t.c",
     "SELECT COUNT(*) FROM (SELECT r.k, r.a, r.b, s.c FROM r JOIN s ON s.r = r.k) AS t "
     "WHERE t.a < t.c"),
]


@functools.cache
def _analysis(sql: str, neighbor: str) -> Analysis:
    return cqsens.analyze(sql, schema=DDL, cds=CDS, neighbor=neighbor, prove_lower=False)


@pytest.mark.parametrize(("star", "listed"), CASES)
def test_a_star_is_analysed_as_its_columns(star: str, listed: str) -> None:
    a, b = _analysis(star, "add-remove"), _analysis(listed, "add-remove")
    assert (a.upper, a.l1, a.l2) == (b.upper, b.l1, b.l2)
    assert [(r.kind, r.l1) for r in a.aggregates] == [(r.kind, r.l1) for r in b.aggregates]


@pytest.mark.parametrize(("star", "listed"), CASES)
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@given(db=databases)
def test_star_bounds_hold_against_brute_force(star: str, listed: str, neighbor: str,
                                              db: Rows) -> None:
    a = _analysis(star, neighbor)
    l1, l2 = sql_sensitivity(DDL, [star], db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


@pytest.mark.parametrize(("sql", "construct"), [
    ("SELECT COUNT(*) FROM (SELECT * FROM nosuch) AS t", "SELECT * over table nosuch"),
    ("SELECT COUNT(*) FROM (SELECT * FROM r, s WHERE s.r = r.k) AS t",
     "SELECT * with two columns of one name"),
    ("SELECT COUNT(*) FROM (SELECT * FROM r JOIN s USING (k)) AS t",
     "SELECT * over a join with USING or NATURAL"),
    ("SELECT COUNT(*) FROM (SELECT q.* FROM r) AS t", "SELECT q.*"),
    ("SELECT COUNT(*) FROM (SELECT * FROM u UNION ALL SELECT * FROM nosuch) AS t",
     "SELECT * over table nosuch"),
])
def test_a_star_that_cannot_be_expanded_is_refused_by_name(sql: str, construct: str) -> None:
    with pytest.raises(UnsupportedQueryError) as info:
        cqsens.analyze(sql, schema=DDL)
    assert info.value.construct == construct
    assert "list the columns" in str(info.value) or "no FROM item" in str(info.value)


def test_without_a_schema_the_star_is_refused_with_the_reason() -> None:
    with pytest.raises(UnsupportedQueryError, match=r"no schema is given \(--schema\)"):
        cqsens.analyze("SELECT COUNT(*) FROM (SELECT * FROM r) AS t")


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM (SELECT * FROM r WHERE r.b > 0) AS t",
    "SELECT COUNT(*), SUM(t.x) FROM (SELECT * FROM u UNION ALL SELECT * FROM u) AS t",
    "WITH w AS (SELECT * FROM r) SELECT SUM(w.b) FROM w WHERE w.a > 1",
])
def test_release_with_the_noise_off_is_the_users_query(tmp_path: Path, noiseless: None,
                                                       sql: str, seed: int) -> None:
    rng = random.Random(seed)
    path, schema = tmp_path / "t.db", tmp_path / "schema.sql"
    schema.write_text(DDL)
    conn = sqlite3.connect(path)
    conn.executescript(DDL)
    conn.executemany("INSERT INTO r VALUES (?, ?, ?)",
                     [(k, rng.randint(0, 3), rng.randint(-2, 2)) for k in range(6)])
    conn.executemany("INSERT INTO u VALUES (?, ?)",
                     [(rng.choice([None, 0, 1, 3]), y) for y in range(4)])
    conn.commit()
    truth = list(conn.execute(sql).fetchone())
    conn.close()
    result = CliRunner().invoke(cli, ["release", "--sql", sql, "--schema", str(schema),
                                      "--cd", CDS[0], "--cd", CDS[1], "--db",
                                      f"sqlite:///{path}", "--epsilon", "1",
                                      "--format", "json"])
    assert result.exit_code == 0, result.stderr
    (group,) = json.loads(result.stdout)["groups"]
    values = [v["value"] for v in group.get("values") or [group]]
    assert values == [v if v is not None else 0 for v in truth]
