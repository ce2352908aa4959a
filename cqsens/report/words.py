"""Derivations in words: the one place a rule of docs/rules.md becomes a sentence.

:func:`render` turns a :class:`~cqsens.engine.rules.Derivation` into the
sentence the text, HTML, Markdown and JSON outputs show, in the person's words
("one person added or removed ...") or the row's ("one tuple added or removed
...") as the derivation's neighbourhood says, and naming a substitution under
the substitute model.  :func:`reason` is the one-line reason of an analysis.
The engine and the release rules only build derivations.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from cqsens.engine.rules import Derivation, Neighbourhood, Rule
from cqsens.ir.exact import display, text

if TYPE_CHECKING:
    from cqsens.analysis import Analysis

__all__ = ["COMBINATIONS", "FLIPS", "STYLES", "combination_text", "reason", "render"]

STYLES = ("text", "markdown", "html")
"""The styles :func:`render` writes: plain text, Markdown and HTML (escaped)."""

COMBINATIONS = {
    "concat": "the parts are released side by side: ℓ1 = Σ ℓ1ᵢ, ℓ2 = √(Σ ℓ2ᵢ²)",
    "sum": "each released value is a sum (or signed sum) of the parts' values: ℓ1 ≤ Σ ℓ1ᵢ, "
           "ℓ2 ≤ Σ ℓ2ᵢ by the triangle inequality",
    "count": "one row changes the number of result rows by at most Σ Δᵢ, the sum of the "
             "parts' count bounds, and the COUNT or histogram rule applies to that sum",
}
"""How the parts of a set operation combine (docs/rules.md, rule set-operations)."""
FLIPS = ("each released value changes by at most the sum of the changes of the query without "
         "the condition and of one positive semi-join per atom (the rows it can flip): "
         "ℓ1 ≤ Σ ℓ1ᵢ, ℓ2 ≤ Σ ℓ2ᵢ")
"""How the parts of rule semi-join-flips combine."""


def combination_text(rule: str, combination: str) -> str:
    """The sentence that says how a compound's parts combine, for its rule."""
    return FLIPS if rule == Rule.SEMI_JOIN_FLIPS.value else COMBINATIONS[combination]


def _n(d: Derivation, key: str, digits: int = 6) -> str:
    return text(d.number(key), digits)


def _range(d: Derivation) -> str:
    return f"[{_n(d, 'low')}, {_n(d, 'high')}]"


def _where(d: Derivation) -> str:
    return f"(docs/rules.md, rule {d.rule.value})"


def _changed(nb: Neighbourhood) -> str:
    """Who changes under add/remove: ``one tuple added or removed`` or ``one person ...``."""
    return f"one {'person' if nb.person else 'tuple'} added or removed"


def _substitution(nb: Neighbourhood) -> str:
    """``under substitution`` (of one person with ``--unit``)."""
    return "under substitution of one person" if nb.person else "under substitution"


def _context(nb: Neighbourhood) -> str:
    """A range rule's neighbourhood, after the range: nothing for one row added or removed."""
    if nb.substitution:
        return f" {_substitution(nb)}"
    return ", one person added or removed" if nb.person else ""


def _rows(nb: Neighbourhood) -> str:
    return "joined row(s)" if nb.person else "row(s)"


def _times_k(nb: Neighbourhood) -> str:
    if nb.contributions == 1:
        return ""
    return (f", times k = {nb.contributions} tuples per individual "
            "(ICALP 2016 Observation 1, triangle inequality)")


def _count(d: Derivation) -> str:
    nb = d.neighbourhood
    if d.rule is Rule.NEW_ANSWERS:
        return (f"COUNT: {_changed(nb)} changes the count by at most the CQ count bound "
                f"Δ = {_n(d, 'delta')} {_where(d)}{_times_k(nb)}.")
    if d.get("single_table"):
        return (f"COUNT(*) of a single table with no filter {_substitution(nb)}: changing rows "
                f"in place keeps their number {_where(d)}.")
    return (f"COUNT {_substitution(nb)}: a monotone count over a class closed under removal "
            f"moves by at most the add-remove bound Δ = {_n(d, 'delta')}, not 2Δ "
            f"{_where(d)}{_times_k(nb)}.")


