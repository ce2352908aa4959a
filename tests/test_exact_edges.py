"""Exact numbers to the edge: JSON and text print bounds exactly, witnesses are compared
with bounds exactly, the written witness replays the user's own query, and a public
table's row is never the one an aggregate witness changes (README, sections Output,
Model and "Lower bounds are proofs: witnesses")."""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from cqsens.cli.exits import EXIT_OK
from cqsens.cli.main import cli
from cqsens.ir.exact import decimal_text, json_number, text
from cqsens.pipeline import analyze
from cqsens.report.common import number_of
from cqsens.witness.aggregate import AggregateWitness, released_values
from cqsens.witness.certificate import is_aggregate_witness
from cqsens.witness.evaluate import Database, cq_sql
from cqsens.witness.writers import replay_sql, replayed

SHOP = ("CREATE TABLE users (id INTEGER PRIMARY KEY);\n"
        "CREATE TABLE orders (oid INTEGER PRIMARY KEY, uid INTEGER NOT NULL REFERENCES users(id),"
        " v INTEGER CHECK (v BETWEEN 0 AND 10));\n")
DECIMALS = "CREATE TABLE t (id INTEGER PRIMARY KEY, v DECIMAL(7,2) CHECK (v BETWEEN 0 AND 0.1));\n"
REALS = "CREATE TABLE t (id INTEGER PRIMARY KEY, v REAL);\n"
JOINED = ("CREATE TABLE a (id INTEGER PRIMARY KEY,"
          " v DECIMAL(9,2) CHECK (v BETWEEN 0 AND 100016.49));"
          "\nCREATE TABLE b (id INTEGER PRIMARY KEY, aid INTEGER NOT NULL);\n")
KEYLESS = ("CREATE TABLE K (k INTEGER PRIMARY KEY, w INTEGER);"
           " CREATE TABLE F (k INTEGER, x INTEGER);\n")
LOGS = ("CREATE TABLE logs (g INTEGER NOT NULL, v INTEGER CHECK (v BETWEEN 0 AND 3));\n"
        "CREATE TABLE users (id INTEGER PRIMARY KEY, g INTEGER);\n")
LOGS_AVG = "SELECT a.g, AVG(a.v) FROM logs a JOIN users b ON a.g = b.g GROUP BY a.g"


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _schema(tmp_path: Path, ddl: str) -> str:
    path = tmp_path / "schema.sql"
    path.write_text(ddl, encoding="utf-8")
    return str(path)


def _exact(value: Any) -> Fraction:
    """A number of the JSON output read exactly (a JSON number is read as a Decimal)."""
    number = number_of(str(value) if isinstance(value, Decimal) else value)
    assert number is not None, value
    return Fraction(number)


def _json(out: str) -> Any:
    return json.loads(out, parse_float=Decimal)  # the text as written, not the nearest double


# --- the JSON form of numbers ---------------------------------------------------------------

@given(st.fractions(max_denominator=10**6), st.integers(-10**30, 10**30))
def test_json_numbers_read_back_exactly(q: Fraction, n: int) -> None:
    for value in (q, n, q * 10**20, Decimal(n) / 10**7):
        shown = json.loads(json.dumps(json_number(value)))
        back = Fraction(shown) if not isinstance(shown, float) else Fraction(shown)
        assert back == Fraction(value)
        if isinstance(shown, str):
            assert Fraction(float(Fraction(value))) != Fraction(value)  # not a double


@given(st.integers(-10**15, 10**15), st.integers(0, 12))
def test_short_decimals_print_exactly_and_never_below(n: int, places: int) -> None:
    q = Fraction(n, 10**places)
    shown = text(q)
    assert Fraction(shown) >= q
    significant = len(str(abs(n)).strip("0"))
    if significant <= 15:
        assert Fraction(shown) == q
        assert decimal_text(q) is not None


# --- 1. exact fractions: the person AVG ------------------------------------------------------

