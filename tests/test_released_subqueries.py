"""Released subqueries (issue 23; docs/rules.md, rule released-subquery): an aggregating
derived table or WITH table over private tables is a release of its own, and the rest of
the statement is post-processing of its noisy rows.  Checked on a small star schema (two
private fact tables owned by customers, two public dimensions) against brute force in
SQLite (every person removed, persons added, on small random databases), with the noise
off against SQLite's own answer to the statement, and with a large noise offset (only
noisy values reach the rest of the statement)."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from click.testing import CliRunner
from jsonschema import Draft202012Validator
from sqlglot import exp

from cqsens import analyze
from cqsens.cli.main import cli
from cqsens.errors import InputError
from cqsens.frontend.released_parts import split_parts
from cqsens.release import noise
from cqsens.release.ledger import read_ledger
from cqsens.schemas import load_schema
from tests.helpers import release_json, released_rows, write_db

SCHEMA = """
CREATE TABLE customer (c_id INTEGER PRIMARY KEY, c_name TEXT NOT NULL);
CREATE TABLE item (i_id INTEGER PRIMARY KEY, i_cat TEXT NOT NULL CHECK (i_cat IN ('a', 'b')));
CREATE TABLE dates (d_id INTEGER PRIMARY KEY,
                    d_qoy INTEGER NOT NULL CHECK (d_qoy BETWEEN 1 AND 4));
CREATE TABLE sales (s_id INTEGER PRIMARY KEY,
                    s_cust INTEGER NOT NULL REFERENCES customer(c_id),
                    s_item INTEGER NOT NULL REFERENCES item(i_id),
                    s_date INTEGER NOT NULL REFERENCES dates(d_id),
                    s_price INTEGER NOT NULL CHECK (s_price BETWEEN 0 AND 10));
CREATE TABLE returns (r_id INTEGER PRIMARY KEY,
                      r_cust INTEGER NOT NULL REFERENCES customer(c_id),
                      r_item INTEGER NOT NULL REFERENCES item(i_id),
                      r_amt INTEGER NOT NULL CHECK (r_amt BETWEEN 0 AND 5));
