"""``FILTER (WHERE p)`` on aggregates (issue 23), read as its CASE form.

The bound of the rewritten query is checked against brute force: the original SQL, FILTER
clause included, evaluated in SQLite on small random databases and every neighbour (one row
at row level; one person with their rows under ``--unit``).  The rewrite itself is checked
to give SQLite's own answer, NULLs included, and the release with the noise off to be the
user's query."""

from __future__ import annotations

import json
import math
import random
import sqlite3
from pathlib import Path

import pytest
import sqlglot
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from cqsens import analyze
from cqsens.cli.main import cli
from cqsens.errors import UnsupportedQueryError
from cqsens.frontend.filters import rewrite_filters

SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, age INTEGER NOT NULL CHECK (age BETWEEN 0 AND 3));
CREATE TABLE visits (vid INTEGER PRIMARY KEY, uid INTEGER NOT NULL REFERENCES users(id),
                     g TEXT NOT NULL, y INTEGER NOT NULL CHECK (y BETWEEN 0 AND 3),
                     x INTEGER CHECK (x BETWEEN 0 AND 5));
"""
CDS = ["visits[uid->vid]<=2"]

#: (SQL, whether its values are averages or extremes, compared only where both are defined)
QUERIES = [
    ("SELECT COUNT(*) FILTER (WHERE y > 1) FROM visits", False),
    ("SELECT g, COUNT(*) FILTER (WHERE y >= 2) FROM visits GROUP BY g", False),
    ("SELECT COUNT(x) FILTER (WHERE y < 2) FROM visits", False),
    ("SELECT g, SUM(x) FILTER (WHERE y = 1) FROM visits GROUP BY g", False),
    ("SELECT SUM(x) FILTER (WHERE x > 2), COUNT(*) FILTER (WHERE x IS NULL) FROM visits",
     False),
    ("SELECT COUNT(*) FILTER (WHERE u.age > 1) FROM visits v, users u WHERE v.uid = u.id",
     False),
    ("SELECT AVG(x) FILTER (WHERE y > 0) FROM visits", True),
    ("SELECT g, MIN(x) FILTER (WHERE y > 0) FROM visits GROUP BY g", True),
    ("SELECT MAX(x) FILTER (WHERE y < 3) FROM visits", True),
]

Released = dict[tuple[object, ...], tuple[object, ...]]


def _released(conn: sqlite3.Connection, sql: str) -> Released:
    cursor = conn.execute(sql)
    keys = sum(1 for d in cursor.description if d[0] == "g")
    return {tuple(r[:keys]): tuple(r[keys:]) for r in cursor.fetchall()}


def _change(a: Released, b: Released, defined_only: bool) -> float:
    """ℓ1 change of the released values; a missing group or a NULL is 0 for counts and sums,
    and an average or extreme is compared only where both are defined (docs/rules.md, rules
    avg and min-max)."""
    total = 0.0
    for key in set(a) | set(b):
        left, right = a.get(key), b.get(key)
        n = len(left if left is not None else right or ())
        for i in range(n):
            x = None if left is None else left[i]
            y = None if right is None else right[i]
            if defined_only and (x is None or y is None):
                continue
            total += abs(float(x or 0) - float(y or 0))
    return total


def _database(rng: random.Random) -> dict[str, list[tuple[object, ...]]]:
    users = [(u, rng.randint(0, 3)) for u in range(1, rng.randint(2, 4) + 1)]
    visits: list[tuple[object, ...]] = []
    for u, _ in users:
        for _ in range(rng.randint(0, 2)):
            visits.append((len(visits) + 1, u, rng.choice("ab"), rng.randint(0, 3),
                           rng.choice([None, *range(6)])))
    return {"users": users, "visits": visits}


def _connect(db: dict[str, list[tuple[object, ...]]]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    conn.executemany("INSERT INTO users VALUES (?, ?)", db["users"])
    conn.executemany("INSERT INTO visits VALUES (?, ?, ?, ?, ?)", db["visits"])
    return conn


def _row_neighbours(rng: random.Random, db: dict[str, list[tuple[object, ...]]]
                    ) -> list[dict[str, list[tuple[object, ...]]]]:
    """Every visit removed, and random visits added (each keeping at most 2 per user)."""
    out = [{**db, "visits": db["visits"][:i] + db["visits"][i + 1:]}
           for i in range(len(db["visits"]))]
    for _ in range(12):
        u = rng.choice(db["users"])[0]
        if sum(1 for v in db["visits"] if v[1] == u) < 2:
            row = (100, u, rng.choice("ab"), rng.randint(0, 3), rng.choice([None, 0, 5]))
            out.append({**db, "visits": [*db["visits"], row]})
    return out


def _person_neighbours(rng: random.Random, db: dict[str, list[tuple[object, ...]]]
                       ) -> list[dict[str, list[tuple[object, ...]]]]:
    """Every user removed with their visits, and random new users with up to 2 visits."""
    out = [{"users": [r for r in db["users"] if r[0] != u],
            "visits": [v for v in db["visits"] if v[1] != u]} for u, _ in db["users"]]
    for _ in range(12):
        visits = [(100 + i, 50, rng.choice("ab"), rng.randint(0, 3), rng.choice([None, 0, 5]))
                  for i in range(rng.randint(0, 2))]
        out.append({"users": [*db["users"], (50, rng.randint(0, 3))],
                    "visits": [*db["visits"], *visits]})
    return out


@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize(("sql", "defined_only"), QUERIES)
def test_filter_bound_holds_against_brute_force(sql: str, defined_only: bool,
                                                unit: bool) -> None:
    a = analyze(sql, schema=SCHEMA, cds=CDS, unit="users" if unit else None,
                prove_lower=False)
    assert a.upper < math.inf
    rng = random.Random(f"{sql}{unit}")
    worst = 0.0
    for _ in range(25):
        db = _database(rng)
        base = _released(_connect(db), sql)
        moves = _person_neighbours(rng, db) if unit else _row_neighbours(rng, db)
        for moved in moves:
            worst = max(worst, _change(base, _released(_connect(moved), sql), defined_only))
    assert worst <= a.upper, (sql, worst, a.upper)
    assert worst > 0  # the brute force moves the answer: the check is not vacuous


@pytest.mark.parametrize(("written", "case_form"), [
    ("COUNT(*) FILTER (WHERE y > 1)", "COUNT(CASE WHEN y > 1 THEN 1 END)"),
    ("SUM(x) FILTER (WHERE y > 1)", "SUM(CASE WHEN y > 1 THEN x END)"),
    ("AVG(x) FILTER (WHERE y > 1)", "AVG(CASE WHEN y > 1 THEN x END)"),
])
def test_the_clause_is_analysed_as_its_case_form(written: str, case_form: str) -> None:
    a = analyze(f"SELECT g, {written} FROM visits GROUP BY g", schema=SCHEMA, cds=CDS,
                unit="users", prove_lower=False)
    b = analyze(f"SELECT g, {case_form} FROM visits GROUP BY g", schema=SCHEMA, cds=CDS,
                unit="users", prove_lower=False)
    assert (a.upper, a.l2) == (b.upper, b.l2)
    assert [(r.kind, r.l1) for r in a.aggregates] == [(r.kind, r.l1) for r in b.aggregates]


CONDITIONS = ["y > 1", "x IS NULL", "x > y", "y = 2 OR x < 3", "NOT (x = 1)", "x IN (1, 2)"]
AGGREGATES = ["COUNT(*)", "COUNT(x)", "SUM(x)", "AVG(x)", "MIN(x)", "MAX(x)", "SUM(y)"]


@given(st.sampled_from(AGGREGATES), st.sampled_from(CONDITIONS), st.integers(0, 10**6),
       st.booleans())
def test_the_case_form_is_sqlites_answer(aggregate: str, condition: str, seed: int,
                                         grouped: bool) -> None:
    """The rewrite gives what SQLite computes for the FILTER clause, NULLs and empty
    inputs included."""
    group = " GROUP BY g ORDER BY g" if grouped else ""
    sql = f"SELECT {aggregate} FILTER (WHERE {condition}) FROM visits{group}"
    rewritten = rewrite_filters(sqlglot.parse_one(sql), source="<sql>", dialect=None).sql()
    assert "FILTER" not in rewritten.upper()
    conn = _connect(_database(random.Random(seed)))
    assert conn.execute(rewritten).fetchall() == conn.execute(sql).fetchall()


@pytest.mark.parametrize("dialect", [None, "postgres"])
def test_both_dialects_read_the_clause(dialect: str | None) -> None:
    a = analyze("SELECT g, SUM(x) FILTER (WHERE y > 1) FROM visits GROUP BY g", schema=SCHEMA,
                dialect=dialect, prove_lower=False)
    assert a.upper == 5 and a.aggregates[0].kind == "sum"


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(DISTINCT x) FILTER (WHERE y > 1) FROM visits",
    "SELECT SUM(DISTINCT x) FILTER (WHERE y > 1) FROM visits",
])
def test_distinct_with_filter_is_refused_by_name(sql: str) -> None:
    with pytest.raises(UnsupportedQueryError, match=r"FILTER \(WHERE") as info:
        analyze(sql, schema=SCHEMA)
    assert info.value.construct == "FILTER (WHERE ...)"


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("sql", [
    "SELECT g, COUNT(*) FILTER (WHERE y > 1) AS n FROM visits GROUP BY g",
    "SELECT g, SUM(x) FILTER (WHERE y < 2) AS s, COUNT(x) FILTER (WHERE x > 1) AS c "
    "FROM visits GROUP BY g",
    "SELECT g, COUNT(*) AS n FROM visits GROUP BY g HAVING COUNT(*) FILTER (WHERE y > 0) >= 1",
])
def test_release_with_the_noise_off_is_the_users_query(tmp_path: Path, noiseless: None,
                                                       sql: str, seed: int) -> None:
    path, schema = tmp_path / "v.db", tmp_path / "schema.sql"
    schema.write_text(SCHEMA)
    db = _database(random.Random(seed))
    while not db["visits"]:
        db = _database(random.Random(seed + 100))
    conn = _connect(db)
    conn.execute(f"ATTACH '{path}' AS f")
    conn.executescript(SCHEMA.replace("CREATE TABLE ", "CREATE TABLE f."))
    conn.execute("INSERT INTO f.users SELECT * FROM users")
    conn.execute("INSERT INTO f.visits SELECT * FROM visits")
    conn.commit()
    truth = [list(r) for r in conn.execute(sql).fetchall()]
    conn.close()
    keys = tmp_path / "keys.csv"
    keys.write_text("g\na\nb\n")
    result = CliRunner().invoke(cli, ["release", "--sql", sql, "--schema", str(schema),
                                      "--db", f"sqlite:///{path}", "--epsilon", "1",
                                      "--keys", str(keys), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    got = {}
    for g in doc["groups"]:
        values = g.get("values") or [{"value": g["value"]}]
        got[g["group"]["g"]] = [v["value"] for v in values]
    for row in truth:
        assert got[row[0]] == [v if v is not None else 0 for v in row[1:]] \
            or got[row[0]] == row[1:], (sql, got, truth)
