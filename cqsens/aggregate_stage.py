"""The release stage: each aggregate's ℓ1/ℓ2 sensitivity over its count bound and value
range and their combination; then the noise stage, the Laplace and Gaussian scales at (ε, δ)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from cqsens.analysis import AggregateRecord
from cqsens.engine.paths import Weight
from cqsens.engine.rules import Derivation, Rule, for_unit
from cqsens.engine.stage import count_upper, domain_cap_why, engine_count_upper, groups_upper
from cqsens.errors import InputError
from cqsens.ir.cq import CQ, Aggregate, AggregateQuery, Var
from cqsens.ir.exact import display
from cqsens.ir.schema import Schema
from cqsens.release.aggregates import AggregateBound
from cqsens.release.exclusive import ExclusiveSum, merge_exclusive
from cqsens.release.noise import calibrate
from cqsens.release.values import (
    VALUE_KINDS,
    aggregate_bound,
    combine,
    expression_bound,
    expression_nullable,
    value_bound,
)
from cqsens.report.words import render

if TYPE_CHECKING:
    from cqsens.state import State

__all__ = ["stage_noise", "stage_release"]


def _cap_line(state: State, cq: CQ, aggregate: Aggregate, value: Weight) -> str:
    """The explanation of a count bound lowered by finite domains (docs/rules.md, rule
    finite-domains), rendered from its derivation."""
    why = domain_cap_why(state, cq, aggregate)[1]
    return render(Derivation(Rule.FINITE_DOMAINS, value, state.options.nb,
                             {"aggregate": aggregate.label, "domains": why}))


def _single_table_unfiltered(query: AggregateQuery) -> bool:
    """One atom, no filter, no constant and no repeated column (an equality is a filter too)."""
    atoms = query.cq.relation_atoms()
    return (
        len(atoms) == 1
        and not any(a.is_filter for a in query.cq.atoms)
        and all(isinstance(t, Var) for t in atoms[0].terms)
        and len(set(atoms[0].terms)) == len(atoms[0].terms)
    )


def stage_release(state: State) -> State:
    """ℓ1/ℓ2 of each aggregate (over its count bound and value range) and of all together."""
    query, options = state.query, state.options
    if options.rows is not None and query.group_by \
            and any(a.kind == "median" for a in query.aggregates):
        raise InputError(
            "--rows is the number of rows of the table, not of each group, so the parity rule "
            "of MEDIAN (docs/rules.md, rule median-parity-rows) does not apply per group; "
            "drop --rows for a grouped MEDIAN", source=query.source, construct="--rows")
    # the rules for one row of one table hold for a person only when the query reads
    # nothing but the unit table: the person's other rows are then invisible
    unit = options.nb.unit
    single = _single_table_unfiltered(query) and (
        unit is None or all(a.relation.lower() == unit.table.lower()
                            for a in query.cq.relation_atoms()))
    if options.nb.per_person and options.rows is not None and not single \
            and any(a.kind == "median" for a in query.aggregates):
        raise InputError("--rows fixes the number of rows of one table, but one person may "
                         "add several rows, so the parity rule of MEDIAN (docs/rules.md, rule "
                         "median-parity-rows) does not apply with --unit; drop --rows",
                         source=query.source, construct="--rows")
    bounds: list[AggregateBound] = []
    sums: list[ExclusiveSum] = []
    records: list[AggregateRecord] = []
    notes = state.notes
    capped: tuple[str, ...] = ()
    for index, agg in enumerate(query.aggregates):
        count_delta = count_upper(state, query.cq_for(index), agg)
        engine_delta = engine_count_upper(state, query.cq_for(index))
        if count_delta < engine_delta:
            lines_cap = _cap_line(state, query.cq_for(index), agg, count_delta)
            capped += (lines_cap,) if lines_cap not in capped else ()
        values = None
        if agg.kind in VALUE_KINDS and agg.expression is not None:
            values = expression_bound(agg, cli=options.value_bounds, schema=options.schema,
                                      query=query)
        elif agg.kind in VALUE_KINDS:
            assert agg.column_name is not None
            values = value_bound(agg.column_name, cli=options.value_bounds, schema=options.schema,
                                 query=query,
                                 variable=agg.column.name if isinstance(agg.column, Var) else None)
        # A NULL is skipped by SUM and MEDIAN: changing it to a value is like adding a
        # row, so the rules that assume every row counts hold only for NOT NULL columns
        # (docs/rules.md, rule nulls).
        nullable = (expression_nullable(agg, options.schema) if agg.expression is not None
                    else agg.column_name is not None
                    and _nullable(options.schema, agg.column_name))
        if nullable and options.rows is not None and agg.kind == "median" and single:
            notes += (f"--rows not used for {agg.label}: it may hold NULL, "
                      "which MEDIAN skips, so the number of values it takes is unknown "
                      "(declare the column NOT NULL)",)
        b = aggregate_bound(agg, count_delta, grouped=bool(query.group_by),
                            neighbor=options.nb.model, contributions=options.nb.contributions,
                            values=values, single_table_unfiltered=single and not nullable,
                            rows=options.rows if single and not nullable else None,
                            groups=groups_upper(state, query.cq_for(index))
                            if agg.kind in VALUE_KINDS and agg.kind != "sum" else None)
        b = replace(b, derivation=for_unit(b.derivation, state.options.nb.unit))
        bounds.append(b)
        counted = agg.kind == "count" and agg.expression is not None  # a row adds 0 or 1
        sums.append(ExclusiveSum(agg, query.cq_for(index), b, count_delta,
                                 values.low if values is not None else 0 if counted else None,
                                 values.high if values is not None else 1 if counted else None))
        records.append(AggregateRecord(agg.label, agg.kind, count_delta, b.l1, b.l2,
                                       b.derivation,
                                       values.describe() if values is not None else None))
    release = combine(merge_exclusive(sums, neighbor=options.nb.model,
                                      contributions=options.nb.contributions))
    release = replace(release, derivation=for_unit(release.derivation,
                                                         state.options.nb.unit))
    lines = state.explanation + capped
    if len(records) > 1 or records[0].kind not in ("count", "count_distinct") \
            or options.nb.contributions > 1 or query.group_by:
        lines += (f"Released statistic: {render(release.derivation).rstrip('.')}.",)
    return replace(state, release=release, aggregates=tuple(records), explanation=lines,
                   notes=notes)


def _nullable(schema: Schema | None, column: str) -> bool:
    """Whether ``Table.column`` may hold NULL (True without a schema that says otherwise)."""
    table, _, name = column.partition(".")
    rel = schema.find(table) if schema is not None else None
    position = rel.index(name) if rel is not None else None
    return rel is None or position is None or rel.nullable(position)


def stage_noise(state: State) -> State:
    """Laplace scale Δ1/ε and analytic Gaussian σ, when ε is given."""
    epsilon, release = state.options.epsilon, state.release
    if epsilon is None or release is None:
        return state
    # the calibration works in floats: the sensitivities enter rounded up
    noise = calibrate(display(release.l1), display(release.l2), epsilon=epsilon,
                      delta=state.options.delta)
    return replace(state, noise=noise)
