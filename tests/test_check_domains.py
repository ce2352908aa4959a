"""CHECK IN domains and rows-per-value dependencies (issue #24 item 5).

Every reproducer is a small schema built here: the upper bound and the lower
bound are asserted, the witness is written with :func:`write_witness`, loaded
row by row into a SQLite database created from the user's own DDL (CHECKs,
keys and foreign keys declared, so a row that breaks one is refused), and the
query is run on both databases; the largest change over every database of a
small exhaustive family (brute force, evaluated in SQLite) must equal the
bounds.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from cqsens.frontend.ddl import schema_from_ddl
from cqsens.ir.dependencies import Sigma
from cqsens.pipeline import analyze
from cqsens.witness import is_witness
from cqsens.witness.aggregate import AggregateWitness
from cqsens.witness.model import Witness
from cqsens.witness.person import PersonWitness
from cqsens.witness.schema_checks import checks_hold
from cqsens.witness.writers import companion_path, write_witness

VISITS = """
CREATE TABLE patients (id INTEGER PRIMARY KEY, sex TEXT CHECK (sex IN ('F', 'M')));
CREATE TABLE visits (vid INTEGER PRIMARY KEY, pid INTEGER NOT NULL REFERENCES patients(id),
                     kind TEXT NOT NULL CHECK (kind IN ('a', 'b', 'c')),
                     flag INTEGER CHECK (flag IN (0, 1)));
