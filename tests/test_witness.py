"""Witnesses: the paper's examples are tight, every witness re-checks, scripts replay."""

from __future__ import annotations

import math
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cqsens.cli.main import cli
from cqsens.pipeline import analyze
from cqsens.witness import is_witness, to_sql_script
from tests.conftest import scaled_examples
from tests.strategies import cqs, dependencies_for

ONCOLOGY = "Q(xdoc) :- Doc(xdoc, 'O', xhos), Pat(xpat, 'F', xhos), PatDoc(xpat, xdoc)."
SQL = "examples/hospital/oncology.sql"
SCHEMA = "examples/hospital/schema.sql"


@pytest.mark.parametrize(
    ("source", "fds", "cds", "lower"),
    [
        (ONCOLOGY, [], ["PatDoc[1->2]<=3"], 3),  # Example 18
        (ONCOLOGY, ["PatDoc[1->2]"], [], 1),  # Example 15
        # Example 14
        ("Q(x) :- R(x, y1), R(y1, y2), R(y2, y3), R(y3, x)", ["R[1->2]", "R[2->1]"], [], 4),
        ("Q(x) :- R(x, y), R(y, x)", [], [], 2),  # docs/rules.md, rule delta-str-self-join
        ("Q() :- R(x), S(y)", [], [], 1),  # docs/rules.md, rule boolean-query
        # docs/rules.md, rule walks-from-constants
        ("Q(x) :- A(a), E(a, v), F(v, 'k'), G(v, x)", ["F[2->1]", "G[1->2]"], [], 1),
        ("Q(x) :- R(z, 'a'), R(z, 'b'), S(x)", ["R[1->2]"], [], 0),  # ⊥
        ("Q(a, b, c, e) :- E(a, b), E(b, c), E(c, e)", [], ["E[1->2]<=2", "E[2->1]<=2"], 12),
    ],
)
def test_tight_examples(source: str, fds: list[str], cds: list[str], lower: int) -> None:
    a = analyze(source, fds=fds, cds=cds)
    assert a.lower == lower and a.upper == lower and a.tight
    assert a.witness is not None and is_witness(a.query_obj, a.sigma, a.witness)


def test_example_2_unbounded_family() -> None:
    a = analyze(SQL, schema=SCHEMA)
    assert a.upper == math.inf and a.lower == math.inf and a.tight
    w = a.witness
    assert w is not None and w.unbounded
    assert [n for n, _ in w.growth] == [1, 2, 4, 8, 16, 32, 64]
    assert all(d >= n for n, d in w.growth)
    assert is_witness(a.query_obj, a.sigma, w)


def test_repair_stops_growth_under_a_cd() -> None:
    a = analyze(SQL, schema=SCHEMA, cds=["PatDoc[1->2]<=3"])
    assert (a.lower, a.upper, a.tight) == (3, 3, True)
    assert a.to_dict()["sensitivity"] == {
        "upper": 3, "lower": 3, "tight": True, "neighbor": "add-remove", "l1": 3, "l2": 3,
    }


def test_sql_script_replays_the_counts(tmp_path: Path) -> None:
    a = analyze(SQL, schema=SCHEMA, cds=["PatDoc[1->2]<=3"])
    assert a.witness is not None
    script = to_sql_script(a.witness)
    # the script runs the query before and after the last INSERT: the counts, as sqlite3 prints
    printed = subprocess.run(["sqlite3", ":memory:"], input=script, capture_output=True,
                             text=True, check=True).stdout.split() if shutil.which("sqlite3") \
        else _printed(script)
    assert printed == [str(a.witness.count_without), str(a.witness.count_with)]


def _printed(script: str) -> list[str]:
    """What ``sqlite3 :memory: < script`` prints, with Python's sqlite3."""
    conn = sqlite3.connect(":memory:")
    out: list[str] = []
    for statement in (s.strip() for s in script.split(";\n")):
        body = "\n".join(x for x in statement.splitlines() if not x.startswith("--")).strip()
        if body:
            out += [str(v) for row in conn.execute(body).fetchall() for v in row]
    return out


