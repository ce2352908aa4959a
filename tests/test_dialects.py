"""The same TPC-H queries read from five SQL dialects (and their DDL with them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cqsens.pipeline import analyze

SCHEMA = Path(__file__).resolve().parents[1] / "examples" / "tpch" / "queries" / "schema.sql"
Q6 = ("SELECT SUM(l_extendedprice * l_discount) AS revenue FROM lineitem "
      "WHERE l_shipdate >= {date} AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24")


@pytest.mark.parametrize(("dialect", "date"), [
    ("postgres", "DATE '1994-01-01'"),
    ("duckdb", "DATE '1994-01-01'"),
    ("bigquery", "DATE '1994-01-01'"),
    ("snowflake", "'1994-01-01'::DATE"),
    ("tsql", "CAST('1994-01-01' AS DATE)"),
])
def test_q6_in_every_dialect(dialect: str, date: str) -> None:
    """TPC-H q6 (a SUM over an expression): the same bound whatever the dialect."""
    a = analyze(Q6.format(date=date), schema=SCHEMA, dialect=dialect, prove_lower=False)
    assert a.upper == 7350


def test_tsql_top_is_post_processing() -> None:
    q = ("SELECT TOP 10 o_orderpriority, COUNT(*) AS order_count FROM orders "
         "WHERE o_orderdate >= CAST('1993-07-01' AS DATE) GROUP BY o_orderpriority "
         "ORDER BY o_orderpriority")
    a = analyze(q, schema=SCHEMA, dialect="tsql", prove_lower=False)
    assert a.upper == 1 and any("noisy" in n for n in a.notes)
