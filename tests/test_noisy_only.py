"""No true value reaches a release's output (issue 23: post-processing runs on noisy values).

Every sampler is replaced by one that shifts each value by ``SHIFT``; the same statement is
released once with the noise off (its output cells are then the true values) and once
shifted.  The shifted output, every number in it, strings included (the SQL a two-stage
release ran, notes), must hold none of the true values, nor any true internal aggregate
that the statement only filters or ranks by (a HAVING sum, a stage-1 threshold).  The
data are large enough that true values are distinctive numbers (over 99).
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cqsens.cli.main import cli
from cqsens.release import noise

SCHEMA = """
CREATE TABLE patients (patient_id INTEGER PRIMARY KEY, sex TEXT NOT NULL CHECK (sex IN ('F', 'M')),
                       age INTEGER NOT NULL CHECK (age BETWEEN 0 AND 120));
CREATE TABLE visits (visit_id INTEGER PRIMARY KEY,
                     patient_id INTEGER NOT NULL REFERENCES patients(patient_id),
                     cost INTEGER NOT NULL CHECK (cost BETWEEN 0 AND 1000));
"""
CD = "visits[patient_id->visit_id]<=3"
SHIFT = 1_000_000.5

# (statement, probes: SQL giving true internal values the output must not show, unit?)
FORMS: list[tuple[str, tuple[str, ...], bool]] = [
    ("SELECT sex, COUNT(*) FROM patients GROUP BY sex HAVING SUM(age) > 10",
     ("SELECT SUM(age) FROM patients GROUP BY sex",), False),
    ("SELECT sex, SUM(age) AS s, SUM(SUM(age)) OVER () AS total FROM patients GROUP BY sex "
     "ORDER BY s", ("SELECT SUM(age) FROM patients",), False),
    ("SELECT sex, 100.0 * COUNT(*) / SUM(COUNT(*)) OVER () FROM patients GROUP BY sex",
     ("SELECT COUNT(*) FROM patients GROUP BY sex", "SELECT COUNT(*) FROM patients"), False),
    ("SELECT sex, COUNT(*) AS n FROM patients GROUP BY sex ORDER BY n DESC LIMIT 1",
     ("SELECT COUNT(*) FROM patients GROUP BY sex",), False),
    ("SELECT sex, AVG(age) FROM patients GROUP BY sex",
     ("SELECT SUM(age) FROM patients GROUP BY sex", "SELECT COUNT(*) FROM patients GROUP BY sex"),
     False),
    ("SELECT SUM(cost) / COUNT(*) FROM visits",
     ("SELECT SUM(cost) FROM visits", "SELECT COUNT(*) FROM visits"), False),
    # a two-stage release: the threshold is released, then the count with the noisy literal
    ("SELECT COUNT(*) FROM visits WHERE cost < (SELECT AVG(cost) FROM visits)",
     ("SELECT SUM(cost) FROM visits", "SELECT COUNT(*) FROM visits",
      "SELECT AVG(cost) FROM visits"), False),
    # per-person: a SUM of each person's sum, and HAVING over it
    ("SELECT SUM(s) FROM (SELECT v.patient_id, SUM(v.cost) AS s FROM visits v "
     "GROUP BY v.patient_id) d", (), True),
    # an unqualified group key of a join: its CHECK list (the one table that has it) gives
    # the keys, no δ needed
    ("SELECT sex, COUNT(*) FROM patients p JOIN visits v ON v.patient_id = p.patient_id "
     "GROUP BY sex HAVING COUNT(*) > 5", ("SELECT COUNT(*) FROM visits",), True),
    # released subqueries: a grouped release with a window, filtered and ordered outside
    ("SELECT * FROM (SELECT sex, SUM(cost) AS s, AVG(SUM(cost)) OVER () AS m FROM patients p "
     "JOIN visits v ON v.patient_id = p.patient_id GROUP BY sex) t WHERE s > 0.5 * m "
     "ORDER BY s", ("SELECT SUM(cost) FROM patients p JOIN visits v "
                    "ON v.patient_id = p.patient_id GROUP BY sex",
                    "SELECT SUM(cost) FROM visits"), True),
    # released subqueries: two scalar releases side by side, arithmetic over them
    ("SELECT a, b, 1.0 * a / b AS r FROM (SELECT COUNT(*) AS a FROM visits WHERE cost > 500) x, "
     "(SELECT SUM(cost) AS b FROM visits) y",
     ("SELECT COUNT(*) FROM visits WHERE cost > 500", "SELECT SUM(cost) FROM visits"), False),
]


def _database(path: Path, seed: int) -> None:
    rng = random.Random(seed)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    patients = [(i, rng.choice("FM"), rng.randint(0, 120)) for i in range(rng.randint(600, 900))]
    conn.executemany("INSERT INTO patients VALUES (?, ?, ?)", patients)
    visits = [(len(patients) * 4 + 3 * i + k, i, rng.randint(100, 1000))
              for i, _, _ in patients for k in range(rng.randint(0, 3))]
    conn.executemany("INSERT INTO visits VALUES (?, ?, ?)", visits)
    conn.commit()
    conn.close()


def _samplers(shift: float) -> dict[str, Callable[..., Any]]:
    def laplace(values: Sequence[float], **_: object) -> tuple[list[float], float]:
        return [v + shift for v in values], 1.0

    def gaussian(values: Sequence[float], **_: object) -> tuple[list[float], float, float]:
        return [v + shift for v in values], 1.0, 0.0

    return {"sample_laplace": laplace, "sample_gaussian": gaussian}


def _release(tmp: Path, sql: str, unit: bool, shift: float) -> dict[str, Any]:
    (tmp / "schema.sql").write_text(SCHEMA)
    args = ["release", "--sql", sql, "--schema", str(tmp / "schema.sql"), "--db",
            f"sqlite:///{tmp / 'd.db'}", "--epsilon", "1", "--format", "json", "--cd", CD]
    if unit:
        args += ["--unit", "patients"]
    with pytest.MonkeyPatch.context() as mp:
        for name, sampler in _samplers(shift).items():
            mp.setattr(noise, name, sampler)
        result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def _values(document: dict[str, Any]) -> list[float]:
    """The numbers of the answer (a text cell is a key the post-processing passed on)."""
    out = []
    for g in document["groups"]:
        for v in g["values"] if "values" in g else [g]:
            if not isinstance(v["value"], str):
                out.append(float(v["value"]))
    return out


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _numbers(node: object) -> set[float]:
    """Every number in a JSON document: its numbers and the numbers written in its strings."""
    if isinstance(node, bool) or node is None:
        return set()
    if isinstance(node, int | float):
        return {float(node)}
    if isinstance(node, str):
        return {float(m) for m in _NUMBER.findall(node)}
    assert isinstance(node, dict | list), node
    items = list(node.values()) if isinstance(node, dict) else node
    return set().union(*(_numbers(item) for item in items))


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize(("sql", "probes", "unit"), FORMS)
def test_no_true_value_reaches_the_output(tmp_path: Path, sql: str, probes: tuple[str, ...],
                                          unit: bool, seed: int) -> None:
    _database(tmp_path / "d.db", seed)
    true = set(_values(_release(tmp_path, sql, unit, 0.0)))
    conn = sqlite3.connect(tmp_path / "d.db")
    for probe in probes:
        true |= {float(r[0]) for r in conn.execute(probe).fetchall()}
    conn.close()
    true = {t for t in true if abs(t) > 99}  # distinctive: no key, rank or CHECK bound
    assert true, "the data give no distinctive true value: the test would prove nothing"
    shifted = _release(tmp_path, sql, unit, SHIFT)
    assert _values(shifted) and all(v not in true for v in _values(shifted))
    leaked = true & _numbers(shifted)
    assert not leaked, (sql, sorted(leaked))
