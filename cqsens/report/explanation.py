"""The explanation of a count bound in words, rendered from its derivations.

The engine derives, per relation, the new answers one of its rows gives with
each atom's rule (:func:`cqsens.engine.count.relation_derivations`), and per
group of a person's rows the answers they give
(:func:`cqsens.engine.person.group_derivations`); this module writes them as the
sentences of the ``explanation`` (text, JSON, HTML and Markdown show them).
"""

from __future__ import annotations

import math

from cqsens.budget import checkpoint
from cqsens.engine.count import CountBound, relation_derivations
from cqsens.engine.person import PersonBound, group_derivations
from cqsens.engine.rules import Derivation, Neighbourhood, Rule
from cqsens.explain import ADVICE_MAX_ATOMS, Advice, AdviceKind
from cqsens.ir.cq import CQ, AggregateQuery
from cqsens.ir.exact import Exact, text

__all__ = ["advice", "explanation", "person_explanation", "plural"]

_UNBOUNDED = ("Unbounded: no noise calibrated to a finite sensitivity makes this release "
              "differentially private unless the data obey further constraints.")


def plural(n: Exact, word: str, many: str | None = None) -> str:
    """``1 answer``, ``3 answers``, ``∞ answers``.

    >>> plural(1, "answer"), plural(3, "row"), plural(2, "query", "queries")
    ('1 answer', '3 rows', '2 queries')
    """
    return f"{text(n)} {word if n == 1 else many or word + 's'}"


def _tables(names: list[str]) -> str:
    if not names:
        return "no table"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _what_is_counted(query: AggregateQuery, core: CQ) -> str:
    """The first sentence of an explanation: what is counted, in the query's own words."""
    tables = _tables(sorted(core.relations()))
    if core.is_boolean:
        return f"The query asks whether any match exists over {tables} (a Boolean query: 0 or 1)."
    first = query.aggregates[0]
    every_column = query.body is not None and set(core.free) == set(query.body.free)
    if query.sql is not None and first.kind != "count_distinct" and every_column:
        rows = (f"the rows of {tables}" if len(core.relation_atoms()) == 1 else
                f"the rows of the join of {tables}, one per combination of matching rows")
        if first.kind == "count":
            return f"The query counts {rows}."
        return (f"The query's {first.label} is taken over {rows}; the bounds below count "
                "those rows.")
    free = ", ".join(v.name for v in core.free)
    return f"The query counts distinct ({free}) over {tables}."


def _atom(d: Derivation, relation: str) -> str:
    """One atom's part of its relation's sentence."""
    atom = d["atom"]
    if d.rule is Rule.FOREIGN_KEYS:
        return (f"{atom} is joined on a foreign key to {d['reference']}: a row added or removed "
                "there is referenced by no row of the other database, so it gives no answer (0)")
    if not d["counted"]:
        return f"{atom} gives the same answer as an earlier {relation} atom (0 more)"
    if d.rule is Rule.DELTA_STR_SELF_JOIN:
        return f"{atom} holds every counted column: one new row gives at most 1 answer"
    if d.value == math.inf:
        if d["missing"]:
            return (f"{atom}: no bounded path of dependencies leads from this row or a "
                    f"constant to {d['missing']}, so one added {relation} row can match "
                    "unboundedly many existing rows and create any number of answers (∞)")
        return f"{atom}: unbounded (∞)"
    if d.rule is Rule.JOINT_ASSIGNMENT_TREE:
        return (f"{atom}: at most {plural(d.value, 'answer')}, counting joint values along the "
                f"tree {d['tree']} (per-variable product: {text(d.number('product'))})")
    return f"{atom}: at most {plural(d.value, 'answer')}: {d['routes']}"


def _relation(d: Derivation) -> str:
    relation = str(d["relation"])
    parts = []
    for premise in d.premises:
        checkpoint("explanation")
        parts.append(_atom(premise, relation))
    return (f"One added or removed {relation} row changes the count by at most "
            f"{text(d.value)}: " + "; ".join(parts) + _shared(d) + ".")


def _shared(d: Derivation) -> str:
    """The answers counted by several atoms, taken off (docs/rules.md, rule new-answers), or
    the bound of two copies ordered by a strict filter (rule ordered-self-join)."""
    shared = d.inputs.get("shared", 0)
    if "ordered" in d.inputs and d.get("pairing") != "swapped":
        return (f"; minus {text(d.number('shared'))}: the answer that sends both "
                f"{d['relation']} atoms onto the row itself is counted by each of them and "
                f"fails the filter {d['ordered']} (docs/rules.md, rule ordered-self-join)")
    if "ordered" in d.inputs:
        fixed = (f", minus {text(d.number('shared'))}: the answer that sends both atoms onto "
                 "the row itself fails the strict filter" if shared else "")
        return (f"; but the filter {d['ordered']} orders the two {d['relation']} atoms: "
                "swapping them reverses it, so every answer of the second atom is, its "
                "columns swapped, an answer of the first that the first does not give, and "
                f"one atom's bound covers both{fixed} (docs/rules.md, rule ordered-self-join)")
    if not shared:
        return ""
    return (f"; minus {text(d.number('shared'))}: the answer that sends every {d['relation']} "
            f"atom onto the row itself is counted by each of them but is one answer")