def test_person_avg_prints_exact_fractions(tmp_path: Path) -> None:
    """AVG under --unit with 2 orders per user: D/(D+1)·(M − m) = 2/3·10, printed exactly
    (it was a crash: a Fraction is not JSON serializable); the witness replays in SQLite."""
    schema = _schema(tmp_path, SHOP)
    sql = "SELECT AVG(o.v) FROM users u JOIN orders o ON o.uid = u.id"
    code, out, err = _cli("analyze", "--format", "json", "--witness", "--sql", sql,
                          "--cd", "orders[uid->oid]<=2", "--unit", "users", "--schema", schema)
    assert code == EXIT_OK, err
    data = _json(out)
    rows_per_user, low, high = 2, 0, 10
    expected = Fraction(rows_per_user, rows_per_user + 1) * (high - low)
    assert data["sensitivity"]["upper"] == "20/3"
    assert _exact(data["sensitivity"]["upper"]) == expected
    assert _exact(data["aggregates"][0]["l1"]) == expected
    witness = data["witness"]
    lower = _exact(data["sensitivity"]["lower"])
    assert 0 < lower <= expected and _exact(witness["difference"]) == lower
    # replay: the rows of A, then A with the person, in SQLite, averaged exactly
    conn = sqlite3.connect(":memory:")
    conn.executescript(SHOP)
    for table, rows in witness["database"].items():
        for row in rows:
            conn.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})",
                         [int(v) for v in row])

    def average() -> Fraction:
        values = [v for (v,) in conn.execute(
            "SELECT o.v FROM users u JOIN orders o ON o.uid = u.id")]
        return Fraction(sum(values), len(values))

    before = average()
    for person_row in witness["person"]:
        row = person_row["row"]
        conn.execute(f"INSERT INTO {person_row['relation']} VALUES ({', '.join('?' * len(row))})",
                     [int(v) for v in row])
    assert abs(average() - before) == lower
    (native,) = conn.execute(sql).fetchone()
    assert abs(Fraction(native) - average()) < Fraction(1, 10**12)


def test_every_json_output_takes_exact_numbers(tmp_path: Path) -> None:
    """analyze, witness and report (JSON, Markdown, HTML) print a bound of 3 × 100016.49
    without float residue, and JSON of a decimal SUM witness parses."""
    schema = _schema(tmp_path, JOINED)
    sql = "SELECT SUM(a.v) FROM a JOIN b ON b.aid = a.id"
    code, out, err = _cli("analyze", "--format", "json", "--no-lower", "--sql", sql,
                          "--cd", "b[aid->id]<=3", "--schema", schema)
    assert code == EXIT_OK, err
    data = _json(out)
    expected = 3 * Fraction("100016.49")
    assert data["sensitivity"]["upper"] == "300049.47" == decimal_text(expected)
    assert "a.v in [0, 100016.49]" in data["aggregates"][0]["values"]
    code, out, err = _cli("analyze", "--no-lower", "--sql", sql, "--cd", "b[aid->id]<=3",
                          "--schema", schema)
    assert code == EXIT_OK, err
    assert "upper 300049.47" in out and "100016.49000" not in out
    folder = tmp_path / "queries"
    folder.mkdir()
    (folder / "sum.sql").write_text("SELECT SUM(v) FROM t;\n", encoding="utf-8")
    (folder / "schema.sql").write_text(DECIMALS, encoding="utf-8")
    for suffix in ("json", "md", "html"):
        target = tmp_path / f"report.{suffix}"
        code, out, err = _cli("report", str(folder), "-o", str(target))
        assert code == EXIT_OK, err + out
        body = target.read_text(encoding="utf-8")
        if suffix == "json":
            (row,) = _json(body)["rows"]
            assert row["upper"] == "0.1" and row["lower"] == "0.1" and row["tight"]
            assert row["analysis"]["sensitivity"]["l1"] == "0.1"
        else:
            assert "0.1" in body and "0.10000000000000001" not in body


# --- 2. exact decimals: witnesses compared exactly -------------------------------------------

DECIMAL_CASES = [  # (aggregate, neighbour, the rule's bound over [0, 0.1]: README's table)
    ("SUM", "add-remove", lambda m, big: max(abs(m), abs(big))),
    ("AVG", "add-remove", lambda m, big: (big - m) / 2),
    ("SUM", "substitute", lambda m, big: big - m),
    ("AVG", "substitute", lambda m, big: big - m),
]


