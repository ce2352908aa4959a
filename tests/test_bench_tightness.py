"""bench/tightness.py: FLEX's elastic sensitivity against brute force, and its exact values.

FLEX's elastic sensitivity at distance 0 with the declared max frequencies bounds the
change of the join's size for one added or removed row on every database satisfying
them, so the brute-force change of the count (tests/oracle.py, every single-row move
evaluated in SQLite) never exceeds it.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.parse_cq import parse_cq
from cqsens.ir.dependencies import Dependency, Sigma
from tests.conftest import scaled_examples
from tests.oracle import local_sensitivity
from tests.strategies import ARITIES, COLUMNS, cqs, databases, dependencies_for

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import tightness  # noqa: E402
from tightness import Entry, flex_sensitivity, max_frequency, with_exact  # noqa: E402

LINES = schema_from_ddl("CREATE TABLE L (o INTEGER, n INTEGER, x INTEGER, PRIMARY KEY (o, n));")


@settings(max_examples=scaled_examples(150), deadline=None)
@given(data=st.data())
def test_flex_bounds_every_single_row_move(data: st.DataObject) -> None:
    cq = data.draw(cqs())
    sigma = data.draw(dependencies_for(cq))
    db = data.draw(databases({r: ARITIES[r] for r in cq.relations()}, sigma))
    flex = flex_sensitivity(cq, sigma, None)
    observed, _ = local_sensitivity(cq, {r: ARITIES[r] for r in cq.relations()}, COLUMNS,
                                    db, sigma)
    note(f"{cq} Σ {sigma} db {db}: observed {observed}, FLEX {flex}")
    assert observed <= flex


def test_max_frequency_follows_a_composite_key() -> None:
    relation = LINES.find("L")
    fan = Sigma.of([Dependency("L", 0, 1, 7)])  # L[o->n]<=7, (o, n) the key: 7 rows per o
    assert max_frequency(fan, "L", relation, 3, 0) == 7
    assert max_frequency(fan, "L", relation, 3, 1) == math.inf  # nothing bounds rows per n
    rows = Sigma.of([Dependency("L", 2, -1, 3)])  # L[x->*]<=3
    assert max_frequency(rows, "L", relation, 3, 2) == 3
    # without a schema a relation is a set: its columns together are its key
    assert max_frequency(fan, "L", None, 3, 0) == math.inf  # x per o is not bounded
    both = Sigma.of([Dependency("L", 0, 1, 7), Dependency("L", 0, 2, 2)])
    assert max_frequency(both, "L", None, 3, 0) == 14


def test_flex_self_join_and_chain_rules() -> None:
    # Definition 6: a self-join pays mf·Ŝ on each side plus Ŝ·Ŝ; a chain multiplies
    sigma = Sigma.of([Dependency("R", 0, 1, 3)])
    assert flex_sensitivity(parse_cq("Q(x, y, z) :- R(x, y), R(x, z)"), sigma, None) == 7
    # R ⋈_y S: max(mf(y, R)·Ŝ(S), mf(y, S)·Ŝ(R)), rows per y: 3 in R, 2 in S
    chain = Sigma.of([Dependency("R", 1, 0, 3), Dependency("S", 0, 1, 2)])
    assert flex_sensitivity(parse_cq("Q(x, y, z) :- R(x, y), S(y, z)"), chain, None) == 3
    # nothing bounds R's rows per y: FLEX has no max frequency for the join
    assert flex_sensitivity(parse_cq("Q(x, y, z) :- R(x, y), S(y, z)"), sigma, None) == math.inf
    assert flex_sensitivity(parse_cq("Q(x, z) :- R(x, y), T(z)"), sigma, None) == math.inf


def test_exact_values_are_checked_against_the_bounds() -> None:
    name = ("hospital", "doctor_pairs_per_patient.sql")
    exact = tightness.KNOWN[name][0]
    entry = Entry(*name, upper=Fraction(6), lower=exact, rules="new-answers", flex=None,
                  seconds=0.0)
    assert with_exact(entry).exact == exact and not with_exact(entry).tight
    witnessed = Entry("x", "y", upper=Fraction(5), lower=Fraction(5), rules="", flex=None,
                      seconds=0.0)
    assert with_exact(witnessed).tight and with_exact(witnessed).why == "witness"
    with pytest.raises(AssertionError):  # a proven lower bound above the argued value
        with_exact(Entry(*name, upper=Fraction(6), lower=exact + 1, rules="", flex=None,
                         seconds=0.0))
    below = with_exact(Entry(*name, upper=exact - 1, lower=None, rules="", flex=None,
                             seconds=0.0))
    assert below.why.startswith("UNSOUND")


@pytest.mark.slow
def test_composite_key_joins_against_flex() -> None:
    rows = [tightness._analyse("tpch flex-style", name, sql, schema=tightness.TPCH / "schema.sql",
                               constraints=tightness.TPCH / "constraints_flex.txt",
                               budget=1.0, retry=1.0)
            for name, sql in tightness.COMPOSITE.items()]
    by = {e.name: e for e in rows}
    # FLEX: 7 + 7 + 1 for the self-join of lineitem; 41 · 7 along customer, orders, lineitem
    assert by["pairs of lines of one order"].flex == 15
    assert by["q3-shaped"].flex == 41 * 7
    assert by["q12-shaped"].flex is None  # GROUP BY: FLEX's histogram is per bin
    for e in rows:
        assert e.upper is not None and e.exact_known and e.tight, e
        assert e.flex is None or e.upper <= e.flex
