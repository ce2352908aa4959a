"""The bound as a drawable structure, dependencies by name, and advice.

One rule decides which steps explain an atom's bound
(:func:`cqsens.engine.upper.explaining_steps`); the drawing's highlighted
route, the witness's product construction and the sentences of
:mod:`cqsens.report.explanation` all follow it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from cqsens.engine.count import count_bound
from cqsens.engine.fk_advice import FkCandidate, avoided_sources, foreign_key_candidates
from cqsens.engine.paths import Weight
from cqsens.engine.person import PersonBound, chains, person_bound
from cqsens.engine.suggest import suggest
from cqsens.engine.upper import References, UpperBound, explaining_steps, referencing_atom
from cqsens.ir.cq import CQ, AggregateQuery, Const, Var, format_term
from cqsens.ir.dependencies import AnyDependency, Dependency, MultiDependency, Sigma
from cqsens.ir.exact import Exact, json_number, text
from cqsens.ir.schema import Schema

__all__ = ["Advice", "AdviceKind", "fmt_weight", "jsonable", "named_dependency",
           "person_suggestion", "structure", "suggestion"]


ADVICE_MAX_ATOMS = 40
"""The largest query (relation atoms) for which advice is computed and confirmed."""


def jsonable(value: Exact | None) -> int | float | str | None:
    """The exact JSON form of a bound (:func:`cqsens.ir.exact.json_number`): ∞ as
    ``"inf"``, integral values as ints, a non-integer exactly (a JSON number when it
    is a double, else a string such as ``"0.1"`` or ``"20/3"``)."""
    return json_number(value)


def fmt_weight(value: Exact | None) -> str:
    """A bound for sentences: ∞, or its value rounded up to 6 significant digits."""
    return "unknown" if value is None else text(value)


def structure(core: CQ, bound: UpperBound) -> dict[str, Any]:
    """The core's canonical structure and the routes behind the bound, for drawings.

    ``elements``: name and kind (``free``, ``constant``, ``existential``);
    ``atoms``: relation, element names, whether a filter, its bound;
    ``steps``: the steps (from, to, relation, weight, atom) behind finite atom
    bounds; ``unbounded``: per unbounded atom, the free variables it cannot reach.
    """
    free = set(core.free)
    elements = []
    for term in sorted(core.elements(), key=lambda t: (isinstance(t, Var), str(t))):
        kind = "constant" if isinstance(term, Const) else "free" if term in free else "existential"
        elements.append({"name": format_term(term), "kind": kind})
    bounds = {ab.atom: ab for rel in bound.relations for ab in rel.atoms}
    atoms = []
    for atom in core.sorted_atoms():
        ab = bounds.get(atom)
        atoms.append({
            "relation": atom.template if atom.is_filter else atom.relation,
            "text": str(atom),
            "terms": [format_term(t) for t in atom.terms],
            "filter": atom.is_filter,
            "bound": jsonable(ab.value) if ab is not None else None,
            "counted": ab.counted if ab is not None else None,
        })
    steps: list[dict[str, Any]] = []
    unbounded: list[dict[str, Any]] = []
    for ab in bounds.values():
        if ab.value == math.inf:
            unbounded.append({"atom": str(ab.atom), "missing": [v.name for v in ab.unreachable]})
            continue
        for step in explaining_steps(ab):
            steps.append({"atom": str(ab.atom), "relation": step.relation,
                          "from": format_term(step.source), "to": format_term(step.target),
                          "weight": jsonable(step.weight)})
    return {"elements": elements, "atoms": atoms, "steps": steps, "unbounded": unbounded}


def _column_name(query: AggregateQuery, schema: Schema | None, relation: str, i: int) -> str:
    if query.row_positions.get(relation) == i:
        return "*"  # the row identity: R[col->*]<=k bounds the rows per value
    if schema is not None and (rel := schema.find(relation)) is not None:
        return rel.columns[i]
    columns = query.columns.get(relation)
    return columns[i] if columns and i < len(columns) else str(i + 1)


def named_dependency(dep: AnyDependency, query: AggregateQuery, schema: Schema | None) -> str:
    """``orders[uid->oid]<=20``: a dependency by the column names of the schema (or of
    the query), positions only where no name is known; ``*`` for a row identity."""
    sources = dep.sources if isinstance(dep, MultiDependency) else (dep.i,)
    left = ",".join(_column_name(query, schema, dep.relation, i) for i in sources)
    right = "*" if dep.j < 0 else _column_name(query, schema, dep.relation, dep.j)
    text = f"{dep.relation}[{left}->{right}]"
    return text if dep.k == 1 else f"{text}<={dep.k}"


def _bound_with(query: AggregateQuery, sigma: Sigma, extra: Sequence[Dependency],
                public: frozenset[str], references: References) -> Weight:
    return count_bound(query.cq, Sigma.of([*sigma, *extra]), public=public,
                       references=references).bound.value


class AdviceKind(Enum):
    """What a piece of advice says (its words: :func:`cqsens.report.explanation.advice`)."""

    TOO_LARGE = "too-large"  # not computed: more than ADVICE_MAX_ATOMS atoms
    NONE_HELPS = "none-helps"  # no single-column dependency bounds the query
    DECLARE = "declare"  # FDs (or the same as CDs <= 3) that bound the query
    FOREIGN_KEY = "foreign-key"  # undeclared foreign keys (by names and types) that bound it
    PERSON_ROWS = "person-rows"  # rows per person, from the foreign keys to the unit
    PERSON_DECLARE = "person-declare"  # rows per person and fan-outs of the query
    PERSON_NONE_HELPS = "person-none-helps"  # even the rows per person leave it unbounded


@dataclass(frozen=True, slots=True)
class Advice:
    """One piece of advice, confirmed by re-analysis.

    ``dependencies`` are named as the user writes them (``orders[uid->oid]``; for
    the person's advice with their ``<=3``); ``bound`` is the upper bound they give
    (with FDs for :attr:`AdviceKind.DECLARE`, whose ``cd_bound`` is the bound with CDs
    ``<= 3``); ``first`` is False for an alternative; ``atoms`` the query's size.
    """

    kind: AdviceKind
    dependencies: tuple[str, ...] = ()
    bound: Weight = math.inf
    cd_bound: Weight = math.inf
    first: bool = True
    atoms: int = 0


def foreign_key_advice(query: AggregateQuery, sigma: Sigma, core: CQ, schema: Schema, *,
                       public: frozenset[str], references: References) -> list[Advice]:
    """Undeclared foreign keys whose names and types match a join, kept when re-analysis
    with them bounds the query: each alone, else all of them together."""
    found = foreign_key_candidates(core, schema)
    if not found:
        return []

    def bound(chosen: Sequence[FkCandidate]) -> Weight:
        extra = tuple((c.relation, c.fk, c.text) for c in chosen)
        return count_bound(query.cq, sigma, public=public,
                           references=(*references, *extra)).bound.value

    singles = sorted(((bound([c]), n, c) for n, c in enumerate(found)),
                     key=lambda item: (item[0], item[1]))
    out = [Advice(AdviceKind.FOREIGN_KEY, (c.text, c.ddl), value, first=not n)
           for n, (value, _, c) in enumerate(item for item in singles if item[0] != math.inf)]
    if out or len(found) == 1:
        return out
    chosen = list(found)
    if bound(chosen) == math.inf:
        return []
    for c in list(found):  # greedy: drop what is not needed
        trial = [d for d in chosen if d != c]
        if bound(trial) != math.inf:
            chosen = trial
    return [Advice(AdviceKind.FOREIGN_KEY,
                   tuple(part for c in chosen for part in (c.text, c.ddl)), bound(chosen))]


def suggestion(query: AggregateQuery, sigma: Sigma, core: CQ, schema: Schema | None, *,
               public: frozenset[str] = frozenset(), references: References = (),
               keeps_references: bool = False) -> list[Advice]:
    """The fewest dependencies that bound the query, confirmed by re-analysis.

    Foreign keys the schema lacks come first when they bound the query (only when
    the neighbours keep foreign keys, ``keeps_references``); then single-column
    dependencies, never out of a measure or free-text column.
    """
    atoms = len(core.relation_atoms())
    if atoms > ADVICE_MAX_ATOMS:  # each option is confirmed by two more analyses
        return [Advice(AdviceKind.TOO_LARGE, atoms=atoms)]
    out: list[Advice] = []
    if keeps_references and schema is not None:
        out = foreign_key_advice(query, sigma, core, schema, public=public,
                                 references=references)
    skip = frozenset(a for a in core.relation_atoms()
                     if references and referencing_atom(core, a, references) is not None)
    advice = suggest(core, sigma, public=public, skip=skip,
                     avoid=avoided_sources(query, schema))
    if not advice.dependencies:
        return out or ([Advice(AdviceKind.NONE_HELPS)] if advice.disconnected else [])

    def named(dep: Dependency) -> str:
        return (f"{dep.relation}[{_column_name(query, schema, dep.relation, dep.i)}->"
                f"{_column_name(query, schema, dep.relation, dep.j)}]")

    first = not out
    for n, option in enumerate((advice.dependencies, *advice.alternatives)):
        fd_bound = _bound_with(query, sigma, option, public, references)
        cd_bound = _bound_with(query, sigma, [Dependency(d.relation, d.i, d.j, 3) for d in option],
                               public, references)
        if fd_bound == math.inf:
            continue  # not confirmed: never suggest what does not work
        out.append(Advice(AdviceKind.DECLARE, tuple(named(d) for d in option), fd_bound,
                          cd_bound, first=first and n == 0))
    return out


def person_suggestion(person: PersonBound, sigma: Sigma, core: CQ, schema: Schema | None,
                      query: AggregateQuery) -> list[Advice]:
    """Rows per person to declare: a CD from each foreign key of a table that references the
    unit to that table's key, kept when it makes the bound finite."""
    if schema is None:
        return []
    unit = person.unit
    declared = {(r.lower(), i, j) for r, i, j in sigma.weights()}
    candidates: list[tuple[Dependency, str]] = []
    for relation, fk, target in schema.foreign_keys():
        if len(fk.columns) != 1 or not unit.owns(relation.name, fk) \
                or not chains(schema, unit, relation.name):
            continue
        if relation.name.lower() == unit.table.lower() and target.name.lower() != \
                unit.table.lower():
            continue
        row = query.row_positions.get(relation.name)
        key = (relation.primary_key[0] if len(relation.primary_key) == 1
               else relation.keys[0] if relation.keys else row)
        if key is None or (relation.name.lower(), fk.columns[0], key) in declared:
            continue  # never a bound the user already declared, tighter or not
        source = relation.columns[fk.columns[0]]
        target_name = "*" if key == row else relation.columns[key]
        candidates.append((Dependency(relation.name, fk.columns[0], key, 3),
                           f"{relation.name}[{source}->{target_name}]<=3"))
    chosen = tuple(name for _, name in candidates)
    base = [d for d, _ in candidates]
    bound = (person_bound(core, Sigma.of([*sigma, *base]), unit=unit, schema=schema).value
             if candidates else math.inf)
    if bound != math.inf:
        return [Advice(AdviceKind.PERSON_ROWS, chosen, bound)]
    # the fan-outs of the query itself (a doctor's patients in a self-join on the doctor):
    # the row-level advice, kept when it bounds the count for one person
    advice = suggest(core, Sigma.of([*sigma, *base]))
    for option in (advice.dependencies, *advice.alternatives):
        extra = [Dependency(d.relation, d.i, d.j, 3) for d in option]
        value = person_bound(core, Sigma.of([*sigma, *base, *extra]), unit=unit,
                             schema=schema).value
        if value == math.inf:
            continue
        named = (*chosen, *(f"{d.relation}[{_column_name(query, schema, d.relation, d.i)}->"
                            f"{_column_name(query, schema, d.relation, d.j)}]<=3"
                            for d in extra))
        return [Advice(AdviceKind.PERSON_DECLARE, named, value)]
    if not candidates:
        return []
    return [Advice(AdviceKind.PERSON_NONE_HELPS, chosen)]
