"""Live databases: reflection, dependency checks and fan-outs on SQLite and PostgreSQL.

No mocks: SQLite runs on temporary files; PostgreSQL on the throwaway cluster
of the session fixture ``pg_server`` (tests/conftest.py, tests/postgres.py).
Without the server binaries the PostgreSQL tests skip, unless
``CQSENS_REQUIRE_POSTGRES=1`` (CI), which makes them fail instead.  Expected
fan-outs and violations are computed in Python from the example's INSERT rows.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

import cqsens
from cqsens.cli.profile import profile
from cqsens.db import (
    OBSERVED_NOTE,
    DatabaseError,
    FanOut,
    check_constraints,
    load_sql_file,
    mask_url,
    measure_fanouts,
    profile_database,
    reflect_schema,
)
from cqsens.errors import InputError, SchemaError
from cqsens.frontend.ddl import load_schema
from cqsens.frontend.parse_cq import parse_dependencies
from cqsens.ir.dependencies import Dependency, Sigma, violations
from cqsens.ir.schema import Schema
from tests.postgres import PG_USER, PgServer, free_port

ROOT = Path(__file__).resolve().parents[1]
HOSPITAL = ROOT / "examples" / "hospital"
SCHEMA_SQL = HOSPITAL / "schema.sql"
DATA_SQL = HOSPITAL / "data.sql"
BAD_SQL = HOSPITAL / "data_violating.sql"
CONSTRAINTS = HOSPITAL / "constraints.txt"
ONCOLOGY = HOSPITAL / "oncology.sql"
DDL = load_schema(SCHEMA_SQL)
assert DDL is not None

Rows = dict[str, list[tuple[object, ...]]]


# --------------------------------------------------------------------------- oracles


def example_rows(data: Path) -> Rows:
    """The example's rows, read by sqlite3 in memory: table (lower case) → rows."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(SCHEMA_SQL.read_text() + data.read_text())
        return {rel.name.lower(): conn.execute(f"SELECT * FROM {rel.name}").fetchall()
                for rel in DDL.relations}
    finally:
        conn.close()


def python_fanouts(rows: Rows) -> dict[tuple[str, int, int], tuple[int, int, int]]:
    """(table, i, j) → (max distinct j per i, distinct i values, rows), NULLs skipped."""
    out = {}
    for rel in DDL.relations:
        data = rows[rel.name.lower()]
        for i in range(len(rel.columns)):
            for j in range(len(rel.columns)):
                if i == j:
                    continue
                groups: dict[object, set[object]] = {}
                count = 0
                for row in data:
                    if row[i] is None:
                        continue
                    count += 1
                    groups.setdefault(row[i], set())
                    if row[j] is not None:
                        groups[row[i]].add(row[j])
                best = max((len(v) for v in groups.values()), default=0)
                out[(rel.name.lower(), i, j)] = (best, len(groups), count)
    return out


def declared_deps(schema: Schema) -> list[Dependency]:
    return parse_dependencies(CONSTRAINTS.read_text().splitlines(), schema=schema,
                              source=str(CONSTRAINTS))


def lowered(deps: list[Dependency]) -> list[Dependency]:
    return [Dependency(d.relation.lower(), d.i, d.j, d.k) for d in deps]


def shape(schema: Schema) -> list[tuple[object, ...]]:
    """Relations without case: name, columns, keys, composite keys, bounds."""
    return [(r.name.lower(), tuple(c.lower() for c in r.columns), r.keys, r.composite_keys,
             r.bounds) for r in schema.relations]


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


CLEAN_ROWS = example_rows(DATA_SQL)
BAD_ROWS = example_rows(BAD_SQL)


def assert_fanouts(fanouts: list[FanOut], rows: Rows) -> None:
    expected = python_fanouts(rows)
    got = {(f.relation.lower(), f.i, f.j): (f.max_count, f.groups, f.rows) for f in fanouts}
    assert got == expected


