"""Released views: aggregates over private tables grouped by a public key
(docs/rules.md, rule released-view).

Two forms are recognised on the statement, before any translation:

* a correlated scalar subquery over private tables whose correlation is equalities
  ``inner_column = outer_column`` with the outer columns from one public table
  (TPC-H q17's ``(SELECT 0.2 * AVG(l_quantity) FROM lineitem WHERE l_partkey =
  p_partkey)``, q20's per-(partkey, suppkey) sum);
* a ``WITH`` table that groups private rows by columns that together are a NOT NULL
  foreign key into a public table (TPC-H q15's ``revenue0`` grouped by ``l_suppkey``).

Each is a *view*: the grouped statement ``SELECT keys, aggregate, COUNT(*) … GROUP BY
keys`` is released as a histogram over a public domain (the distinct values of the
public columns, read from public tables only).  The statement itself is rewritten with
a marker in place of each view: ``CQSENS_STAGE_VALUE(i, outer columns…)`` for a scalar
subquery, a body ``SELECT CQSENS_VIEW_ROWS(i) AS column, …`` for a ``WITH`` table.
:func:`fill_views` puts the released rows in place of the markers, as ``VALUES`` lists,
so whatever then runs reads the noisy values only.  sqlglot objects never leave
:mod:`cqsens.frontend`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from sqlglot import exp

from cqsens.errors import InputError
from cqsens.frontend.public_statement import public_statement
from cqsens.frontend.sql_expr import conjuncts
from cqsens.frontend.statements import parse_statement
from cqsens.frontend.two_stage import MARKER
from cqsens.ir.schema import Relation, Schema

__all__ = ["ROWS_MARKER", "View", "Views", "fill_scalars", "fill_views", "owner", "private",
           "sources", "split_views"]

ROWS_MARKER = "CQSENS_VIEW_ROWS"
"""The function call that stands for the rows of a released ``WITH`` table."""

VALUE_LABEL = "cqsens_value"
ROWS_LABEL = "cqsens_rows"

_SCALAR_CALL = re.compile(rf"\b{MARKER}\s*\(\s*(\d+)\s*,([^()]*)\)", re.IGNORECASE)
_CLAUSES = ("group", "having", "with_", "with", "order", "limit", "offset", "qualify",
            "distinct")


@dataclass(frozen=True, slots=True)
class View:
    """One released view.

    Attributes
    ----------
    number : int
        Its number in the statement (from 1), as its marker names it.
    sql : str
        The grouped statement released: its key columns, ``… AS cqsens_value`` and,
        when ``counted``, ``COUNT(*) AS cqsens_rows``.
    domain_sql : str
        A statement over public tables only whose rows are the released keys.
    scalar : bool
        A scalar subquery (else a ``WITH`` table).
    counted : bool
        The statement releases ``cqsens_rows``: a WITH table's rows are its keys with a
        noisy row count of at least 1/2, a scalar subquery's value is NULL below that
        (SQL's SUM, MIN, MAX over no row); else a WITH table's value is its row count
        (``COUNT(*)``) and a scalar subquery's value stands as released (a COUNT is 0
        and an average NULL over no row, as their noisy values with the noise off).
    columns : tuple of str
        For a ``WITH`` table: its column names, in order.
    written : str
        The subquery or the ``WITH`` table as written.
    """

    number: int
    sql: str
    domain_sql: str
    scalar: bool
    counted: bool
    columns: tuple[str, ...]
    written: str


@dataclass(frozen=True, slots=True)
class Views:
    """A statement's released views and the statement with a marker in place of each.

    ``public_outer`` says whether the rewritten statement reads public tables only
    (then it is post-processing of the views, computed on their noisy rows).
    """

    views: tuple[View, ...]
    outer: str
    public_outer: bool


# ----------------------------------------------------------------------- resolution


def sources(select: exp.Select) -> dict[str, exp.Table] | None:
    """alias → table of the FROM and JOIN items of ``select``; None when one is not a
    named table."""
    from_ = select.args.get("from_") or select.args.get("from")
    items = [from_.this, *from_.expressions] if from_ is not None else []
    items += [j.this for j in select.args.get("joins") or []]
    if not items or not all(isinstance(i, exp.Table) and isinstance(i.this, exp.Identifier)
                            for i in items):
        return None
    return {i.alias_or_name.lower(): i for i in items if isinstance(i, exp.Table)}


def owner(column: exp.Column, items: Mapping[str, exp.Table],
           schema: Schema | None) -> str | None:
    """The alias of ``items`` that ``column`` belongs to, or None."""
    if column.table:
        alias = column.table.lower()
        return alias if alias in items else None
    if schema is None:
        return None
    found = [a for a, t in items.items()
             if (rel := schema.find(t.name)) is not None and rel.index(column.name) is not None]
    return found[0] if len(found) == 1 else None


def private(items: Mapping[str, exp.Table], public: Set[str]) -> bool:
    return any(t.name.lower() not in public for t in items.values())


def _plain(select: exp.Select) -> bool:
    """One aggregating item, no clause that makes it more than one aggregate, no subquery."""
    if any(select.args.get(k) for k in _CLAUSES if k != "group"):
        return False
    return not any(n is not select for n in select.find_all(exp.Select))


# --------------------------------------------------------------------- scalar views


@dataclass(frozen=True, slots=True)
class _Correlation:
    inner: tuple[exp.Column, ...]
    outer: tuple[exp.Column, ...]
    alias: str  # the outer public table's alias
    kept: tuple[exp.Expr, ...]  # the inner WHERE conjuncts without the correlation


def _correlation(inner: exp.Select, own: Mapping[str, exp.Table],
                 enclosing: Mapping[str, exp.Table], public: Set[str],
                 schema: Schema | None) -> _Correlation | None:
    """How ``inner`` is correlated with its enclosing query: equalities with columns of one
    public table of it, and nothing else."""
    where = inner.args.get("where")
    pairs: list[tuple[exp.Column, exp.Column]] = []
    kept: list[exp.Expr] = []
    for cond in conjuncts(where.this) if where is not None else []:
        outside = [c for c in cond.find_all(exp.Column) if owner(c, own, schema) is None]
        if not outside:
            kept.append(cond)
            continue
        if not (isinstance(cond, exp.EQ) and isinstance(cond.this, exp.Column)
                and isinstance(cond.expression, exp.Column)):
            return None
        a, b = cond.this, cond.expression
        if owner(a, own, schema) is None:
            a, b = b, a
        if owner(a, own, schema) is None or owner(b, enclosing, schema) is None:
            return None
        pairs.append((a, b))
    if not pairs:
        return None
    if any(owner(c, own, schema) is None for e in inner.expressions
           for c in e.find_all(exp.Column)):
        return None
    aliases = {owner(b, enclosing, schema) for _, b in pairs}
    if len(aliases) != 1:
        return None
    alias = aliases.pop()
    assert alias is not None
    if enclosing[alias].name.lower() not in public:
        return None
    return _Correlation(tuple(a for a, _ in pairs), tuple(b for _, b in pairs), alias,
                        tuple(kept))


def _closed(top: exp.Select, public: Set[str], schema: Schema | None) -> bool:
    """Whether the subquery ``top`` reads public tables only and every column in it
    belongs to one of its own (or its enclosing subqueries') tables."""
    for sub in top.find_all(exp.Select):
        found = sources(sub)
        if found is None or private(found, public):
            return False
    for column in top.find_all(exp.Column):
        select = column.find_ancestor(exp.Select)
        while select is not None:
            found = sources(select)
            if found is not None and owner(column, found, schema) is not None:
                break
            parent = select.parent
            select = None if select is top or parent is None \
                else parent.find_ancestor(exp.Select)
        if select is None:
            return False
    return True


def _inside(inner: exp.Expr, outer: exp.Expr) -> bool:
    node: exp.Expr | None = inner
    while node is not None:
        if node is outer:
            return True
        node = node.parent
    return False


def _domain_filters(enclosing: exp.Select, tables: Mapping[str, exp.Table], alias: str,
                    skip: exp.Expr, public: Set[str], schema: Schema | None
                    ) -> list[exp.Expr]:
    """The WHERE conjuncts of ``enclosing`` that read only the public table ``alias``
    (outside their subqueries, which read public tables only): they restrict the domain."""
    where = enclosing.args.get("where")
    out: list[exp.Expr] = []
    for cond in conjuncts(where.this) if where is not None else []:
        if _inside(skip, cond) or cond.find(exp.Anonymous) is not None:
            continue
        columns = [c for c in cond.find_all(exp.Column)
                   if c.find_ancestor(exp.Select) is enclosing]
        if not columns or any(owner(c, tables, schema) != alias for c in columns):
            continue
        subqueries = [s for s in cond.find_all(exp.Select)
                      if s.parent is not None and s.parent.find_ancestor(exp.Select) is enclosing]
        if not all(_closed(s, public, schema) for s in subqueries):
            continue
        out.append(cond.copy())
    return out


def _scalar_view(sub: exp.Subquery, number: int, public: Set[str], ctes: Set[str],
                 schema: Schema | None, dialect: str | None
                 ) -> tuple[View, tuple[exp.Column, ...]] | None:
    """The view of the scalar subquery ``sub`` and the outer columns it is correlated
    with, or None when it is not one."""
    inner = sub.this
    if not isinstance(inner, exp.Select) or len(inner.expressions) != 1:
        return None
    if inner.args.get("group") is not None or not _plain(inner):
        return None
    value = inner.expressions[0].unalias()
    if value.find(exp.AggFunc) is None:
        return None
    own = sources(inner)
    enclosing = sub.parent_select
    outer = sources(enclosing) if enclosing is not None else None
    if own is None or outer is None or enclosing is None:
        return None
    if {t.name.lower() for t in own.values()} & ctes or not private(own, public):
        return None
    found = _correlation(inner, own, outer, public, schema)
    if found is None:
        return None
    anchor = _anchor(sub)
    table = outer[found.alias]
    filters = _domain_filters(enclosing, outer, found.alias, anchor, public, schema)
    domain = exp.select(*[c.copy() for c in found.outer]).distinct().from_(table.copy())
    if filters:
        domain = domain.where(exp.and_(*filters))
    # over no row a COUNT is 0 and an average NULL, as their noisy values are with the
    # noise off: only SUM, MIN, MAX (NULL over no row) need the row count to tell it
    kinds = {type(a) for a in value.find_all(exp.AggFunc)}
    counted = not (kinds <= {exp.Count} or kinds == {exp.Avg})
    items: list[exp.Expr] = [*[c.copy() for c in found.inner],
                             exp.alias_(value.copy(), VALUE_LABEL)]
    if counted:
        items.append(exp.alias_(exp.Count(this=exp.Star()), ROWS_LABEL))
    view = inner.copy()
    view.set("expressions", items)
    view.set("where", exp.Where(this=exp.and_(*[k.copy() for k in found.kept]))
             if found.kept else None)
    view = view.group_by(*[c.copy() for c in found.inner])
    return View(number, view.sql(dialect=dialect), domain.sql(dialect=dialect), True,
                counted, (), sub.sql(dialect=dialect)), found.outer


def _anchor(sub: exp.Subquery) -> exp.Expr:
    """The WHERE conjunct that holds ``sub`` (or ``sub`` itself)."""
    node: exp.Expr = sub
    while node.parent is not None and not isinstance(node.parent, (exp.Where, exp.And)):
        node = node.parent
    return node


def _count_star(value: exp.Expr) -> bool:
    return isinstance(value, exp.Count) and isinstance(value.this, exp.Star)


# ----------------------------------------------------------------------- WITH views


def _foreign_key(rel: Relation, positions: Sequence[int], schema: Schema, public: Set[str]
                 ) -> tuple[Relation, tuple[int, ...]] | None:
    """The public table and the referenced positions (in the order of ``positions``) of
    a foreign key of ``rel`` over exactly ``positions``, all NOT NULL."""
    if any(rel.nullable(p) for p in positions):
        return None
    for fk in rel.foreign_keys:
        target = schema.find(fk.table)
        if sorted(fk.columns) != sorted(positions) or target is None \
                or target.name.lower() not in public:
            continue
        by = dict(zip(fk.columns, fk.referenced, strict=True))
        return target, tuple(by[p] for p in positions)
    return None


def _with_view(cte: exp.CTE, number: int, public: Set[str], schema: Schema | None,
               dialect: str | None) -> View | None:
    """The view of the ``WITH`` table ``cte``, or None when it is not one."""
    body = cte.this
    if not isinstance(body, exp.Select) or schema is None or not _plain(body):
        return None
    group = body.args.get("group")
    own = sources(body)
    if group is None or own is None or len(own) != 1 or not private(own, public):
        return None
    keys = list(group.expressions)
    if not keys or not all(isinstance(k, exp.Column) for k in keys):
        return None
    table = next(iter(own.values()))
    rel = schema.find(table.name)
    positions = [rel.index(k.name) if rel is not None else None for k in keys]
    if rel is None or any(p is None for p in positions):
        return None
    target = _foreign_key(rel, [p for p in positions if p is not None], schema, public)
    values = [e for e in body.expressions if e.find(exp.AggFunc) is not None]
    plain = [e.unalias() for e in body.expressions if e.find(exp.AggFunc) is None]
    if target is None or len(values) != 1 or len(plain) != len(keys) or {
            p.sql() for p in plain} != {k.sql() for k in keys}:
        return None
    columns = _cte_columns(cte)
    if len(columns) != len(body.expressions):
        return None
    order = [next(i for i, k in enumerate(keys) if k.sql() == e.unalias().sql())
             if e.find(exp.AggFunc) is None else -1 for e in body.expressions]
    value = values[0].unalias()
    counted = not _count_star(value)
    items: list[exp.Expr] = [*[k.copy() for k in keys], exp.alias_(value.copy(), VALUE_LABEL)]
    if counted:
        items.append(exp.alias_(exp.Count(this=exp.Star()), ROWS_LABEL))
    view = body.copy()
    view.set("expressions", items)
    referenced = [target[0].columns[p] for p in target[1]]
    domain = exp.select(*referenced).distinct().from_(target[0].name)
    written = cte.sql(dialect=dialect)
    cte.set("this", exp.select(*[exp.alias_(exp.Anonymous(
        this=ROWS_MARKER, expressions=[exp.Literal.number(number), exp.Literal.number(o)]),
        c) for o, c in zip(order, columns, strict=True)]))
    return View(number, view.sql(dialect=dialect), domain.sql(dialect=dialect), False,
                counted, columns, written)


def _cte_columns(cte: exp.CTE) -> tuple[str, ...]:
    alias = cte.args.get("alias")
    listed = alias.columns if isinstance(alias, exp.TableAlias) else []
    if listed:
        return tuple(c.name for c in listed)
    return tuple(e.alias_or_name for e in cte.this.expressions)


# ---------------------------------------------------------------------------- split


def split_views(sql: str, dialect: str | None, *, public: Set[str],
                schema: Schema | None, source: str = "<sql>") -> Views | None:
    """The released views of ``sql``, or None when it has none.

    Parameters
    ----------
    sql, dialect, public
        As :func:`cqsens.frontend.public_statement.public_statement` reads them.
    schema : Schema, optional
        Resolves unqualified columns and gives the foreign keys.
    source : str
        For errors.

    Returns
    -------
    Views or None

    Raises
    ------
    InputError
        A view whose results the rest of the statement uses with private tables other
        than in a WHERE comparison (only such a filter is analysed without it).
    """
    names = {p.lower() for p in public}
    if not names:
        return None
    tree = parse_statement(sql, dialect, source)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    views: list[View] = []
    for cte in list(tree.find_all(exp.CTE)):
        found = _with_view(cte, len(views) + 1, names, schema, dialect)
        if found is not None:
            views.append(found)
    for sub in list(tree.find_all(exp.Subquery)):
        if not _reads_no_markers(sub):
            continue
        scalar = _scalar_view(sub, len(views) + 1, names, ctes, schema, dialect)
        if scalar is None:
            continue
        views.append(scalar[0])
        sub.replace(exp.Anonymous(this=MARKER, expressions=[
            exp.Literal.number(scalar[0].number), *[c.copy() for c in scalar[1]]]))
    if not views:
        return None
    outer = tree.sql(dialect=dialect)
    public_outer = public_statement(outer, dialect=dialect, public=names,
                                    source=source) is not None
    if not public_outer:
        _check_private_outer(tree, views, source)
    return Views(tuple(views), outer, public_outer)


def _reads_no_markers(sub: exp.Subquery) -> bool:
    return not any(str(a.this).upper() in (MARKER, ROWS_MARKER)
                   for a in sub.find_all(exp.Anonymous))


def _check_private_outer(tree: exp.Expr, views: Sequence[View], source: str) -> None:
    """Refuse a view whose rows the rest of a statement over private tables reads other
    than as a WHERE comparison (docs/rules.md, rule released-view)."""
    for view in views:
        if not view.scalar:
            raise InputError(
                f"the WITH table {view.written[:60]} is a released view, but the rest of the "
                "statement reads private tables: only a statement over public tables and "
                "released views is post-processing; release the view on its own, or join it "
                "with public tables only", source=source, construct="released-view")
    for call in tree.find_all(exp.Anonymous):
        if str(call.this).upper() != MARKER:
            continue
        comparison = call.parent
        parent = comparison.parent if comparison is not None else None
        while isinstance(parent, (exp.And, exp.Paren)):
            parent = parent.parent
        if not isinstance(comparison, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)) \
                or not isinstance(parent, exp.Where):
            raise InputError(
                "a released view (a correlated scalar subquery over private tables) is used "
                "outside a WHERE comparison of a statement over private tables; only such a "
                "filter is analysed without it (docs/rules.md, rule released-view)",
                source=source, construct="released-view")


