"""Advice for unbounded queries, confirmed by re-running the analysis."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from cqsens.engine.chase import chase
from cqsens.engine.core import core
from cqsens.analysis import Analysis
from cqsens.engine.suggest import suggest
from cqsens.explain import Advice, AdviceKind, suggestion
from cqsens.frontend.ddl import load_schema
from cqsens.frontend.parse_cq import parse_cq
from cqsens.ir.dependencies import Sigma
from cqsens.pipeline import analyze
from cqsens.report.explanation import advice
from tests.strategies import cqs, dependencies_for


def _advice(a: Analysis) -> list[Advice]:
    return suggestion(a.query_obj, a.sigma, a.core, None)


def test_example_2_suggests_one_doctor_per_patient_among_the_options() -> None:
    schema = "examples/hospital/schema.sql"
    a = analyze("examples/hospital/oncology.sql", schema=schema)
    found = suggestion(a.query_obj, a.sigma, a.core, load_schema(Path(schema)))
    ours = [s for s in found if s.dependencies == ("PatDoc[pat->doc]",)]
    assert len(ours) == 1 and ours[0].kind is AdviceKind.DECLARE
    fd = analyze("examples/hospital/oncology.sql", schema=schema, fds=["PatDoc[pat->doc]"])
    cd = analyze("examples/hospital/oncology.sql", schema=schema, cds=["PatDoc[pat->doc]<=3"])
    assert (ours[0].bound, ours[0].cd_bound) == (fd.upper, cd.upper) == (1, 3)
    assert a.suggestion == tuple(advice(s) for s in found)


def test_disconnected_query_gets_a_reason() -> None:
    a = analyze("Q(x) :- R(x), S(y)")
    assert a.upper == math.inf
    assert [s.kind for s in _advice(a)] == [AdviceKind.NONE_HELPS]
    assert suggest(a.core, a.sigma).disconnected


def test_bounded_query_gets_no_suggestion() -> None:
    assert analyze("Q(x) :- R(x, y)").suggestion == ()


@given(data=st.data())
def test_every_suggestion_bounds_the_query(data: st.DataObject) -> None:
    cq = data.draw(cqs(max_atoms=4))
    sigma = data.draw(dependencies_for(cq))
    c = core(chase(cq, sigma.fds()))
    advice = suggest(c, sigma)
    if not advice.dependencies:
        return
    a = analyze(str(cq), fds=[d for d in sigma if d.k == 1], cds=[d for d in sigma if d.k > 1],
                prove_lower=False)
    b = analyze(str(cq), fds=[d for d in sigma if d.k == 1] + list(advice.dependencies), prove_lower=False,
                cds=[d for d in sigma if d.k > 1])
    assert a.upper == math.inf and b.upper < math.inf


def test_suggestion_is_minimal_for_a_chain() -> None:
    c = parse_cq("Q(x) :- R(x, y), S(y, z), T(z, w)")
    advice = suggest(c, Sigma.of())
    assert len(advice.dependencies) == 2  # S and T atoms each need one step back to x
