"""Values.fresh decides the candidates near the checks' literals once per set of checks
(values._plan): the values it gives are the ones of trying every candidate in turn."""

from __future__ import annotations

import sqlite3
from functools import partial

from hypothesis import example, given
from hypothesis import strategies as st

from cqsens.ir.cq import CQ
from cqsens.ir.expr import And, Compare, Kind, Like, Literal, Predicate, Slot, literal_of
from cqsens.witness.values import NoValue, Values


def _reference(values: Values, checks: list[Predicate]) -> object:
    """Every candidate of ``_candidates`` in turn: the first unused one meeting the checks."""
    candidates = values._candidates(checks)
    for value in candidates:
        if value not in values.used and all(values.holds(c, value) for c in checks):
            values.used.add(value)
            return value
    if checks:
        raise NoValue
    for value in candidates:
        if value not in values.used:
            values.used.add(value)
            return value
    raise AssertionError("no candidate")


# near 0 and among the counter's own values (1001 on, three per call)
_numbers = st.one_of(st.integers(-50, 300), st.integers(995, 1060))
_check = st.one_of(
    st.builds(lambda op, n: Compare(op, Slot(0), literal_of(n)),
              st.sampled_from([">", ">=", "<", "<=", "<>", "="]), _numbers),
    st.builds(lambda lo, hi: And((Compare(">=", Slot(0), literal_of(lo)),
                                  Compare("<=", Slot(0), literal_of(hi)))), _numbers, _numbers),
    st.builds(lambda t: Like(Slot(0), Literal(t, Kind.TEXT)),
              st.sampled_from(["A%", "Ca%", "x_y%", "%", "v%", "%1", "%v", "%v%", "1%"])),
)


@example([[Compare(">", Slot(0), literal_of(1001))]], [0])  # 1002 before 1003
@example([[Like(Slot(0), Literal("%1", Kind.TEXT))]], [0, 0, 0, 0, 0])  # "1", then c + "1"
@example([[Like(Slot(0), Literal("v%", Kind.TEXT)), Compare("<>", Slot(0), literal_of("v")),
           Like(Slot(0), Literal("%v%", Kind.TEXT))]], [0, 0, 0])
@given(st.lists(st.lists(_check, max_size=3), min_size=1, max_size=6),
       st.lists(st.integers(0, 5), min_size=1, max_size=60))
def test_fresh_gives_the_values_of_trying_every_candidate(
        pool: list[list[Predicate]], picks: list[int]) -> None:
    fast = Values(CQ((), frozenset()), sqlite3.connect(":memory:"))
    slow = Values(CQ((), frozenset()), sqlite3.connect(":memory:"))
    for pick in picks:
        checks = pool[pick % len(pool)]
        try:
            want: object = _reference(slow, checks)
        except NoValue:
            want = NoValue
        try:
            got: object = fast.fresh(checks)
        except NoValue:
            got = NoValue
        assert (type(got), got) == (type(want), want)
        assert fast.counter == slow.counter


@given(st.lists(st.lists(_check, max_size=3), min_size=1, max_size=6),
       st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=1, max_size=40))
def test_meeting_gives_the_first_candidate_that_meets_the_checks(
        pool: list[list[Predicate]], picks: list[tuple[int, bool]]) -> None:
    fast = Values(CQ((), frozenset()), sqlite3.connect(":memory:"))
    slow = Values(CQ((), frozenset()), sqlite3.connect(":memory:"))
    for pick, fresh in picks:
        checks = pool[pick % len(pool)]
        if fresh:  # values used before, and the counter moved on
            for values, give in ((slow, partial(_reference, slow)), (fast, fast.fresh)):
                try:
                    give(checks)
                except NoValue:
                    assert values.counter > 0
            continue
        want = next((v for v in slow._candidates(checks)
                     if all(slow.holds(c, v) for c in checks)), None)
        got = fast.meeting(checks)
        assert (type(got), got) == (type(want), want)
        assert fast.counter == slow.counter