"""
CDS = ["sales[s_cust->s_id]<=3", "returns[r_cust->r_id]<=2"]
PUBLIC = ["item", "dates"]

# a grouped release with a window over its sums, filtered, ordered and cut outside
WINDOWED = ("SELECT * FROM (SELECT i_cat, SUM(s_price) AS total, AVG(SUM(s_price)) OVER () "
            "AS mean FROM item, sales WHERE s_item = i_id GROUP BY i_cat) t "
            "WHERE total > 0.5 * mean ORDER BY total DESC, i_cat LIMIT 5")
# scalar releases side by side, arithmetic over them
CROSS = ("SELECT a, b, CASE WHEN b = 0 THEN NULL ELSE 1.0 * a / b END AS r FROM "
         "(SELECT COUNT(*) AS a FROM sales WHERE s_price > 5) x, "
         "(SELECT COUNT(*) AS b FROM returns) y")
# grouped WITH tables over two fact tables, their UNION ALL summed per key
UNION = ("WITH ss AS (SELECT i_cat, SUM(s_price) AS total FROM sales, item "
         "WHERE s_item = i_id GROUP BY i_cat), "
         "rr AS (SELECT i_cat, SUM(r_amt) AS total FROM returns, item "
         "WHERE r_item = i_id GROUP BY i_cat) "
         "SELECT i_cat, SUM(total) AS total FROM (SELECT * FROM ss UNION ALL SELECT * FROM rr) u "
         "GROUP BY i_cat ORDER BY i_cat")
# a release per item joined back with the public item table, ranked
JOINED = ("SELECT i.i_cat, t.n, RANK() OVER (ORDER BY t.n DESC) AS rk FROM item i, "
          "(SELECT s_item, COUNT(*) AS n FROM sales GROUP BY s_item) t "
          "WHERE i.i_id = t.s_item ORDER BY t.n DESC, i.i_cat, rk")
# a group column selected under another name
ALIASED = ("SELECT item, n FROM (SELECT s_item AS item, COUNT(*) AS n FROM sales "
           "GROUP BY s_item) t ORDER BY n DESC, item")
# ROLLUP by hand: a WITH table that does not aggregate, read by grouped UNION ALL branches
# with constant labels (each branch a release)
ROLLED = ("WITH base AS (SELECT i_cat, s_price FROM sales, item WHERE s_item = i_id) "
          "SELECT * FROM (SELECT i_cat, 0 AS g, SUM(s_price) AS total FROM base GROUP BY i_cat "
          "UNION ALL SELECT NULL, 1, SUM(s_price) FROM base) u ORDER BY g, i_cat")
FORMS = [WINDOWED, CROSS, UNION, JOINED, ALIASED, ROLLED]


def _database(rng: random.Random) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    for i in range(3):
        conn.execute("INSERT INTO item VALUES (?, ?)", (i, "ab"[i % 2]))
    for d in range(4):
        conn.execute("INSERT INTO dates VALUES (?, ?)", (d, d + 1))
    for c in range(rng.randint(1, 4)):
        _person(conn, rng, c, rng.randint(0, 3), rng.randint(0, 2))
    return conn


def _person(conn: sqlite3.Connection, rng: random.Random, c: int, sales: int,
            returns: int) -> None:
    conn.execute("INSERT INTO customer VALUES (?, ?)", (c, f"c{c}"))
    for k in range(sales):
        conn.execute("INSERT INTO sales VALUES (?, ?, ?, ?, ?)",
                     (100 * c + k, c, rng.randrange(3), rng.randrange(4), rng.randint(0, 10)))
    for k in range(returns):
        conn.execute("INSERT INTO returns VALUES (?, ?, ?, ?)",
                     (100 * c + k, c, rng.randrange(3), rng.randint(0, 5)))


def _moves(conn: sqlite3.Connection, rng: random.Random) -> list[list[tuple[str, Any]]]:
    """Remove each customer with their rows, or add one with up to 3 sales and 2 returns."""
    moves: list[list[tuple[str, Any]]] = []
    for (c,) in conn.execute("SELECT c_id FROM customer").fetchall():
        moves.append([("DELETE FROM sales WHERE s_cust = ?", (c,)),
                      ("DELETE FROM returns WHERE r_cust = ?", (c,)),
                      ("DELETE FROM customer WHERE c_id = ?", (c,))])
    for n in range(8):
        new: list[tuple[str, Any]] = [("INSERT INTO customer VALUES (900, 'new')", ())]
        for k in range(n % 4):
            new.append(("INSERT INTO sales VALUES (?, 900, ?, ?, ?)",
                        (9000 + k, rng.randrange(3), rng.randrange(4), rng.choice([0, 10]))))
        for k in range(n % 3):
            new.append(("INSERT INTO returns VALUES (?, 900, ?, ?)",
                        (9000 + k, rng.randrange(3), rng.choice([0, 5]))))
        moves.append(new)
    return moves


def _released(sql: str) -> str:
    """The part's statement without its window items (post-processing of the released
    aggregates, not released themselves)."""
    tree = sqlglot.parse_one(sql)
    assert isinstance(tree, exp.Select)
    tree.set("expressions", [e for e in tree.expressions if e.find(exp.Window) is None])
    return tree.sql()


def _vector(conn: sqlite3.Connection, sql: str) -> dict[tuple[object, ...], tuple[float, ...]]:
    """The part's released vector: each group's aggregates (its key columns are those
    without an aggregate)."""
    tree = sqlglot.parse_one(sql)
    assert isinstance(tree, exp.Select)
    keys = [i for i, e in enumerate(tree.expressions) if e.find(exp.AggFunc) is None]
    out = {}
    for row in conn.execute(sql).fetchall():
        key = tuple(row[i] for i in keys)
        out[key] = tuple(float(v or 0) for i, v in enumerate(row) if i not in keys)
    return out


def _l1(a: dict[Any, tuple[float, ...]], b: dict[Any, tuple[float, ...]]) -> float:
    total = 0.0
    for key in set(a) | set(b):
        x, y = a.get(key), b.get(key)
        width = len(x or y or ())
        total += sum(abs(p - q) for p, q in zip(x or (0.0,) * width, y or (0.0,) * width,
                                                 strict=True))
    return total


def _analyze(sql: str) -> Any:
    return analyze(sql, schema=SCHEMA, cds=CDS, public=PUBLIC, unit="customer")


@pytest.mark.parametrize("sql", FORMS)
def test_each_part_is_released_with_its_own_bound(sql: str) -> None:
    """Each part's stage is the analysis of its statement alone (same bounds), and brute
    force over persons removed and added never moves a part's released vector by more
    than its ℓ1; the statement spends ε/n on each of its n parts."""
    a = _analyze(sql)
    found = split_parts(sql, None, public=set(PUBLIC))
    assert found is not None and len(a.stages) == len(found.parts)
    assert a.stage_shares == tuple(("part", f"1/{len(found.parts)}") for _ in found.parts)
    for part, stage in zip(found.parts, a.stages, strict=True):
        alone = _analyze(part.sql)
        assert stage.query == part.sql
        assert (stage.upper, stage.l1, stage.l2) == (alone.upper, alone.l1, alone.l2)
        rng = random.Random(sql + part.sql)
        worst = 0.0
        for _ in range(25):
            conn = _database(rng)
            released = _released(part.sql)
            base = _vector(conn, released)
            for move in _moves(conn, rng):
                conn.execute("SAVEPOINT s")
                for statement, args in move:
                    conn.execute(statement, args)
                worst = max(worst, _l1(base, _vector(conn, released)))
                conn.execute("ROLLBACK TO s")
            conn.close()
        assert 0 < worst <= float(stage.l1), (part.sql, worst, stage.l1)
    assert max(float(s.upper) for s in a.stages) == float(a.upper)


def test_private_rows_outside_a_release_stay_refused() -> None:
    """A statement that joins a released subquery with a private table is refused, and
    says which private table is read outside the releases; a derived table grouped by the
    person's key stays a per-person table (rule person-groups), never a part."""
    sql = ("SELECT s.s_id, t.n FROM sales s, (SELECT s_item, COUNT(*) AS n FROM sales "
           "GROUP BY s_item) t WHERE s.s_item = t.s_item AND t.n > 1")
    with pytest.raises(InputError, match=r"reads the private table sales outside it"):
        split_parts(sql, None, public=set(PUBLIC))
    with pytest.raises(InputError, match="released-subquery"):
        _analyze(sql)
    per_person = ("SELECT c_name, n FROM customer, (SELECT s_cust, COUNT(*) AS n FROM sales "
                  "GROUP BY s_cust) t WHERE c_id = s_cust")
    with pytest.raises(InputError) as refused:
        _analyze(per_person)
    assert "released-subquery" not in str(refused.value)


