"""Data-dependent thresholds as two-stage releases.

A WHERE comparison with an uncorrelated scalar subquery over private tables, such as
TPC-H q22's ``c_acctbal > (SELECT AVG(c_acctbal) FROM customer WHERE …)``, is
answered in two stages (docs/rules.md, rule two-stage):

1. the subquery is a statement of its own, analysed and released with its own
   sensitivity and a share of ε;
2. its noisy value replaces the subquery as a literal, and the outer statement is
   released with the rest of ε.  The comparison with that constant is a filter; the
   outer statement is analysed without it (a filter only removes answers), so its
   bound holds whatever value stage 1 releases.

:func:`split_stages` finds such subqueries and writes the outer statement with a
marker call ``CQSENS_STAGE_VALUE(i)`` in place of the ``i``-th one;
:func:`drop_stage_conjuncts` takes the conjuncts holding a marker off the analysed
statement; :func:`substitute` puts the released values in place of the markers.
sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set
from dataclasses import dataclass

from sqlglot import exp

from cqsens.frontend.public_subqueries import drop_conjuncts
from cqsens.frontend.sql_expr import conjuncts
from cqsens.frontend.statements import parse_statement
from cqsens.ir.schema import Schema

__all__ = ["MARKER", "Stages", "drop_stage_conjuncts", "split_stages", "stage_marker",
           "staged_filters", "substitute"]

MARKER = "CQSENS_STAGE_VALUE"
"""The function call that stands for a stage-1 value in the outer statement."""

_MARKER_CALL = re.compile(rf"\b{MARKER}\s*\(\s*(\d+)\s*\)", re.IGNORECASE)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


@dataclass(frozen=True, slots=True)
class Stages:
    """A statement split into its stage-1 subqueries and its outer statement.

    Attributes
    ----------
    inner : tuple of str
        The SQL of each stage-1 subquery, as a statement of its own.
    outer : str
        The statement with ``CQSENS_STAGE_VALUE(i)`` in place of the ``i``-th
        subquery (from 1).
    conditions : tuple of str
        The comparisons as written, in the order of ``inner``.
    """

    inner: tuple[str, ...]
    outer: str
    conditions: tuple[str, ...]


def _tables(select: exp.Select) -> dict[str, str]:
    """alias → table name of the FROM/JOIN items of ``select`` (lower case); {} when an
    item is not a table."""
    from_ = select.args.get("from_") or select.args.get("from")
    items = [from_.this, *from_.expressions] if from_ is not None else []
    items += [j.this for j in select.args.get("joins") or []]
    if not items or not all(isinstance(i, exp.Table) for i in items):
        return {}
    return {i.alias_or_name.lower(): i.name.lower() for i in items if isinstance(i, exp.Table)}


def _uncorrelated(select: exp.Select, own: dict[str, str], schema: Schema | None) -> bool:
    """Whether every column of ``select`` belongs to one of its own tables."""
    for column in select.find_all(exp.Column):
        if column.table:
            if column.table.lower() not in own:
                return False
        elif schema is not None and not any(
                (rel := schema.find(t)) is not None and rel.index(column.name) is not None
                for t in own.values()):
            return False
    return True


def _in_where(node: exp.Expr) -> bool:
    """Whether ``node`` is a top-level conjunct of a WHERE clause."""
    parent = node.parent
    while isinstance(parent, (exp.And, exp.Paren)):
        parent = parent.parent
    return isinstance(parent, exp.Where)


def _scalar_threshold(sub: exp.Subquery, public: Set[str], ctes: Set[str],
                      schema: Schema | None) -> bool:
    """Whether ``sub`` is an uncorrelated scalar aggregate over private tables, compared
    with a value in a WHERE conjunct."""
    inner = sub.this
    comparison = sub.parent
    if not isinstance(inner, exp.Select) or not isinstance(comparison, _COMPARISONS):
        return False
    if not _in_where(comparison) or len(inner.expressions) != 1:
        return False
    if any(inner.args.get(k) is not None for k in ("group", "having", "with_", "with",
                                                    "order", "limit", "offset", "qualify")):
        return False
    if not any(True for _ in inner.expressions[0].find_all(exp.AggFunc)):
        return False
    if any(n is not inner for n in inner.find_all(exp.Select)):
        return False  # a subquery inside: not a single release
    own = _tables(inner)
    if not own or set(own.values()) & ctes:
        return False
    return bool(set(own.values()) - public) and _uncorrelated(inner, own, schema)


def split_stages(sql: str, dialect: str | None, *, public: Set[str] = frozenset(),
                 schema: Schema | None = None, source: str = "<sql>") -> Stages | None:
    """The two stages of ``sql``, or None when it compares with no private scalar subquery.

    Parameters
    ----------
    sql, dialect : str, str or None
        One SQL statement and its sqlglot dialect.
    public : set of str
        The public tables (lower case): a subquery over them alone is a constant
        (rule public-subqueries), not a stage.
    schema : Schema, optional
        Resolves unqualified columns (a column of no table of the subquery makes it
        correlated).
    source : str
        For errors.

    Returns
    -------
    Stages or None

    Examples
    --------
    >>> s = split_stages("SELECT COUNT(*) FROM t WHERE x > (SELECT AVG(x) FROM t)", None)
    >>> s.inner, s.outer
    (('SELECT AVG(x) FROM t',), 'SELECT COUNT(*) FROM t WHERE x > CQSENS_STAGE_VALUE(1)')
    """
    tree = parse_statement(sql, dialect, source)
    lowered = {p.lower() for p in public}
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    found = [s for s in tree.find_all(exp.Subquery)
             if _scalar_threshold(s, lowered, ctes, schema)]
    if not found:
        return None
    inner: list[str] = []
    conditions: list[str] = []
    for index, sub in enumerate(found, start=1):
        inner.append(sub.this.sql(dialect=dialect))
        assert sub.parent is not None
        conditions.append(sub.parent.sql(dialect=dialect))
        sub.replace(exp.Anonymous(this=MARKER, expressions=[exp.Literal.number(index)]))
    return Stages(tuple(inner), tree.sql(dialect=dialect), tuple(conditions))


def stage_marker(node: exp.Expr) -> exp.Expr | None:
    """The first ``CQSENS_STAGE_VALUE(i)`` under ``node`` (None: there is none)."""
    return next((a for a in node.find_all(exp.Anonymous) if str(a.this).upper() == MARKER),
                None)


def _threshold_filter(node: exp.Expr) -> bool:
    """A conjunct that compares the row with a stage-1 value and reads nothing else: no
    subquery (one that reads private rows is no fixed predicate; public and person-local
    ones have their own rules)."""
    return stage_marker(node) is not None and node.find(exp.Select) is None


def drop_stage_conjuncts(select: exp.Select, dialect: str | None) -> list[str]:
    """Take the WHERE conjuncts that compare the row with a stage-1 value off ``select``
    (in place); their SQL."""
    where = select.args.get("where")
    if where is None or not any(_threshold_filter(c) for c in conjuncts(where.this)):
        return []
    return drop_conjuncts(select, _threshold_filter, dialect)


def _literal(value: float | int | None) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float) and value != value:  # NaN: no value
        return "NULL"
    return repr(value) if isinstance(value, float) else str(int(value))


def substitute(sql: str, values: Sequence[float | int | None]) -> str:
    """``sql`` with the ``i``-th released value (a SQL literal) in place of each
    ``CQSENS_STAGE_VALUE(i)``.

    Examples
    --------
    >>> substitute("SELECT COUNT(*) FROM t WHERE x > CQSENS_STAGE_VALUE(1)", [2.5])
    'SELECT COUNT(*) FROM t WHERE x > 2.5'
    """
    def one(match: re.Match[str]) -> str:
        return _literal(values[int(match.group(1)) - 1])

    return _MARKER_CALL.sub(one, sql)


def staged_filters(tree: exp.Select, dialect: str | None, notes: list[str]) -> list[str]:
    """Take the conjuncts that compare with a stage's value off ``tree`` (in place), with a
    note in ``notes`` when there are any; returns them as SQL."""
    staged = drop_stage_conjuncts(tree, dialect)
    if staged:
        notes.append(
            f"{' AND '.join(staged)} compares with a value released by an earlier stage: "
            "a filter, analysed without it, so the bound holds for every released value "
            "(docs/rules.md, rule two-stage); no witness is built for it")
    return staged
