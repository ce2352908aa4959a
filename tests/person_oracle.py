"""Brute force for foreign keys and the privacy unit, evaluated in SQLite.

Random small schemas around a unit table ``users(id PK, age)``: tables that
reference it (``orders``, ``items`` through ``orders``, a keyless bag
``logins``, ``messages`` with two keys into ``users``), sometimes a table no
person owns (``products``), nullable foreign-key columns, cardinality
dependencies (``orders[uid->oid]<=k``, ``logins[uid->*]<=k``).  Random
databases satisfying keys, foreign keys, CHECKs and the dependencies, random
COUNT / SUM / GROUP BY queries over them, and every neighbour of a database
that can be listed (or a random sample of them) evaluated for real:

* one person (a ``users`` row and every row that references it along foreign
  keys) removed, a new random person added, one person's rows replaced by
  another person's;
* one row added or removed, or one row replaced, keeping every constraint.

The largest change of the released values (ℓ1 and ℓ2 over the groups) is a
lower bound on the true sensitivity, so it must never exceed cqsens's bound.
The dependencies are checked with NULL as one more value (stricter than
cqsens needs), so every neighbour tried is one cqsens must cover.
"""

from __future__ import annotations

import functools
import math
import random
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

Row = tuple[object, ...]
DB = dict[str, list[Row]]
Released = dict[tuple[object, ...], object]

ID_POOL = tuple(range(1, 9))


@dataclass(frozen=True)
class Column:
    name: str
    low: int = 1
    high: int = 8
    check: bool = False  # CHECK (name BETWEEN low AND high) in the DDL
    nullable: bool = False


@dataclass(frozen=True)
class ForeignKey:
    column: str
    table: str
    referenced: str
    style: str = "column"  # column: REFERENCES t(c); bare: REFERENCES t; table: FOREIGN KEY


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    key: str | None  # the primary key column; None for a bag
    fks: tuple[ForeignKey, ...] = ()
    table_level_key: bool = False
    unique: tuple[str, ...] = ()  # single-column UNIQUE keys (NULLs may repeat)

    @functools.cached_property
    def _positions(self) -> dict[str, int]:
        positions: dict[str, int] = {}
        for i, c in enumerate(self.columns):
            positions.setdefault(c.name, i)
        return positions

    def index(self, column: str) -> int:
        if column not in self._positions:
            raise ValueError(f"{column!r} is not a column of {self.name}")
        return self._positions[column]

    def column(self, name: str) -> Column:
        return self.columns[self.index(name)]


@dataclass(frozen=True)
class CD:
    table: str
    column: str
    target: str  # a key column, or "*" (rows per value, copies included)
    k: int

    @property
    def text(self) -> str:
        return f"{self.table}[{self.column}->{self.target}]<={self.k}"


@dataclass(frozen=True)
class World:
    tables: tuple[Table, ...]
    cds: tuple[CD, ...] = ()
    spell: tuple[tuple[str, str], ...] = ()  # table → how the DDL spells it (case only)

    def spelled(self, name: str, rng: random.Random | None = None) -> str:
        """The DDL's spelling, or a random mix of cases (names are case-insensitive)."""
        if rng is not None and rng.random() < 0.3:
            return "".join(ch.upper() if rng.random() < 0.5 else ch for ch in name)
        return dict(self.spell).get(name, name)

    def table(self, name: str) -> Table:
        return next(t for t in self.tables if t.name == name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables)

    def cd_texts(self) -> list[str]:
        return [c.text.replace(c.table, self.spelled(c.table), 1) for c in self.cds]

    def ddl(self) -> str:
        out = []
        for t in self.tables:
            parts = []
            for c in t.columns:
                text = f"{c.name} INT"
                if c.name == t.key and not t.table_level_key:
                    text += " PRIMARY KEY"
                elif not c.nullable:
                    text += " NOT NULL"
                if c.name in t.unique:
                    text += " UNIQUE"
                if c.check:
                    text += f" CHECK ({c.name} BETWEEN {c.low} AND {c.high})"
                fk = next((f for f in t.fks if f.column == c.name and f.style != "table"), None)
                if fk is not None:
                    text += f" REFERENCES {self.spelled(fk.table)}" + (
                        f"({fk.referenced})" if fk.style == "column" else "")
                parts.append(text)
            if t.key is not None and t.table_level_key:
                parts.append(f"PRIMARY KEY ({t.key})")
            parts += [f"FOREIGN KEY ({f.column}) REFERENCES {self.spelled(f.table)} "
                      f"({f.referenced})" for f in t.fks if f.style == "table"]
            out.append(f"CREATE TABLE {self.spelled(t.name)} ({', '.join(parts)});")
        return "\n".join(out)

    def k_of(self, table: str, column: str, default: int = 3) -> int:
        return next((c.k for c in self.cds if c.table == table and c.column == column), default)


