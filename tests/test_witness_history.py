"""A lower bound does not depend on what the process analysed before, nor on the hash seed.

sql077 of the golden corpus (bench/golden.py) got lower 21/4 inside the corpus run and
311/32 alone: the aggregate witness search numbered the fresh values of its copies in the
order it met the rows of a set, and a set's order follows the hash seed (``PYTHONHASHSEED``
3, 4 and 5 gave 21/4, 0, 1 and 2 gave 311/32) and how the set was built.  It now meets
them in a fixed order.

The searches run at a work budget of 0.05 s (``witness_time``; the default is 0.5): the
order-dependent search of before still gave 21/4 under seed 3 and 311/32 under seed 0 at
that budget, so both tests still fail on it, at 2.8 CPU s per analysis instead of 6.9.

TPC-H Q5 under the standard configuration (a person-level witness) kept its lower bound
under every seed, but not its witness: seed 1 put o_orderdate 1994-01-02 in it, seed 7
1994-12-31.  The values a person is built from were tried near the literals of its
variable's filters, and those filters were met in the order of the query's set of atoms
(``unary_checks``); they are now met in the atoms' canonical order.  TPC-H Q1's witness
holds a renamed copy of its person (``_Search.doubled``), whose fresh keys were numbered in
the order of the sets of rows; they are now numbered in the rows' sorted order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import cqsens
from cqsens import budget

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = """
CREATE TABLE emp (id INTEGER PRIMARY KEY, dept INTEGER, age INTEGER CHECK (age BETWEEN 18 AND 70),
                  salary INTEGER CHECK (salary BETWEEN 0 AND 1000), name TEXT);
CREATE TABLE dept (id INTEGER PRIMARY KEY, city TEXT,
                   budget INTEGER CHECK (budget BETWEEN 0 AND 50));
CREATE TABLE proj (pid INTEGER, emp INTEGER, hours INTEGER CHECK (hours BETWEEN 1 AND 40),
                   PRIMARY KEY (pid, emp));
"""
SQL077 = ("SELECT d.city, AVG(e.age), COUNT(DISTINCT e.dept) FROM emp e, dept d, proj p "
          "WHERE e.dept = d.id AND p.emp = e.id AND e.salary IN (1, 2, 3) AND d.budget < 10 "
          "GROUP BY d.city")
KWARGS: dict[str, Any] = {"schema": SCHEMA, "cds": ["proj[emp->pid]<=4"],
                          "neighbor": "substitute", "bounds": ["dept.budget=0:20"],
                          "timeout": None, "witness_time": 0.05}
OTHERS = [  # analysed before it, in the corpus's style
    "SELECT e.dept, SUM(e.salary) FROM emp e, dept d WHERE e.dept = d.id GROUP BY e.dept",
    "SELECT d.city, COUNT(*) FROM emp e, dept d WHERE e.dept = d.id AND d.city = 'NY' "
    "GROUP BY d.city",
    "SELECT AVG(e.age) FROM emp e, proj p WHERE p.emp = e.id AND e.name LIKE 'A%'",
]


def _proof(a: cqsens.Analysis) -> tuple[Any, Any]:
    witness = a.witness.to_dict() if a.witness is not None else None
    return str(a.lower), json.loads(json.dumps(witness, default=str))


def _work_only() -> None:
    """Let the work budget alone stop the search, as bench/golden.py does (the clock would
    stop it early on a loaded machine)."""
    budget.HARD_STOP, budget.HARD_STOP_MARGIN = 1_000, 120.0


def test_the_same_lower_bound_and_witness_alone_and_after_other_queries(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "HARD_STOP", 1_000)
    monkeypatch.setattr(budget, "HARD_STOP_MARGIN", 120.0)
    alone = _proof(cqsens.analyze(SQL077, **KWARGS))
    for sql in OTHERS:
        for neighbor in ("add-remove", "substitute"):
            cqsens.analyze(sql, **{**KWARGS, "neighbor": neighbor})
    again = _proof(cqsens.analyze(SQL077, **KWARGS))
    assert alone[0] == "311/32"
    assert again == alone


_SCRIPT = """
import json, sys
import cqsens
from tests.test_witness_history import KWARGS, SQL077, _proof, _work_only
_work_only()
print(json.dumps(_proof(cqsens.analyze(SQL077, **KWARGS)), default=str))
"""


def _in_process_with_seed(seed: int, script: str = _SCRIPT) -> Any:
    env = {**os.environ, "PYTHONHASHSEED": str(seed),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_same_lower_bound_and_witness_under_every_hash_seed() -> None:
    """Seeds 0 and 3 gave 311/32 and 21/4 before."""
    zero, three = _in_process_with_seed(0), _in_process_with_seed(3)
    assert zero == three
    assert zero[0] == "311/32"



TPCH = ROOT / "examples" / "tpch"
#: TPC-H queries whose person-level witness depended on the hash seed, with their lower bound.
PERSON_QUERIES = {"q05.sql": "30135000", "q01.sql": "10790496850000000287/100000000000"}
_TPCH_SCRIPT = """
import json
import cqsens
from tests.test_witness_history import PERSON_QUERIES, TPCH, _proof, _work_only
_work_only()
settings = cqsens.Settings.from_toml(TPCH / "standard" / "cqsens.toml")
print(json.dumps({q: _proof(cqsens.analyze_with(TPCH / "queries" / q, settings))
                  for q in PERSON_QUERIES}, default=str))
"""


def test_the_same_person_witness_under_every_hash_seed() -> None:
    """Seeds 1 and 7 gave Q5 o_orderdate 1994-01-02 and 1994-12-31 in its witness, and Q1
    other keys for the copy of its person."""
    one, seven = (_in_process_with_seed(seed, _TPCH_SCRIPT) for seed in (1, 7))
    assert {q: proof[0] for q, proof in one.items()} == PERSON_QUERIES
    assert seven == one
