"""Core golden cases, the CQ_core test and properties of the core."""

from __future__ import annotations

import pytest
from hypothesis import given

from cqsens.engine.core import core, in_cq_core, is_core
from cqsens.engine.homomorphism import find_homomorphism, is_homomorphism
from cqsens.frontend.parse_cq import parse_cq
from cqsens.ir.cq import Var
from tests.helpers import load_golden_pairs
from tests.strategies import cqs

PAIRS = load_golden_pairs("core.cq")


@pytest.mark.parametrize(("meta", "text", "expected"), PAIRS, ids=[m["title"] for m, _, _ in PAIRS])
def test_golden(meta: dict[str, str], text: str, expected: str) -> None:
    got, want = core(parse_cq(text)), parse_cq(expected)
    assert isomorphic(got, want), f"{got} is not {want}"


def isomorphic(a, b) -> bool:  # type: ignore[no-untyped-def]
    """Same size and homomorphisms both ways fixing the free variables (cores)."""
    fixed = {v: v for v in a.free}
    return (
        a.head == b.head
        and len(a.atoms) == len(b.atoms)
        and find_homomorphism(a.atoms, b.atoms, fixed=fixed) is not None
        and find_homomorphism(b.atoms, a.atoms, fixed=fixed) is not None
    )


def test_example_6_is_not_a_core_cq() -> None:
    q = parse_cq("Q(x1, x2) :- S(x1, x1), S(x1, y2), R(x1, y1), R(x2, y1)")
    assert not in_cq_core(q)
    assert in_cq_core(parse_cq("Q(x) :- R(x, y), S(y)"))


@given(cqs(max_atoms=5))
def test_core_is_equivalent_and_minimal(cq) -> None:  # type: ignore[no-untyped-def]
    c = core(cq)
    fixed = {v: v for v in cq.free}
    h = find_homomorphism(cq.atoms, c.atoms, fixed=fixed)
    assert h is not None and is_homomorphism(h, cq.atoms, c.atoms)
    assert c.atoms <= cq.atoms  # a retract is a substructure
    assert core(c) == c and is_core(c)
    assert set(c.free) == set(cq.free)
    assert all(isinstance(v, Var) for v in c.free)