def assert_profile(url: str, schema: Schema | None, *, bad: bool) -> None:
    rows = BAD_ROWS if bad else CLEAN_ROWS
    reflected = schema or reflect_schema(url)
    report = profile_database(url, schema=schema, deps=declared_deps(reflected))
    # The SQL verdicts agree with the in-Python checker on every declared dependency.
    sigma = Sigma.of(lowered([c.dependency for c in report.checks]))
    python = violations(rows, sigma)
    assert {(d, v, n) for d, v, n in python} == {
        (Dependency(c.dependency.relation.lower(), c.dependency.i, c.dependency.j,
                    c.dependency.k), o.value, o.count)
        for c in report.checks for o in c.offenders
    }
    assert len(report.checks) == len(DDL.key_dependencies()) + 2
    if bad:
        (failed,) = report.violations
        assert failed.label.lower() == "patdoc[pat->doc]<=3"
        assert failed.violating == 1 and failed.max_count == 4
        (offender,) = failed.offenders
        assert (offender.value, offender.count, offender.sample) == (1, 4, (1, 2, 3, 4))
    else:
        assert report.violations == []
        assert all(c.ok for c in report.checks)
    assert_fanouts(list(report.fanouts), rows)
    assert report.note == OBSERVED_NOTE
    # Proposals hold in this data (checked in Python), and only for undeclared pairs.
    declared = {(d.relation.lower(), d.i, d.j) for d in lowered(
        [c.dependency for c in report.checks])}
    for dep in report.proposals:
        assert (dep.relation.lower(), dep.i, dep.j) not in declared
    assert not violations(rows, Sigma.of(lowered(report.proposals)))
    assert Dependency("hos", 1, 0, 2) in lowered(report.proposals)  # two hospitals in NY


# --------------------------------------------------------------------------- SQLite