# ---------------------------------------------------------------------------------------
# schemas


def random_world(rng: random.Random) -> World:
    """2–4 tables: users plus one to three of orders / items / logins / messages / products."""
    def fk(column: str, table: str, referenced: str) -> ForeignKey:
        return ForeignKey(column, table, referenced, rng.choice(("column", "bare", "table")))

    def nullable() -> bool:
        return rng.random() < 0.4

    handle = rng.random() < 0.25  # a UNIQUE column that a foreign key may reference
    users = Table("users", (Column("id"), Column("age", 0, 2, True, nullable()),
                            *([Column("handle", nullable=nullable())] if handle else [])), "id",
                  table_level_key=rng.random() < 0.2, unique=("handle",) if handle else ())
    extra = rng.sample(["orders", "items", "logins", "messages", "products"], rng.randint(1, 3))
    if "items" in extra and "orders" not in extra:
        extra[extra.index("items")] = "orders"
    with_products = "products" in extra
    tables = [users]
    for name in ("products", "orders", "items", "logins", "messages"):
        if name not in extra:
            continue
        if name == "products":
            tables.append(Table("products", (Column("pid"), Column("price", 0, 3, True,
                                                                    nullable())), "pid"))
        elif name == "orders":
            cols = [Column("oid"), Column("uid", nullable=nullable()),
                    Column("amt", 0, 3, True, nullable())]
            fks = [fk("uid", "users", "id")]
            if with_products and rng.random() < 0.5:
                cols.append(Column("pid", nullable=nullable()))
                fks.append(fk("pid", "products", "pid"))
            if rng.random() < 0.08:  # a key into its own table (a cycle: --unit refuses it)
                cols.append(Column("parent", nullable=True))
                fks.append(fk("parent", "orders", "oid"))
            tables.append(Table("orders", tuple(cols), "oid", tuple(fks)))
        elif name == "items":
            cols = [Column("iid"), Column("oid", nullable=nullable()),
                    Column("qty", 1, 2, True, nullable())]
            fks = [fk("oid", "orders", "oid")]
            if rng.random() < 0.3:  # a second chain to the unit, straight to users
                cols.append(Column("uid", nullable=nullable()))
                fks.append(fk("uid", "users", "id"))
            tables.append(Table("items", tuple(cols), "iid", tuple(fks)))
        elif name == "logins":
            tables.append(Table("logins", (Column("uid", nullable=nullable()),
                                           Column("device", 0, 2, True, nullable())), None,
                                (fk("uid", "users", "handle" if handle and rng.random() < 0.6
                                    else "id"),)))
        else:
            tables.append(Table("messages", (Column("mid"), Column("sender", nullable=nullable()),
                                             Column("receiver", nullable=nullable())), "mid",
                                (fk("sender", "users", "id"), fk("receiver", "users", "id"))))
    cds = []
    for t in tables:
        for f in t.fks:
            if rng.random() < 0.92 and f.column != "parent":
                cds.append(CD(t.name, f.column, t.key or "*", rng.randint(1, 3)))
    spell = tuple((t.name, t.name.capitalize() if rng.random() < 0.2 else t.name)
                  for t in tables)
    return World(tuple(tables), tuple(cds), spell)


# ---------------------------------------------------------------------------------------
# constraints


