"""``cqsens init --db URL``: the reflected schema, the proposed unit, ownership keys and
public tables, and the rows per person measured in the data (max, p99)."""

from __future__ import annotations

import json
import math
import random
import re
import sqlite3
import tempfile
import tomllib
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from cqsens.cli.main import cli
from cqsens.config import load_config
from cqsens.db.load import load_sql_file
from cqsens.db.persons import measure_persons, percentile, propose_ownership
from cqsens.db.reflect import reflect_schema
from cqsens.engine.person import chains, check_ownership, resolve_unit
from cqsens.errors import InputError
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.parse_cq import parse_cq
from cqsens.ir.schema import Schema
from cqsens.report.init import schema_sql
from tests.postgres import PgServer

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "examples" / "shop"
COMMENTED_CD = re.compile(r'^  # (".*",)', re.MULTILINE)


def _declared(name: str) -> int:
    """The k the hand-written shop constraints declare for ``name[...]``."""
    for line in (SHOP / "constraints.txt").read_text().splitlines():
        if line.startswith(name + "["):
            return int(line.split("<=")[1])
    raise AssertionError(name)


def _shop_db(path: Path, users: int, rng: random.Random) -> Path:
    """The shop schema with generated rows: at most as many orders per user and items per
    order as examples/shop/constraints.txt declares, the most reached once."""
    most_orders, most_items = _declared("orders"), _declared("items")
    conn = sqlite3.connect(path)
    conn.executescript((SHOP / "schema.sql").read_text())
    conn.executemany("INSERT INTO products VALUES (?, ?)",
                     [(p, rng.randint(0, 1000)) for p in range(1, 8)])
    oid = iid = 0
    for uid in range(1, users + 1):
        conn.execute("INSERT INTO users VALUES (?, ?, ?)", (uid, f"u{uid}", rng.choice(
            ["FR", "DE", None])))
        for _ in range(most_orders if uid == 1 else rng.randint(0, most_orders)):
            oid += 1
            conn.execute("INSERT INTO orders VALUES (?, ?, ?)", (oid, uid, rng.randint(0, 500)))
            for _ in range(most_items if oid == 1 else rng.randint(0, most_items)):
                iid += 1
                conn.execute("INSERT INTO items VALUES (?, ?, ?)", (iid, oid, rng.randint(1, 7)))
    conn.commit()
    conn.close()
    return path


def _init(folder: Path, db: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["init", "--db", f"sqlite:///{db}", "-o",
                                      str(folder / "cqsens.toml"), *extra])
    return result.exit_code, result.output


def _nearest_rank(counts: list[int], fraction: float = 0.99) -> int:
    ordered = sorted(counts)
    return ordered[math.ceil(fraction * len(ordered)) - 1]


