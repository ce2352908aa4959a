"""The witness search's fast paths give the same results as the computations they replace
(bench/results/tpch_release.md, "Analysis time"): each against its plain definition."""

from __future__ import annotations

import itertools
import math
import sqlite3
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from cqsens.engine.chase import chase
from cqsens.engine.core import core
from cqsens.engine.upper import upper_bound
from cqsens.ir.cq import CQ, Aggregate, AggregateQuery, Atom, Const, Var
from cqsens.ir.dependencies import Sigma
from cqsens.ir.expr import And, Between, Compare, Kind, Literal, Predicate, Slot
from cqsens.ir.semantics import checks_range
from cqsens.witness import construct
from cqsens.witness.aggregate import _within, released_change
from cqsens.witness.sql_aggregates import (
    CURRENT,
    ExactAvg,
    ExactResults,
    ExactSum,
    ExactTotal,
    sql_value,
)
from cqsens.witness.construct import (
    Structure,
    Tree,
    _null_for,
    _path,
    bound_trees,
    build,
    player_sets,
)
from cqsens.witness.evaluate import affinity_value
from cqsens.witness.model import Witness
from cqsens.witness.person_build import _DATE, _copies, _fits, _Plan, _tuple_repr
from cqsens.witness.search import find_witness
from cqsens.witness.values import RANGE_SCAN, fresh_in_range
from cqsens.witness.values import NoValue, Values, span
from tests.strategies import cqs, dependencies_for


def _shown(w: Witness | None) -> object:
    return None if w is None else (w.database, w.relation, w.row, w.count_without,
                                   w.count_with, w.construction)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), cq=cqs(max_atoms=3), slack=st.integers(0, 3))
def test_a_search_stopped_at_the_count_bound_finds_the_same_witness(
        data: st.DataObject, cq: CQ, slack: int) -> None:
    """``reach`` (a proven bound of the counted difference, below the ``upper`` the search
    is given) stops the search at a witness that reaches it: the full search, which keeps
    only a strictly larger difference, ends with that same witness."""
    sigma: Sigma = data.draw(dependencies_for(cq))
    reduced = core(chase(cq, sigma.fds()))
    bound = upper_bound(reduced, sigma)
    if bound.value == math.inf:
        return
    upper = bound.value * 10 + slack + 1  # a bound of something else: never reached
    query = AggregateQuery(cq=cq)
    full = find_witness(query, sigma, reduced, upper=upper, bound=bound, time_budget=0.05)
    cut = find_witness(query, sigma, reduced, upper=upper, bound=bound, time_budget=0.05,
                       reach=bound.value)
    assert _shown(cut) == _shown(full)
    assert full is None or full.difference <= bound.value


def _plain_sum(values: list[object]) -> tuple[Fraction, Fraction, int, bool]:
    """The definition: each value read exactly (sql_value), added up one by one."""
    exact = [sql_value(v) for v in values if v is not None]
    integer = all(isinstance(v, int) for v in values if v is not None)
    return (sum(exact, Fraction(0)), sum((abs(x) for x in exact), Fraction(0)), len(exact),
            integer)


_CELLS = st.one_of(
    st.none(), st.integers(-10**17, 10**17),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
    st.sampled_from([0.1, 0.2, 0.3, 1e-7, -2.5, 123.45, 1e15, -0.0]),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-10**6,
                max_value=10**6).map(lambda d: f" {d} "))


@settings(max_examples=200, deadline=None)
@given(values=st.lists(_CELLS, max_size=12),
       kind=st.sampled_from([ExactSum, ExactTotal, ExactAvg]))
def test_exact_sums_by_denominator_are_the_exact_sums(values: list[object], kind: type) -> None:
    """SUM, TOTAL and AVG added up by denominator in integers return what adding each
    value's exact Fraction returns, with the same magnitude Σ|x| beside it."""
    total, scale, count, integer = _plain_sum(values)
    registry = CURRENT.registry = ExactResults()
    try:
        aggregate = kind()
        for v in values:
            aggregate.step(v)
        got = aggregate.finalize()
    finally:
        CURRENT.registry = None
    if kind is ExactTotal:
        expected: Fraction | None = total
    elif not count:
        expected = None
    else:
        expected = total / count if kind is ExactAvg else total
    if expected is None:
        assert got is None
        return
    if kind is ExactSum and integer:
        assert got == expected and isinstance(got, int)
        return
    assert isinstance(got, float) and got == float(expected)
    assert registry.results[got] == {(expected, scale)}


