"""Scalar subqueries over private data as released parts (issue 23; docs/rules.md, rule
released-subquery): an uncorrelated scalar subquery whose holder is post-processing (a
SELECT over public tables or none, a CASE over released values) is a release of its own,
and a part's HAVING compared with a released scalar is applied to its noisy rows.

Checked on a small schema (two private tables owned by customers, one public table)
against brute force in SQLite (every person removed, persons added, on small random
databases), with the noise off against SQLite's own answer to the statement, and with a
large noise offset (no true value reaches the output)."""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from sqlglot import exp

from cqsens import analyze
from cqsens.cli.main import cli
from cqsens.errors import InputError
from cqsens.frontend.ddl import load_schema
from cqsens.frontend.released_parts import fill_parts, split_parts
from cqsens.release import noise
from cqsens.release.ledger import read_ledger
from tests.helpers import release_json, released_rows, write_db

SCHEMA = """
CREATE TABLE customer (c_id INTEGER PRIMARY KEY, c_name TEXT NOT NULL);
CREATE TABLE item (i_id INTEGER PRIMARY KEY, i_cat TEXT NOT NULL CHECK (i_cat IN ('a', 'b')));
CREATE TABLE sales (s_id INTEGER PRIMARY KEY,
                    s_cust INTEGER NOT NULL REFERENCES customer(c_id),
                    s_item INTEGER NOT NULL REFERENCES item(i_id),
                    s_qty INTEGER NOT NULL CHECK (s_qty BETWEEN 1 AND 100),
                    s_price INTEGER NOT NULL CHECK (s_price BETWEEN 0 AND 10));
CREATE TABLE returns (r_id INTEGER PRIMARY KEY,
                      r_cust INTEGER NOT NULL REFERENCES customer(c_id),
                      r_amt INTEGER NOT NULL CHECK (r_amt BETWEEN 0 AND 5));
"""
CDS = ["sales[s_cust->s_id]<=3", "returns[r_cust->r_id]<=2"]
PUBLIC = ["item"]
ITEMS = 3

# buckets: each CASE picks between released scalars by a released count (FROM a public table)
BUCKETS = ("SELECT CASE WHEN (SELECT COUNT(*) FROM sales WHERE s_qty BETWEEN 1 AND 50) > 4 "
           "THEN (SELECT AVG(s_price) FROM sales WHERE s_qty BETWEEN 1 AND 50) "
           "ELSE (SELECT SUM(s_price) FROM sales WHERE s_qty BETWEEN 1 AND 50) END AS b1, "
           "CASE WHEN (SELECT COUNT(*) FROM sales WHERE s_qty BETWEEN 51 AND 100) > 4 "
           "THEN (SELECT AVG(s_price) FROM sales WHERE s_qty BETWEEN 51 AND 100) "
           "ELSE (SELECT SUM(s_price) FROM sales WHERE s_qty BETWEEN 51 AND 100) END AS b2 "
           "FROM item WHERE i_id = 1")
# arithmetic over released scalars, no FROM at all
BARE = ("SELECT (SELECT COUNT(*) FROM sales) - (SELECT COUNT(*) FROM returns) AS d, "
        "(SELECT SUM(r_amt) FROM returns) AS r")
# a public table's groups kept by a released count
PUBLIC_HAVING = ("SELECT i_cat, COUNT(*) AS n FROM item GROUP BY i_cat "
                 "HAVING COUNT(*) * 3 <= (SELECT COUNT(*) FROM sales WHERE s_price > 4) "
                 "ORDER BY i_cat")
# per-item averages kept above half a reference average (a grouped scalar whose key the
# WHERE fixes), ranked both ways and joined with the public table twice: the same two
# releases serve both rankings
_KEPT = ("SELECT s_item AS item, AVG(s_price) AS p FROM sales WHERE s_qty > 10 GROUP BY s_item "
         "HAVING AVG(s_price) > 0.5 * (SELECT AVG(s_price) FROM sales WHERE s_item = 0 "
         "GROUP BY s_item)")
