"""The analysis's fast paths give the same answers as the plain definitions they replace."""

from __future__ import annotations

import itertools
import math
import sqlite3
from decimal import Decimal
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from cqsens.engine.suggest import _Reach, suggest
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.parse_sql import parse_sql
from cqsens.frontend.sqlgen import predicate_sql
from cqsens.ir.cq import CQ, Atom, Const, Term, Var
from cqsens.ir.dependencies import (
    Dependency,
    MultiDependency,
    Sigma,
    multi_violations,
    rows_violations,
    satisfies,
    violations,
)
from cqsens.ir.expr import (
    Arith,
    Between,
    Cast,
    Compare,
    Function,
    InList,
    Kind,
    Like,
    Literal,
    Predicate,
    Slot,
)
from cqsens.witness.aggregate import _agrees, aggregate_sql, evaluate_released, released_values
from cqsens.witness.evaluate import Database
from cqsens.witness.values import Values
from tests.strategies import cqs, dependencies_for

_VALUES = st.one_of(st.none(), st.integers(0, 2))
_ROWS = st.lists(st.tuples(_VALUES, _VALUES, _VALUES), max_size=7)
_SINGLE = st.builds(Dependency, st.just("R"), st.integers(0, 2), st.integers(0, 2),
                    st.integers(1, 3))
_MULTI = st.builds(MultiDependency, st.just("R"),
                   st.sampled_from([(0, 1), (0, 2), (1, 2)]), st.integers(0, 2),
                   st.integers(1, 3))
_ROWS_DEP = st.builds(Dependency, st.just("R"), st.integers(0, 2), st.just(-1),
                      st.integers(1, 3))


@given(rows=_ROWS, deps=st.lists(st.one_of(_SINGLE, _MULTI, _ROWS_DEP), max_size=5),
       as_set=st.booleans())
def test_satisfies_is_the_absence_of_every_violation(
        rows: list[tuple[int | None, ...]], deps: list[Dependency | MultiDependency],
        as_set: bool) -> None:
    db = {"R": frozenset(rows) if as_set else rows}
    sigma = Sigma.of(deps)
    plain = not violations(db, sigma) and not multi_violations(db, sigma) \
        and not rows_violations(db, sigma)
    assert satisfies(db, sigma) is plain


def _plain_bounded(cq: CQ, public: frozenset[str], skip: frozenset[Atom],
                   deps: list[tuple[str, int, int]]) -> bool:
    """The definition: a walk from each atom's terms and the constants, over the steps
    ``deps`` make finite, reaches every free variable (public atoms and atoms holding every
    free variable aside)."""
    atoms = [a for a in cq.relation_atoms() if a not in skip]
    steps = set(deps)
    edges: dict[Term, set[Term]] = {}
    for atom in atoms:
        for i, a in enumerate(atom.terms):
            for j, b in enumerate(atom.terms):
                if i != j and a != b and (atom.relation, i, j) in steps:
                    edges.setdefault(a, set()).add(b)
    for atom in atoms:
        if set(cq.free) <= set(atom.terms) or atom.relation in public:
            continue
        seen = set(atom.terms) | set(cq.constants())
        stack = list(seen)
        while stack:
            for v in edges.get(stack.pop(), ()):
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
        if not set(cq.free) <= seen:
            return False
    return True


@st.composite
def _reach_cases(draw: st.DrawFn) -> tuple[CQ, frozenset[str], frozenset[Atom],
                                           list[tuple[str, int, int]]]:
    cq = draw(cqs(max_atoms=5))
    keys = sorted({(a.relation, i, j) for a in cq.relation_atoms() for i in range(len(a.terms))
                   for j in range(len(a.terms)) if i != j})
    deps = draw(st.lists(st.sampled_from(keys), max_size=len(keys))) if keys else []
    public = frozenset(draw(st.lists(st.sampled_from(["R", "S", "T", "U"]), max_size=1)))
    atoms = cq.relation_atoms()
    skip = frozenset(draw(st.lists(st.sampled_from(atoms), max_size=1)))
    return cq, public, skip, deps


@given(_reach_cases())
def test_suggest_reachability_is_the_plain_walk(
        case: tuple[CQ, frozenset[str], frozenset[Atom], list[tuple[str, int, int]]]) -> None:
    cq, public, skip, deps = case
    assert _Reach(cq, public, skip).bounded(deps) is _plain_bounded(cq, public, skip, deps)


def _plain_suggest(cq: CQ, sigma: Sigma, public: frozenset[str],
                   skip: frozenset[Atom]) -> tuple[tuple[tuple[str, int, int], ...], ...] | str:
    """:func:`suggest`'s choice computed with the plain walk: the smallest sets of up to
    three candidate keys (at most four of them, 5,000 sets tried), else the greedy drop."""
    declared = list(sigma.weights())

    def bounded(deps: list[tuple[str, int, int]]) -> bool:
        return _plain_bounded(cq, public, skip, deps)

    if bounded(declared):
        return ()
    candidates: list[tuple[str, int, int]] = []
    from_constant = set()
    for atom in cq.relation_atoms():
        for i, a in enumerate(atom.terms):
            for j, b in enumerate(atom.terms):
                key = (atom.relation, i, j)
                if i != j and a != b and isinstance(b, Var) and key not in declared \
                        and key not in candidates:
                    candidates.append(key)
                if not isinstance(a, Var):
                    from_constant.add(key)
    candidates.sort(key=lambda key: (key in from_constant, key))
    if not bounded(declared + candidates):
        return "disconnected"
    checks = 0
    for size in range(1, 4):
        if math.comb(len(candidates), size) > 5_000:
            break
        found = []
        for combo in itertools.combinations(candidates, size):
            checks += 1
            if checks > 5_000 or len(found) > 3:
                break
            if bounded(declared + list(combo)):
                found.append(combo)
        if found:
            return tuple(found)
    chosen = list(candidates)
    for key in list(candidates):
        trial = [c for c in chosen if c != key]
        if bounded(declared + trial):
            chosen = trial
    return (tuple(chosen),)