def _plain_copies(cq: CQ, plan: _Plan, cap: int) -> list[dict[Var, object]] | None:
    """The definition: every copy grown into fresh dictionaries at every step."""
    copies: list[dict[Var, object]] = [
        {t: ("key", t.name) for t in plan.key if isinstance(t, Var)}]
    for target, sources, weight in plan.order:
        grown: list[dict[Var, object]] = []
        for copy in copies:
            parents = tuple(copy[s] if isinstance(s, Var) else ("const", repr(s.value))
                            for s in sources)
            grown.extend({**copy, target: (target.name, parents, i)} for i in range(weight))
        copies = grown
        if len(copies) * max(len(cq.relation_atoms()), 1) > cap:
            return None
    for copy in copies:
        for atom in cq.atoms:
            for t in atom.terms:
                if isinstance(t, Var) and t not in copy:
                    copy[t] = (t.name,)
    return copies


@st.composite
def _plans(draw: st.DrawFn) -> tuple[CQ, _Plan]:
    names = [Var(f"x{i}") for i in range(draw(st.integers(2, 6)))]
    key = names[:1]
    order = []
    for n, target in enumerate(names[1:], start=1):
        sources = tuple(draw(st.lists(st.sampled_from([*names[:n], Const(7)]), min_size=1,
                                      max_size=2)))
        order.append((target, sources, draw(st.integers(0, 3))))
    extra = Var("y")  # a variable no step reaches: one value shared by every copy
    cq = CQ((Atom("R", (*names, extra)),), frozenset())
    return cq, _Plan(tuple(order), tuple(key))


@settings(max_examples=200, deadline=None)
@given(planned=_plans(), cap=st.integers(1, 400))
def test_copies_grown_in_place_are_the_copies(planned: tuple[CQ, _Plan], cap: int) -> None:
    """A step of weight 1 grows each copy in place: the same copies, in the same order,
    with their variables in the same order, as growing fresh dictionaries."""
    cq, plan = planned
    got, plain = _copies(cq, plan, cap), _plain_copies(cq, plan, cap)
    assert got == plain
    assert got is None or plain is None or [list(c) for c in got] == [list(c) for c in plain]


_TYPE_WORDS = ["INT", "INTEGER", "BIGINT", "DECIMAL(15,2)", "NUMERIC", "REAL", "FLOAT",
               "DOUBLE", "CHAR(25)", "VARCHAR(10)", "TEXT", "CLOB", "BLOB", "DATE",
               "TIMESTAMP", "BOOLEAN", "", "point", "int", "text"]


def _plain_fits(value: object, declared: str) -> bool:
    kind = declared.upper()
    if "INT" in kind:
        return isinstance(value, int) and not isinstance(value, bool)
    if any(w in kind for w in ("DEC", "NUM", "REAL", "FLOA", "DOUB")):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if any(w in kind for w in ("CHAR", "TEXT", "CLOB")):
        return isinstance(value, str)
    if "DATE" in kind or "TIME" in kind:
        return isinstance(value, str) and bool(_DATE.match(value))
    return True


def _plain_affinity(value: object, declared: str) -> object:
    kind = declared.upper()
    if not kind or "BLOB" in kind:
        return value
    if any(word in kind for word in ("CHAR", "CLOB", "TEXT")):
        if isinstance(value, str):
            return value
        return repr(value) if isinstance(value, float) else str(value)
    number: object
    if isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            try:
                number = float(value.strip())
            except ValueError:
                return value
    else:
        number = value
    if any(word in kind for word in ("REAL", "FLOA", "DOUB")):
        return float(number)  # type: ignore[arg-type]
    if isinstance(number, float) and number.is_integer():
        return int(number)
    return number


_CELL_VALUES = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False,
                                                                allow_infinity=False),
                         st.sampled_from(["1", " 2.5 ", "x", "1994-01-02", "", "-0.0"]),
                         st.text(max_size=5))


@settings(max_examples=300, deadline=None)
@given(value=_CELL_VALUES, words=st.lists(st.sampled_from(_TYPE_WORDS), max_size=2))
def test_kinds_read_once_per_declared_type_are_the_kinds(value: object,
                                                          words: list[str]) -> None:
    """A declared type's kind, read once and kept, decides as reading it every time."""
    declared = " ".join(words)
    assert _fits(value, declared) is _plain_fits(value, declared)  # type: ignore[arg-type]
    got = affinity_value(value, declared)  # type: ignore[arg-type]
    plain = _plain_affinity(value, declared)
    assert type(got) is type(plain) and repr(got) == repr(plain)


