"""Real SQL: post-processing clauses and aggregates over expressions, checked by brute force.

Random small databases are built in SQLite (its CHECKs enforced), every
one-row neighbour (each row removed, each admissible row added) is evaluated
with the query itself, and the largest ℓ1 change must stay within the bound.
"""

from __future__ import annotations

import functools
import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cqsens
import cqsens.aggregate_stage
from cqsens.errors import InputError, UnsupportedQueryError
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.parse_sql import parse_sql
from cqsens.ir.expr import Arith, Kind, Literal, Slot
from cqsens.release.intervals import Interval, Unbounded, expression_range
from cqsens.release.values import aggregate_bound, expression_bound, expression_nullable
from tests.conftest import scaled_examples
from tests.oracle import tables_of

DDL = """
CREATE TABLE r (k INTEGER PRIMARY KEY, a INTEGER NOT NULL CHECK (a BETWEEN 0 AND 3),
                b INTEGER NOT NULL CHECK (b BETWEEN -2 AND 2));
CREATE TABLE s (k INTEGER PRIMARY KEY, r INTEGER NOT NULL,
                c INTEGER NOT NULL CHECK (c BETWEEN 1 AND 4));
"""
SCHEMA = schema_from_ddl(DDL)
CDS = ["s[r->k]<=2"]
R_ROWS = [(k, a, b) for k in range(3) for a in (0, 3) for b in (-2, 1, 2)]
S_ROWS = [(k, r, c) for k in range(3) for r in range(3) for c in (1, 4)]


def _ok(db: dict[str, set[tuple[int, ...]]]) -> bool:
    """Keys and the CD s[r->k]<=2 hold."""
    for name in ("r", "s"):
        keys = [row[0] for row in db[name]]
        if len(keys) != len(set(keys)):
            return False
    per_r: dict[int, int] = {}
    for _, r, _ in db["s"]:
        per_r[r] = per_r.get(r, 0) + 1
    return all(n <= 2 for n in per_r.values())


Result = dict[tuple[object, ...], list[float]]


def _result(sql: str, db: dict[str, set[tuple[int, ...]]]) -> Result:
    out: dict[tuple[object, ...], list[float]] = {}
    with tables_of(DDL) as conn:
        for name, rows in db.items():
            conn.executemany(f"INSERT INTO {name} VALUES (?, ?, ?)", sorted(rows))
        cursor = conn.execute(sql)
        groups = sum(1 for d in cursor.description if d[0].startswith("g"))
        for row in cursor.fetchall():
            out[tuple(row[:groups])] = [float(v or 0) for v in row[groups:]]
    return out


def _l1(x: Result, y: Result) -> float:
    width = max((len(v) for v in [*x.values(), *y.values()]), default=0)
    zero = [0.0] * width
    return sum(abs(a - b) for g in set(x) | set(y)
               for a, b in zip(x.get(g, zero), y.get(g, zero), strict=True))


def _brute_force(sql: str, db: dict[str, set[tuple[int, ...]]]) -> float:
    base = _result(sql, db)
    best = 0.0
    for name, candidates in (("r", R_ROWS), ("s", S_ROWS)):
        for row in list(db[name]):
            smaller = {**db, name: db[name] - {row}}
            best = max(best, _l1(base, _result(sql, smaller)))
        for row in candidates:
            bigger = {**db, name: db[name] | {row}}
            if row not in db[name] and _ok(bigger):
                best = max(best, _l1(base, _result(sql, bigger)))
    return best


@functools.cache
def _upper(sql: str, count_sql: str) -> Fraction | int | float:
    """ℓ1 of the query as the pipeline computes it, with the count bound of ``count_sql``
    (once per test process: it does not depend on the random database)."""
    query = parse_sql(sql, schema=SCHEMA)
    if hasattr(cqsens.aggregate_stage, "expression_bound") \
            or all(a.expression is None for a in query.aggregates):
        return cqsens.analyze(sql, schema=DDL, cds=CDS).l1
    count_delta = cqsens.analyze(count_sql, schema=DDL, cds=CDS).upper
    total: Fraction | int | float = 0
    for agg in query.aggregates:
        values = expression_bound(agg, cli={}, schema=SCHEMA, query=query) \
            if agg.expression is not None else None
        b = aggregate_bound(agg, count_delta, grouped=bool(query.group_by), neighbor="add-remove",
                            contributions=1, values=values, single_table_unfiltered=False)
        total += b.l1
    return total