def test_witness_command_writes_sql_and_sqlite(tmp_path: Path) -> None:
    runner = CliRunner()
    out_sql = tmp_path / "w.sql"
    result = runner.invoke(cli, ["witness", SQL, "--schema", SCHEMA, "--cd", "PatDoc[1->2]<=3",
                                 "-o", str(out_sql)])
    assert result.exit_code == 0, result.stderr
    conn = sqlite3.connect(":memory:")
    conn.executescript(out_sql.read_text())
    assert conn.execute(Path(SQL).read_text()).fetchone()[0] == 3
    out_db = tmp_path / "w.sqlite"
    result = runner.invoke(cli, ["witness", SQL, "--schema", SCHEMA, "--cd", "PatDoc[1->2]<=3",
                                 "-o", str(out_db)])
    assert result.exit_code == 0
    query = Path(SQL).read_text()  # runs unchanged on A and on A ∪ {t}
    assert sqlite3.connect(out_db).execute(query).fetchone()[0] == 0
    assert sqlite3.connect(tmp_path / "w.with_t.sqlite").execute(query).fetchone()[0] == 3


def test_witness_command_usage() -> None:
    result = CliRunner().invoke(cli, ["witness", "-o", "x.sql"])
    assert result.exit_code == 2


@settings(max_examples=scaled_examples(40))
@given(data=st.data())
def test_every_witness_checks_out(data: st.DataObject) -> None:
    cq = data.draw(cqs(max_atoms=4))
    sigma = data.draw(dependencies_for(cq))
    a = analyze(str(cq), fds=[d for d in sigma if d.k == 1], cds=[d for d in sigma if d.k > 1],
                witness_time=0.05)
    assert a.witness is not None, "every satisfiable query has at least the canonical witness"
    assert is_witness(a.query_obj, a.sigma, a.witness)
    assert a.lower is not None and a.lower <= a.upper
    if a.satisfiable:
        assert a.lower >= 1


def test_witness_values_follow_column_affinity() -> None:
    ddl = "CREATE TABLE R(a INT, v INT);"
    q = "SELECT COUNT(*) FROM R WHERE v = 1 AND v <> '1'"
    a = analyze(q, schema=ddl)
    if a.witness is not None:
        conn = sqlite3.connect(":memory:")
        conn.executescript(ddl)
        before = conn.execute(q).fetchone()[0]
        conn.execute("INSERT INTO R VALUES (?, ?)", a.witness.shown_row)
        assert conn.execute(q).fetchone()[0] - before == a.witness.difference


def test_witness_respects_checks_and_claims_no_false_infinity() -> None:
    ddl = ("CREATE TABLE R(a INT PRIMARY KEY, b INT, c INT CHECK (c BETWEEN 0 AND 1)); "
           "CREATE TABLE S(b INT, d INT);")
    a = analyze("SELECT COUNT(DISTINCT R.c) FROM R, S WHERE R.b = S.b", schema=ddl)
    assert a.lower != math.inf and a.lower is not None and a.lower <= 2
    script = to_sql_script(a.witness)
    conn = sqlite3.connect(":memory:")
    conn.executescript(script)  # the CHECKs are in the script and hold


def test_witness_respects_composite_keys_and_value_bounds() -> None:
    """A witness satisfies everything declared: a composite PRIMARY KEY (an earlier witness
    repeated (a, b) with other c values and claimed 257) and the --bounds ranges."""
    ddl = "CREATE TABLE T (a INT, b INT, c INT, PRIMARY KEY (a, b));"
    a = analyze("SELECT COUNT(*) FROM T t1, T t2 WHERE t1.a = t2.a", schema=ddl,
                cds=["T[a->b]<=2"])
    assert a.witness is not None and a.lower == 3  # at most 2 rows per a: 2·2 − 1 new pairs
    rows = a.witness.shown_tables()["T"] + [a.witness.shown_row]
    assert len({(x, y) for x, y, _ in rows}) == len(rows)
    b = analyze("SELECT COUNT(*) FROM P p WHERE p.v > 3",
                schema="CREATE TABLE P (id INT PRIMARY KEY, v INT);", bounds=["P.v=0:2"])
    assert b.lower is None  # no row with v in [0, 2] passes v > 3: no false witness
