"""Two-stage releases (issue 23, item 4): a WHERE comparison with an uncorrelated scalar
subquery over private data.  Stage 1 releases the subquery; stage 2 releases the outer
statement with the noisy value as a literal.  Checked against brute force in SQLite: stage
2's bound holds for every threshold value, person level and row level; the release with
the noise off equals the SQL's own answer; the value stage 2 runs with is the noisy one."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

import cqsens.releasing.stages as stages_module
from cqsens import analyze
from cqsens.cli.main import cli
from cqsens.errors import InputError
from cqsens.frontend.two_stage import MARKER, split_stages, substitute
from cqsens.release import noise
from cqsens.release.ledger import read_ledger
from cqsens.schemas import load_schema
from tests.helpers import release_json, write_db

SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, age INTEGER NOT NULL CHECK (age BETWEEN 0 AND 3),
                    region TEXT NOT NULL CHECK (region IN ('a', 'b')));
CREATE TABLE orders (oid INTEGER PRIMARY KEY, uid INTEGER NOT NULL REFERENCES users(id),
                     total INTEGER NOT NULL CHECK (total BETWEEN 0 AND 3));
"""
CDS = ["orders[uid->oid]<=2"]

# q22-shaped: an AVG threshold over the unit table and a person-local NOT EXISTS
Q22 = ("SELECT region, COUNT(*), SUM(age) FROM users WHERE age > "
       "(SELECT AVG(age) FROM users WHERE age > 0) AND NOT EXISTS "
       "(SELECT 1 FROM orders o WHERE o.uid = users.id) GROUP BY region")
# q15-shaped: the rows equal to a private MAX
Q15 = "SELECT COUNT(*), SUM(total) FROM orders WHERE total = (SELECT MAX(total) FROM orders)"
# a threshold inside a derived table (q22 as published), one at row level
NESTED = ("SELECT region, COUNT(*) FROM (SELECT region, age FROM users WHERE age >= "
          "(SELECT AVG(age) FROM users)) AS big GROUP BY region")
# inside a person-local NOT EXISTS: for each threshold value a predicate of the person's rows
LOCAL = ("SELECT COUNT(*) FROM users u WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE "
         "o.uid = u.id AND o.total > (SELECT AVG(total) FROM orders))")
ROWS = "SELECT COUNT(*) FROM orders WHERE total < (SELECT AVG(total) FROM orders WHERE total > 0)"
THRESHOLDS = [-1, 0, 0.5, 1, 1.25, 2, 2.5, 3, 4]


def _database(rng: random.Random) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    oid = 0
    for uid in range(rng.randint(1, 4)):
        conn.execute("INSERT INTO users VALUES (?, ?, ?)", (uid, rng.randint(0, 3),
                                                             rng.choice("ab")))
        for _ in range(rng.randint(0, 2)):
            oid += 1
            conn.execute("INSERT INTO orders VALUES (?, ?, ?)", (oid, uid, rng.randint(0, 3)))
    return conn


def _answer(conn: sqlite3.Connection, sql: str) -> dict[tuple[object, ...], tuple[float, ...]]:
    width = 1 if "GROUP BY" in sql else 0  # the one group key of these queries
    return {tuple(row[:width]): tuple(float(v or 0) for v in row[width:])
            for row in conn.execute(sql).fetchall()}


def _l1(a: dict[tuple[object, ...], tuple[float, ...]],
        b: dict[tuple[object, ...], tuple[float, ...]]) -> float:
    total = 0.0
    for key in set(a) | set(b):
        x, y = a.get(key), b.get(key)
        width = len(x or y or ())
        total += sum(abs(p - q) for p, q in zip(x or (0.0,) * width, y or (0.0,) * width,
                                                 strict=True))
    return total


