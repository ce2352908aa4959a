"""``cqsens profile`` on composite and rows-per-value dependencies and on foreign keys.

Small hand-built databases on SQLite and PostgreSQL (the throwaway cluster of
``test_database.py``; those tests skip without the server binaries).  The
database holds the bare tables (no key, no foreign key, so the data can break
them, as SQLite's does when ``PRAGMA foreign_keys`` is off); the schema with
the keys and foreign keys comes from DDL text.  Expected counts are written
out by hand, and a property test compares the SQL checks with a Python
oracle on random tables with NULLs and duplicate rows.
"""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from cqsens.cli.profile import profile
from cqsens.db import load_sql_file, profile_database
from cqsens.db.check import ConstraintCheck, Offender, check_constraints, check_foreign_keys
from cqsens.db.profile import declared_dependencies
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.parse_cq import ROWS, parse_dependency
from cqsens.ir.dependencies import AnyDependency, Dependency, MultiDependency
from cqsens.ir.schema import Schema
from tests.postgres import PgServer

SCHEMA_DDL = """
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE orders (oid INTEGER PRIMARY KEY, uid INTEGER REFERENCES users(id),
                     parent INTEGER REFERENCES orders(oid));
CREATE TABLE logins (acct INTEGER, device TEXT, day INTEGER);
CREATE TABLE slots (x INTEGER, y INTEGER, PRIMARY KEY (x, y));
CREATE TABLE visits (a INTEGER, b INTEGER, c INTEGER, sx INTEGER, sy INTEGER,
                     FOREIGN KEY (sx, sy) REFERENCES slots(x, y));
CREATE TABLE lines (o INTEGER, n INTEGER, qty INTEGER, PRIMARY KEY (o, n));
"""

BARE_DDL = """
CREATE TABLE users (id INTEGER, name TEXT);
CREATE TABLE orders (oid INTEGER, uid INTEGER, parent INTEGER);
CREATE TABLE logins (acct INTEGER, device TEXT, day INTEGER);
CREATE TABLE slots (x INTEGER, y INTEGER);
CREATE TABLE visits (a INTEGER, b INTEGER, c INTEGER, sx INTEGER, sy INTEGER);
CREATE TABLE lines (o INTEGER, n INTEGER, qty INTEGER);
"""

ROWS_SQL = """
INSERT INTO users VALUES (1, 'ann'), (2, 'bob');
INSERT INTO orders VALUES (10, 1, NULL), (11, 2, 10), (12, 7, 99), (13, 7, NULL),
                          (14, 8, NULL), (15, NULL, NULL);
INSERT INTO logins VALUES (1, 'x', 1), (1, 'x', 1), (1, 'x', 1), (1, 'y', 2), (2, 'x', 1),
                          (3, NULL, 4), (NULL, 'z', 3), (NULL, 'z', 3);
INSERT INTO slots VALUES (1, 1), (1, 2);
INSERT INTO visits VALUES (1, 1, 1, 1, 1), (1, 1, 2, 1, 2), (1, 1, NULL, 2, 1),
                          (1, 2, 5, 1, NULL), (NULL, 1, 7, 5, 5), (2, 2, 3, 2, 2),
                          (2, 2, 3, NULL, NULL);
INSERT INTO lines VALUES (1, 1, 5), (1, 1, 6), (1, 2, 5), (2, 1, NULL);
"""

# The same tables with every foreign key satisfied (and the keys kept).
CLEAN_SQL = """
INSERT INTO users VALUES (1, 'ann'), (2, 'bob');
INSERT INTO orders VALUES (10, 1, NULL), (11, 2, 10), (15, NULL, NULL);
INSERT INTO slots VALUES (1, 1), (1, 2);
INSERT INTO visits VALUES (1, 1, 1, 1, 1), (2, 2, 3, NULL, 2);
"""

SCHEMA = schema_from_ddl(SCHEMA_DDL)

MakeDb = Callable[[str], str]


@pytest.fixture(scope="module")
def sqlite_db(tmp_path_factory: pytest.TempPathFactory) -> MakeDb:
    base = tmp_path_factory.mktemp("profile-checks")
    counter = itertools.count()

    def make(data: str) -> str:
        url = f"sqlite:///{base / f'db{next(counter)}.db'}"
        load_sql_file(url, text=BARE_DDL + data)
        return url

    return make


