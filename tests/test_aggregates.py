"""Tests of cqsens.release.aggregates: the docs/rules.md base rules and corrections, soundness.

The table cells and errata live in ``tests/fixtures/bounds/aggregates.toml``; the
property tests draw small databases and neighbours (add a row, remove a row,
change a row), evaluate the aggregate for real (SQLite for COUNT/SUM/histograms,
Python for MEDIAN/AVG/MIN/MAX) and check that no observed change exceeds the
reported ℓ1 or ℓ2 bound.
"""

from __future__ import annotations

import itertools
import math
import sqlite3
import statistics
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from cqsens.engine.rules import Rule
from cqsens.errors import InputError
from cqsens.release.aggregates import (
    NEIGHBORS,
    AggregateBound,
    avg_bound,
    count_bound,
    histogram_bound,
    median_bound,
    min_max_bound,
    sum_bound,
    vector_bound,
)
from cqsens.report.words import render

FIXTURE = Path(__file__).parent / "fixtures" / "bounds" / "aggregates.toml"
CASES: list[dict[str, Any]] = tomllib.loads(FIXTURE.read_text(encoding="utf-8"))["case"]
TOL = 1e-9  # slack for float rounding of observed ℓ2 norms and of √2·Δ


# ----------------------------------------------------------------------------- table cases


def _bound_for(case: dict[str, Any]) -> AggregateBound:
    kind = case["kind"]
    delta = case.get("count_delta", 1)
    common: dict[str, Any] = {
        "neighbor": case["neighbor"],
        "contributions": case.get("contributions", 1),
    }
    if kind == "count":
        return count_bound(delta, **common)
    if kind == "histogram":
        return histogram_bound(delta, **common)
    low, high = case["low"], case["high"]
    if kind == "sum":
        unfiltered = case.get("single_table_unfiltered", False)
        return sum_bound(delta, low, high, single_table_unfiltered=unfiltered, **common)
    if kind == "avg":
        return avg_bound(delta, low, high, **common)
    if kind == "min_max":
        return min_max_bound(delta, low, high, **common)
    if kind == "median":
        return median_bound(delta, low, high, rows=case.get("rows"), **common)
    raise AssertionError(f"unknown kind {kind!r} in {FIXTURE.name}")


def _rule_for(case: dict[str, Any]) -> Rule:
    """The docs/rules.md heading that states the case's cell (its neighbour model and kind)."""
    substitute = case["neighbor"] == "substitute"
    one_row = case.get("count_delta", 1) == 1 and case.get("contributions", 1) == 1
    return {
        "count": Rule.COUNT_SUBSTITUTION if substitute else Rule.NEW_ANSWERS,
        "histogram": Rule.GROUP_BY_HISTOGRAM,
        "sum": Rule.SUM_SUBSTITUTION if substitute else Rule.SUM,
        "avg": Rule.AVG,
        "min_max": Rule.MIN_MAX,
        "median": Rule.MEDIAN_PARITY_ROWS if substitute and one_row else Rule.MEDIAN,
    }[case["kind"]]