def _histogram(d: Derivation) -> str:
    nb = d.neighbourhood
    if not nb.substitution:
        return (f"GROUP BY histogram: {_changed(nb)} moves the group counts in one direction "
                f"by at most Δ = {_n(d, 'delta')} in total, so ℓ1 = ℓ2 ≤ Δ "
                f"{_where(d)}{_times_k(nb)}.")
    return (f"GROUP BY histogram {_substitution(nb)}: a removal (at most Δ = {_n(d, 'delta')} "
            "down) plus an addition (at most Δ up) gives ℓ1 ≤ 2Δ and ℓ2 ≤ √2·Δ, a norm and "
            f"not its square 2Δ² {_where(d)}{_times_k(nb)}.")


def _sum(d: Derivation) -> str:
    nb = d.neighbourhood
    if d.rule is Rule.SUM:
        return (f"SUM over {_range(d)}: {_changed(nb)} adds or removes at most "
                f"Δ = {_n(d, 'delta')} {_rows(nb)}, each worth at most max(|m|, |M|) = "
                f"{_n(d, 'magnitude')} {_where(d)}{_times_k(nb)}.")
    if "span" in d.inputs:
        return (f"SUM over {_range(d)} on a single unfiltered table {_substitution(nb)}: "
                f"exactly one summed value is replaced, so M − m = {_n(d, 'span')} "
                f"{_where(d)}{_times_k(nb)}.")
    return (f"SUM over {_range(d)} {_substitution(nb)}: at most Δ = {_n(d, 'delta')} "
            f"{_rows(nb)} removed and Δ added move the sum by at most Δ·(max(M,0) − min(m,0)) "
            f"with max(M,0) − min(m,0) = {_n(d, 'signed_span')}, since a filtered row can "
            f"enter or leave the sum {_where(d)}{_times_k(nb)}.")


def _avg(d: Derivation) -> str:
    nb = d.neighbourhood
    if "rows" not in d.inputs:
        return (f"AVG over {_range(d)}{_context(nb)}: assuming it is defined (at least one "
                "row) on both neighbours, any two averages differ by at most M − m = "
                f"{text(d.value)} (range bound; docs/rules.md, rule avg).")
    who = "one person added or removed" if nb.person else "tuples added or removed"
    return (f"AVG over {_range(d)}, {who}: assuming it is defined on both neighbours, the "
            f"smaller one has n ≥ 1 rows and the other at most D = {_n(d, 'rows')} more, so "
            f"the average moves by at most D/(D + 1)·(M − m) = {text(d.value)} "
            f"{_where(d)}.")


def _min_max(d: Derivation) -> str:
    return (f"MIN/MAX over {_range(d)}{_context(d.neighbourhood)}: assuming the result is "
            "defined (at least one row) on both neighbours, it stays in [m, M] and so changes "
            f"by at most M − m = {text(d.value)} (range bound; docs/rules.md, rule min-max).")


def _median(d: Derivation) -> str:
    nb = d.neighbourhood
    if d.number("delta") == 0:
        return f"MEDIAN over {_range(d)} of an unsatisfiable query: it never changes."
    if d.number("delta") > 1 or nb.contributions > 1:
        where = " under substitution" if nb.substitution else ""
        who = "one person" if nb.person else "one neighbour"
        return (f"MEDIAN over {_range(d)}{where} when {who} can change more than one row: "
                f"the range bound M − m = {text(d.value)}, assuming the median is defined on "
                f"both neighbours {_where(d)}.")
    who = "one person (one row) added or removed" if nb.person else "one row added or removed"
    return (f"MEDIAN over {_range(d)}, {who}: (M − m)/2 = {text(d.value)}, assuming at least "
            f"one row on both neighbours {_where(d)}.")


