"""Witnesses for a privacy unit: two databases that differ by one whole person.

A person is a row ``u`` of the unit table with every row that references it
along foreign keys (its *cascade*).  The search builds a database ``D*`` where
one person's rows meet many answers: the row-level constructions of
:func:`~cqsens.witness.search.find_witness` run on the query extended by the
chain of foreign keys to the unit table (:mod:`cqsens.engine.person`), with a
row of the unit table playing the added row, and the rows those keys
reference are completed (:mod:`cqsens.witness.references`).  Then every person
``u`` of ``D*`` is tried: ``D*`` without ``u``'s cascade is the smaller
database, which keeps every foreign key, and the user's query is run on both.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from cqsens.engine.paths import Step
from cqsens.engine.person import PersonBound, PersonGroup
from cqsens.engine.upper import upper_bound
from cqsens.frontend.sqlgen import sqlite_query
from cqsens.ir.cq import AggregateQuery, Var
from cqsens.ir.dependencies import Sigma
from cqsens.ir.exact import Exact, display, json_number
from cqsens.ir.expr import Predicate
from cqsens.ir.schema import Schema
from cqsens.ir.semantics import Undecided, value_of
from cqsens.ir.semantics import Value as SqlValue
from cqsens.witness.aggregate import exact_text, released_pair, renamed, show_released
from cqsens.witness.evaluate import Database, Value, count_answers
from cqsens.witness.model import Witness
from cqsens.witness.person_build import aggregate_hints, build_person, ranged_variables
from cqsens.witness.references import (
    complete,
    declared_clauses,
    references_hold,
    schema_references,
)
from cqsens.witness.search import find_witness

__all__ = ["PersonWitness", "cascade", "find_person_witness", "witness_change"]

Row = tuple[Value, ...]
Owners = frozenset[tuple[str, tuple[int, ...]]] | None


@dataclass(frozen=True)
class PersonWitness(Witness):
    """``database`` (A) and A plus one person's rows ``added`` (the unit row first)."""

    added: tuple[tuple[str, Row], ...] = ()
    unit: str = ""
    owners: Owners = None  # the foreign keys that carry ownership (None: every one)
    change: Fraction = Fraction(0)
    before: str = ""
    after_text: str = ""

    @property
    def lower(self) -> Any:
        """The change of the released value: the lower bound this witness proves."""
        return self.change.numerator if self.change.denominator == 1 else self.change

    @property
    def after(self) -> Database:
        """A with the person's rows."""
        db = self.database
        for relation, row in self.added:
            db = db.with_row(relation, row)
        return db

    def summary(self) -> str:
        """One line for people."""
        return (f"A has {self.database.size()} rows; adding one person, {self.relation}"
                f"{self.shown_row!r} with {len(self.added) - 1} row(s) that reference it, "
                f"changes the released value from {self.before} to {self.after_text} "
                f"(change {exact_text(self.lower)}; {self.construction})")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record."""
        out = super().to_dict()
        out.update({
            "unit": self.unit,
            "person": [{"relation": r, "row": list(self._visible(r, row))}
                       for r, row in self.added],
            "released_before": self.before,
            "released_after": self.after_text,
            "difference": json_number(self.lower),
            "summary": self.summary(),
        })
        return out


def witness_change(query: AggregateQuery, before: Database, after: Database) -> Fraction | None:
    """The change of the released value between ``before`` and ``after``, run in SQLite:
    the count for a single COUNT (or a CQ), else (and whenever a condition is kept out of
    the CQ: a public subquery, a person-local filter) the ℓ1 change of the released vector
    the user's SQL gives."""
    got = _change(query, before, after)
    return None if got is None else got[0]


def _change(query: AggregateQuery, before: Database, after: Database) -> \
        tuple[Fraction, str, str] | None:
    if query.sql is None or len(query.aggregates) == 1 and not query.group_by \
            and query.aggregate in ("count", "count_distinct") and not query.opaque_filters:
        x, y = count_answers(query, before), count_answers(query, after)
        return Fraction(abs(y - x)), str(x), str(y)
    sql = sqlite_query(query.sql, query.dialect) or ""
    pair = released_pair(query, before, after, sql)
    return None if pair is None else (pair[2][0], show_released(pair[0]),
                                      show_released(pair[1]))