def _report(config: Path, out: Path) -> list[dict[str, object]]:
    result = CliRunner().invoke(cli, ["report", str(SHOP), "--config", str(config),
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())["rows"]
    return [{k: row[k] for k in ("file", "status", "aggregate", "upper", "lower", "tight",
                                 "suggestion")} for row in rows]


def test_init_on_the_shop_gives_the_hand_written_results(tmp_path: Path) -> None:
    db = _shop_db(tmp_path / "shop.db", 40, random.Random(11))
    folder = tmp_path / "meta"
    folder.mkdir()
    code, output = _init(folder, db)
    assert code == 0, output
    text = (folder / "cqsens.toml").read_text()
    written = tomllib.loads(text)
    hand = tomllib.loads((SHOP / "cqsens.toml").read_text())
    assert written["unit"] == hand["unit"] and written["public"] == hand["public"]
    assert written["owner"] == ["orders.uid", "items.oid"]
    assert written["cd"] == []  # measured, but commented out: observed, not guaranteed
    assert "PROPOSAL: the privacy unit" in text and "NOT GUARANTEED" in text
    # the user uncomments the rows-per-person lines
    cds = COMMENTED_CD.findall(text)
    assert [json.loads(c.rstrip(",")) for c in cds] == [
        f"orders[uid->oid]<={_declared('orders')}", f"items[oid->iid]<={_declared('items')}"]
    uncommented = folder / "uncommented.toml"
    uncommented.write_text(COMMENTED_CD.sub(r"  \1", text))
    assert load_config(uncommented).get("cd") == [json.loads(c.rstrip(",")) for c in cds]
    mine = _report(uncommented, tmp_path / "mine.json")
    theirs = _report(SHOP / "cqsens.toml", tmp_path / "theirs.json")
    assert mine == theirs
    assert all(row["status"] == "ok" for row in mine) and len(mine) >= 10


def test_reflected_schema_sql_reads_back_as_the_same_schema(tmp_path: Path) -> None:
    db = _shop_db(tmp_path / "shop.db", 5, random.Random(1))
    reflected = reflect_schema(f"sqlite:///{db}")
    again = schema_from_ddl(schema_sql(reflected, source="x"))
    assert _shape(again) == _shape(reflected)
    assert _shape(again) == _shape(schema_from_ddl((SHOP / "schema.sql").read_text()))


def _shape(schema: Schema) -> list[tuple[object, ...]]:
    return [(r.name, r.columns, r.types, r.keys, r.composite_keys, r.bounds, r.primary_key,
             r.not_null, frozenset(r.foreign_keys)) for r in schema.relations]


@pytest.mark.slow
@given(st.lists(st.integers(0, 6), min_size=1, max_size=12),
       st.lists(st.integers(0, 4), max_size=40))
def test_rows_per_person_are_the_counts_in_the_data(orders: list[int], items: list[int]) -> None:
    """max and p99 of orders per user and items per user, against Python's own count of
    the rows SQLite holds (users with no order count as 0)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rpp.db"
        conn = sqlite3.connect(path)
        conn.executescript((SHOP / "schema.sql").read_text())
        oid = 0
        for uid, n in enumerate(orders, start=1):
            conn.execute("INSERT INTO users VALUES (?, 'n', NULL)", (uid,))
            for _ in range(n):
                oid += 1
                conn.execute("INSERT INTO orders VALUES (?, ?, 1)", (oid, uid))
        conn.execute("INSERT INTO products VALUES (1, 1)")
        for iid, n in enumerate(items, start=1):
            if oid:
                conn.execute("INSERT INTO items VALUES (?, ?, 1)", (iid, n % oid + 1))
        conn.commit()
        url = f"sqlite:///{path}"
        view = measure_persons(url, reflect_schema(url))
    assert view is not None and view.unit_text == "users(id)"
    owner_of = dict(conn.execute("SELECT oid, uid FROM orders").fetchall())
    per_user = Counter(uid for (uid,) in conn.execute("SELECT uid FROM orders"))
    items_per_user = Counter(owner_of[o] for (o,) in conn.execute("SELECT oid FROM items"))
    users = [u for (u,) in conn.execute("SELECT id FROM users")]
    measured = {c.table: c for c in view.chains}
    for table, counts in (("orders", per_user), ("items", items_per_user)):
        every = [counts.get(u, 0) for u in users]
        assert (measured[table].max_count, measured[table].p99) == (max(every),
                                                                     _nearest_rank(every))
        assert measured[table].rows == sum(every)


@given(st.lists(st.integers(0, 50), min_size=1, max_size=300))
def test_percentile_is_the_nearest_rank(values: list[int]) -> None:
    assert percentile(Counter(values)) == _nearest_rank(values)
    assert percentile(Counter(values), 1.0) == max(values)


_TABLE = st.lists(st.tuples(st.integers(0, 5), st.booleans()), max_size=3)


def _ddl(tables: list[list[tuple[int, bool]]]) -> str:
    """Tables t0, t1, ... with a key and foreign keys (NOT NULL or nullable) to any table."""
    out = []
    for n, refs in enumerate(tables):
        cols = [f"id{n} INT PRIMARY KEY"]
        cols += [f"f{n}_{k} INT{' NOT NULL' if strict else ''} REFERENCES t{t % len(tables)}"
                 f"(id{t % len(tables)})" for k, (t, strict) in enumerate(refs)]
        out.append(f"CREATE TABLE t{n} ({', '.join(cols)});")
    return "\n".join(out)


@given(st.lists(_TABLE, min_size=1, max_size=6))
def test_proposals_satisfy_the_ownership_rules(tables: list[list[tuple[int, bool]]]) -> None:
    """Every table is the unit, owned or public; no public table is owned; no cycle is
    left among the ownership keys; a table read whole is refused only when it reaches
    the unit through a nullable column alone, which the proposal flags."""
    schema = schema_from_ddl(_ddl(tables))
    proposal = propose_ownership(schema)
    if proposal.unit is None:
        assert all(r.name == t.name for r, _, t in schema.foreign_keys())  # self-references
        return
    unit = resolve_unit(proposal.unit, schema, proposal.owner_names(schema))
    assert set(proposal.private) | set(proposal.public) == set(schema.relation_names())
    assert not set(proposal.private) & set(proposal.public)
    flagged = {t for t, _ in proposal.nullable}
    for relation in schema.relations:
        found = chains(schema, unit, relation.name)  # raises on a cycle
        assert bool(found) == (relation.name in proposal.private)
        atom = f"{relation.name}({', '.join(f'x{i}' for i in range(len(relation.columns)))})"
        query = parse_cq(f"Q() :- {atom}")
        if relation.name in flagged:
            with pytest.raises(InputError, match="nullable"):
                check_ownership(schema, unit, query, proposal.public)
        else:
            check_ownership(schema, unit, query, proposal.public)
    reached = {t: len(by) for t, by in proposal.reached_by}
    assert reached[proposal.unit] == max(reached.values())


def test_a_self_reference_is_left_out_of_owner_and_said_so(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, boss INT REFERENCES users(id));"
            "CREATE TABLE notes (nid INTEGER PRIMARY KEY, uid INT REFERENCES users(id));"
            "INSERT INTO users VALUES (1, NULL), (2, 1);"
            "INSERT INTO notes VALUES (1, 1), (2, 1), (3, NULL);")
    code, output = _init(tmp_path, db)
    assert code == 0, output
    text = (tmp_path / "cqsens.toml").read_text()
    assert tomllib.loads(text)["owner"] == ["notes.uid"]
    assert "users(boss) → users(id)" in text.split("Left out of owner")[1]
    assert "NOTE: notes reaches users only through the nullable column notes.uid" in text
    assert '# "notes[uid->nid]<=2",' in text  # user 1 has two notes


def test_init_never_overwrites_without_force_nor_the_database(tmp_path: Path) -> None:
    db = _shop_db(tmp_path / "shop.db", 3, random.Random(2))
    (tmp_path / "cqsens.toml").write_text("mine\n")
    code, output = _init(tmp_path, db)
    assert code == 2 and "already exists; pass --force" in output
    assert (tmp_path / "cqsens.toml").read_text() == "mine\n"
    assert not (tmp_path / "schema.sql").exists()
    code, output = _init(tmp_path, db, "--force")
    assert code == 0 and tomllib.loads((tmp_path / "cqsens.toml").read_text())["unit"] == "users"
    before = db.read_bytes()
    result = CliRunner().invoke(cli, ["init", "--db", f"sqlite:///{db}", "-o", str(db),
                                      "--force"])
    assert result.exit_code == 2 and "never writes over its inputs" in result.output
    assert db.read_bytes() == before


def test_init_without_foreign_keys_proposes_no_unit(tmp_path: Path) -> None:
    db = tmp_path / "flat.db"
    with sqlite3.connect(db) as conn:
        conn.executescript("CREATE TABLE r (a INT PRIMARY KEY, b INT);"
                           "INSERT INTO r VALUES (1, 2);")
    code, output = _init(tmp_path, db)
    assert code == 0 and "no privacy unit proposed" in output
    written = tomllib.loads((tmp_path / "cqsens.toml").read_text())
    assert written == {"schema": "schema.sql"}


def test_init_given_unit_and_a_bad_unit(tmp_path: Path) -> None:
    db = _shop_db(tmp_path / "shop.db", 3, random.Random(3))
    code, output = _init(tmp_path, db, "--unit", "orders")
    assert code == 0, output
    written = tomllib.loads((tmp_path / "cqsens.toml").read_text())
    assert (written["unit"], written["owner"]) == ("orders", ["items.oid"])
    assert written["public"] == ["users", "products"]
    code, output = _init(tmp_path, db, "--unit", "nosuch", "--force")
    assert code == 1 and "--unit names table 'nosuch'" in output


def test_init_never_prints_a_password(tmp_path: Path) -> None:
    url = "postgresql://alice:s3cretpw@127.0.0.1:1/shop"
    result = CliRunner().invoke(cli, ["init", "--db", url, "-o", str(tmp_path / "c.toml")])
    assert result.exit_code == 1
    assert "s3cretpw" not in result.output and "alice:***@" in result.output
    assert not (tmp_path / "c.toml").exists()


def test_profile_shows_rows_per_person_and_groups_repeated_fanouts(tmp_path: Path) -> None:
    db = _shop_db(tmp_path / "shop.db", 30, random.Random(5))
    url = f"sqlite:///{db}"
    result = CliRunner().invoke(cli, ["profile", "--db", url, "--format", "json"])
    assert result.exit_code == 0, result.output
    view = json.loads(result.output)["rows_per_person"]
    assert (view["unit"], view["unit_proposed"], view["public"]) == ("users(id)", True,
                                                                     ["products"])
    with sqlite3.connect(db) as conn:
        per_user = [n for (n,) in conn.execute(
            "SELECT COUNT(i.iid) FROM users u LEFT JOIN orders o ON o.uid = u.id "
            "LEFT JOIN items i ON i.oid = o.oid GROUP BY u.id")]
    items = next(c for c in view["per_person"] if c["table"] == "items")
    assert (items["max"], items["p99"], items["persons"]) == (max(per_user),
                                                              _nearest_rank(per_user), 30)
    text = CliRunner().invoke(cli, ["profile", "--db", url, "--unit", "users"]).output
    assert "unit users(id) (given)" in text
    assert re.search(r"items\s+items\(oid\) → orders\(oid\); orders\(uid\) → users\(id\)\s+"
                     rf"{max(per_user)}\s+{_nearest_rank(per_user)}\s+30", text)
    # the key's fan-outs share one row: users id -> name, country
    assert re.search(r"users\s+id -> name, country\s+1\s+30\s+<=1", text)


def _inserts(db: Path) -> str:
    """The rows of the SQLite shop as INSERT statements, referenced tables first."""
    out = []
    with sqlite3.connect(db) as conn:
        for table in ("users", "products", "orders", "items"):
            for row in conn.execute(f"SELECT * FROM {table}"):
                values = ", ".join("NULL" if v is None else repr(v) for v in row)
                out.append(f"INSERT INTO {table} VALUES ({values});")
    return "\n".join(out)


def test_init_on_postgresql_gives_the_same_file_and_results(
        tmp_path: Path, pg_server: PgServer) -> None:
    import sqlalchemy as sa

    db = _shop_db(tmp_path / "shop.db", 25, random.Random(13))
    engine = sa.create_engine(pg_server.url(scheme="postgresql+psycopg"),
                              isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text("DROP DATABASE IF EXISTS init_shop"))
        conn.execute(sa.text("CREATE DATABASE init_shop"))
    engine.dispose()
    url = pg_server.url("init_shop")
    load_sql_file(url, text=(SHOP / "schema.sql").read_text() + _inserts(db))
    folders = {}
    for name, target in (("pg", url), ("lite", f"sqlite:///{db}")):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        result = CliRunner().invoke(cli, ["init", "--db", target, "-o",
                                          str(folders[name] / "cqsens.toml")])
        assert result.exit_code == 0, result.output
        assert pg_server.password not in result.output
    pg_text = (folders["pg"] / "cqsens.toml").read_text()
    assert pg_server.password not in pg_text and ":***@" in pg_text
    assert pg_server.password not in (folders["pg"] / "schema.sql").read_text()
    lite_text = (folders["lite"] / "cqsens.toml").read_text()
    assert COMMENTED_CD.findall(pg_text) == COMMENTED_CD.findall(lite_text)
    assert tomllib.loads(pg_text) == tomllib.loads(lite_text)
    results = []
    for folder in folders.values():
        config = folder / "uncommented.toml"
        config.write_text(COMMENTED_CD.sub(r"  \1", (folder / "cqsens.toml").read_text()))
        results.append(_report(config, folder / "r.json"))
    assert results[0] == results[1] == _report(SHOP / "cqsens.toml", tmp_path / "hand.json")


def test_too_many_chains_is_a_note_not_a_failure(tmp_path: Path) -> None:
    """Layers of two tables, each referencing both tables of the next layer: 2^7 chains
    lead from the top to the unit, more than cqsens follows; init still writes the file
    and says which table it could not measure."""
    ddl = ["CREATE TABLE person (id INTEGER PRIMARY KEY);"]
    below = ["person", "person"]
    for layer in range(8):
        names = [f"l{layer}a", f"l{layer}b"]
        for name in names:
            refs = ", ".join(f"r{n} INT NOT NULL REFERENCES {t}(id)"
                             for n, t in enumerate(dict.fromkeys(below)))
            ddl.append(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, {refs});")
        below = names
    db = tmp_path / "deep.db"
    with sqlite3.connect(db) as conn:
        conn.executescript("\n".join(ddl))
    code, output = _init(tmp_path, db)
    assert code == 0, output
    text = (tmp_path / "cqsens.toml").read_text()
    assert tomllib.loads(text)["unit"] == "person"
    assert "# NOTE: l7a: not measured: more than 64 chains" in text