def _median_parity(d: Derivation) -> str:
    changed = ("one person's row changed (substitution)" if d.neighbourhood.person
               else "one row changed (substitution)")
    rows = d.get("rows")
    if isinstance(rows, int) and rows % 2 == 0:
        return (f"MEDIAN over {_range(d)} of n = {rows} (even) rows, {changed}: "
                f"(M − m)/2 = {text(d.value)} {_where(d)}.")
    parity = "unknown n, so the odd case" if rows is None else f"n = {rows} (odd) rows"
    return (f"MEDIAN over {_range(d)}, {parity}, {changed}: M − m = {text(d.value)} "
            f"{_where(d)}.")


def _grouped(d: Derivation, style: str) -> str:
    nb = d.neighbourhood
    kind = str(d["aggregate"]).upper()
    if "groups" in d.inputs:
        who = "one person added or removed touches" if nb.person else "at most"
        many = _n(d, "groups", 17)
        touched = (f"{who} at most {many} groups" if nb.person else f"{who} {many} groups "
                   "touched")
        if "rows" in d.inputs:  # AVG: the added rows shared between the touched groups
            return (f"grouped AVG: {touched}, which share at most {_n(d, 'rows')} rows; a group "
                    "of n ≥ 1 rows gaining d moves by at most d/(1 + d)·(M − m), so together "
                    f"at most G·R/(G + R)·(M − m) = {text(d.value)} {_where(d)}")
        return (f"grouped {kind}: {touched}, each by at most the scalar bound "
                f"({render(d.premises[0], style)})")
    if kind == "SUM":
        who = "person" if nb.person else "tuple"
        return (f"grouped SUM {_substitution(nb)}: the removed and the added {who} each move at "
                "most Δ·k·max(|m|,|M|), possibly in one group (docs/rules.md, rule "
                "grouped-value-aggregates)")
    if d.number("touched") == 0:
        return f"grouped {kind} {_substitution(nb)}: nothing changes."
    return (f"grouped {kind} {_substitution(nb)}: the removal and the addition each touch at "
            f"most G = {_n(d, 'touched')} groups; a group touched by one of them moves by at "
            f"most the add-remove bound a = {_n(d, 'a')}, a group touched by both by at most "
            f"the substitution bound s = {_n(d, 's')}, so ℓ1 ≤ G·max(s, 2a) = {text(d.value)} "
            f"{_where(d)}")


def _several(d: Derivation) -> str:
    groups = [p for p in d.premises if p.rule is Rule.EXCLUSIVE_CASES]
    what = "parts (the exclusive SUMs count as one)" if groups else "aggregates"
    parts = (f"{_n(d, 'aggregates')} {what} released together: ℓ1 = Σ ℓ1 = {text(d.value)} "
             f"and ℓ2 = √(Σ ℓ2²) = {_n(d, 'norm2')}, each coordinate bounded separately")
    if not groups:
        return parts + "."
    return parts + "; " + " ".join(_exclusive(g) for g in groups)


def _exclusive(d: Derivation) -> str:
    return (f"{_n(d, 'aggregates')} SUMs over CASE conditions that no row meets together "
            f"({d['columns']}): a row adds to one of them at most, by at most "
            f"{_n(d, 'magnitude')}, so together they move by at most {text(d.value)} "
            f"(separately {_n(d, 'separate')}) {_where(d)}.")


def _empty(d: Derivation) -> str:
    return (f"the value bounds of {d['column']} are empty ([{_n(d, 'low', 17)}, "
            f"{_n(d, 'high', 17)}]): no row can be aggregated, the result never changes")


def _finite_domains(d: Derivation) -> str:
    who = "person" if d.neighbourhood.person else "tuple"
    return (f"{d['aggregate']}: the schema's CHECKs leave finitely many values ({d['domains']}), "
            f"so one {who} changes the count by at most {display(d.value)} {_where(d)}.")


