"""Aggregates end to end: SUM/MEDIAN/GROUP BY through the CQ engine, value bounds, noise."""

from __future__ import annotations

import functools
import math
import sqlite3
from fractions import Fraction

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from cqsens.errors import InputError
from cqsens.pipeline import analyze
from tests.conftest import scaled_examples
from tests.oracle import tables_of

SCHEMA = "examples/hospital/schema.sql"


def run(sql: str, **kw):  # type: ignore[no-untyped-def]
    return analyze(sql, schema=SCHEMA, **kw).to_dict()["sensitivity"]


def test_sum_with_check_bounds() -> None:
    assert run("SELECT SUM(age) FROM Pat")["l1"] == 120
    assert run("SELECT SUM(age) FROM Pat", neighbor="substitute")["l1"] == 120


def test_histogram_under_substitution() -> None:
    s = run("SELECT COUNT(*) FROM Pat GROUP BY sex", neighbor="substitute")
    # ℓ2 is an exact upper root: a JSON string when it is not exactly a double
    assert s["l1"] == 2 and Fraction(s["l2"]) >= Fraction(math.sqrt(2)) - Fraction(1, 10**15)
    assert float(Fraction(s["l2"])) == pytest.approx(math.sqrt(2))
    s = run("SELECT COUNT(*) FROM Pat GROUP BY sex")
    assert s["l1"] == 1 and s["lower"] == 1 and s["tight"]


@pytest.mark.parametrize(
    ("neighbor", "rows", "expected"),
    [("add-remove", None, 60), ("substitute", 10, 60), ("substitute", 11, 120), ("substitute", None, 120)],
)
def test_median_table(neighbor: str, rows: int | None, expected: int) -> None:
    assert run("SELECT MEDIAN(age) FROM Pat", neighbor=neighbor, rows=rows)["l1"] == expected


def test_sum_over_join_is_count_bound_times_magnitude() -> None:
    a = analyze("SELECT SUM(p.age) FROM Pat p JOIN PatDoc pd ON pd.pat = p.id", schema=SCHEMA,
                fds=["PatDoc[1->2]"])
    assert a.l1 == 1 * 120
    b = analyze("SELECT SUM(p.age) FROM Pat p JOIN PatDoc pd ON pd.pat = p.id", schema=SCHEMA,
                cds=["PatDoc[1->2]<=3"], bounds=["Pat.age=0:90"])
    assert b.l1 == 3 * 90 and "--bounds" in b.to_dict()["aggregates"][0]["values"]


def test_filter_tightens_the_bounds_and_says_so() -> None:
    d = analyze("SELECT SUM(age) FROM Pat WHERE age BETWEEN 18 AND 65", schema=SCHEMA).to_dict()
    agg = d["aggregates"][0]
    assert agg["l1"] == 65 and "WHERE filter" in agg["values"]
    # a filtered single table under substitution: max(M,0) - min(m,0), docs/rules.md rule sum-substitution
    assert analyze("SELECT SUM(age) FROM Pat WHERE age BETWEEN 18 AND 65", schema=SCHEMA,
                   neighbor="substitute").l1 == 65


def test_a_filter_of_constant_arithmetic_tightens_the_bounds() -> None:
    # TPC-H q6 writes its range as arithmetic of constants: folded exactly, as SQL's DECIMAL
    # arithmetic does; a filter with a column on both sides does not bound the values
    sql = "SELECT SUM(age) FROM Pat WHERE age BETWEEN 20 - 2 AND 60 + 5 * 1"
    assert analyze(sql, schema=SCHEMA).l1 == 65
    assert analyze("SELECT SUM(age) FROM Pat WHERE age <= 6.5 * 10 AND age >= -(1 - 1)",
                   schema=SCHEMA).l1 == 65
    opaque = analyze("SELECT SUM(age) FROM Pat WHERE age <= 65 / 1", schema=SCHEMA)
    assert opaque.l1 > 65  # '/' is not folded (integer division differs between dialects)


