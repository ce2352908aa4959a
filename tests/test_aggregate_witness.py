"""Aggregate witnesses (docs/rules.md, rule aggregate-witness) and the AVG add/remove rule."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from cqsens.pipeline import analyze
from cqsens.release.aggregates import avg_bound
from cqsens.witness.aggregate import AggregateWitness
from cqsens.witness.certificate import is_aggregate_witness

SCHEMA = ("CREATE TABLE Emp(id INT PRIMARY KEY, dept INT, sal INT CHECK (sal BETWEEN 0 AND 100));"
          " CREATE TABLE Dep(id INT PRIMARY KEY, name TEXT);")

TIGHT = [
    ("SELECT SUM(sal) FROM Emp", "add-remove", 100),
    ("SELECT AVG(sal) FROM Emp", "add-remove", 50),
    ("SELECT MEDIAN(sal) FROM Emp", "add-remove", 50),
    ("SELECT MIN(sal) FROM Emp", "add-remove", 100),
    ("SELECT MAX(sal) FROM Emp", "add-remove", 100),
    ("SELECT dept, SUM(sal) AS s FROM Emp GROUP BY dept", "add-remove", 100),
    ("SELECT SUM(sal) FROM Emp", "substitute", 100),
    ("SELECT AVG(sal) FROM Emp", "substitute", 100),
    ("SELECT MEDIAN(sal) FROM Emp", "substitute", 100),
    ("SELECT MIN(sal) FROM Emp", "substitute", 100),
    ("SELECT dept, COUNT(*) FROM Emp GROUP BY dept", "substitute", 2),
    ("SELECT AVG(e.sal) FROM Emp e JOIN Dep d ON e.dept = d.id", "substitute", 100),
]


@pytest.mark.parametrize(("sql", "neighbor", "value"), TIGHT)
def test_witness_reaches_the_upper_bound(sql: str, neighbor: str, value: int) -> None:
    # 2 s: the join's search takes about 0.5 s alone, and must still finish beside other
    # test workers
    a = analyze(sql, schema=SCHEMA, neighbor=neighbor, witness_time=2)
    assert a.upper == value and a.lower == value and a.tight and not a.lower_note
    w = a.witness
    assert isinstance(w, AggregateWitness)
    assert is_aggregate_witness(a.query_obj, a.sigma, w)
    assert a.to_dict(witness=True)["witness"]["l1"] == value


def test_certificate_rejects_a_false_claim() -> None:
    a = analyze("SELECT SUM(sal) FROM Emp", schema=SCHEMA)
    w = a.witness
    assert isinstance(w, AggregateWitness)
    from dataclasses import replace
    assert not is_aggregate_witness(a.query_obj, a.sigma, replace(w, l1=Fraction(101)))
    assert not is_aggregate_witness(a.query_obj, a.sigma, replace(w, after=w.database))


@pytest.mark.parametrize("rows", [1, 2, 3])
def test_avg_add_remove_against_brute_force(rows: int) -> None:
    """Every database of 1..3 values in {0..3}, plus up to D new values: the largest move
    of the mean is D/(D + 1)·(M − m)."""
    best = Fraction(0)
    for n in (1, 2, 3):
        for base in itertools.product(range(4), repeat=n):
            for d in range(1, rows + 1):
                for added in itertools.product(range(4), repeat=d):
                    before = Fraction(sum(base), n)
                    after = Fraction(sum(base) + sum(added), n + d)
                    best = max(best, abs(after - before))
    assert avg_bound(rows, 0, 3).l1 == best
    assert avg_bound(rows, 0, 3, neighbor="substitute").l1 == 3
