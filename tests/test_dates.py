"""Constant date arithmetic is folded into date literals (cqsens.frontend.dates)."""

from __future__ import annotations

import datetime
import sqlite3
from pathlib import Path

import pytest
import sqlglot
from hypothesis import given
from hypothesis import strategies as st

from cqsens.frontend.dates import fold_date_arithmetic, shift_date
from cqsens.pipeline import analyze_with
from cqsens.settings import Settings
from tests.conftest import EXAMPLES

dates = st.dates(min_value=datetime.date(1900, 1, 1), max_value=datetime.date(2100, 12, 31))
units = st.sampled_from(["DAY", "WEEK", "MONTH", "YEAR"])


def _months_between(a: datetime.date, b: datetime.date) -> int:
    return (b.year - a.year) * 12 + b.month - a.month


@given(day=dates, amount=st.integers(-500, 500), unit=units)
def test_shift_is_the_calendar_shift(day: datetime.date, amount: int, unit: str) -> None:
    """Days move by exactly n (or 7n) days; months and years keep the day, clamped to the
    month's last day, and land in the right month."""
    got = shift_date(day, amount, unit)
    if unit in ("DAY", "WEEK"):
        assert (got - day).days == amount * (7 if unit == "WEEK" else 1)
        return
    assert _months_between(day, got) == amount * (12 if unit == "YEAR" else 1)
    assert got.day == day.day or (got.day < day.day and (got + datetime.timedelta(1)).day == 1)


@pytest.mark.parametrize(("sql", "folded"), [
    ("SELECT 1 FROM t WHERE d <= DATE '1998-12-01' - INTERVAL '90' DAY", "'1998-09-02'"),
    ("SELECT 1 FROM t WHERE d < date '1993-07-01' + interval '3' month", "'1993-10-01'"),
    ("SELECT 1 FROM t WHERE d < DATE '1994-01-01' + INTERVAL '1' YEAR - INTERVAL '1' DAY",
     "'1994-12-31'"),
    ("SELECT 1 FROM t WHERE d < INTERVAL '1' MONTH + CAST('1996-01-31' AS DATE)", "'1996-02-29'"),
    ("SELECT 1 FROM t WHERE d < DATE '1993-01-31' + INTERVAL '2 months'", "'1993-03-31'"),
])
def test_constant_sums_are_folded(sql: str, folded: str) -> None:
    out = fold_date_arithmetic(sqlglot.parse_one(sql)).sql()
    assert f"CAST({folded} AS DATE)" in out and "INTERVAL" not in out


@pytest.mark.parametrize("sql", [
    "SELECT 1 FROM t WHERE d < d2 + INTERVAL '2' DAY",  # a column: not a constant
    "SELECT 1 FROM t WHERE d < DATE '1993-01-31' + INTERVAL '2' HOUR",  # below a day
    "SELECT 1 FROM t WHERE d < DATE 'not a date' + INTERVAL '2' DAY",
    "SELECT 1 FROM t WHERE d < TIMESTAMP '1993-01-31 10:00:00' + INTERVAL '2' DAY",
])
def test_other_forms_are_left_as_written(sql: str) -> None:
    tree = sqlglot.parse_one(sql)
    assert fold_date_arithmetic(tree.copy()).sql() == tree.sql()


@given(day=dates, amount=st.integers(-60, 60), unit=st.sampled_from(["DAY", "WEEK"]))
def test_folded_days_agree_with_sqlite(day: datetime.date, amount: int, unit: str) -> None:
    """SQLite's date() agrees on whole days (its month arithmetic does not clamp, so months
    are checked against PostgreSQL in tests/test_database.py)."""
    days = amount * (7 if unit == "WEEK" else 1)
    (expected,) = sqlite3.connect(":memory:").execute(
        "SELECT date(?, ?)", (day.isoformat(), f"{days:+d} days")).fetchone()
    assert shift_date(day, amount, unit).isoformat() == expected


@pytest.mark.parametrize("name", ["q04", "q10"])
def test_tpch_date_ranges_reach_a_witness(name: str) -> None:
    """TPC-H's `date '…' + interval '3' month` no longer keeps the witness out of SQLite:
    one customer with 41 orders in the quarter is found, checked, and meets the bound."""
    query = EXAMPLES / "tpch" / "queries" / f"{name}.sql"
    a = analyze_with(query, Settings.from_toml(EXAMPLES / "tpch" / "standard" / "cqsens.toml"))
    assert a.witness is not None and a.lower is not None and a.lower > 0
    assert a.lower <= a.upper


@given(day=dates)
def test_extract_for_sqlite_is_the_date_part(day: datetime.date) -> None:
    from cqsens.frontend.dates import sqlite_dates

    sql = sqlite_dates("SELECT EXTRACT(YEAR FROM d), EXTRACT(MONTH FROM d), EXTRACT(DAY FROM d) "
                       "FROM t")
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (d TEXT)")
    conn.execute("INSERT INTO t VALUES (?)", (day.isoformat(),))
    assert conn.execute(sql).fetchone() == (day.year, day.month, day.day)


def test_tpch_extract_queries_are_released_from_sqlite(tmp_path: Path) -> None:
    """q07-q09 group by EXTRACT(YEAR FROM …): the release from SQLite runs them (it used to
    stop at SQLite's syntax error), and every group key is a year of the data."""
    import importlib.util
    import json

    from click.testing import CliRunner

    from cqsens.cli.main import cli

    spec = importlib.util.spec_from_file_location(
        "generate", EXAMPLES / "tpch" / "standard" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    db = tmp_path / "tpch.db"
    module.generate(db, customers=60)
    for name in ("q07", "q09"):
        result = CliRunner().invoke(cli, [
            "release", str(EXAMPLES / "tpch" / "queries" / f"{name}.sql"), "--config",
            str(EXAMPLES / "tpch" / "standard" / "cqsens.toml"), "--db", f"sqlite:///{db}",
            "--epsilon", "1", "--delta", "1e-6", "--format", "json"])
        assert result.exit_code == 0, result.output
        assert isinstance(json.loads(result.output)["groups"], list)