def test_missing_bounds_error_names_the_three_ways() -> None:
    with pytest.raises(InputError) as info:
        analyze("SELECT SUM(x) FROM R")
    text = str(info.value)
    assert "R.x" in text and "--bounds" in text and "CHECK" in text and "WHERE" in text


def test_several_aggregates_and_noise() -> None:
    a = analyze("SELECT SUM(age), COUNT(*) FROM Pat", schema=SCHEMA, epsilon=1.0, delta=1e-5)
    d = a.to_dict()
    assert d["sensitivity"]["l1"] == 121
    assert float(Fraction(d["sensitivity"]["l2"])) == pytest.approx(math.hypot(120, 1))
    assert Fraction(d["sensitivity"]["l2"]) ** 2 >= 120**2 + 1
    assert d["noise"]["laplace_scale"] == 121
    assert d["noise"]["gaussian_method"] == "zCDP"


def test_contributions_multiply() -> None:
    assert analyze("SELECT COUNT(*) FROM Pat", schema=SCHEMA, contributions=3).l1 == 3


@functools.cache
def _l1(sql: str, ddl: str, cd: str) -> Fraction | int | float:
    """The ℓ1 bound of ``sql`` under ``cd``, once per test process (the random tables of the
    property below do not change it)."""
    return analyze(sql, schema=ddl, cds=[cd], prove_lower=False).l1


@settings(max_examples=scaled_examples(80))
@given(data=st.data())
def test_join_sum_brute_force(data: st.DataObject) -> None:
    """SUM(R.v) over R(a, v) ⋈ S(a, b) with S[1->2]<=d: no move exceeds the reported ℓ1."""
    d = data.draw(st.integers(1, 3))
    r_rows = data.draw(st.sets(st.tuples(st.integers(0, 3), st.integers(0, 10)), max_size=6))
    s_rows: set[tuple[int, int]] = set()
    for row in data.draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), max_size=10)):
        if len({b for a, b in s_rows | {row} if a == row[0]}) <= d:
            s_rows.add(row)
    sql = "SELECT SUM(r.v) FROM R r JOIN S s ON r.a = s.a"
    ddl = "CREATE TABLE R (a INT, v INT CHECK (v BETWEEN 0 AND 10)); CREATE TABLE S (a INT, b INT)"
    bound = _l1(sql, ddl, f"S[1->2]<={d}")

    def total(r: set, s: set) -> int:  # type: ignore[type-arg]
        with tables_of("CREATE TABLE R (a, v); CREATE TABLE S (a, b);") as conn:
            conn.executemany("INSERT INTO R VALUES (?, ?)", sorted(r))
            conn.executemany("INSERT INTO S VALUES (?, ?)", sorted(s))
            return conn.execute(sql).fetchone()[0] or 0

    base = total(r_rows, s_rows)
    for row in [(a, v) for a in range(4) for v in (0, 10)]:
        if row not in r_rows:
            change = abs(total(r_rows | {row}, s_rows) - base)
            note(f"add R{row}: {change} vs {bound}")
            assert change <= bound
    for row in [(a, b) for a in range(4) for b in range(6)]:
        if row not in s_rows and len({b for a, b in s_rows | {row} if a == row[0]}) <= d:
            assert abs(total(r_rows, s_rows | {row}) - base) <= bound


def test_grouped_sum_substitution_l2_is_not_below_a_one_group_move() -> None:
    # R = {(0, -1)} -> {(0, 1)}: group 0 moves by 2 in one coordinate
    a = analyze("SELECT g, SUM(v) FROM R GROUP BY g",
                schema="CREATE TABLE R(g INT, v INT CHECK (v BETWEEN -1 AND 1));",
                neighbor="substitute")
    assert a.l2 >= 2 and a.l1 >= 2


