"""Inline derived tables ``FROM (SELECT …) AS t`` and non-recursive ``WITH`` into the query.

A derived table that is select-project-join (tables joined by inner joins,
a WHERE filter, a SELECT list of columns and scalar expressions, no DISTINCT,
aggregate, grouping or cut) is, in SQL's bag semantics, one row per row of its
join: ``SELECT … FROM (SELECT e1 AS x, … FROM T1, …, Tn WHERE φ) AS t WHERE ψ``
is ``SELECT … FROM T1, …, Tn WHERE φ AND ψ`` with every ``t.x`` replaced by
``e1``.  Counting the outer rows is counting the rows of the join, so the
inner tables' variables are counted (unlike a semi-join's).  A computed column
used in an aggregate becomes the aggregate's expression, one used in GROUP BY a
grouping expression.  A ``WITH`` table is inlined where it is read, as a
derived table of the same name; nested ones are inlined first, to any depth.

A derived table or WITH table that aggregates is rejected ("aggregating
subquery", "aggregating WITH"): an aggregate of aggregates is not a counting
query over a CQ.  sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from cqsens.frontend.sql_expr import fresh_alias
from cqsens.ir.schema import Schema

__all__ = ["inline_derived_tables"]

Reject = Callable[[exp.Expr, str, str], Exception]


def _from(select: exp.Select) -> exp.From | None:
    found = select.args.get("from_") or select.args.get("from")
    return found if isinstance(found, exp.From) else None


def _items(select: exp.Select) -> list[exp.Expr]:
    from_ = _from(select)
    items = [from_.this, *from_.expressions] if from_ is not None else []
    return items + [j.this for j in select.args.get("joins") or []]


def _with(select: exp.Select) -> exp.With | None:
    found = select.args.get("with_") or select.args.get("with")
    return found if isinstance(found, exp.With) else None


class _Inliner:
    def __init__(self, schema: Schema | None, reject: Reject) -> None:
        self.schema = schema
        self.reject = reject
        self.claimed: set[str] = set()
        self.counts: dict[str, int] = {}
        self.ctes: dict[str, exp.CTE] = {}

    # -- WITH -----------------------------------------------------------------
    def read_with(self, select: exp.Select) -> None:
        """Replace every read of a WITH table by a derived table (in place)."""
        with_ = _with(select)
        if with_ is None:
            return
        if with_.args.get("recursive"):
            raise self.reject(with_, "WITH RECURSIVE",
                              "a recursive query is not a conjunctive query")
        for cte in with_.expressions:
            assert isinstance(cte, exp.CTE)
            self._substitute(cte.this)  # a WITH table may read the earlier ones
            self.ctes[cte.alias_or_name.lower()] = cte
        select.set("with_", None)
        select.set("with", None)
        self._substitute(select)

    def _substitute(self, node: exp.Expr) -> None:
        for table in list(node.find_all(exp.Table)):
            cte = self.ctes.get(table.name.lower()) if not table.args.get("db") else None
            if cte is None:
                continue
            body = cte.this.copy()
            alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name))
            columns = cte.args["alias"].columns if cte.args.get("alias") is not None else []
            if columns:
                alias.set("columns", [c.copy() for c in columns])
            derived = exp.Subquery(this=body, alias=alias)
            derived.meta["cte"] = cte.alias_or_name
            table.replace(derived)

    # -- derived tables -------------------------------------------------------
    def inline_all(self, root: exp.Select) -> None:
        """Inline the derived tables of every SELECT of the statement, innermost first."""
        for table in root.find_all(exp.Table):
            key = table.alias_or_name.lower()
            self.counts[key] = self.counts.get(key, 0) + 1
        selects = [s for s in root.find_all(exp.Select)]
        for select in reversed(selects):
            for item in _items(select):
                if isinstance(item, exp.Subquery):
                    self._inline(select, item)

    def _construct(self, item: exp.Subquery) -> str:
        return "aggregating WITH" if item.meta.get("cte") else "aggregating subquery"

    def _check(self, item: exp.Subquery) -> exp.Select:
        inner = item.this
        what = f"WITH table {item.meta['cte']}" if item.meta.get("cte") else "derived table"
        if isinstance(inner, (exp.Union, exp.Except, exp.Intersect)):
            raise self.reject(inner, f"set operation in a {what}",
                              "a union of CQs is not a single conjunctive query")
        if not isinstance(inner, exp.Select):
            raise self.reject(item, f"{what}", "only a SELECT can be inlined")
        own = [n for e in inner.expressions for n in e.find_all(exp.AggFunc, exp.Window)]
        if own or inner.args.get("group") is not None or inner.args.get("having") is not None:
            hint = "" if item.meta.get("cte") else (
                "; with a privacy unit (--unit), a statement over one derived table grouped "
                "by the person's key reads a table of one row per person (docs/rules.md, rule "
                "person-groups)")
            raise self.reject(inner, self._construct(item),
                              "an aggregate over the result of an aggregate is not a counting "
                              "query over a conjunctive query" + hint)
        for key, name in (("distinct", "SELECT DISTINCT"), ("limit", "LIMIT"),
                          ("offset", "OFFSET"), ("order", "ORDER BY")):
            if inner.args.get(key) is not None:
                raise self.reject(inner.args[key], f"{name} in a {what}",
                                  "it changes which rows the outer query reads")
        for join in inner.args.get("joins") or []:
            kind = (join.args.get("kind") or "").upper()
            if join.args.get("side") or join.args.get("using") or kind not in ("", "INNER",
                                                                                "CROSS"):
                raise self.reject(join, f"{kind or join.args.get('side') or 'USING'} JOIN in a "
                                  f"{what}", "write the inner join with ON or WHERE")
        if not all(isinstance(i, exp.Table) for i in _items(inner)):
            raise self.reject(inner, f"{what} without tables", "there is no table to read")
        return inner

    def _outputs(self, inner: exp.Select, item: exp.Subquery) -> dict[str, exp.Expr]:
        alias = item.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None else []
        out: dict[str, exp.Expr] = {}
        for index, e in enumerate(inner.expressions):
            value = e.this if isinstance(e, exp.Alias) else e
            if isinstance(value, exp.Star) or (isinstance(value, exp.Column)
                                               and isinstance(value.this, exp.Star)):
                raise self.reject(e, "SELECT * in a derived table", "list the columns it returns")
            name = names[index] if index < len(names) else e.alias_or_name
            out[name.lower()] = value
        return out

    def _inline(self, outer: exp.Select, item: exp.Subquery) -> None:
        inner = self._check(item).copy()
        self._qualify(inner)
        self._rename(inner)
        outputs = self._outputs(inner, item)
        name = item.alias_or_name.lower()
        tables = [i.copy() for i in _items(inner)]
        item.replace(tables[0])
        from_ = _from(outer)
        assert from_ is not None
        for added in tables[1:]:
            from_.append("expressions", added)
        others = [i for i in _items(outer) if isinstance(i, exp.Table) and i not in tables]
        siblings = [i for i in _items(outer) if isinstance(i, exp.Subquery)]
        for col in list(outer.find_all(exp.Column)):
            table = col.table.lower()
            if (table and table != name) or col.name.lower() not in outputs:
                continue
            if self._elsewhere(col, outer, siblings):
                continue
            if not table and any(self._has(i.name, col.name) for i in others):
                continue  # the column of an outer table of that name
            value = outputs[col.name.lower()].copy()
            if col.parent is outer and col.arg_key == "expressions":
                value = exp.alias_(value, col.name)  # keep the output column's name
            col.replace(value)
        conditions = [j.args["on"].copy() for j in inner.args.get("joins") or []
                      if j.args.get("on") is not None]
        if inner.args.get("where") is not None:
            conditions.append(inner.args["where"].this.copy())
        if conditions:
            where = outer.args.get("where")
            parts = [where.this, *conditions] if where is not None else conditions
            outer.set("where", exp.Where(this=exp.and_(*parts)))

    def _elsewhere(self, col: exp.Column, outer: exp.Select,
                   siblings: list[exp.Subquery]) -> bool:
        """Whether ``col`` cannot read the derived table being inlined into ``outer``:
        it lies in another derived table of the same FROM (which sees only its own
        tables), or it is unqualified in a nested SELECT one of whose own tables has
        a column of that name (SQL resolves it there first)."""
        ancestors = list(_ancestors(col))
        if any(a is s for s in siblings for a in ancestors):
            return True
        scope = col.find_ancestor(exp.Select)
        if col.table or scope is None or scope is outer:
            return False
        return any(isinstance(t, exp.Table) and self._has(t.name, col.name)
                   for t in _items(scope))

    def _fresh(self, alias: str) -> str:
        return fresh_alias(alias, self.counts, self.claimed)

    def _rename(self, inner: exp.Select) -> None:
        """Give the inner tables aliases that no other table of the statement uses."""
        renames: dict[str, str] = {}
        for table in _items(inner):
            assert isinstance(table, exp.Table)
            alias = table.alias_or_name
            fresh = self._fresh(alias)
            if fresh != alias:
                renames[alias.lower()] = fresh
            table.set("alias", exp.TableAlias(this=exp.to_identifier(fresh)))
        for col in inner.find_all(exp.Column):
            if col.table and col.table.lower() in renames:
                col.set("table", exp.to_identifier(renames[col.table.lower()]))

    def _qualify(self, inner: exp.Select) -> None:
        """Qualify the inner tables' unqualified columns (SQL resolves them there first)."""
        tables = [i for i in _items(inner) if isinstance(i, exp.Table)]
        for col in list(inner.find_all(exp.Column)):
            if col.table or isinstance(col.this, exp.Star):
                continue
            owners = [t for t in tables if self._has(t.name, col.name)]
            if self.schema is None and len(tables) == 1:
                owners = tables
            if len(owners) == 1:
                col.set("table", exp.to_identifier(owners[0].alias_or_name))
            elif len(owners) > 1:
                raise self.reject(col, f"column {col.name}",
                                  "it is ambiguous in the derived table; qualify it")

    def _has(self, table: str, column: str) -> bool:
        if self.schema is None:
            return False
        rel = self.schema.find(table)
        return rel is not None and rel.index(column) is not None


