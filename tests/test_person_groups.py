"""Person-local groups (issue 23, TPC-H q18): with a privacy unit, ``x [NOT] IN (SELECT g FROM …
GROUP BY g HAVING …)`` whose groups read only the rows of the owned row ``x`` names is kept out
of the analysed query.  Checked against brute force (tests/person_oracle.py): random small
users → orders → items databases satisfying every constraint, every person removed with all
their rows and random persons added, each neighbour evaluated in SQLite."""

from __future__ import annotations

import json
import math
import random
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens import analyze
from cqsens.cli.main import cli
from cqsens.errors import InputError
from tests.person_oracle import (
    CD,
    Column,
    Evaluator,
    ForeignKey,
    Table,
    World,
    change,
    person_moves,
    random_database,
)


def _world(*, nullable_oid: bool = False) -> World:
    users = Table("users", (Column("id"), Column("age", 0, 2, True)), "id")
    orders = Table("orders", (Column("oid"), Column("uid"), Column("amt", 0, 3, True)), "oid",
                   (ForeignKey("uid", "users", "id"),))
    items = Table("items", (Column("iid"), Column("oid", nullable=nullable_oid),
                            Column("qty", 1, 2, True)), "iid",
                  (ForeignKey("oid", "orders", "oid"),))
    return World((users, orders, items),
                 (CD("orders", "uid", "oid", 2), CD("items", "oid", "iid", 3)))


WORLD = _world()

# (sql, number of released aggregates per row, grouped)
LOCAL = [
    # TPC-H q18's shape: orders whose lines add up to more than 3, with their lines
    ("SELECT u.id, o.oid, SUM(i.qty) FROM users u, orders o, items i WHERE o.oid IN "
     "(SELECT oid FROM items GROUP BY oid HAVING sum(qty) > 3) AND u.id = o.uid "
     "AND o.oid = i.oid GROUP BY u.id, o.oid", 1, True),
    # NOT IN, the outer column a foreign key of another table than the subquery's
    ("SELECT COUNT(*) FROM orders o WHERE o.oid NOT IN "
     "(SELECT i.oid FROM items i GROUP BY i.oid HAVING count(*) >= 2)", 1, False),
    # a join inside the subquery, tied to the grouped column
    ("SELECT SUM(o.amt) FROM orders o WHERE o.oid IN (SELECT i.oid FROM items i "
     "JOIN orders p ON p.oid = i.oid WHERE p.amt >= 1 GROUP BY i.oid HAVING sum(i.qty) >= 3)",
     1, False),
    # the outer rows are items: the group of their own order
    ("SELECT o.amt, COUNT(*) FROM items i, orders o WHERE i.oid = o.oid AND i.oid IN "
     "(SELECT j.oid FROM items j GROUP BY j.oid HAVING max(j.qty) = 2 AND count(*) > 1) "
     "GROUP BY o.amt", 1, True),
    # grouped by the person's own key
    ("SELECT COUNT(*) FROM orders o WHERE o.uid IN "
     "(SELECT p.uid FROM orders p GROUP BY p.uid HAVING sum(p.amt) >= 3)", 1, False),
    # no grouping: NOT IN over the lines of the order
    ("SELECT COUNT(*) FROM orders o WHERE o.oid NOT IN (SELECT i.oid FROM items i "
     "WHERE i.qty = 2)", 1, False),
]


class _Evaluator(Evaluator):
    def __init__(self, sql: str, width: int, grouped: bool, db: dict[str, list[tuple[object, ...]]]
                 ) -> None:
        self._width = width
        super().__init__(WORLD, db, sql, grouped)

    @property
    def width(self) -> int:
        return self._width


@pytest.mark.parametrize(("sql", "width", "grouped"), LOCAL)
def test_person_local_groups_hold_against_brute_force(sql: str, width: int,
                                                      grouped: bool) -> None:
    a = analyze(sql, schema=WORLD.ddl(), cds=WORLD.cd_texts(), unit="users", prove_lower=False)
    assert any("rule person-local" in n for n in a.notes), a.notes
    assert math.isfinite(float(a.l1))
    rng = random.Random(sql)
    worst, changed = 0.0, 0
    for _ in range(120):
        db = random_database(rng, WORLD, rows=4)
        ev = _Evaluator(sql, width, grouped, db)
        try:
            for removed, added, _what in person_moves(rng, WORLD, db, substitute=False,
                                                      attempts=6):
                l1, l2 = change(ev.base, ev.released(removed, added))
                assert l1 <= float(a.l1) + 1e-9 and l2 <= float(a.l2) + 1e-9, (_what, l1, a.l1)
                worst = max(worst, l1)
                changed += l1 > 0
        finally:
            ev.close()
    assert changed > 0 and worst > 0  # the brute force exercised the condition


def _filtered_without(sql: str) -> bool:
    """Whether the condition changes the answer somewhere: else a test of it proves little."""
    rng = random.Random(0)
    plain = sql.split(" WHERE ")[0]
    for _ in range(50):
        ev = _Evaluator(sql, 1, False, random_database(rng, WORLD, rows=4))
        try:
            if ev.conn.execute(sql).fetchall() != ev.conn.execute(plain).fetchall():
                return True
        finally:
            ev.close()
    return False


@pytest.mark.parametrize("sql", [s for s, _, g in LOCAL if not g])
def test_the_condition_filters_for_real(sql: str) -> None:
    assert _filtered_without(sql)


