"""What a schema asks of a witness: CHECK and --bounds predicates, keys, and columns with
finitely many values."""

from __future__ import annotations

import math
from collections.abc import Mapping

from cqsens.ir.exact import Exact
from cqsens.ir.expr import And, Compare, Predicate, Slot, literal_of
from cqsens.ir.schema import Schema

__all__ = ["column_checks", "finite_columns", "keys"]


def _declared_bounds(
    schema: Schema | None,
    value_bounds: Mapping[str, tuple[Exact, Exact]],
    columns: Mapping[str, tuple[str, ...]],
) -> list[tuple[str, int, Exact, Exact]]:
    """(relation, position, low, high) of the schema's CHECKs and of ``--bounds``."""
    relations = schema.relations if schema is not None else ()
    out = [(rel.name, pos, low, high) for rel in relations for pos, low, high in rel.bounds]
    for key, (low, high) in sorted(value_bounds.items()):
        table, _, column = key.partition(".")
        names = {r.lower(): (r, cols) for r, cols in columns.items()}
        if table in names:
            relation, cols = names[table]
            lowered = [c.lower() for c in cols]
            if column in lowered:
                out.append((relation, lowered.index(column), low, high))
    return out


def column_checks(
    schema: Schema | None,
    *,
    value_bounds: Mapping[str, tuple[Exact, Exact]] | None = None,
    columns: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[tuple[str, int], list[Predicate]]:
    """The schema's CHECK bounds and the ``--bounds`` ranges as predicates over ``Slot(0)``
    that every value of a witness's column must meet."""
    out: dict[tuple[str, int], list[Predicate]] = {}
    for rel_name, pos, low, high in _declared_bounds(schema, value_bounds or {}, columns or {}):
        parts: list[Predicate] = []
        if low != -math.inf:
            parts.append(Compare(">=", Slot(0), literal_of(low)))
        if high != math.inf:
            parts.append(Compare("<=", Slot(0), literal_of(high)))
        if parts:
            check = parts[0] if len(parts) == 1 else And(tuple(parts))
            if check not in out.setdefault((rel_name, pos), []):
                out[(rel_name, pos)].append(check)
    return out


_INTEGER_TYPES = ("INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "MEDIUMINT", "SERIAL",
                  "BIGSERIAL", "BOOLEAN", "BOOL")


def finite_columns(
    schema: Schema | None,
    *,
    value_bounds: Mapping[str, tuple[Exact, Exact]] | None = None,
    columns: Mapping[str, tuple[str, ...]] | None = None,
) -> set[tuple[str, int]]:
    """Columns with finitely many legal values: integer (or untyped) with a two-sided
    CHECK or ``--bounds`` range."""
    out: set[tuple[str, int]] = set()
    for rel_name, pos, low, high in _declared_bounds(schema, value_bounds or {}, columns or {}):
        rel = schema.find(rel_name) if schema is not None else None
        types = rel.types if rel is not None else ()
        kind = (types[pos] if pos < len(types) else "").upper().split("(")[0].strip()
        if low > -math.inf and high < math.inf and (not kind or kind in _INTEGER_TYPES):
            out.add((rel_name, pos))
    return out


def keys(schema: Schema | None) -> dict[str, tuple[tuple[int, ...], ...]]:
    """Relation → its keys (primary, unique, composite), each a tuple of positions: no two
    rows of a witness may agree on one."""
    out: dict[str, tuple[tuple[int, ...], ...]] = {}
    for rel in schema.relations if schema is not None else ():
        found = {tuple(sorted(k)) for k in (*((k,) for k in rel.keys), *rel.composite_keys)}
        if rel.primary_key:
            found.add(tuple(sorted(rel.primary_key)))
        if found:
            out[rel.name] = tuple(sorted(found))
    return out