@pytest.fixture(scope="module")
def pg_db(pg_server: PgServer) -> MakeDb:
    import sqlalchemy as sa

    counter = itertools.count()

    def make(data: str) -> str:
        name = f"profile_checks_{next(counter)}"
        engine = sa.create_engine(pg_server.url(scheme="postgresql+psycopg"),
                                  isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
        engine.dispose()
        url = pg_server.url(name)
        load_sql_file(url, text=BARE_DDL + data)
        return url

    return make


@pytest.fixture(params=["sqlite", "postgresql"])
def make_db(request: pytest.FixtureRequest) -> MakeDb:
    fixture = "sqlite_db" if request.param == "sqlite" else "pg_db"
    made: MakeDb = request.getfixturevalue(fixture)
    return made


@pytest.fixture
def url(make_db: MakeDb) -> str:
    return make_db(ROWS_SQL)


def dep(text: str) -> AnyDependency:
    return parse_dependency(text, schema=SCHEMA)


def check(url: str, text: str) -> ConstraintCheck:
    (result,) = check_constraints(url, SCHEMA, [dep(text)], samples=3)
    return result


# --------------------------------------------------------------------------- composite


def test_composite_dependency_groups_by_all_sources(url: str) -> None:
    c = check(url, "visits[a,b->c]<=1")
    assert isinstance(c.dependency, MultiDependency)
    assert c.kind == "composite" and c.columns == ("a", "b", "c")
    # (1,1) has c in {1, 2} (NULL not counted), (1,2) {5}, (2,2) {3}; a NULL a is skipped.
    assert (c.groups, c.max_count, c.violating) == (3, 2, 1)
    assert c.offenders == (Offender((1, 1), 2, (1, 2)),)
    assert c.summary() == "1 (a, b) value with more than 1 distinct c (max 2)"
    loose = check(url, "visits[a,b->c]<=2")
    assert loose.ok and loose.summary() == "at most 2 c per (a, b) (declared 2)"
    fd = check(url, "logins[acct,device->day]")
    assert fd.ok and (fd.groups, fd.max_count) == (3, 1)  # (3, NULL) and (NULL, 'z') skipped
    assert fd.label == "logins[acct,device->day]"


def test_composite_json_adds_fields(url: str) -> None:
    data = check(url, "visits[a,b->c]<=1").to_dict()
    assert data == {
        "dependency": "visits[a,b->c]", "relation": "visits", "i": [1, 2], "j": 3,
        "kind": "composite", "sources": [1, 2], "columns": ["a", "b", "c"], "k": 1,
        "origin": "", "ok": False, "groups": 3, "max_count": 2, "violating": 1,
        "offenders": [{"value": [1, 1], "count": 2, "sample": [1, 2]}],
    }


# --------------------------------------------------------------------------- rows per value


def test_rows_per_value_counts_duplicate_rows(url: str) -> None:
    c = check(url, "logins[acct->*]<=2")
    assert c.dependency == Dependency("logins", 0, ROWS, 2)
    assert c.kind == "rows" and c.columns == ("acct", "*")
    # acct 1: four rows, three of them equal (two distinct devices only).
    assert (c.groups, c.max_count, c.violating) == (3, 4, 1)
    (offender,) = c.offenders
    assert offender.value == 1 and offender.count == 4
    assert offender.sample == ((1, "x", 1), (1, "x", 1), (1, "x", 1), (1, "y", 2))
    assert c.summary() == "1 acct value with more than 2 rows (max 4)"
    assert c.label == "logins[acct->*]<=2"
    ok = check(url, "logins[acct->*]<=4")
    assert ok.ok and ok.summary() == "at most 4 rows per acct (declared 4)"
    distinct = check(url, "logins[acct->device]<=2")  # the set view sees 2, not 4
    assert distinct.ok and distinct.max_count == 2
    data = c.to_dict()
    assert (data["kind"], data["i"], data["j"], data["sources"]) == ("rows", 1, None, [1])
    assert data["offenders"][0]["sample"][0] == [1, "x", 1]


def test_rows_per_composite_value(url: str) -> None:
    c = check(url, "logins[acct,device->*]<=2")
    assert (c.groups, c.max_count, c.violating) == (3, 3, 1)
    assert c.offenders == (Offender((1, "x"), 3, ((1, "x", 1),) * 3),)
    assert c.summary() == "1 (acct, device) value with more than 2 rows (max 3)"


def test_composite_key_fds_are_checked(url: str) -> None:
    report = profile_database(url, schema=SCHEMA)
    by_label = {c.label: c for c in report.checks}
    key = by_label["lines[o,n->qty]"]
    assert key.origin == "key lines(o, n)"
    assert (key.groups, key.max_count, key.violating) == (3, 2, 1)
    assert key.offenders == (Offender((1, 1), 2, (5, 6)),)
    assert by_label["orders[oid->uid]"].ok  # the single-column key FDs are still there
    # slots' key covers every column: no FD to check.
    assert not any(c.dependency.relation == "slots" for c in report.checks)


# --------------------------------------------------------------------------- foreign keys


def test_foreign_keys_count_missing_references(url: str) -> None:
    checks = {f.label: f for f in check_foreign_keys(url, SCHEMA, samples=3)}
    assert set(checks) == {"orders(uid) → users(id)", "orders(parent) → orders(oid)",
                           "visits(sx, sy) → slots(x, y)"}
    uid = checks["orders(uid) → users(id)"]
    assert (uid.rows, uid.missing) == (5, 3)  # 12 and 13 -> user 7, 14 -> user 8; 15 is NULL
    assert uid.offenders == (Offender(7, 2), Offender(8, 1))
    assert uid.summary() == "3 of 5 non-NULL references match no users row"
    parent = checks["orders(parent) → orders(oid)"]  # references its own table
    assert (parent.rows, parent.missing, parent.offenders) == (2, 1, (Offender(99, 1),))
    pair = checks["visits(sx, sy) → slots(x, y)"]
    # a NULL in either column references nothing (two rows exempt)
    assert (pair.rows, pair.missing) == (5, 3)
    assert pair.offenders == (Offender((2, 1), 1), Offender((2, 2), 1), Offender((5, 5), 1))
    assert pair.to_dict() == {
        "foreign_key": "visits(sx, sy) → slots(x, y)", "relation": "visits",
        "columns": ["sx", "sy"], "positions": [4, 5], "target": "slots",
        "referenced": ["x", "y"], "ok": False, "rows": 5, "missing": 3,
        "offenders": [{"value": [2, 1], "count": 1, "sample": []},
                      {"value": [2, 2], "count": 1, "sample": []},
                      {"value": [5, 5], "count": 1, "sample": []}],
    }
    few = check_foreign_keys(url, SCHEMA, samples=1)
    assert [len(f.offenders) for f in few] == [1, 1, 1]
    assert [f.missing for f in few] == [3, 1, 3]


def test_satisfied_foreign_keys(make_db: MakeDb) -> None:
    url = make_db(CLEAN_SQL)
    checks = check_foreign_keys(url, SCHEMA)
    assert [(f.rows, f.missing, f.ok) for f in checks] == [(2, 0, True), (1, 0, True),
                                                           (1, 0, True)]
    assert checks[0].summary() == "2 non-NULL references, every one found in users"
    report = profile_database(url, schema=SCHEMA)
    assert report.violated == 0 and report.broken_foreign_keys == []


def test_profile_counts_broken_foreign_keys_as_violations(url: str) -> None:
    deps, origins = declared_dependencies(SCHEMA, cds=("logins[acct->*]<=4",))
    report = profile_database(url, schema=SCHEMA, deps=deps, origins=origins)
    assert [c.label for c in report.violations] == ["lines[o,n->qty]"]
    assert len(report.broken_foreign_keys) == 3 and report.violated == 4
    data = report.to_dict()
    assert data["violations"] == 4 and data["foreign_key_violations"] == 3
    assert [f["missing"] for f in data["foreign_keys"]] == [3, 1, 3]
    without = profile_database(url, schema=SCHEMA, foreign_keys=False)
    assert without.foreign_keys == () and without.violated == 1


# --------------------------------------------------------------------------- command line


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(profile, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "schema.sql"
    path.write_text(SCHEMA_DDL)
    return path


def test_cli_text(url: str, schema_file: Path) -> None:
    code, out, err = run("--db", url, "--schema", str(schema_file),
                         "--cd", "logins[acct->*]<=2", "--cd", "visits[a,b->c]<=1")
    assert code == 0, err
    assert re.search(r"FAIL\s+logins\[acct->\*\]<=2\s+--cd\s+1 acct value with more than 2 "
                     r"rows \(max 4\)", out)
    assert "acct = 1: 4 rows ((1, 'x', 1) ×3, (1, 'y', 2))" in out  # repeated rows said once
    assert "(a, b) = (1, 1): 2 distinct c (1, 2)" in out
    assert re.search(r"FAIL\s+lines\[o,n->qty\]\s+key lines\(o, n\)", out)
    assert "3 dependencies checked" not in out
    assert re.search(r"\d+ dependencies checked, 3 violated\.", out)
    assert re.search(r"FAIL\s+orders\(uid\) → users\(id\)\s+3 of 5 non-NULL references "
                     r"match no users row", out)
    assert "uid = 7: 2 rows, no such users row" in out
    assert "(sx, sy) = (2, 1): 1 row, no such slots row" in out
    assert "3 foreign keys checked, 3 broken." in out


def test_cli_strict_and_json(url: str, make_db: MakeDb, schema_file: Path) -> None:
    # The key of lines and three foreign keys are broken; --cd holds.
    code, _, err = run("--db", url, "--schema", str(schema_file), "--strict",
                       "--cd", "logins[acct->*]<=4")
    assert code == 1
    assert err.strip() == ("error: 1 declared dependency and 3 foreign keys are violated in "
                           "the database")
    clean = make_db(CLEAN_SQL)
    code, _, err = run("--db", clean, "--schema", str(schema_file), "--strict")
    assert code == 0, err
    code, _, _ = run("--db", make_db(CLEAN_SQL + "INSERT INTO orders VALUES (16, 9, NULL);"),
                     "--schema", str(schema_file))
    assert code == 0  # a broken foreign key alone: exit 0 without --strict ...
    code, _, err = run("--db", make_db(CLEAN_SQL + "INSERT INTO orders VALUES (16, 9, NULL);"),
                       "--schema", str(schema_file), "--strict")
    assert code == 1  # ... and 1 with it
    assert err.strip() == "error: 1 foreign key is violated in the database"
    code, out, _ = run("--db", url, "--schema", str(schema_file), "--format", "json",
                       "--cd", "logins[acct->*]<=2")
    assert code == 0
    data = json.loads(out)
    assert data["violations"] == 5 and data["foreign_key_violations"] == 3
    rows = next(c for c in data["checks"] if c["dependency"] == "logins[acct->*]<=2")
    assert (rows["kind"], rows["max_count"], rows["violating"]) == ("rows", 4, 1)


def test_cli_rows_per_value_on_a_keyed_table_is_checked(make_db: MakeDb,
                                                         schema_file: Path) -> None:
    """users has a key: users[name->*]<=k bounds the users rows per name all the same."""
    db = make_db(ROWS_SQL + "INSERT INTO users VALUES (3, 'ann');")
    for k, violating in ((2, 0), (1, 1)):
        code, out, err = run("--db", db, "--schema", str(schema_file), "--format", "json",
                             "--cd", f"users[name->*]<={k}")
        assert code == 0, err
        rows = next(c for c in json.loads(out)["checks"]
                    if c["dependency"].startswith("users[name->*]"))
        assert (rows["kind"], rows["max_count"], rows["violating"]) == ("rows", 2, violating)


def test_single_column_output_is_unchanged(url: str) -> None:
    c = check(url, "logins[acct->device]<=1")
    assert c.kind == "single" and c.columns == ("acct", "device")
    assert list(c.to_dict()) == ["dependency", "relation", "i", "j", "columns", "k", "origin",
                                 "ok", "groups", "max_count", "violating", "offenders"]
    assert c.summary() == "1 acct value with more than 1 distinct device (max 2)"
    assert c.offenders == (Offender(1, 2, ("x", "y")),)


# --------------------------------------------------------------------------- SQLite only


def test_sqlite_reflected_foreign_keys_are_checked(tmp_path: Path) -> None:
    """SQLite keeps REFERENCES in its catalogue but does not enforce them by default."""
    url = f"sqlite:///{tmp_path / 'fk.db'}"
    load_sql_file(url, text=(
        "CREATE TABLE users (id INTEGER PRIMARY KEY);"
        "CREATE TABLE orders (oid INTEGER PRIMARY KEY, uid INTEGER REFERENCES users(id));"
        "INSERT INTO users VALUES (1);"
        "INSERT INTO orders VALUES (1, 1), (2, 3), (3, 3), (4, NULL);"))
    code, out, _ = run("--db", url)
    assert code == 0
    assert re.search(r"FAIL\s+orders\(uid\) → users\(id\)\s+2 of 3 non-NULL references", out)
    assert "uid = 3: 2 rows, no such users row" in out
    (fk,) = profile_database(url).foreign_keys
    assert (fk.rows, fk.missing) == (3, 2)


# --------------------------------------------------------------------------- against Python

SMALL = st.one_of(st.none(), st.integers(0, 2))
TABLES = st.tuples(st.lists(st.tuples(SMALL, SMALL, SMALL), max_size=10),
                   st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), max_size=4))