REFUSED = [
    # grouped by a column that names no owned row: a group mixes persons
    "SELECT COUNT(*) FROM items i WHERE i.qty IN "
    "(SELECT j.qty FROM items j GROUP BY j.qty HAVING count(*) > 2)",
    # HAVING compares a group with all the others
    "SELECT COUNT(*) FROM items i WHERE i.oid IN (SELECT j.oid FROM items j GROUP BY j.oid "
    "HAVING sum(j.qty) > (SELECT avg(k.qty) FROM items k))",
    # the outer column is not the grouped key (an item key against order keys)
    "SELECT COUNT(*) FROM items i WHERE i.iid IN "
    "(SELECT j.oid FROM items j GROUP BY j.oid HAVING count(*) > 1)",
    # a table of the subquery not tied to the group: other persons' items
    "SELECT COUNT(*) FROM orders o WHERE o.oid IN (SELECT i.oid FROM items i, items j "
    "WHERE j.qty = i.qty GROUP BY i.oid HAVING count(*) > 3)",
    # LIMIT picks groups by comparing them
    "SELECT COUNT(*) FROM orders o WHERE o.oid IN (SELECT i.oid FROM items i GROUP BY i.oid "
    "ORDER BY sum(i.qty) DESC LIMIT 1)",
    # HAVING without GROUP BY: one group of everybody's rows
    "SELECT COUNT(*) FROM orders o WHERE o.oid IN (SELECT max(i.oid) FROM items i "
    "HAVING count(*) > 3)",
    # grouped by the order key but not selecting it
    "SELECT COUNT(*) FROM orders o WHERE o.oid IN (SELECT max(i.iid) FROM items i "
    "GROUP BY i.oid)",
]


@pytest.mark.parametrize("sql", REFUSED)
def test_groups_that_mix_persons_are_refused(sql: str) -> None:
    with pytest.raises(InputError):
        analyze(sql, schema=WORLD.ddl(), cds=WORLD.cd_texts(), unit="users", prove_lower=False)


def test_a_group_mixing_persons_changes_other_persons_rows() -> None:
    """Why the first refusal is needed: removing one person flips other persons' items."""
    sql = REFUSED[0]
    rng = random.Random(1)
    for _ in range(300):
        db = random_database(rng, WORLD, rows=4)
        ev = _Evaluator(sql, 1, False, db)
        try:
            plain = _Evaluator(sql.split(" WHERE ")[0], 1, False, db)
            for removed, added, _what in person_moves(rng, WORLD, db, substitute=False,
                                                      attempts=2):
                cond = change(ev.base, ev.released(removed, added))[0]
                rows = change(plain.base, plain.released(removed, added))[0]
                if cond > rows:  # more answers changed than the person's own
                    plain.close()
                    return
            plain.close()
        finally:
            ev.close()
    pytest.fail("no neighbour where the condition flips other persons' rows")


def test_a_nullable_foreign_key_is_refused() -> None:
    """items.oid may be NULL: ``NOT IN`` meets a NULL group key, which no person owns."""
    world = _world(nullable_oid=True)
    with pytest.raises(InputError):
        analyze("SELECT COUNT(*) FROM orders o WHERE o.oid NOT IN (SELECT i.oid FROM items i "
                "GROUP BY i.oid HAVING count(*) >= 2)", schema=world.ddl(),
                cds=world.cd_texts(), unit="users", prove_lower=False)


def test_without_a_unit_the_form_is_refused() -> None:
    with pytest.raises(InputError):
        analyze(LOCAL[1][0], schema=WORLD.ddl(), cds=WORLD.cd_texts(), prove_lower=False)


# ------------------------------------------------------------------ release, noise off


def _released_rows(doc: dict[str, object]) -> list[list[object]]:
    groups = doc["groups"]
    assert isinstance(groups, list)
    out = []
    for g in groups:
        values = g.get("values") or [{"value": g["value"]}]
        out.append([*g["group"].values(), *(v["value"] for v in values)])
    return out


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize(("sql", "width", "grouped"), LOCAL)
def test_the_release_with_the_noise_off_is_the_statement_as_written(
        tmp_path: Path, noiseless: None, sql: str, width: int, grouped: bool,
        seed: int) -> None:
    rng = random.Random(seed)
    path, schema = tmp_path / "w.db", tmp_path / "schema.sql"
    schema.write_text(WORLD.ddl())
    for _ in range(100):  # a database where the statement answers something
        path.unlink(missing_ok=True)
        db = random_database(rng, WORLD, rows=6)
        conn = sqlite3.connect(path)
        conn.executescript(WORLD.ddl())
        for t in WORLD.tables:
            marks = ", ".join("?" for _ in t.columns)
            conn.executemany(f"INSERT INTO {t.name} VALUES ({marks})", db[t.name])
        conn.commit()
        truth = sorted([list(r) for r in conn.execute(sql).fetchall()], key=repr)
        conn.close()
        if truth and all(v not in (None, 0) for v in truth[0]):
            break
    assert truth and all(v not in (None, 0) for v in truth[0])
    args = ["release", "--sql", sql, "--schema", str(schema), "--db", f"sqlite:///{path}",
            "--unit", "users", "--epsilon", "1", "--format", "json"]
    for cd in WORLD.cd_texts():
        args += ["--cd", cd]
    if grouped:
        keys = tmp_path / "keys.csv"
        names = [c.split(".")[-1] for c in sql.split(" GROUP BY ")[-1].split(", ")]
        keys.write_text("\n".join([",".join(names), *(",".join(map(str, r[:-width]))
                                                     for r in truth)]) + "\n")
        args += ["--keys", str(keys)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.stderr
    released = sorted(_released_rows(json.loads(result.stdout)), key=repr)
    if not grouped:
        truth = [[0 if v is None else v for v in r] for r in truth]
    assert len(released) == len(truth), (released, truth)
    for got, want in zip(released, truth, strict=True):
        assert [str(v) for v in got[:-width]] == [str(v) for v in want[:-width]]
        assert all(math.isclose(float(a), float(b)) for a, b in zip(got[-width:], want[-width:],
                                                                      strict=True))
