"""The witness stage: two databases proving a lower bound, built and checked in SQLite
(docs/rules.md, rule aggregate-witness)."""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from cqsens.frontend.sqlgen import sqlite_query
from cqsens.frontend.two_stage import MARKER, substitute
from cqsens.ir.cq import CQ, AggregateQuery, Var
from cqsens.ir.exact import Exact, text
from cqsens.ir.expr import Predicate
from cqsens.release.values import VALUE_KINDS, value_bound
from cqsens.witness.aggregate import concrete
from cqsens.witness.aggregate_search import find_aggregate_witness
from cqsens.witness.certificate import declared_hold, witness_checks_hold
from cqsens.witness.evaluate import Database, Value
from cqsens.witness.model import Witness
from cqsens.witness.person import find_person_witness
from cqsens.witness.references import references_hold, with_references
from cqsens.witness.schema_checks import column_checks, finite_columns
from cqsens.witness.schema_checks import keys as witness_keys
from cqsens.witness.search import find_witness
from cqsens.witness.writers import replayed

if TYPE_CHECKING:
    from cqsens.state import State

__all__ = ["stage_witness"]


SQLITE_MAX_JOIN = 64  # SQLite's limit on the tables of one join
SQLITE_MAX_COLUMN = 2000  # SQLite's default limit on the columns of one table
SQLITE_MAX_INTEGER = 2**63 - 1  # SQLite's INTEGER is a signed 64-bit integer


def _sqlite_cannot_evaluate(query: AggregateQuery, core: CQ) -> str | None:
    """Why SQLite, which evaluates witnesses, cannot run this query (None when it can)."""
    joined = len(core.relation_atoms())
    if joined > SQLITE_MAX_JOIN:
        return (f"the core joins {joined} tables and SQLite, which evaluates witnesses, "
                f"joins at most {SQLITE_MAX_JOIN}")
    wide = [(r, len(c)) for r, c in sorted(query.columns.items()) if len(c) > SQLITE_MAX_COLUMN]
    if wide:
        relation, count = wide[0]
        return (f"table {relation} has {count} columns and SQLite, which evaluates witnesses, "
                f"allows at most {SQLITE_MAX_COLUMN}")
    return None


def _beyond_sqlite(state: State) -> str | None:
    """Why the aggregate witness cannot be built (None when it can): it puts the ends of an
    aggregated column's range in SQLite, whose INTEGER holds at most 64 bits."""
    query, options = state.query, state.options
    if len(query.aggregates) == 1 and query.aggregate in ("count", "count_distinct"):
        return None
    for agg in query.aggregates:
        if agg.kind in VALUE_KINDS and isinstance(agg.column, Var) \
                and agg.column_name is not None:
            vb = value_bound(agg.column_name, cli=options.value_bounds, schema=options.schema,
                             query=query, variable=agg.column.name)
            for end in (vb.low, vb.high):
                if not math.isinf(end) and not -SQLITE_MAX_INTEGER <= end <= SQLITE_MAX_INTEGER:
                    return (f"the value bound {text(end)} of {agg.column_name} is beyond "
                            "SQLite's 64-bit integers, and SQLite evaluates witnesses")
    return None


def stage_witness(state: State) -> State:
    """Two databases proving a lower bound: for a single COUNT (or histogram) under
    add/remove the COUNT witness; for every other aggregate and under substitution a pair
    of neighbours on which the user's SQL is run (docs/rules.md, rule aggregate-witness).

    A value the search would store beyond SQLite's 64-bit integers (a CHECK that allows
    only such values) stops it: no lower bound, the upper bound stands."""
    try:
        return _stage_witness(state)
    except OverflowError:  # sqlite3: "Python int too large to convert to SQLite INTEGER"
        return replace(state, lower_note=(
            "not searched: a value the witness needs is beyond SQLite's 64-bit integers, "
            "and SQLite evaluates witnesses"))


