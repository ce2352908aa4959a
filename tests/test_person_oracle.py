"""Brute force against the foreign-key rule and the privacy unit (``--unit users``).

Random schemas around ``users`` (orders, items, a keyless ``logins`` bag,
``messages`` with two keys into users, a ``products`` table no person owns,
nullable foreign keys), random dependencies, random databases satisfying every
constraint, random COUNT / SUM / GROUP BY queries, and the neighbours of each
database evaluated in SQLite (tests/person_oracle.py):

* ``unit="users"``: every person removed (cascade), random persons added, every
  person replaced by random others (substitute);
* row level with foreign keys: every single-row add / remove and random
  single-row replacements that keep keys, foreign keys, CHECKs and dependencies.

The observed ℓ1 / ℓ2 change must never exceed ``analyze(...).l1`` / ``.l2``.
Every reported lower bound comes with witness databases that keep the foreign
keys and a difference that re-evaluates to it.
"""

from __future__ import annotations

import math
import os
import random
from fractions import Fraction

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from cqsens.errors import InputError
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.pipeline import analyze
from cqsens.witness.aggregate import AggregateWitness, released_change, released_values
from cqsens.witness.evaluate import count_answers
from cqsens.witness.person import PersonWitness, cascade
from cqsens.witness.references import references_hold
from tests.person_oracle import (
    DB,
    Evaluator,
    Move,
    Query,
    World,
    change,
    closure,
    person_moves,
    plus,
    random_database,
    random_query,
    random_world,
    row_moves,
    valid,
    violations,
    without,
)

PROFILE = os.getenv("HYPOTHESIS_PROFILE", "dev")
#: (schema, query) pairs per property: ci 60 (with 3 databases each, 180 random databases per
#: property, every person and row move of each checked), dev 200, deep 2,000.
EXAMPLES = {"ci": 60, "dev": 200, "deep": 2000}.get(PROFILE, 150)
DATABASES = 3  # databases per (schema, query)
TRIALS = {"analyses": 0, "rejected": 0, "databases": 0, "moves": 0, "lower": 0,
          "unit_witnesses": 0}


def _analysis(world: World, query: Query, **options: object):  # type: ignore[no-untyped-def]
    if options.get("unit") and "products" in world.names:
        # no person owns products: with a unit it must be declared public (rule ownership),
        # which is what the oracle's person moves assume (they never change it)
        options["public"] = ["products"]
    try:
        a = analyze(query.sql, schema=world.ddl(), cds=world.cd_texts(), **options)  # type: ignore[arg-type]
    except InputError as error:  # a construct cqsens rejects with a reason: nothing to check
        TRIALS["rejected"] += 1
        note(f"rejected: {error}")
        return None
    TRIALS["analyses"] += 1
    return a


def _le(observed: float, bound: object) -> bool:
    if bound == math.inf:
        return True
    return observed <= float(bound) * (1 + 1e-12) + 1e-9  # type: ignore[arg-type]


def _check_moves(world: World, query: Query, db: DB, moves: list[Move], l1: object,
                 l2: object, what: str) -> None:
    ev = Evaluator(world, db, query.sql, query.grouped)
    try:
        TRIALS["databases"] += 1
        for removed, added, label in moves:
            after = ev.released(removed, added)
            o1, o2 = change(ev.base, after)
            TRIALS["moves"] += 1
            if not (_le(o1, l1) and _le(o2, l2)):
                raise AssertionError(
                    f"{what}: observed ℓ1 {o1} ℓ2 {o2} > bound ℓ1 {l1} ℓ2 {l2}\n"
                    f"schema:\n{world.ddl()}\ncds: {world.cd_texts()}\nquery: {query.sql}\n"
                    f"db: {db}\nmove: {label}\nbefore {ev.base}\nafter {after}")
    finally:
        ev.close()


def _scenario(data: st.DataObject) -> tuple[random.Random, World, Query]:
    rng = data.draw(st.randoms(use_true_random=False))
    world = random_world(rng)
    query = random_query(rng, world)
    note(f"schema:\n{world.ddl()}\ncds: {world.cd_texts()}\nquery: {query.sql}")
    return rng, world, query


def _databases(rng: random.Random, world: World) -> list[DB]:
    out = []
    for _ in range(DATABASES):
        db = random_database(rng, world)
        assert valid(world, db), violations(world, db)
        out.append(db)
    return out


