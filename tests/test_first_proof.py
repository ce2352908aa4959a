"""A log's search (witness.search.first_proof) stops at the first members of a growing family
that prove an unbounded count: it proves the same lower bound as the full search, and the
small member it keeps is a witness of the record's own query, for random constants."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cqsens import analyze
from cqsens.frontend.ddl import load_schema
from cqsens.witness.certificate import is_witness
from cqsens.witness.search import first_proof
from tests.conftest import scaled_examples

SCHEMA = str(Path(__file__).resolve().parents[1] / "examples/hospital/schema.sql")
SHAPES = [
    "SELECT COUNT(*) FROM Pat p JOIN PatDoc pd ON p.id = pd.pat WHERE p.age > {age} "
    "AND pd.pat > {a}",
    "SELECT COUNT(*) FROM Pat p JOIN Hos h ON p.hos = h.id WHERE h.loc = '{s}' "
    "AND p.age BETWEEN {age} AND {age2}",
    "SELECT COUNT(*) FROM Doc d, PatDoc x WHERE d.id = x.doc AND d.specialty LIKE '{s}%' "
    "AND x.pat > {a}",
    "SELECT COUNT(*) FROM Pat p, PatDoc x, Doc d WHERE p.id = x.pat AND x.doc = d.id "
    "AND d.specialty = '{s}' AND p.hos = {a} AND p.age >= {age}",
    "SELECT COUNT(DISTINCT p.hos) FROM Pat p WHERE p.age < {age} AND p.sex = '{s}'",
]


@settings(max_examples=scaled_examples(12), deadline=None)
@given(shape=st.sampled_from(SHAPES), a=st.integers(1, 9_999), age=st.integers(0, 99),
       width=st.integers(1, 20), s=st.sampled_from("ABCFMZ"))
def test_the_first_proof_is_the_full_searchs_bound_and_a_witness_of_its_own_query(
        shape: str, a: int, age: int, width: int, s: str) -> None:
    sql = shape.format(a=a, age=age, age2=age + width, s=s)
    full = analyze(sql, schema=SCHEMA, timeout=None)
    with first_proof():
        quick = analyze(sql, schema=SCHEMA, timeout=None)
    assert quick.upper == full.upper
    assert quick.lower == full.lower
    if quick.witness is None:
        return
    witness = quick.witness
    assert is_witness(quick.query_obj, quick.sigma, witness, schema=load_schema(SCHEMA))
    assert witness.lower == quick.lower <= quick.upper
    if witness.unbounded:  # the N = 4 member of a family proven for every N
        assert quick.lower == math.inf
        assert [n for n, _ in witness.growth] == [1, 2, 4]
        assert all(d >= n for n, d in witness.growth)
        assert full.witness is not None
        assert witness.database.size() < full.witness.database.size()
