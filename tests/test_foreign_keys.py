"""Foreign keys (DDL, reflection, the add/remove rule, witnesses) and the privacy unit
(docs/rules.md, rules foreign-keys and privacy-unit)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

import cqsens
from cqsens.cli.main import cli
from cqsens.db.reflect import reflect_schema
from cqsens.engine.count import atom_derivation
from cqsens.engine.rules import Rule
from cqsens.errors import InputError, SchemaError
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.witness.certificate import is_witness
from cqsens.witness.references import references_hold
from cqsens.witness.writers import to_sql_script

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "examples" / "shop"

DDL = """
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE orders (oid INTEGER PRIMARY KEY, uid INTEGER NOT NULL REFERENCES users(id),
                     total INTEGER CHECK (total BETWEEN 0 AND 100));
CREATE TABLE items (iid INTEGER PRIMARY KEY, oid INTEGER NOT NULL,
                    CONSTRAINT fk_order FOREIGN KEY (oid) REFERENCES orders);
"""
CDS = ["orders[uid->oid]<=20", "items[oid->iid]<=5"]
JOIN = "SELECT COUNT(*) FROM users u JOIN orders o ON o.uid = u.id"


def test_ddl_reads_column_and_table_foreign_keys() -> None:
    schema = schema_from_ddl(DDL)
    shown = [r.describe_foreign_key(fk, t) for r, fk, t in schema.foreign_keys()]
    assert shown == ["orders(uid) → users(id)", "items(oid) → orders(oid)"]


@pytest.mark.parametrize(("ddl", "message"), [
    ("CREATE TABLE a (x INT REFERENCES b(y))", "schema does not declare"),
    ("CREATE TABLE b (y INT); CREATE TABLE a (x INT REFERENCES b(y))",
     "not a PRIMARY KEY or UNIQUE"),
    ("CREATE TABLE b (y INT PRIMARY KEY); CREATE TABLE a (x INT, FOREIGN KEY (z) REFERENCES b)",
     "names column 'z'"),
    ("CREATE TABLE b (y INT PRIMARY KEY); CREATE TABLE a (x INT REFERENCES b(w))",
     "references column 'w'"),
    ("CREATE TABLE b (y INT); CREATE TABLE a (x INT REFERENCES b)", "has no primary key"),
])
def test_bad_foreign_keys_name_the_fault(ddl: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message) as err:
        schema_from_ddl(ddl, source="s.sql")
    assert str(err.value).startswith("s.sql:1:")


def test_reflection_reads_foreign_keys(tmp_path: Path) -> None:
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(DDL)
    schema = reflect_schema(f"sqlite:///{db}")
    shown = sorted(r.describe_foreign_key(fk, t) for r, fk, t in schema.foreign_keys())
    assert shown == ["items(oid) → orders(oid)", "orders(uid) → users(id)"]


def test_add_remove_row_bound_uses_the_foreign_key() -> None:
    add = cqsens.analyze(JOIN, schema=DDL, cds=CDS)
    assert (add.upper, add.lower) == (1, 1)
    rules = [atom_derivation(ab, add.neighbourhood)
             for relation in add.bound.relations for ab in relation.atoms]
    assert any(d.rule is Rule.FOREIGN_KEYS and d.value == 0 for d in rules)
    without_fk = cqsens.analyze(JOIN, schema=DDL.replace("REFERENCES users(id)", ""), cds=CDS)
    assert without_fk.upper == 20
    # a substitution may keep a referenced row's key and change the rest: not used; the
    # join reads users only through the NOT NULL key, so it counts orders (rule
    # foreign-key-joins), which a change keeps
    sub = cqsens.analyze(JOIN, schema=DDL, cds=CDS, neighbor="substitute")
    assert (sub.upper, sub.lower) == (0, 0)
    assert any("foreign-key-joins" in n for n in sub.notes)
    named = JOIN + " WHERE u.name = 'x'"  # a changed name moves the user's 20 orders
    assert cqsens.analyze(named, schema=DDL, cds=CDS, neighbor="substitute").upper == 20


def test_row_witness_holds_the_referenced_rows_and_runs_with_foreign_keys_on() -> None:
    a = cqsens.analyze("SELECT SUM(total) FROM orders", schema=DDL)
    assert a.witness is not None and (a.upper, a.lower) == (100, 100)
    for db in (a.witness.database, a.witness.after):  # type: ignore[attr-defined]
        assert references_hold(db, schema_from_ddl(DDL))
    script = to_sql_script(a.witness)
    assert 'FOREIGN KEY ("uid") REFERENCES "users" ("id")' in script
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript(script)  # raises on a broken foreign key
    conn.close()


@pytest.mark.parametrize(("query", "upper"), [
    (JOIN, 20),
    ("SELECT COUNT(*) FROM orders o1 JOIN orders o2 ON o1.uid = o2.uid", 400),
    ("SELECT COUNT(*) FROM items", 100),
    ("SELECT SUM(total) FROM orders", 2000),
    ("SELECT COUNT(*) FROM users", 1),
])
def test_unit_bound_follows_the_chains_of_foreign_keys(query: str, upper: int) -> None:
    a = cqsens.analyze(query, schema=DDL, cds=CDS, unit="users")
    assert a.upper == upper
    assert a.to_dict()["unit"] == "users(id)"
    assert a.lower is not None and 0 < a.lower <= upper


def test_unit_witness_adds_one_whole_person() -> None:
    a = cqsens.analyze(JOIN, schema=DDL, cds=CDS, unit="users")
    w = a.witness
    assert w is not None and (a.upper, a.lower) == (20, 20)
    added = w.added  # type: ignore[attr-defined]
    assert added[0][0] == "users" and len(added) == 21
    schema = schema_from_ddl(DDL)
    assert references_hold(w.database, schema) and references_hold(w.after, schema)  # type: ignore[attr-defined]
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript(to_sql_script(w))  # raises on a broken key or foreign key
    assert conn.execute(JOIN).fetchone()[0] == 20
    conn.close()


def test_unit_advice_names_rows_per_person() -> None:
    a = cqsens.analyze("SELECT COUNT(*) FROM items", schema=DDL, unit="users")
    assert a.upper == float("inf")
    assert "orders[uid->oid]<=3" in a.suggestion[0] and "items[oid->iid]<=3" in a.suggestion[0]


@pytest.mark.parametrize(("unit", "schema", "message"), [
    ("users", None, "needs the schema"),
    ("people", DDL, "does not declare"),
    ("users.nope", DDL, "does not have"),
    ("orders.total", DDL, "not a PRIMARY KEY or UNIQUE"),
])
def test_bad_units_are_refused(unit: str, schema: str | None, message: str) -> None:
    with pytest.raises(InputError, match=message):
        cqsens.analyze(JOIN if schema else "SELECT COUNT(*) FROM t", schema=schema, unit=unit)


def test_cyclic_unit_and_contributions_are_refused() -> None:
    cyclic = DDL + "CREATE TABLE staff (sid INT PRIMARY KEY, boss INT REFERENCES staff(sid), " \
                   "uid INT REFERENCES users(id));"
    with pytest.raises(InputError, match="cycle"):
        cqsens.analyze("SELECT COUNT(*) FROM staff", schema=cyclic, unit="users")
    with pytest.raises(InputError, match="--contributions"):
        cqsens.analyze(JOIN, schema=DDL, unit="users", contributions=3)


def test_dependencies_are_echoed_by_name() -> None:
    a = cqsens.analyze(JOIN, schema=DDL, cds=["orders[2->1]<=20"])
    assert "orders[uid->oid]<=20" in a.to_dict()["dependencies"]


def test_cli_reads_the_unit_from_the_metadata_file() -> None:
    result = CliRunner().invoke(cli, ["analyze", str(SHOP / "orders_per_user.sql"),
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.output)
    d = d[0] if isinstance(d, list) else d
    assert d["unit"] == "users(id)" and d["sensitivity"]["upper"] == 20
    assert d["sensitivity"]["lower"] == 20


def test_is_witness_checks_keys_foreign_keys_and_the_person() -> None:
    schema = schema_from_ddl(DDL)
    person = cqsens.analyze(JOIN, schema=DDL, cds=CDS, unit="users")
    row = cqsens.analyze("SELECT SUM(total) FROM orders", schema=DDL)
    count = cqsens.analyze("SELECT COUNT(*) FROM orders", schema=DDL)
    for a in (person, row, count):
        assert a.witness is not None
        assert is_witness(a.query_obj, a.sigma, a.witness, schema=schema)
    # A without the user its orders reference breaks the foreign key
    w = count.witness
    assert w is not None
    broken = replace(w, database=w.database.without_row(
        "users", next(iter(w.database.rows["users"]))))
    assert not is_witness(count.query_obj, count.sigma, broken, schema=schema)
    assert is_witness(count.query_obj, count.sigma, broken)  # Σ alone does not see it
    # one order fewer in the person: no longer one whole person
    p = person.witness
    assert p is not None
    partial = replace(p, added=p.added[:-1])  # type: ignore[attr-defined]
    assert not is_witness(person.query_obj, person.sigma, partial, schema=schema)


def test_foreign_keys_are_not_used_for_several_rows_per_person() -> None:
    """Two rows that reference each other can only be added together: one row changes the
    count by 0, the pair by 1 (evaluated in SQLite), so k = 2 must not use the rule."""
    ddl = ("CREATE TABLE A (id INT PRIMARY KEY, b INT NOT NULL REFERENCES B(id));"
           "CREATE TABLE B (id INT PRIMARY KEY, a INT NOT NULL REFERENCES A(id));")
    query = "SELECT COUNT(*) FROM A JOIN B ON A.b = B.id AND B.a = A.id"
    conn = sqlite3.connect(":memory:")
    conn.executescript(ddl)
    before = conn.execute(query).fetchone()[0]
    conn.executescript("INSERT INTO A VALUES (1, 1); INSERT INTO B VALUES (1, 1);")
    pair = conn.execute(query).fetchone()[0] - before
    conn.close()
    assert pair == 1
    assert cqsens.analyze(query, schema=ddl, prove_lower=False).upper == 0
    assert cqsens.analyze(query, schema=ddl, contributions=2, prove_lower=False).upper >= pair