# ---------------------------------------------------------------------------------------
# person level


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_person_add_remove_is_sound(data: st.DataObject) -> None:
    rng, world, query = _scenario(data)
    a = _analysis(world, query, unit="users", prove_lower=False)
    if a is None:
        return
    for db in _databases(rng, world):
        moves = list(person_moves(rng, world, db, substitute=False))
        _check_moves(world, query, db, moves, a.l1, a.l2, "person add/remove")
        if not query.grouped and len(a.aggregates) == 1:
            assert a.upper == a.l1 or a.aggregates[0].kind != "count"


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_person_substitute_is_sound(data: st.DataObject) -> None:
    rng, world, query = _scenario(data)
    a = _analysis(world, query, unit="users", neighbor="substitute", prove_lower=False)
    if a is None:
        return
    for db in _databases(rng, world):
        moves = list(person_moves(rng, world, db, substitute=True))
        _check_moves(world, query, db, moves, a.l1, a.l2, "person substitute")


# ---------------------------------------------------------------------------------------
# row level, with foreign keys


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_row_add_remove_with_foreign_keys_is_sound(data: st.DataObject) -> None:
    rng, world, query = _scenario(data)
    a = _analysis(world, query, prove_lower=False)
    if a is None:
        return
    for db in _databases(rng, world):
        moves = list(row_moves(rng, world, db, substitute=False))
        _check_moves(world, query, db, moves, a.l1, a.l2, "row add/remove")


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_row_substitute_with_foreign_keys_is_sound(data: st.DataObject) -> None:
    rng, world, query = _scenario(data)
    a = _analysis(world, query, neighbor="substitute", prove_lower=False)
    if a is None:
        return
    for db in _databases(rng, world):
        moves = list(row_moves(rng, world, db, substitute=True))
        _check_moves(world, query, db, moves, a.l1, a.l2, "row substitute")


# ---------------------------------------------------------------------------------------
# lower bounds: witnesses keep the foreign keys and re-evaluate to the claimed change


OWNED = frozenset({"users", "orders", "items", "logins", "messages"})  # tables in the closure


def _check_witness(world: World, query: Query, a, unit: bool) -> None:  # type: ignore[no-untyped-def]
    if a.lower is None:
        return
    TRIALS["lower"] += 1
    w = a.witness
    assert a.lower <= a.upper, (a.lower, a.upper)
    if unit:
        # a person witness: A and A with one whole person (the unit row and its cascade)
        assert w is None or isinstance(w, PersonWitness), type(w)
    if w is None:  # nothing can change the released value: lower = upper = 0
        assert a.lower == a.l1 == 0
        return
    schema = schema_from_ddl(world.ddl())
    if isinstance(w, PersonWitness):
        assert w.relation.lower() in OWNED and w.added[0] == (w.relation, w.row)
        assert references_hold(w.database, schema) and references_hold(w.after, schema)
        assert sorted(cascade(w.after, w.relation, w.row, schema)) == sorted(w.added)
        if len(a.query_obj.aggregates) == 1 and a.query_obj.aggregate == "count" \
                and not a.query_obj.group_by:
            assert count_answers(a.query_obj, w.after) - count_answers(
                a.query_obj, w.database) == a.lower
        return
    if isinstance(w, AggregateWitness):
        before, after = w.database, w.after
        assert references_hold(before, schema), before
        assert references_hold(after, schema), after
        rb = released_values(a.query_obj, before, w.query_sql)
        ra = released_values(a.query_obj, after, w.query_sql)
        assert rb is not None and ra is not None
        moved = released_change(a.query_obj, rb, ra)
        assert moved is not None and moved[0] == w.l1
        assert Fraction(w.l1) <= Fraction(a.l1) if a.l1 != math.inf else True
        return
    full = w.database.with_row(w.relation, w.row)
    assert references_hold(w.database, schema), w.database
    assert references_hold(full, schema), full
    if not w.unbounded:
        assert count_answers(a.query_obj, full) - count_answers(a.query_obj, w.database) \
            == w.difference == a.lower