def inline_derived_tables(select: exp.Select, schema: Schema | None, reject: Reject) -> None:
    """Inline the WITH tables and the derived tables of ``select`` (in place).

    Parameters
    ----------
    select : sqlglot Select
        The statement; its WITH clause is removed and every derived table of
        every SELECT in it is replaced by its tables, conditions and columns.
    schema : Schema, optional
        Resolves unqualified columns inside a derived table.
    reject : callable
        Builds the error for a construct that cannot be inlined.
    """
    inliner = _Inliner(schema, reject)
    inliner.read_with(select)
    inliner.inline_all(select)


def _scope_columns(select: exp.Select) -> list[exp.Column]:
    """The columns read in ``select``'s own scope (not in its nested SELECTs)."""
    return [c for c in select.find_all(exp.Column) if c.find_ancestor(exp.Select) is select]


def _needs_lift(outer: exp.Select, inner: exp.Select) -> bool:
    """Whether lifting is what makes the statement readable: an outer join around or
    inside the derived table, or a set operation in a derived table inside it."""
    return _sided(outer) or _needs_split(inner)


def _sided(select: exp.Select) -> bool:
    return any(j.args.get("side") for j in select.args.get("joins") or [])


def _needs_split(select: exp.Select) -> bool:
    """An outer join or a set operation in ``select``'s FROM, or in a derived table there
    (at any depth)."""
    if _sided(select):
        return True
    for item in _items(select):
        if isinstance(item, exp.Subquery):
            if isinstance(item.this, (exp.Union, exp.Intersect, exp.Except)):
                return True
            if isinstance(item.this, exp.Select) and _needs_split(item.this):
                return True
    return False