def _same(a: float, b: float) -> bool:
    return a == b or math.isclose(a, b, rel_tol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_table_case(case: dict[str, Any]) -> None:
    """One cell of the base-rules table (or a correction): the rule gives the expected ℓ1, ℓ2."""
    bound = _bound_for(case)
    assert _same(bound.l1, case["expect"]["l1"]), bound
    assert _same(bound.l2, case["expect"]["l2"]), bound
    assert bound.neighbor == case["neighbor"]
    assert bound.rule is _rule_for(case)
    assert bound.derivation.value == bound.l1
    sentence = render(bound.derivation)
    assert sentence.endswith(".") and sentence.count(". ") == 0  # one sentence
    if "seed" in case:  # the published literal value is what docs/rules.md corrects
        assert not (_same(bound.l1, case["seed"]["l1"]) and _same(bound.l2, case["seed"]["l2"]))


def test_fixture_covers_the_spec_table() -> None:
    """Every (query, neighbour) cell of the base rules and each correction has a case."""
    ids = {c["id"] for c in CASES}
    for kind in ("count", "histogram", "sum", "median"):
        for neighbor in NEIGHBORS:
            assert any(i.startswith(f"table-{kind}-{neighbor}") for i in ids), (kind, neighbor)
    assert sum(i.startswith("errata-6.4") for i in ids) >= 3
    assert any(i.startswith("errata-6.5") for i in ids)
    assert any(i.startswith("errata-6.6") for i in ids)


def test_rules_name_their_source() -> None:
    """Each bound carries the docs/rules.md rule it applies, and its sentence names it."""
    bounds = {
        Rule.GROUP_BY_HISTOGRAM: histogram_bound(1, neighbor="substitute"),
        Rule.SUM_SUBSTITUTION: sum_bound(1, 0, 1, neighbor="substitute"),
        Rule.MEDIAN_PARITY_ROWS: median_bound(1, 0, 1, neighbor="substitute", rows=2),
        Rule.NEW_ANSWERS: count_bound(1, contributions=2),
        Rule.AVG: avg_bound(1, 0, 1),
        Rule.MIN_MAX: min_max_bound(1, 0, 1),
        Rule.SEVERAL_AGGREGATES: vector_bound([count_bound(1), sum_bound(1, 0, 1)]),
    }
    for rule, bound in bounds.items():
        assert bound.rule is rule
        assert rule.value in render(bound.derivation) or rule is Rule.SEVERAL_AGGREGATES
    assert bounds[Rule.NEW_ANSWERS].derivation.neighbourhood.contributions == 2
    assert bounds[Rule.MEDIAN_PARITY_ROWS].derivation["rows"] == 2
    assert bounds[Rule.SEVERAL_AGGREGATES].derivation.premises == (
        count_bound(1).derivation, sum_bound(1, 0, 1).derivation)


def test_vector_bound() -> None:
    """Several aggregates: ℓ1 adds up, ℓ2 is the root of the sum of squares."""
    parts = [sum_bound(1, 0, 3), sum_bound(1, -4, 0), count_bound(1)]
    b = vector_bound(parts)
    assert b.l1 == 8
    assert math.isclose(b.l2, math.sqrt(9 + 16 + 1))
    assert b.neighbor == "add-remove"
    assert vector_bound([count_bound(math.inf), count_bound(1)]).l2 == math.inf
    h = vector_bound([histogram_bound(1, neighbor="substitute")])
    assert math.isclose(h.l2, math.sqrt(2))


# ----------------------------------------------------------------------------- bad input

BAD_CALLS: list[tuple[str, Callable[[], object], str]] = [
    ("unknown-neighbor", lambda: count_bound(1, neighbor="change-one"), "change-one"),
    ("neighbor-choices", lambda: sum_bound(1, 0, 1, neighbor="bounded"), "substitute"),
    ("low-above-high", lambda: sum_bound(1, 5, 2), "low 5 > high 2"),
    ("range-nan", lambda: median_bound(1, math.nan, 2), "low"),
    ("range-of-no-real", lambda: avg_bound(1, math.inf, math.inf), "no real number"),
    ("negative-delta", lambda: histogram_bound(-1), ">= 0"),
    ("nan-delta", lambda: count_bound(math.nan), "count_delta"),
    ("bool-delta", lambda: count_bound(True), "count_delta"),
    ("zero-contributions", lambda: count_bound(1, contributions=0), "contributions"),
    (
        "float-contributions",
        lambda: min_max_bound(1, 0, 1, contributions=1.5),  # type: ignore[arg-type]
        "contributions",
    ),
    ("zero-rows", lambda: median_bound(1, 0, 1, neighbor="substitute", rows=0), "rows"),
    (
        "unfiltered-needs-delta-1",
        lambda: sum_bound(2, 0, 1, neighbor="substitute", single_table_unfiltered=True),
        "count_delta == 1",
    ),
    ("empty-vector", lambda: vector_bound([]), "no aggregate"),
    (
        "mixed-neighbors",
        lambda: vector_bound([count_bound(1), count_bound(1, neighbor="substitute")]),
        "different neighbour models",
    ),
]


@pytest.mark.parametrize(
    ("call", "needle"), [(c, n) for _, c, n in BAD_CALLS], ids=[i for i, _, _ in BAD_CALLS]
)
def test_bad_input_raises_input_error(call: Callable[[], object], needle: str) -> None:
    """Bad parameters raise InputError naming the value at fault."""
    with pytest.raises(InputError) as info:
        call()
    assert needle in str(info.value)


def test_results_are_frozen() -> None:
    """AggregateBound is immutable."""
    b = count_bound(1)
    with pytest.raises(AttributeError):
        b.l1 = 2  # type: ignore[misc]


# ----------------------------------------------------------------------------- evaluation

Row = tuple[int, str, int]  # (v, category, flag)
CATEGORIES = ("a", "b", "c")


def _sqlite(rows: Iterable[Row], sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE t (v INTEGER, cat TEXT, flag INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)", list(rows))
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _scalar(rows: Sequence[Row], sql: str) -> float:
    return _sqlite(rows, sql)[0][0]  # type: ignore[no-any-return]


def _histogram(rows: Sequence[Row], where: str) -> Counter[str]:
    sql = f"SELECT cat, COUNT(*) FROM t {where} GROUP BY cat"
    return Counter({cat: n for cat, n in _sqlite(rows, sql)})


def _norms(before: Counter[str], after: Counter[str]) -> tuple[float, float]:
    diffs = [after[k] - before[k] for k in set(before) | set(after)]
    return float(sum(abs(d) for d in diffs)), math.sqrt(sum(d * d for d in diffs))


def _assert_within(observed_l1: float, observed_l2: float, bound: AggregateBound) -> None:
    assert observed_l1 <= bound.l1 + TOL, (observed_l1, bound)
    assert observed_l2 <= bound.l2 + TOL, (observed_l2, bound)


# ----------------------------------------------------------------------------- strategies


@st.composite
def value_ranges(draw: st.DrawFn) -> tuple[int, int]:
    """Draw integer bounds m ≤ M in [-20, 20]."""
    low = draw(st.integers(-20, 20))
    high = draw(st.integers(low, 20))
    return low, high


@st.composite
def single_tables(draw: st.DrawFn, *, min_size: int = 0) -> tuple[int, int, list[Row]]:
    """Draw a value range [m, M] and a bag of rows (v in [m, M], a category, a 0/1 flag)."""
    low, high = draw(value_ranges())
    row = st.tuples(st.integers(low, high), st.sampled_from(CATEGORIES), st.integers(0, 1))
    rows = draw(st.lists(row, min_size=min_size, max_size=8))
    return low, high, rows


@st.composite
def neighbours(
    draw: st.DrawFn, *, neighbor: str, min_size: int = 0, k: int = 1
) -> tuple[int, int, list[Row], list[Row]]:
    """(m, M, D, D') where D' is a neighbour of D changing at most k rows.

    add-remove: D' adds j ≤ k rows to D, or removes j ≤ k rows of D (one person's
    rows), or, for k > 1, removes some rows and adds others, j ≤ k in all (a chain of
    single-row steps, docs/rules.md, rule contributions); substitute: j ≤ k rows of D
    are replaced by j arbitrary rows.  Both D and D' have at least ``min_size`` rows.
    """
    low, high, rows = draw(single_tables(min_size=min_size))
    new_row = st.tuples(st.integers(low, high), st.sampled_from(CATEGORIES), st.integers(0, 1))
    if neighbor == "add-remove" and k > 1 and draw(st.booleans()):
        # the additions first: every database along the chain keeps min_size rows
        removed = draw(st.integers(0, min(k - 1, len(rows))))
        added = draw(st.lists(new_row, min_size=1, max_size=k - removed))
        gone = set(draw(st.permutations(range(len(rows))))[:removed])
        after = [r for i, r in enumerate(rows) if i not in gone] + added
        assume(len(after) >= min_size)
        return low, high, rows, after
    if neighbor == "add-remove":
        grow = len(rows) - k < min_size or draw(st.booleans())
        if grow:
            added = draw(st.lists(new_row, min_size=1, max_size=k))
            return low, high, rows, rows + added
        j = draw(st.integers(1, min(k, len(rows) - min_size)))
        gone = set(draw(st.permutations(range(len(rows))))[:j])
        return low, high, rows, [r for i, r in enumerate(rows) if i not in gone]
    assume(rows)
    j = draw(st.integers(1, min(k, len(rows))))
    changed = draw(st.permutations(range(len(rows))))[:j]
    after = list(rows)
    for i in changed:
        after[i] = draw(new_row)
    return low, high, rows, after


FILTERS = {
    "none": "",
    "flag": "WHERE flag = 1",
    "value-threshold": "WHERE v >= 3",
    "category": "WHERE cat <> 'b'",
}


# ----------------------------------------------------------------------------- properties


@pytest.mark.parametrize("neighbor", NEIGHBORS)
@given(data=st.data())
def test_count_is_sound(neighbor: str, data: st.DataObject) -> None:
    """COUNT, with and without filters: no neighbour changes it by more than the bound."""
    _, _, before, after = data.draw(neighbours(neighbor=neighbor))
    for where in FILTERS.values():
        sql = f"SELECT COUNT(*) FROM t {where}"
        change = abs(_scalar(after, sql) - _scalar(before, sql))
        _assert_within(change, change, count_bound(1, neighbor=neighbor))


@pytest.mark.parametrize("neighbor", NEIGHBORS)
@given(data=st.data())
def test_histogram_is_sound(neighbor: str, data: st.DataObject) -> None:
    """GROUP BY counts: observed ℓ1 and ℓ2 of the change stay within the bound."""
    _, _, before, after = data.draw(neighbours(neighbor=neighbor))
    for where in FILTERS.values():
        l1, l2 = _norms(_histogram(before, where), _histogram(after, where))
        _assert_within(l1, l2, histogram_bound(1, neighbor=neighbor))


@pytest.mark.parametrize("neighbor", NEIGHBORS)
@given(data=st.data())
def test_sum_is_sound(neighbor: str, data: st.DataObject) -> None:
    """SUM with every filter; the unfiltered single-table rule only without a filter."""
    low, high, before, after = data.draw(neighbours(neighbor=neighbor))
    for name, where in FILTERS.items():
        sql = f"SELECT COALESCE(SUM(v), 0) FROM t {where}"  # an empty sum is 0
        change = abs(_scalar(after, sql) - _scalar(before, sql))
        bound = sum_bound(1, low, high, neighbor=neighbor, single_table_unfiltered=(name == "none"))
        _assert_within(change, change, bound)
        # the filtered rule also covers the unfiltered query (it is never smaller)
        _assert_within(change, change, sum_bound(1, low, high, neighbor=neighbor))


@pytest.mark.parametrize("neighbor", NEIGHBORS)
@given(data=st.data())
def test_median_is_sound(neighbor: str, data: st.DataObject) -> None:
    """MEDIAN (mean of the two middle values for even n) within the median rules of docs/rules.md."""
    low, high, before, after = data.draw(neighbours(neighbor=neighbor, min_size=1))
    change = abs(statistics.median(r[0] for r in after) - statistics.median(r[0] for r in before))
    for rows in (len(before), None):
        _assert_within(change, change, median_bound(1, low, high, neighbor=neighbor, rows=rows))


@pytest.mark.parametrize("neighbor", NEIGHBORS)
@given(data=st.data())
def test_avg_min_max_are_sound(neighbor: str, data: st.DataObject) -> None:
    """AVG, MIN and MAX within M − m, even when two rows change (with one removed and
    another added, AVG moves by the whole range)."""
    low, high, before, after = data.draw(neighbours(neighbor=neighbor, min_size=1, k=2))
    xs, ys = [r[0] for r in before], [r[0] for r in after]
    for f, bound in (
        (statistics.fmean, avg_bound(1, low, high, neighbor=neighbor, contributions=2)),
        (min, min_max_bound(1, low, high, neighbor=neighbor, contributions=2)),
        (max, min_max_bound(1, low, high, neighbor=neighbor, contributions=2)),
    ):
        change = abs(f(ys) - f(xs))
        _assert_within(change, change, bound)


@pytest.mark.parametrize("k", [2, 3])
def test_avg_with_contributions_covers_a_chain_that_removes_a_row_and_adds_another(k: int) -> None:
    """{m} → {m, M} → {M} is a chain of two add-remove steps: AVG moves by M − m (the
    add-remove refinement D/(D + 1)·(M − m) gave 2/3 and 3/4 of it)."""
    before, after = [(0, "a", 0)], [(4, "a", 0)]
    sql = "SELECT AVG(v) FROM t"
    change = abs(_scalar(after, sql) - _scalar(before, sql))
    assert change == 4
    bound = avg_bound(1, 0, 4, contributions=k)
    _assert_within(change, change, bound)
    assert bound.l1 == 4 and "rows" not in bound.derivation.inputs


@pytest.mark.parametrize("neighbor", NEIGHBORS)
@given(data=st.data())
def test_contributions_are_sound(neighbor: str, data: st.DataObject) -> None:
    """Up to k rows per individual: the additive bounds times k hold."""
    k = data.draw(st.integers(2, 3))
    low, high, before, after = data.draw(neighbours(neighbor=neighbor, min_size=1, k=k))
    for name, where in FILTERS.items():
        sql = f"SELECT COUNT(*) FROM t {where}"
        change = abs(_scalar(after, sql) - _scalar(before, sql))
        _assert_within(change, change, count_bound(1, neighbor=neighbor, contributions=k))
        l1, l2 = _norms(_histogram(before, where), _histogram(after, where))
        _assert_within(l1, l2, histogram_bound(1, neighbor=neighbor, contributions=k))
        sql = f"SELECT COALESCE(SUM(v), 0) FROM t {where}"
        change = abs(_scalar(after, sql) - _scalar(before, sql))
        unfiltered = name == "none"
        bound = sum_bound(
            1, low, high, neighbor=neighbor, contributions=k, single_table_unfiltered=unfiltered
        )
        _assert_within(change, change, bound)
    change = abs(statistics.median(r[0] for r in after) - statistics.median(r[0] for r in before))
    bound = median_bound(1, low, high, neighbor=neighbor, rows=len(before), contributions=k)
    _assert_within(change, change, bound)


# A join with a key and a degree bound: R(a, g) with key a, S(a, v) with at most d
# values v per a. Adding R(a, g) creates at most d answers of R ⋈ S, adding S(a, v)
# at most one (the key): the CQ count bound is Δ = d, also with g free.

JoinDb = tuple[frozenset[tuple[int, str]], frozenset[tuple[int, int]]]
KEYS = range(4)


def _join_ok(db: JoinDb, d: int) -> bool:
    r, s = db
    return len({a for a, _ in r}) == len(r) and all(
        n <= d for n in Counter(a for a, _ in s).values()
    )


def _join_rows(db: JoinDb, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE R (a INTEGER, g TEXT)")
        conn.execute("CREATE TABLE S (a INTEGER, v INTEGER)")
        conn.executemany("INSERT INTO R VALUES (?, ?)", sorted(db[0]))
        conn.executemany("INSERT INTO S VALUES (?, ?)", sorted(db[1]))
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _additions(db: JoinDb, d: int, low: int, high: int) -> list[JoinDb]:
    r, s = db
    out: list[JoinDb] = []
    for a, g in itertools.product(KEYS, CATEGORIES):
        cand: JoinDb = (r | {(a, g)}, s)
        if (a, g) not in r and _join_ok(cand, d):
            out.append(cand)
    for a, v in itertools.product(KEYS, range(low, high + 1)):
        cand = (r, s | {(a, v)})
        if (a, v) not in s and _join_ok(cand, d):
            out.append(cand)
    return out


def _removals(db: JoinDb) -> list[JoinDb]:
    r, s = db
    return [(r - {t}, s) for t in sorted(r)] + [(r, s - {t}) for t in sorted(s)]


@st.composite
def join_neighbours(draw: st.DrawFn, *, neighbor: str) -> tuple[int, int, int, JoinDb, JoinDb]:
    """Draw (d, m, M, D, D'): D' is a neighbour of D, both satisfying the key and degree d."""
    d = draw(st.integers(1, 3))
    low, high = draw(value_ranges().filter(lambda lh: lh[1] - lh[0] <= 8))
    keys = draw(st.lists(st.sampled_from(list(KEYS)), unique=True))
    r = frozenset((a, draw(st.sampled_from(CATEGORIES))) for a in keys)
    s_rows: set[tuple[int, int]] = set()
    for a in KEYS:
        vals = draw(st.lists(st.integers(low, high), unique=True, max_size=d))
        s_rows |= {(a, v) for v in vals}
    before: JoinDb = (r, frozenset(s_rows))
    if neighbor == "add-remove":
        moves = _additions(before, d, low, high) + _removals(before)
    else:  # remove one tuple, then add one (any relation); the class is closed under removal
        moves = [
            after for middle in _removals(before) for after in _additions(middle, d, low, high)
        ]
    assume(moves)
    return d, low, high, before, draw(st.sampled_from(moves))


JOIN = "FROM R JOIN S ON R.a = S.a"


@pytest.mark.parametrize("neighbor", NEIGHBORS)
@given(data=st.data())
def test_join_rules_are_sound(neighbor: str, data: st.DataObject) -> None:
    """On a keyed join with Δ = d, every aggregate rule holds for the real change."""
    d, low, high, before, after = data.draw(join_neighbours(neighbor=neighbor))
    for where in ("", "WHERE S.v >= 2", "WHERE R.g <> 'a'"):
        _check_join(d, low, high, neighbor, before, after, where)


def _check_join(
    d: int, low: int, high: int, neighbor: str, before: JoinDb, after: JoinDb, where: str
) -> None:
    """Check every aggregate rule with the join's count bound Δ = d, for one filter."""

    def scalar(db: JoinDb, sql: str) -> float:
        return _join_rows(db, sql)[0][0]  # type: ignore[no-any-return]

    count_sql = f"SELECT COUNT(*) {JOIN} {where}"
    change = abs(scalar(after, count_sql) - scalar(before, count_sql))
    assert change <= d  # the engine's Δ is right for this class
    _assert_within(change, change, count_bound(d, neighbor=neighbor))

    hist_sql = f"SELECT R.g, COUNT(*) {JOIN} {where} GROUP BY R.g"
    l1, l2 = _norms(
        Counter(dict(_join_rows(before, hist_sql))), Counter(dict(_join_rows(after, hist_sql)))
    )
    _assert_within(l1, l2, histogram_bound(d, neighbor=neighbor))

    sum_sql = f"SELECT COALESCE(SUM(S.v), 0) {JOIN} {where}"
    change = abs(scalar(after, sum_sql) - scalar(before, sum_sql))
    _assert_within(change, change, sum_bound(d, low, high, neighbor=neighbor))

    xs = [v for (v,) in _join_rows(before, f"SELECT S.v {JOIN} {where}")]
    ys = [v for (v,) in _join_rows(after, f"SELECT S.v {JOIN} {where}")]
    if xs and ys:  # MEDIAN/AVG/MIN/MAX are assumed defined on both neighbours
        for rows in (len(xs), None):
            change = abs(statistics.median(ys) - statistics.median(xs))
            bound = median_bound(d, low, high, neighbor=neighbor, rows=rows)
            _assert_within(change, change, bound)
        change = abs(statistics.fmean(ys) - statistics.fmean(xs))
        _assert_within(change, change, avg_bound(d, low, high, neighbor=neighbor))
        for f in (min, max):
            change = abs(f(ys) - f(xs))
            _assert_within(change, change, min_max_bound(d, low, high, neighbor=neighbor))


# ----------------------------------------------------------------------------- exhaustive


def _all_tables(values: Sequence[int], n: int) -> Iterable[tuple[int, ...]]:
    return itertools.combinations_with_replacement(values, n)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_median_change_one_is_tight(n: int) -> None:
    """Exhaustively over bags of n values in {0, 3, 7, 10}: max change == bound."""
    values = (0, 3, 7, 10)
    worst = 0.0
    for xs in _all_tables(values, n):
        for i, new in itertools.product(range(n), values):
            ys = list(xs)
            ys[i] = new
            worst = max(worst, abs(statistics.median(ys) - statistics.median(xs)))
    assert worst == median_bound(1, 0, 10, neighbor="substitute", rows=n).l1


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_median_add_remove_is_tight(n: int) -> None:
    """Exhaustively over small bags: adding a row moves the median by at most (M − m)/2, reached."""
    values = (0, 3, 7, 10)
    worst = 0.0
    for xs in _all_tables(values, n):
        for new in values:
            worst = max(worst, abs(statistics.median([*xs, new]) - statistics.median(xs)))
    assert worst == median_bound(1, 0, 10, neighbor="add-remove").l1


def test_filtered_sum_witness_breaks_seed_001() -> None:
    """Rule sum-substitution: values in [5, 10], a row moves from filtered out to counted at 10."""
    before = [(5, "a", 0)]
    after = [(10, "a", 1)]
    sql = "SELECT COALESCE(SUM(v), 0) FROM t WHERE flag = 1"
    change = abs(_scalar(after, sql) - _scalar(before, sql))
    seed_bound = 10 - 5
    assert change == 10 > seed_bound
    assert change == sum_bound(1, 5, 10, neighbor="substitute").l1


def test_histogram_change_one_l2_is_reached() -> None:
    """One row moving between groups: ℓ1 = 2 and ℓ2 = √2 exactly (rule group-by-histogram)."""
    before = [(0, "a", 1), (0, "b", 1)]
    after = [(0, "b", 1), (0, "b", 1)]
    l1, l2 = _norms(_histogram(before, ""), _histogram(after, ""))
    b = histogram_bound(1, neighbor="substitute")
    assert l1 == b.l1 == 2
    # ℓ2 is √2, which the bound holds as a rational upper bound within 10⁻¹⁵
    assert l2 ** 2 == pytest.approx(2) and b.l2 ** 2 >= 2 > (b.l2 - Fraction(1, 10**15)) ** 2