RANKED = (f"SELECT a.rk, i1.i_cat AS best, i2.i_cat AS worst FROM "
          f"(SELECT item, RANK() OVER (ORDER BY p ASC) AS rk FROM ({_KEPT}) v1) a, "
          f"(SELECT item, RANK() OVER (ORDER BY p DESC) AS rk FROM ({_KEPT}) v2) d, "
          f"item i1, item i2 WHERE a.rk = d.rk AND i1.i_id = a.item AND i2.i_id = d.item "
          f"ORDER BY a.rk, best, worst")
# a HAVING over an aggregate the part does not select (released as a column of its own)
HIDDEN = ("SELECT i_cat, n FROM (SELECT i_cat, COUNT(*) AS n FROM sales, item "
          "WHERE s_item = i_id GROUP BY i_cat "
          "HAVING SUM(s_price) > 0.3 * (SELECT SUM(s_price) FROM sales)) t ORDER BY i_cat")
# a HAVING against a scalar over another part's released rows (post-processing, no part)
MAXED = ("SELECT item FROM (SELECT s_item AS item, COUNT(*) AS c FROM sales GROUP BY s_item "
         "HAVING COUNT(*) >= (SELECT MAX(n) FROM (SELECT s_item, COUNT(*) AS n FROM returns, "
         "sales WHERE r_cust = s_cust GROUP BY s_item) d)) t ORDER BY item")
ROLES = {BUCKETS: ["scalar"] * 6, BARE: ["scalar"] * 3, PUBLIC_HAVING: ["scalar"],
         RANKED: ["scalar", "having"], HIDDEN: ["scalar", "having"]}
FORMS = list(ROLES)


def _split(sql: str) -> Any:
    return split_parts(sql, None, public=set(PUBLIC), schema=load_schema(SCHEMA))


def _analyze(sql: str) -> Any:
    return analyze(sql, schema=SCHEMA, cds=CDS, public=PUBLIC, unit="customer")


def _person(conn: sqlite3.Connection, rng: random.Random, c: int, sales: int,
            returns: int) -> None:
    conn.execute("INSERT INTO customer VALUES (?, ?)", (c, f"c{c}"))
    for k in range(sales):
        conn.execute("INSERT INTO sales VALUES (?, ?, ?, ?, ?)",
                     (100 * c + k, c, rng.randrange(ITEMS), rng.randint(1, 100),
                      rng.randint(0, 10)))
    for k in range(returns):
        conn.execute("INSERT INTO returns VALUES (?, ?, ?)", (100 * c + k, c, rng.randint(0, 5)))


def _database(rng: random.Random, people: int) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    for i in range(ITEMS):
        conn.execute("INSERT INTO item VALUES (?, ?)", (i, "ab"[i % 2]))
    for c in range(people):
        _person(conn, rng, c, rng.randint(0, 3), rng.randint(0, 2))
    return conn


def _moves(conn: sqlite3.Connection, rng: random.Random) -> list[list[tuple[str, Any]]]:
    """Remove each customer with their rows, or add one with up to 3 sales and 2 returns
    at the ends of the ranges."""
    moves: list[list[tuple[str, Any]]] = []
    for (c,) in conn.execute("SELECT c_id FROM customer").fetchall():
        moves.append([("DELETE FROM sales WHERE s_cust = ?", (c,)),
                      ("DELETE FROM returns WHERE r_cust = ?", (c,)),
                      ("DELETE FROM customer WHERE c_id = ?", (c,))])
    for n in range(8):
        new: list[tuple[str, Any]] = [("INSERT INTO customer VALUES (900, 'new')", ())]
        for k in range(n % 4):
            new.append(("INSERT INTO sales VALUES (?, 900, ?, ?, ?)",
                        (9000 + k, rng.randrange(ITEMS), rng.choice([1, 50, 51, 100]),
                         rng.choice([0, 10]))))
        for k in range(n % 3):
            new.append(("INSERT INTO returns VALUES (?, 900, ?)", (9000 + k, rng.choice([0, 5]))))
        moves.append(new)
    return moves


