"""Each aggregate carries the name of its result column (``Aggregate.output``), which the
grouped witness reads to find the aggregates among SQLite's columns: here checked against
the column names SQLite itself reports for the statement the analysis evaluates."""

from __future__ import annotations

import sqlite3

import pytest

from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.parse_sql import parse_sql

DDL = "CREATE TABLE r (g INTEGER, a INTEGER, b INTEGER);"

CASES = [
    "SELECT g, COUNT(*) FROM r GROUP BY g",
    "SELECT g, AVG(a) + 1 FROM r GROUP BY g",  # the combination's name holds parentheses
    "SELECT g, 100 * SUM(a) / SUM(b) AS ratio FROM r GROUP BY g",
    'SELECT g AS k, SUM(a) AS "Total", COUNT(*) FROM r GROUP BY g',
    "SELECT g, MAX(a) AS top, MIN(b) FROM r GROUP BY g",
]


@pytest.mark.parametrize("sql", CASES)
def test_each_output_is_a_column_sqlite_names(sql: str) -> None:
    query = parse_sql(sql, schema=schema_from_ddl(DDL))
    assert query.sql is not None
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(DDL)
        names = [d[0] for d in conn.execute(query.sql).description]
    finally:
        conn.close()
    outputs = [a.output for a in query.aggregates]
    assert outputs and all(outputs)
    # SQLite names the aggregates' columns, after the group keys, exactly as they say
    assert names[len(names) - len(outputs):] == outputs