def _stage_witness(state: State) -> State:
    query, options, counted = state.query, state.options, state.count
    if not options.prove_lower:
        return replace(state, lower_note="not searched (--no-lower)")
    staged = any(MARKER in f for f in query.opaque_filters)
    if staged and state.person is not None and query.sql:
        return _staged_witness(state)
    # a person's pair runs the whole SQL, but not a stage's comparison with a later value
    if query.opaque_filters and (state.person is None or staged):
        return replace(state, lower_note=_NOT_EVALUATED)
    simple = len(query.aggregates) == 1 and query.aggregate in ("count", "count_distinct") \
        and options.nb.add_remove
    if not simple and state.release is not None and state.release.l1 == 0:
        # nothing can change the released value: 0 is its sensitivity, lower and upper
        return replace(state, lower=0, lower_note="")
    blocker = _sqlite_cannot_evaluate(query, counted.core) or _beyond_sqlite(state)
    if blocker is not None:
        return replace(state, lower_note=f"not searched: {blocker}")
    if state.person is not None:
        return _person_witness(state)
    schema = options.schema
    count_upper = min(counted.bound.value, state.aggregates[0].count_bound) \
        if simple and state.aggregates else counted.bound.value
    checks = column_checks(schema, value_bounds=options.value_bounds, columns=query.columns)
    keys = witness_keys(schema)
    base_query = query if simple else AggregateQuery(
        cq=query.cq, columns=query.columns, row_positions=query.row_positions)
    share = 1.0 if simple else 0.5
    witness = find_witness(
        base_query, state.sigma, counted.core, upper=count_upper, columns=query.columns,
        time_budget=share * options.witness_time, seed=options.seed,
        column_checks=checks, bound=counted.bound,
        finite_columns=finite_columns(schema, value_bounds=options.value_bounds,
                                      columns=query.columns),
        keys=keys,
        public=options.nb.public,
        column_types={r.name: r.types for r in schema.relations} if schema is not None else None,
    )
    if witness is not None:
        witness = with_references(
            witness, base_query, schema=schema, column_checks=checks,
            valid=lambda db: declared_hold(db, state.sigma, column_checks=checks, keys=keys))
    if witness is not None and not simple:
        witness = _aggregate_witness(state, witness, checks, keys)
        if witness is not None:  # the user's own query, for replaying the two databases
            own = sqlite_query(query.sql, query.dialect) if query.sql else None
            witness = replace(witness, query_sql=own or "")
    if witness is not None and not witness_checks_hold(witness, schema):
        return replace(state, lower_note=_BROKEN_CHECK)
    if witness is not None and simple and query.sql:
        witness = _replayed_as_written(witness, query)
    if witness is None:
        return replace(state, lower_note=(
            f"none proven (no witness found within {options.witness_time:g} s; "
            "raise --witness-time to search longer)"))
    upper = state.release.l1 if state.release is not None and not simple else count_upper
    if witness.lower > upper:  # a real pair of databases beats the bound: a bug
        raise AssertionError(
            f"internal error: witness difference {witness.lower} exceeds the upper bound "
            f"{upper} for {query.cq}; please report it"
        )
    return replace(state, witness=witness, lower=witness.lower)


STAGE_PROBES: tuple[int, ...] = (0, -1_000_000, 1_000_000)
"""Values tried for an earlier stage's released value in a later stage's witness."""


def _staged_witness(state: State) -> State:
    """A witness for the last stage of a two-stage release (docs/rules.md, rule two-stage).

    That stage's bound holds for every value the earlier stages release, so a pair of
    neighbours on which the stage's statement, run with one concrete value in place of
    each ``CQSENS_STAGE_VALUE(i)``, changes by ``L`` proves ``L`` for this stage (not for
    the earlier ones, which have their own witnesses).  The value is shown with the pair."""
    query = state.query
    assert query.sql is not None
    markers = [int(m) for m in re.findall(rf"{MARKER}\s*\(\s*(\d+)\s*\)", query.sql,
                                          re.IGNORECASE)]
    if not markers:
        return replace(state, lower_note=_NOT_EVALUATED)
    best: State | None = None
    for probe in STAGE_PROBES:
        values = [probe] * max(markers)
        concrete_query = replace(
            query, sql=substitute(query.sql, values),
            opaque_filters=tuple(substitute(f, values) for f in query.opaque_filters))
        found = _person_witness(replace(state, query=concrete_query))
        if found.witness is not None and (best is None or best.lower is None
                                          or found.witness.lower > best.lower):
            shown = ", ".join(f"{MARKER}({i}) = {probe}" for i in range(1, max(markers) + 1))
            witness = replace(found.witness, construction=(
                f"{found.witness.construction}; the last stage of the two-stage release, run "
                f"with {shown} in place of the earlier stages' released values (its bound "
                "holds for every value they take; docs/rules.md, rule two-stage)"))
            best = replace(state, witness=witness, lower=witness.lower, lower_note="")
            if state.release is not None and witness.lower >= state.release.l1:
                break
    if best is None:
        return replace(state, lower_note=(
            "none proven (no witness of the last stage found with "
            f"{', '.join(str(p) for p in STAGE_PROBES)} in place of the earlier stages' "
            "released values)"))
    return best


_NOT_EVALUATED = (
    "not searched: a condition is kept out of the analysed query (its subqueries "
    "read public tables or only the row's own person, or it compares with a value "
    "released by an earlier stage), and the witness search does not evaluate it")

_BROKEN_CHECK = ("none proven: the witness found breaks a CHECK of the schema as SQLite "
                 "evaluates it, so it is not reported")


