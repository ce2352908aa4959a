"""Analyse an aggregate over per-person groups (docs/rules.md, rule person-groups).

With a privacy unit, a statement over one derived table that groups by the person's
key (TPC-H q13) reads a table ``d`` of one row per person
(:mod:`cqsens.frontend.person_derived`): one person added or removed adds or removes
at most one row of ``d`` and changes no other.  So its sensitivity is the row-level
sensitivity of the outer statement over ``d``, where

* a COUNT column of ``d`` lies in ``[0, K]``, ``K`` the person bound of ``SELECT
  COUNT(*)`` over the derived table's rows (at least 1 with an outer join): one
  group's rows are all one person's, and adding that person adds all of them;
* a SUM column lies in ``[-S, S]``, ``S`` the ℓ1 person bound of that SUM over the
  same rows.

Those ranges become ``CHECK`` constraints of ``d`` (a count's as the list 0..K: the group
keys it can take, which a release uses as public keys) and the usual rules analyse the
outer statement over ``d`` (COUNT(*) per group: 1; a SUM of a column: its range).  The
analysis keeps Σ of the bounds (which a release checks on the data) and ``d``'s DDL.  No witness
is searched: a witness over ``d`` is not a pair of databases of the user's schema.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from cqsens.analysis import Analysis
from cqsens.engine.neighbourhood import Unit
from cqsens.engine.person import owner_key
from cqsens.errors import InputError
from cqsens.frontend.person_derived import PerPerson, per_person_statement
from cqsens.ir.dependencies import Sigma
from cqsens.ir.exact import Exact, sql_decimal
from cqsens.ir.schema import Schema
from cqsens.release.values import parse_value_bounds
from cqsens.settings import Settings
from cqsens.witness.certificate import declared_hold
from cqsens.witness.per_person import per_person_witness
from cqsens.witness.person import PersonWitness
from cqsens.witness.schema_checks import column_checks
from cqsens.witness.schema_checks import keys as witness_keys

__all__ = ["analyse_per_person", "per_person_ddl"]

Analyse = Callable[[str, Settings], Analysis]

MAX_LISTED = 1000
"""A COUNT column whose bound is at most this lists its values 0..K (a known key domain)."""

HIDDEN_KEY = "cqsens_person"
"""The key column of the per-person table: one row per person."""


def _bound(value: Exact) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return sql_decimal(value, toward=1)


def per_person_ddl(plan: PerPerson, ranges: dict[str, tuple[str, str] | None]) -> str:
    """The DDL of the per-person table: a hidden key, the group columns, and each
    aggregate column with its range as a CHECK (none when it is unbounded)."""
    parts = [f"{HIDDEN_KEY} INTEGER PRIMARY KEY"]
    for column in plan.columns:
        text = f'"{column.name}"'
        if column.kind == "key":
            text += f" {column.type}"
        else:
            text += " INTEGER NOT NULL" if column.kind == "count" else " NUMERIC NOT NULL"
            span = ranges.get(column.name)
            if span is not None and column.kind == "count" and int(span[1]) <= MAX_LISTED:
                # a count of at most K rows is one of 0..K: the group keys it can take
                values = ", ".join(str(v) for v in range(int(span[1]) + 1))
                text += f' CHECK ("{column.name}" IN ({values}))'
            elif span is not None:
                text += f' CHECK ("{column.name}" BETWEEN {span[0]} AND {span[1]})'
        parts.append(text)
    return f'CREATE TABLE "{plan.table}" ({", ".join(parts)});'


def analyse_per_person(text: str, settings: Settings, unit: Unit, schema: Schema,
                       analyse: Analyse, source: str) -> Analysis | None:
    """The analysis of ``text`` read over per-person groups, or None when it has not that
    form (a statement over one grouping derived table).

    Parameters
    ----------
    text : str
        The SQL statement.
    settings : Settings
        The user's settings (with the unit).
    unit : Unit
        The resolved privacy unit.
    schema : Schema
        The user's schema.
    analyse : callable
        Analyses SQL text with settings (the pipeline's own analysis).
    source : str
        For messages.

    Raises
    ------
    InputError
        The statement has the form but its groups mix persons.
    """
    relation = schema.find(unit.table)
    if relation is None or len(unit.key) != 1:
        return None
    person = (relation.name.lower(), relation.columns[unit.key[0]].lower())
    plan = per_person_statement(text, schema, owner_key(schema, unit), person,
                                frozenset(settings.public_tables()), settings.dialect, source)
    if plan is None:
        return None
    if settings.neighbor != "add-remove":
        # a person without a row of the table replaced by one with a row adds a row: not
        # one row-level substitution
        raise InputError("an aggregate over per-person groups is analysed with add-remove "
                         "neighbours only (one person added or removed adds or removes one "
                         "row of the per-person table); use --neighbor add-remove",
                         source=source, construct="--neighbor")
    inner_settings = replace(settings, prove_lower=False, neighbor="add-remove", epsilon=None,
                             delta=None, contributions=1)
    ranges: dict[str, tuple[str, str] | None] = {}
    why: list[str] = []
    bounds: list[Analysis] = []
    for column in plan.columns:
        if column.bound_sql is None:
            continue
        bound = analyse(column.bound_sql, inner_settings)
        bounds.append(bound)
        value = bound.upper if column.kind == "count" else bound.l1
        high = _bound(value)
        if high is None:
            ranges[column.name] = None
            why.append(f"{column.name} is unbounded: one person's rows in {column.bound_sql} "
                       "are not bounded (declare a cardinality dependency)")
            continue
        if column.kind == "count":
            high = str(max(int(high), 1)) if plan.left_join else high
            ranges[column.name] = ("0", high)
            listed = (f" (its values 0..{high} are the group keys a release shows)"
                      if int(high) <= MAX_LISTED else "")
            why.append(f"{column.name} counts one person's rows: in [0, {high}], the person "
                       f"bound of {column.bound_sql}{listed}")
        else:
            ranges[column.name] = (f"-{high}", high)
            why.append(f"{column.name} sums one person's rows: in [-{high}, {high}], the ℓ1 "
                       f"person bound of {column.bound_sql}")
    ddl = per_person_ddl(plan, ranges)
    outer_settings = replace(settings, schema=ddl, fds=(), cds=(), constraints=None, public=(),
                             unit=None, owner=(), bounds=(), prove_lower=False, contributions=1)
    try:
        outer = analyse(plan.outer_sql, outer_settings)
    except InputError as error:
        if any(span is None for span in ranges.values()):
            raise InputError(f"{error.message} ({'; '.join(why)})", source=source,
                             construct=error.construct) from error
        raise
    note = (f"the derived table {plan.table} has one row per person ({unit.text}): its groups "
            "are keyed by the person and read only that person's rows, so one person added or "
            f"removed adds or removes one row of {plan.table} and changes no other; the "
            f"statement is analysed over {plan.table} with one row per neighbour "
            f"(docs/rules.md, rule person-groups); {'; '.join(why)}")
    declared = Sigma.of([d for b in bounds for d in b.sigma])  # the user's Σ, as resolved
    witness = _witness(outer, text, settings, unit, schema, declared) \
        if settings.prove_lower and bounds else None
    lower_note = "" if witness is not None else (
        "not searched (--no-lower)" if not settings.prove_lower else
        "none proven: no small person (the unit's row alone, or with one row of each table "
        "that references it) changes the released value")
    return replace(outer, query=text, source=source, unit=unit.described,
                   nb=replace(outer.nb, unit=unit), notes=(*outer.notes, note),
                   sigma=Sigma.of([*outer.sigma, *declared]),
                   derived_ddl=ddl,
                   lower=witness.lower if witness is not None else None, witness=witness,
                   lower_note=lower_note)


def _witness(outer: Analysis, text: str, settings: Settings, unit: Unit, schema: Schema,
             sigma: Sigma) -> PersonWitness | None:
    """Two databases of the user's schema one person apart (witness/per_person.py), never
    beyond the upper bound (a real pair above it would be a bug)."""
    checks = column_checks(schema, value_bounds=parse_value_bounds(settings.bounds))
    keys = witness_keys(schema)
    found = per_person_witness(
        outer.query_obj, text, settings.dialect, schema=schema, unit=unit.table,
        unit_text=unit.text, column_checks=checks,
        valid=lambda db: declared_hold(db, sigma, column_checks=checks, keys=keys))
    if found is not None and found.lower > outer.upper:
        raise AssertionError(f"internal error: person witness difference {found.lower} "
                             f"exceeds the upper bound {outer.upper}; please report it")
    return found
