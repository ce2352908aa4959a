"""Lower bounds per shape: a cached witness, instantiated and checked for each record.

A shape's first record is analysed with the witness search; its witness (the
pair of databases, docs/rules.md, rule lower-bound-witness) is stored with the
values of the record's literals.  For a later record of the shape the witness's
values are carried over to the record's own constants (:func:`instances`):
first every value equal to an abstract constant is replaced by the record's
constant (a renaming of constants used with ``=``, ``<>``, ``IN`` and in joins),
then, for ranges, a number near a constant is moved with it and a text built
from a ``LIKE`` pattern takes the record's pattern.  Each instance is kept only
if :func:`cqsens.witness.certificate.is_witness` accepts it against the
record's own query (its SQL, run in SQLite on both databases, gives the counts
or released values claimed; both databases satisfy Σ, the keys, the CHECKs and
the foreign keys).  Nothing here is trusted: an instance that fails costs only
a fresh search (:mod:`cqsens.logs.run`).

The witnesses are stored pickled in the cache file; :func:`unpack` reads them
with an unpickler that builds only cqsens's own classes, ``Fraction`` and
``Decimal``, so a cache file cannot run code.
"""

from __future__ import annotations

import dataclasses
import io
import pickle
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from operator import itemgetter
from typing import Any

from cqsens.errors import InputError
from cqsens.frontend.load import load_statement
from cqsens.frontend.sqlgen import sqlite_query
from cqsens.ir.cq import AggregateQuery
from cqsens.ir.dependencies import Sigma
from cqsens.ir.exact import Exact
from cqsens.ir.schema import Schema
from cqsens.witness.aggregate import AggregateWitness
from cqsens.witness.certificate import is_witness
from cqsens.witness.evaluate import Database, Value
from cqsens.witness.model import Witness
from cqsens.witness.person import PersonWitness

__all__ = ["Proof", "check", "instances", "pack", "unpack"]

#: How far (in units) from a numeric constant a witness value is taken to be placed
#: relative to it (the witness search tries values up to 200 past a filter's literal).
NEAR = 201


@dataclass(frozen=True)
class Proof:
    """What a shape's first record proved about its lower bound.

    Attributes
    ----------
    query, sigma : AggregateQuery, Sigma
        The first record's parsed query and dependencies (the shape's structure).
    witnesses : tuple of (literal values, Witness)
        Witnesses found so far for records of the shape, each with that record's
        literal values (most recent first).
    lower : value or None
        The first record's lower bound when it has no witness: 0 (nothing can change
        the released value) or None (none proven).
    note : str
        The first record's ``lower_note`` when it has no witness.
    reusable : bool
        False for what a witness cannot carry (a set operation's parts).
    """

    query: AggregateQuery
    sigma: Sigma
    witnesses: tuple[tuple[tuple[int | Fraction | str, ...], Witness], ...] = ()
    lower: Any = None
    note: str = ""
    reusable: bool = True


_ALLOWED = {("fractions", "Fraction"): Fraction, ("decimal", "Decimal"): Decimal}