def _replayed_as_written(witness: Witness, query: AggregateQuery) -> Witness:
    """The COUNT witness replaying the user's own SQL (in SQLite syntax) when it runs on
    the written tables; else the generated counting SELECT it was evaluated with."""
    own = sqlite_query(query.sql, query.dialect) if query.sql else None
    if own is None or own == witness.query_sql:
        return witness
    try:
        replayed(witness, witness.database.with_row(witness.relation, witness.row), own)
    except sqlite3.Error:
        return witness
    return replace(witness, query_sql=own)


def _person_witness(state: State) -> State:
    """Two databases one whole person apart (the privacy unit), add/remove only."""
    query, options, person = state.query, state.options, state.person
    assert person is not None and options.schema is not None and state.release is not None
    if state.release.l1 == 0:  # nothing one person does changes the released value
        return replace(state, lower=0, lower_note="")
    if not options.nb.add_remove:
        return replace(state, lower_note="not searched: witnesses that replace one person by "
                                         "another are not constructed")
    checks = column_checks(options.schema, value_bounds=options.value_bounds,
                           columns=query.columns)
    keys = witness_keys(options.schema)
    upper = state.release.l1
    extremes: dict[tuple[str, int], Value] = {}
    background: dict[tuple[str, int], Value] = {}
    for agg in query.aggregates:
        if agg.kind in VALUE_KINDS and isinstance(agg.column, Var) \
                and agg.column_name is not None:
            vb = value_bound(agg.column_name, cli=options.value_bounds, schema=options.schema,
                             query=query, variable=agg.column.name)
            if math.inf in (vb.high, -vb.low):
                continue
            # the person's values at the end that moves the statistic most, a second
            # person's at the other end (so MIN, MAX, AVG, MEDIAN stay defined)
            end: Exact = (vb.low if agg.kind == "min" or agg.kind == "sum" and vb.high < -vb.low
                          else vb.high)
            other: Exact = vb.high if end == vb.low else vb.low
            places = [(a.relation, p) for a in query.cq.relation_atoms()
                      for p, x in enumerate(a.terms) if x == agg.column]
            extremes.update({place: concrete(end) for place in places})
            if agg.kind != "sum":
                background.update({place: concrete(other) for place in places})
    witness = find_person_witness(
        query, state.sigma, person, schema=options.schema, upper=upper,
        valid=lambda db: declared_hold(db, state.sigma, column_checks=checks, keys=keys),
        column_checks=checks, keys=keys, time_budget=options.witness_time, seed=options.seed,
        extremes=extremes, background=background)
    if witness is None:
        return replace(state, lower_note=(
            f"none proven (no witness found within {options.witness_time:g} s; "
            "raise --witness-time to search longer)"))
    if not witness_checks_hold(witness, options.schema):
        return replace(state, lower_note=_BROKEN_CHECK)
    if witness.lower > upper:  # a real pair of databases beats the bound: a bug
        raise AssertionError(
            f"internal error: person witness difference {witness.lower} exceeds the upper "
            f"bound {upper} for {query.cq}; please report it")
    own = sqlite_query(query.sql, query.dialect) if query.sql else None
    witness = replace(witness, query_sql=own or witness.query_sql)
    return replace(state, witness=witness, lower=witness.lower)


def _aggregate_witness(
    state: State, base: Witness, checks: Mapping[tuple[str, int], Sequence[Predicate]],
    keys: Mapping[str, tuple[tuple[int, ...], ...]],
) -> Witness | None:
    """The aggregate witness built from the COUNT witness ``base`` (see stage_witness)."""
    query, options = state.query, state.options
    if options.rows is not None and any(a.kind == "median" for a in query.aggregates):
        return None  # the parity rule fixes the number of rows: not constructed
    ranges: dict[Var, tuple[Exact, Exact]] = {}
    for agg in query.aggregates:
        if agg.kind in VALUE_KINDS and isinstance(agg.column, Var):
            assert agg.column_name is not None
            vb = value_bound(agg.column_name, cli=options.value_bounds, schema=options.schema,
                             query=query, variable=agg.column.name)
            if vb.low > vb.high or vb.low == -math.inf or vb.high == math.inf:
                return None
            ranges[agg.column] = (vb.low, vb.high)
    constants = {c.value for c in query.cq.constants()}
    checked = set(checks)
    aggregated = {(a.relation, p) for a in query.cq.relation_atoms()
                  for p, x in enumerate(a.terms) if x in ranges}

    def keep(relation: str, position: int, value: Value) -> bool:
        return value in constants or ((relation, position) in checked
                                      and (relation, position) not in aggregated)

    def valid(db: Database) -> bool:
        return declared_hold(db, state.sigma, column_checks=checks, keys=keys) \
            and references_hold(db, options.schema)

    upper = state.release.l1 if state.release is not None else math.inf
    return find_aggregate_witness(query, base, neighbor=options.nb.model, ranges=ranges,
                                  valid=valid, keep=keep, upper=upper,
                                  time_budget=max(options.witness_time, 0.5),
                                  public=options.nb.public)