def _plain_fresh_in_range(values: Values, checks: list[Predicate]) -> object:
    """The definition: the checks' range read again at every call, scanned from its low end."""
    low, high = checks_range(checks)
    if low == -math.inf or high == math.inf or low > high:
        raise NoValue
    start = math.ceil(low)
    for value in range(start, min(math.floor(high), start + RANGE_SCAN) + 1):
        if value not in values.used and all(values.holds(c, value) for c in checks):
            values.used.add(value)
            return value
    raise NoValue


_BOUNDS = st.one_of(st.integers(-20, 20).map(lambda n: Literal(n, Kind.INTEGER)),
                    st.decimals(-20, 20, places=1, allow_nan=False).map(
                        lambda d: Literal(d, Kind.DECIMAL)))
_CHECKS = st.lists(st.one_of(
    st.builds(Compare, st.sampled_from([">=", ">", "<=", "<", "=", "<>"]), st.just(Slot(0)),
              _BOUNDS),
    st.builds(Compare, st.sampled_from([">=", "<="]), _BOUNDS, st.just(Slot(0)))),
    max_size=3)


@settings(max_examples=200, deadline=None)
@given(checks=_CHECKS, used=st.sets(st.integers(-25, 25), max_size=20),
       calls=st.integers(1, 8))
def test_fresh_values_in_a_kept_range_are_the_fresh_values(
        checks: list[Predicate], used: set[int], calls: int) -> None:
    """The scan range kept per checks gives the values (or NoValue) that reading the
    checks' range at every call gives, call after call."""
    scratch = sqlite3.connect(":memory:")
    try:
        mine, plain = (Values(CQ((), frozenset()), scratch) for _ in range(2))
        mine.used, plain.used = set(used), set(used)
        for _ in range(calls):
            outcomes = []
            for values, pick in ((mine, fresh_in_range), (plain, _plain_fresh_in_range)):
                try:
                    outcomes.append(pick(values, list(checks)))
                except NoValue:
                    outcomes.append(NoValue)
            assert outcomes[0] == outcomes[1]
            assert mine.used == plain.used
    finally:
        scratch.close()


_SPAN_CHECKS = st.lists(st.one_of(
    _CHECKS.map(lambda cs: cs[0] if cs else Compare(">=", Slot(0), Literal(0, Kind.INTEGER))),
    st.builds(Between, st.just(Slot(0)), _BOUNDS, _BOUNDS, st.booleans()),
    _CHECKS.filter(bool).map(lambda cs: And(tuple(cs)) if len(cs) > 1 else cs[0])),
    min_size=1, max_size=3)


@settings(max_examples=300, deadline=None)
@given(checks=_SPAN_CHECKS, number=st.one_of(st.integers(-30, 30),
                                            st.decimals(-30, 30, places=2, allow_nan=False)
                                            .map(float)))
def test_a_number_outside_the_span_breaks_a_check(checks: list[Predicate],
                                                   number: float) -> None:
    """Passing over a fresh number outside the checks' span skips only numbers that
    fail a check when evaluated."""
    low, high = span(checks)
    if low <= number <= high:
        return
    scratch = sqlite3.connect(":memory:")
    try:
        values = Values(CQ((), frozenset()), scratch)
        assert not all(values.holds(c, number) for c in checks)
    finally:
        scratch.close()


def _plain_add_copies(s: Structure, core_cq: CQ, number: int, player: Atom, t: tuple[object, ...],
                      copies: int, tree: Tree | None, shared: set[Var]) -> None:
    """The definition: every copy reads each variable's key (and its path) afresh."""
    edges = sorted(tree.items(), key=lambda kv: kv[0].name) if tree else []
    position = {child: k for k, (child, _) in enumerate(edges)}
    indices = list(itertools.product(*(range(w) for _, (_, w) in edges))) if edges \
        else [(c,) for c in range(copies)]
    atoms = core_cq.relation_atoms()
    keyed: dict[tuple[object, ...], int] = {}
    for index in indices:
        mapping: dict[Var, object] = {}
        for p, term in enumerate(player.terms):
            if isinstance(term, Var):
                mapping[term] = t[p]
        for atom in atoms:
            for term in atom.terms:
                if isinstance(term, Var) and term not in mapping:
                    if term in shared:
                        key: tuple[object, ...] = (number, term, "shared")
                    elif tree and term in position:
                        key = (number, term, tuple(index[k] for k in _path(term, tree, position)))
                    else:
                        key = (number, term, index)
                    mapping[term] = _null_for(s, keyed, key, term, shared)
        for atom in atoms:
            s.add(atom.relation, tuple(term if isinstance(term, Const) else mapping[term]
                                       for term in atom.terms))