@given(_reach_cases(), st.data())
def test_suggest_is_the_plain_search(
        case: tuple[CQ, frozenset[str], frozenset[Atom], list[tuple[str, int, int]]],
        data: st.DataObject) -> None:
    cq, public, skip, _ = case
    sigma = data.draw(dependencies_for(cq))
    got = suggest(cq, sigma, public=public, skip=skip)
    plain = _plain_suggest(cq, sigma, public, skip)
    if plain == "disconnected":
        assert got.disconnected and not got.dependencies
    else:
        assert not got.disconnected
        options = (got.dependencies, *got.alternatives) if got.dependencies else ()
        assert tuple(tuple((d.relation, d.i, d.j) for d in o) for o in options) == plain


def test_suggest_greedy_drop_on_a_wide_query() -> None:
    """A query with more candidates than 5,000 pairs: the greedy drop, as the plain one."""
    atoms = [Atom("W", tuple(Var(f"w{n}") for n in range(40))),
             Atom("V", (Var("w0"), Var("y"), Const(1)))]
    cq = CQ.of([Var("y"), Var("w39")], atoms)
    got = suggest(cq, Sigma.of())
    plain = _plain_suggest(cq, Sigma.of(), frozenset(), frozenset())
    assert isinstance(plain, tuple) and len(plain) == 1 and len(plain[0]) >= 2
    assert tuple((d.relation, d.i, d.j) for d in got.dependencies) == plain[0]


_DATE = Literal("1995-01-01", Kind.DATE)
_CHECKS = [
    Compare("<", Slot(0), _DATE),
    Compare(">=", Slot(0), Literal("1994-01-01", Kind.DATE)),
    Compare("=", Slot(0), Literal("7", Kind.TEXT)),
    Compare(">", Arith("+", Slot(0), Literal(1, Kind.INTEGER)), Literal(30, Kind.INTEGER)),
    Between(Slot(0), Literal(-3, Kind.INTEGER), Literal(Decimal("2.5"), Kind.DECIMAL)),
    InList(Slot(0), (Literal(1, Kind.INTEGER), Literal("1", Kind.TEXT), _DATE)),
    Like(Slot(0), Literal("A%", Kind.TEXT)),
    Like(Slot(0), Literal("a_c", Kind.TEXT), case_insensitive=True),
    Compare("<", Function("length", (Slot(0),)), Literal(3, Kind.INTEGER)),
    Compare("=", Cast(Slot(0), "INTEGER"), Literal(12, Kind.INTEGER)),
    Compare("<>", Slot(0), Slot(0)),
]


@given(st.sampled_from(_CHECKS),
       st.one_of(st.integers(-(2**64), 2**64), st.sampled_from([2**63 - 1, -(2**63) + 1]),
                 st.text(max_size=6), st.sampled_from(["it's", "1995-01-01", "Abc", "a\\b", "12"])))
def test_a_bound_value_is_the_literal_that_spells_it(check: Predicate, value: int | str) -> None:
    """SQLite decides a check alike on the value bound as a parameter of the check's SQL
    written once and on the value written as a literal in it."""
    conn = sqlite3.connect(":memory:")
    try:
        try:
            literal = conn.execute("SELECT " + predicate_sql(check, [value])).fetchone()
        except (sqlite3.Error, OverflowError) as err:
            literal = type(err)
        try:
            bound = Values(CQ((), frozenset()), conn)._in_sqlite(check, value).fetchone()
        except (sqlite3.Error, OverflowError) as err:
            bound = type(err)
    finally:
        conn.close()
    assert bound == literal


@given(st.fractions(), st.fractions(min_value=0), st.integers(-3, 3), st.booleans())
def test_agreeing_doubles_agree_without_their_text(value: Fraction, scale: Fraction, ulps: int,
                                                   exact: bool) -> None:
    """SQLite's double agrees with the exact value (within 10⁻⁹ of the magnitude) exactly
    when its text does: the double nearest the value, and a few doubles around it."""
    try:
        native = float(value)
    except OverflowError:
        return
    for _ in range(abs(ulps)):
        native = math.nextafter(native, math.inf if ulps > 0 else -math.inf)
    if exact:
        scale = max(scale, abs(value))
    if not math.isfinite(native):
        return
    plain = abs(Fraction(repr(native)) - value) <= Fraction(1, 10**9) * max(Fraction(1), scale)
    assert _agrees(value, native, scale) is plain


def test_released_values_kept_per_object_are_computed_ones() -> None:
    """A database run again (the same object) gives what a fresh run gives, as a copy."""
    query = parse_sql("SELECT d, SUM(v) AS s FROM t GROUP BY d",
                      schema=schema_from_ddl("CREATE TABLE t (d INTEGER, v REAL)"))
    db = Database({"t": ("d", "v")}, {"t": frozenset({(1, 0.1), (1, 0.2), (2, 3.5)})},
                  {"t": ("INTEGER", "REAL")})
    sql = aggregate_sql(query, db.columns)
    assert sql is not None
    first = released_values(query, db, sql)
    assert first == evaluate_released(query, db, sql) == {(1,): (Fraction(3, 10),),
                                                           (2,): (Fraction(7, 2),)}
    first.clear()
    assert released_values(query, db, sql) == evaluate_released(query, db, sql)