@pytest.mark.parametrize(("agg", "neighbor", "rule"), DECIMAL_CASES)
def test_decimal_witness_meets_the_bound_exactly(tmp_path: Path, agg: str, neighbor: str,
                                                 rule: Any) -> None:
    """SQLite's float SUM of 0.1 overshoots 1/10 by an ulp: the witness is now read
    exactly from the values' text, so it meets the bound instead of aborting."""
    schema = _schema(tmp_path, DECIMALS)
    sql = f"SELECT {agg}(v) FROM t"
    code, out, err = _cli("analyze", "--format", "json", "--witness", "--sql", sql,
                          "--schema", schema, "--neighbor", neighbor)
    assert code == EXIT_OK, err
    data = _json(out)
    bound = Fraction(rule(Fraction(0), Fraction("0.1")))
    assert _exact(data["sensitivity"]["upper"]) == bound
    assert _exact(data["sensitivity"]["lower"]) == bound and data["sensitivity"]["tight"] is True
    witness = data["witness"]
    assert _exact(witness["l1"]) == bound
    # replay in SQLite: exact from the inserted text, SQLite's float within a tolerance
    released = []
    for rows in _neighbours(witness):
        conn = sqlite3.connect(":memory:")
        conn.executescript(DECIMALS)
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(int(i), str(v)) for i, v in rows])
        values = [Fraction(str(v)) for _, v in rows]
        assert values or agg == "SUM"  # an AVG witness keeps the average defined
        total = sum(values, Fraction(0))
        exact_value = total if agg == "SUM" else total / len(values)
        (native,) = conn.execute(sql).fetchone()
        if values:
            assert abs(Fraction(native) - exact_value) < Fraction(1, 10**15)
        else:
            assert native is None  # SQL's SUM of no row, released as 0
        released.append(exact_value)
        conn.close()
    assert abs(released[1] - released[0]) == bound


def _neighbours(witness: dict[str, Any]) -> list[list[tuple[Any, Any]]]:
    """B and B' of an aggregate witness of table t, from its JSON."""
    before = [tuple(r) for r in witness["database"].get("t", [])]
    if witness["replacement"] is None:
        return [before, before + [tuple(witness["tuple"])]]
    after = list(before)
    after.remove(tuple(witness["tuple"]))
    return [before, after + [tuple(witness["replacement"])]]


def test_bounds_on_a_real_column_stay_exact(tmp_path: Path) -> None:
    """--bounds 't.v=0:99999.99' on a REAL column: SUM under substitution is M − m,
    met exactly by a witness (it aborted: the float difference exceeded 9999999/100)."""
    schema = _schema(tmp_path, REALS)
    code, out, err = _cli("analyze", "--witness", "--sql", "SELECT SUM(v) FROM t", "--schema",
                          schema, "--bounds", "t.v=0:99999.99", "--neighbor", "substitute")
    assert code == EXIT_OK, err
    assert "upper 99999.99   lower 99999.99   (tight)" in out
    a = analyze("SELECT SUM(v) FROM t", schema=REALS, bounds=["t.v=0:99999.99"],
                neighbor="substitute")
    assert a.upper == a.lower == Fraction("99999.99")
    assert isinstance(a.witness, AggregateWitness)
    assert is_aggregate_witness(a.query_obj, a.sigma, a.witness)


def test_released_values_are_exact_and_cross_checked() -> None:
    """Three rows of 0.1: SQLite's float SUM is 0.30000000000000004, the released value is
    3/10; AVG is 1/10 and MEDIAN 1/10, each within 10⁻⁹ of SQLite's own float."""
    a = analyze("SELECT SUM(v), AVG(v), MEDIAN(v) FROM t", schema=DECIMALS, prove_lower=False)
    q = a.query_obj
    db = Database({"t": ("id", "v")}, {"t": frozenset({(1, 0.1), (2, 0.1), (3, 0.1)})})
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id, v)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", sorted(db.rows["t"]))
    (native,) = conn.execute("SELECT SUM(v) FROM t").fetchone()
    assert Fraction(native) != Fraction(3, 10)  # the float overshoots
    got = released_values(q, db, "SELECT SUM(v), AVG(v), MEDIAN(v) FROM t")
    assert got == {(): (Fraction(3, 10), Fraction(1, 10), Fraction(1, 10))}


# --- 3. the hidden row identity never reaches the written script -----------------------------

def _run_script(script: str) -> list[list[tuple[Any, ...]]]:
    """Run a witness script statement by statement, as sqlite3 does; the SELECTs' rows."""
    conn = sqlite3.connect(":memory:")
    out: list[list[tuple[Any, ...]]] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        if not pending and line.startswith("--"):
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            rows = conn.execute(pending).fetchall()
            if pending.lstrip().upper().startswith("SELECT"):
                out.append(rows)
            pending = ""
    conn.close()
    return out