def _structure(s: Structure | None) -> object:
    return None if s is None else (s.rows, s.t, s.copied, s.origin, s.next_null)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), cq=cqs(max_atoms=4), copies=st.integers(1, 4))
def test_copies_with_their_keys_read_once_are_the_copies(
        data: st.DataObject, cq: CQ, copies: int) -> None:
    """Reading each variable's key kind and path once per player builds the structure
    (rows, nulls, their origins) that reading them for every copy builds, with and
    without the bound's trees of steps."""
    sigma: Sigma = data.draw(dependencies_for(cq))
    reduced = core(chase(cq, sigma.fds()))
    trees = bound_trees(upper_bound(reduced, sigma))
    for relation in sorted(reduced.relations()):
        for players in player_sets(reduced, relation):
            chosen = [trees.get(p) for p in players] if data.draw(st.booleans()) else None
            got = build(reduced, relation, players, copies, chosen, sigma)
            saved = construct._add_copies
            construct._add_copies = _plain_add_copies  # type: ignore[assignment]
            try:
                plain = build(reduced, relation, players, copies, chosen, sigma)
            finally:
                construct._add_copies = saved  # type: ignore[assignment]
            assert _structure(got) == _structure(plain)


_FRACTIONS = st.fractions(min_value=-10**6, max_value=10**6, max_denominator=10**4)


@settings(max_examples=300, deadline=None)
@given(value=_FRACTIONS, scale=st.fractions(min_value=0, max_value=10**6,
                                             max_denominator=10**4))
def test_magnitude_compared_in_integers_is_the_fraction_comparison(value: Fraction,
                                                                    scale: Fraction) -> None:
    assert _within(value, scale) is (abs(value) <= max(Fraction(1), scale))


def _plain_change(kinds: list[str], before: dict[tuple[object, ...], tuple[object, ...]],
                  after: dict[tuple[object, ...], tuple[object, ...]]
                  ) -> tuple[Fraction, float] | None:
    """The definition: every entry's difference added to both norms."""
    l1 = squares = Fraction(0)
    for key in sorted(set(before) | set(after), key=repr):
        for i, kind in enumerate(kinds):
            x = None if key not in before or before[key][i] is None else Fraction(before[key][i])
            y = None if key not in after or after[key][i] is None else Fraction(after[key][i])
            if kind in ("count", "count_distinct", "sum"):
                x, y = x or Fraction(0), y or Fraction(0)
            if x is None or y is None:
                if x is None and y is None:
                    continue
                return None
            l1 += abs(x - y)
            squares += (x - y) ** 2
    return l1, math.sqrt(squares)


_ENTRY = st.one_of(st.none(), st.integers(-5, 5), _FRACTIONS)


@settings(max_examples=300, deadline=None)
@given(kinds=st.lists(st.sampled_from(["count", "sum", "avg", "min"]), min_size=1, max_size=3),
       data=st.data())
def test_a_change_that_passes_over_equal_entries_is_the_change(kinds: list[str],
                                                              data: st.DataObject) -> None:
    """Entries equal on both sides add nothing to the ℓ1 and ℓ2 norms: passing over them
    gives the same change (and the same None for an entry undefined on one side)."""
    rows = st.dictionaries(st.tuples(st.integers(0, 3)),
                           st.tuples(*(_ENTRY for _ in kinds)), max_size=4)
    before, after = data.draw(rows), data.draw(rows)
    after.update({k: v for k, v in before.items() if data.draw(st.booleans())})
    query = AggregateQuery(cq=CQ((), frozenset()), aggregates=tuple(
        Aggregate(kind, kind) for kind in kinds))
    assert released_change(query, before, after) == _plain_change(kinds, before, after)


_IDENTS = st.recursive(st.one_of(st.text(max_size=4), st.integers(-5, 5)),
                       lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_IDENTS, max_size=6))
def test_identities_written_once_are_their_repr(values: list[object]) -> None:
    """A tuple's repr kept by id, its parts' too (shared parts included), is its repr."""
    shared = tuple(values)
    shown: dict[int, str] = {}
    for value in (*values, shared, (shared, shared), (shared,)):
        assert _tuple_repr(value, shown) == repr(value)