def test_an_aggregate_over_a_release_is_post_processing() -> None:
    """The innermost aggregate over private rows is the part; the aggregate over its
    released rows is post-processing, and a WITH table read only by a part goes with it."""
    sql = ("WITH base AS (SELECT s_item, s_price FROM sales WHERE s_price > 2) "
           "SELECT MAX(n) FROM (SELECT s_item, COUNT(*) AS n FROM base GROUP BY s_item) t")
    found = split_parts(sql, None, public=set(PUBLIC))
    assert found is not None and len(found.parts) == 1
    assert found.parts[0].sql.startswith("WITH base AS")
    assert "sales" not in found.outer and "base" not in found.outer


# ----------------------------------------------------------------------------- release


def _write(path: Path, conn: sqlite3.Connection) -> None:
    write_db(path, conn)


def _release(tmp: Path, sql: str, *extra: str) -> dict[str, Any]:
    args = ["--sql", sql, "--public", ",".join(PUBLIC), "--unit", "customer", *extra]
    return release_json(tmp, SCHEMA, args + [a for cd in CDS for a in ("--cd", cd)])


_rows = released_rows


def _same(got: Sequence[tuple[object, ...]], truth: Sequence[tuple[object, ...]]) -> bool:
    if len(got) != len(truth):
        return False
    for a, b in zip(got, truth, strict=True):
        for x, y in zip(a, b, strict=True):
            if isinstance(x, (int, float)) and isinstance(y, (int, float)):
                if x != pytest.approx(y):
                    return False
            elif x != y:
                return False
    return True