def cascade(db: Database, relation: str, row: Row, schema: Schema,
            owners: Owners = None) -> list[tuple[str, Row]]:
    """``row`` of ``relation`` and every row of ``db`` that references it along foreign
    keys that carry ownership (``owners``; None: every key), the referenced rows first."""
    references = [(t, fk) for t, fk in schema_references(schema)
                  if owners is None or (t.lower(), fk.columns) in owners]
    out: dict[tuple[str, Row], None] = {(relation, row): None}
    changed = True
    while changed:
        changed = False
        for referencing, fk in references:
            held = {tuple(r[p] for p in fk.referenced) for (t, r) in out
                    if t.lower() == fk.table.lower()}
            name = next((t for t in db.rows if t.lower() == referencing.lower()), None)
            if not held or name is None:
                continue
            for r in sorted(db.rows[name], key=repr):
                if (name, r) not in out and tuple(r[c] for c in fk.columns) in held:
                    out[(name, r)] = None
                    changed = True
    return list(out)


@dataclass
class _Search:
    query: AggregateQuery
    schema: Schema
    valid: Callable[[Database], bool]
    column_checks: Mapping[tuple[str, int], Sequence[Predicate]]
    hidden: dict[str, int] = field(default_factory=dict)
    owners: Owners = None
    extremes: Mapping[tuple[str, int], Value] = field(default_factory=dict)
    background: Mapping[tuple[str, int], Value] = field(default_factory=dict)
    unit: str = ""

    def doubled(self, full: Database) -> Database | None:
        """``full`` with a renamed copy of its rows beside it (another person and what
        it references), the copy's released columns at ``background``: removing one
        person then leaves the other, so MIN, MAX, AVG and MEDIAN stay defined."""
        identities = self.identities(full)
        if identities:  # the copy differs in its keys only: the same groups, filters met
            rename = renamed(full, lambda r, p, v: (r.lower(), p) not in identities, 7)
        else:
            kept = set(self.column_checks) | set(self.background)
            rename = renamed(full, lambda r, p, v: (r, p) in kept, 7)
        out = full
        for relation, rows in full.as_lists().items():  # renamed numbers values as met
            for row in rows:
                new = tuple(self.background.get((relation, p), v)
                            for p, v in enumerate(rename(relation, row)))
                out = out.with_row(relation, new)
        ok = references_hold(out, self.schema) and self.valid(out)
        return out if ok and out != full else None

    def identities(self, full: Database) -> frozenset[tuple[str, int]]:
        """The key columns of the tables a person owns in ``full`` and the foreign-key
        columns that reference them (relation in lower case, position)."""
        unit = next((t for t in full.rows if t.lower() == self.unit.lower()), None)
        if unit is None or not full.rows[unit]:
            return frozenset()
        owned = {r.lower() for r, _ in cascade(full, unit, min(full.rows[unit], key=repr),
                                               self.schema, self.owners)}
        out: set[tuple[str, int]] = set()
        for name in owned:
            table = self.schema.find(name)
            if table is not None:
                out.update((name, p) for p in (*table.keys, *table.primary_key,
                                               *(q for k in table.composite_keys for q in k)))
        for relation, fk, target in self.schema.foreign_keys():
            out.update((relation.name.lower(), c) for c, q in zip(fk.columns, fk.referenced,
                                                                  strict=False)
                       if (target.name.lower(), q) in out)
        return frozenset(out)

    def pushed(self, full: Database, rows: Sequence[tuple[str, Row]]) -> \
            tuple[Database, list[tuple[str, Row]]] | None:
        """``full`` with the person's summed values at their extreme (the bound's end
        with the larger magnitude), or None when there is none to set."""
        if not self.extremes:
            return None
        out, moved = full, []
        for relation, row in rows:
            new = tuple(self.extremes.get((relation, p), v) for p, v in enumerate(row))
            if new != row:
                out = out.without_row(relation, row).with_row(relation, new)
            moved.append((relation, new))
        return (out, moved) if out != full else None

    def best_or_doubled(self, full: Database, unit: str, *, push: bool = True
                        ) -> PersonWitness | None:
        """:meth:`best_person` of ``full`` or, with a background, of :meth:`doubled`
        ``full`` (one of ``full``'s persons), whichever changes the released value more
        (``full`` first on a tie)."""
        person = self.best_person(full, unit, push=push)
        doubled = self.doubled(full) if self.background else None
        other = self.best_person(doubled, unit, only=full, push=push) \
            if doubled is not None else None
        if other is not None and (person is None or other.change > person.change):
            return other
        return person

    def best_person(self, full: Database, unit: str, *, only: Database | None = None,
                    push: bool = True) -> PersonWitness | None:
        """The person of ``full`` whose removal changes the released value most (one of
        ``only``'s persons when given; ``push``: also with the summed values at their
        extremes)."""
        name = next((t for t in full.rows if t.lower() == unit.lower()), None)
        if name is None:
            return None
        best: PersonWitness | None = None
        units = full.rows[name] if only is None \
            else full.rows[name] & only.rows.get(name, frozenset())
        for row in sorted(units, key=repr)[:50]:
            rows = cascade(full, name, row, self.schema, self.owners)
            smaller = full
            for relation, r in rows:
                smaller = smaller.without_row(relation, r)
            if not references_hold(smaller, self.schema) or not self.valid(smaller):
                continue
            pushed = self.pushed(full, rows) if push else None
            for bigger, person in ((full, rows), *((pushed,) if pushed else ())):
                if bigger is not full and not self.valid(bigger):
                    continue
                got = _change(self.query, smaller, bigger)
                if got is None or got[0] == 0:
                    continue
                if best is None or got[0] > best.change:
                    best = PersonWitness(
                        smaller, name, person[0][1], 0, 0, "", added=tuple(person),
                        change=got[0], before=got[1], after_text=got[2],
                        hidden=tuple(sorted(self.hidden.items())))
        return best