def _person_moves(conn: sqlite3.Connection, rng: random.Random) -> list[list[tuple[str, Any]]]:
    """Remove each person (a user and their orders), or add a new one with 0–2 orders."""
    moves: list[list[tuple[str, Any]]] = []
    for (uid,) in conn.execute("SELECT id FROM users").fetchall():
        moves.append([("DELETE FROM orders WHERE uid = ?", (uid,)),
                      ("DELETE FROM users WHERE id = ?", (uid,))])
    for n in range(6):
        new = [("INSERT INTO users VALUES (?, ?, ?)", (100, rng.randint(0, 3), rng.choice("ab")))]
        new += [("INSERT INTO orders VALUES (?, ?, ?)", (100 + k, 100, rng.randint(0, 3)))
                for k in range(n % 3)]
        moves.append(new)
    return moves


def _row_moves(conn: sqlite3.Connection) -> list[list[tuple[str, Any]]]:
    """Remove each order, or add one (to an existing user) of each total."""
    moves = [[("DELETE FROM orders WHERE oid = ?", (oid,))]
             for (oid,) in conn.execute("SELECT oid FROM orders").fetchall()]
    users = [u for (u,) in conn.execute("SELECT id FROM users").fetchall()]
    moves += [[("INSERT INTO orders VALUES (?, ?, ?)", (100, users[0], t))] for t in range(4)]
    return moves


def _worst(sql: str, person: bool, seed: str) -> float:
    """The largest ℓ1 change of ``sql`` over every move of small random databases."""
    rng = random.Random(seed)
    worst = 0.0
    for _ in range(60):
        conn = _database(rng)
        base = _answer(conn, sql)
        for move in _person_moves(conn, rng) if person else _row_moves(conn):
            conn.execute("SAVEPOINT s")
            for statement, args in move:
                conn.execute(statement, args)
            worst = max(worst, _l1(base, _answer(conn, sql)))
            conn.execute("ROLLBACK TO s")
        conn.close()
    return worst


@pytest.mark.parametrize(("sql", "person"), [(Q22, True), (Q15, True), (NESTED, True),
                                              (LOCAL, True), (Q15, False), (ROWS, False)])
def test_stage_two_bound_holds_for_every_threshold(sql: str, person: bool) -> None:
    """The outer statement's bound, computed without the comparison, bounds the query with
    the comparison for every value the threshold can take (brute force)."""
    a = analyze(sql, schema=SCHEMA, cds=CDS, unit="users" if person else None)
    assert len(a.stages) == 2
    outer = a.stages[-1]
    assert f"{MARKER}(1)" in outer.query and a.upper == outer.upper and a.l1 == outer.l1
    assert a.explanation[0].startswith("Two-stage release (docs/rules.md, rule two-stage)")
    exercised = 0.0
    for t in THRESHOLDS:
        worst = _worst(substitute(outer.query, [t]), person, f"{sql}{t}")
        assert worst <= float(a.l1), (t, worst, a.l1)
        exercised = max(exercised, worst)
    assert exercised > 0


@pytest.mark.parametrize(("sql", "person"), [(Q22, True), (Q15, False), (ROWS, False)])
def test_stage_one_is_the_subquery_analysed_on_its_own(sql: str, person: bool) -> None:
    unit = "users" if person else None
    a = analyze(sql, schema=SCHEMA, cds=CDS, unit=unit)
    first = a.stages[0]
    inner = split_stages(sql, None)
    assert inner is not None and first.query == inner.inner[0]
    alone = analyze(inner.inner[0], schema=SCHEMA, cds=CDS, unit=unit)
    assert (first.upper, first.l1, first.lower) == (alone.upper, alone.l1, alone.lower)
    # a lower bound is reported only with its witness
    assert first.lower is None or first.witness is not None


def test_stage_one_of_a_max_is_sound_against_brute_force() -> None:
    """Q15's stage 1 (MAX) at row level: its bound covers every row move."""
    inner = split_stages(Q15, None)
    assert inner is not None
    a = analyze(inner.inner[0], schema=SCHEMA, cds=CDS)
    assert _worst(inner.inner[0], False, "max") <= float(a.l1)


