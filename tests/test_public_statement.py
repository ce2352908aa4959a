"""A statement that reads only public tables is a constant (issue 23, rule public-statement).

Its sensitivity is 0 for every output column whatever SQL it computes; a statement with one
private table anywhere (a subquery, a UNION branch, a CTE, a derived table) is never taken
for one.  Its release is SQLite's own answer and spends no ε (the ledger is unchanged)."""

from __future__ import annotations

import json
import math
import random
import sqlite3
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from cqsens import analyze
from cqsens.cli.main import cli
from cqsens.engine.rules import Rule
from cqsens.errors import InputError
from cqsens.frontend.public_statement import public_statement
from cqsens.release.ledger import read_ledger
from cqsens.schemas import load_schema

ROOT = Path(__file__).resolve().parent.parent
TPCH = ROOT / "examples" / "tpch"
STANDARD = TPCH / "standard"
PUBLIC = ("nation", "region", "part", "supplier", "partsupp")

SCHEMA = """
CREATE TABLE part (p_partkey INTEGER PRIMARY KEY, p_brand TEXT NOT NULL, p_size INTEGER NOT NULL);
CREATE TABLE lineitem (l_id INTEGER PRIMARY KEY,
                       l_partkey INTEGER NOT NULL REFERENCES part(p_partkey),
                       l_quantity INTEGER NOT NULL CHECK (l_quantity BETWEEN 1 AND 5));
"""

#: Statements over the public table part only, none of which is a conjunctive query.
PUBLIC_ONLY = [
    "SELECT p_brand, p_size FROM part ORDER BY p_size DESC, p_brand LIMIT 3",
    "SELECT p_brand, COUNT(*) AS n FROM part GROUP BY p_brand "
    "HAVING COUNT(*) > (SELECT COUNT(*) FROM part) / 3",
    "SELECT p_partkey, RANK() OVER (ORDER BY p_size) AS r FROM part",
    "SELECT COUNT(*) FROM part p WHERE NOT EXISTS "
    "(SELECT 1 FROM part q WHERE q.p_size > p.p_size)",
    "WITH big AS (SELECT * FROM part WHERE p_size > 2) SELECT p_brand, MAX(p_size) FROM big "
    "GROUP BY p_brand",
    "SELECT p_brand FROM part UNION SELECT 'none'",
]

#: The same shapes with one private table (lineitem) in one place each.
PRIVATE_SOMEWHERE = {
    "FROM": "SELECT p_brand, l_quantity FROM part, lineitem WHERE p_partkey = l_partkey",
    "subquery": "SELECT p_brand FROM part WHERE p_partkey IN (SELECT l_partkey FROM lineitem)",
    "scalar subquery": "SELECT p_brand, (SELECT COUNT(*) FROM lineitem) FROM part",
    "NOT EXISTS": "SELECT COUNT(*) FROM part p WHERE NOT EXISTS "
                  "(SELECT 1 FROM lineitem l WHERE l.l_partkey = p.p_partkey)",
    "UNION branch": "SELECT p_partkey FROM part UNION ALL SELECT l_partkey FROM lineitem",
    "CTE": "WITH x AS (SELECT l_partkey FROM lineitem) SELECT p_brand FROM part, x "
           "WHERE p_partkey = x.l_partkey",
    "unused CTE": "WITH x AS (SELECT l_partkey FROM lineitem) SELECT p_brand FROM part",
    "derived table": "SELECT p_brand FROM part, (SELECT l_partkey AS k FROM lineitem) AS d "
                     "WHERE p_partkey = d.k",
    "HAVING subquery": "SELECT p_brand FROM part GROUP BY p_brand "
                       "HAVING COUNT(*) > (SELECT COUNT(*) FROM lineitem)",
    "qualified": "SELECT COUNT(*) FROM part, main.lineitem",
    "upper case": "SELECT COUNT(*) FROM part, LINEITEM",
    "CTE out of scope": "SELECT (SELECT COUNT(*) FROM (WITH lineitem AS (SELECT 1 AS k) "
                        "SELECT * FROM lineitem) AS t), (SELECT COUNT(*) FROM lineitem) FROM part",
    "CTE defined later": "WITH a AS (SELECT * FROM lineitem), lineitem AS (SELECT 1 AS k) "
                         "SELECT COUNT(*) FROM a",
    "table function": "SELECT COUNT(*) FROM part, generate_series(1, 3)",
}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _public(sql: str, public: tuple[str, ...] = ("part",)) -> bool:
    return public_statement(sql, dialect=None, public=set(public), source="<sql>") is not None


# ------------------------------------------------------------------ which statements


@pytest.mark.parametrize("sql", PUBLIC_ONLY)
def test_a_statement_over_public_tables_only_is_recognised(sql: str) -> None:
    assert _public(sql)
    assert _public(sql, ("PART",))  # names compare case-insensitively
    assert not _public(sql, ("lineitem",))