class _Unpickler(pickle.Unpickler):
    """Builds cqsens's own dataclasses and enums, Fraction and Decimal: nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module.startswith(("cqsens.ir.", "cqsens.witness.", "cqsens.logs.")) \
                and not name.startswith("_"):
            found = super().find_class(module, name)
            if isinstance(found, type):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a cqsens cache")


def pack(proof: Proof) -> bytes:
    """The bytes stored in the cache."""
    return pickle.dumps(proof, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(blob: bytes, source: str) -> Proof:
    """A stored proof.

    Raises
    ------
    InputError
        The bytes are not a proof of this version of cqsens.
    """
    try:
        proof = _Unpickler(io.BytesIO(blob)).load()
    except Exception as err:  # noqa: BLE001 - any damage is the same input error
        raise InputError(f"the cache {source} holds a damaged witness ({err})", source=source,
                         construct="--cache") from None
    if not isinstance(proof, Proof):
        raise InputError(f"the cache {source} holds a damaged witness", source=source,
                         construct="--cache")
    return proof


def _base(pattern: str) -> str:
    """The text the witness search builds from a LIKE pattern (cqsens.witness.values)."""
    return pattern.replace("%", "").replace("_", "x")


def _exact_map(old: Mapping[int, object], new: Mapping[int, object]) -> dict[object, object]:
    return {(type(v).__name__, v): new[i] for i, v in old.items()}


_Cell = Value | None


def _mapper(old: Mapping[int, int | Fraction | str], new: Mapping[int, int | Fraction | str],
            derived: str) -> Callable[[_Cell], _Cell]:
    """The value map of an instance: constants exactly (``derived`` is ``""``), and the
    values placed relative to them: all moved with their constant (``"shift"``), or only
    those the move takes to the other side of it (``"side"``: a value above 25 that is also
    above 57 stays, so that values under a CHECK's ceiling stay under it), or each value
    between two constants to the same place between the new ones (``"scale"``)."""
    exact = _exact_map(old, new)
    numbers: list[tuple[int, int]] = []
    for i, v in old.items():
        n = new[i]
        if isinstance(v, int) and isinstance(n, int) and not isinstance(v | n, bool):
            numbers.append((v, n))
    texts = [(_base(v), _base(str(new[i]))) for i, v in old.items()
             if isinstance(v, str) and isinstance(new[i], str) and _base(v)]

    def value(v: _Cell) -> _Cell:
        key = (type(v).__name__, v)
        if key in exact:
            return exact[key]  # type: ignore[return-value]
        if not derived:
            return v
        if isinstance(v, int) and not isinstance(v, bool) and numbers:
            if derived == "scale":
                return _scaled(v, numbers)
            c, n = min(numbers, key=lambda p: abs(v - p[0]))
            if abs(v - c) > NEAR:
                return v
            if derived == "side" and (v > c) == (v > n) and (v < c) == (v < n):
                return v
            return v + (n - c)
        if isinstance(v, str):
            for b_old, b_new in texts:
                if b_old in v:
                    return v.replace(b_old, b_new, 1)
        return v

    return value


def _scaled(v: int, numbers: list[tuple[int, int]]) -> int:
    """``v`` between two old constants, carried to the same place between the new ones
    (``BETWEEN 20 AND 40`` to ``BETWEEN 48 AND 50``: 25 to 48); else ``v``."""
    below = [p for p in numbers if p[0] <= v]
    above = [p for p in numbers if p[0] >= v]
    if not below or not above:
        return v
    (c1, n1), (c2, n2) = max(below), min(above)
    if c1 == c2:
        return n1
    if (n1 <= n2) != (c1 <= c2):
        return v
    return n1 + ((v - c1) * (n2 - n1) + (c2 - c1) // 2) // (c2 - c1)


@dataclass(frozen=True, slots=True)
class _Layout:
    """A database as its distinct cells (told apart by type: ``1``, ``1.0`` and ``True``
    are three) and, per relation, a getter per row that picks the row's cells from a
    list of them: an instance maps each distinct cell once and rebuilds its rows in C."""

    database: Database
    cells: tuple[_Cell, ...]
    getters: dict[str, tuple[Callable[[list[_Cell]], tuple[Any, ...]], ...]]


#: Layouts of the witnesses' databases, by ``id`` (each holds its database: the id is
#: not reused while it is kept).
_LAYOUTS: dict[int, _Layout] = {}
_LAYOUTS_KEPT = 512


def _getter(positions: list[int]) -> Callable[[list[_Cell]], tuple[Any, ...]]:
    if len(positions) >= 2:
        return itemgetter(*positions)
    return lambda cells: tuple(cells[i] for i in positions)


def _layout(db: Database) -> _Layout:
    found = _LAYOUTS.get(id(db))
    if found is not None and found.database is db:
        return found
    index: dict[tuple[type, _Cell], int] = {}
    cells: list[_Cell] = []
    getters: dict[str, tuple[Callable[[list[_Cell]], tuple[Any, ...]], ...]] = {}
    for relation, rows in db.rows.items():
        made = []
        for row in rows:
            positions = []
            for cell in row:
                at = index.setdefault((type(cell), cell), len(cells))
                if at == len(cells):
                    cells.append(cell)
                positions.append(at)
            made.append(_getter(positions))
        getters[relation] = tuple(made)
    if len(_LAYOUTS) >= _LAYOUTS_KEPT:
        _LAYOUTS.clear()
    layout = _LAYOUTS[id(db)] = _Layout(db, tuple(cells), getters)
    return layout


def _mapped_db(db: Database, value: Callable[[_Cell], _Cell]) -> Database:
    layout = _layout(db)
    mapped = [value(cell) for cell in layout.cells]
    rows = {r: frozenset(get(mapped) for get in gets) for r, gets in layout.getters.items()}
    return Database(db.columns, rows, db.types)


def _row(row: tuple[Any, ...], value: Callable[[_Cell], _Cell]) -> tuple[Any, ...]:
    return tuple(value(x) for x in row)


def _memo(value: Callable[[_Cell], _Cell]) -> Callable[[_Cell], _Cell]:
    """``value``, computed once per distinct cell (a witness repeats its values across its
    copies); cells are told apart by type as well (``1``, ``1.0`` and ``True``)."""
    seen: dict[tuple[type, _Cell], _Cell] = {}

    def once(v: _Cell) -> _Cell:
        key = (type(v), v)
        if key in seen:
            return seen[key]
        out = seen[key] = value(v)
        return out

    return once


def _instance(witness: Witness, value: Callable[[_Cell], _Cell], own_sql: str) -> Witness:
    """``witness`` with every value mapped, claiming the same counts or changes."""
    value = _memo(value)
    changes: dict[str, Any] = {"database": _mapped_db(witness.database, value),
                               "row": _row(witness.row, value)}
    if isinstance(witness, AggregateWitness):
        changes["after"] = _mapped_db(witness.after, value)
        if witness.replacement is not None:
            changes["replacement"] = _row(witness.replacement, value)
        changes["released_before"] = {_row(k, value): v for k, v
                                      in witness.released_before.items()}
        changes["released_after"] = {_row(k, value): v for k, v
                                     in witness.released_after.items()}
    if isinstance(witness, PersonWitness):
        changes["added"] = tuple((r, _row(row, value)) for r, row in witness.added)
    changes["query_sql"] = own_sql
    return dataclasses.replace(witness, **changes)


#: The ways of carrying a witness's values to new constants (see :func:`_mapper`).
MODES = ("", "side", "shift", "scale")


def instances(witness: Witness, old: Mapping[int, int | Fraction | str],
              new: Mapping[int, int | Fraction | str], own_sql: str,
              first: str = "") -> Iterator[tuple[str, Witness]]:
    """Candidate instances of ``witness`` for a record whose abstract literal ``i`` is
    ``new[i]`` where the witness's record had ``old[i]``: the constants renamed, then
    the values placed relative to them moved too (each still to be checked), with the
    mode that made each; mode ``first`` is tried first."""
    seen: list[Witness] = []
    for derived in (first, *(m for m in MODES if m != first)):
        candidate = _instance(witness, _mapper(old, new, derived), own_sql)
        if not any(c.database.rows == candidate.database.rows and c.row == candidate.row
                   for c in seen):
            seen.append(candidate)
            yield derived, candidate


def own_query(base: AggregateQuery, witness: Witness, sql: str, *, schema: Schema | None,
              dialect: str | None) -> AggregateQuery | None:
    """The record's own query for the check of ``witness``: the shape's structure
    (``base``) with the record's SQL where the check runs that SQL (a single COUNT
    without GROUP BY, or released values, which run ``witness.query_sql``); otherwise
    the record's query parsed.  None when SQLite cannot run the record's SQL."""
    if sqlite_query(sql, dialect) is None:
        return None
    counted = len(base.aggregates) == 1 and not base.group_by \
        and base.aggregate in ("count", "count_distinct")
    if isinstance(witness, AggregateWitness) or (isinstance(witness, PersonWitness)
                                                 and not counted):
        uses_sql = True
    else:  # counted through count_answers: the user's SQL only for a plain COUNT
        uses_sql = counted and len(base.aggregates[0].columns) <= 1
    if uses_sql:
        return dataclasses.replace(base, sql=sql)
    try:
        parsed = load_statement(sql, schema=schema, dialect=dialect, kind="sql")
    except InputError:
        return None
    return parsed if isinstance(parsed, AggregateQuery) else None


def check(query: AggregateQuery, sigma: Sigma, witness: Witness, *, schema: Schema | None,
          value_bounds: Mapping[str, tuple[Exact, Exact]]) -> bool:
    """:func:`is_witness` of ``witness`` against ``query`` (the record's own)."""
    try:
        return is_witness(query, sigma, witness, schema=schema, value_bounds=value_bounds)
    except (ValueError, ArithmeticError, OverflowError):
        return False