def violations(world: World, db: Mapping[str, Sequence[Row]]) -> list[str]:
    """Every broken key, NOT NULL, CHECK, foreign key and dependency (NULL counts as a value
    for the dependencies: stricter than needed)."""
    out: list[str] = []
    keys: dict[str, set[object]] = {}
    for t in world.tables:
        rows = db.get(t.name, [])
        for row in rows:
            for c, v in zip(t.columns, row, strict=True):
                if v is None and (not c.nullable or c.name == t.key):
                    out.append(f"{t.name}.{c.name} NULL")
                if v is not None and c.check and not c.low <= v <= c.high:  # type: ignore[operator]
                    out.append(f"{t.name}.{c.name} CHECK")
        for key in ((t.key,) if t.key else ()) + t.unique:
            values = [r[t.index(key)] for r in rows if r[t.index(key)] is not None]
            if len(set(values)) != len(values):
                out.append(f"{t.name} key {key}")
            keys[f"{t.name}.{key}"] = set(values)
    for t in world.tables:
        for f in t.fks:
            p = t.index(f.column)
            for row in db.get(t.name, []):
                if row[p] is not None and row[p] not in keys.get(f"{f.table}.{f.referenced}",
                                                                 set()):
                    out.append(f"{t.name}.{f.column} → {f.table}: {row[p]} missing")
    for cd in world.cds:
        t = world.table(cd.table)
        p = t.index(cd.column)
        counts: dict[object, int] = {}
        for row in db.get(t.name, []):
            counts[row[p]] = counts.get(row[p], 0) + 1
        if any(n > cd.k for n in counts.values()):
            out.append(cd.text)
    return out


def valid(world: World, db: Mapping[str, Sequence[Row]]) -> bool:
    return not violations(world, db)


# ---------------------------------------------------------------------------------------
# databases and persons


def _keys(db: Mapping[str, Sequence[Row]], t: Table, column: str | None = None) -> list[object]:
    """The non-NULL values of a key column (the primary key by default)."""
    column = column or t.key
    if column is None:
        return []
    i = t.index(column)
    return [r[i] for r in db.get(t.name, []) if r[i] is not None]


def _value(rng: random.Random, world: World, db: Mapping[str, Sequence[Row]], t: Table,
           c: Column, *, fixed: Mapping[str, object] | None = None) -> object:
    if fixed and c.name in fixed:
        return fixed[c.name]
    if c.nullable and rng.random() < 0.15:
        return None
    if c.name == t.key or c.name in t.unique:
        taken = _keys(db, t, c.name)
        used = set(taken)
        free = [v for v in ID_POOL if v not in used]
        return rng.choice(free) if free else max(ID_POOL) + 1 + len(taken)
    f = next((f for f in t.fks if f.column == c.name), None)
    if f is not None:
        targets = _keys(db, world.table(f.table), f.referenced)
        if not targets:
            return None if c.nullable else -1
        return rng.choice(targets)
    return rng.randint(c.low, c.high)


def random_row(rng: random.Random, world: World, db: Mapping[str, Sequence[Row]], t: Table,
               fixed: Mapping[str, object] | None = None) -> Row:
    if t.key is None and db.get(t.name) and rng.random() < 0.3:
        return rng.choice(db[t.name])  # a copy in a bag
    return tuple(_value(rng, world, db, t, c, fixed=fixed) for c in t.columns)


def random_database(rng: random.Random, world: World, *, rows: int = 4) -> DB:
    """A random database satisfying everything: rows that would break a constraint are
    skipped."""
    db: DB = {t.name: [] for t in world.tables}
    for t in world.tables:  # referenced tables come first
        for _ in range(rng.randint(0, rows if t.name in ("users", "products") else 2 * rows)):
            row = random_row(rng, world, db, t)
            db[t.name].append(row)
            if not valid(world, db):
                db[t.name].pop()
    return db


def closure(world: World, db: Mapping[str, Sequence[Row]], user: object) -> dict[str, set[int]]:
    """The person of ``users.id = user``: table → indices of the rows that reference it
    along chains of foreign keys (the unit row included)."""
    users = world.table("users")
    out: dict[str, set[int]] = {t.name: set() for t in world.tables}
    out["users"] = {i for i, r in enumerate(db["users"]) if r[users.index("id")] == user}
    changed = True
    while changed:
        changed = False
        for t in world.tables:
            for f in t.fks:
                target = world.table(f.table)
                held = {db[target.name][i][target.index(f.referenced)]
                        for i in out[target.name]}
                p = t.index(f.column)
                for i, row in enumerate(db[t.name]):
                    if i not in out[t.name] and row[p] is not None and row[p] in held:
                        out[t.name].add(i)
                        changed = True
    return out