databases = st.fixed_dictionaries({
    "r": st.sets(st.sampled_from(R_ROWS), max_size=3),
    "s": st.sets(st.sampled_from(S_ROWS), max_size=3),
}).filter(_ok)

CASES = [
    ("SELECT SUM(r.a * r.b) FROM r", "SELECT COUNT(*) FROM r"),
    ("SELECT SUM(r.a * (1 - r.b)) FROM r JOIN s ON s.r = r.k",
     "SELECT COUNT(*) FROM r JOIN s ON s.r = r.k"),
    ("SELECT s.c AS g, SUM(CASE WHEN r.a > 1 THEN 1 ELSE 0 END) FROM r JOIN s ON s.r = r.k "
     "GROUP BY s.c", "SELECT COUNT(*) FROM r JOIN s ON s.r = r.k"),
    ("SELECT SUM(ABS(r.b - s.c) + r.a) FROM r JOIN s ON s.r = r.k WHERE r.a <= 2",
     "SELECT COUNT(*) FROM r JOIN s ON s.r = r.k WHERE r.a <= 2"),
    ("SELECT SUM(r.a * r.b) FROM r ORDER BY 1 LIMIT 1", "SELECT COUNT(*) FROM r"),
    ("SELECT COUNT(*) FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.r = r.k AND s.c > 1)", ""),
    ("SELECT SUM(r.a) FROM r WHERE r.k IN (SELECT s.r FROM s WHERE s.c = 4)", ""),
    ("SELECT s.c AS g, COUNT(*) FROM s WHERE s.r IN (SELECT k FROM r WHERE a = 3) GROUP BY s.c",
     ""),
    ("SELECT COUNT(*) FROM s WHERE EXISTS (SELECT * FROM r WHERE r.k = s.r AND EXISTS "
     "(SELECT 1 FROM s s2 WHERE s2.r = r.k AND s2.k <> s.k))", ""),
    ("SELECT COUNT(*) FROM s WHERE EXISTS (SELECT * FROM r WHERE r.k = s.r AND r.a = 3 AND "
     "EXISTS (SELECT 1 FROM s WHERE s.r = r.k AND s.c = 4))", ""),
    ("SELECT COUNT(*) FROM r, s WHERE (s.r = r.k AND s.c = 1) OR (r.k = s.r AND r.a = 3) "
     "OR (s.r = r.k AND r.b = 2 AND s.c = 4)", ""),
    # derived tables and WITH, inlined; GROUP BY expressions grouped by their columns
    ("SELECT t.g AS g, SUM(t.v) FROM (SELECT r.a AS g, r.b * s.c AS v FROM r, s "
     "WHERE s.r = r.k AND s.c > 1) AS t GROUP BY t.g", ""),
    ("SELECT COUNT(*) FROM (SELECT x.k, x.a FROM (SELECT k, a FROM r WHERE b >= 1) AS x "
     "JOIN s ON s.r = x.k) AS y WHERE y.a = 3", ""),
    ("WITH big AS (SELECT k, a + b AS ab FROM r WHERE a > 0), pair AS (SELECT big.ab, s.c "
     "FROM big, s WHERE s.r = big.k) SELECT pair.c AS g, SUM(pair.ab), COUNT(*) FROM pair "
     "GROUP BY pair.c", ""),
    ("SELECT r.a % 2 AS g, COUNT(*), SUM(r.b) FROM r JOIN s ON s.r = r.k GROUP BY r.a % 2", ""),
    ("SELECT ABS(r.b) + r.a AS g, COUNT(DISTINCT s.c) FROM r JOIN s ON s.r = r.k "
     "GROUP BY ABS(r.b) + r.a", ""),
    ("SELECT CASE WHEN t.c > 2 THEN 1 ELSE 0 END AS g, SUM(t.c), COUNT(*) FROM "
     "(SELECT s.c AS c FROM s) AS t GROUP BY CASE WHEN t.c > 2 THEN 1 ELSE 0 END", ""),
    ("SELECT SUM(t.c), COUNT(*) FROM (SELECT s.c AS c FROM s WHERE s.c > 1) AS t", ""),
]


@pytest.mark.slow
@pytest.mark.parametrize(("sql", "count_sql"), CASES)
@settings(max_examples=scaled_examples(15), deadline=None)
@given(db=databases)
def test_expression_aggregates_are_sound(sql: str, count_sql: str,
                                         db: dict[str, set[tuple[int, ...]]]) -> None:
    assert _brute_force(sql.split(" ORDER BY")[0], db) <= _upper(sql, count_sql)