"""
ACCESS = """
CREATE TABLE patients (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE staff (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE access_log (patient_id INTEGER NOT NULL REFERENCES patients(id),
                         staff_id INTEGER REFERENCES staff(id), action TEXT);
"""
LOGS = """
CREATE TABLE users (id INTEGER PRIMARY KEY);
CREATE TABLE logs (uid INTEGER NOT NULL REFERENCES users(id),
                   w INTEGER CHECK (w BETWEEN 0 AND 3));
"""
DISTINCT_KIND = "SELECT COUNT(DISTINCT kind) FROM visits"
EXPORTS = "SELECT COUNT(DISTINCT staff_id) FROM access_log WHERE action = 'export'"
DISTINCT_W = "SELECT COUNT(DISTINCT w) FROM logs"


# -- SQLite helpers ----------------------------------------------------------------


def _fresh(ddl: str) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript(ddl)
    return conn


def _load(conn: sqlite3.Connection, tables: dict[str, Sequence[tuple[object, ...]]],
          order: Sequence[str]) -> None:
    for table in order:
        for row in tables.get(table, ()):
            marks = ", ".join("?" for _ in row)
            conn.execute(f'INSERT INTO "{table}" VALUES ({marks})', row)


def _value(conn: sqlite3.Connection, query: str) -> int:
    return int(conn.execute(query).fetchone()[0])


def _replay(ddl: str, witness: Witness, query: str, tmp_path: Path, order: Sequence[str]) -> int:
    """Write the witness as two SQLite files, load each into the user's own schema (every
    CHECK, key and foreign key declared) and return the change of the query's value."""
    path = tmp_path / "w.sqlite"
    write_witness(witness, path)
    values = []
    for file in (path, companion_path(path)):
        source = sqlite3.connect(file)
        tables = {t: source.execute(f'SELECT * FROM "{t}"').fetchall() for t in order}
        declared = dict(source.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
        source.close()
        for table in order:  # the witness's own file declares every CHECK of the user
            relation = schema_from_ddl(ddl).find(table)
            assert relation is not None
            assert all(f"CHECK ({c})" in declared[table] for c in relation.checks)
        conn = _fresh(ddl)
        _load(conn, tables, order)  # an IntegrityError here: a row breaks the user's schema
        values.append(_value(conn, query))
        conn.close()
    return values[1] - values[0]


def _person_change(ddl: str, query: str, unit_rows: Iterable[tuple[str, tuple[object, ...]]],
                   background: dict[str, list[tuple[object, ...]]],
                   order: Sequence[str]) -> int:
    """The query on ``background``, and with one person's rows added, in SQLite."""
    conn = _fresh(ddl)
    _load(conn, background, order)
    before = _value(conn, query)
    for table, row in unit_rows:
        conn.execute(f'INSERT INTO "{table}" VALUES ({", ".join("?" for _ in row)})', row)
    after = _value(conn, query)
    conn.close()
    return after - before


# -- 1. CHECK IN domains -----------------------------------------------------------


def test_schema_reads_in_lists_as_domains_and_numeric_ranges() -> None:
    schema = schema_from_ddl(VISITS + "CREATE TABLE t (a INT, b TEXT, "
                             "CONSTRAINT k CHECK (a IN (1, 2) OR a = 7), CHECK (b IN ('x', NULL)),"
                             " CHECK (a < 9 OR b = 'y'));")
    visits, t = schema.find("visits"), schema.find("t")
    assert visits is not None and t is not None
    assert visits.domain(2) == ("a", "b", "c") and visits.domain(3) == (0, 1)
    assert visits.bound(3) == (0, 1) and visits.domain(1) is None
    assert t.domain(0) == (1, 2, 7) and t.bound(0) == (1, 7)  # a named CHECK is read too
    assert t.domain(1) is None  # 'x' IN ('x', NULL) is NULL for every other value: it passes
    assert len(t.checks) == 3  # the two-column CHECK is kept as text for the witness


def test_count_distinct_over_a_domain_person_level(tmp_path: Path) -> None:
    a = analyze(DISTINCT_KIND, schema=VISITS, unit="patients", cds=["visits[pid->vid]<=40"])
    assert a.upper == 3 and a.lower == 3
    assert isinstance(a.witness, PersonWitness)
    assert is_witness(a.query_obj, a.sigma, a.witness, schema=schema_from_ddl(VISITS))
    order = ["patients", "visits"]
    assert _replay(VISITS, a.witness, DISTINCT_KIND, tmp_path, order) == 3
    # brute force: one person with up to 4 visits, a background person with up to 2,
    # every choice of kinds; the largest change the person makes
    best = 0
    kinds = ("a", "b", "c")
    for own in itertools.chain.from_iterable(
            itertools.combinations_with_replacement(kinds, n) for n in range(5)):
        for other in itertools.chain.from_iterable(
                itertools.combinations_with_replacement(kinds, n) for n in range(3)):
            background = {"patients": [(2, "M")],
                          "visits": [(100 + i, 2, k, 0) for i, k in enumerate(other)]}
            person = [("patients", (1, "F")),
                      *(("visits", (200 + i, 1, k, 1)) for i, k in enumerate(own))]
            best = max(best, _person_change(VISITS, DISTINCT_KIND, person, background, order))
    assert best == a.upper


def test_grouped_count_distinct_over_a_domain_is_per_group() -> None:
    query = ("SELECT p.sex, COUNT(DISTINCT v.kind) FROM visits v JOIN patients p "
             "ON p.id = v.pid GROUP BY p.sex")
    a = analyze(query, schema=VISITS, unit="patients", cds=["visits[pid->vid]<=40"])
    assert a.upper == 3 and a.lower == 3  # one person is in one group: 3 kinds there
    # grouped by a column with a domain: (flag or NULL) × kind, 3 × 3
    b = analyze("SELECT flag, COUNT(DISTINCT kind) FROM visits GROUP BY flag", schema=VISITS,
                unit="patients", cds=["visits[pid->vid]<=40"], witness_time=2)
    assert b.upper == 9 and b.lower is not None and b.lower <= 9
    conn = _fresh(VISITS)
    conn.execute("INSERT INTO patients VALUES (1, 'F')")
    rows = [(i, 1, k, f) for i, (k, f) in enumerate(itertools.product("abc", (0, 1, None)))]
    conn.executemany("INSERT INTO visits VALUES (?, ?, ?, ?)", rows)
    assert sum(n for _, n in conn.execute(
        "SELECT flag, COUNT(DISTINCT kind) FROM visits GROUP BY flag")) == 9  # reached


def test_numeric_in_list_is_a_value_range() -> None:
    a = analyze("SELECT SUM(flag) FROM visits", schema=VISITS)
    assert a.upper == 1 and a.lower == 1
    assert a.aggregates[0].values is not None and "[0, 1]" in a.aggregates[0].values
    m = analyze("SELECT AVG(flag) FROM visits", schema=VISITS, neighbor="substitute")
    assert m.upper == 1


def test_the_referenced_row_meets_its_domain(tmp_path: Path) -> None:
    """The completed patients row of a row-level witness takes sex 'F' or 'M'."""
    a = analyze("SELECT COUNT(*) FROM visits WHERE flag = 1", schema=VISITS)
    assert a.witness is not None and a.lower == a.upper == 1
    assert {r[1] for r in a.witness.database.rows.get("patients", ())} <= {"F", "M"}
    assert _replay(VISITS, a.witness, "SELECT COUNT(*) FROM visits WHERE flag = 1", tmp_path,
                   ["patients", "visits"]) == 1


def test_a_witness_breaking_a_check_is_refused() -> None:
    a = analyze(DISTINCT_KIND, schema=VISITS, unit="patients", cds=["visits[pid->vid]<=40"])
    w = a.witness
    assert isinstance(w, PersonWitness)
    schema = schema_from_ddl(VISITS)
    bad = replace(w, added=tuple((r, (row[0], row[1], "z", row[3]) if r == "visits" else row)
                                 for r, row in w.added))
    assert not checks_hold(bad.after, schema)
    assert not is_witness(a.query_obj, a.sigma, bad, schema=schema)


def test_a_check_over_two_columns_holds_in_every_reported_witness() -> None:
    ddl = ("CREATE TABLE r (id INTEGER PRIMARY KEY, lo INTEGER, hi INTEGER, "
           "CHECK (lo <= hi), CHECK (lo IN (5, 6)));")
    for query in ("SELECT COUNT(DISTINCT lo) FROM r", "SELECT SUM(lo) FROM r",
                  "SELECT COUNT(*) FROM r r1, r r2 WHERE r1.hi = r2.lo"):
        a = analyze(query, schema=ddl)
        if a.witness is not None:
            both = ((a.witness.database, a.witness.after)
                    if isinstance(a.witness, (AggregateWitness, PersonWitness))
                    else (a.witness.database,
                          a.witness.database.with_row(a.witness.relation, a.witness.row)))
            for db in both:
                conn = _fresh(ddl)
                _load(conn, {k: sorted(v, key=repr) for k, v in db.rows.items()}, ["r"])
                conn.close()
    assert analyze("SELECT COUNT(DISTINCT lo) FROM r", schema=ddl).upper == 1


@given(items=st.lists(st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "A"]),
                                st.sampled_from([Decimal("1.0"), Decimal("2.50")])),
                      min_size=1, max_size=5),
       values=st.lists(st.one_of(st.integers(-4, 4), st.sampled_from(["a", "b", "A", "c"]),
                                 st.floats(-3, 3, allow_nan=False)), max_size=12))
