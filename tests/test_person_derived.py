"""Aggregates over per-person groups (issue 23, TPC-H q13): with a privacy unit, a statement
over one derived table grouped by the person's key reads one row per person; its bound is the
row-level bound over that table, with COUNT/SUM columns ranged by person bounds.  Checked
against brute force (tests/person_oracle.py): random users → orders → items databases, every
person removed with all their rows and random persons added, evaluated in SQLite; the
release with the noise off is SQLite's answer."""

from __future__ import annotations

import json
import math
import random
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens import analyze
from cqsens.cli.main import cli
from cqsens.errors import InputError
from tests.person_oracle import change, person_moves, random_database
from tests.test_person_groups import WORLD, _Evaluator, _world

# (sql, grouped, the bound the ranges give)
LOCAL = [
    # TPC-H q13's shape: the distribution of the number of (some) orders per user
    ("SELECT c, COUNT(*) FROM (SELECT u.id, COUNT(o.oid) AS c FROM users u LEFT JOIN orders o "
     "ON o.uid = u.id AND o.amt >= 1 GROUP BY u.id) d GROUP BY c", True, 1),
    # a SUM of a per-person count: items per user in [0, 2 · 3]
    ("SELECT SUM(c) FROM (SELECT o.uid, COUNT(*) AS c FROM orders o JOIN items i "
     "ON i.oid = o.oid GROUP BY o.uid) d", False, 6),
    # a SUM of a per-person SUM, filtered: quantities per user in [-12, 12]
    ("SELECT SUM(s) FROM (SELECT o.uid AS uid, SUM(i.qty) AS s FROM orders o, items i "
     "WHERE i.oid = o.oid GROUP BY o.uid) d WHERE s > 2", False, 12),
    # HAVING inside, a column of the person's own row kept
    ("SELECT age, COUNT(*) FROM (SELECT u.id, u.age FROM users u, orders o WHERE o.uid = u.id "
     "GROUP BY u.id, u.age HAVING COUNT(*) >= 2) d GROUP BY age", True, 1),
]


@pytest.mark.parametrize(("sql", "grouped", "bound"), LOCAL)
def test_per_person_groups_hold_against_brute_force(sql: str, grouped: bool,
                                                    bound: int) -> None:
    a = analyze(sql, schema=WORLD.ddl(), cds=WORLD.cd_texts(), unit="users", prove_lower=False)
    assert any("rule person-groups" in n for n in a.notes), a.notes
    assert a.l1 == bound and a.lower is None and a.unit == "users(id)"
    rng = random.Random(sql)
    worst, changed = 0.0, 0
    for _ in range(120):
        db = random_database(rng, WORLD, rows=4)
        ev = _Evaluator(sql, 1, grouped, db)
        try:
            for removed, added, what in person_moves(rng, WORLD, db, substitute=False,
                                                     attempts=6):
                l1, l2 = change(ev.base, ev.released(removed, added))
                assert l1 <= float(a.l1) + 1e-9 and l2 <= float(a.l2) + 1e-9, (what, l1, a.l1)
                worst = max(worst, l1)
                changed += l1 > 0
        finally:
            ev.close()
    assert changed > 0 and worst > 0
    if grouped:  # a histogram of persons: one person moves one count by one
        assert worst == 1


# groups of a value many persons share, one group per order (several rows per person): no
# per-person table, so the derived table is a grouped release of its own and the outer
# histogram of its counts is post-processing (docs/rules.md, rule released-subquery)
NOT_PER_PERSON = [
    "SELECT c, COUNT(*) FROM (SELECT o.amt, COUNT(*) AS c FROM orders o GROUP BY o.amt) d "
    "GROUP BY c",
    "SELECT c, COUNT(*) FROM (SELECT i.oid, COUNT(*) AS c FROM items i GROUP BY i.oid) d "
    "GROUP BY c",
]


