"""The analysis pipeline: source text in, an :class:`~cqsens.analysis.Analysis` out.

``analyze`` reads the query and Σ, then runs the stages of :data:`PIPELINE` over
a frozen :class:`State`; each stage is a pure function ``State -> State`` that
returns a new value (``dataclasses.replace``), so each can be run and tested
on its own.  The chase and the cores are computed once (:func:`stage_bound`) and
read by every later stage:

1. ``stage_bound``: chase with the FDs of Σ, cores, the count bound;
2. ``stage_paper``: the paper's literal Δ_STR, Thm 13 and Thm 17 values;
3. ``stage_explain``: the explanation and, when unbounded, the advice;
4. ``stage_release``: each aggregate's ℓ1/ℓ2 sensitivity and their combination;
5. ``stage_witness``: two databases proving a lower bound;
6. ``stage_noise``: Laplace and Gaussian scales at (ε, δ).

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries. ICALP 2016.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from cqsens.analysis import AggregateRecord, Analysis
from cqsens.budget import deadline
from cqsens.compound import combine_analyses, part_items
from cqsens.engine.core import in_cq_core
from cqsens.engine.count import CORE_BUDGET, CountBound, count_bound, count_derivation
from cqsens.engine.domains import domain_cap
from cqsens.engine.gaifman import is_connected
from cqsens.engine.neighbourhood import Neighbourhood
from cqsens.engine.paper import PaperValue, cd_upper_paper, delta_str_paper, fd_bounds_paper
from cqsens.engine.paths import Weight
from cqsens.engine.person import (
    PersonBound,
    check_ownership,
    owner_key,
    person_bound,
    person_derivation,
    resolve_unit,
)
from cqsens.engine.rules import Derivation, Rule, for_unit
from cqsens.engine.upper import References, upper_bound
from cqsens.errors import InputError
from cqsens.explain import (
    Advice,
    jsonable,
    named_dependency,
    person_suggestion,
    suggestion,
)
from cqsens.frontend.ddl import load_schema
from cqsens.frontend.load import load_query, load_statement, resolve_sigma
from cqsens.frontend.sqlgen import sqlite_query
from cqsens.ir.compound import CompoundQuery
from cqsens.ir.cq import CQ, Aggregate, AggregateQuery, Var
from cqsens.ir.dependencies import Dependency, Sigma
from cqsens.ir.exact import Exact, display, text
from cqsens.ir.expr import Predicate
from cqsens.ir.schema import Schema
from cqsens.release.aggregates import AggregateBound
from cqsens.release.noise import NoiseCalibration, calibrate, check_privacy
from cqsens.release.values import (
    VALUE_KINDS,
    aggregate_bound,
    check_value_bounds,
    combine,
    expression_bound,
    expression_nullable,
    parse_value_bounds,
    value_bound,
)
from cqsens.report.explanation import advice, explanation, person_explanation
from cqsens.report.words import render
from cqsens.settings import NEIGHBOR_MODELS, Settings
from cqsens.witness import Witness, find_witness
from cqsens.witness.aggregate import concrete
from cqsens.witness.aggregate_search import find_aggregate_witness
from cqsens.witness.certificate import declared_hold, witness_checks_hold
from cqsens.witness.evaluate import Database, Value
from cqsens.witness.person import find_person_witness
from cqsens.witness.references import references_hold, with_references
from cqsens.witness.schema_checks import column_checks, finite_columns
from cqsens.witness.schema_checks import keys as witness_keys
from cqsens.witness.writers import replayed

__all__ = [
    "PIPELINE",
    "Analysis",
    "Options",
    "State",
    "analyze",
    "analyze_with",
    "jsonable",
    "load_query",
    "resolve_sigma",
    "stage_bound",
    "stage_explain",
    "stage_noise",
    "stage_paper",
    "stage_release",
    "stage_witness",
]


SQLITE_MAX_JOIN = 64  # SQLite's limit on the tables of one join
SQLITE_MAX_COLUMN = 2000  # SQLite's default limit on the columns of one table
SQLITE_MAX_INTEGER = 2**63 - 1  # SQLite's INTEGER is a signed 64-bit integer


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


@dataclass(frozen=True, slots=True)
class Options:
    """What an analysis takes besides the query and Σ: the user's :class:`Settings`, the
    schema and value bounds they resolve to, the neighbourhood, and the core search budget."""

    settings: Settings = Settings()
    schema: Schema | None = None
    nb: Neighbourhood = Neighbourhood()
    value_bounds: Mapping[str, tuple[Exact, Exact]] = field(default_factory=dict)
    core_budget: int = CORE_BUDGET

    @property
    def rows(self) -> int | None:
        """The number of rows (``Settings.rows``)."""
        return self.settings.rows

    @property
    def prove_lower(self) -> bool:
        """Whether to search for a witness (``Settings.prove_lower``)."""
        return self.settings.prove_lower

    @property
    def witness_time(self) -> float:
        """Seconds of witness search (``Settings.witness_time``)."""
        return self.settings.witness_time

    @property
    def seed(self) -> int:
        """Seed of the witness search (``Settings.seed``)."""
        return self.settings.seed

    @property
    def epsilon(self) -> float | None:
        """ε (``Settings.epsilon``)."""
        return self.settings.epsilon

    @property
    def delta(self) -> float | None:
        """δ (``Settings.delta``)."""
        return self.settings.delta


@dataclass(frozen=True, slots=True)
class State:
    """What the stages pass along; each stage fills its own fields."""

    query: AggregateQuery
    sigma: Sigma
    options: Options = Options()
    notes: tuple[str, ...] = ()
    counted: CountBound | None = None
    delta_str: Weight = math.inf
    paper: Mapping[str, PaperValue] = field(default_factory=dict)
    explanation: tuple[str, ...] = ()
    suggestion: tuple[str, ...] = ()
    release: AggregateBound | None = None
    aggregates: tuple[AggregateRecord, ...] = ()
    witness: Witness | None = None
    lower: Weight | None = None
    lower_note: str = ""
    noise: NoiseCalibration | None = None
    person: PersonBound | None = None

    @property
    def count(self) -> CountBound:
        """The count bound (after :func:`stage_bound`)."""
        if self.counted is None:
            raise ValueError("stage_bound has not run")
        return self.counted


def stage_bound(state: State) -> State:
    """Chase, cores and the count bound, once; Δ_STR without constraints beside it."""
    nb = state.options.nb
    public = nb.public
    counted = count_bound(state.query.cq, state.sigma, budget=state.options.core_budget,
                          public=public, references=nb.kept_references)
    notes = state.notes
    if not counted.minimal:
        notes += ("the core search hit its budget: the core shown may not be minimal "
                  "(bounds stay sound, possibly less tight)",)
    delta_str = upper_bound(counted.plain, Sigma.of(), public=public).value
    person = _person(state, counted)
    return replace(state, counted=counted, delta_str=delta_str, notes=notes, person=person)


def _person(state: State, counted: CountBound) -> PersonBound | None:
    """The count bound for one person (the smaller over the chased and the plain core)."""
    nb, schema = state.options.nb, state.options.schema
    if nb.unit is None or schema is None:
        return None
    unit = nb.unit
    chased = person_bound(counted.core, state.sigma, unit=unit, schema=schema,
                          public=nb.public)
    if counted.plain == counted.core or not counted.core.satisfiable:
        return chased
    plain = person_bound(counted.plain, state.sigma, unit=unit, schema=schema,
                         public=nb.public)
    return plain if plain.value < chased.value else chased


def stage_paper(state: State) -> State:
    """The paper's literal Δ_STR, Thm 13 and Thm 17 values."""
    cq, counted, sigma = state.query.cq, state.count, state.sigma
    paper: dict[str, PaperValue] = {"delta_str": delta_str_paper(cq)}
    fds = sigma.fds()
    if fds:
        upper, lower = fd_bounds_paper(counted.core, fds, in_cq_core=in_cq_core(cq))
        paper["fd_upper"], paper["fd_lower"] = upper, lower
    else:
        paper["fd_upper"] = paper["fd_lower"] = PaperValue(
            None, "no functional dependency given", applies=False)
    paper["cd_upper"] = (cd_upper_paper(counted.plain, sigma) if sigma
                         else PaperValue(None, "no dependency given", applies=False))
    return replace(state, paper=paper)