def test_domain_size_bounds_count_distinct_in_sqlite(items: list[object],
                                                      values: list[object]) -> None:
    """Whatever rows SQLite accepts under the CHECK, COUNT(DISTINCT) stays within the
    domain cqsens reads from it."""
    listed = ", ".join(f"'{v}'" if isinstance(v, str) else str(v) for v in items)
    for kind in ("INTEGER", "TEXT", ""):
        ddl = f"CREATE TABLE t (x {kind} CHECK (x IN ({listed})));"
        relation = schema_from_ddl(ddl).find("t")
        assert relation is not None
        domain = relation.domain(0)
        assert domain is not None
        conn = _fresh(ddl)
        for v in values:
            try:
                conn.execute("INSERT INTO t VALUES (?)", (v,))
            except sqlite3.IntegrityError:
                pass
        assert _value(conn, "SELECT COUNT(DISTINCT x) FROM t") <= len(domain)
        conn.close()


# -- 2. rows-per-value dependencies under COUNT(DISTINCT) -----------------------------


def test_rows_per_value_bounds_distinct_staff(tmp_path: Path) -> None:
    a = analyze(EXPORTS, schema=ACCESS, unit="patients", cds=["access_log[patient_id->*]<=60"])
    assert a.upper == 60 and a.lower == 60
    assert isinstance(a.witness, PersonWitness)
    rows = [row for r, row in a.witness.added if r == "access_log"]
    assert len(rows) <= 60  # the declared dependency holds in the witness
    assert is_witness(a.query_obj, a.sigma, a.witness, schema=schema_from_ddl(ACCESS))
    # a 61st row of the person (same staff, another action) breaks only the dependency
    over = replace(a.witness, added=(*a.witness.added,
                                     ("access_log", (rows[0][0], rows[0][1], "view"))))
    assert not is_witness(a.query_obj, a.sigma, over, schema=schema_from_ddl(ACCESS))
    without = Sigma(a.sigma.deps, a.sigma.multi)
    assert is_witness(a.query_obj, without, over, schema=schema_from_ddl(ACCESS))
    assert _replay(ACCESS, a.witness, EXPORTS, tmp_path,
                   ["patients", "staff", "access_log"]) == 60