def _public(lines: list[str], public: frozenset[str]) -> list[str]:
    """The public tables (docs/rules.md, rule public-tables), after the first sentence."""
    if not public:
        return lines
    return lines[:1] + [f"Public tables (the same in both neighbours, so never the added or "
                        f"removed row): {', '.join(sorted(public))}."] + lines[1:]


def explanation(query: AggregateQuery, counted: CountBound, *,
                public: frozenset[str] = frozenset()) -> list[str]:
    """Why the count bound of one row is what it is: what is counted, the public tables, then
    per relation the answers one added or removed row gives, atom by atom."""
    return _public(_explanation(query, counted), public)


def _explanation(query: AggregateQuery, counted: CountBound) -> list[str]:
    c = counted.core
    if not c.satisfiable:
        return [
            "The query is unsatisfiable: "
            + ("the functional dependencies force two different constants into one column"
               if query.cq.satisfiable else "it equates a column with two different constants")
            + ", so its count is 0 on every database and one row cannot change it: sensitivity 0."
        ]
    lines = [_what_is_counted(query, c)]
    if c.is_boolean:
        lines.append(
            "A Boolean count is 0 or 1, so adding or removing one row changes it by at most 1."
        )
        return lines
    lines.extend(_relation(d) for d in relation_derivations(counted.bound))
    if counted.bound.value == math.inf:
        lines.append(_UNBOUNDED)
    return lines


def person_explanation(query: AggregateQuery, counted: CountBound, person: PersonBound, *,
                       public: frozenset[str] = frozenset()) -> list[str]:
    """The explanation of the bound for one person (the privacy unit)."""
    return _public(_person_explanation(query, counted, person), public)


def _person_explanation(query: AggregateQuery, counted: CountBound,
                        person: PersonBound) -> list[str]:
    unit = person.unit
    lines = [_what_is_counted(query, counted.core),
             f"Privacy unit: one person is a row of {unit.table} (key {unit.text}) with every "
             "row that references it through foreign keys; neighbouring databases differ by "
             "one whole person (docs/rules.md, rule privacy-unit)."]
    if not counted.core.satisfiable:
        lines.append("The query is unsatisfiable: its count is 0 on every database.")
        return lines
    if not person.groups:
        lines.append(f"No table of the query references {unit.table}: one person's rows are "
                     "not read, so the count does not change (0).")
    for group in group_derivations(person, Neighbourhood(unit=unit)):
        how = (f"at most {plural(group.value, 'answer')} via {group['route']}"
               if group.value != math.inf else
               "unboundedly many answers: no bounded route of dependencies leads from the key "
               "to every counted column")
        lines.append(f"A person's rows meet the query at {group['chains']}; with the "
                     f"person's key fixed at {group['key']}: {how}.")
    lines.append(f"One person changes the count by at most {text(person.value)}"
                 + (" (a Boolean count is 0 or 1)." if person.boolean_cap else "."))
    if person.value == math.inf:
        lines.append(_UNBOUNDED)
    return lines


def advice(suggestion: Advice) -> str:
    """One piece of advice in words.

    >>> advice(Advice(AdviceKind.DECLARE, ("R[x->y]",), 1, 3))[:47]
    'To bound it, declare R[x->y] (FD: the upper bou'
    """
    s = suggestion
    if s.kind is AdviceKind.TOO_LARGE:
        return (f"No advice computed: the query joins {s.atoms} tables; advice is computed "
                f"for at most {ADVICE_MAX_ATOMS}.")
    if s.kind is AdviceKind.NONE_HELPS:
        return ("No dependency helps: no single-column dependency can bound it: some free "
                "variable shares no atom chain with some atom (the query is disconnected there, "
                "or the link goes through a filter), so one added row can multiply the count by "
                "an unrelated table's size.")
    if s.kind is AdviceKind.DECLARE:
        fds = " and ".join(s.dependencies)
        cds = " and ".join(f"{d}<=3" for d in s.dependencies)
        return (("To bound it, " if s.first else "Or instead, ")
                + f"declare {fds} (FD: the upper bound becomes {text(s.bound)}) or {cds} (CD: "
                f"the upper bound becomes {text(s.cd_bound)}; any other bound in place of 3 "
                "works too).")
    if s.kind is AdviceKind.FOREIGN_KEY:
        keys = " and ".join(s.dependencies[0::2])
        ddl = "; ".join(s.dependencies[1::2])
        one = len(s.dependencies) == 2
        return (("To bound it, " if s.first else "Or instead, ")
                + f"declare the foreign key{'' if one else 's'} {keys} (FK: {ddl} in the "
                f"schema, if the data keep {'it' if one else 'them'}; the upper bound becomes "
                f"{text(s.bound)}, docs/rules.md, rule foreign-keys).")
    named = " and ".join(repr(d) for d in s.dependencies)
    if s.kind is AdviceKind.PERSON_ROWS:
        return (f"To bound it, declare how many rows one person has: {named} (with 3 rows each "
                f"the bound becomes {text(s.bound)}; put the numbers your data guarantee in "
                "place of 3).")
    if s.kind is AdviceKind.PERSON_DECLARE:
        return (f"To bound it, declare {named} (with 3 in each the bound becomes "
                f"{text(s.bound)}; put the numbers your data guarantee in place of 3).")
    return (f"No rows-per-person bound helps: even {' and '.join(s.dependencies)} leave it "
            "unbounded.")