def without(db: Mapping[str, Sequence[Row]], removed: Mapping[str, set[int]]) -> DB:
    return {r: [row for i, row in enumerate(rows) if i not in removed.get(r, set())]
            for r, rows in db.items()}


def plus(db: Mapping[str, Sequence[Row]], added: Mapping[str, Sequence[Row]]) -> DB:
    return {r: [*rows, *added.get(r, [])] for r, rows in db.items()}


def random_person(rng: random.Random, world: World, db: Mapping[str, Sequence[Row]],
                  *, uid: object | None = None, full: bool = False) -> dict[str, list[Row]]:
    """A new person for ``db``: a users row and rows referencing it (and their orders'
    items), as many as the dependencies allow when ``full``.  May break a constraint:
    the caller checks ``db`` plus the person."""
    users = world.table("users")
    if uid is None:
        free = [v for v in ID_POOL if v not in _keys(db, users)]
        uid = rng.choice(free) if free else 100
    person: dict[str, list[Row]] = {t.name: [] for t in world.tables}
    person["users"].append(random_row(rng, world, db, users, {"id": uid}))
    scratch = plus(db, person)

    def count(table: str, column: str) -> int:
        k = world.k_of(table, column)
        return k if full and rng.random() < 0.8 else rng.randint(0, k)

    def add(t: Table, fixed: dict[str, object]) -> None:
        row = random_row(rng, world, scratch, t, fixed)
        if t.key is None and scratch[t.name] and row in scratch[t.name] and any(
                row[t.index(c)] != v for c, v in fixed.items()):
            row = tuple(fixed.get(c.name, v) for c, v in zip(t.columns, row, strict=True))
        person[t.name].append(row)
        scratch[t.name].append(row)

    for t in world.tables:
        if t.name == "orders":
            for _ in range(count("orders", "uid")):
                add(t, {"uid": uid})
        elif t.name == "items":
            new_orders = [r[0] for r in person.get("orders", [])]
            for oid in new_orders:
                for _ in range(count("items", "oid")):
                    fixed: dict[str, object] = {"oid": oid}
                    if "uid" in [c.name for c in t.columns] and rng.random() < 0.5:
                        fixed["uid"] = uid
                    add(t, fixed)
            if "uid" in [c.name for c in t.columns]:
                for _ in range(rng.randint(0, 1)):
                    add(t, {"uid": uid})  # an item of another order, owned through items.uid
        elif t.name == "logins":
            mine = person["users"][0][users.index(t.fks[0].referenced)]
            for _ in range(count("logins", "uid") if mine is not None else 0):
                add(t, {"uid": mine})
        elif t.name == "messages":
            for _ in range(count("messages", "sender")):
                add(t, {"sender": uid})
            for _ in range(count("messages", "receiver")):
                add(t, {"receiver": uid})
    return person


# ---------------------------------------------------------------------------------------
# evaluation


class Evaluator:
    """The base database in SQLite (no constraints: we check them); neighbours are the
    base with some rows deleted and some inserted, inside a savepoint."""

    def __init__(self, world: World, db: Mapping[str, Sequence[Row]], sql: str,
                 grouped: bool) -> None:
        self.world, self.db, self.sql, self.grouped = world, db, sql, grouped
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        for t in world.tables:
            cols = ", ".join(f"{c.name} INT" for c in t.columns)
            self.conn.execute(f"CREATE TABLE {t.name} ({cols})")
            names = ", ".join(c.name for c in t.columns)
            marks = ", ".join("?" for _ in range(len(t.columns) + 1))
            self.conn.executemany(f"INSERT INTO {t.name} (rowid, {names}) VALUES ({marks})",
                                  [(i + 1, *row) for i, row in enumerate(db[t.name])])
        self.base = self._released()

    def close(self) -> None:
        self.conn.close()

    def _released(self) -> Released:
        out: Released = {}
        for row in self.conn.execute(self.sql):
            group = tuple(row[:-self.width]) if self.grouped else ()
            for i, v in enumerate(row[len(row) - self.width:]):
                out[(*group, i)] = 0 if v is None else v
        return out

    @property
    def width(self) -> int:
        return self.sql.count("COUNT(") + self.sql.count("SUM(")

    def released(self, removed: Mapping[str, set[int]],
                 added: Mapping[str, Sequence[Row]]) -> Released:
        self.conn.execute("SAVEPOINT n")
        try:
            for table, indices in removed.items():
                self.conn.executemany(f"DELETE FROM {table} WHERE rowid = ?",
                                      [(i + 1,) for i in indices])
            for table, rows in added.items():
                if rows:
                    marks = ", ".join("?" for _ in rows[0])
                    self.conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
            return self._released()
        finally:
            self.conn.execute("ROLLBACK TO n")
            self.conn.execute("RELEASE n")


