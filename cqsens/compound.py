"""The sensitivity of a set operation, from the analyses of its parts.

A :class:`~cqsens.ir.compound.CompoundQuery` is analysed part by part (each an
ordinary conjunctive aggregate query); :func:`combine_analyses` adds the parts'
sensitivities as its ``combination`` says (docs/rules.md, rule set-operations)
and checks a lower bound by running the whole statement in SQLite on the
witness databases of each part: a part's witness is reported only when the
whole statement really changes on it, and by as much as it is seen to change.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING, TypeVar

from cqsens.analysis import AggregateRecord, Analysis
from cqsens.engine.neighbourhood import Neighbourhood
from cqsens.engine.paper import PaperValue
from cqsens.engine.paths import Weight
from cqsens.engine.rules import Derivation, Rule, for_unit
from cqsens.errors import UnsupportedQueryError
from cqsens.frontend.sqlgen import sqlite_query
from cqsens.ir.compound import CompoundQuery
from cqsens.ir.cq import AggregateQuery
from cqsens.ir.dependencies import Sigma
from cqsens.ir.exact import Exact, display, sqrt_upper, text
from cqsens.ir.schema import Schema
from cqsens.release.aggregates import count_bound, histogram_bound
from cqsens.release.noise import calibrate
from cqsens.report.words import COMBINATIONS, combination_text
from cqsens.witness.aggregate import (
    AggregateWitness,
    Released,
    released_change,
    released_values,
)
from cqsens.witness.evaluate import Database

if TYPE_CHECKING:
    from cqsens.state import Options

__all__ = ["analyze_compound", "combine_analyses", "part_items"]

T = TypeVar("T")

_RULES = COMBINATIONS


def _total(values: Sequence[Exact]) -> Exact:
    out: Exact = 0
    for v in values:
        out = out + v
    return out


def _weights(values: Sequence[Weight]) -> Weight:
    out: Weight = 0
    for v in values:
        out = out + v
    return out


def _square(x: Exact) -> Exact:
    return x * x if x != math.inf else math.inf


def monotone_rule(compound: CompoundQuery, where: Neighbourhood) -> str:
    """``"sum"`` or ``"max"`` when only the added parts' bounds count, else ``""``.

    The values of a monotone signed sum only grow when rows are added, so under
    add-remove their change lies between 0 and the added parts' change; with one
    preserved table, one LEFT JOIN and one row per individual, it is at most the
    larger of the inner join's and the preserved table's (docs/rules.md, rule
    outer-joins).
    """
    how = compound.monotone
    if (not how or where.model != "add-remove" or compound.combination != "sum"
            or len(compound.signs) != len(compound.parts)):
        return ""
    one_row = where.contributions == 1 and where.unit is None
    if how == "signed-max":  # not monotone: the larger bound or nothing
        return "max" if one_row else ""
    return how if how == "sum" or one_row else "sum"


def _tables(compound: CompoundQuery, where: Neighbourhood) -> list[frozenset[str]] | None:
    """The tables each part reads, when one neighbour changes one row of one table (no
    ``--unit``, one row per individual); None otherwise."""
    if where.unit is not None or where.contributions != 1:
        return None
    return [frozenset(r.lower() for r in (p.relations() if isinstance(p, CompoundQuery)
                                          else p.cq.relations()))
            for p in compound.parts]


def _worst(combine: Callable[[list[int]], T], tables: list[frozenset[str]] | None,
           count: int) -> T:
    """``combine`` over every part, or, by table, its largest over the parts that read one
    table: a row of T changes only the parts that read T (docs/rules.md, rule
    set-operations)."""
    if tables is None:
        return combine(list(range(count)))
    names = sorted(frozenset().union(*tables))
    found = [combine([i for i, r in enumerate(tables) if name in r]) for name in names]
    return max(found, key=_order) if found else combine([])


def _order(x: object) -> Exact:
    assert isinstance(x, (int, float, Fraction))
    return x


def _signed_total(compound: CompoundQuery, values: Sequence[Exact], how: str,
                  tables: list[frozenset[str]] | None = None) -> Exact:
    """Σ values, or the added parts' total (``how == "sum"``) or largest (``"max"``), the
    largest over the tables when ``tables`` is given."""
    def combine(indices: list[int]) -> Exact:
        chosen = [values[i] for i in indices]
        if not how:
            return _total(chosen)
        added = [values[i] for i in indices if compound.signs[i] > 0]
        if how == "max":
            return max(added, default=0)
        return _total(added)
    return _worst(combine, tables, len(values))


def _ranged(compound: CompoundQuery, parts: Sequence[Analysis], l1: Exact, l2: Exact,
            records: tuple[AggregateRecord, ...]
            ) -> tuple[Exact, Exact, tuple[AggregateRecord, ...]]:
    """An ungrouped MIN/MAX (or AVG, read as MIN) of rule semi-join-flips stays in [m, M] on
    both neighbours: it moves by at most the largest of its parts' bounds (M − m, or 0 when
    no part changes), not their sum; the vector by at most the sum of its coordinates'."""
    if compound.rule != "semi-join-flips" or compound.grouped \
            or not any(r.kind in ("min", "max") for r in records):
        return l1, l2, records
    out = []
    for j, record in enumerate(records):
        cap = max(a.aggregates[j].l1 for a in parts)
        if record.kind in ("min", "max") and cap < record.l1:
            record = replace(record, l1=cap, l2=cap, derivation=replace(
                record.derivation, value=cap,
                inputs={**record.derivation.inputs, "range": "largest part"}))
        out.append(record)
    squares = _total([_square(r.l1) for r in out])
    return (min(l1, _total([r.l1 for r in out])),
            min(l2, math.inf if squares == math.inf else sqrt_upper(squares)), tuple(out))


