"""Check a witness from scratch: its certificate."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from cqsens.ir.cq import CQ, AggregateQuery
from cqsens.ir.dependencies import Sigma, satisfies
from cqsens.ir.exact import Exact
from cqsens.ir.expr import Predicate
from cqsens.ir.schema import Schema
from cqsens.witness.aggregate import AggregateWitness, released_change, released_values
from cqsens.witness.evaluate import Database, count_answers, quote_ident, scratch
from cqsens.witness.model import Witness
from cqsens.witness.person import PersonWitness, cascade, witness_change
from cqsens.witness.references import references_hold
from cqsens.witness.schema_checks import checks_hold, column_checks
from cqsens.witness.schema_checks import keys as schema_keys
from cqsens.witness.values import Values

__all__ = ["declared_hold", "is_aggregate_witness", "is_witness", "witness_checks_hold"]


def is_witness(query: AggregateQuery | CQ, sigma: Sigma, witness: Witness, *,
               schema: Schema | None = None,
               value_bounds: Mapping[str, tuple[Exact, Exact]] | None = None) -> bool:
    """Certificate check: re-evaluate the witness from scratch.

    Both databases satisfy Σ, they are one row apart (t is not in A), and the
    counts are the ones claimed.  With ``schema`` they also keep its keys, its
    CHECKs (each replayed in SQLite, :func:`checks_hold`) and ``value_bounds``
    (``--bounds``), and its foreign keys.  An
    :class:`AggregateWitness` is checked by :func:`is_aggregate_witness`; a
    :class:`PersonWitness` must add exactly one person: a row of the unit table
    and every row that references it.
    """
    checks = keys = None
    if schema is not None:
        columns = query.columns if isinstance(query, AggregateQuery) else {}
        checks, keys = _declared(schema, value_bounds or {}, columns)
    if isinstance(witness, PersonWitness | AggregateWitness) and schema is not None \
            and not all(checks_hold(d, schema) for d in _databases(witness)):
        return False
    if isinstance(witness, PersonWitness):
        return isinstance(query, AggregateQuery) and schema is not None and _is_person_witness(
            query, sigma, witness, schema, checks, keys)
    if isinstance(witness, AggregateWitness):
        return isinstance(query, AggregateQuery) and is_aggregate_witness(
            query, sigma, witness, column_checks=checks, keys=keys) and (
            schema is None or all(references_hold(d, schema)
                                  for d in (witness.database, witness.after)))
    a = witness.database
    if witness.row in a.rows.get(witness.relation, frozenset()) \
            or witness.relation not in a.columns:
        return False
    full = a.with_row(witness.relation, witness.row)
    # A ⊆ A ∪ {t}, and everything declared_hold and checks_hold test is closed under
    # taking fewer rows (a CHECK reads one row; a key, a CHECK range or a dependency
    # R[i->j]<=k, R[i,...->j]<=k, R[i->*]<=k bounds what rows hold together): A ∪ {t}
    # passing means A passes.  Foreign keys are not so closed: both are checked.
    if schema is not None and not checks_hold(full, schema):
        return False
    if not declared_hold(full, sigma, column_checks=checks, keys=keys):
        return False
    if schema is not None and not (references_hold(a, schema) and references_hold(full, schema)):
        return False
    conn = scratch(a)  # A, then A ∪ {t}: one database of this thread, refilled
    if count_answers(query, a, conn=conn) != witness.count_without:
        return False
    marks = ", ".join("?" for _ in witness.row)
    conn.execute(f"INSERT INTO {quote_ident(witness.relation)} VALUES ({marks})", witness.row)
    return count_answers(query, full, conn=conn) == witness.count_with


_Declared = tuple[Mapping[tuple[str, int], Sequence[Predicate]],
                  Mapping[str, tuple[tuple[int, ...], ...]]]
#: (schema, --bounds, columns) → what a witness must keep, per thread: the same few
#: schemas are checked many times (a query log checks one witness per record).
_DECLARED = threading.local()


def _declared(schema: Schema, value_bounds: Mapping[str, tuple[Exact, Exact]],
              columns: Mapping[str, tuple[str, ...]]) -> _Declared:
    """:func:`column_checks` and :func:`schema_keys` of a schema, remembered (by the
    schema's identity: the memory holds the schema, so its id is not reused), read-only."""
    memo: dict[tuple[object, ...], tuple[Schema, _Declared]] | None = \
        getattr(_DECLARED, "memo", None)
    if memo is None:
        memo = _DECLARED.memo = {}
    key = (id(schema), tuple(sorted(value_bounds.items())), tuple(sorted(columns.items())))
    found = memo.get(key)
    if found is not None and found[0] is schema:
        return found[1]
    checks = column_checks(schema, value_bounds=value_bounds, columns=columns)
    made: _Declared = (MappingProxyType({k: tuple(v) for k, v in checks.items()}),
                       MappingProxyType(schema_keys(schema)))
    if len(memo) > 64:
        memo.clear()
    memo[key] = (schema, made)
    return made


def _databases(witness: Witness) -> tuple[Database, Database]:
    """The two databases of a witness: A and A ∪ {t}, or B and B'."""
    if isinstance(witness, (PersonWitness, AggregateWitness)):
        return witness.database, witness.after
    return witness.database, witness.database.with_row(witness.relation, witness.row)


def declared_hold(
    db: Database,
    sigma: Sigma,
    *,
    column_checks: Mapping[tuple[str, int], Sequence[Predicate]] | None = None,
    keys: Mapping[str, tuple[tuple[int, ...], ...]] | None = None,
) -> bool:
    """Whether ``db`` satisfies Σ, every key (no two rows agree on one) and every
    CHECK or ``--bounds`` range (``column_checks``, predicates over ``Slot(0)``)."""
    if not satisfies(db.rows, sigma):
        return False
    for relation, ks in (keys or {}).items():
        rows = db.rows.get(relation, frozenset())
        if any(len({tuple(r[p] for p in key) for r in rows}) != len(rows) for key in ks):
            return False
    if column_checks:
        probe = _probe()
        for (rel, pos), checks in column_checks.items():
            for value in {r[pos] for r in db.rows.get(rel, ()) if pos < len(r)}:
                if not all(probe.holds(c, value) for c in checks):
                    return False
    return True


class _Probe(threading.local):
    """One SQLite connection per thread to decide a predicate Python cannot, and what each
    (predicate, value) gave: a CHECK or ``--bounds`` predicate is deterministic."""

    values: Values | None = None


_PROBES = _Probe()
#: (predicate, value) answers remembered per thread before the memory starts afresh.
_MEMO = 200_000


def _probe() -> Values:
    values = _PROBES.values
    if values is None or sum(len(t) for t in values.memo.values()) > _MEMO:
        if values is not None:
            values.conn.close()
        values = _PROBES.values = Values(CQ((), frozenset()), sqlite3.connect(":memory:"))
    return values


def _is_person_witness(
    query: AggregateQuery, sigma: Sigma, witness: PersonWitness, schema: Schema,
    checks: Mapping[tuple[str, int], Sequence[Predicate]] | None,
    keys: Mapping[str, tuple[tuple[int, ...], ...]] | None,
) -> bool:
    before, after = witness.database, witness.after
    if witness.row in before.rows.get(witness.relation, frozenset()):
        return False
    added = {(r, row) for r in after.rows for row in after.rows[r]
             if row not in before.rows.get(r, frozenset())}
    removed = [row for r in before.rows for row in before.rows[r]
               if row not in after.rows.get(r, frozenset())]
    if removed or added != set(witness.added) or added != set(
            cascade(after, witness.relation, witness.row, schema, witness.owners)):
        return False
    if not all(declared_hold(d, sigma, column_checks=checks, keys=keys)
               and references_hold(d, schema) for d in (before, after)):
        return False
    return witness_change(query, before, after) == witness.change


def is_aggregate_witness(
    query: AggregateQuery,
    sigma: Sigma,
    witness: AggregateWitness,
    *,
    column_checks: Mapping[tuple[str, int], Sequence[Predicate]] | None = None,
    keys: Mapping[str, tuple[tuple[int, ...], ...]] | None = None,
) -> bool:
    """Certificate check of an aggregate witness, from scratch.

    ``B`` and ``B'`` are neighbours under the witness's model (one row added, or
    one row replaced by another), both satisfy everything declared, and running the
    query's SQL in SQLite on each gives the released values and the ℓ1/ℓ2 change
    claimed.
    """
    before, after, rel = witness.database, witness.after, witness.relation
    if set(before.columns) != set(after.columns):
        return False
    for r in before.columns:
        b, a = before.rows.get(r, frozenset()), after.rows.get(r, frozenset())
        if r != rel and b != a:
            return False
    b, a = before.rows.get(rel, frozenset()), after.rows.get(rel, frozenset())
    if witness.replacement is None:
        if witness.neighbor != "add-remove" or witness.row in b or a != b | {witness.row}:
            return False
    elif witness.neighbor != "substitute" or witness.row not in b \
            or witness.replacement in b or a != (b - {witness.row}) | {witness.replacement}:
        return False
    if not all(declared_hold(d, sigma, column_checks=column_checks, keys=keys)
               for d in (before, after)):
        return False
    rb = released_values(query, before, witness.query_sql)
    ra = released_values(query, after, witness.query_sql)
    if rb != witness.released_before or ra != witness.released_after or rb is None or ra is None:
        return False
    change = released_change(query, rb, ra)
    return change is not None and change[0] == witness.l1


def witness_checks_hold(witness: Witness, schema: Schema | None) -> bool:
    """Whether both databases of ``witness`` meet every CHECK of ``schema`` in SQLite."""
    return all(checks_hold(d, schema) for d in _databases(witness))