@pytest.mark.parametrize("seed", range(4))
def test_release_with_the_noise_off_is_the_sql_answer(seed: int, tmp_path: Path,
                                                      noiseless: None) -> None:
    """Random databases: with the noise off each part releases its true rows, and the
    statement's answer is SQLite's own answer to the statement as written."""
    rng = random.Random(seed)
    conn = _database(rng)
    for c in range(10, 10 + rng.randint(3, 8)):
        _person(conn, rng, c, rng.randint(0, 3), rng.randint(0, 2))
    for i in range(3):  # a key without rows is released as a row of zeros (every public
        _person(conn, rng, 50 + i, 0, 0)  # key is): give every item a sale and a return
        conn.execute("INSERT INTO sales VALUES (?, ?, ?, 0, 1)", (9500 + i, 50 + i, i))
        conn.execute("INSERT INTO returns VALUES (?, ?, ?, 1)", (9500 + i, 50 + i, i))
    _write(tmp_path / "d.db", conn)
    for sql in FORMS:
        truth = [tuple(r) for r in conn.execute(sql).fetchall()]
        document = _release(tmp_path, sql)
        parts = split_parts(sql, None, public=set(PUBLIC))
        assert parts is not None and len(document["stages"]) == len(parts.parts) + 1
        assert document["epsilon"] == 0.0  # the rest: nothing spent
        assert all(s["epsilon"] == pytest.approx(1 / len(parts.parts))
                   for s in document["stages"][:-1])
        assert _same(_rows(document), truth), (sql, _rows(document), truth)
    conn.close()


def test_the_ledger_records_each_part(tmp_path: Path) -> None:
    """Each part is charged its share; the post-processing charges nothing."""
    _write(tmp_path / "d.db", _database(random.Random(7)))
    _release(tmp_path, CROSS, "--ledger", str(tmp_path / "ledger.sqlite"))
    entries = read_ledger(str(tmp_path / "ledger.sqlite"))
    assert [e.epsilon for e in entries] == [0.5, 0.5]


def test_analyze_json_shows_the_parts(tmp_path: Path) -> None:
    """`cqsens analyze --format json` lists each part as a stage with role "part"."""
    schema = tmp_path / "schema.sql"
    schema.write_text(SCHEMA)
    args = ["analyze", "--sql", CROSS, "--schema", str(schema), "--format", "json",
            "--public", ",".join(PUBLIC), "--unit", "customer"]
    for cd in CDS:
        args += ["--cd", cd]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    Draft202012Validator(load_schema("analyze")).validate(document)
    assert [s["role"] for s in document["stages"]] == ["part", "part"]
    assert [s["upper"] for s in document["stages"]] == [3, 2]
    assert "rule released-subquery" in " ".join(document["explanation"])


def test_noise_reaches_the_post_processing(tmp_path: Path) -> None:
    """With a fixed offset added by the noise, the rest of the statement computes on the
    shifted values: the released ratio is that of the shifted counts."""
    conn = _database(random.Random(3))
    _write(tmp_path / "d.db", conn)
    (a,), (b,) = (conn.execute("SELECT COUNT(*) FROM sales WHERE s_price > 5").fetchone(),
                  conn.execute("SELECT COUNT(*) FROM returns").fetchone())

    def shifted(values: Sequence[float], **_: object) -> tuple[list[float], float]:
        return [v + 1000 for v in values], 1.0

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(noise, "sample_laplace", shifted)
        document = _release(tmp_path, CROSS)
    ((x, y, r),) = _rows(document)
    assert (x, y) == (a + 1000, b + 1000)
    assert r == pytest.approx((a + 1000) / (b + 1000))


def test_a_chain_of_with_tables_read_twice_each_is_read_once() -> None:
    """Each WITH table of a chain that reads the one before it twice is visited once (a
    walk along every path would take 2^59 steps here): the part carries all 60."""
    ctes = ["c0 AS (SELECT s_item FROM sales)"] + [
        f"c{i} AS (SELECT s_item FROM c{i - 1} UNION ALL SELECT s_item FROM c{i - 1})"
        for i in range(1, 60)]
    sql = ("WITH " + ", ".join(ctes) + " SELECT MAX(n) FROM (SELECT s_item, COUNT(*) AS n "
           "FROM c59 GROUP BY s_item) d")
    found = split_parts(sql, None, public=set(PUBLIC))
    assert found is not None and len(found.parts) == 1
    assert all(f"c{i} AS" in found.parts[0].sql for i in range(60))
    assert "sales" not in found.outer


def test_the_rest_runs_in_memory_unless_it_joins_public_tables(tmp_path: Path,
                                                              noiseless: None) -> None:
    """A rest that reads released rows only runs in an empty SQLite database in memory;
    one joined with a public table reads that table, read-only, from the database."""
    _write(tmp_path / "d.db", _database(random.Random(5)))
    assert "in SQLite in memory" in _release(tmp_path, CROSS)["keys"]
    assert "the public tables item" in _release(tmp_path, JOINED)["keys"]