def find_person_witness(
    query: AggregateQuery,
    sigma: Sigma,
    person: PersonBound,
    *,
    schema: Schema,
    upper: Exact,
    valid: Callable[[Database], bool],
    column_checks: Mapping[tuple[str, int], Sequence[Predicate]],
    keys: Mapping[str, tuple[tuple[int, ...], ...]],
    time_budget: float,
    seed: int = 0,
    extremes: Mapping[tuple[str, int], Value] | None = None,
    background: Mapping[tuple[str, int], Value] | None = None,
) -> PersonWitness | None:
    """Two databases one person apart whose released values differ most, or None.

    Each group of :class:`~cqsens.engine.person.PersonBound` (largest first)
    gives a query extended to the unit table; its row-level witness with a row
    of the unit table added is ``D*`` (after completing referenced rows), and
    every person of ``D*`` is tried.  ``valid`` checks everything declared but
    the foreign keys, which are checked here.  ``extremes`` are values to try in the
    person's rows (relation, position → value): the released columns at the bound's end
    that moves the value most; ``background`` the values of a second person kept beside
    (the other end), so that MIN, MAX, AVG and MEDIAN are defined without the first.
    """
    search = _Search(query, schema, valid, column_checks,
                     hidden=dict(query.row_positions), owners=person.unit.owners,
                     extremes=dict(extremes or {}),
                     background=dict(background or {}), unit=person.unit.table)
    unit = person.unit.table
    groups = sorted(person.groups, key=lambda g: -g.value if g.value != math.inf else -1e300)
    best: PersonWitness | None = None
    share = time_budget / max(len(groups[:3]), 1)
    for group in groups[:3]:
        found = _from_group(search, query, sigma, group, unit, upper, column_checks, keys,
                            share, seed)
        if found is not None and (best is None or found.change > best.change):
            best = found
            if upper != math.inf and best.change >= upper:
                break
    if best is None:
        return None
    return replace(best, constraints=declared_clauses(best.after, schema), unit=person.unit.text,
                   owners=person.unit.owners)