def stage_explain(state: State) -> State:
    """The explanation of the count bound, and advice when it is unbounded."""
    counted = state.count
    lines = tuple(explanation(state.query, counted, public=state.options.nb.public)
                  if state.person is None
                  else person_explanation(state.query, counted, state.person,
                                          public=state.options.nb.public))
    found: list[Advice] = []
    if state.person is not None:
        if state.person.value == math.inf:
            found = person_suggestion(state.person, state.sigma, counted.core,
                                      state.options.schema, state.query)
    elif counted.bound.value == math.inf:
        found = suggestion(state.query, state.sigma, counted.core, state.options.schema,
                           public=state.options.nb.public,
                           references=state.options.nb.kept_references)
    return replace(state, explanation=lines, suggestion=tuple(advice(s) for s in found))


def _count_upper(state: State, cq: CQ, aggregate: Aggregate | None = None) -> Weight:
    """The count bound of another head over the same body (for one person with a unit),
    capped by the finite domains of the head (:func:`_domain_cap`)."""
    return min(_engine_count_upper(state, cq), _domain_cap(state, cq, aggregate))


def _engine_count_upper(state: State, cq: CQ) -> Weight:
    """The count bound of the engine's rules for a head over the query's body."""
    if cq.head == state.query.cq.head:
        return state.count.bound.value if state.person is None else state.person.value
    other = count_bound(cq, state.sigma, budget=state.options.core_budget,
                        public=state.options.nb.public,
                        references=state.options.nb.kept_references)
    if state.person is None:
        return other.bound.value
    person = _person(state, other)
    assert person is not None
    return person.value