@pytest.mark.parametrize("where", sorted(PRIVATE_SOMEWHERE))
def test_one_private_table_anywhere_is_never_public(where: str) -> None:
    sql = PRIVATE_SOMEWHERE[where]
    assert not _public(sql)
    try:
        a = analyze(sql, schema=SCHEMA, public=["part"], prove_lower=False)
    except InputError:
        return  # refused as before: never taken for a constant
    assert a.count_derivation.rule is not Rule.PUBLIC_STATEMENT
    assert all(r.derivation.rule is not Rule.PUBLIC_STATEMENT for r in a.aggregates)


def test_a_cte_named_like_a_private_table_is_the_cte() -> None:
    sql = "WITH lineitem AS (SELECT * FROM part) SELECT COUNT(*) FROM lineitem"
    assert _public(sql)
    assert _public("WITH a AS (SELECT * FROM part), b AS (SELECT * FROM a) "
                   "SELECT COUNT(*) FROM b")


NAMES = st.sampled_from(["part", "lineitem"])


@given(st.lists(NAMES, min_size=1, max_size=5), st.sampled_from(range(5)))
def test_public_exactly_when_every_placed_table_is(tables: list[str], shape: int) -> None:
    """Tables placed in FROM, a subquery, a UNION branch, a CTE or a derived table: the
    statement is public if and only if every one of them is."""
    first, rest = tables[0], tables[1:]
    sql = f"SELECT COUNT(*) FROM {first} t0"
    for i, name in enumerate(rest):
        kind = (shape + i) % 5
        if kind == 0:
            sql = f"{sql} WHERE EXISTS (SELECT 1 FROM {name} s{i})"
        elif kind == 1:
            sql = f"{sql} UNION ALL SELECT COUNT(*) FROM {name} u{i}"
        elif kind == 2:
            sql = f"WITH c{i} AS (SELECT * FROM {name}) SELECT COUNT(*) FROM ({sql}) q{i}, c{i}"
        elif kind == 3:
            sql = f"SELECT COUNT(*) FROM (SELECT * FROM {name}) d{i}, ({sql}) e{i}"
        else:
            sql = f"SELECT ({sql}) + (SELECT MAX(1) FROM {name} m{i})"
    assert _public(sql) == all(t == "part" for t in tables)


# ------------------------------------------------------------------ the analysis