def test_rows_per_value_brute_force_small_k() -> None:
    """With 3 rows per patient: every bag of up to 3 (staff, action) rows for one person
    beside a background person with up to 1 row; the largest change is the bound."""
    a = analyze(EXPORTS, schema=ACCESS, unit="patients", cds=["access_log[patient_id->*]<=3"])
    assert a.upper == 3 and a.lower == 3
    order = ["patients", "staff", "access_log"]
    choices = list(itertools.product((1, 2, 3, 4), ("export", "view")))
    staff = [(s, f"s{s}") for s in (1, 2, 3, 4)]
    best = 0
    for own in itertools.chain.from_iterable(
            itertools.combinations_with_replacement(choices, n) for n in range(4)):
        for other in ((), *((c,) for c in choices)):
            background = {"patients": [(2, "q")], "staff": staff,
                          "access_log": [(2, s, act) for s, act in other]}
            person = [("patients", (1, "p")), *(("access_log", (1, s, act)) for s, act in own)]
            best = max(best, _person_change(ACCESS, EXPORTS, person, background, order))
    assert best == a.upper


def test_rows_per_value_with_a_range_check(tmp_path: Path) -> None:
    a = analyze(DISTINCT_W, schema=LOGS, unit="users", cds=["logs[uid->*]<=2"])
    assert a.upper == 2 and a.lower == 2
    assert a.witness is not None
    assert _replay(LOGS, a.witness, DISTINCT_W, tmp_path, ["users", "logs"]) == 2
    # brute force: users 1 (the person) and 2, each with up to 2 log rows, w in 0..3 or NULL
    best = 0
    ws = (0, 1, 2, 3, None)
    bags = list(itertools.chain.from_iterable(
        itertools.combinations_with_replacement(ws, n) for n in range(3)))
    for own in bags:
        for other in bags:
            background = {"users": [(2,)], "logs": [(2, w) for w in other]}
            person = [("users", (1,)), *(("logs", (1, w)) for w in own)]
            best = max(best, _person_change(LOGS, DISTINCT_W, person, background,
                                            ["users", "logs"]))
    assert best == a.upper
    # without the dependency: no finite rows bound, but w has 4 values... only as a range,
    # which is not a domain (a REAL 1.5 passes BETWEEN), so the bound stays unbounded
    assert analyze(DISTINCT_W, schema=LOGS, unit="users").upper == float("inf")


def test_rows_per_value_at_row_level_through_a_join() -> None:
    joined = ("SELECT COUNT(DISTINCT l.staff_id) FROM patients p JOIN access_log l "
              "ON l.patient_id = p.id")
    query = joined + " WHERE p.name = 'x'"
    a = analyze(query, schema=ACCESS, cds=["access_log[patient_id->*]<=5"],
                neighbor="substitute")
    assert a.upper == 5  # a patient renamed in place meets the 5 rows of its id
    b = analyze(query, schema=ACCESS, neighbor="substitute")
    assert b.upper == float("inf")
    # reading patients only through the NOT NULL foreign key, the join counts the staff
    # of access_log, which one changed row moves by 1; rule foreign-key-joins does not
    # leave the join out here: the one table left would be projected (COUNT(DISTINCT)),
    # which the single-table rules read as rows, so the bound stays the join's (sound, loose)
    assert analyze(joined, schema=ACCESS, neighbor="substitute").upper == float("inf")


def test_each_row_checked_once_and_an_int_is_not_its_float() -> None:
    from cqsens.witness.evaluate import Database

    schema = schema_from_ddl("CREATE TABLE r (x BLOB, y INTEGER, CHECK (typeof(x) = 'integer'), "
                             "CHECK (y <= 3));")

    def db(*rows: tuple[object, ...]) -> Database:
        return Database({"r": ("x", "y")}, {"r": frozenset(rows)}, {"r": ("BLOB", "INTEGER")})

    for _ in range(2):  # the second round answers from what the first remembered
        assert checks_hold(db((1, 2)), schema)
        assert not checks_hold(db((1.0, 2)), schema)  # REAL in a BLOB column
        assert not checks_hold(db((1, 2), (2, 4)), schema)
        assert checks_hold(db((1, 2), (2, 3)), schema)
        assert not checks_hold(db((1, 2, 3)), schema)  # a row too wide is no row of r
    # a CHECK SQLite cannot evaluate fails every row
    odd = schema_from_ddl("CREATE TABLE r (x BLOB, y INTEGER, CHECK (no_such_function(x)));")
    assert not checks_hold(db((1, 2)), odd)