# ----------------------------------------------------------------------------- fill


def literal(value: object) -> str:
    """A Python value as a SQL literal."""
    if value is None or (isinstance(value, float) and value != value):
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        return repr(value) if value not in (float("inf"), float("-inf")) else "NULL"
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, (date, datetime)):
        value = value.isoformat()
    text = str(value).replace("'", "''")
    return f"'{text}'"


def _values(rows: Sequence[Sequence[object]]) -> str:
    return "(VALUES " + ", ".join("(" + ", ".join(literal(v) for v in row) + ")"
                                  for row in rows) + ")"


def fill_scalars(sql: str, rows: Mapping[int, Sequence[Sequence[object]]]) -> str:
    """``sql`` with a lookup in the released rows of view ``i`` (key values, then the
    value) in place of each ``CQSENS_STAGE_VALUE(i, columns…)``: the value of the row
    whose key equals the columns, NULL when there is none.

    Examples
    --------
    >>> fill_scalars("SELECT a FROM t WHERE x > CQSENS_STAGE_VALUE(1, t.k)", {1: [(1, 2.5)]})
    'SELECT a FROM t WHERE x > (SELECT column2 FROM (VALUES (1, 2.5)) AS cqsens_view_1 \
WHERE column1 = t.k)'
    """
    def one(match: re.Match[str]) -> str:
        number = int(match.group(1))
        columns = [c.strip() for c in match.group(2).split(",")]
        found = rows.get(number)
        if found is None:
            return match.group(0)
        if not found:
            return "NULL"
        where = " AND ".join(f"column{n} = {c}" for n, c in enumerate(columns, start=1))
        return (f"(SELECT column{len(columns) + 1} FROM {_values(found)} AS cqsens_view_"
                f"{number} WHERE {where})")

    return _SCALAR_CALL.sub(one, sql)


