"""Safe by default: no table public by omission, ownership paths, constraints checked before a
release, the release runs what was analysed, values clamped, outputs that do not depend on the
data.

Each test is a reproducer of a way cqsens once released private data with too little noise
(or answered a different query), run through the CLI or the API on real SQLite databases.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens import analyze
from cqsens.cli.main import cli
from cqsens.engine.person import resolve_unit
from cqsens.errors import InputError
from cqsens.release import noise
from cqsens.release.ledger import read_ledger

VISITS = """
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE visits (vid INTEGER PRIMARY KEY, uid INTEGER NOT NULL, page TEXT);
"""

PATIENTS = """
CREATE TABLE patients (id INTEGER PRIMARY KEY, sex TEXT);
CREATE TABLE visits (visit_id INTEGER PRIMARY KEY,
                     patient_id INTEGER NOT NULL REFERENCES patients(id),
                     referred_by INTEGER REFERENCES visits(visit_id),
                     kind TEXT);
"""

SHOP = """
CREATE TABLE users (id INTEGER PRIMARY KEY);
CREATE TABLE orders (oid INTEGER PRIMARY KEY, uid INTEGER NOT NULL REFERENCES users(id));
CREATE TABLE items (iid INTEGER PRIMARY KEY, oid INTEGER NOT NULL REFERENCES orders(oid),
                    q INTEGER CHECK (q BETWEEN 0 AND 5));
