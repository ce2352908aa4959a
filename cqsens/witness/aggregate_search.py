"""Find an aggregate witness: variants of the COUNT witness with extreme values.

See :mod:`cqsens.witness.aggregate` for the construction and docs/rules.md, rule
``aggregate-witness``.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import replace
from fractions import Fraction

from cqsens.budget import search_stop, work_units
from cqsens.ir.cq import AggregateQuery, Var
from cqsens.ir.exact import Exact
from cqsens.witness.aggregate import (
    AggregateWitness,
    aggregate_sql,
    concrete,
    joined_values,
    released_pair,
    renamed,
)
from cqsens.witness.evaluate import Database, Value
from cqsens.witness.model import Witness

__all__ = ["find_aggregate_witness"]

_PLACEHOLDER = 9_999_999  # the changed aggregated value of t', before values are assigned
_LARGE = 5_000  # rows above which the copying variants are skipped
TRIES_PER_SECOND = 400
"""Pairs of databases the search tries for each second of its budget (work, not time)."""
_SPLITS = 9  # values joined on both sides above which no split between m and M is tried


def _positions(query: AggregateQuery, var: Var) -> set[tuple[str, int]]:
    return {(a.relation, p) for a in query.cq.relation_atoms() for p, x in enumerate(a.terms)
            if x == var}


def _rows(db: Database) -> list[tuple[str, tuple[Value, ...]]]:
    """The rows of ``db`` in a fixed order (tables by name, rows by ``repr``): the fresh
    values of :func:`renamed` are numbered in the order rows are met, and a set's order
    depends on the hash seed and on how the set was built, so iterating the sets would
    make the witness depend on the process's history."""
    return [(r, row) for r in sorted(db.rows) for row in sorted(db.rows[r], key=repr)]


def _grouped_candidates(
    base: Witness, neighbor: str, keep: Callable[[str, int, Value], bool],
    agg_positions: set[tuple[str, int]], group_positions: set[tuple[str, int]],
) -> Iterator[tuple[Database, Database, tuple[Value, ...] | None, str]]:
    """Variants for GROUP BY: t's group exists on both sides (a copy of A ∪ {t} that
    shares the group values), or t moves to another existing group (substitution)."""
    a, rel, t = base.database, base.relation, base.row
    if not group_positions or a.size() > _LARGE:
        return
    group_values = {row[p] for r, p in group_positions
                    for row in (*a.rows.get(r, ()), *((t,) if r == rel else ()))}
    shared = renamed(a, lambda r, p, v: keep(r, p, v) or v in group_values, 3)
    copy = a
    for r, row in _rows(a):
        if r != rel and any(v in group_values for v in row):
            continue  # the original row serves both (a copy would repeat its key)
        copy = copy.with_row(r, shared(r, row))
    copy = copy.with_row(rel, shared(rel, t))
    if neighbor == "add-remove":
        if t not in copy.rows.get(rel, frozenset()):
            yield (copy, copy.with_row(rel, t), None,
                   "B = A plus a copy of A ∪ {t} in the same groups, B' = B ∪ {t}")
        return
    ren1 = renamed(a, keep, 1)
    fresh_groups = a
    for r, row in _rows(a):
        fresh_groups = fresh_groups.with_row(r, ren1(r, row))
    fresh_groups = fresh_groups.with_row(rel, ren1(rel, t))
    moved = tuple(ren1(rel, t)[p] if (rel, p) in group_positions else v for p, v in enumerate(t))
    moved_changed = tuple(_PLACEHOLDER if (rel, p) in agg_positions else v
                          for p, v in enumerate(moved))
    both = copy
    for r, row in _rows(a):
        both = both.with_row(r, ren1(r, row))
    both = both.with_row(rel, ren1(rel, t))
    for c, name in ((fresh_groups, "A plus a fresh copy of A ∪ {t}"),
                    (copy, "A plus a copy of A ∪ {t} in the same groups"),
                    (both, "A plus a copy of A ∪ {t} in the same groups and a fresh one")):
        present = c.rows.get(rel, frozenset())
        for t2, how in ((moved, "t moved to the copy's group"),
                        (moved_changed, "t moved to the copy's group, value changed")):
            if t2 != t and t not in present and t2 not in present:
                yield (c.with_row(rel, t), c.with_row(rel, t2), t2,
                       f"C = {name}, t replaced by {how}")