Vector = dict[tuple[object, ...], tuple[float, ...]]


def _vector(conn: sqlite3.Connection, sql: str) -> Vector | None:
    """A part's released vector: each group's aggregates (its keys are the items without
    an aggregate); None when an average is over no row (outside the model, rule avg)."""
    tree = sqlglot.parse_one(sql)
    assert isinstance(tree, exp.Select)
    keys = [i for i, e in enumerate(tree.expressions) if e.find(exp.AggFunc) is None]
    out: Vector = {}
    for row in conn.execute(sql).fetchall():
        values = [v for i, v in enumerate(row) if i not in keys]
        if any(v is None for v, e in zip(values, [e for i, e in enumerate(tree.expressions)
                                                  if i not in keys], strict=True)
               if e.find(exp.Avg) is not None):
            return None
        out[tuple(row[i] for i in keys)] = tuple(float(v or 0) for v in values)
    return out


def _l1(a: Vector, b: Vector, averages: bool) -> float:
    """The ℓ1 distance of two released vectors (a group absent on one side counts as
    zeros); with averages, over the groups of both sides only (an average over no row is
    outside the model, rule avg)."""
    total = 0.0
    for key in (set(a) & set(b)) if averages else (set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        width = len(x or y or ())
        total += sum(abs(p - q) for p, q in zip(x or (0.0,) * width, y or (0.0,) * width,
                                                 strict=True))
    return total


def test_the_parts_of_each_form() -> None:
    """Each form's parts, innermost first, with their roles; a part written twice is one
    release; the rest keeps no private table, and a HAVING moved out of its part reads
    the released columns (an unselected aggregate released as a column of its own)."""
    for sql, roles in ROLES.items():
        found = _split(sql)
        assert found is not None, sql
        assert [p.role for p in found.parts] == roles, sql
        assert not {"sales", "returns", "customer"} & set(found.tables)
        assert not re.search(r"\b(sales|returns)\b", found.outer), found.outer
    hidden = _split(HIDDEN).parts[1]
    assert hidden.columns == ("i_cat", "n", "cqsens_having_1")
    assert "HAVING" not in hidden.sql and "SUM(s_price) AS cqsens_having_1" in hidden.sql
    maxed = _split(MAXED)
    assert [p.role for p in maxed.parts] == ["table", "having"]
    assert maxed.parts[1].columns == ("item", "c")  # MAX(n) reads part 1's rows, not its own
    scalar = _split(RANKED).parts[0]
    assert "GROUP BY" not in scalar.sql  # its one group, fixed by the WHERE
    assert _split(RANKED).outer.count("CQSENS_VIEW_ROWS(1, 0)") == 2


@pytest.mark.parametrize("sql", [
    # a threshold on the rows of a release: the two-stage route's
    "SELECT COUNT(*) FROM sales WHERE s_price > (SELECT AVG(s_price) FROM sales)",
    # correlated on the outer row
    "SELECT i_id, (SELECT COUNT(*) FROM sales WHERE s_item = i_id) FROM item",
    # a grouped scalar whose group the WHERE does not fix (several rows)
    "SELECT i_id FROM item WHERE i_id < (SELECT COUNT(*) FROM sales GROUP BY s_item)",
    # a grouped COUNT: NULL without a row, 0 once its GROUP BY is dropped
    "SELECT i_id FROM item WHERE i_id < (SELECT COUNT(*) FROM sales WHERE s_item = 1 "
    "GROUP BY s_item)",
    # over public rows only: no release
    "SELECT i_id FROM item WHERE i_id < (SELECT COUNT(*) FROM item)",
])
def test_what_is_no_scalar_part(sql: str) -> None:
    assert _split(sql) is None


def test_a_release_filtered_by_a_released_value_is_refused() -> None:
    """A scalar over a WITH table that a released scalar filters is no part (its rows
    depend on a released value: not one release), and the statement says what is read
    outside the releases."""
    sql = ("WITH t AS (SELECT i_id FROM item WHERE i_id < (SELECT COUNT(*) FROM sales)) "
           "SELECT (SELECT COUNT(*) FROM sales, t WHERE s_item = t.i_id) AS x")
    with pytest.raises(InputError, match="reads the private table sales outside it"):
        _split(sql)


def test_a_having_that_a_window_reads_stays_in_its_part() -> None:
    """A part whose window is computed after its HAVING keeps it, subquery included (not
    taken as a scalar part): analysing the part refuses the subquery in its HAVING."""
    sql = ("SELECT * FROM (SELECT s_item, COUNT(*) AS n, RANK() OVER (ORDER BY COUNT(*)) AS r "
           "FROM sales GROUP BY s_item HAVING COUNT(*) > (SELECT COUNT(*) FROM returns)) t")
    found = _split(sql)
    assert found is not None and [p.role for p in found.parts] == ["table"]
    assert "HAVING COUNT(*) > (SELECT COUNT(*) FROM returns)" in found.parts[0].sql
    with pytest.raises(InputError, match="subquery in HAVING"):
        _analyze(sql)


@pytest.mark.parametrize("sql", FORMS)
def test_each_part_is_released_with_its_own_bound(sql: str) -> None:
    """Each part's stage is the analysis of its statement alone, and brute force over
    persons removed and added never moves a part's released vector by more than its ℓ1;
    every part gets ε/n."""
    a = _analyze(sql)
    found = _split(sql)
    assert [s.query for s in a.stages] == [p.sql for p in found.parts]
    assert a.stage_shares == tuple(("part", f"1/{len(found.parts)}") for _ in found.parts)
    for part, stage in zip(found.parts, a.stages, strict=True):
        alone = _analyze(part.sql)
        assert (stage.upper, stage.l1, stage.l2) == (alone.upper, alone.l1, alone.l2)
        rng = random.Random(sql + part.sql)
        worst = 0.0
        for _ in range(12):
            conn = _database(rng, rng.randint(1, 4))
            base = _vector(conn, part.sql)
            for move in _moves(conn, rng):
                conn.execute("SAVEPOINT s")
                for statement, args in move:
                    conn.execute(statement, args)
                moved = _vector(conn, part.sql)
                if base is not None and moved is not None:
                    worst = max(worst, _l1(base, moved, "AVG(" in part.sql))
                conn.execute("ROLLBACK TO s")
            conn.close()
        assert 0 < worst <= float(stage.l1), (part.sql, worst, stage.l1)
    assert max(float(s.upper) for s in a.stages) == float(a.upper)


_SALE = st.tuples(st.integers(0, ITEMS - 1), st.sampled_from([1, 20, 50, 51, 80, 100]),
                  st.integers(0, 10))


@given(sales=st.lists(_SALE, max_size=12), returns=st.lists(st.integers(0, 5), max_size=4),
       factor=st.sampled_from(["0", "0.3", "0.5", "1", "1.5"]),
       form=st.sampled_from([*FORMS, MAXED, "SELECT * FROM (" + _KEPT.replace("0.5", "{f}") + ") v",
                             HIDDEN.replace("0.3", "{f}")]))
def test_the_rest_on_the_true_rows_is_the_statement(sales: list[tuple[int, int, int]],
                                                    returns: list[int], factor: str,
                                                    form: str) -> None:
    """The split is exact: each part's true rows (as SQLite computes its statement) put in
    its place give SQLite's own answer to the statement, on any data (groups without
    rows, an average over no row, a HAVING that keeps every group or none)."""
    sql = form.replace("{f}", factor)
    conn = _database(random.Random(0), 0)
    conn.execute("INSERT INTO customer VALUES (1, 'c1')")
    conn.executemany("INSERT INTO sales VALUES (?, 1, ?, ?, ?)",
                     [(k, *sale) for k, sale in enumerate(sales)])
    conn.executemany("INSERT INTO returns VALUES (?, 1, ?)", list(enumerate(returns)))
    found = _split(sql)
    assert found is not None
    rows = {p.number: conn.execute(p.sql).fetchall() for p in found.parts}
    rest = fill_parts(found.outer, None, "sqlite", rows, source="<sql>")
    assert not re.search(r"\b(sales|returns)\b", rest)
    got, truth = conn.execute(rest).fetchall(), conn.execute(sql).fetchall()
    key = repr if "ORDER BY" not in sql else None
    assert _same(sorted(got, key=key) if key else got, sorted(truth, key=key) if key else truth)
    conn.close()


def _filled(rng: random.Random) -> sqlite3.Connection:
    """A database where every item has sales in both quantity halves (a key without rows
    is released as zeros, which SQL would not list) and the reference item has some."""
    conn = _database(rng, rng.randint(4, 9))
    for i in range(ITEMS):
        _person(conn, rng, 50 + i, 0, 1)
        for k, qty in enumerate((20, 80)):
            conn.execute("INSERT INTO sales VALUES (?, ?, ?, ?, ?)",
                         (9500 + 10 * i + k, 50 + i, i, qty, rng.randint(0, 10)))
    return conn


def _release(tmp: Path, sql: str, *extra: str) -> dict[str, Any]:
    args = ["--sql", sql, "--public", ",".join(PUBLIC), "--unit", "customer", *extra]
    return release_json(tmp, SCHEMA, args + [a for cd in CDS for a in ("--cd", cd)])


def _same(got: Sequence[tuple[object, ...]], truth: Sequence[tuple[object, ...]]) -> bool:
    return len(got) == len(truth) and all(
        x == pytest.approx(y) if isinstance(x, (int, float)) and isinstance(y, (int, float))
        else x == y for a, b in zip(got, truth, strict=True) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("seed", range(3))
def test_release_with_the_noise_off_is_the_sql_answer(seed: int, tmp_path: Path,
                                                      noiseless: None) -> None:
    """With the noise off each part releases its true value or rows, and the statement's
    answer is SQLite's own answer to the statement as written; each part spent ε/n, the
    rest nothing."""
    conn = _filled(random.Random(seed))
    write_db(tmp_path / "d.db", conn)
    for sql in FORMS:
        truth = [tuple(r) for r in conn.execute(sql).fetchall()]
        document = _release(tmp_path, sql)
        count = len(ROLES[sql])
        assert len(document["stages"]) == count + 1
        assert document["epsilon"] == 0.0
        assert all(s["epsilon"] == pytest.approx(1 / count) for s in document["stages"][:-1])
        assert _same(released_rows(document), truth), (sql, released_rows(document), truth)
    conn.close()


def test_the_ledger_records_each_part(tmp_path: Path) -> None:
    """Each of the six bucket releases is charged ε/6; the CASE over them nothing."""
    write_db(tmp_path / "d.db", _filled(random.Random(7)))
    _release(tmp_path, BUCKETS, "--ledger", str(tmp_path / "ledger.sqlite"))
    entries = read_ledger(str(tmp_path / "ledger.sqlite"))
    assert [e.epsilon for e in entries] == pytest.approx([1 / 6] * 6)


def test_analyze_lists_the_parts(tmp_path: Path) -> None:
    """`cqsens analyze --format json` lists each part as a stage with its bound."""
    (tmp_path / "schema.sql").write_text(SCHEMA)
    args = ["analyze", "--sql", HIDDEN, "--schema", str(tmp_path / "schema.sql"),
            "--format", "json", "--public", ",".join(PUBLIC), "--unit", "customer"]
    result = CliRunner().invoke(cli, args + [a for cd in CDS for a in ("--cd", cd)])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [s["role"] for s in document["stages"]] == ["part", "part"]
    alone = [_analyze(p.sql) for p in _split(HIDDEN).parts]
    assert [s["upper"] for s in document["stages"]] == [int(a.upper) for a in alone]
    text = " ".join(document["explanation"])
    assert "(release 1)" in text and "applied to its noisy rows" in text


def test_the_text_output_says_the_rest_is_computed_from_noisy_rows(tmp_path: Path) -> None:
    """`cqsens release` (text) shows each part's release, then the answer computed from
    their noisy values: never as exact values of public tables."""
    write_db(tmp_path / "d.db", _filled(random.Random(2)))
    (tmp_path / "schema.sql").write_text(SCHEMA)
    args = ["release", "--sql", BARE, "--schema", str(tmp_path / "schema.sql"), "--db",
            f"sqlite:///{tmp_path / 'd.db'}", "--epsilon", "1", "--public", "item",
            "--unit", "customer", *[a for cd in CDS for a in ("--cd", cd)]]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.output.count("noisy values; ±") == 3
    assert "computed from the released subqueries' noisy rows" in result.output
    assert "exact values computed from public tables only" not in result.output


# ------------------------------------------------------------------ noisy values only

SHIFT = 1_000_000.5


def _samplers(shift: float) -> dict[str, Callable[..., Any]]:
    def laplace(values: Sequence[float], **_: object) -> tuple[list[float], float]:
        return [v + shift for v in values], 1.0

    def gaussian(values: Sequence[float], **_: object) -> tuple[list[float], float, float]:
        return [v + shift for v in values], 1.0, 0.0

    return {"sample_laplace": laplace, "sample_gaussian": gaussian}


def _numbers(node: object) -> set[float]:
    """Every number in a JSON document, the numbers written in its strings included."""
    if isinstance(node, bool) or node is None:
        return set()
    if isinstance(node, int | float):
        return {float(node)}
    if isinstance(node, str):
        return {float(m) for m in re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", node)}
    items = list(node.values()) if isinstance(node, dict) else list(node)  # type: ignore[union-attr]
    return set().union(*(_numbers(item) for item in items))


# (statement, SQL giving the true internal values the output must not show)
NOISY = [
    ("SELECT CASE WHEN (SELECT COUNT(*) FROM sales WHERE s_qty > 50) > 10 "
     "THEN (SELECT SUM(s_qty) FROM sales WHERE s_qty > 50) ELSE 0 END AS b, "
     "(SELECT SUM(s_qty) FROM sales) + (SELECT COUNT(*) FROM returns) AS d FROM item "
     "WHERE i_id = 1",
     ("SELECT COUNT(*) FROM sales WHERE s_qty > 50", "SELECT SUM(s_qty) FROM sales "
      "WHERE s_qty > 50", "SELECT SUM(s_qty) FROM sales", "SELECT COUNT(*) FROM returns")),
    ("SELECT i_cat, n FROM (SELECT i_cat, COUNT(*) AS n FROM sales, item WHERE s_item = i_id "
     "GROUP BY i_cat HAVING SUM(s_qty) > 0.1 * (SELECT SUM(s_qty) FROM sales)) t "
     "ORDER BY i_cat",
     ("SELECT SUM(s_qty) FROM sales", "SELECT COUNT(*) FROM sales, item WHERE s_item = i_id "
      "GROUP BY i_cat", "SELECT SUM(s_qty) FROM sales, item WHERE s_item = i_id "
      "GROUP BY i_cat")),
]


@pytest.mark.parametrize(("sql", "probes"), NOISY)
def test_no_true_value_reaches_the_output(tmp_path: Path, sql: str,
                                          probes: tuple[str, ...]) -> None:
    """Every sampler shifts its values by SHIFT: the output (its strings included) holds
    none of the true values, the released scalars and the HAVING's sums included."""
    rng = random.Random(11)
    conn = _database(rng, 300)
    write_db(tmp_path / "d.db", conn)
    true = {float(r[0]) for probe in probes for r in conn.execute(probe).fetchall()}
    conn.close()
    true = {t for t in true if abs(t) > 99}
    assert len(true) >= len(probes), "no distinctive true value: the test would prove nothing"
    with pytest.MonkeyPatch.context() as mp:
        for name, sampler in _samplers(SHIFT).items():
            mp.setattr(noise, name, sampler)
        document = _release(tmp_path, sql)
    values = [float(v) for row in released_rows(document) for v in row
              if isinstance(v, (int, float))]
    assert values and all(v > SHIFT / 2 for v in values)  # computed from shifted values
    leaked = true & _numbers(document)
    assert not leaked, sorted(leaked)