CREATE TABLE gifts (gid INTEGER PRIMARY KEY, uid INTEGER REFERENCES users(id));
"""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _db(folder: Path, ddl: str, rows: dict[str, Sequence[tuple[object, ...]]],
        name: str = "d.db") -> tuple[str, Path]:
    path, schema = folder / name, folder / "schema.sql"
    schema.write_text(ddl)
    conn = sqlite3.connect(path)
    conn.executescript(ddl)
    for table, values in rows.items():
        if values:
            marks = ", ".join("?" * len(values[0]))
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
    conn.commit()
    conn.close()
    return f"sqlite:///{path}", schema


# ------------------------------------------------------------------ 1. no table public by omission

def test_a_table_not_linked_to_the_unit_is_refused_not_released_without_noise(
        tmp_path: Path) -> None:
    url, schema = _db(tmp_path, VISITS, {"users": [(1, "a")],
                                         "visits": [(i, 1, "p") for i in range(1234)]})
    code, out, err = run("release", "--sql", "SELECT COUNT(*) FROM visits", "--schema",
                         str(schema), "--unit", "users", "--db", url, "--epsilon", "1")
    assert code == 1, out
    assert "table visits is private" in err and "--public visits" in err
    assert "REFERENCES users(id)" in err
    assert "1234" not in out + err
    # declared public, it is the same for everybody: released exactly, and the output says so
    code, out, err = run("release", "--sql", "SELECT COUNT(*) FROM visits", "--schema",
                         str(schema), "--unit", "users", "--db", url, "--epsilon", "1",
                         "--public", "visits")
    assert code == 0, err
    assert "1234" in out and "every table it reads is declared public" in out


def test_without_a_unit_nothing_changes() -> None:
    a = analyze("SELECT COUNT(*) FROM visits", schema=VISITS, prove_lower=False)
    assert a.upper == 1


def test_a_nullable_key_to_the_unit_is_refused_unless_the_query_cannot_read_nulls() -> None:
    with pytest.raises(InputError, match=r"only through the nullable column gifts\.uid"):
        analyze("SELECT COUNT(*) FROM gifts", schema=SHOP, unit="users")
    # joined to users, a NULL uid never matches: every row the query reads has an owner
    a = analyze("SELECT COUNT(*) FROM gifts g JOIN users u ON g.uid = u.id", schema=SHOP,
                unit="users", cds=["gifts[uid->gid]<=4"], prove_lower=False)
    assert a.upper == 4
    a = analyze("SELECT COUNT(*) FROM gifts WHERE uid = 3", schema=SHOP, unit="users",
                cds=["gifts[uid->gid]<=4"], prove_lower=False)
    assert a.upper == 4


# ------------------------------------------------------------------ 2. ownership paths

def test_a_self_reference_blocks_the_unit_until_ownership_is_named() -> None:
    sql = "SELECT COUNT(*) FROM visits"
    with pytest.raises(InputError, match="cycle") as caught:
        analyze(sql, schema=PATIENTS, unit="patients", cds=["visits[patient_id->visit_id]<=40"])
    assert "--owner" in str(caught.value)
    a = analyze(sql, schema=PATIENTS, unit="patients", owner=["visits.patient_id"],
                cds=["visits[patient_id->visit_id]<=40"], prove_lower=False)
    assert a.upper == 40


def test_ownership_in_the_metadata_file(tmp_path: Path) -> None:
    (tmp_path / "schema.sql").write_text(PATIENTS)
    (tmp_path / "q.sql").write_text("SELECT COUNT(*) FROM visits")
    (tmp_path / "cqsens.toml").write_text(
        'schema = "schema.sql"\nunit = "patients"\nowner = ["visits.patient_id"]\n'
        'cd = ["visits[patient_id->visit_id]<=40"]\n')
    code, out, err = run("analyze", str(tmp_path / "q.sql"), "--format", "json", "--no-lower")
    assert code == 0, err
    assert json.loads(out)["sensitivity"]["upper"] == 40


@pytest.mark.parametrize(("owner", "message"), [
    ("visits.nope", "has no column 'nope'"),
    ("visits.kind", "is not a foreign key of visits"),
    ("nowhere.x", "does not name a foreign key"),
])
def test_a_bad_owner_is_an_error(owner: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        analyze("SELECT COUNT(*) FROM visits", schema=PATIENTS, unit="patients", owner=[owner])


def test_owner_needs_a_unit() -> None:
    with pytest.raises(InputError, match="give the unit too"):
        analyze("SELECT COUNT(*) FROM visits", schema=PATIENTS, owner=["visits.patient_id"])


def test_a_person_is_cascaded_along_ownership_keys_only() -> None:
    """Visit 20 of patient 2 is referred by visit 10 of patient 1: by default (every foreign
    key carries ownership) it is part of patient 1's cascade; with the ownership path
    visits.patient_id it is not."""
    from cqsens.frontend.ddl import schema_from_ddl
    from cqsens.witness.evaluate import Database
    from cqsens.witness.person import cascade

    schema = schema_from_ddl(PATIENTS)
    visits, patients = schema.find("visits"), schema.find("patients")
    assert visits is not None and patients is not None
    db = Database({"patients": patients.columns, "visits": visits.columns},
                  {"patients": frozenset({(1, "F"), (2, "M")}),
                   "visits": frozenset({(10, 1, 10, "a"), (20, 2, 10, "b")})})
    every = cascade(db, "patients", (1, "F"), schema)
    assert ("visits", (20, 2, 10, "b")) in every
    unit = resolve_unit("patients", schema, ["visits.patient_id"])
    owned = cascade(db, "patients", (1, "F"), schema, unit.owners)
    assert owned == [("patients", (1, "F")), ("visits", (10, 1, 10, "a"))]


# ------------------------------------------------------------------ 5. a public table cannot be owned

def test_a_public_table_on_the_chain_to_the_unit_is_refused() -> None:
    """Once lower 4 = upper 4 from a witness adding 2 public orders rows; the truth is 0."""
    with pytest.raises(InputError, match="table orders is declared public, but its rows "
                                         "belong to persons of users"):
        analyze("SELECT COUNT(*) FROM items", schema=SHOP, unit="users", public=["orders"],
                cds=["orders[uid->oid]<=2", "items[oid->iid]<=2"])
    with pytest.raises(InputError, match="table orders is declared public, but its rows "
                                         "belong to persons"):
        analyze("SELECT COUNT(*) FROM orders", schema=SHOP, unit="users", public=["orders"])
    with pytest.raises(InputError, match="it is the privacy unit"):
        analyze("SELECT COUNT(*) FROM users", schema=SHOP, unit="users", public=["users"])


def test_ownership_paths_make_a_public_table_consistent() -> None:
    """orders.uid is not an ownership key: orders is reference data, items belong to nobody
    and must be public too; then nothing a person owns is read and the count is 0."""
    with pytest.raises(InputError, match="table items is private"):
        analyze("SELECT COUNT(*) FROM items", schema=SHOP, unit="users", public=["orders"],
                owner=["gifts.uid"])
    a = analyze("SELECT COUNT(*) FROM items", schema=SHOP, unit="users",
                public=["orders", "items"], owner=["gifts.uid"])
    assert (a.upper, a.lower) == (0, 0)


# ------------------------------------------------------------------ 3. constraints checked first

PAT_VISITS = """
CREATE TABLE patients (id INTEGER PRIMARY KEY, age INTEGER CHECK (age BETWEEN 0 AND 100));
CREATE TABLE visits (vid INTEGER PRIMARY KEY,
                     patient_id INTEGER NOT NULL REFERENCES patients(id));