def _candidates(
    base: Witness, neighbor: str, keep: Callable[[str, int, Value], bool],
    agg_positions: set[tuple[str, int]],
    group_positions: AbstractSet[tuple[str, int]] = frozenset(),
) -> Iterator[tuple[Database, Database, tuple[Value, ...] | None, str]]:
    """(B, B', t' or None, description) of every structural variant."""
    yield from _grouped_candidates(base, neighbor, keep, agg_positions, set(group_positions))
    a, rel, t = base.database, base.relation, base.row
    ren1, ren2 = renamed(a, keep, 1), renamed(a, keep, 2)
    copy_rows = [(r, ren1(r, row)) for r, row in _rows(a)]
    small = a.size() <= _LARGE
    plain_copy = a
    for r, row in copy_rows:
        plain_copy = plain_copy.with_row(r, row)
    full_copy = plain_copy.with_row(rel, ren1(rel, t))
    bases = [(a, "A")] + ([(full_copy, "A plus a fresh copy of A ∪ {t}")] if small else [])
    if neighbor == "add-remove":
        for b, name in bases:
            if t not in b.rows.get(rel, frozenset()):
                yield b, b.with_row(rel, t), None, f"B = {name}, B' = B ∪ {{t}}"
        return
    if small:
        bases.append((plain_copy, "A plus a fresh copy of A"))
    changed = tuple(_PLACEHOLDER if (rel, p) in agg_positions else v for p, v in enumerate(t))
    for c, name in bases:
        for t2, how in ((ren2(rel, t), "a fresh copy of t"), (ren1(rel, t), "t's copy"),
                        (changed, "t with its aggregated value changed")):
            present = c.rows.get(rel, frozenset())
            if t2 == t or t in present or t2 in present:
                continue
            yield (c.with_row(rel, t), c.with_row(rel, t2), t2,
                   f"C = {name}, t replaced by {how}")


def _assign(db: Database, positions: set[tuple[str, int]], mapping: Mapping[Value, Value]) -> \
        Database:
    rows = {rel: frozenset(tuple(mapping.get(v, v) if (rel, p) in positions and v is not None
                                 else v
                                 for p, v in enumerate(row)) for row in rs)
            for rel, rs in db.rows.items()}
    return Database(db.columns, rows, db.types)


def _value_maps(
    query: AggregateQuery, before: Database, after: Database,
    ranges: Mapping[Var, tuple[Exact, Exact]],
) -> Iterator[tuple[Database, Database, str]]:
    """The eight assignments of m or M to the aggregated values joined only in B,
    only in B', in both (the rest get m)."""
    body = query.body or query.cq
    parts = []
    for var, (lo, hi) in ranges.items():
        pos = _positions(query, var)
        jb, ja = joined_values(body, var, before), joined_values(body, var, after)
        every = {row[p] for rel, p in pos for db in (before, after)
                 for row in db.rows.get(rel, ())}
        parts.append((pos, jb - ja, ja - jb, jb & ja, every - jb - ja,
                      concrete(lo, hi), concrete(hi, lo)))
    if not parts:
        yield before, after, ""
        return
    for combo in itertools.product((0, 1), repeat=3):
        b, a = before, after
        for pos, only_b, only_a, both, rest, lo, hi in parts:
            ends = (lo, hi)
            mapping: dict[Value, Value] = {v: lo for v in rest}
            for group, choice in zip((only_b, only_a, both), combo, strict=True):
                mapping.update({v: ends[choice] for v in group if v is not None})
            b, a = _assign(b, pos, mapping), _assign(a, pos, mapping)
        names = "/".join("mM"[c] for c in combo)
        yield b, a, f"values joined only in B / only in B' / in both set to {names}"
    if len(parts) != 1:
        return
    # a MEDIAN moves most when the values on both sides straddle it: j of them at m
    pos, only_b, only_a, both, rest, lo, hi = parts[0]
    shared = sorted((v for v in both if v is not None), key=repr)
    for j in range(1, min(len(shared), _SPLITS)):
        for combo in itertools.product((0, 1), repeat=2):
            mapping = {v: lo for v in rest}
            for group, choice in zip((only_b, only_a), combo, strict=True):
                mapping.update({v: (lo, hi)[choice] for v in group if v is not None})
            mapping.update({v: lo if i < j else hi for i, v in enumerate(shared)})
            names = "/".join("mM"[c] for c in combo)
            yield (_assign(before, pos, mapping), _assign(after, pos, mapping),
                   f"values joined only in B / only in B' set to {names}, {j} of those "
                   f"joined in both at m and the other {len(shared) - j} at M")