def _put(text: str, placeholder: str, body: str) -> str:
    """``text`` with ``body`` in place of the table name ``placeholder`` (once)."""
    return re.sub(rf"\b{placeholder}\b(?!\s*\.)", lambda _m: body, text, count=1)


def fill_views(sql: str, dialect: str | None, target: str,
               rows: Mapping[int, Sequence[Sequence[object]]], *, source: str) -> str:
    """``sql`` for a ``target`` database, with the released rows of every view in place of
    its marker: a ``WITH`` table's body reads a ``VALUES`` list of its released rows (key
    values, then the value), a scalar marker is filled by :func:`fill_scalars`."""
    tree = parse_statement(sql, dialect, source)
    bodies: dict[str, str] = {}
    for cte in tree.find_all(exp.CTE):
        calls = [a for a in cte.this.find_all(exp.Anonymous)
                 if str(a.this).upper() == ROWS_MARKER] if isinstance(cte.this, exp.Select) \
            else []
        if not calls:
            continue
        number = int(calls[0].expressions[0].name)
        placeholder = f"cqsens_view_rows_{number}"
        items = []
        for item in cte.this.expressions:
            call = item.unalias()
            assert isinstance(call, exp.Anonymous)
            position = int(call.expressions[1].name)
            width = len(cte.this.expressions)
            column = width if position < 0 else position + 1
            items.append(exp.alias_(exp.column(f"column{column}"), item.alias_or_name))
        cte.set("this", exp.select(*items).from_(placeholder))
        found = rows.get(number, [])
        bodies[placeholder] = (f"{_values(found)} AS {placeholder}" if found else
                               "(SELECT " + ", ".join(f"NULL AS column{n}" for n in range(
                                   1, len(items) + 1)) + f" WHERE 1 = 0) AS {placeholder}")
    text = tree.sql(dialect=target)
    for placeholder, body in bodies.items():
        text = _put(text, placeholder, body)
    return fill_scalars(text, rows)

