"""The released group keys: a public domain (a keys file, the values a schema declares, a
public table), or none, and then DP partition selection (:mod:`cqsens.releasing.measure`)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from cqsens.errors import InputError
from cqsens.frontend.release_sql import ReleasePlan, distinct_values_sql
from cqsens.ir.schema import Schema
from cqsens.release.keys import key_text, read_keys


def _selects_keys(plan: ReleasePlan, keys_file: str | None, public_names: set[str],
                  schema: Schema | None = None) -> bool:
    """Whether the group keys go through DP partition selection (no public domain)."""
    if not plan.keys or keys_file is not None:
        return False
    if _declared_keys(plan, schema, public_names) is not None:
        return False
    tables = {kt[0] for kt in plan.key_tables if kt is not None}
    return not (len(tables) == 1 and all(kt is not None for kt in plan.key_tables)
                and next(iter(tables)).lower() in public_names)


_MAX_DECLARED_KEYS = 10_000


_Declared = tuple[tuple[int | str, ...], tuple[str, str] | None]


def _declared_keys(plan: ReleasePlan, schema: Schema | None, public_names: set[str]
                   ) -> list[_Declared] | None:
    """Where each group column's values are declared: the values of a CHECK IN list, or
    ``((), (table, column))`` for a foreign key into a public table; None when one
    column has neither (or the keys would be more than 10,000)."""
    if schema is None or not plan.keys or any(kt is None for kt in plan.key_tables):
        return None
    out: list[_Declared] = []
    size = 1
    for kt in plan.key_tables:
        assert kt is not None
        rel = schema.find(kt[0])
        position = rel.index(kt[1]) if rel is not None else None
        if rel is None or position is None:
            return None
        values = rel.domain(position)
        if values is not None and all(isinstance(v, (int, str)) and not isinstance(v, bool)
                                      for v in values):
            out.append((tuple(v for v in values if isinstance(v, (int, str))), None))
            size *= len(values)
            continue
        fk = next((f for f in rel.foreign_keys if f.columns == (position,)
                   and f.table.lower() in public_names), None)
        target = schema.find(fk.table) if fk is not None else None
        if fk is None or target is None:
            return None
        out.append(((), (target.name, target.columns[fk.referenced[0]])))
    return out if size <= _MAX_DECLARED_KEYS else None


def _declared_domain(conn: Any, target: str, declared: Sequence[_Declared]) -> list[str]:
    """Every key of the declared domains (their product), as key texts."""
    lists: list[list[object]] = []
    for values, public in declared:
        if public is None:
            lists.append(list(values))
            continue
        sql = distinct_values_sql(public[0], public[1], target)
        lists.append([row[0] for row in conn.exec_driver_sql(sql).fetchall()
                      if row[0] is not None])
    return sorted({key_text(combo) for combo in itertools.product(*lists)})


def _public_domain(conn: Any, target: str, plan: ReleasePlan, *, keys_file: str | None,
                   schema: Schema | None, public_names: set[str], delta: float | None,
                   source: str) -> tuple[list[str] | None, str]:
    """The released keys when they are public, and how they were found; None when they must
    go through partition selection (which needs δ)."""
    domain: list[str] | None
    if not plan.keys:
        domain, key_mode = [key_text([])], "no GROUP BY: one value"
    elif keys_file is not None:
        domain = read_keys(keys_file, plan.keys)
        key_mode = (f"public keys from {keys_file} ({len(domain)}): every key released, "
                    "zeros included")
    elif (declared := _declared_keys(plan, schema, public_names)) is not None:
        domain = _declared_domain(conn, target, declared)
        key_mode = (f"public keys: the {len(domain)} values the schema declares (CHECK IN "
                    "lists, foreign keys into public tables): every key released, zeros "
                    "included")
    else:
        if not _selects_keys(plan, keys_file, public_names):
            table = next(kt[0] for kt in plan.key_tables if kt is not None)
            found = conn.exec_driver_sql(plan.domain_sql(target)).fetchall()
            domain = sorted({key_text(r) for r in found})
            key_mode = (f"public keys: the {len(domain)} distinct values of public table "
                        f"{table}: every key released, zeros included")
        else:
            domain = None
            key_mode = "DP partition selection (Laplace threshold mechanism)"
            if delta is None:
                raise InputError(
                    f"the group keys ({', '.join(plan.keys)}) are not public, so they must be "
                    "chosen by DP partition selection, which needs δ > 0: give --delta, or "
                    "give the keys with --keys FILE, or mark a public table that holds them "
                    "(--public)", source=source, construct="GROUP BY")
    return domain, key_mode
