"""What would make an aggregate over private tables a released view (docs/rules.md, rule
released-view): the advice added to the refusal of an aggregating ``WITH`` table or a
correlated scalar subquery that is not one.  sqlglot objects never leave
:mod:`cqsens.frontend`.
"""

from __future__ import annotations

from collections.abc import Set

from sqlglot import exp

from cqsens.errors import InputError
from cqsens.frontend.released_views import owner, private, sources
from cqsens.frontend.statements import parse_statement
from cqsens.ir.schema import Schema

__all__ = ["view_advice"]


def _with_advice(cte: exp.CTE, public: Set[str], schema: Schema | None) -> str | None:
    body = cte.this
    if not isinstance(body, exp.Select) or body.args.get("group") is None:
        return None
    own = sources(body)
    if own is None or len(own) != 1 or not private(own, public):
        return None
    keys = ", ".join(k.sql() for k in body.args["group"].expressions)
    return (f"the WITH table {cte.alias_or_name} groups private rows by {keys}, which is no "
            "NOT NULL foreign key into a public table: it would be a released view, a "
            "histogram over that table's keys (docs/rules.md, rule released-view), if it "
            "grouped by such a key (declare the foreign key in the schema and the table it "
            "references with --public)")


def _scalar_advice(sub: exp.Subquery, public: Set[str], schema: Schema | None) -> str | None:
    inner, enclosing = sub.this, sub.parent_select
    if not isinstance(inner, exp.Select) or enclosing is None \
            or inner.find(exp.AggFunc) is None:
        return None
    own, outer = sources(inner), sources(enclosing)
    if own is None or outer is None or not private(own, public):
        return None
    tables = sorted({outer[a].name for c in inner.find_all(exp.Column)
                     if owner(c, own, schema) is None
                     and (a := owner(c, outer, schema)) is not None})
    if not tables:
        return None
    return (f"the scalar subquery over private tables is correlated with {', '.join(tables)}: "
            "it would be a released view, a histogram over a public table's keys "
            "(docs/rules.md, rule released-view), if its only correlation were equalities "
            "with the columns of one public table (--public)")


def view_advice(sql: str, dialect: str | None, *, public: Set[str], schema: Schema | None,
                source: str = "<sql>") -> str | None:
    """What would make an aggregate over private tables in ``sql`` a released view, when
    the statement has one that is not (None otherwise, or when it does not parse)."""
    names = {p.lower() for p in public}
    try:
        tree = parse_statement(sql, dialect, source)
    except InputError:
        return None
    for cte in tree.find_all(exp.CTE):
        advice = _with_advice(cte, names, schema)
        if advice is not None:
            return advice
    for sub in tree.find_all(exp.Subquery):
        advice = _scalar_advice(sub, names, schema)
        if advice is not None:
            return advice
    return None