def test_expression_bound_values() -> None:
    q = parse_sql("SELECT SUM(r.a * (1 - r.b)) FROM r JOIN s ON s.r = r.k", schema=SCHEMA)
    agg = q.aggregates[0]
    assert agg.column_name is None and agg.term_columns == ("r.a", "r.b")
    b = expression_bound(agg, cli={}, schema=SCHEMA, query=q)
    assert (b.low, b.high) == (-3, 9)  # a·(1−b) with a ∈ [0, 3], 1−b ∈ [−1, 3]
    assert not expression_nullable(agg, SCHEMA)
    # --bounds and WHERE ranges tighten the columns
    tight = expression_bound(agg, cli={"r.a": (1, 2)}, schema=SCHEMA, query=q)
    assert (tight.low, tight.high) == (-2, 6)
    w = parse_sql("SELECT SUM(r.a * r.b) FROM r WHERE r.b >= 1", schema=SCHEMA)
    wb = expression_bound(w.aggregates[0], cli={}, schema=SCHEMA, query=w)
    assert (wb.low, wb.high) == (0, 6)


def test_case_sum_is_zero_one_and_count_case_is_a_count() -> None:
    q = parse_sql("SELECT SUM(CASE WHEN r.a > 1 THEN 1 ELSE 0 END), "
                  "COUNT(CASE WHEN r.a > 1 THEN 1 END) FROM r", schema=SCHEMA)
    s, c = q.aggregates
    b = expression_bound(s, cli={}, schema=SCHEMA, query=q)
    assert (b.low, b.high) == (0, 1)
    assert c.kind == "count" and c.expression is not None  # kept for exclusive-cases
    assert c.column is None and c.term_columns == ("r.a",)
    assert any("bounded as COUNT(*)" in n for n in q.notes)


def test_division_by_an_interval_holding_zero_is_unbounded() -> None:
    q = parse_sql("SELECT SUM(r.a / r.b) FROM r", schema=SCHEMA)
    with pytest.raises(InputError, match="divisor r.b can be 0"):
        expression_bound(q.aggregates[0], cli={}, schema=SCHEMA, query=q)
    q2 = parse_sql("SELECT SUM(r.a / s.c) FROM r JOIN s ON s.r = r.k", schema=SCHEMA)
    b = expression_bound(q2.aggregates[0], cli={}, schema=SCHEMA, query=q2)
    assert (b.low, b.high) == (0, 3)  # a / c with c ∈ [1, 4]; integer division may give 0


def test_unbounded_column_is_named() -> None:
    q = parse_sql("SELECT SUM(s.r * 2) FROM s", schema=SCHEMA)
    with pytest.raises(InputError, match="s.r"):
        expression_bound(q.aggregates[0], cli={}, schema=SCHEMA, query=q)


def test_interval_arithmetic_is_exact() -> None:
    tenth = Fraction(1, 10)
    e = Arith("*", Slot(0), Arith("-", Literal(1, Kind.INTEGER), Slot(1)))
    assert expression_range(e, [Interval(0, 105000), Interval(0, tenth)], ["p", "d"]) \
        == Interval(0, 105000)
    inf = float("inf")
    prod = Arith("*", Slot(0), Slot(1))
    assert expression_range(prod, [Interval(0, 0), Interval(-inf, inf)], ["x", "y"]) \
        == Interval(0, 0)
    assert expression_range(prod, [Interval(-2, 3), Interval(-5, 7)], ["x", "y"]) \
        == Interval(-15, 21)
    with pytest.raises(Unbounded):
        expression_range(Arith("/", Slot(0), Slot(1)), [Interval(1, 2), Interval(-1, 1)],
                         ["x", "y"])