def _from_group(search: _Search, query: AggregateQuery, sigma: Sigma, group: PersonGroup,
                unit: str, upper: Exact,
                column_checks: Mapping[tuple[str, int], Sequence[Predicate]],
                keys: Mapping[str, tuple[tuple[int, ...], ...]], time_budget: float,
                seed: int) -> PersonWitness | None:
    extended = group.extended
    relations = {a.relation for a in extended.relation_atoms()}
    columns = dict(query.columns)
    for name in relations:
        if name not in columns:
            table = search.schema.find(name)
            if table is None:
                return None
            columns[name] = table.columns
    built = _built(search, group, unit, columns, column_checks, upper)
    if built is not None and upper != math.inf and built.change >= upper:
        return built  # the bound's own construction reaches it; below, the search (a
        # growing family for an unbounded query, a better person for a loose one)
    others = frozenset(r for r in relations if r.lower() != unit.lower())
    bound = upper_bound(extended, sigma, public=others)
    base = find_witness(
        AggregateQuery(cq=extended, columns=columns, row_positions=query.row_positions),
        sigma, extended, upper=display(upper), columns=columns, time_budget=time_budget, seed=seed,
        column_checks=column_checks, bound=bound, keys=keys, public=others,
        column_types={r.name: r.types for r in search.schema.relations},
        reach=bound.value)  # a D* with as many answers as the count allows is not beaten
    if base is None:
        return built
    full = complete(base.database.with_row(base.relation, base.row), [], schema=search.schema,
                    column_checks=column_checks, hidden=search.hidden)
    if full is None or not references_hold(full, search.schema) or not search.valid(full):
        return None
    full = with_every_table(full, search.schema)
    person = search.best_or_doubled(full, unit)
    if built is not None and (person is None or built.change >= person.change):
        return built
    if person is None:
        return None
    return replace(person, checks=base.checks,
                   construction=f"{base.construction}, along {'; '.join(group.chains)}")


def _built(search: _Search, group: PersonGroup, unit: str,
           columns: Mapping[str, tuple[str, ...]],
           column_checks: Mapping[tuple[str, int], Sequence[Predicate]],
           upper: Exact = math.inf) -> PersonWitness | None:
    """The best person of ``D*`` built along the group's own steps
    (:func:`~cqsens.witness.person_build.build_person`), checked like every other; the
    ends and hints in a fixed order, stopping at the upper bound."""
    best: PersonWitness | None = None
    hints = aggregate_hints(search.query)
    ranges = ranged_variables(group.extended, column_checks)
    # for sums, averages and counts the first choice that builds (the largest values,
    # the CASE's own literals) is kept; MIN, MAX and MEDIAN try every choice
    first = all(a.kind in ("count", "count_distinct", "sum", "avg")
                for a in search.query.aggregates)
    for ends, hinted, spread in _build_choices(search.query, ranges, hints):
        found = _built_with(search, group, unit, columns, column_checks, ends, hinted, spread)
        if found is not None and (best is None or found.change > best.change):
            best = found
            if found.change >= upper or (first and not spread):
                return best
    return best


def _build_choices(query: AggregateQuery, ranges: Mapping[str, tuple[Exact, Exact]],
                   hints: Mapping[str, Sequence[Value]]) -> Iterator[
                       tuple[dict[str, bool], Mapping[str, Sequence[Value]], frozenset[str]]]:
    """The builds to try in order: ends × hints, and first, for a grouped AVG, the
    person's rows spread over distinct groups (each group's average then moves by
    ``d/(n + d)`` of the range for few rows ``d``: docs/rules.md, rule
    grouped-value-aggregates)."""
    choices = _end_choices(query, ranges, hints)
    groups = frozenset(g.name for g in query.group_by if isinstance(g, Var))
    if groups and any(a.kind == "avg" for a in query.aggregates):
        yield choices[0], hints, groups
    for ends in choices:
        for hinted in ((hints, {}) if hints else ({},)):
            yield ends, hinted, frozenset()