def _combined(d: Derivation, style: str) -> str:
    combination = str(d["combination"])
    if combination == "sum" and "signed" in d.inputs:
        return ("largest of the added parts' bounds: a preserved row counts max(1, m) times, "
                "which moves with its matches m and by no more (docs/rules.md, rule "
                "outer-joins)")
    if combination == "sum" and "monotone" in d.inputs:
        which = "largest" if d["monotone"] == "max" else "sum"
        return (f"{which} of the added parts' bounds: the values only grow when rows are "
                "added (docs/rules.md, rule outer-joins)")
    if combination == "sum":
        return f"sum of the parts' bounds ({combination_text(d.rule.value, 'sum')})"
    return f"{COMBINATIONS[combination]}; {render(d.premises[0], style)}"


# ----------------------------------------------------------------------------- count bounds


def _atom(d: Derivation) -> str:
    if d.rule is Rule.DELTA_STR_SELF_JOIN:
        return f"{d['atom']} holds every counted column (1)"
    return f"{d['atom']}: {text(d.value)} via {d['route']}"


def _answers(d: Derivation, rows: bool) -> str:
    """The count bound of one relation: ``one R row changes the count by at most …``."""
    if "relation" not in d.inputs:
        return "no relation atom"
    change = (f"adds or removes at most {text(d.value)} joined rows" if rows
              else f"changes the count by at most {text(d.value)}")
    parts = "; ".join(_atom(p) for p in d.premises[:2])
    more = (f"; and {len(d.premises) - 2} more {d['relation']} atoms"
            if len(d.premises) > 2 else "")
    return f"one {d['relation']} row {change}: {parts}{more}"


def _person(d: Derivation, rows: bool) -> str:
    """The count bound of one person (docs/rules.md, rule privacy-unit)."""
    if "key" not in d.inputs:
        change = "adds or removes at most 0 joined rows" if rows else \
            "changes the count by at most 0"
        return f"no table of the query holds rows of one {d['table']}: one person {change}"
    if d.value == math.inf:
        return (f"one {d['table']} person can create unboundedly many answers: no bounded "
                f"route from the person's key ({d['key']}) to every counted column")
    change = (f"adds or removes at most {text(d.value)} joined rows" if rows
              else f"changes the count by at most {text(d.value)}")
    return (f"one person ({d['unit']} and the rows that reference it) {change}: with the key "
            f"{d['key']} fixed, {_n(d, 'group')} via {d['route']}")


def _count_reason(d: Derivation, rows: bool = False) -> str:
    """The one-line reason of a count bound; ``rows`` speaks of joined rows (for SUM, AVG…)."""
    if d.rule is Rule.UNSATISFIABLE_QUERY:
        return "unsatisfiable: the count is always 0"
    if d.rule is Rule.BOOLEAN_QUERY:
        return "a Boolean query: its count is 0 or 1"
    if d.rule is Rule.PRIVACY_UNIT:
        return _person(d, rows)
    if d.rule is Rule.PUBLIC_STATEMENT:
        return _public_statement(d)
    if d.rule is Rule.WALKS_FROM_CONSTANTS and d.value == math.inf and "missing" in d.inputs:
        return (f"one added {d['relation']} row can create unboundedly many answers: "
                f"no bounded route from {d['atom']} to {d['missing']}")
    return _answers(d, rows)


def _public_statement(d: Derivation) -> str:
    """Rule public-statement: the same answer in both neighbours."""
    return (f"reads only public tables ({d['tables']}): both neighbours give the same "
            "answer, so it changes by 0")