def test_review_regressions() -> None:
    s = "CREATE TABLE emp(id INT PRIMARY KEY, dept_id INT); CREATE TABLE emp_dept(id INT PRIMARY KEY, n TEXT);"
    assert analyze("SELECT COUNT(*) FROM emp, emp_dept WHERE emp.id = 3", schema=s).upper == math.inf
    assert analyze("SELECT COUNT(*) FROM R, S WHERE R.rest = S.a", fds=["S[1->2]"]).upper == math.inf
    with pytest.raises(InputError):  # r2's filter does not bound r1.v
        analyze("SELECT SUM(r1.v) FROM R r1, R r2 WHERE r1.p = r2.id AND r1.id = 1 AND "
                "r2.v BETWEEN 0 AND 10", schema="CREATE TABLE R(id INT PRIMARY KEY, p INT, v INT);")
    s = "CREATE TABLE a(id INT PRIMARY KEY, x INT, v INT CHECK (v BETWEEN 5 AND 10));"
    assert analyze("SELECT SUM(a.v) FROM a WHERE a.x = 5", schema=s, neighbor="substitute").l1 == 10
    assert analyze("SELECT COUNT(*) FROM a WHERE a.x = 5 AND a.x = '5'",
                   schema="CREATE TABLE a(x INTEGER, y INT);").upper == 1


def test_grouped_median_rejects_rows() -> None:
    """The table's parity says nothing of a group's: {0,0,10} and {0} with one 0 → 10 moves
    the first group's median by 10, more than a per-group parity rule would allow."""
    sql = "SELECT t.g, MEDIAN(t.v) FROM T t GROUP BY t.g"
    with pytest.raises(InputError) as info:
        analyze(sql, bounds=["T.v=0:10"], neighbor="substitute", rows=4)
    assert info.value.construct == "--rows"
    assert analyze(sql, bounds=["T.v=0:10"], neighbor="substitute").l2 >= 10


def test_count_star_of_one_table_under_substitution_is_zero() -> None:
    """Changing a row in place keeps the number of rows; COUNT(col) can still move (NULL)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE T (id INTEGER PRIMARY KEY, v INTEGER)")
    conn.executemany("INSERT INTO T VALUES (?, ?)", [(1, None), (2, 5)])
    before = conn.execute("SELECT COUNT(*), COUNT(v) FROM T").fetchone()
    conn.execute("UPDATE T SET v = 7 WHERE id = 1")
    after = conn.execute("SELECT COUNT(*), COUNT(v) FROM T").fetchone()
    assert before[0] == after[0] and after[1] - before[1] == 1
    ddl = "CREATE TABLE T (id INTEGER PRIMARY KEY, v INTEGER);"
    star = analyze("SELECT COUNT(*) FROM T", schema=ddl, neighbor="substitute")
    assert star.upper == 0 and star.tight
    assert analyze("SELECT COUNT(v) FROM T", schema=ddl, neighbor="substitute").upper == 1
    assert analyze("SELECT COUNT(*) FROM T WHERE T.v > 3", schema=ddl,
                   neighbor="substitute").upper == 1


@given(st.lists(st.tuples(st.sampled_from([None, 1, 2]), st.sampled_from([None, 1, 2])),
                min_size=1, max_size=4),
       st.tuples(st.sampled_from([None, 1, 2]), st.sampled_from([None, 1, 2])),
       st.integers(0, 3))
@settings(max_examples=scaled_examples(40))
def test_count_star_substitution_brute_force(rows: list[tuple[int | None, int | None]],
                                             new: tuple[int | None, int | None],
                                             index: int) -> None:
    """Every in-place change of one row of a keyless bag keeps COUNT(*); the rule says 0."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE B (a INTEGER, b INTEGER)")
    conn.executemany("INSERT INTO B VALUES (?, ?)", rows)
    (before,) = conn.execute("SELECT COUNT(*) FROM B").fetchone()
    changed = list(rows)
    changed[index % len(rows)] = new
    conn.execute("DELETE FROM B")
    conn.executemany("INSERT INTO B VALUES (?, ?)", changed)
    (after,) = conn.execute("SELECT COUNT(*) FROM B").fetchone()
    upper = analyze("SELECT COUNT(*) FROM B", schema="CREATE TABLE B (a INTEGER, b INTEGER);",
                    neighbor="substitute", prove_lower=False).upper
    assert abs(after - before) <= upper == 0