"""


def _patients(folder: Path, visits_of_first: int, age: int = 30) -> tuple[str, Path]:
    visits = [(v, 1) for v in range(visits_of_first)] + [(1000 + v, 2) for v in range(3)]
    return _db(folder, PAT_VISITS, {"patients": [(1, age), (2, 40)], "visits": visits})


def test_release_refuses_when_the_data_break_a_declared_dependency(tmp_path: Path) -> None:
    url, schema = _patients(tmp_path, 45)
    ledger = tmp_path / "ledger.sqlite"
    code, out, err = run("release", "--sql", "SELECT COUNT(*) FROM visits", "--schema",
                         str(schema), "--unit", "patients", "--cd",
                         "visits[patient_id->vid]<=40", "--db", url, "--epsilon", "1",
                         "--ledger", str(ledger))
    assert code == 1, out
    assert "visits[patient_id->vid]<=40" in err and "nothing is released" in err
    # no measured count leaks (45 visits; 48 rows in all), wherever the temporary folder is
    shown = err.replace(str(tmp_path), "")
    assert out == "" and "45" not in shown and "48" not in shown
    assert not ledger.exists() or read_ledger(ledger) == []
    (tmp_path / "ok").mkdir()
    url_ok, _ = _patients(tmp_path / "ok", 40)
    code, out, err = run("release", "--sql", "SELECT COUNT(*) FROM visits", "--schema",
                         str(schema), "--unit", "patients", "--cd",
                         "visits[patient_id->vid]<=40", "--db", url_ok, "--epsilon", "1")
    assert code == 0, err


@pytest.mark.parametrize(("sql", "setup", "broken"), [
    ("SELECT SUM(age) FROM patients", "UPDATE patients SET age = 1000000 WHERE id = 1",
     "patients.age BETWEEN 0 AND 100"),
    ("SELECT COUNT(*) FROM visits", "INSERT INTO visits VALUES (77, 99)",
     "foreign key visits(patient_id) → patients(id)"),
])
def test_release_refuses_broken_checks_and_foreign_keys(tmp_path: Path, sql: str, setup: str,
                                                        broken: str) -> None:
    """The data were written under a looser schema than the one declared to cqsens."""
    url, _ = _db(tmp_path, PAT_VISITS.replace(" CHECK (age BETWEEN 0 AND 100)", ""),
                 {"patients": [(1, 30), (2, 40)], "visits": [(1, 1), (2, 2)]})
    schema = tmp_path / "declared.sql"
    schema.write_text(PAT_VISITS)
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    conn.execute(setup)
    conn.commit()
    conn.close()
    code, out, err = run("release", "--sql", sql, "--schema", str(schema), "--unit",
                         "patients", "--cd", "visits[patient_id->vid]<=5", "--db", url,
                         "--epsilon", "1")
    assert code == 1, out
    assert broken in err
    assert "1000000" not in err.replace(broken, "") and "99" not in err


def test_release_checks_value_bounds_given_on_the_command_line(tmp_path: Path) -> None:
    """--bounds Pat.age=0:50 with an age of 90 in the data: once released as is."""
    url, schema = _patients(tmp_path, 3, age=90)
    code, out, err = run("release", "--sql", "SELECT SUM(age) FROM patients", "--schema",
                         str(schema), "--bounds", "patients.age=0:50", "--db", url,
                         "--epsilon", "1")
    assert code == 1, out
    assert "patients.age BETWEEN 0 AND 50" in err


def test_release_checks_keys_of_a_table_without_enforced_keys(tmp_path: Path) -> None:
    ddl = "CREATE TABLE t (k INTEGER, v INTEGER);"
    url, _ = _db(tmp_path, ddl, {"t": [(1, 1), (1, 2), (2, 3)]})
    declared = tmp_path / "declared.sql"
    declared.write_text("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER);")
    code, out, err = run("release", "--sql", "SELECT COUNT(*) FROM t", "--schema",
                         str(declared), "--db", url, "--epsilon", "1")
    assert code == 1, out
    assert "the key t(k)" in err


# SQLite's loose typing: found by a red-team run, each released before with noise for a bound
# the data break.

def test_a_null_in_a_composite_primary_key_is_refused(tmp_path: Path) -> None:
    """SQLite stores NULL in a PRIMARY KEY column that is not INTEGER PRIMARY KEY: patient 1
    had six PatDoc rows under a declared at-most-one, the key check skipping NULLs."""
    live = ("CREATE TABLE Pat (id INTEGER PRIMARY KEY, age INTEGER NOT NULL);"
            "CREATE TABLE PatDoc (pat INTEGER NOT NULL REFERENCES Pat(id), doc INTEGER,"
            " PRIMARY KEY (pat, doc));")
    url, _ = _db(tmp_path, live, {"Pat": [(1, 30), (2, 40)],
                                  "PatDoc": [(1, 1), *[(1, None)] * 5, (2, 1)]})
    args = ["release", "--sql", "SELECT COUNT(*) FROM PatDoc", "--db", url, "--unit", "Pat",
            "--cd", "PatDoc[pat->doc]<=1", "--epsilon", "1"]
    code, out, err = run(*args)  # the schema read from the database
    assert code == 1, out
    assert "PatDoc.doc NOT NULL" in err and "nothing is released" in err
    declared = tmp_path / "declared.sql"
    declared.write_text(live.replace("doc INTEGER,", "doc INTEGER NOT NULL,"))
    code, out, err = run(*args, "--schema", str(declared))
    assert code == 1 and "PatDoc.doc NOT NULL" in err


@pytest.mark.parametrize(("sql", "bounds"), [
    ("SELECT SUM(v) FROM t", []),
    ("SELECT SUM(v) FROM t", ["--bounds", "t.v=0:120"]),
])
def test_a_range_compares_numbers_not_the_text_of_a_text_column(
        tmp_path: Path, sql: str, bounds: list[str]) -> None:
    """'1000000' <= '120' as text, but SUM adds the number: the range check reads numbers."""
    ddl = "CREATE TABLE t (v TEXT NOT NULL CHECK (v BETWEEN 0 AND 120));"
    url, _ = _db(tmp_path, ddl, {"t": [("10",), ("1000000",), ("11",)]})
    code, out, err = run("release", "--sql", sql, "--db", url, "--epsilon", "1", *bounds)
    assert code == 1, out
    assert "t.v BETWEEN 0 AND 120" in err and "1000000" not in err


def test_a_range_from_the_where_clause_clamps_the_number_sum_reads(
        tmp_path: Path, noiseless: None) -> None:
    """WHERE v BETWEEN 0 AND 100 keeps the text '0999999' (text comparison); the clamp reads
    it as the number SUM adds and caps it at 100."""
    ddl = "CREATE TABLE t (v TEXT NOT NULL);"
    url, _ = _db(tmp_path, ddl, {"t": [("10",), ("0999999",), ("1",)]})
    code, out, err = run("release", "--sql", "SELECT SUM(v) FROM t WHERE v BETWEEN 0 AND 100",
                         "--db", url, "--epsilon", "1", "--format", "json")
    assert code == 0, err
    released = json.loads(out)
    assert released["parts"][0]["sensitivity"] == "ℓ1 100"
    assert released["groups"][0]["value"] == 111  # 10 + 100 + 1, not 1000010


def test_one_person_under_two_spellings_of_a_key_is_refused(tmp_path: Path) -> None:
    """orders.uid holds 1 three times and '1' three times: a GROUP BY counts two people of
    three orders, the foreign key and the join one person of six."""
    ddl = ("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
           "CREATE TABLE orders (oid INTEGER PRIMARY KEY, uid NOT NULL REFERENCES users(id));")
    url, _ = _db(tmp_path, ddl, {"users": [(1, "a"), (2, "b")],
                                 "orders": [(1, 1), (2, 1), (3, 1), (4, "1"), (5, "1"),
                                            (6, "1"), (7, 2)]})
    code, out, err = run("release", "--sql", "SELECT COUNT(*) FROM orders", "--db", url,
                         "--unit", "users", "--cd", "orders[uid->oid]<=3", "--epsilon", "1")
    assert code == 1, out
    assert "orders.uid holds values of one type" in err
    assert "the foreign key orders(uid) → users(id) joins values of one type" in err


def test_integers_and_reals_in_a_key_are_one_type(tmp_path: Path) -> None:
    """10 and 10.5 in a NUMERIC column: SQLite stores an integer and a real, which group
    and join as numbers, so nothing is refused."""
    ddl = ("CREATE TABLE k (id NUMERIC PRIMARY KEY);"
           "CREATE TABLE r (rid INTEGER PRIMARY KEY, kid NUMERIC NOT NULL REFERENCES k(id));")
    url, _ = _db(tmp_path, ddl, {"k": [(10,), (10.5,)], "r": [(1, 10), (2, 10.5), (3, 10.0)]})
    code, out, err = run("release", "--sql", "SELECT COUNT(*) FROM r", "--db", url,
                         "--unit", "k", "--cd", "r[kid->rid]<=2", "--epsilon", "1")
    assert code == 0, err


# ------------------------------------------------------------------ 12, 13. the analysed query, clamped

HOSPITAL = """
CREATE TABLE Pat (id INTEGER PRIMARY KEY, sex TEXT, age INTEGER NOT NULL CHECK (age BETWEEN 0 AND 120));
CREATE TABLE PatDoc (pat INTEGER NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY (pat, doc));
"""

QUERIES = [
    "SELECT COUNT(*) FROM (SELECT pat FROM PatDoc UNION ALL SELECT id FROM Pat) t",
    "SELECT COUNT(*) FROM Pat p LEFT JOIN PatDoc d ON d.pat = p.id",
    "SELECT SUM(p.age) FROM Pat p LEFT JOIN PatDoc d ON d.pat = p.id",
    "SELECT COUNT(*) FROM Pat WHERE id IN (SELECT pat FROM PatDoc)",
    "SELECT sex, COUNT(*), SUM(age) FROM Pat GROUP BY sex",
]


@pytest.mark.parametrize("seed", range(4))
def test_release_runs_the_users_query(tmp_path: Path, noiseless: None, seed: int) -> None:
    """With the noise switched off, every released statistic is the true answer of the user's
    SQL (a derived UNION ALL once released its first branch, a LEFT JOIN an inner join)."""
    rng = random.Random(seed)
    patients = [(i, rng.choice("FM"), rng.randint(0, 120)) for i in range(rng.randint(1, 12))]
    links = {(rng.choice(patients)[0], d) for d in range(rng.randint(0, 20))}
    url, schema = _db(tmp_path, HOSPITAL, {"Pat": patients, "PatDoc": sorted(links)})
    keys = tmp_path / "sexes.csv"
    keys.write_text("sex\nF\nM\n")
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    for sql in QUERIES:
        truth = conn.execute(sql).fetchall()
        code, out, err = run("release", "--sql", sql, "--schema", str(schema), "--db", url,
                             "--epsilon", "1", "--cd", "PatDoc[pat->doc]<=20", "--format",
                             "json", "--keys", str(keys))
        assert code == 0, (sql, err)
        doc = json.loads(out)
        groups = doc["groups"] if "groups" in doc else [doc]
        released = {}
        for g in groups:
            key = tuple(g.get("group", {}).values())
            values = g.get("values") or [{"value": g["value"]}]
            released[key] = [v["value"] for v in values]
        for row in truth:
            key = tuple(row[:len(row) - len(next(iter(released.values())))])
            assert released[key] == [v if v is not None else 0 for v in row[len(key):]], sql
    conn.close()


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM Pat UNION ALL SELECT COUNT(*) FROM PatDoc",
    "SELECT sex, COUNT(*) FROM Pat GROUP BY ROLLUP (sex)",
    "SELECT sex, COUNT(*) FROM Pat GROUP BY GROUPING SETS ((sex), ())",
])
def test_forms_not_released_yet_are_refused_not_answered_differently(tmp_path: Path,
                                                                     sql: str) -> None:
    url, schema = _db(tmp_path, HOSPITAL, {"Pat": [(1, "F", 30)], "PatDoc": [(1, 1)]})
    code, out, err = run("release", "--sql", sql, "--schema", str(schema), "--db", url,
                         "--epsilon", "1", "--cd", "PatDoc[pat->doc]<=20")
    assert code == 1, out
    assert "not released yet" in err


def test_an_average_is_clamped_to_its_values_range(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A noisy SUM over a noisy COUNT can leave [0, 120]: the ratio is post-processed into it."""
    def laplace(values: Sequence[float], **kw: object) -> tuple[list[float], float]:
        return [v + (10**6 if kw.get("integer") is False else 0) for v in values], 1.0

    monkeypatch.setattr(noise, "sample_laplace", laplace)
    url, schema = _db(tmp_path, HOSPITAL, {"Pat": [(1, "F", 30), (2, "M", 40)], "PatDoc": []})
    code, out, err = run("release", "--sql", "SELECT AVG(age) FROM Pat", "--schema",
                         str(schema), "--db", url, "--epsilon", "1", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["groups"][0]["value"] == 120


def test_sums_read_clamped_values(tmp_path: Path, noiseless: None) -> None:
    """The SQL a release runs clamps the summed expression: on data inside the range the
    answer is unchanged (a row outside it is refused earlier, by the constraint check)."""
    from cqsens.frontend.release_sql import release_plan

    plan = release_plan("SELECT SUM(age) FROM Pat", None)
    sql = plan.parts_sql("sqlite", {0: ("0", "100")})
    assert sql == ("SELECT SUM(CASE WHEN ((age) + 0) < 0 THEN 0 WHEN ((age) + 0) > 100 "
                   "THEN 100 ELSE (age) END) FROM Pat")  # SQLite: the number SUM reads
    assert plan.parts_sql("postgres", {0: ("0", "100")}) == (
        "SELECT SUM(CASE WHEN (age) < 0 THEN 0 WHEN (age) > 100 THEN 100 ELSE (age) END) FROM Pat")
    conn = sqlite3.connect(":memory:")
    conn.executescript("CREATE TABLE Pat (age INTEGER); "
                       "INSERT INTO Pat VALUES (50), (NULL), (1000), (-4);")
    assert conn.execute(sql).fetchone() == (150,)


# ------------------------------------------------------------------ 11. outputs independent of the data

def _masked(text: str) -> str:
    return re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "#", text)