def _spj(inner: exp.Expr) -> bool:
    """A SELECT that is select-project-join: no aggregate, grouping, DISTINCT or cut."""
    if not isinstance(inner, exp.Select) or _with(inner) is not None:
        return False
    if any(inner.args.get(k) is not None for k in ("group", "having", "distinct", "limit",
                                                    "offset", "order", "qualify")):
        return False
    return not any(True for e in inner.expressions
                   for _ in e.find_all(exp.AggFunc, exp.Window, exp.Star))


def lift_derived_table(select: exp.Select, schema: Schema | None,
                       reject: Reject) -> exp.Select | None:
    """``SELECT … FROM (SELECT e AS x … FROM T … WHERE φ) AS t [JOIN …] WHERE ψ`` as
    ``SELECT … FROM T … [JOIN …] WHERE φ AND ψ`` with every ``t.x`` replaced by ``e``.

    Only the first FROM item is lifted, and only when the result needs it (an
    outer join around or inside the derived table, or a set operation inside
    it; every other derived table is inlined later, as before).  The derived
    table is select-project-join, so each of its rows is one row of its join;
    its tables come first in the new FROM, and the joins after it only add
    columns to its rows, so its WHERE (which reads only its own tables) can be
    applied after them: ``σφ(L) ⟕ S = σφ(L ⟕ S)``.  Returns the new statement,
    or None when nothing is lifted.
    """
    read = _read_split_ctes(select)
    if read is not None:
        return read
    from_ = _from(select)
    if from_ is None or from_.expressions or not isinstance(from_.this, exp.Subquery):
        return None
    item = from_.this
    inner = item.this
    if not _spj(inner) or not _needs_lift(select, inner):
        return None
    assert isinstance(inner, exp.Select)
    inner = inner.copy()
    name = item.alias_or_name.lower()
    inner_aliases = {i.alias_or_name.lower() for i in _items(inner)}
    outer_aliases = {t.alias_or_name.lower() for t in select.find_all(exp.Table)
                     if not any(a is item for a in _ancestors(t))}
    outer_aliases |= {s.alias_or_name.lower() for s in select.find_all(exp.Subquery)
                      if s is not item and s.alias_or_name
                      and not any(a is item for a in _ancestors(s))}
    clash = sorted(inner_aliases & outer_aliases)
    if clash:
        raise reject(item, f"alias {clash[0]} inside and outside a derived table",
                     "give the tables distinct aliases")
    _qualify_scope(inner, schema, reject)
    outputs = _Inliner(schema, reject)._outputs(inner, item)
    out = select.copy()
    out_from = _from(out)
    assert out_from is not None
    others = [j.this for j in out.args.get("joins") or []]
    for col in list(out.find_all(exp.Column)):
        table = col.table.lower()
        if table == name and col.name.lower() not in outputs \
                and not any(a is out_from.this for a in _ancestors(col)):
            raise reject(col, f"column {col.sql()}",
                         f"the derived table {item.alias_or_name} has no column {col.name}")
        if col.name.lower() not in outputs:
            continue
        if table != name and (table or col.find_ancestor(exp.Select) is not out
                              or _owned(others, col.name, schema)):
            continue
        value = outputs[col.name.lower()].copy()
        if col.parent is out and col.arg_key == "expressions":
            value = exp.alias_(value, col.name)
        col.replace(value)
    inner_from = _from(inner)
    assert inner_from is not None
    out.set("from_", inner_from.copy())
    joins = [j.copy() for j in inner.args.get("joins") or []] + list(out.args.get("joins") or [])
    out.set("joins", joins or None)
    conditions = [w.this.copy() for w in (inner.args.get("where"), out.args.get("where"))
                  if w is not None]
    out.set("where", exp.Where(this=exp.and_(*conditions)) if conditions else None)
    return out


