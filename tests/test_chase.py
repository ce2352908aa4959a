"""Chase golden cases and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cqsens.engine.chase import chase
from cqsens.frontend.parse_cq import parse_cq, parse_dependency
from cqsens.ir.dependencies import satisfies
from tests.helpers import load_golden_pairs
from tests.strategies import cqs, dependencies_for

PAIRS = load_golden_pairs("chase.cq")


@pytest.mark.parametrize(("meta", "text", "expected"), PAIRS, ids=[m["title"] for m, _, _ in PAIRS])
def test_golden(meta: dict[str, str], text: str, expected: str) -> None:
    fds = [parse_dependency(t.strip()) for t in meta["fds"].split(",")]
    got = chase(parse_cq(text), fds)
    if expected.endswith(":- false."):
        assert not got.satisfiable
    else:
        assert got == parse_cq(expected)


@given(data=st.data())
def test_chase_is_idempotent_and_satisfies_the_fds(data: st.DataObject) -> None:
    cq = data.draw(cqs(max_atoms=5))
    sigma = data.draw(dependencies_for(cq)).fds()
    once = chase(cq, sigma)
    assert chase(once, sigma) == once
    if once.satisfiable:
        canonical = {r: {a.terms for a in once.atoms if a.relation == r} for r in once.relations()}
        assert satisfies(canonical, sigma)