@pytest.mark.parametrize("fmt", ["text", "json", "csv"])
def test_outputs_are_the_same_on_neighbouring_databases_apart_from_noisy_numbers(
        tmp_path: Path, fmt: str) -> None:
    """Adding one patient with a new sex value once flipped the note "groups of the data
    outside the released keys are not shown" (20 runs of 20 against 0 of 20)."""
    keys = tmp_path / "sexes.csv"
    keys.write_text("sex\nF\nM\n")
    base = [(1, "F", 30), (2, "M", 40)]
    outputs = []
    for name, patients in (("a.db", base), ("b.db", [*base, (3, "X", 50)])):
        url, schema = _db(tmp_path, HOSPITAL, {"Pat": patients, "PatDoc": []}, name)
        code, out, err = run("release", "--sql", "SELECT sex, COUNT(*) FROM Pat GROUP BY sex",
                             "--schema", str(schema), "--db", url, "--epsilon", "1",
                             "--keys", str(keys), "--format", fmt)
        assert code == 0, err
        outputs.append(_masked(out.replace(name, "DB")))
    assert outputs[0] == outputs[1]


# ------------------------------------------------------------------ 15. advice under a unit

def test_advice_under_a_unit_names_the_fan_out_of_a_self_join() -> None:
    """Under --unit Pat the self-join on doc once got no advice at all ("no declared
    dependency bounds it"), where row level proposed PatDoc[doc->pat]<=k."""
    ddl = ("CREATE TABLE Pat (id INTEGER PRIMARY KEY);"
           "CREATE TABLE Doc (id INTEGER PRIMARY KEY);"
           "CREATE TABLE PatDoc (pat INTEGER REFERENCES Pat(id), doc INTEGER REFERENCES Doc(id),"
           " PRIMARY KEY (pat, doc));")
    sql = "SELECT COUNT(*) FROM PatDoc a JOIN PatDoc b ON a.doc = b.doc"
    a = analyze(sql, schema=ddl, unit="Pat", cds=["PatDoc[pat->doc]<=3"], prove_lower=False)
    assert a.upper == float("inf")
    advice = " ".join(a.suggestion)
    assert "'PatDoc[doc->pat]<=3'" in advice and "becomes 18" in advice
    b = analyze(sql, schema=ddl, unit="Pat", cds=["PatDoc[pat->doc]<=3", "PatDoc[doc->pat]<=3"],
                prove_lower=False)
    assert b.upper == 18