def test_the_json_carries_the_stages_and_validates(tmp_path: Path) -> None:
    schema = tmp_path / "schema.sql"
    schema.write_text(SCHEMA)
    result = CliRunner().invoke(cli, ["analyze", "--sql", Q22, "--format", "json",
                                      "--unit", "users", "--cd", CDS[0], "--schema",
                                      str(schema)])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    Draft202012Validator(load_schema("analyze")).validate(document)
    stages = document["stages"]
    assert [s["role"] for s in stages] == ["threshold", "outer"]
    assert [s["epsilon_share"] for s in stages] == ["1/2", "1/2"]
    assert stages[1]["upper"] == document["sensitivity"]["upper"]
    assert any("rule two-stage" in n for n in document["notes"])
    assert any(line.startswith("Two-stage release") for line in document["explanation"])


@pytest.mark.parametrize("sql", [
    # correlated on the outer row: not one value
    "SELECT COUNT(*) FROM orders o WHERE o.total > (SELECT AVG(p.total) FROM orders p "
    "WHERE p.uid = o.uid AND p.oid <> o.oid)",
    # grouped: not a scalar
    "SELECT COUNT(*) FROM orders WHERE total > (SELECT AVG(total) FROM orders GROUP BY uid)",
    # under OR: not a conjunct
    "SELECT COUNT(*) FROM orders WHERE total > (SELECT AVG(total) FROM orders) OR total = 0",
])
def test_other_scalar_subqueries_stay_refused(sql: str) -> None:
    assert split_stages(sql, None, public=frozenset()) is None
    with pytest.raises(InputError):
        analyze(sql, schema=SCHEMA, cds=CDS)


@pytest.mark.parametrize("unit", ["users", None])
def test_a_threshold_inside_a_private_negation_is_unbounded(unit: str | None) -> None:
    """Not person-local: one added order flips the NOT EXISTS of every user, so the part of
    the flips (rule semi-join-flips) of the second stage is unbounded."""
    sql = ("SELECT COUNT(*) FROM users u WHERE NOT EXISTS (SELECT 1 FROM orders o "
           "WHERE o.total > (SELECT AVG(total) FROM orders))")
    a = analyze(sql, schema=SCHEMA, cds=CDS, unit=unit)
    assert any("semi-join-flips" in line for line in a.explanation)
    assert a.upper == float("inf")


def test_the_person_local_form_at_row_level_is_bounded_by_its_flips() -> None:
    """At row level the anchored NOT EXISTS is no person-local filter: one orders row flips
    it for its one user (users' key), checked on every one-row removal of random databases
    with the threshold fixed at each of THRESHOLDS (the stage's bound holds for every
    value)."""
    a = analyze(LOCAL, schema=SCHEMA, cds=CDS)
    assert any("semi-join-flips" in line for line in a.explanation)
    rng = random.Random(3)
    worst = 0.0
    for threshold in THRESHOLDS:
        sql = LOCAL.replace("(SELECT AVG(total) FROM orders)", str(threshold))
        for _ in range(20):
            conn = _database(rng)
            base = conn.execute(sql).fetchone()[0]
            for table, key, rows in (  # a users row only without orders (foreign key)
                    ("users", "id", "SELECT id FROM users WHERE id NOT IN "
                     "(SELECT uid FROM orders)"), ("orders", "oid", "SELECT oid FROM orders")):
                for (k,) in conn.execute(rows).fetchall():
                    conn.execute("SAVEPOINT s")
                    conn.execute(f"DELETE FROM {table} WHERE {key} = ?", (k,))
                    worst = max(worst, abs(base - conn.execute(sql).fetchone()[0]))
                    conn.execute("ROLLBACK TO s")
    stage2 = a.stages[-1].upper if a.stages else a.upper
    assert 0 < worst <= float(stage2)


def test_a_subquery_over_public_tables_is_not_a_stage() -> None:
    sql = "SELECT COUNT(*) FROM orders WHERE total > (SELECT AVG(age) FROM users)"
    assert split_stages(sql, None, public=frozenset({"users"})) is None
    assert split_stages(sql, None) is not None


# ----------------------------------------------------------------------------- release


def _identity(values: Sequence[float], **_: object) -> tuple[list[float], float]:
    return list(values), 1.0