@pytest.fixture(scope="module")
def sqlite_urls(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    base = tmp_path_factory.mktemp("sqlite")
    clean, bad = f"sqlite:///{base / 'clean.db'}", f"sqlite:///{base / 'bad.db'}"
    load_sql_file(clean, SCHEMA_SQL, DATA_SQL)
    load_sql_file(bad, SCHEMA_SQL, BAD_SQL)
    return clean, bad


def test_sqlite_reflection_equals_the_ddl(sqlite_urls: tuple[str, str]) -> None:
    reflected = reflect_schema(sqlite_urls[0])
    assert reflected.relations == DDL.relations  # names, order, types, keys, bounds
    assert reflected.source == sqlite_urls[0]


def test_sqlite_profile_clean(sqlite_urls: tuple[str, str]) -> None:
    assert_profile(sqlite_urls[0], None, bad=False)
    assert_profile(sqlite_urls[0], DDL, bad=False)


def test_sqlite_profile_finds_the_seeded_violation(sqlite_urls: tuple[str, str]) -> None:
    assert_profile(sqlite_urls[1], None, bad=True)


def test_check_and_measure_one_table(sqlite_urls: tuple[str, str]) -> None:
    (check,) = check_constraints(sqlite_urls[1], DDL, [Dependency("patdoc", 0, 1, 2)],
                                 samples=5)
    # patients 1 (4 doctors) and 6 (3 doctors) break <=2; worst first.
    assert [(o.value, o.count) for o in check.offenders] == [(1, 4), (6, 3)]
    assert check.violating == 2 and check.groups == 12
    fanouts = measure_fanouts(sqlite_urls[0], DDL, tables=["PATDOC"])
    assert {(f.i, f.j, f.max_count) for f in fanouts} == {(0, 1, 3), (1, 0, 4)}


def test_sqlite_reflects_unique_indexes_and_checks(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'extra.db'}"
    ddl = ("CREATE TABLE T (a INTEGER, b TEXT UNIQUE, c REAL CHECK (c >= -1.5), d VARCHAR(20),"
           " e INTEGER, CONSTRAINT ck CHECK ((a BETWEEN 1 AND 10) AND (length(b) > 2)),"
           " UNIQUE (a, d));"
           "CREATE UNIQUE INDEX ix ON T(d); CREATE UNIQUE INDEX partial ON T(e) WHERE e > 0;")
    load_sql_file(url, text=ddl)
    (rel,) = reflect_schema(url).relations
    assert rel.columns == ("a", "b", "c", "d", "e")
    assert rel.keys == (1, 3)  # UNIQUE b, unique index on d; not the partial index on e
    assert rel.composite_keys == ((0, 3),)
    assert rel.bounds == ((0, 1.0, 10.0), (2, -1.5, float("inf")))


def test_sqlite_analysis_with_the_reflected_schema(sqlite_urls: tuple[str, str]) -> None:
    reflected = reflect_schema(sqlite_urls[0])
    for cds in ([], ["PatDoc[1->2]<=3"]):
        ours = cqsens.analyze(ONCOLOGY, schema=reflected, cds=cds, prove_lower=False)
        theirs = cqsens.analyze(ONCOLOGY, schema=DDL, cds=cds, prove_lower=False)
        assert ours.to_dict()["sensitivity"] == theirs.to_dict()["sensitivity"]


def run_profile(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(profile, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_cli_text_json_strict_and_output(sqlite_urls: tuple[str, str], tmp_path: Path) -> None:
    clean, bad = sqlite_urls
    code, out, err = run_profile("--db", bad, "--constraints", str(CONSTRAINTS))
    assert code == 0, err
    assert re.search(r"FAIL\s+PatDoc\[pat->doc\]<=3", out)
    assert "pat = 1: 4 distinct doc (1, 2, 3, 4)" in out
    assert "8 dependencies checked, 1 violated." in out
    assert OBSERVED_NOTE in out
    assert re.search(r"Hos\s+loc -> id\s+2\s+3\s+-\s+Hos\[loc->id\]<=2", out)

    code, _, err = run_profile("--db", bad, "--constraints", str(CONSTRAINTS), "--strict")
    assert code == 1 and "violated" in one_line(err)
    code, _, _ = run_profile("--db", clean, "--constraints", str(CONSTRAINTS), "--strict")
    assert code == 0

    code, out, _ = run_profile("--db", bad, "--schema", str(SCHEMA_SQL), "--format", "json",
                               "--cd", "PatDoc[doc->pat]<=3", "--fd", "Doc[hos->specialty]")
    assert code == 0
    data = json.loads(out)
    failed = {c["dependency"] for c in data["checks"] if not c["ok"]}
    assert failed == {"PatDoc[doc->pat]<=3", "Doc[hos->specialty]"}  # doc 1: 4 patients
    assert data["proposals_note"] == OBSERVED_NOTE and data["violations"] == 2

    target = tmp_path / "observed.txt"
    code, _, err = run_profile("--db", clean, "-o", str(target))
    assert code == 0 and "observed in this data, not guaranteed" in err
    text = target.read_text()
    assert text.startswith("#") and "NOT GUARANTEED" in text.splitlines()[0]
    proposed = parse_dependencies(text.splitlines(), schema=DDL, source=str(target))
    assert "Hos[loc->id]<=2" in text
    assert len(proposed) == len(re.findall(r"^\w", text, re.MULTILINE))
    assert not violations(CLEAN_ROWS, Sigma.of(lowered(proposed)))
    # The file feeds the other commands: analysis with it bounds the oncology query.
    bounded = cqsens.analyze(ONCOLOGY, schema=DDL, constraints=target, prove_lower=False)
    assert bounded.upper != float("inf")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--db", "nonsense"], "not a database URL"),
        (["--db", "hospital.db"], "sqlite:///hospital.db"),
        (["--db", "mysql://u:pw@localhost/x"], "unsupported database"),
        (["--db", "sqlite:////nonexistent/dir/h.db"], "SQLite database file not found"),
        (["--db", "{clean}", "--cd", "PatDoc[pat->nurse]<=3"], "no column 'nurse'"),
        (["--db", "{clean}", "--schema", "{extra}"], "table Ward is not in the database"),
        (["--db", "{clean}", "--schema", "{morecols}"], "has no column floor"),
    ],
)
def test_cli_bad_input_is_one_line(sqlite_urls: tuple[str, str], tmp_path: Path,
                                   args: list[str], needle: str) -> None:
    extra = tmp_path / "extra.sql"
    extra.write_text(SCHEMA_SQL.read_text() + "\nCREATE TABLE Ward (id INTEGER, pat INTEGER);")
    morecols = tmp_path / "morecols.sql"
    morecols.write_text(SCHEMA_SQL.read_text().replace("loc  TEXT", "loc TEXT, floor INTEGER"))
    args = [a.format(clean=sqlite_urls[0], extra=extra, morecols=morecols) for a in args]
    code, out, err = run_profile(*args)
    assert code == 1 and out == ""
    assert needle in one_line(err) and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cli_usage_error() -> None:
    code, _, err = run_profile("--constraints", str(CONSTRAINTS))
    assert code == 2 and "--db" in err


def test_mask_url_hides_passwords() -> None:
    assert mask_url("postgresql://u:p%40ss@h:5/d") == "postgresql://u:***@h:5/d"
    assert mask_url("postgresql+psycopg://u:a@b@h/d") == "postgresql+psycopg://u:***@h/d"
    assert mask_url("postgresql://u@h/d?sslmode=x&password=zz") == \
        "postgresql://u@h/d?sslmode=x&password=***"
    assert mask_url("postgresql://u@h/d") == "postgresql://u@h/d"
    with pytest.raises(DatabaseError) as info:
        reflect_schema("sqlite:///:memory:")
    assert "in-memory" in str(info.value)


# --------------------------------------------------------------------------- PostgreSQL

def test_pg_reflection_equals_the_ddl(pg_urls: tuple[str, str]) -> None:
    reflected = reflect_schema(pg_urls[0])
    assert [r.name for r in reflected.relations] == ["hos", "pat", "doc", "patdoc"]  # folded
    assert shape(reflected) == shape(DDL)
    assert [r.types for r in reflected.relations] == [r.types for r in DDL.relations]
    assert reflected.find("PatDoc") is reflected.find("patdoc")
    assert "***" in reflected.source and "pw-" not in reflected.source


def test_pg_profile(pg_urls: tuple[str, str]) -> None:
    assert_profile(pg_urls[0], None, bad=False)
    assert_profile(pg_urls[0], DDL, bad=False)  # mixed-case DDL names, lower-case tables
    assert_profile(pg_urls[1], None, bad=True)
    # Dependencies spelt as in the DDL keep their origin against the reflected names.
    deps = declared_deps(DDL)
    report = profile_database(pg_urls[1], deps=deps, origins=dict.fromkeys(deps, "rules"))
    assert [c.label for c in report.checks if c.origin == "rules"] == [
        "patdoc[pat->doc]<=3", "patdoc[doc->pat]<=50"]


def test_pg_profiling_connections_are_read_only(pg_urls: tuple[str, str]) -> None:
    import sqlalchemy as sa

    from cqsens.db.connect import connect

    with pytest.raises(DatabaseError) as info, connect(pg_urls[0]) as conn:
        conn.execute(sa.text("CREATE TABLE scratch (a INTEGER)"))
    assert "read-only" in str(info.value)


def test_pg_cli(pg_urls: tuple[str, str], pg_server: PgServer, tmp_path: Path) -> None:
    code, out, err = run_profile("--db", pg_urls[1], "--schema", str(SCHEMA_SQL),
                                 "--constraints", str(CONSTRAINTS))
    assert code == 0, err
    assert "pat = 1: 4 distinct doc (1, 2, 3, 4)" in out
    assert pg_server.password not in out and "cqsens:***@" in out
    code, out, _ = run_profile("--db", pg_urls[1], "--constraints", str(CONSTRAINTS),
                               "--format", "json", "--strict", "-o", str(tmp_path / "o.txt"))
    assert code == 1
    data = json.loads(out)
    assert [c["dependency"] for c in data["checks"] if not c["ok"]] == ["patdoc[pat->doc]<=3"]
    assert_fanouts([FanOut(f["relation"], f["i"] - 1, f["j"] - 1, tuple(f["columns"]),
                           f["max_count"], f["groups"], f["declared"], f["rows"])
                    for f in data["fanouts"]], BAD_ROWS)
    proposed = parse_dependencies((tmp_path / "o.txt").read_text().splitlines(),
                                  schema=reflect_schema(pg_urls[1]))
    assert Dependency("hos", 1, 0, 2) in proposed


def test_pg_analysis_with_the_reflected_schema(pg_urls: tuple[str, str]) -> None:
    reflected = reflect_schema(pg_urls[0])
    for cds in ([], ["PatDoc[1->2]<=3"]):
        ours = cqsens.analyze(ONCOLOGY, schema=reflected, cds=cds, prove_lower=False)
        theirs = cqsens.analyze(ONCOLOGY, schema=DDL, cds=cds, prove_lower=False)
        assert ours.to_dict()["sensitivity"] == theirs.to_dict()["sensitivity"]
    assert cqsens.analyze(ONCOLOGY, schema=reflected, cds=["PatDoc[1->2]<=3"],
                          prove_lower=False).upper != float("inf")


def test_pg_check_bounds_casts_and_quoted_names(pg_server: PgServer) -> None:
    url = pg_server.url()
    load_sql_file(url, text='CREATE TABLE "Ward" ("Id" INTEGER PRIMARY KEY, '
                            "x NUMERIC CHECK (x >= -5 AND x < 100.5), y INTEGER CHECK (y >= -3), "
                            "z INTEGER, UNIQUE (y, z));"
                            'INSERT INTO "Ward" VALUES (1, 0, 1, 7), (2, 1, 1, 8), (3, 2, 2, 7);')
    rel = reflect_schema(url).find("ward")
    assert rel is not None and rel.name == "Ward" and rel.columns == ("Id", "x", "y", "z")
    assert rel.keys == (0,) and rel.composite_keys == ((2, 3),)
    assert rel.bounds == ((1, -5.0, 100.5), (2, -3.0, float("inf")))
    report = profile_database(url, deps=[Dependency("ward", 2, 3, 1)])
    bad = report.violations
    assert [(c.label, c.offenders[0].value, c.offenders[0].count) for c in bad] == \
        [("Ward[y->z]", 1, 2)]


def test_pg_wrong_password_is_masked(pg_server: PgServer) -> None:
    wrong = "Wr0ng-" + secrets.token_hex(6)
    url = pg_server.url(password=wrong)
    with pytest.raises(InputError) as info:
        reflect_schema(url)
    message = str(info.value)
    assert "\n" not in message and wrong not in message
    assert "password authentication failed" in message and "cqsens:***@" in message
    assert info.value.construct == "--db"
    code, out, err = run_profile("--db", url)
    assert code == 1 and out == "" and wrong not in err
    assert "password authentication failed" in one_line(err)


def test_pg_unreachable_and_missing_database(pg_server: PgServer) -> None:
    closed = free_port()
    url = f"postgresql://{PG_USER}:{pg_server.password}@127.0.0.1:{closed}/hospital"
    code, out, err = run_profile("--db", url)
    line = one_line(err)
    assert code == 1 and out == "" and "cannot connect" in line
    assert pg_server.password not in line and f"127.0.0.1:{closed}" in line
    with pytest.raises(DatabaseError) as info:
        reflect_schema(pg_server.url("no_such_db"))
    assert "no_such_db" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(SchemaError):
        check_constraints(pg_server.url("hospital"), load_schema(
            "CREATE TABLE Nurse (id INT PRIMARY KEY, ward INT)"), [Dependency("Nurse", 0, 1)])


def test_folded_dates_agree_with_postgresql(pg_server: PgServer) -> None:
    """Month and year arithmetic as PostgreSQL computes it (the day clamped to the month's
    end), on end-of-month days, leap days and random days, forwards and backwards."""
    import datetime
    import random

    import sqlalchemy as sa

    from cqsens.frontend.dates import shift_date

    rnd = random.Random(11)
    days = [datetime.date(2000, 2, 29), datetime.date(1993, 1, 31), datetime.date(1999, 12, 31),
            datetime.date(1996, 3, 30)] + [datetime.date(1990, 1, 1) + datetime.timedelta(
                rnd.randrange(12_000)) for _ in range(150)]
    cases = [(d, rnd.randrange(-40, 41), rnd.choice(["DAY", "WEEK", "MONTH", "YEAR"]))
             for d in days]
    engine = sa.create_engine(pg_server.url(scheme="postgresql+psycopg"))
    try:
        with engine.connect() as conn:
            for day, amount, unit in cases:
                got = conn.execute(sa.text("SELECT CAST(CAST(:d AS DATE) + CAST(:i AS INTERVAL) "
                                           "AS DATE)"),
                                   {"d": day.isoformat(), "i": f"{amount} {unit}"}).scalar_one()
                assert shift_date(day, amount, unit) == got, (day, amount, unit)
    finally:
        engine.dispose()