def test_release_checks_check_in_lists(tmp_path: Path) -> None:
    """CHECK (kind IN ('a','b','c')) bounds COUNT(DISTINCT kind) by 3: a 'z' in the data
    breaks what that bound relies on."""
    url, _ = _db(tmp_path, "CREATE TABLE v (id INTEGER PRIMARY KEY, kind TEXT);",
                 {"v": [(1, "a"), (2, "z"), (3, None)]})
    declared = tmp_path / "declared.sql"
    declared.write_text("CREATE TABLE v (id INTEGER PRIMARY KEY, "
                        "kind TEXT CHECK (kind IN ('a', 'b', 'c')));")
    code, out, err = run("release", "--sql", "SELECT COUNT(DISTINCT kind) FROM v", "--schema",
                         str(declared), "--db", url, "--epsilon", "1")
    assert code == 1, out
    assert "the CHECK (kind IN ('a', 'b', 'c')) of v" in err and "'z'" not in err


def test_the_check_and_the_query_see_one_snapshot(tmp_path: Path, noiseless: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A row written after the constraint check (by another connection, WAL mode) is not
    read by the query of the same release: both run in one read transaction."""
    from cqsens.releasing import checks

    url, schema = _db(tmp_path, HOSPITAL, {"Pat": [(1, "F", 30), (2, "M", 40)], "PatDoc": []})
    path = url.removeprefix("sqlite:///")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    checked = checks.broken_constraints

    def check_then_write(*args: object, **kwargs: object) -> list[str]:
        out = checked(*args, **kwargs)  # type: ignore[arg-type]
        writer = sqlite3.connect(path)
        writer.execute("INSERT INTO Pat VALUES (3, 'F', 50)")
        writer.commit()
        writer.close()
        return out

    monkeypatch.setattr(checks, "broken_constraints", check_then_write)
    code, out, err = run("release", "--sql", "SELECT COUNT(*) FROM Pat", "--schema",
                         str(schema), "--db", url, "--epsilon", "1", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["groups"][0]["value"] == 2


# ------------------------------------------------------------------ declared key domains

def test_group_keys_from_a_check_in_list_or_a_foreign_key_into_a_public_table(
        tmp_path: Path, noiseless: None) -> None:
    """No partition selection (and no δ) when the schema declares the keys: every declared
    key is released, zeros included, and a key outside the list is never shown."""
    ddl = ("CREATE TABLE Hos (id INTEGER PRIMARY KEY);"
           "CREATE TABLE Pat (id INTEGER PRIMARY KEY, sex TEXT CHECK (sex IN ('F', 'M', 'X')),"
           " hos INTEGER NOT NULL REFERENCES Hos(id));")
    url, schema = _db(tmp_path, ddl, {"Hos": [(1,), (2,), (3,)],
                                      "Pat": [(1, "F", 1), (2, "F", 2), (3, "M", 1)]})
    code, out, err = run("release", "--sql", "SELECT sex, COUNT(*) FROM Pat GROUP BY sex",
                         "--schema", str(schema), "--db", url, "--epsilon", "1", "--format",
                         "json")
    assert code == 0, err
    doc = json.loads(out)
    assert "values the schema declares" in doc["keys"]
    assert {g["group"]["sex"]: g["value"] for g in doc["groups"]} == {"F": 2, "M": 1, "X": 0}
    code, out, err = run("release", "--sql", "SELECT hos, COUNT(*) FROM Pat GROUP BY hos",
                         "--schema", str(schema), "--db", url, "--epsilon", "1", "--format",
                         "json", "--public", "Hos")
    assert code == 0, err
    released = {g["group"]["hos"]: g["value"] for g in json.loads(out)["groups"]}
    assert released == {"1": 2, "2": 1, "3": 0}


def test_a_zero_sensitivity_over_private_rows_still_gets_noise(tmp_path: Path) -> None:
    """Contradictory constants prove 0, but Pat is private: the noise of sensitivity 1 is
    added anyway (only reads of public tables alone are released exactly)."""
    url, schema = _db(tmp_path, HOSPITAL, {"Pat": [(1, "F", 30)], "PatDoc": []})
    assert analyze("SELECT COUNT(*) FROM Pat WHERE sex = 'F' AND sex = 'M'", schema=HOSPITAL,
                   prove_lower=False).upper == 0
    code, out, err = run("release", "--sql", "SELECT COUNT(*) FROM Pat WHERE sex = 'F' AND sex = 'M'", "--schema",
                         str(schema), "--db", url, "--epsilon", "1", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["parts"][0]["scale"] > 0
    assert any("noise of sensitivity 1" in n for n in doc["notes"])