@pytest.mark.parametrize("query", ["q02", "q11", "q16"])
def test_tpch_public_queries_are_analysed_with_sensitivity_0(query: str) -> None:
    code, out, err = run("analyze", str(TPCH / "queries" / f"{query}.sql"), "--config",
                         str(STANDARD / "cqsens.toml"), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["sensitivity"]["upper"] == 0 and doc["sensitivity"]["lower"] == 0
    assert doc["count_rule_id"] == "public-statement"
    assert "public-statement" in " ".join(doc["explanation"])
    assert all(a["l1"] == 0 and a["l2"] == 0 and a["rule_id"] == "public-statement"
               for a in doc["aggregates"])
    text = (TPCH / "queries" / f"{query}.sql").read_text().lower()
    named = doc["explanation"][0]
    assert all(t in named for t in PUBLIC if f" {t}" in text or f"\n    {t}" in text)
    jsonschema.validate(doc, load_schema("analyze"))


def test_the_aggregates_keep_their_labels_and_kinds() -> None:
    a = analyze("SELECT p_brand, COUNT(*) AS n, SUM(p_size) AS s, AVG(p_size) + 1 AS a "
                "FROM part GROUP BY p_brand HAVING COUNT(*) > 1", schema=SCHEMA,
                public=["part"])
    assert [(r.label, r.kind, r.l1) for r in a.aggregates] == [
        ("n", "count", 0), ("s", "sum", 0), ("a", "expression", 0)]
    assert a.upper == 0 and a.lower == 0 and a.tight


def _random_db(path: Path, rng: random.Random) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    parts = [(k, rng.choice("xyz"), rng.randint(0, 4)) for k in range(rng.randint(1, 6))]
    conn.executemany("INSERT INTO part VALUES (?, ?, ?)", parts)
    conn.executemany("INSERT INTO lineitem VALUES (?, ?, ?)",
                     [(i, rng.choice(parts)[0], rng.randint(1, 5))
                      for i in range(rng.randint(0, 6))])
    conn.commit()
    conn.close()


@pytest.mark.parametrize("sql", PUBLIC_ONLY)
def test_every_neighbour_gives_the_same_answer(tmp_path: Path, sql: str) -> None:
    """Brute force: adding or removing any lineitem row (the private table) leaves the
    answer of a public statement as it is, so 0 is its sensitivity."""
    assert analyze(sql, schema=SCHEMA, public=["part"]).upper == 0
    rng = random.Random(sql)
    for n in range(10):
        path = tmp_path / f"{n}.db"
        _random_db(path, rng)
        conn = sqlite3.connect(path)
        base = conn.execute(sql).fetchall()
        lines = conn.execute("SELECT l_id FROM lineitem").fetchall()
        for (line,) in lines:
            conn.execute("SAVEPOINT s")
            conn.execute("DELETE FROM lineitem WHERE l_id = ?", (line,))
            assert conn.execute(sql).fetchall() == base
            conn.execute("ROLLBACK TO s")
        conn.execute("INSERT INTO lineitem VALUES (100, "
                     "(SELECT MIN(p_partkey) FROM part), 5)")
        assert conn.execute(sql).fetchall() == base
        conn.close()


# ------------------------------------------------------------------ the release


def _tpch_db(path: Path, rng: random.Random) -> None:
    conn = sqlite3.connect(path)
    conn.executescript((STANDARD / "schema.sql").read_text())
    conn.executemany("INSERT INTO region VALUES (?, ?, '')",
                     [(r, ["EUROPE", "ASIA", "AFRICA"][r]) for r in range(3)])
    conn.executemany("INSERT INTO nation VALUES (?, ?, ?, '')",
                     [(n, ["GERMANY", "FRANCE", "JAPAN", "KENYA"][n], [0, 0, 1, 2][n])
                      for n in range(4)])
    suppliers = range(rng.randint(2, 8))
    conn.executemany("INSERT INTO supplier VALUES (?, ?, 'a', ?, 'p', ?, 'c')",
                     [(s, f"S{s}", rng.randrange(4), rng.randint(-999, 9999))
                      for s in suppliers])
    parts = range(rng.randint(2, 8))
    conn.executemany("INSERT INTO part VALUES (?, 'n', ?, 'b', ?, ?, 'c', 1000, '')",
                     [(p, f"M{rng.randrange(3)}", rng.choice(["LARGE BRASS", "SMALL TIN"]),
                       rng.choice([15, 20])) for p in parts])
    pairs = {(rng.choice(parts), rng.choice(suppliers)) for _ in range(rng.randint(1, 20))}
    conn.executemany("INSERT INTO partsupp VALUES (?, ?, ?, ?, '')",
                     [(p, s, rng.randint(1, 9999), rng.randint(1, 1000))
                      for p, s in sorted(pairs)])
    conn.executemany("INSERT INTO customer VALUES (?, 'c', 'a', 0, 'p', 0, 'BUILDING', '')",
                     [(c,) for c in range(3)])
    conn.commit()
    conn.close()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("query", ["q02", "q11"])
def test_release_is_sqlites_answer_and_spends_nothing(tmp_path: Path, query: str,
                                                      seed: int) -> None:
    db, ledger = tmp_path / "tpch.db", tmp_path / "ledger.sqlite"
    _tpch_db(db, random.Random(seed))
    sql_file = TPCH / "queries" / f"{query}.sql"
    conn = sqlite3.connect(db)
    truth = [list(r) for r in conn.execute(sql_file.read_text()).fetchall()]
    conn.close()
    # spend the whole budget on a private release first
    code, _, err = run("release", "--sql", "SELECT COUNT(*) FROM orders", "--config",
                       str(STANDARD / "cqsens.toml"), "--db", f"sqlite:///{db}",
                       "--epsilon", "1", "--ledger", str(ledger), "--budget", "1")
    assert code == 0, err
    before = read_ledger(ledger)
    assert len(before) == 1
    code, out, err = run("release", str(sql_file), "--config", str(STANDARD / "cqsens.toml"),
                         "--db", f"sqlite:///{db}", "--epsilon", "1", "--ledger", str(ledger),
                         "--budget", "1", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    jsonschema.validate(doc, load_schema("release"))
    rows = [[v["value"] for v in (g.get("values") or [g])] for g in doc["groups"]]
    assert len(rows) == len(truth)
    for got, want in zip(rows, truth, strict=True):
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            assert a == b or (isinstance(b, float) and math.isclose(a, b))
    assert doc["epsilon"] == 0 and doc["delta"] == 0 and doc["parts"] == []
    assert all((g.get("halfwidth_95") or 0) == 0 for g in doc["groups"])
    assert "declared public" in " ".join(doc["notes"])
    assert read_ledger(ledger) == before  # nothing recorded
    assert doc["ledger"]["releases"] == 1
    # a private release is still charged, and refused once the budget is spent
    code, _, err = run("release", "--sql", "SELECT COUNT(*) FROM orders", "--config",
                       str(STANDARD / "cqsens.toml"), "--db", f"sqlite:///{db}",
                       "--epsilon", "0.5", "--ledger", str(ledger), "--budget", "1")
    assert code == 1 and "budget" in err
    assert read_ledger(ledger) == before


def test_release_text_says_exact_from_public_tables(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    _random_db(db, random.Random(3))
    schema = tmp_path / "schema.sql"
    schema.write_text(SCHEMA)
    sql = "SELECT p_brand, COUNT(*) FROM part GROUP BY p_brand ORDER BY 1"
    code, out, err = run("release", "--sql", sql, "--schema", str(schema), "--public", "part",
                         "--db", f"sqlite:///{db}", "--epsilon", "1")
    assert code == 0, err
    assert "computed from public tables only" in out and "noisy values" not in out
    conn = sqlite3.connect(db)
    for brand, n in conn.execute(sql).fetchall():
        assert any(line.split()[1:3] == [brand, str(n)] for line in out.splitlines())