def _domain_cap(state: State, cq: CQ, aggregate: Aggregate | None) -> Weight:
    """The most answers ``cq`` can have when its head terms have finite domains, and with
    GROUP BY the groups one tuple can touch times the answers per group (docs/rules.md,
    rule finite-domains)."""
    return _domain_cap_why(state, cq, aggregate)[0]


def _domain_cap_why(state: State, cq: CQ,
                    aggregate: Aggregate | None) -> tuple[Weight, str]:
    """:func:`_domain_cap` with the sentence that explains it."""
    schema = state.options.schema
    if schema is None:
        return math.inf, ""
    group = [t for t in state.query.group_by if t in cq.head]
    # COUNT(DISTINCT c) skips a NULL c; with several columns a dialect may count a tuple
    # holding a NULL (a row value is not NULL), so only one column is taken as NULL-free
    counted = set(aggregate.columns) if aggregate is not None \
        and aggregate.kind == "count_distinct" and len(aggregate.columns) == 1 else set()
    non_null = counted - set(group)
    whole = domain_cap(cq, schema, non_null=non_null)
    best, why = whole.value, (f"the answers are tuples of {'; '.join(whole.parts)}"
                              if whole.parts else "")
    rest = tuple(t for t in cq.head if t not in group)
    if group and rest:
        per_group = domain_cap(CQ(rest, cq.atoms, cq.name, cq.satisfiable), schema,
                               non_null=non_null)
        groups = _groups_upper(state, cq) if per_group.value < math.inf else None
        if groups is not None and groups * per_group.value < best:
            best = groups * per_group.value
            why = (f"at most {display(groups)} group(s) change, each by at most "
                   f"{display(per_group.value)}, the values of {'; '.join(per_group.parts)}")
    return best, why


