"""Public tables against brute force: their rows never change between neighbours."""

from __future__ import annotations

import functools
import math
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cqsens.analysis import Analysis
from cqsens.cli import cli
from cqsens.errors import InputError
from cqsens.pipeline import analyze
from tests.conftest import scaled_examples

DDL = ("CREATE TABLE products (id INTEGER PRIMARY KEY, cat INTEGER); "
       "CREATE TABLE categories (id INTEGER PRIMARY KEY, name TEXT);")
QUERY = "SELECT COUNT(*) FROM products p, categories c WHERE p.cat = c.id"
CATS = [1, 2]


def _count(products: list[tuple[int, int]], categories: list[int]) -> int:
    conn = sqlite3.connect(":memory:")
    conn.executescript(DDL)
    conn.executemany("INSERT INTO products VALUES (?, ?)", products)
    conn.executemany("INSERT INTO categories VALUES (?, 'n')", [(c,) for c in categories])
    (n,) = conn.execute(QUERY).fetchone()
    return int(n)


@functools.cache
def _public_analysis() -> Analysis:
    """QUERY with categories public, analysed once (the random tables below do not change it)."""
    return analyze(QUERY, schema=DDL, public=["categories"])


@given(st.dictionaries(st.integers(1, 6), st.sampled_from(CATS), max_size=5),
       st.lists(st.sampled_from(CATS), unique=True))
@settings(max_examples=scaled_examples(40))
def test_only_private_rows_move(products: dict[int, int], categories: list[int]) -> None:
    rows = sorted(products.items())
    base = _count(rows, categories)
    worst = 0
    for i in range(len(rows)):
        worst = max(worst, abs(base - _count(rows[:i] + rows[i + 1:], categories)))
    for pid in range(1, 8):
        if pid not in products:
            for cat in CATS:
                worst = max(worst, abs(_count([*rows, (pid, cat)], categories) - base))
    a = _public_analysis()
    assert worst <= a.upper == 1
    assert a.lower == 1 and a.witness is not None and a.witness.relation == "products"


def test_public_tables_in_the_output_and_errors() -> None:
    assert analyze(QUERY, schema=DDL).upper == math.inf  # an added category joins any product
    a = analyze(QUERY, schema=DDL, public=["Categories"])
    assert any("Public tables" in line and "categories" in line for line in a.explanation)
    with pytest.raises(InputError) as info:
        analyze(QUERY, schema=DDL, public=["orders"])
    assert info.value.construct == "--public"


def test_cli_public_option(tmp_path: Path) -> None:
    schema = tmp_path / "schema.sql"
    schema.write_text(DDL)
    result = CliRunner().invoke(cli, ["analyze", "--sql", QUERY, "--schema", str(schema),
                                      "--public", "categories", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert '"upper": 1' in result.output