def _read_split_ctes(select: exp.Select) -> exp.Select | None:
    """``select`` with every read of a WITH table that holds an outer join or a set
    operation (at any depth) replaced by a derived table of its body, or None."""
    with_ = _with(select)
    if with_ is None or with_.args.get("recursive"):
        return None
    needy = [c for c in with_.expressions
             if isinstance(c.this, exp.Select) and _spj(c.this) and _needs_split(c.this)]
    if not needy:
        return None
    out = select.copy()
    out_with = _with(out)
    assert out_with is not None
    names = {c.alias_or_name.lower(): c for c in needy}
    for table in list(out.find_all(exp.Table)):
        cte = names.get(table.name.lower())
        if cte is None or table.args.get("db") is not None:
            continue
        alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name))
        if cte.args.get("alias") is not None and cte.args["alias"].columns:
            alias.set("columns", [c.copy() for c in cte.args["alias"].columns])
        table.replace(exp.Subquery(this=cte.this.copy(), alias=alias))
    kept = [c for c in out_with.expressions if c.alias_or_name.lower() not in names]
    if kept:
        out_with.set("expressions", kept)
    else:
        out.set("with_", None)
        out.set("with", None)
    return out


def _ancestors(node: exp.Expr) -> list[exp.Expr]:
    out: list[exp.Expr] = []
    parent = node.parent
    while parent is not None:
        out.append(parent)
        parent = parent.parent
    return out


def _owned(items: list[exp.Expr], column: str, schema: Schema | None) -> bool:
    """Whether a base table among ``items`` has a column of that name (by the schema)."""
    if schema is None:
        return False
    for i in items:
        if isinstance(i, exp.Table):
            rel = schema.find(i.name)
            if rel is not None and rel.index(column) is not None:
                return True
    return False


def _qualify_scope(inner: exp.Select, schema: Schema | None, reject: Reject) -> None:
    """Qualify the unqualified columns of ``inner``'s own scope by the table that has them."""
    items = _items(inner)
    for col in _scope_columns(inner):
        if col.table:
            continue
        owners: list[exp.Expr] = [i for i in items
                                  if isinstance(i, exp.Table) and _owned([i], col.name, schema)]
        if len(items) == 1:
            owners = items
        if len(owners) != 1:
            raise reject(col, f"column {col.name}",
                         "qualify it in the derived table (table.column)")
        col.set("table", exp.to_identifier(owners[0].alias_or_name))