def _groups_upper(state: State, cq: CQ) -> Weight | None:
    """How many groups one tuple (or person) can touch: the count bound of the query whose
    free variables are the GROUP BY variables (docs/rules.md, rule grouped-value-aggregates);
    None without GROUP BY or when a grouping term is not a variable of the body."""
    group_by = state.query.group_by
    body = {t for a in cq.relation_atoms() for t in a.terms}
    if not group_by or not all(isinstance(g, Var) and g in body for g in group_by):
        return None
    head = tuple(dict.fromkeys(g for g in group_by if isinstance(g, Var)))
    return _count_upper(state, CQ(head, cq.atoms, cq.name, cq.satisfiable))


def _cap_line(state: State, cq: CQ, aggregate: Aggregate, value: Weight) -> str:
    """The explanation of a count bound lowered by finite domains (docs/rules.md, rule
    finite-domains), rendered from its derivation."""
    why = _domain_cap_why(state, cq, aggregate)[1]
    return render(Derivation(Rule.FINITE_DOMAINS, value, _neighbourhood(state),
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
    records: list[AggregateRecord] = []
    notes = state.notes
    capped: tuple[str, ...] = ()
    for index, agg in enumerate(query.aggregates):
        count_delta = _count_upper(state, query.cq_for(index), agg)
        engine_delta = _engine_count_upper(state, query.cq_for(index))
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
                            groups=_groups_upper(state, query.cq_for(index))
                            if agg.kind in VALUE_KINDS and agg.kind != "sum" else None)
        b = replace(b, derivation=for_unit(b.derivation, _neighbourhood(state).unit))
        bounds.append(b)
        records.append(AggregateRecord(agg.label, agg.kind, count_delta, b.l1, b.l2,
                                       b.derivation,
                                       values.describe() if values is not None else None))
    release = combine(bounds)
    release = replace(release, derivation=for_unit(release.derivation,
                                                         _neighbourhood(state).unit))
    lines = state.explanation + capped
    if len(records) > 1 or records[0].kind not in ("count", "count_distinct") \
            or options.nb.contributions > 1 or query.group_by:
        lines += (f"Released statistic: {render(release.derivation).rstrip('.')}.",)
    return replace(state, release=release, aggregates=tuple(records), explanation=lines,
                   notes=notes)


def _public_tables(names: Sequence[str], query: AggregateQuery,
                   schema: Schema | None) -> frozenset[str]:
    """The public tables, spelled as the query spells them; an unknown name is an error."""
    known = {r.lower(): r for r in query.cq.relations()}
    out: set[str] = set()
    for name in (n.strip() for item in names for n in item.split(",") if n.strip()):
        if name.lower() in known:
            out.add(known[name.lower()])
        elif schema is None or schema.find(name) is None:
            tables = ", ".join(sorted(known)) or "none"
            raise InputError(f"--public names table {name}, which the query does not use "
                             f"(it uses: {tables})", source="--public", construct="--public")
    return frozenset(out)


def _references(schema: Schema | None) -> References:
    """The schema's foreign keys for the engine, each with the text it reads as."""
    if schema is None:
        return ()
    return tuple((r.name, fk, r.describe_foreign_key(fk, target))
                 for r, fk, target in schema.foreign_keys())


def _row_identity_keys(query: AggregateQuery) -> list[Dependency]:
    """A row identity is a key of its row: ``R[*->c]`` for every other column c."""
    arities = query.cq.relations()
    return [Dependency(relation, row, j, 1)
            for relation, row in sorted(query.row_positions.items())
            for j in range(arities.get(relation, 0)) if j != row]


def _nullable(schema: Schema | None, column: str) -> bool:
    """Whether ``Table.column`` may hold NULL (True without a schema that says otherwise)."""
    table, _, name = column.partition(".")
    rel = schema.find(table) if schema is not None else None
    position = rel.index(name) if rel is not None else None
    return rel is None or position is None or rel.nullable(position)


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
    if query.opaque_filters and state.person is None:  # a person's pair runs the whole SQL
        return replace(state, lower_note=(
            "not searched: a condition reads public tables through a subquery, and the "
            "witness search does not build public tables"))
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


def stage_noise(state: State) -> State:
    """Laplace scale Δ1/ε and analytic Gaussian σ, when ε is given."""
    epsilon, release = state.options.epsilon, state.release
    if epsilon is None or release is None:
        return state
    # the calibration works in floats: the sensitivities enter rounded up
    noise = calibrate(display(release.l1), display(release.l2), epsilon=epsilon,
                      delta=state.options.delta)
    return replace(state, noise=noise)


PIPELINE: tuple[Callable[[State], State], ...] = (
    stage_bound, stage_paper, stage_explain, stage_release, stage_witness, stage_noise,
)


def _analysis(state: State) -> Analysis:
    query, counted, release = state.query, state.count, state.release
    assert release is not None
    return Analysis(
        query=query.text.strip(),
        source=query.source,
        query_obj=query,
        sigma=state.sigma,
        cq=query.cq,
        core=counted.core,
        connected=is_connected(counted.core),
        satisfiable=counted.core.satisfiable,
        delta_str=state.delta_str,
        paper=state.paper,
        upper=release.l1,
        lower=state.lower,
        neighbor=state.options.nb.model,
        l1=release.l1,
        l2=release.l2,
        explanation=state.explanation,
        bound=counted.bound,
        notes=state.notes,
        core_minimal=counted.minimal,
        suggestion=state.suggestion,
        witness=state.witness,
        lower_note=state.lower_note,
        aggregates=state.aggregates,
        contributions=state.options.nb.contributions,
        noise=state.noise,
        unit=state.options.nb.unit.text if state.options.nb.unit is not None else None,
        dependency_names=tuple(named_dependency(d, query, state.options.schema)
                               for d in state.sigma),
        derivation=_count_derivation(state),
        nb=state.options.nb,
    )


def _neighbourhood(state: State) -> Neighbourhood:
    """The neighbour relation of the analysis: unit, model and rows per individual."""
    return state.options.nb


def _count_derivation(state: State) -> Derivation:
    """The count bound's derivation: one person's with a unit, else one row's."""
    if state.person is not None:
        return person_derivation(state.person, _neighbourhood(state))
    counted = state.count
    return count_derivation(counted.core, counted.bound, _neighbourhood(state))


def analyze(
    source: str | Path,
    *,
    schema: str | Path | Schema | None = None,
    fds: Sequence[str | Dependency] = (),
    cds: Sequence[str | Dependency] = (),
    constraints: str | Path | None = None,
    dialect: str | None = None,
    neighbor: str = "add-remove",
    kind: str | None = None,
    name: str | None = None,
    prove_lower: bool = True,
    witness_time: float = 0.5,
    seed: int = 0,
    bounds: Sequence[str] = (),
    contributions: int = 1,
    rows: int | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    timeout: float | None = 30.0,
    public: Sequence[str] = (),
    unit: str | None = None,
    owner: Sequence[str] = (),
) -> Analysis:
    """Analyse one counting query: sensitivity bounds, the paper's values and why.

    Parameters
    ----------
    source : str or Path
        SQL text, CQ text, or a path to a ``.sql``/``.cq`` file.
    schema : str, Path or Schema, optional
        DDL text, a DDL file, or a parsed schema.
    fds, cds : sequences
        ``"PatDoc[1->2]"`` / ``"PatDoc[1->2]<=3"`` strings or Dependency values.
    constraints : path, optional
        A file with one dependency per line (``#`` comments).
    dialect : str, optional
        sqlglot dialect of the SQL.
    neighbor : {"add-remove", "substitute"}
        The neighbour model.
    kind : {"sql", "cq"}, optional
        Force the input language (otherwise guessed).
    name : str, optional
        Source name used in messages.
    prove_lower : bool
        Search for a witness (two databases) proving a lower bound; without
        one ``lower`` is None.
    witness_time : float
        Seconds the witness search may take in all (constructions, then a local
        search when they do not reach the upper bound).
    seed : int
        Seed of that search (results are reproducible).
    bounds : sequence of str
        Value bounds ``"Table.column=low:high"`` for SUM/AVG/MEDIAN/MIN/MAX.
    contributions : int
        Tuples one individual may own (a neighbour relation of order k
        multiplies the sensitivity by k, Observation 1).
    rows : int, optional
        Number of rows, for the parity rule of a single-table MEDIAN.
    epsilon, delta : float, optional
        Privacy parameters: the output then gives the Laplace scale and the
        analytic Gaussian σ.
    public : sequence of str
        Public tables: their rows are the same in both neighbours (reference
        data such as a product catalogue), so they never play the added or
        removed row (docs/rules.md, rule public-tables).
    unit : str, optional
        The privacy unit, ``"users"`` or ``"users.id"``: neighbours differ by one
        row of that table and every row that references it through foreign keys
        (needs the schema; docs/rules.md, rule privacy-unit).  Every table the
        query reads must then be public or reach the unit along NOT NULL foreign
        keys (docs/rules.md, rule ownership).
    owner : sequence of str
        The foreign keys that carry ownership to the unit (``"orders.uid"``);
        empty: every foreign key.  Others, self-references included, are
        ordinary references.
    timeout : float or None
        Seconds the whole analysis may take (``None`` or ``math.inf``: no
        limit).  The witness search stops early to stay within it; any other
        stage still running at the deadline raises :class:`TimeLimitError`.

    Returns
    -------
    Analysis

    Raises
    ------
    InputError
        Any bad input (query, schema, dependency), with file, position and construct.
    TimeLimitError
        The analysis did not finish within ``timeout``.

    Examples
    --------
    >>> a = analyze("Q(x) :- R(x, y), S(y, z)")
    >>> a.to_dict()["delta_str"], a.upper
    ('inf', inf)
    >>> analyze("Q(x) :- R(x, y), S(y, z)", fds=["S[1->2]", "R[2->1]"]).upper
    1
    """
    return analyze_with(source, Settings(
        schema=schema, fds=tuple(fds), cds=tuple(cds), constraints=constraints,
        dialect=dialect, neighbor=neighbor, prove_lower=prove_lower, witness_time=witness_time,
        seed=seed, bounds=tuple(bounds), contributions=contributions, rows=rows,
        epsilon=epsilon, delta=delta, timeout=timeout, public=tuple(public), unit=unit,
        owner=tuple(owner)), kind=kind, name=name)


def check_settings(settings: Settings) -> None:
    """Refuse settings that no analysis can take, before any work.

    Raises
    ------
    InputError
        An unknown neighbour model, fewer than one contribution, ``owner`` without
        ``unit``, ``contributions`` with ``unit``, a timeout that is not > 0, or ε/δ
        beyond cqsens's limits (docs/model.md, Limits and safety).
    """
    neighbor, contributions = settings.neighbor, settings.contributions
    if neighbor not in NEIGHBOR_MODELS:
        raise InputError(f"unknown neighbour model {neighbor!r} (choose add-remove or substitute)",
                         construct="--neighbor")
    if contributions < 1:
        raise InputError(f"--contributions must be at least 1, got {contributions}",
                         construct="--contributions")
    if settings.owner and settings.unit is None:
        raise InputError("--owner names the foreign keys that carry ownership to the privacy "
                         "unit; give the unit too (--unit TABLE)", construct="--owner")
    if settings.unit is not None and contributions != 1:
        raise InputError("--contributions counts rows per person at row level; with --unit the "
                         "unit's foreign keys say which rows one person has: use one or the "
                         "other", construct="--contributions")
    timeout = settings.timeout
    if timeout is not None and not timeout > 0:  # also NaN
        raise InputError(f"--timeout must be a number of seconds > 0 (inf for no limit), "
                         f"got {timeout}", construct="--timeout")
    if settings.epsilon is not None or settings.delta is not None:
        check_privacy(1.0 if settings.epsilon is None else settings.epsilon, settings.delta)


def analyze_with(source: str | Path, settings: Settings, *, kind: str | None = None,
                 name: str | None = None) -> Analysis:
    """:func:`analyze` with its settings as one :class:`~cqsens.settings.Settings` value.

    Parameters
    ----------
    source : str or Path
        SQL text, CQ text, or a path to a ``.sql``/``.cq`` file.
    settings : Settings
        Every setting; the fields are the keywords of :func:`analyze` (the release
        settings ``ledger``, ``budget``, ``delta_budget`` and ``keys`` are not read).
    kind : {"sql", "cq"}, optional
        Force the input language (otherwise guessed).
    name : str, optional
        Source name used in messages.

    Returns
    -------
    Analysis

    Examples
    --------
    >>> analyze_with("Q(x) :- R(x, y), S(y, z)", Settings(fds=("S[1->2]", "R[2->1]"))).upper
    1
    """
    check_settings(settings)
    with deadline(settings.timeout):
        return _analyze(source, settings, kind=kind, name=name)


def _analyze(source: str | Path, settings: Settings, *, kind: str | None,
             name: str | None) -> Analysis:
    dialect = settings.dialect
    cli_bounds = parse_value_bounds(settings.bounds)
    parsed_schema = load_schema(settings.schema, dialect=dialect)
    check_value_bounds(cli_bounds, parsed_schema)
    unit = settings.unit
    resolved = resolve_unit(unit, parsed_schema, settings.owner) if unit is not None else None
    query = load_statement(source, schema=parsed_schema, dialect=dialect, kind=kind, name=name,
                           public=frozenset(settings.public_tables()),
                           owner=owner_key(parsed_schema, resolved)
                           if resolved is not None and parsed_schema is not None else None)
    nb = Neighbourhood(model=settings.neighbor, contributions=settings.contributions,
                       unit=resolved, references=_references(parsed_schema))
    options = Options(settings=settings, schema=parsed_schema, nb=nb, value_bounds=cli_bounds)
    if isinstance(query, CompoundQuery):
        return _analyze_compound(query, options)
    return _analyze_one(query, options)


def _analyze_one(query: AggregateQuery, options: Options) -> Analysis:
    settings, parsed_schema = options.settings, options.schema
    sigma, notes = resolve_sigma(query, schema=parsed_schema, fds=settings.fds, cds=settings.cds,
                                 constraints=settings.constraints)
    sigma = Sigma.of([*sigma, *_row_identity_keys(query)])
    public = settings.public_tables()
    nb = replace(options.nb, public=_public_tables(public, query, parsed_schema))
    options = replace(options, nb=nb)
    if nb.unit is not None and parsed_schema is not None:
        check_ownership(parsed_schema, nb.unit, query.cq, list(public))
    state = State(query, sigma, options, notes=tuple(query.notes) + tuple(notes))
    for stage in PIPELINE:
        state = stage(state)
    return _analysis(state)


def _analyze_compound(compound: CompoundQuery, options: Options) -> Analysis:
    """Each part analysed on its own (a nested part recursively), then combined
    (docs/rules.md, rule set-operations)."""
    settings = options.settings
    used = [tuple(q.relations() if isinstance(q, CompoundQuery) else q.cq.relations())
            for q in compound.parts]
    everywhere = [r for rels in used for r in rels]
    tables = list(settings.public_tables())
    parts: list[Analysis] = []
    for index, part in enumerate(compound.parts):
        names, first = used[index], index == 0
        share = replace(settings, witness_time=settings.witness_time / len(compound.parts),
                        epsilon=None, delta=None,
                        fds=tuple(part_items(settings.fds, names, everywhere, first=first)),
                        cds=tuple(part_items(settings.cds, names, everywhere, first=first)),
                        public=tuple(part_items(tables, names, everywhere, first=first)))
        if isinstance(part, CompoundQuery):
            parts.append(_analyze_compound(part, replace(options, settings=share)))
        else:
            parts.append(_analyze_one(part, replace(options, settings=share)))
    return combine_analyses(compound, parts, schema=options.schema, epsilon=options.epsilon,
                            delta=options.delta, prove_lower=options.prove_lower)
