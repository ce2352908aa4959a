"""STDDEV and VARIANCE as post-processing of COUNT(x), SUM(x) and SUM(x * x)
(cqsens/frontend/variance.py): the bound is checked by brute force over every
neighbour of random databases (the three sums evaluated in SQLite), and a release
with the noise off gives the true statistics (computed by Python's statistics module).
"""

from __future__ import annotations

import json
import math
import random
import sqlite3
import statistics
from pathlib import Path

import pytest
from hypothesis import given, settings

import cqsens
from cqsens.errors import UnsupportedQueryError
from tests.conftest import scaled_examples
from tests.helpers import upper_of
from tests.oracle import Rows, sql_sensitivity
from tests.test_post_processing import SCHEMA, _rows, run
from tests.test_union import CANDIDATES, CDS, DDL, _ok, databases

# (statement, the released sums for the brute force)
CASES = [
    ("SELECT r.b AS g1, STDDEV_SAMP(r.a) FROM r GROUP BY r.b",
     ["SELECT r.b AS g1, COUNT(r.a), SUM(r.a), SUM(r.a * r.a) FROM r GROUP BY r.b"]),
    ("SELECT VAR_POP(u.x), STDDEV_POP(u.x) / AVG(u.x) FROM u",
     ["SELECT COUNT(u.x), SUM(u.x), SUM(u.x * u.x) FROM u"]),
    ("SELECT s.c AS g1, VARIANCE(r.a - r.b) FROM r JOIN s ON s.r = r.k GROUP BY s.c",
     ["SELECT s.c AS g1, COUNT(r.a - r.b), SUM(r.a - r.b), SUM((r.a - r.b) * (r.a - r.b)) "
      "FROM r JOIN s ON s.r = r.k GROUP BY s.c"]),
]


@pytest.mark.parametrize(("sql", "sums"), CASES)
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@settings(max_examples=scaled_examples(12), deadline=None)
@given(db=databases)
def test_variance_is_sound(sql: str, sums: list[str], neighbor: str, db: Rows) -> None:
    a = upper_of(sql, DDL, neighbor, tuple(CDS))
    l1, l2 = sql_sensitivity(DDL, sums, db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


def test_the_released_sums_are_named() -> None:
    a = cqsens.analyze(CASES[0][0], schema=DDL, cds=CDS, prove_lower=False)
    labels = [x.label.split(" (in ")[0] for x in a.aggregates]
    assert {"COUNT(r.a)", "SUM(r.a)", "SUM((r.a) * (r.a))"} == set(labels)
    # a in [0, 3]: a row moves SUM(a * a) by at most 9 in its group
    squares = [x for x in a.aggregates if x.label.startswith("SUM((r.a)")]
    assert squares[0].l1 == 9


def test_distinct_is_refused() -> None:
    with pytest.raises(UnsupportedQueryError) as info:
        cqsens.analyze("SELECT STDDEV_SAMP(DISTINCT r.a) FROM r", schema=DDL)
    assert info.value.construct == "aggregate STDDEVSAMP"


@pytest.mark.parametrize("seed", range(3))
def test_release_with_the_noise_off_is_the_true_statistic(tmp_path: Path, noiseless: None,
                                                          seed: int) -> None:
    rng = random.Random(seed)
    path, schema = tmp_path / "p.db", tmp_path / "schema.sql"
    schema.write_text(SCHEMA)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    rows = [(i, rng.choice("FM"), rng.randint(0, 120)) for i in range(rng.randint(6, 30))]
    conn.executemany("INSERT INTO patients VALUES (?, ?, ?)", rows)
    conn.commit()
    conn.close()
    sql = ("SELECT sex, STDDEV_SAMP(age), VAR_POP(age), STDDEV(age) / AVG(age) FROM patients "
           "GROUP BY sex")
    code, out, err = run("release", "--sql", sql, "--schema", str(schema), "--db",
                         f"sqlite:///{path}", "--epsilon", "1", "--format", "json")
    assert code == 0, err
    for sex, *values in _rows(json.loads(out)):
        ages = [age for _, s, age in rows if s == sex]
        want = [statistics.stdev(ages), statistics.pvariance(ages),
                statistics.stdev(ages) / statistics.mean(ages)]
        assert all(math.isclose(float(g), w, rel_tol=1e-9, abs_tol=1e-9)
                   for g, w in zip(values, want, strict=True)), (sex, values, want)