@settings(max_examples=max(8, EXAMPLES // 3))
@given(data=st.data(), unit=st.booleans(), neighbor=st.sampled_from(["add-remove",
                                                                      "substitute"]))
def test_witnesses_keep_foreign_keys(data: st.DataObject, unit: bool, neighbor: str) -> None:
    _, world, query = _scenario(data)
    a = _analysis(world, query, unit="users" if unit else None, neighbor=neighbor,
                  witness_time=0.1)
    if a is None:
        return
    _check_witness(world, query, a, unit)


def test_report_trial_counts() -> None:
    """Prints the number of trials (run with -s to see it)."""
    print(f"\nperson/foreign-key oracle trials: {TRIALS}")
    assert all(v >= 0 for v in TRIALS.values())


# ---------------------------------------------------------------------------------------
# fixed reproducers with known exact answers

SHOP = """
CREATE TABLE users (id INT PRIMARY KEY, age INT CHECK (age BETWEEN 0 AND 2));
CREATE TABLE orders (oid INT PRIMARY KEY, uid INT NOT NULL REFERENCES users(id),
                     amt INT CHECK (amt BETWEEN 0 AND 3));
CREATE TABLE items (iid INT PRIMARY KEY, oid INT NOT NULL REFERENCES orders(oid));
"""
SHOP_CDS = ["orders[uid->oid]<=20", "items[oid->iid]<=5"]


def _shop_world() -> World:
    from tests.person_oracle import CD, Column, ForeignKey, Table

    return World((
        Table("users", (Column("id"), Column("age", 0, 2, True, True)), "id"),
        Table("orders", (Column("oid", 1, 10**6), Column("uid"),
                         Column("amt", 0, 3, True, True)), "oid",
              (ForeignKey("uid", "users", "id"),)),
        Table("items", (Column("iid", 1, 10**6), Column("oid", 1, 10**6)), "iid",
              (ForeignKey("oid", "orders", "oid"),)),
    ), (CD("orders", "uid", "oid", 20), CD("items", "oid", "iid", 5)))


def _full_person(uid: int, base: int) -> dict[str, list[tuple[object, ...]]]:
    """A person with 20 orders of 5 items each."""
    orders = [(base + o, uid, 3) for o in range(20)]
    items = [(base * 10 + 5 * o + i, base + o) for o in range(20) for i in range(5)]
    return {"users": [(uid, 1)], "orders": orders, "items": items}


def _person_change(sql: str, grouped: bool = False) -> float:
    """The exact change of ``sql`` when a full person (20 orders × 5 items) is removed."""
    world = _shop_world()
    db: DB = {t: [] for t in world.names}
    for t, rows in _full_person(1, 1000).items():
        db[t] += rows
    db["users"].append((2, 0))
    db["orders"].append((1, 2, 1))
    assert valid(world, db), violations(world, db)
    ev = Evaluator(world, db, sql, grouped)
    try:
        return change(ev.base, ev.released(closure(world, db, 1), {}))[0]
    finally:
        ev.close()


def test_users_join_orders_per_person_is_exactly_20() -> None:
    sql = "SELECT COUNT(*) FROM users u JOIN orders o ON o.uid = u.id"
    a = analyze(sql, schema=SHOP, cds=SHOP_CDS, unit="users", prove_lower=False)
    assert a.upper == a.l1 == 20
    assert _person_change(sql) == 20
    # row level: the users atom is joined on the foreign key into it (rule foreign-keys)
    row = analyze(sql, schema=SHOP, cds=SHOP_CDS, prove_lower=False)
    assert row.upper == 1


def test_orders_self_join_per_person_is_400() -> None:
    sql = "SELECT COUNT(*) FROM orders a JOIN orders b ON a.uid = b.uid"
    a = analyze(sql, schema=SHOP, cds=SHOP_CDS, unit="users", prove_lower=False)
    assert a.upper == 400
    assert _person_change(sql) == 400


def test_items_per_person_is_100() -> None:
    sql = "SELECT COUNT(*) FROM items"
    a = analyze(sql, schema=SHOP, cds=SHOP_CDS, unit="users", prove_lower=False)
    assert a.upper == 100
    assert _person_change(sql) == 100
    sub = analyze(sql, schema=SHOP, cds=SHOP_CDS, unit="users", neighbor="substitute",
                  prove_lower=False)
    assert sub.upper >= 100


def test_sum_of_amounts_per_person() -> None:
    """20 orders of amount 3: the SUM moves by 60 when the person leaves."""
    sql = "SELECT SUM(amt) FROM orders"
    a = analyze(sql, schema=SHOP, cds=SHOP_CDS, unit="users", prove_lower=False)
    assert a.l1 == 60
    assert _person_change(sql) == 60


def test_oracle_closure_follows_chains_and_both_keys() -> None:
    """The oracle's person: the users row, its orders, their items; a message counts for
    its sender and for its receiver."""
    from tests.person_oracle import CD, Column, ForeignKey, Table

    world = World((
        Table("users", (Column("id"), Column("age", 0, 2, True, True)), "id"),
        Table("orders", (Column("oid"), Column("uid", nullable=True)), "oid",
              (ForeignKey("uid", "users", "id"),)),
        Table("items", (Column("iid"), Column("oid", nullable=True)), "iid",
              (ForeignKey("oid", "orders", "oid"),)),
        Table("messages", (Column("mid"), Column("sender"), Column("receiver")), "mid",
              (ForeignKey("sender", "users", "id"), ForeignKey("receiver", "users", "id"))),
    ), (CD("orders", "uid", "oid", 3),))
    db: DB = {"users": [(1, 0), (2, 1)], "orders": [(1, 1), (2, 2), (3, None)],
              "items": [(1, 1), (2, 3), (3, None)],
              "messages": [(1, 1, 2), (2, 2, 2)]}
    assert valid(world, db)
    assert closure(world, db, 1) == {"users": {0}, "orders": {0}, "items": {0},
                                     "messages": {0}}
    assert closure(world, db, 2) == {"users": {1}, "orders": {1}, "items": set(),
                                     "messages": {0, 1}}
    bad = {**db, "orders": [*db["orders"], (4, 1), (5, 1), (6, 1)]}
    assert violations(world, bad) == ["orders[uid->oid]<=3"]
    assert not valid(world, {**db, "items": [(9, 7)]})


@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
def test_oracle_finds_the_person_change_of_a_fixed_database(neighbor: str) -> None:
    """The neighbour enumeration reaches the extreme: removing the full person changes
    the item count by 100; a substitution by an empty person does as well."""
    world = _shop_world()
    db: DB = {t: [] for t in world.names}
    for t, rows in _full_person(1, 1000).items():
        db[t] += rows
    rng = random.Random(0)
    moves = list(person_moves(rng, world, db, substitute=neighbor == "substitute"))
    ev = Evaluator(world, db, "SELECT COUNT(*) FROM items", False)
    try:
        best = max(change(ev.base, ev.released(r, a))[0] for r, a, _ in moves)
    finally:
        ev.close()
    assert best >= 80  # a random other person has at most 100 items, often far fewer


def test_foreign_key_cycle_exhaustively() -> None:
    """A(id, b → B), B(id, a → A), nullable: a pair joined both ways can never be made by
    adding or removing one row (both databases keep the keys), so add/remove is 0; a
    substitution can close the pair, so it is 1.  Every database over ids {1, 2} and every
    move, exhaustively."""
    import itertools

    from tests.person_oracle import Column, ForeignKey, Table

    world = World((
        Table("A", (Column("id"), Column("b", nullable=True)), "id", (ForeignKey("b", "B", "id"),)),
        Table("B", (Column("id"), Column("a", nullable=True)), "id", (ForeignKey("a", "A", "id"),)),
    ))
    sql = "SELECT COUNT(*) FROM A x, B y WHERE x.b = y.id AND y.a = x.id"
    bounds = {n: analyze(sql, schema=world.ddl(), neighbor=n, prove_lower=False).upper
              for n in ("add-remove", "substitute")}
    assert bounds == {"add-remove": 0, "substitute": 1}
    rows = [(i, v) for i in (1, 2) for v in (None, 1, 2)]
    tables = [c for n in range(3) for c in itertools.combinations(rows, n)
              if len({r[0] for r in c}) == n]  # the key id: at most one row per id
    observed = {"add-remove": 0.0, "substitute": 0.0}
    for a_rows, b_rows in itertools.product(tables, repeat=2):
        db: DB = {"A": list(a_rows), "B": list(b_rows)}
        if not valid(world, db):
            continue
        ev = Evaluator(world, db, sql, False)
        try:
            for t in ("A", "B"):
                for i in range(len(db[t])):
                    if valid(world, without(db, {t: {i}})):
                        moved = change(ev.base, ev.released({t: {i}}, {}))[0]
                        observed["add-remove"] = max(observed["add-remove"], moved)
                    for row in rows:
                        after = plus(without(db, {t: {i}}), {t: [row]})
                        if row != db[t][i] and valid(world, after):
                            moved = change(ev.base, ev.released({t: {i}}, {t: [row]}))[0]
                            observed["substitute"] = max(observed["substitute"], moved)
                for row in rows:
                    if valid(world, plus(db, {t: [row]})):
                        moved = change(ev.base, ev.released({}, {t: [row]}))[0]
                        observed["add-remove"] = max(observed["add-remove"], moved)
        finally:
            ev.close()
    assert observed == {"add-remove": 0, "substitute": 1}


# ---------------------------------------------------------------------------------------
# bugs found by this oracle, kept as regression tests


def test_unit_lower_bound_from_a_table_no_person_owns() -> None:
    """products is not referenced by and does not reference users: with the unit it must be
    declared public (rule ownership), and then one person changes COUNT(*) FROM products by
    0; the lower bound is 0 too (it once was 1, from a row-level witness adding a products
    row, which is no person)."""
    ddl = ("CREATE TABLE users (id INT PRIMARY KEY);"
           "CREATE TABLE products (pid INT PRIMARY KEY, price INT CHECK (price BETWEEN 0 AND 3));")
    with pytest.raises(InputError, match="table products is private"):
        analyze("SELECT COUNT(*) FROM products", schema=ddl, unit="users")
    a = analyze("SELECT COUNT(*) FROM products", schema=ddl, unit="users", public=["products"])
    assert a.upper == 0
    assert a.lower == 0, (a.lower, a.upper)