def _by_steps(compound: CompoundQuery, l1: Exact, l2: Exact,
              records: tuple[AggregateRecord, ...], steps: Analysis | None,
              ) -> tuple[Exact, Exact, tuple[AggregateRecord, ...]]:
    """Under substitution, a monotone signed sum changes by at most its add-remove bound
    (one released value) or twice it, one of signed values by twice it (docs/rules.md,
    rule outer-joins)."""
    if steps is None:
        return l1, l2, records
    scalar = not compound.grouped and compound.monotone != "signed-max"
    f = 1 if scalar and len(records) == 1 else 2
    out = []
    for record, step in zip(records, steps.aggregates, strict=True):
        g = 1 if scalar else 2
        best = min(record.l1, g * step.l1)
        if best < record.l1:
            facts = {**record.derivation.inputs, "substitution": "two add-remove steps"}
            record = replace(record, l1=best, l2=min(record.l2, g * step.l2),
                             derivation=replace(record.derivation, value=best, inputs=facts))
        out.append(record)
    return min(l1, f * steps.l1), min(l2, f * steps.l2), tuple(out)


def _bounds(compound: CompoundQuery, parts: Sequence[Analysis], *, neighbor: str,
            contributions: int) -> tuple[Exact, Exact, tuple[AggregateRecord, ...]]:
    """(ℓ1, ℓ2, records) of the whole statement."""
    kind = compound.combination
    tables = _tables(compound, parts[0].neighbourhood)
    if kind == "concat":
        squares = _worst(lambda ix: _total([_square(parts[i].l2) for i in ix]), tables,
                         len(parts))
        l2 = math.inf if squares == math.inf else sqrt_upper(squares)
        records = tuple(replace(r, label=f"{compound.name(i)}: {r.label}")
                        for i, a in enumerate(parts) for r in a.aggregates)
        return _worst(lambda ix: _total([parts[i].l1 for i in ix]), tables, len(parts)), l2, \
            records
    if kind == "sum":
        how = monotone_rule(compound, parts[0].neighbourhood)
        facts = {"combination": "sum", **({"monotone": how} if how else {}),
                 **({"signed": "yes"} if how and compound.monotone == "signed-max" else {})}
        records = tuple(
            AggregateRecord(f"{first.label} over {compound.operator}", first.kind,
                            _weights([a.aggregates[j].count_bound for a in parts]),
                            _signed_total(compound, [a.aggregates[j].l1 for a in parts], how,
                                          tables),
                            _signed_total(compound, [a.aggregates[j].l2 for a in parts], how,
                                          tables),
                            Derivation(Rule(compound.rule),
                                       _signed_total(compound, [a.aggregates[j].l1
                                                                for a in parts], how, tables),
                                       parts[0].neighbourhood, facts),
                            first.values)
            for j, first in enumerate(parts[0].aggregates))
        return _ranged(compound, parts,
                       _signed_total(compound, [a.l1 for a in parts], how, tables),
                       _signed_total(compound, [a.l2 for a in parts], how, tables), records)
    delta = _worst(lambda ix: _weights([parts[i].aggregates[0].count_bound for i in ix]),
                   tables, len(parts))
    rule = histogram_bound if compound.grouped else count_bound
    b = rule(delta, neighbor=neighbor, contributions=contributions)
    where = parts[0].neighbourhood
    record = AggregateRecord(f"COUNT(*) over {compound.operator}", "count", delta, b.l1, b.l2,
                             Derivation(Rule(compound.rule), b.l1, where, {"combination": "count"},
                                        (for_unit(b.derivation, where.unit),)), None)
    return b.l1, b.l2, (record,)


