"""Release points and post-processing: HAVING, window functions over aggregated rows, ORDER BY
and LIMIT are computed on the noisy values; GROUP BY by position or alias, constant columns and
SQL scoping of unqualified columns (issue 23)."""

from __future__ import annotations

import json
import math
import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens import analyze
from cqsens.cli.main import cli
from cqsens.errors import InputError
from cqsens.release import noise

SCHEMA = """
CREATE TABLE patients (patient_id INTEGER PRIMARY KEY, sex TEXT CHECK (sex IN ('F', 'M')),
                       age INTEGER NOT NULL CHECK (age BETWEEN 0 AND 120));
CREATE TABLE visits (visit_id INTEGER PRIMARY KEY,
                     patient_id INTEGER NOT NULL REFERENCES patients(patient_id),
                     cost INTEGER NOT NULL CHECK (cost BETWEEN 0 AND 1000));
"""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


# ------------------------------------------------------------------ analysis

@pytest.mark.parametrize(("sql", "upper"), [
    ("SELECT sex, COUNT(*) FROM patients GROUP BY 1", 1),
    ("SELECT sex AS g, COUNT(*) FROM patients GROUP BY g", 1),
    ("SELECT 'all' AS label, COUNT(*) FROM patients", 1),
    ("SELECT sex, COUNT(*) FROM patients GROUP BY sex HAVING COUNT(*) > 10", 1),
    # the HAVING aggregate is released too: its sensitivity adds up with the count's
    ("SELECT sex, COUNT(*) FROM patients GROUP BY sex HAVING SUM(age) > 10", 121),
    ("SELECT sex, COUNT(*) AS n, RANK() OVER (ORDER BY COUNT(*) DESC) FROM patients "
     "GROUP BY sex", 1),
    ("SELECT sex, 100.0 * COUNT(*) / SUM(COUNT(*)) OVER () FROM patients GROUP BY sex", 1),
    ("SELECT COUNT(*) FROM patients WHERE patient_id IN (SELECT v.patient_id FROM visits v)",
     1),
])
def test_accepted_forms(sql: str, upper: int) -> None:
    a = analyze(sql, schema=SCHEMA, prove_lower=False)
    assert a.upper == upper


@pytest.mark.parametrize(("sql", "message"), [
    ("SELECT SUM(age) OVER () FROM patients", "over the rows themselves"),
    ("SELECT sex, COUNT(*) FROM patients GROUP BY sex HAVING age > 3",
     "neither a group key nor an aggregate"),
    ("SELECT sex, COUNT(*) FROM patients GROUP BY sex "
     "HAVING COUNT(*) > (SELECT COUNT(*) FROM visits)", "two-stage release"),
])
def test_what_reads_rows_is_refused(sql: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        analyze(sql, schema=SCHEMA, prove_lower=False)


def test_a_subquery_column_is_scoped_as_sql_scopes_it() -> None:
    """``patient_id`` of the outer query is patients.patient_id, not ambiguous with v's; an
    unqualified column of the subquery is the subquery's own table's first."""
    outer = analyze("SELECT COUNT(*) FROM patients WHERE patient_id IN "
                    "(SELECT v.patient_id FROM visits v WHERE cost > 10)", schema=SCHEMA,
                    prove_lower=False)
    same = analyze("SELECT COUNT(*) FROM patients p WHERE p.patient_id IN "
                   "(SELECT v.patient_id FROM visits v WHERE v.cost > 10)", schema=SCHEMA,
                   prove_lower=False)
    assert str(outer.core).replace("patients_", "p_") == str(same.core)


def test_group_by_an_alias_that_names_a_column_groups_by_the_column() -> None:
    """Input columns come first (SQL): GROUP BY age groups by the column, not the alias."""
    a = analyze("SELECT age / 10 AS age, COUNT(*) FROM patients GROUP BY age", schema=SCHEMA,
                prove_lower=False)
    assert [str(t) for t in a.query_obj.group_by] == ["patients_age"]


# ------------------------------------------------------------------ release on noisy values

POST = [
    "SELECT sex, COUNT(*) FROM patients GROUP BY sex HAVING SUM(age) > 100 "
    "ORDER BY 2 DESC LIMIT 1",
    "SELECT sex, COUNT(*) AS n, RANK() OVER (ORDER BY COUNT(*) DESC) AS r FROM patients "
    "GROUP BY sex",
    "SELECT sex AS g, SUM(age) FROM patients GROUP BY 1 HAVING COUNT(*) >= 2 ORDER BY g DESC",
    "SELECT sex, SUM(age) AS s, SUM(SUM(age)) OVER () AS total FROM patients GROUP BY sex "
    "ORDER BY s",
]


def _database(tmp_path: Path, seed: int) -> tuple[str, Path]:
    rng = random.Random(seed)
    path, schema = tmp_path / "p.db", tmp_path / "schema.sql"
    schema.write_text(SCHEMA)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.executemany("INSERT INTO patients VALUES (?, ?, ?)",
                     [(i, rng.choice("FM"), rng.randint(0, 120))
                      for i in range(rng.randint(3, 30))])
    conn.commit()
    conn.close()
    return f"sqlite:///{path}", schema


def _rows(doc: dict[str, object]) -> list[list[object]]:
    groups = doc["groups"]
    assert isinstance(groups, list)
    out = []
    for g in groups:
        values = g.get("values") or [{"value": g["value"]}]
        out.append([*g["group"].values(), *(v["value"] for v in values)])
    return out


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("sql", POST)
def test_post_processing_with_the_noise_off_is_the_users_query(
        tmp_path: Path, noiseless: None, sql: str, seed: int) -> None:
    url, schema = _database(tmp_path, seed)
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    truth = [list(r) for r in conn.execute(sql).fetchall()]
    conn.close()
    code, out, err = run("release", "--sql", sql, "--schema", str(schema), "--db", url,
                         "--epsilon", "1", "--format", "json")
    assert code == 0, err
    released = _rows(json.loads(out))
    assert len(released) == len(truth), (released, truth)
    for got, want in zip(released, truth, strict=True):
        assert got[0] == want[0]
        assert all(math.isclose(float(a), float(b)) for a, b in zip(got[1:], want[1:],
                                                                      strict=True))


def test_having_filters_the_noisy_values_not_the_true_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With noise that adds 1000 to every count, HAVING COUNT(*) > 500 keeps every group:
    the filter read the noisy counts (the true ones are below 30)."""
    def shifted(values: Sequence[float], **_: object) -> tuple[list[float], float]:
        return [v + 1000 for v in values], 1.0

    monkeypatch.setattr(noise, "sample_laplace", shifted)
    url, schema = _database(tmp_path, 0)
    code, out, err = run("release", "--sql", "SELECT sex, COUNT(*) FROM patients GROUP BY sex "
                         "HAVING COUNT(*) > 500", "--schema", str(schema), "--db", url,
                         "--epsilon", "1", "--format", "json")
    assert code == 0, err
    rows = _rows(json.loads(out))
    assert [r[0] for r in rows] == ["F", "M"] and all(r[1] > 1000 for r in rows)