CHECKED = ["t[a,b->c]<=1", "t[a,b->c]<=2", "t[a->*]<=1", "t[a->*]<=3", "t[a,b->*]<=2",
           "t[b->c]<=1"]
PROPERTY_SCHEMA: Schema = schema_from_ddl(
    "CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER,"
    " FOREIGN KEY (b, c) REFERENCES u (x, y));"
    "CREATE TABLE u (x INTEGER, y INTEGER, PRIMARY KEY (x, y));")


def python_check(rows: Sequence[tuple[object, ...]], d: AnyDependency
                 ) -> tuple[int, int, int, list[tuple[object, int]]]:
    """(groups, max count, violating, [(value, count)] worst first) computed in Python."""
    sources = d.sources if isinstance(d, MultiDependency) else (d.i,)
    groups: dict[tuple[object, ...], list[object]] = {}
    for row in rows:
        key = tuple(row[i] for i in sources)
        if None in key:
            continue
        seen = groups.setdefault(key, [])
        if d.j == ROWS:
            seen.append(row)
        elif row[d.j] is not None and row[d.j] not in seen:
            seen.append(row[d.j])
    counts = {k: len(v) for k, v in groups.items()}
    bad = sorted(((k, n) for k, n in counts.items() if n > d.k), key=lambda kn: (-kn[1], kn[0]))
    shown = [(k[0] if len(k) == 1 else k, n) for k, n in bad]
    return len(counts), max(counts.values(), default=0), len(bad), shown


