"""Grouped AVG, MEDIAN, MIN and MAX: the bounds against brute force, and their witnesses.

Brute force: every database of a few rows over a small domain, every neighbour
(one row added or removed, or one row replaced), both sides satisfying the keys,
the CHECK range and the CD; a pair counts when every group is defined on both
sides (the model of docs/rules.md, rule grouped-value-aggregates). The released
vectors are computed in Python, one value per group.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path

import pytest

import cqsens
from cqsens.release.aggregates import (
    avg_bound,
    grouped_range_bound,
    median_bound,
    min_max_bound,
)

Row = tuple[int, ...]
DB = tuple[frozenset[Row], frozenset[Row]]  # (Emp rows (id, dept, sal), Dep rows (id,))

DDL = ("CREATE TABLE Emp(id INT PRIMARY KEY, dept INT NOT NULL,"
       " sal INT NOT NULL CHECK (sal BETWEEN 0 AND 3));"
       " CREATE TABLE Dep(id INT PRIMARY KEY, city TEXT);")
STATS: dict[str, Callable[[list[int]], Fraction]] = {
    "AVG": lambda xs: Fraction(sum(xs), len(xs)),
    "MEDIAN": lambda xs: Fraction(statistics.median(sorted(Fraction(x) for x in xs))),
    "MIN": lambda xs: Fraction(min(xs)),
    "MAX": lambda xs: Fraction(max(xs)),
}
EMP_ROWS = [(i, d, v) for i in range(3) for d in range(2) for v in (0, 1, 3)]
DEP_ROWS = [(d,) for d in range(2)]


def _released(kind: str, db: DB, join: bool | str) -> dict[int, Fraction]:
    emp, dep = db
    groups: dict[int, list[int]] = {}
    if join == "self":  # Emp e JOIN Emp e2 ON e.dept = e2.dept GROUP BY e.id, over e2.sal
        for i, d, _ in emp:
            groups[i] = [v for _, d2, v in emp if d2 == d]
    for _, d, v in emp if join != "self" else ():
        if not join or (d,) in dep:
            groups.setdefault(d, []).append(v)
    return {g: STATS[kind](xs) for g, xs in groups.items()}


def _ok(db: DB, per_dept: int | None) -> bool:
    emp, _ = db
    if len({r[0] for r in emp}) != len(emp):
        return False
    if per_dept is None:
        return True
    return all(sum(1 for r in emp if r[1] == d) <= per_dept for d in range(2))


def _databases(join: bool | str) -> Iterator[DB]:
    for choice in itertools.product([None, *range(6)], repeat=3):
        emp = frozenset((i, c // 3, (0, 1, 3)[c % 3]) for i, c in enumerate(choice)
                        if c is not None)
        for deps in ([(0,), (1,)], [(0,)], []) if join is True else ([],):
            yield emp, frozenset(deps)


def _neighbours(db: DB, neighbor: str, join: bool | str) -> Iterator[DB]:
    emp, dep = db
    tables = [(emp, EMP_ROWS, 0)] + ([(dep, DEP_ROWS, 1)] if join is True else [])
    for rows, candidates, which in tables:
        def put(new: frozenset[Row], which: int = which) -> DB:
            return (new, dep) if which == 0 else (emp, new)
        for row in rows:
            if neighbor == "add-remove":
                yield put(rows - {row})
                continue
            for other in candidates:
                if other not in rows:
                    yield put((rows - {row}) | {other})
        if neighbor == "add-remove":
            for other in candidates:
                if other not in rows:
                    yield put(rows | {other})


def _brute(kind: str, neighbor: str, join: bool | str, per_dept: int | None) -> Fraction:
    best = Fraction(0)
    for db in _databases(join):
        if not _ok(db, per_dept):
            continue
        x = _released(kind, db, join)
        for other in _neighbours(db, neighbor, join):
            if not _ok(other, per_dept):
                continue
            y = _released(kind, other, join)
            if set(x) != set(y):
                continue  # a group undefined on one side: outside the model
            best = max(best, sum((abs(x[g] - y[g]) for g in x), Fraction(0)))
    return best


@pytest.mark.parametrize("kind", sorted(STATS))
def test_grouped_single_table_substitution_is_sound_and_tight(kind: str) -> None:
    sql = f"SELECT e.dept, {kind}(e.sal) FROM Emp e GROUP BY e.dept"
    truth = _brute(kind, "substitute", join=False, per_dept=None)
    a = cqsens.analyze(sql, schema=DDL, neighbor="substitute", witness_time=2)
    assert truth <= a.l1
    assert a.l1 == truth  # AVG, MEDIAN: M − m (was 2(M − m)); MIN, MAX: 2(M − m)
    assert a.l1 == {"AVG": 3, "MEDIAN": 3, "MIN": 6, "MAX": 6}[kind]
    assert a.lower == a.l1  # the witness moves a row between two groups or changes it


@pytest.mark.parametrize("kind", sorted(STATS))
@pytest.mark.parametrize("per_dept", [1, 2, None])
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
def test_grouped_join_is_sound(kind: str, per_dept: int | None, neighbor: str) -> None:
    # the GROUP BY variable is Dep's key: one tuple touches one group (rule
    # grouped-value-aggregates, G from the count bound with e.dept free), so the bound is
    # finite even without a CD
    sql = f"SELECT e.dept, {kind}(e.sal) FROM Emp e JOIN Dep d ON e.dept = d.id GROUP BY e.dept"
    truth = _brute(kind, neighbor, join=True, per_dept=per_dept)
    cds = [f"Emp[2->1]<={per_dept}"] if per_dept else []
    a = cqsens.analyze(sql, schema=DDL, cds=cds, neighbor=neighbor, prove_lower=False)
    assert truth <= a.l1
    if kind in ("MIN", "MAX"):
        assert a.l1 == (3 if neighbor == "add-remove" else 6)


@pytest.mark.parametrize("kind", sorted(STATS))
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
def test_grouped_self_join_touching_several_groups_is_sound(kind: str, neighbor: str) -> None:
    # one Emp row is e2 for every e of its department: it touches up to 2 groups (CD) as
    # e2 and 1 as e
    sql = (f"SELECT e.id, {kind}(e2.sal) FROM Emp e JOIN Emp e2 ON e.dept = e2.dept "
           "GROUP BY e.id")
    truth = _brute(kind, neighbor, join="self", per_dept=2)
    a = cqsens.analyze(sql, schema=DDL, cds=["Emp[2->1]<=2"], neighbor=neighbor,
                       prove_lower=False)
    assert truth <= a.l1


def test_grouped_range_bound_values() -> None:
    # AVG over [0, 10] with Δ = 2: s = 10, a = 2/3·10; max(10, 40/3) per touched group
    s, a = avg_bound(2, 0, 10, neighbor="substitute"), avg_bound(2, 0, 10)
    b = grouped_range_bound(s, a, 2, kind="avg")
    assert b.l1 == Fraction(80, 3)
    assert b.l2 >= Fraction(14142135, 10**6) and float(b.l2) == pytest.approx(200 ** 0.5)
    # ℓ2² ≤ G·max(s², 2a²) = 2·max(100, 800/9) = 200
    s, a = median_bound(1, 0, 10, neighbor="substitute"), median_bound(1, 0, 10)
    assert grouped_range_bound(s, a, 1, kind="median").l1 == 10
    s, a = min_max_bound(1, 0, 10, neighbor="substitute"), min_max_bound(1, 0, 10)
    assert grouped_range_bound(s, a, 3, kind="max").l1 == 60
    assert grouped_range_bound(s, a, 0, kind="max").l1 == 0


# --- more knowledge never gives a worse bound (docs/rules.md, rule cheapest-derivation) ------

TPCH = Path(__file__).resolve().parents[1] / "examples" / "tpch" / "queries"
COMPOSITE_KEY_JOINS = {
    # query: the most it can change, a bound the issue asks for (twice the truth)
    "SELECT COUNT(*) FROM lineitem l1 JOIN lineitem l2 ON l1.l_orderkey = l2.l_orderkey": 26,
    "SELECT l_shipmode, COUNT(*) FROM orders, lineitem WHERE o_orderkey = l_orderkey"
    " AND l_shipmode IN ('MAIL', 'SHIP') GROUP BY l_shipmode": 14,
    "SELECT COUNT(DISTINCT l_orderkey, o_orderdate, o_shippriority) FROM customer, orders,"
    " lineitem WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey"
    " AND l_orderkey = o_orderkey": 82,
}


@pytest.mark.parametrize("sql", sorted(COMPOSITE_KEY_JOINS))
def test_per_column_fan_outs_bound_as_the_minimal_file(sql: str) -> None:
    """constraints_flex.txt states every fan-out of constraints.txt once per column (as
    FLEX's max-frequency metrics): it holds on the same databases, so the bound is the
    same, and a witness satisfying every one of its lines proves it nearly tight."""
    # 1 s: the search needs about 0.15 s alone, and must still finish beside other test workers
    minimal = cqsens.analyze(sql, schema=TPCH / "schema.sql",
                             constraints=TPCH / "constraints.txt", witness_time=1)
    flex = cqsens.analyze(sql, schema=TPCH / "schema.sql",
                          constraints=TPCH / "constraints_flex.txt", witness_time=1)
    assert len(flex.sigma) > len(minimal.sigma)
    assert flex.upper == minimal.upper <= COMPOSITE_KEY_JOINS[sql]
    assert flex.lower is not None and flex.upper - flex.lower <= 1