@pytest.mark.parametrize(("dialect", "sql", "word"), [
    (None, "SELECT r.a, COUNT(*) FROM r GROUP BY r.a ORDER BY 2 DESC LIMIT 1",
     "ORDER BY and LIMIT"),
    ("postgres", "SELECT r.a, COUNT(*) FROM r GROUP BY r.a OFFSET 1 ROWS FETCH FIRST 1 ROWS ONLY",
     "FETCH and OFFSET"),
    ("tsql", "SELECT TOP 1 r.a, COUNT(*) FROM r GROUP BY r.a", "TOP"),
])
def test_post_processing_is_analysed_as_the_full_result(dialect: str | None, sql: str,
                                                        word: str) -> None:
    full = cqsens.analyze("SELECT r.a, COUNT(*) FROM r GROUP BY r.a", schema=DDL)
    cut = cqsens.analyze(sql, schema=DDL, dialect=dialect)
    assert (cut.upper, cut.l1, cut.l2) == (full.upper, full.l1, full.l2) == (1, 1, 1)
    note = next(n for n in cut.notes if "released result" in n)
    assert word.split(" and ")[0] in note and "noisy result" in note
    assert "LIMIT" not in (cut.query_obj.sql or "").upper()


def test_semijoin_variables_are_existential() -> None:
    q = parse_sql("SELECT COUNT(*) FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.r = r.k)",
                  schema=SCHEMA)
    assert {a.relation for a in q.cq.relation_atoms()} == {"r", "s"}
    assert [v.name for v in q.cq.head] == ["r_k", "r_a", "r_b"]  # s's variables are not counted
    a = cqsens.analyze("SELECT COUNT(*) FROM r WHERE EXISTS (SELECT 1 FROM s WHERE s.r = r.k)",
                       schema=DDL)
    assert a.upper == 1  # one s row makes at most its one r row qualify
    assert any("semi-join" in n for n in a.notes)
    b = cqsens.analyze("SELECT COUNT(*) FROM s WHERE s.r IN (SELECT k FROM r)", schema=DDL)
    assert b.upper == float("inf")  # one r row can make any number of s rows qualify


def test_rejected_constructs_still_named() -> None:
    # NOT EXISTS / NOT IN are bounded through several conjunctive queries (rule
    # semi-join-flips, tests/test_semijoin_flips.py): one CQ alone cannot hold them
    for sql in ("SELECT COUNT(*) FROM r WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.r = r.k)",
                "SELECT COUNT(*) FROM r WHERE r.k NOT IN (SELECT s.r FROM s)"):
        with pytest.raises(UnsupportedQueryError, match="EXISTS / IN under OR / NOT"):
            parse_sql(sql, schema=SCHEMA)
    with pytest.raises(UnsupportedQueryError, match="subquery"):
        parse_sql("SELECT COUNT(*) FROM r WHERE r.a > (SELECT AVG(s.c) FROM s)", schema=SCHEMA)
    with pytest.raises(UnsupportedQueryError, match="subquery"):
        parse_sql("SELECT COUNT(*) FROM r WHERE r.k IN (SELECT s.r FROM s GROUP BY s.r)",
                  schema=SCHEMA)
    with pytest.raises(UnsupportedQueryError, match="HAVING"):
        parse_sql("SELECT r.a, COUNT(*) FROM r GROUP BY r.a HAVING r.b > 1", schema=SCHEMA)


def test_small_domain_is_exhaustive() -> None:
    """The brute force explores every admissible single-row move of a fixed database."""
    db = {"r": {(0, 3, 2)}, "s": {(0, 0, 4)}}
    assert _ok(db)
    assert _brute_force("SELECT SUM(r.a * r.b) FROM r", db) == 6  # add (k, 3, 2) or remove it
    assert len(list(itertools.product(range(3), (0, 3), (-2, 1, 2)))) == len(R_ROWS)


def test_or_with_a_common_conjunct_joins() -> None:
    sql = ("SELECT COUNT(*) FROM r, s WHERE (s.r = r.k AND s.c = 1 AND r.b = 2) "
           "OR (s.r = r.k AND r.a = 3 AND r.b = 2)")
    q = parse_sql(sql, schema=SCHEMA)
    s_atom = next(a for a in q.cq.relation_atoms() if a.relation == "s")
    assert s_atom.terms[1].name == "r_k"  # the shared equality unifies s.r with r.k
    assert str(q.cq).count("OR") == 1 and "r_b = 2" not in str(q.cq)  # r.b = 2 left the OR
    assert cqsens.analyze(sql, schema=DDL, cds=CDS).upper == 2  # one r row, its two s rows
    whole = parse_sql("SELECT COUNT(*) FROM r, s WHERE (s.r = r.k AND s.c = 1) OR (s.r = r.k)",
                      schema=SCHEMA)
    assert not any(a.is_filter for a in whole.cq.atoms)  # a branch left empty: the OR holds