@pytest.mark.parametrize("sql", NOT_PER_PERSON)
def test_groups_not_keyed_by_the_person_are_released_subqueries(sql: str) -> None:
    a = analyze(sql, schema=WORLD.ddl(), cds=WORLD.cd_texts(), unit="users", prove_lower=False)
    assert a.stage_shares == (("part", "1/1"),)
    inner = sql[sql.index("(SELECT") + 1:sql.index(") d")]
    alone = analyze(inner, schema=WORLD.ddl(), cds=WORLD.cd_texts(), unit="users",
                    prove_lower=False)
    assert (a.upper, a.l1) == (alone.upper, alone.l1) and a.upper > 0


REFUSED = [
    # a table not tied to the person's key
    ("SELECT c, COUNT(*) FROM (SELECT u.id, COUNT(*) AS c FROM users u, orders o "
     "WHERE o.amt = u.age GROUP BY u.id) d GROUP BY c", "not tied"),
    # the group key on the NULL side of a LEFT JOIN: persons without orders share a group
    ("SELECT c, COUNT(*) FROM (SELECT o.uid, COUNT(*) AS c FROM users u LEFT JOIN orders o "
     "ON o.uid = u.id GROUP BY o.uid) d GROUP BY c", "LEFT JOIN"),
    # a second group column that is not the person's own row: several groups per person
    ("SELECT c, COUNT(*) FROM (SELECT o.uid, o.amt, COUNT(*) AS c FROM orders o "
     "GROUP BY o.uid, o.amt) d GROUP BY c", "several groups per person"),
    # a MAX per person: not bounded here
    ("SELECT SUM(m) FROM (SELECT o.uid, MAX(o.amt) AS m FROM orders o GROUP BY o.uid) d",
     "COUNT, a SUM"),
]