def _merged_columns(parts: Sequence[Analysis]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for a in parts:
        for relation, columns in a.query_obj.columns.items():
            out.setdefault(relation, tuple(columns))
    return out


def _run(query: AggregateQuery, sql: str | None, dialect: str | None,
         db: Database) -> Released | None:
    statement = sqlite_query(sql or "", dialect)
    if statement is None:
        return None
    try:
        return released_values(query, db, statement)
    except sqlite3.Error:
        return None


def _part_sql(part: AggregateQuery | CompoundQuery, analysis: Analysis) -> str | None:
    """The SQL that computes one part's released values: a nested part's whole statement
    (its analysis's query_obj is its first conjunctive part)."""
    return part.sql if isinstance(part, CompoundQuery) else analysis.query_obj.sql


def _change(compound: CompoundQuery, parts: Sequence[Analysis], before: Database,
            after: Database) -> tuple[Released, Released, Fraction, float] | None:
    """What the whole statement releases on both databases and the ℓ1/ℓ2 change (a part's
    values keyed by its number for side-by-side releases), or None when unreadable."""
    pieces = ([(parts[0].query_obj, compound.sql, "")] if compound.combination != "concat"
              else [(a.query_obj, _part_sql(compound.parts[i], a), compound.name(i))
                    for i, a in enumerate(parts)])
    rb_all: Released = {}
    ra_all: Released = {}
    l1, squares = Fraction(0), 0.0
    for query, sql, tag in pieces:
        rb, ra = _run(query, sql, compound.dialect, before), _run(query, sql, compound.dialect,
                                                                   after)
        if rb is None or ra is None:
            return None
        change = released_change(query, rb, ra)
        if change is None:
            return None
        l1 += change[0]
        squares += change[1] ** 2
        prefix: tuple[str, ...] = (tag,) if tag else ()
        rb_all.update({(*prefix, *key): v for key, v in rb.items()})
        ra_all.update({(*prefix, *key): v for key, v in ra.items()})
    return rb_all, ra_all, l1, math.sqrt(squares)


def _verified_witness(compound: CompoundQuery, parts: Sequence[Analysis],
                      schema: Schema | None) -> AggregateWitness | None:
    """The part witness on which the whole statement changes most, evaluated on it."""
    columns = _merged_columns(parts)
    types = {r.name: r.types for r in schema.relations} if schema is not None else {}
    best: AggregateWitness | None = None
    for i, a in enumerate(parts, start=1):
        w = a.witness
        if w is None or w.unbounded:
            continue
        after = w.after if isinstance(w, AggregateWitness) else w.database.with_row(w.relation,
                                                                                    w.row)
        extra = {r: c for r, c in columns.items() if r not in w.database.columns}
        before_db = Database({**w.database.columns, **extra}, w.database.rows,
                             {**types, **w.database.types})
        after_db = Database({**after.columns, **extra}, after.rows, {**types, **after.types})
        found = _change(compound, parts, before_db, after_db)
        if found is None:
            continue
        rb, ra, l1, l2 = found
        if l1 == 0 or (best is not None and l1 <= best.l1):
            continue
        sql = sqlite_query(compound.sql, compound.dialect) or ""
        best = AggregateWitness(
            before_db, w.relation, w.row, 0, 0,
            f"the witness of {compound.name(i - 1)} ({w.construction}), with the whole statement "
            "run on it",
            hidden=w.hidden, checks=w.checks, query_sql=sql, after=after_db,
            neighbor=w.neighbor if isinstance(w, AggregateWitness) else "add-remove",
            replacement=w.replacement if isinstance(w, AggregateWitness) else None,
            released_before=rb, released_after=ra, l1=l1, l2=l2)
    return best


def _paper(parts: Sequence[Analysis]) -> dict[str, PaperValue]:
    why = "a set operation: the paper's values are for one conjunctive query (see each part)"
    return {key: PaperValue(None, why) for key in parts[0].paper}


def _lines(compound: CompoundQuery, parts: Sequence[Analysis], where: Neighbourhood,
           steps: Analysis | None, *, scalar: bool) -> list[str]:
    """The explanation: the combination, one line per part, the refinements applied."""
    rule = combination_text(compound.rule, compound.combination)
    lines = [f"The statement is {compound.operator} over {len(parts)} parts, each a conjunctive "
             f"query analysed on its own; {rule} (docs/rules.md, rule {compound.rule})."]
    for i, a in enumerate(parts):
        count = f", count bound Δ = {text(a.aggregates[0].count_bound)}" \
            if compound.combination == "count" else ""
        name = compound.name(i)
        lines.append(f"{name[0].upper()}{name[1:]}: {_part_sql(compound.parts[i], a)} — ℓ1 "
                     f"{text(a.l1)}{count}: "
                     f"{a.reason()}.")
    how = monotone_rule(compound, where)
    signed = compound.monotone == "signed-max"
    if how and signed:
        lines.append("A preserved row counts max(1, m) times (m its matches), which moves "
                     "with m and by no more: a row of the joined table moves the values by at "
                     "most the inner join's bound, a preserved row by its inner join's or its "
                     "own, so the change is at most the largest of the added parts' (inner "
                     "join, preserved table) (docs/rules.md, rule outer-joins).")
    elif how:
        lines.append("The released values only grow when rows are added, so their change is "
                     + ("at most the largest of the added parts' (inner join, preserved table)"
                        if how == "max" else "at most the sum of the added parts' (sign +)")
                     + " (docs/rules.md, rule outer-joins).")
    if steps is not None:
        times = "the" if not compound.grouped and scalar and not signed else "twice the"
        growing = "" if signed else ", the values only growing when a row is added"
        lines.append("Under substitution (a row removed, then one added, each step within the "
                     f"constraints{growing}) the change is at most {times} add-remove bound "
                     f"{text(steps.l1)} (docs/rules.md, rule outer-joins).")
    return lines


def combine_analyses(
    compound: CompoundQuery,
    parts: Sequence[Analysis],
    *,
    schema: Schema | None,
    epsilon: float | None = None,
    delta: float | None = None,
    prove_lower: bool = True,
    steps: Analysis | None = None,
) -> Analysis:
    """The analysis of ``compound`` from the analyses of its parts (in order).

    Parameters
    ----------
    compound : CompoundQuery
        The statement and how its parts combine.
    parts : sequence of Analysis
        One analysis per part, all under the same neighbour model.
    schema : Schema, optional
        Gives the columns' types when a part's witness is run on the whole statement.
    epsilon, delta : float, optional
        Recalibrate the noise to the combined sensitivity.
    prove_lower : bool
        Look for a lower bound among the parts' witnesses.
    steps : Analysis, optional
        The statement's analysis under add-remove, which bounds a monotone signed
        sum under substitution (see :func:`substitution_steps`).

    Returns
    -------
    Analysis
        ``upper``, ``l1`` and ``l2`` of the whole statement; the CQ, core and
        bound shown are the first part's (each part is listed in the explanation).
    """
    first = parts[0]
    neighbor, k = first.neighbor, first.contributions
    where = first.neighbourhood
    l1, l2, records = _by_steps(compound, *_bounds(compound, parts, neighbor=neighbor,
                                                    contributions=k), steps)
    lines = _lines(compound, parts, where, steps, scalar=len(records) == 1)
    lines.append(f"Released statistic: ℓ1 = {text(l1)}, ℓ2 = {text(l2)}.")
    notes = tuple(dict.fromkeys([*compound.notes, *(n for a in parts for n in a.notes)]))
    suggestion = tuple(f"{compound.name(i)}: {s}" for i, a in enumerate(parts)
                       for s in a.suggestion)
    witness = _verified_witness(compound, parts, schema) if prove_lower else None
    lower: Weight | None = None
    lower_note = "not searched (--no-lower)" if not prove_lower else (
        "none proven: no part's witness changes the whole statement (each part's witness is "
        "run on the whole statement)")
    if l1 == 0 and prove_lower:
        lower, lower_note = 0, ""
    elif witness is not None:
        lower, lower_note = witness.lower, ""
        if l1 != math.inf and witness.l1 > l1:
            raise AssertionError(
                f"internal error: witness difference {witness.l1} exceeds the upper bound {l1} "
                f"for {compound.text.strip()}; please report it")
    noise = calibrate(display(l1), display(l2), epsilon=epsilon, delta=delta) \
        if epsilon is not None else None
    sigma = Sigma.of([d for a in parts for d in a.sigma])
    combined = Derivation(
        Rule(compound.rule), l1, where,
        {"combination": compound.combination, "operator": compound.operator},
        tuple(Derivation(Rule.SEVERAL_AGGREGATES if len(a.aggregates) > 1
                         else a.aggregates[0].derivation.rule, a.l1, where,
                         {"part": compound.name(i)}, (a.count_derivation,))
              for i, a in enumerate(parts)))
    return replace(
        first,
        query=compound.text.strip(),
        source=compound.source,
        sigma=sigma,
        dependency_names=tuple(dict.fromkeys(n for a in parts for n in a.dependency_names)),
        connected=all(a.connected for a in parts),
        satisfiable=any(a.satisfiable for a in parts),
        delta_str=_weights([a.delta_str for a in parts]),
        paper=_paper(parts),
        upper=l1,
        lower=lower,
        l1=l1,
        l2=l2,
        explanation=tuple(lines),
        notes=notes,
        core_minimal=all(a.core_minimal for a in parts),
        suggestion=suggestion,
        witness=witness,
        lower_note=lower_note,
        aggregates=records,
        noise=noise,
        derivation=combined,
    )


def part_items(items: Sequence[T], relations: Iterable[str],
               everywhere: Iterable[str], *, first: bool) -> list[T]:
    """The dependencies (``R[...]`` texts or values) or public tables that concern a part.

    An item naming a relation that no part uses is kept for the first part, whose
    analysis then reports it as unknown.
    """
    names = {r.lower() for r in relations}
    used = {r.lower() for r in everywhere}
    out: list[T] = []
    for item in items:
        relation = (item.split("[", 1)[0] if isinstance(item, str)
                    else str(getattr(item, "relation", ""))).strip().lower()
        if relation in names or (first and relation not in used):
            out.append(item)
    return out


def analyze_compound(compound: CompoundQuery, options: Options,
                     analyze_one: Callable[[AggregateQuery, Options], Analysis]) -> Analysis:
    """Each part analysed on its own by ``analyze_one`` (a nested part recursively), then
    combined (docs/rules.md, rule set-operations)."""
    if compound.rule == Rule.SEMI_JOIN_FLIPS.value and options.nb.model != "add-remove":
        raise UnsupportedQueryError(
            f"{compound.operator} under --neighbor {options.nb.model} is not supported: the "
            "bound by the rows whose condition flips is proven for add-remove neighbours, where "
            "every semi-join only gains (or only loses) rows (docs/rules.md, rule "
            "semi-join-flips); use --neighbor add-remove", source=compound.source,
            construct=compound.operator)
    if "EXCEPT" in compound.operator and options.nb.model != "add-remove":
        raise UnsupportedQueryError(
            f"COUNT(*) over {compound.operator} under --neighbor {options.nb.model} is not "
            "supported: removing a row may add result rows as adding one does, so the count "
            "bound of each part is proven for add-remove neighbours only (docs/rules.md, rule "
            "set-operations); use --neighbor add-remove", source=compound.source,
            construct=compound.operator)
    settings = options.settings
    used = [tuple(q.relations() if isinstance(q, CompoundQuery) else q.cq.relations())
            for q in compound.parts]
    everywhere = [r for rels in used for r in rels]
    tables = list(settings.public_tables())
    parts: list[Analysis] = []
    for index, part in enumerate(compound.parts):
        names, first = used[index], index == 0
        # with a privacy unit a person reaches a part along foreign keys through tables
        # the part does not read: their dependencies bound it too
        reach = tuple(r.name for r in options.schema.relations) \
            if options.nb.unit is not None and options.schema is not None else names
        share = replace(settings, witness_time=settings.witness_time / len(compound.parts),
                        epsilon=None, delta=None,
                        fds=tuple(part_items(settings.fds, reach, everywhere, first=first)),
                        cds=tuple(part_items(settings.cds, reach, everywhere, first=first)),
                        public=tuple(part_items(tables, names, everywhere, first=first)))
        if isinstance(part, CompoundQuery):
            parts.append(analyze_compound(part, replace(options, settings=share),
                                           analyze_one))
        else:
            parts.append(analyze_one(part, replace(options, settings=share)))
    return combine_analyses(compound, parts, schema=options.schema, epsilon=options.epsilon,
                            delta=options.delta, prove_lower=options.prove_lower,
                            steps=substitution_steps(compound, options, analyze_one))


def substitution_steps(compound: CompoundQuery, options: Options,
                       analyze_one: Callable[[AggregateQuery, Options], Analysis],
                       ) -> Analysis | None:
    """The add-remove analysis of a monotone signed sum analysed under substitution, or
    None where it does not apply.

    A substitution removes a row t and adds t′; when removing t keeps every constraint
    (no foreign key, no privacy unit, no fixed ``--rows``), both steps are add-remove
    neighbours, and each
    moves the (only growing) values by at most the add-remove bound, in opposite
    directions; signed values (``"signed-max"``) by at most twice it (docs/rules.md,
    rule outer-joins).
    """
    nb = options.nb
    if (nb.model != "substitute" or nb.unit is not None or nb.references
            or options.rows is not None or not compound.monotone or compound.combination != "sum"
            or len(compound.signs) != len(compound.parts)):
        return None
    settings = replace(options.settings, neighbor="add-remove", prove_lower=False)
    return analyze_compound(compound, replace(options, settings=settings,
                                              nb=replace(nb, model="add-remove")), analyze_one)