@functools.cache
def _analysed(sql: str) -> cqsens.Analysis:
    """The analysis of ``sql`` (lower bound included), once per test process: the random
    databases of the property below do not change it."""
    return cqsens.analyze(sql, schema=DDL, cds=CDS)


@pytest.mark.parametrize(("combined", "released"), [
    ("SELECT 100.0 * SUM(CASE WHEN r.a > 1 THEN r.b ELSE 0 END) / SUM(r.b) FROM r JOIN s "
     "ON s.r = r.k", "SELECT SUM(CASE WHEN r.a > 1 THEN r.b ELSE 0 END), SUM(r.b) FROM r JOIN s "
     "ON s.r = r.k"),
    ("SELECT s.c AS g, SUM(r.a) / COUNT(*) AS mean FROM r JOIN s ON s.r = r.k GROUP BY s.c",
     "SELECT s.c AS g, SUM(r.a), COUNT(*) FROM r JOIN s ON s.r = r.k GROUP BY s.c"),
    ("SELECT 2 * COUNT(*) FROM r", "SELECT COUNT(*) FROM r"),
])
@settings(max_examples=scaled_examples(10), deadline=None)
@given(db=databases)
def test_arithmetic_over_aggregates_releases_each(combined: str, released: str,
                                                  db: dict[str, set[tuple[int, ...]]]) -> None:
    a, b = _analysed(combined), _analysed(released)
    assert (a.l1, a.l2) == (b.l1, b.l2)
    assert [r.l1 for r in a.aggregates] == [r.l1 for r in b.aggregates]
    assert any("post-processing of the noisy values" in n for n in a.notes)
    assert not any(op in (a.query_obj.sql or "") for op in ("/", "2 *"))  # witnesses see each
    assert _brute_force(released, db) <= a.l1


def test_derived_table_is_inlined() -> None:
    sql = ("SELECT t.g, SUM(t.v) AS total FROM (SELECT r.a AS g, r.b * s.c AS v FROM r, s "
           "WHERE s.r = r.k) AS t GROUP BY t.g ORDER BY t.g")
    q = parse_sql(sql, schema=SCHEMA)
    assert {a.relation for a in q.cq.relation_atoms()} == {"r", "s"}
    agg = q.aggregates[0]
    assert agg.label == "SUM(t.v) AS total" and agg.term_columns == ("r.b", "s.c")
    assert [t.name for t in q.group_by] == ["r_a"]
    assert "(SELECT" in (q.sql or "")  # a witness evaluates the statement as written
    w = parse_sql("WITH x AS (SELECT k FROM r), y AS (SELECT x.k FROM x) "
                  "SELECT COUNT(*) FROM y, x WHERE y.k = x.k", schema=SCHEMA)
    assert sorted(a.relation for a in w.cq.relation_atoms()) == ["r", "r"]


def test_group_by_expression_groups_by_its_columns() -> None:
    q = parse_sql("SELECT r.a + r.b AS g, COUNT(*) FROM r GROUP BY r.a + r.b", schema=SCHEMA)
    assert [t.name for t in q.group_by] == ["r_a", "r_b"] and len(q.aggregates) == 1
    assert any("each group of the expression is a union" in n for n in q.notes)
    with pytest.raises(UnsupportedQueryError, match="GROUP BY expression"):
        parse_sql("SELECT COUNT(*) FROM r GROUP BY 1 + 1", schema=SCHEMA)


@pytest.mark.parametrize(("sql", "construct"), [
    ("SELECT SUM(t.n) FROM (SELECT r.a, COUNT(*) AS n FROM r GROUP BY r.a) AS t",
     "aggregating subquery"),
    ("WITH t AS (SELECT MAX(r.a) AS m FROM r) SELECT COUNT(*) FROM t", "aggregating WITH"),
    ("WITH RECURSIVE t AS (SELECT k FROM r) SELECT COUNT(*) FROM t", "WITH RECURSIVE"),
    ("SELECT COUNT(*) FROM (SELECT DISTINCT r.a FROM r) AS t", "SELECT DISTINCT"),
    ("SELECT COUNT(*) FROM (SELECT r.a FROM r LIMIT 2) AS t", "LIMIT"),
])
def test_derived_tables_that_cannot_be_inlined_are_named(sql: str, construct: str) -> None:
    with pytest.raises(UnsupportedQueryError, match=construct) as info:
        parse_sql(sql, schema=SCHEMA)
    assert info.value.construct is not None and construct in info.value.construct