def _extreme(values: Sequence[float], *, alpha: float, **_: object) -> tuple[float, float]:
    """MIN or MAX without noise (α 0 or 1)."""
    return (max(values) if alpha == 1.0 else min(values)) if values else 0.0, 1.0


def _write(path: Path, conn: sqlite3.Connection) -> None:
    write_db(path, conn)


def _release(tmp: Path, sql: str, *extra: str) -> dict[str, Any]:
    return release_json(tmp, SCHEMA, ["--sql", sql, "--cd", CDS[0], *extra])


def _released(document: dict[str, Any]) -> dict[tuple[object, ...], tuple[float, ...]]:
    out = {}
    for g in document["groups"]:
        values = g["values"] if "values" in g else [g]
        out[tuple(g["group"].values())] = tuple(float(v["value"]) for v in values)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_release_with_the_noise_off_is_the_sql_answer(seed: int, tmp_path: Path) -> None:
    """Random databases (seeded): with the noise off, each stage releases its true value,
    so the answer is the SQL's own, the subquery evaluated by the database."""
    tmp = tmp_path
    conn = _database(random.Random(seed))
    _write(tmp / "d.db", conn)
    keys = tmp / "keys.csv"
    keys.write_text("region\na\nb\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(noise, "sample_laplace", _identity)
        mp.setattr(noise, "sample_quantile", _extreme)
        for sql, unit in ((Q22, ["--unit", "users"]), (Q15, []), (NESTED, ["--unit", "users"])):
            truth = _answer(conn, sql)
            grouped = ["--keys", str(keys)] if "GROUP BY" in sql else []
            document = _release(tmp, sql, *unit, *grouped)
            assert len(document["stages"]) == 2
            got = _released(document)
            # every declared key is released (zeros included); the SQL lists the non-empty
            assert {k: v for k, v in got.items() if k in truth} == truth, (sql, got, truth)
            assert all(not any(v) for k, v in got.items() if k not in truth)
    conn.close()


def test_stage_two_runs_with_the_noisy_value(tmp_path: Path) -> None:
    """With a large offset added by the noise, the literal stage 2 runs is the noisy value,
    and its answer is the SQL's with that literal."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    conn.executemany("INSERT INTO users VALUES (?, ?, ?)",
                     [(1, 3, "a"), (2, 1, "b"), (3, 2, "a"), (4, 0, "b")])
    conn.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(1, 1, 3), (2, 2, 1), (3, 2, 2)])
    _write(tmp_path / "d.db", conn)
    offset = 1000

    def shifted(values: Sequence[float], **_: object) -> tuple[list[float], float]:
        return [v + offset for v in values], 1.0

    ran: list[str] = []
    real = stages_module.substitute

    def spy(sql: str, values: Sequence[float | int | None]) -> str:
        out = real(sql, values)
        ran.append(out)
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(noise, "sample_laplace", shifted)
        mp.setattr(stages_module, "substitute", spy)
        sql = "SELECT COUNT(*) FROM orders WHERE total < (SELECT AVG(total) FROM orders)"
        document = _release(tmp_path, sql)
    true_avg = conn.execute("SELECT AVG(total) FROM orders").fetchone()[0]
    noisy = (6 + offset) / (3 + offset)  # SUM and COUNT both shifted
    assert noisy != true_avg
    assert ran and all(repr(noisy) in text and MARKER not in text for text in ran)
    assert not any(repr(true_avg) in text for text in ran)
    assert repr(noisy) in document["query"]
    with_noisy = conn.execute(f"SELECT COUNT(*) FROM orders WHERE total < {noisy!r}").fetchone()
    assert document["groups"][0]["value"] == with_noisy[0] + offset
    conn.close()


def test_the_ledger_records_both_stages(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "d.db", _database(random.Random(3)))
    ledger = tmp_path / "ledger.sqlite"
    document = _release(tmp_path, Q15, "--ledger", str(ledger))
    entries = read_ledger(ledger)
    assert len(entries) == 2
    assert [e.epsilon for e in entries] == [0.5, 0.5]
    assert [s["epsilon"] for s in document["stages"]] == [0.5, 0.5]
    assert document["ledger"]["epsilon_spent"] == 1
