"""CQ grammar: round trips, errors with positions, grammar-driven fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis.extra.lark import from_lark
from lark import Lark

from cqsens.errors import DependencyError, InputError, ParseError
from cqsens.frontend.parse_cq import grammar_text, parse_cq, parse_dependency
from tests.helpers import load_invalid
from tests.strategies import cqs


def test_grammar_loads() -> None:
    assert "dependency" in grammar_text()


@given(cqs(max_atoms=5))
def test_round_trip(cq) -> None:  # type: ignore[no-untyped-def]
    assert parse_cq(str(cq)) == cq


def test_constants_and_comments() -> None:
    q = parse_cq("Q(x) :- R(x, 'it\\'s', -4, 2.5, \"dq\"). % comment")
    assert str(q) == "Q(x) :- R(x, 'it\\'s', -4, 2.5, 'dq')."


@pytest.mark.parametrize("text", load_invalid("parse_cq__invalid.cq"))
def test_invalid(text: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_cq(text, source="q.cq")
    assert info.value.line is not None and info.value.column is not None
    assert str(info.value).startswith("q.cq:")


_FUZZ = Lark(grammar_text(), start="query", parser="lalr")


@pytest.mark.slow
@given(from_lark(_FUZZ, start="query"))
def test_fuzzed_text_parses_or_raises_input_error(text: str) -> None:
    try:
        parse_cq(text)
    except InputError:
        pass


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("R[1->]", "R[i->j]"),
        ("R[0->1]", "start at 1"),
        ("R[1->2]<=0", "at least 1"),
        ("R[a->b]", "needs a schema"),
        ("R[1->1]", "itself"),
    ],
)
def test_bad_dependencies(text: str, message: str) -> None:
    with pytest.raises(DependencyError, match=message.replace("[", r"\[")):
        parse_dependency(text)


def test_dependency_positions_checked_against_arity() -> None:
    with pytest.raises(DependencyError, match="out of range"):
        parse_dependency("R[1->3]", arities={"R": 2})


def test_unsafe_head_gives_the_variable_position() -> None:
    with pytest.raises(InputError) as info:
        parse_cq("Q(x,\n  w) :- R(x, y)", source="q.cq")
    assert str(info.value).startswith("q.cq:2:3: head variable w")