@pytest.mark.slow
@given(TABLES)
def test_checks_agree_with_python(tables: tuple[list[tuple[int | None, ...]],
                                                list[tuple[int, int]]]) -> None:
    t_rows, u_rows = tables
    u_rows = sorted(set(u_rows))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.db"
        conn = sqlite3.connect(path)
        conn.executescript("CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER);"
                           "CREATE TABLE u (x INTEGER, y INTEGER);")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)", t_rows)
        conn.executemany("INSERT INTO u VALUES (?, ?)", u_rows)
        conn.commit()
        conn.close()
        url = f"sqlite:///{path}"
        deps = [parse_dependency(text, schema=PROPERTY_SCHEMA) for text in CHECKED]
        checks = check_constraints(url, PROPERTY_SCHEMA, deps, samples=100)
        (fk,) = check_foreign_keys(url, PROPERTY_SCHEMA, samples=100)
    for c, d in zip(checks, deps, strict=True):
        groups, most, violating, shown = python_check(t_rows, d)
        assert (c.groups, c.max_count, c.violating) == (groups, most, violating), c.label
        assert [(o.value, o.count) for o in c.offenders] == shown, c.label
    referencing = [(b, c) for _, b, c in t_rows if b is not None and c is not None]
    missing = [r for r in referencing if r not in u_rows]
    assert (fk.rows, fk.missing, fk.ok) == (len(referencing), len(missing), not missing)
    assert sorted(o.value for o in fk.offenders) == sorted(set(missing))  # type: ignore[type-var]
    assert sum(o.count for o in fk.offenders) == len(missing)