def find_aggregate_witness(
    query: AggregateQuery,
    base: Witness,
    *,
    neighbor: str,
    ranges: Mapping[Var, tuple[Exact, Exact]],
    valid: Callable[[Database], bool],
    keep: Callable[[str, int, Value], bool],
    upper: Exact = math.inf,
    time_budget: float = 1.0,
    public: AbstractSet[str] = frozenset(),
) -> AggregateWitness | None:
    """The best aggregate witness built from the COUNT witness ``base``, or None.

    Parameters
    ----------
    query : AggregateQuery
        The query as the user wrote it; its SQL is run in SQLite on both databases.
    base : Witness
        A COUNT witness ``(A, t)`` of the query's body.
    neighbor : {"add-remove", "substitute"}
        The neighbour model.
    ranges : mapping
        Aggregated variable → its value range ``[m, M]`` (finite).
    valid : callable
        Whether a database satisfies everything declared (Σ, keys, CHECKs).
    keep : callable
        ``(relation, position, value) → bool``: the values a fresh copy keeps
        (constants of the query, values of checked columns).
    upper : number
        The upper bound: the search stops once a witness reaches it.
    time_budget : float
        Sets the search's work: ``TRIES_PER_SECOND`` pairs of databases per second
        (the same result on a loaded machine as on an idle one); the clock stops it only
        far past that (:func:`cqsens.budget.search_stop`).
    public : set of str
        Public tables: the same in both neighbours, so their rows are never the added,
        removed or changed one (docs/model.md, Model).
    """
    sql = aggregate_sql(query, base.database.columns)
    if sql is None:
        return None
    stop = search_stop(time_budget)  # the clock stops it only far past its work budget
    tries = work_units(time_budget, TRIES_PER_SECOND)
    agg_positions = set().union(*(_positions(query, v) for v in ranges)) if ranges else set()
    group_positions: set[tuple[str, int]] = set().union(
        *(_positions(query, g) for g in query.group_by if isinstance(g, Var)))
    best: AggregateWitness | None = None
    for start, moved in _bases(base, public):
        for before0, after0, t2, shape in _candidates(start, neighbor, keep, agg_positions,
                                                      group_positions):
            for before, after, values in _value_maps(query, before0, after0, ranges):
                tries -= 1
                if tries < 0 or time.monotonic() > stop:
                    return best
                found = _try(query, sql, start, before, after, t2, neighbor,
                             moved + (f"{shape}; {values}" if values else shape), valid)
                if found is not None and (best is None or found.l1 > best.l1):
                    best = found
                    if upper != math.inf and Fraction(upper) <= best.l1:
                        return best
    return best


def _bases(base: Witness, public: AbstractSet[str] = frozenset()) -> \
        Iterator[tuple[Witness, str]]:
    """The COUNT witness ``(A, t)``, then ``(A ∪ {t} − {u}, u)`` for one row ``u`` of each
    other table: adding a row of another table can move a statistic that adding ``t``
    cannot (``t`` may create a group that is undefined without it).  A public table's
    row is never the changed one."""
    if base.relation not in public:
        yield base, ""
    full = base.database.with_row(base.relation, base.row)
    if full.size() > _LARGE:
        return
    for relation in sorted(full.rows):
        rows = sorted(full.rows[relation], key=repr)
        if relation == base.relation or relation in public or not rows:
            continue
        u = rows[0]
        yield (replace(base, database=full.without_row(relation, u), relation=relation, row=u),
               f"the row of {relation} taken as the changed one; ")


def _try(
    query: AggregateQuery, sql: str, base: Witness, before: Database, after: Database,
    t2: tuple[Value, ...] | None, neighbor: str, construction: str,
    valid: Callable[[Database], bool],
) -> AggregateWitness | None:
    rel = base.relation
    removed = before.rows.get(rel, frozenset()) - after.rows.get(rel, frozenset())
    added = after.rows.get(rel, frozenset()) - before.rows.get(rel, frozenset())
    if neighbor == "add-remove":
        if removed or len(added) != 1:
            return None
        (row,) = added
        database, replacement = before, None
    else:
        if len(removed) != 1 or len(added) != 1 or t2 is None:
            return None
        (row,), (replacement,) = removed, added
        database = before
    if not valid(before) or not valid(after):
        return None
    pair = released_pair(query, before, after, sql)
    if pair is None or pair[2][0] == 0:
        return None
    rb, ra, change = pair
    return AggregateWitness(
        database, rel, row, 0, 0, construction, hidden=base.hidden, checks=base.checks,
        constraints=base.constraints,
        query_sql=sql, after=after, neighbor=neighbor, replacement=replacement,
        released_before=rb, released_after=ra, l1=change[0], l2=change[1])
