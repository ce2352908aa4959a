"""What a schema asks of a witness: CHECK predicates, and columns with finitely many values."""

from __future__ import annotations

import math

from cqsens.ir.expr import And, Compare, Predicate, Slot, literal_of
from cqsens.ir.schema import Schema

__all__ = ["column_checks", "finite_columns"]


def column_checks(schema: Schema | None) -> dict[tuple[str, int], list[Predicate]]:
    """The schema's CHECK bounds as predicates over ``Slot(0)`` a witness value must meet."""
    out: dict[tuple[str, int], list[Predicate]] = {}
    for rel in schema.relations if schema is not None else ():
        for pos, low, high in rel.bounds:
            parts: list[Predicate] = []
            if low != -math.inf:
                parts.append(Compare(">=", Slot(0), literal_of(low)))
            if high != math.inf:
                parts.append(Compare("<=", Slot(0), literal_of(high)))
            if parts:
                out[(rel.name, pos)] = [parts[0] if len(parts) == 1 else And(tuple(parts))]
    return out


_INTEGER_TYPES = ("INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "MEDIUMINT", "SERIAL",
                  "BIGSERIAL", "BOOLEAN", "BOOL")


def finite_columns(schema: Schema | None) -> set[tuple[str, int]]:
    """Columns with finitely many legal values: integer (or untyped) with a two-sided CHECK."""
    out: set[tuple[str, int]] = set()
    for rel in schema.relations if schema is not None else ():
        for pos, low, high in rel.bounds:
            kind = (rel.types[pos] if pos < len(rel.types) else "").upper().split("(")[0].strip()
            if low > -math.inf and high < math.inf and (not kind or kind in _INTEGER_TYPES):
                out.add((rel.name, pos))
    return out