def _end_choices(query: AggregateQuery, ranges: Mapping[str, tuple[Exact, Exact]],
                 hints: Mapping[str, Sequence[Value]]) -> list[dict[str, bool]]:
    """Ends (high True, low False) for the variables of the summed expressions whose
    values have a finite range (``ranges``): first the ends that make the summed values
    largest (one variable at a time from all high), then each combination for up to two
    variables, else all high and all low; {} for none."""
    names = sorted({t.name for a in query.aggregates if a.kind != "count"
                    for t in (a.column, *a.terms) if isinstance(t, Var) and t.name in ranges})
    if not names:
        return [{}]
    combos = [dict(zip(names, c, strict=True))
              for c in itertools.product((True, False), repeat=len(names))] \
        if len(names) <= 2 else [dict.fromkeys(names, True), dict.fromkeys(names, False)]
    best = dict.fromkeys(names, True)
    for name in names:
        flipped = {**best, name: False}
        if _magnitude(query, flipped, ranges, hints) > _magnitude(query, best, ranges, hints):
            best = flipped
    return [best, *(c for c in combos if c != best)]


def _magnitude(query: AggregateQuery, ends: Mapping[str, bool],
               ranges: Mapping[str, tuple[Exact, Exact]],
               hints: Mapping[str, Sequence[Value]]) -> float:
    """Σ |value| of the summed expressions of one row with its variables at ``ends``."""
    def value(term: object) -> SqlValue:
        if not isinstance(term, Var):
            return None
        if term.name in ends:
            return float(ranges[term.name][1 if ends[term.name] else 0])
        return next(iter(hints.get(term.name, ())), None)

    total = 0.0
    for agg in query.aggregates:
        try:
            got = value_of(agg.expression, [value(t) for t in agg.terms]) \
                if agg.expression is not None else value(agg.column)
        except Undecided:
            continue
        total += abs(float(got)) if isinstance(got, (int, float)) else 0.0
    return total


def with_every_table(db: Database, schema: Schema) -> Database:
    """``db`` with an empty table for every table of the schema it lacks: the user's SQL
    may read one in a subquery (``NOT EXISTS (SELECT * FROM orders ...)``)."""
    held = {r.lower() for r in db.columns}
    missing = [r for r in schema.relations if r.name.lower() not in held]
    if not missing:
        return db
    return Database({**db.columns, **{r.name: r.columns for r in missing}},
                    {**db.rows, **{r.name: frozenset() for r in missing}},
                    {**db.types, **{r.name: r.types for r in missing}})


def _step_variants(steps: Sequence[Step]) -> list[Sequence[Step]]:
    """``steps``, then with the last step of weight above 1 one lower: the rows a
    second atom of the same table adds (TPC-H q21's other supplier's line) then fit
    under the declared limit beside the step's own rows (6 lines and 1, not 7 and 1)."""
    last = max((n for n, s in enumerate(steps) if s.weight != math.inf and s.weight > 1),
               default=None)
    if last is None:
        return [steps]
    lower = replace(steps[last], weight=steps[last].weight - 1)
    return [steps, [*steps[:last], lower, *steps[last + 1:]]]


def _built_with(search: _Search, group: PersonGroup, unit: str,
                columns: Mapping[str, tuple[str, ...]],
                column_checks: Mapping[tuple[str, int], Sequence[Predicate]],
                ends: Mapping[str, bool],
                hints: Mapping[str, Sequence[Value]],
                spread: frozenset[str] = frozenset()) -> PersonWitness | None:
    full: Database | None = None
    for steps in _step_variants(group.steps):
        made = build_person(group.extended, steps, group.key, schema=search.schema,
                            columns=columns, column_checks=column_checks,
                            hidden=search.hidden, ends=ends, hints=hints, spread=spread)
        full = None if made is None else complete(
            made, [], schema=search.schema, column_checks=column_checks, hidden=search.hidden)
        if full is not None and references_hold(full, search.schema) and search.valid(full):
            break
    else:
        return None
    assert full is not None
    full = with_every_table(full, search.schema)
    person = search.best_or_doubled(full, unit, push=False)  # the build put them at their ends
    if person is None:
        return None
    kept = tuple((rel, pos, t) for (rel, pos), ts in sorted(column_checks.items()) for t in ts
                 if rel in full.columns and pos < len(full.columns[rel]))
    route = "; ".join(str(s) for s in group.steps) or "the key alone"
    spread_over = f", its rows in distinct groups of {', '.join(sorted(spread))}" \
        if spread else ""
    return replace(person, checks=kept, construction=(
        f"one person built along the bound's steps ({route}){spread_over}, along "
        f"{'; '.join(group.chains)}"))