_AGGREGATES: dict[Rule, Callable[[Derivation], str]] = {
    Rule.NEW_ANSWERS: _count, Rule.COUNT_SUBSTITUTION: _count,
    Rule.GROUP_BY_HISTOGRAM: _histogram, Rule.SUM: _sum, Rule.SUM_SUBSTITUTION: _sum,
    Rule.AVG: _avg, Rule.MIN_MAX: _min_max, Rule.MEDIAN: _median,
    Rule.MEDIAN_PARITY_ROWS: _median_parity, Rule.SEVERAL_AGGREGATES: _several,
    Rule.EXCLUSIVE_CASES: _exclusive,
    Rule.EMPTY_VALUE_RANGE: _empty, Rule.FINITE_DOMAINS: _finite_domains,
    Rule.PUBLIC_STATEMENT: _public_statement,
}


def _styled(sentence: str, style: str) -> str:
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}: one of {', '.join(STYLES)}")
    return html.escape(sentence) if style == "html" else sentence


def render(derivation: Derivation, style: str = "text") -> str:
    """The sentence of one derivation, in the neighbourhood's words.

    Parameters
    ----------
    derivation : Derivation
        A rule applied (an aggregate's bound, a count bound, a set operation's).
    style : {"text", "markdown", "html"}
        Plain text, Markdown (the same) or HTML (escaped).

    Examples
    --------
    >>> from cqsens.release.aggregates import avg_bound
    >>> render(avg_bound(1, 0, 10).derivation)[:44]
    'AVG over [0, 10], tuples added or removed: a'
    >>> from dataclasses import replace
    >>> d = avg_bound(1, 0, 10).derivation
    >>> from cqsens.engine.neighbourhood import Unit
    >>> users = Unit("users", (0,), "users(id)")
    >>> render(replace(d, neighbourhood=Neighbourhood(unit=users)))[:49]
    'AVG over [0, 10], one person added or removed: as'
    """
    d = derivation
    if "combination" in d.inputs:
        return _styled(_combined(d, "text"), style)
    if d.rule is Rule.GROUPED_VALUE_AGGREGATES:
        return _styled(_grouped(d, "text"), style)
    if d.rule in (Rule.NEW_ANSWERS, Rule.COUNT_SUBSTITUTION) and "aggregate" in d.inputs:
        return _styled(_count(d), style)
    if d.rule in _AGGREGATES and d.rule is not Rule.NEW_ANSWERS:
        return _styled(_AGGREGATES[d.rule](d), style)
    return _styled(_count_reason(d), style)


def _substituted(analysis: Analysis) -> str:
    """The reason's clause for the substitute model: the rule that bounds a change-one."""
    first = analysis.aggregates[0] if analysis.aggregates else None
    if first is None or first.derivation is None \
            or not first.derivation.neighbourhood.substitution:
        return ""
    who = "person" if first.derivation.neighbourhood.person else "row"
    return (f"; under substitution (one {who} replaced by another) ℓ1 ≤ {text(first.l1)} "
            f"(docs/rules.md, rule {first.derivation.rule.value})")


def _parts(d: Derivation) -> str:
    """The reason of a set operation: how its parts combine, and each part's ℓ1."""
    parts = "; ".join(f"{p['part']} ℓ1 {text(p.value)}" for p in d.premises)
    how = combination_text(d.rule.value, str(d["combination"]))
    return f"{d['operator']} of {len(d.premises)} parts: {how}; {parts}"


def reason(analysis: Analysis, style: str = "text") -> str:
    """The one-line reason for the bound of an analysis, in terms of the released statistic."""
    count = analysis.count_derivation
    if "combination" in count.inputs:
        return _styled(_parts(count), style)
    first = analysis.aggregates[0] if analysis.aggregates else None
    if first is None or not analysis.satisfiable:
        return _styled(_count_reason(count), style)
    if first.kind in ("count", "count_distinct"):
        return _styled(_count_reason(count) + _substituted(analysis), style)
    values = f"; {first.values}" if first.values else ""
    return _styled(f"changes {first.label} by at most {text(first.l1)}{values}; "
                   f"{_count_reason(count, rows=True)}{_substituted(analysis)}", style)