def change(a: Released, b: Released) -> tuple[float, float]:
    """(ℓ1, ℓ2) of the difference; a group missing on one side releases 0."""
    diffs = [float(a.get(k, 0)) - float(b.get(k, 0)) for k in set(a) | set(b)]  # type: ignore[arg-type]
    return sum(abs(d) for d in diffs), math.sqrt(sum(d * d for d in diffs))


# ---------------------------------------------------------------------------------------
# neighbours: (removed indices, added rows) relative to the base database

Move = tuple[dict[str, set[int]], dict[str, list[Row]], str]


def person_moves(rng: random.Random, world: World, db: DB, *, substitute: bool,
                 attempts: int = 12) -> Iterator[Move]:
    """Every person removed and random new persons added (add-remove); or every person
    replaced by random other persons (substitute), all keeping every constraint."""
    users = world.table("users")
    ids = [r[users.index("id")] for r in db["users"]]
    if not substitute:
        for uid in ids:
            yield closure(world, db, uid), {}, f"remove person {uid}"
        for n in range(attempts):
            person = random_person(rng, world, db, full=n % 2 == 0)
            if valid(world, plus(db, person)):
                yield {}, person, f"add person {person}"
        return
    for uid in ids:
        mine = closure(world, db, uid)
        rest = without(db, mine)
        for n in range(max(2, attempts // max(1, len(ids)))):
            other = random_person(rng, world, rest, full=n % 2 == 0,
                                  uid=uid if n % 3 == 0 else None)
            if valid(world, plus(rest, other)):
                yield mine, other, f"replace person {uid} by {other}"


def _candidates(rng: random.Random, world: World, db: DB, t: Table, n: int,
                like: Row | None = None) -> list[Row]:
    out: dict[Row, None] = {}
    if like is not None:  # change one column of ``like``
        for p, c in enumerate(t.columns):
            for _ in range(2):
                row = list(like)
                row[p] = _value(rng, world, db, t, c)
                out[tuple(row)] = None
    for _ in range(n):
        out[random_row(rng, world, db, t)] = None
    if t.key is None:
        out.update(dict.fromkeys(db[t.name]))  # another copy of a row already there
    return list(out)


def row_moves(rng: random.Random, world: World, db: DB, *, substitute: bool,
              per_table: int = 12) -> Iterator[Move]:
    """Single rows removed / added (add-remove) or replaced (substitute) keeping every
    constraint in both databases."""
    for t in world.tables:
        rows = db[t.name]
        if not substitute:
            for i in range(len(rows)):
                if valid(world, without(db, {t.name: {i}})):
                    yield {t.name: {i}}, {}, f"remove {t.name}{rows[i]}"
            for row in _candidates(rng, world, db, t, per_table):
                if valid(world, plus(db, {t.name: [row]})):
                    yield {}, {t.name: [row]}, f"add {t.name}{row}"
            continue
        for i in range(len(rows)):
            rest = without(db, {t.name: {i}})
            for row in _candidates(rng, world, rest, t, per_table // 3, like=rows[i]):
                if row != rows[i] and valid(world, plus(rest, {t.name: [row]})):
                    yield {t.name: {i}}, {t.name: [row]}, f"{t.name}{rows[i]} → {row}"


# ---------------------------------------------------------------------------------------
# queries


@dataclass(frozen=True)
class Query:
    sql: str
    grouped: bool
    kind: str  # count, sum, group
    aliases: tuple[tuple[str, str], ...] = field(default=())


def random_query(rng: random.Random, world: World) -> Query:
    """COUNT(*), SUM over a CHECK column, or a GROUP BY histogram, over 1–3 tables joined
    on foreign keys, on shared foreign-key columns, on other columns, or not at all."""
    n = rng.choice((1, 2, 2, 2, 3, 3))
    aliases: list[tuple[str, str]] = []
    conds: list[str] = []
    for i in range(n):
        a = f"a{i}"
        if i == 0:
            aliases.append((a, rng.choice(world.names)))
            continue
        # prefer a table linked to one already there
        links: list[tuple[str, str]] = []
        for b, name in aliases:
            t = world.table(name)
            for f in t.fks:  # b references the new table
                links.append((f.table, f"{b}.{f.column} = {a}.{f.referenced}"))
            for u in world.tables:
                for f in u.fks:
                    if f.table == name:  # the new table references b
                        links.append((u.name, f"{a}.{f.column} = {b}.{f.referenced}"))
                    for g in t.fks:
                        if (g.table, g.referenced) == (f.table, f.referenced):  # same target
                            links.append((u.name, f"{a}.{f.column} = {b}.{g.column}"))
        roll = rng.random()
        if links and roll < 0.7:
            name, cond = rng.choice(links)
            aliases.append((a, name))
            conds.append(cond)
            continue
        name = rng.choice(world.names)
        aliases.append((a, name))
        if roll < 0.95:
            b, other = rng.choice(aliases[:-1])
            c1 = rng.choice(world.table(name).columns).name
            c2 = rng.choice(world.table(other).columns).name
            conds.append(f"{a}.{c1} = {b}.{c2}")
    for a, name in aliases:
        if rng.random() < 0.25:
            c = rng.choice(world.table(name).columns)
            op = rng.choice(("=", "<", ">="))
            conds.append(f"{a}.{c.name} {op} {rng.randint(0, 3)}")
    checked = [(a, c.name) for a, name in aliases for c in world.table(name).columns if c.check]
    kind = rng.choice(("count", "count", "sum", "group", "group"))
    if kind == "sum" and not checked:
        kind = "count"
    select, group = "COUNT(*)", ""
    if kind == "sum":
        a, c = rng.choice(checked)
        select = f"SUM({a}.{c})" + (", COUNT(*)" if rng.random() < 0.3 else "")
    elif kind == "group":
        a, name = rng.choice(aliases)
        c = rng.choice(world.table(name).columns).name
        agg = "COUNT(*)"
        if checked and rng.random() < 0.3:
            s, sc = rng.choice(checked)
            agg = f"SUM({s}.{sc})"
        select, group = f"{a}.{c}, {agg}", f" GROUP BY {a}.{c}"
    where = f" WHERE {' AND '.join(conds)}" if conds else ""
    tables = ", ".join(f"{world.spelled(t, rng)} {a}" for a, t in aliases)
    sql = f"SELECT {select} FROM {tables}{where}{group}"
    return Query(sql, bool(group), kind, tuple(aliases))


# ---------------------------------------------------------------------------------------
# rows with a NULL ownership key, each a person of its own (--ownerless person)


def _leads_to_users(world: World, table: str, seen: frozenset[str] = frozenset()) -> bool:
    if table == "users":
        return True
    return any(f.table not in seen and _leads_to_users(world, f.table, seen | {table})
               for f in world.table(table).fks if f.column != "parent")


def ownerless_roots(world: World, db: Mapping[str, Sequence[Row]]) -> list[tuple[str, int]]:
    """Rows whose every foreign key that leads to ``users`` holds NULL: persons of their own
    (docs/rules.md, rule ownerless-rows), as (table, index)."""
    out = []
    for t in world.tables:
        keys = [f for f in t.fks if f.column != "parent" and _leads_to_users(world, f.table)]
        if t.name == "users" or not keys:
            continue
        for i, row in enumerate(db.get(t.name, [])):
            if all(row[t.index(f.column)] is None for f in keys):
                out.append((t.name, i))
    return out


def cascade_from(world: World, db: Mapping[str, Sequence[Row]], table: str,
                 index: int) -> dict[str, set[int]]:
    """The row ``db[table][index]`` with every row that references it along foreign keys,
    transitively (the person of an ownerless row)."""
    out: dict[str, set[int]] = {t.name: set() for t in world.tables}
    out[table] = {index}
    changed = True
    while changed:
        changed = False
        for t in world.tables:
            for f in t.fks:
                if f.column == "parent":
                    continue
                target = world.table(f.table)
                held = {db[target.name][i][target.index(f.referenced)] for i in out[target.name]}
                p = t.index(f.column)
                for i, row in enumerate(db[t.name]):
                    if i not in out[t.name] and row[p] is not None and row[p] in held:
                        out[t.name].add(i)
                        changed = True
    return out


def ownerless_moves(rng: random.Random, world: World, db: DB,
                    attempts: int = 6) -> Iterator[Move]:
    """Every ownerless row removed with its cascade, and random ownerless rows added (a new
    row whose keys to ``users`` are NULL), keeping every constraint."""
    for table, index in ownerless_roots(world, db):
        yield cascade_from(world, db, table, index), {}, f"remove ownerless {table}[{index}]"
    owned = [t for t in world.tables if t.name not in ("users", "products")]
    for _ in range(attempts if owned else 0):
        t = rng.choice(owned)
        keys = {f.column: None for f in t.fks
                if f.column != "parent" and _leads_to_users(world, f.table)}
        if not keys or any(not t.column(c).nullable for c in keys):
            continue
        row = random_row(rng, world, db, t, keys)
        if t.key is not None and any(r[t.index(t.key)] == row[t.index(t.key)]
                                     for r in db[t.name]):
            continue
        if valid(world, plus(db, {t.name: [row]})):
            yield {}, {t.name: [row]}, f"add ownerless {t.name}{row}"


def ownerless_query(rng: random.Random, world: World) -> Query:
    """COUNT(*), SUM or a GROUP BY over tables other than ``users``, joined on their other
    columns, mostly leaving the keys to ``users`` unread (the class rule ownerless-rows
    analyses), sometimes reading one (which it must refuse or bound)."""
    names = [n for n in world.names if n != "users"]
    aliases = [(f"a{i}", rng.choice(names)) for i in range(rng.choice((1, 1, 2)))]
    owner_columns = {(t.name, f.column) for t in world.tables for f in t.fks
                     if f.table == "users"}

    def column(name: str, *, owner_ok: bool) -> str:
        cols = [c.name for c in world.table(name).columns
                if owner_ok or (name, c.name) not in owner_columns]
        return rng.choice(cols)

    reads_owner = rng.random() < 0.15
    conds: list[str] = []
    if len(aliases) == 2:
        (a, s), (b, u) = aliases
        links = [f"{a}.{f.column} = {b}.{f.referenced}" for f in world.table(s).fks
                 if f.table == u] + [f"{b}.{f.column} = {a}.{f.referenced}"
                                     for f in world.table(u).fks if f.table == s]
        conds.append(rng.choice(links) if links and rng.random() < 0.7 else
                     f"{a}.{column(s, owner_ok=reads_owner)} = {b}.{column(u, owner_ok=False)}")
    for a, name in aliases:
        if rng.random() < 0.3:
            conds.append(f"{a}.{column(name, owner_ok=reads_owner)} "
                         f"{rng.choice(('=', '<', '>='))} {rng.randint(0, 3)}")
    checked = [(a, c.name) for a, name in aliases for c in world.table(name).columns if c.check]
    kind = rng.choice(("count", "sum", "group"))
    if kind == "sum" and not checked:
        kind = "count"
    select, group = "COUNT(*)", ""
    if kind == "sum":
        s, sc = rng.choice(checked)
        select = f"SUM({s}.{sc})"
    elif kind == "group":
        a, name = rng.choice(aliases)
        g = column(name, owner_ok=reads_owner)
        select, group = f"{a}.{g}, COUNT(*)", f" GROUP BY {a}.{g}"
    where = f" WHERE {' AND '.join(conds)}" if conds else ""
    tables = ", ".join(f"{world.spelled(t, rng)} {a}" for a, t in aliases)
    return Query(f"SELECT {select} FROM {tables}{where}{group}", bool(group), kind,
                 tuple(aliases))