def test_keyless_witness_script_replays_the_users_query(tmp_path: Path) -> None:
    schema = _schema(tmp_path, KEYLESS)
    sql = "SELECT K.w, COUNT(*) FROM K JOIN F ON K.k = F.k GROUP BY K.w"
    target = tmp_path / "w.sql"
    code, out, err = _cli("witness", "--sql", sql, "--schema", schema, "-o", str(target))
    assert code == EXIT_OK, err
    script = target.read_text(encoding="utf-8")
    assert "_row" not in script.split("\n", 1)[1]  # past the title line (the CQ)
    assert script.count(sql + ";") == 2
    before, after = _run_script(script)
    a = analyze(sql, schema=KEYLESS)
    w = a.witness
    assert w is not None and w.count_without == 0
    assert before == [] and len(after) == 1 and after[0][1] == w.count_with
    assert after[0][0] == w.shown_row[1]  # the added K row's w is the new group
    assert f"(prints {after[0][0]}|{after[0][1]})" in script
    # the two SQLite files run the user's query unchanged
    files = tmp_path / "w.sqlite"
    code, _, err = _cli("witness", "--sql", sql, "--schema", schema, "-o", str(files))
    assert code == EXIT_OK, err
    for path, rows in ((files, []), (tmp_path / "w.with_t.sqlite", after)):
        conn = sqlite3.connect(path)
        assert conn.execute(sql).fetchall() == rows
        conn.close()


def test_generated_counting_query_reads_rowid_for_the_row_identity() -> None:
    """A witness replaying the generated counting SELECT (no user SQL) counts the copies
    of a keyless table through SQLite's rowid, as its row identity did."""
    a = analyze("SELECT K.w, COUNT(*) FROM K JOIN F ON K.k = F.k GROUP BY K.w", schema=KEYLESS)
    w = a.witness
    assert w is not None
    generated = replace(w, query_sql=cq_sql(a.query_obj.cq, w.database.columns))
    assert '"_row"' in generated.query_sql and '"_row"' not in replay_sql(generated)
    full = w.database.with_row(w.relation, w.row)
    assert replayed(generated, w.database) == [(w.count_without,)]
    assert replayed(generated, full) == [(w.count_with,)]


# --- 4. a public table's row is never the changed one ----------------------------------------

def test_public_table_row_is_never_changed() -> None:
    """Without --public the witness adds a logs row (a real change of 1.5 or more); with
    --public logs no witness may touch logs, and none is found: the truth is 0 (next test)."""
    private = analyze(LOGS_AVG, schema=LOGS)
    assert isinstance(private.witness, AggregateWitness) and private.witness.relation == "logs"
    public = analyze(LOGS_AVG, schema=LOGS, public=["logs"])
    assert public.upper == 3  # the range rule M − m: sound, loose (README, witnesses)
    w = public.witness
    if w is not None:
        assert isinstance(w, AggregateWitness) and w.relation != "logs"
        assert w.database.rows.get("logs") == w.after.rows.get("logs")
    assert public.lower is None or public.lower == 0


@given(st.integers(0, 2**32 - 1))
def test_adding_a_user_never_moves_a_defined_average(seed: int) -> None:
    """Brute force in SQLite: with logs fixed, adding a users row duplicates every row of
    one group, so an average defined on both sides does not move: the sensitivity is 0
    (cqsens's upper bound 3 is sound but loose)."""
    rng = random.Random(seed)
    a = analyze(LOGS_AVG, schema=LOGS, public=["logs"], prove_lower=False)
    q = a.query_obj
    logs = frozenset((rng.randint(1, 3), rng.randint(0, 3), i) for i in range(rng.randint(1, 6)))
    users = frozenset((i, rng.randint(1, 3)) for i in range(rng.randint(0, 4)))
    db = Database(q.columns, {"logs": logs, "users": users})
    new_user = (100, rng.randint(1, 3))
    before = released_values(q, db, LOGS_AVG)
    after = released_values(q, db.with_row("users", new_user), LOGS_AVG)
    assert before is not None and after is not None
    for group in set(before) & set(after):
        assert before[group] == after[group]