@pytest.mark.parametrize(("sql", "message"), REFUSED)
def test_groups_that_are_not_per_person_are_refused(sql: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        analyze(sql, schema=WORLD.ddl(), cds=WORLD.cd_texts(), unit="users", prove_lower=False)


def test_a_nullable_foreign_key_is_refused() -> None:
    world = _world(nullable_oid=True)
    with pytest.raises(InputError):
        analyze(LOCAL[1][0], schema=world.ddl(), cds=world.cd_texts(), unit="users",
                prove_lower=False)


def test_a_count_without_a_dependency_is_unbounded_and_a_histogram_still_bounded() -> None:
    """Without orders[uid->oid]<=k one person's count is unbounded: a SUM of it is, the
    histogram of persons is not."""
    cds = [c for c in WORLD.cd_texts() if not c.startswith("orders")]
    with pytest.raises(InputError, match="declare a cardinality dependency"):
        analyze("SELECT SUM(c) FROM (SELECT o.uid, COUNT(*) AS c FROM orders o "
                "GROUP BY o.uid) d", schema=WORLD.ddl(), cds=cds, unit="users",
                prove_lower=False)
    histogram = analyze(LOCAL[0][0], schema=WORLD.ddl(), cds=cds, unit="users",
                        prove_lower=False)
    assert histogram.l1 == 1


def test_without_a_unit_it_is_a_released_subquery() -> None:
    """Without a unit there is no person: the per-user counts (COUNT over the optional side
    of the LEFT JOIN, docs/rules.md, rule outer-joins) are released on their own and the
    outer histogram is post-processing; one orders row moves one user's count by 1."""
    a = analyze(LOCAL[0][0], schema=WORLD.ddl(), cds=WORLD.cd_texts(), prove_lower=False)
    assert not any("rule person-groups" in n for n in a.notes)
    assert any("rule released-subquery" in line for line in a.explanation)
    assert a.l1 == 1 and a.unit is None


# ------------------------------------------------------------------ release, noise off


def _released(doc: dict[str, object]) -> dict[tuple[str, ...], float]:
    groups = doc["groups"]
    assert isinstance(groups, list)
    out = {}
    for g in groups:
        values = g.get("values") or [{"value": g["value"]}]
        out[tuple(str(v) for v in g["group"].values())] = float(values[0]["value"])
    return out


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize(("sql", "grouped", "bound"), LOCAL)
def test_the_release_with_the_noise_off_is_the_statement_as_written(
        tmp_path: Path, noiseless: None, sql: str, grouped: bool, bound: int,
        seed: int) -> None:
    """Grouped by a per-person count, every key 0..K is released (zeros included) without
    --keys or --delta; the values are SQLite's."""
    rng = random.Random(seed)
    path, schema = tmp_path / "w.db", tmp_path / "schema.sql"
    schema.write_text(WORLD.ddl())
    for _ in range(100):  # a database where the statement answers something
        path.unlink(missing_ok=True)
        db = random_database(rng, WORLD, rows=6)
        conn = sqlite3.connect(path)
        conn.executescript(WORLD.ddl())
        for t in WORLD.tables:
            marks = ", ".join("?" for _ in t.columns)
            conn.executemany(f"INSERT INTO {t.name} VALUES ({marks})", db[t.name])
        conn.commit()
        truth = conn.execute(sql).fetchall()
        conn.close()
        if truth and all(r[-1] not in (None, 0) for r in truth):
            break
    assert truth and all(r[-1] not in (None, 0) for r in truth)
    args = ["release", "--sql", sql, "--schema", str(schema), "--db", f"sqlite:///{path}",
            "--unit", "users", "--epsilon", "1", "--format", "json"]
    for cd in WORLD.cd_texts():
        args += ["--cd", cd]
    result = CliRunner().invoke(cli, args)
    if grouped and "age" in sql:  # a column of the person's row: its keys need a domain
        assert result.exit_code == 1 and "--delta" in result.stderr
        return
    assert result.exit_code == 0, result.stderr
    released = _released(json.loads(result.stdout))
    want = {tuple(str(v) for v in r[:-1]): float(r[-1] or 0) for r in truth}
    if grouped:  # the count's keys 0..K (K = 2 orders per user), zeros included
        assert set(released) == {("0",), ("1",), ("2",)}
        assert all(released[k] == want.get(k, 0.0) for k in released), (released, want)
        assert set(want) <= set(released)
    else:
        assert released == want or list(released.values()) == list(want.values())
        assert all(math.isclose(a, b) for a, b in zip(released.values(), want.values(),
                                                       strict=True))


def test_substitute_neighbours_are_refused() -> None:
    """Replacing a person without orders by one with orders adds a row of d: not a
    row-level substitution, so the form is analysed for add-remove only."""
    with pytest.raises(InputError, match="add-remove"):
        analyze(LOCAL[0][0], schema=WORLD.ddl(), cds=WORLD.cd_texts(), unit="users",
                neighbor="substitute", prove_lower=False)


# TPC-H q13 as published names the derived table's columns in its alias, a form SQLite
# lacks: the release writes them as the projections' aliases (frontend/column_lists.py).
COLUMN_LIST = ("SELECT c, COUNT(*) FROM (SELECT u.id, COUNT(o.oid) FROM users u LEFT JOIN "
               "orders o ON o.uid = u.id AND o.amt >= 1 GROUP BY u.id) AS d (id, c) GROUP BY c")


@pytest.mark.parametrize("seed", range(2))
def test_a_derived_tables_column_list_is_released_from_sqlite(
        tmp_path: Path, noiseless: None, seed: int) -> None:
    """The column-list form releases SQLite's answer to the same statement written with
    aliases (LOCAL's first entry), zeros included."""
    rng = random.Random(seed)
    path, schema = tmp_path / "w.db", tmp_path / "schema.sql"
    schema.write_text(WORLD.ddl())
    db = random_database(rng, WORLD, rows=6)
    conn = sqlite3.connect(path)
    conn.executescript(WORLD.ddl())
    for t in WORLD.tables:
        conn.executemany(f"INSERT INTO {t.name} VALUES ({', '.join('?' for _ in t.columns)})",
                         db[t.name])
    conn.commit()
    truth = {(str(r[0]),): float(r[1]) for r in conn.execute(LOCAL[0][0]).fetchall()}
    conn.close()
    args = ["release", "--sql", COLUMN_LIST, "--schema", str(schema), "--db",
            f"sqlite:///{path}", "--unit", "users", "--epsilon", "1", "--format", "json"]
    for cd in WORLD.cd_texts():
        args += ["--cd", cd]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.stderr
    released = _released(json.loads(result.stdout))
    assert set(released) == {("0",), ("1",), ("2",)}
    assert all(released[k] == truth.get(k, 0.0) for k in released), (released, truth)
