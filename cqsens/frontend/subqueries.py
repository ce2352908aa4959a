"""Positive WHERE subqueries as semi-joins: ``EXISTS (SELECT …)`` and ``x IN (SELECT y …)``.

A conjunct ``EXISTS (SELECT … FROM T1, …, Tn WHERE φ)`` of the WHERE clause,
correlated or not, holds for an outer row exactly when some rows of T1…Tn
satisfy φ together with it: the tables join the outer query and their
variables are existential (they are not counted; the caller leaves them out
of the head).  ``x IN (SELECT y FROM … WHERE φ)`` is the same with ``x = y``
added to φ.  Both are monotone, so the result is a conjunctive query with
projection (Arapinis, Figueira, Gaboardi, Sensitivity of Counting Queries,
ICALP 2016, Example 2 reads SQL joins the same way).

Only select-project-join subqueries are inlined; nested ones are inlined
first.  ``NOT EXISTS`` and ``NOT IN`` are left in place for the caller to
reject (negation), and so is a subquery under OR or one that aggregates,
groups or cuts its rows (LIMIT), which the caller rejects by name.  sqlglot
objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from cqsens.frontend.sql_expr import conjuncts, fresh_alias
from cqsens.ir.schema import Schema

__all__ = ["inline_semijoins"]

Reject = Callable[[exp.Expr, str, str], Exception]


def _select_of(node: exp.Expr | None) -> exp.Select | None:
    while isinstance(node, (exp.Subquery, exp.Paren)):
        node = node.this
    return node if isinstance(node, exp.Select) else None


def _unaliased(node: exp.Expr) -> exp.Expr:
    return node.this if isinstance(node, exp.Alias) else node


def _aliases(select: exp.Select) -> list[str]:
    from_ = select.args.get("from_") or select.args.get("from")
    items = [from_.this, *from_.expressions] if from_ is not None else []
    items += [j.this for j in select.args.get("joins") or []]
    return [i.alias_or_name for i in items if isinstance(i, exp.Table)]


class _Inliner:
    def __init__(self, schema: Schema | None, reject: Reject) -> None:
        self.schema = schema
        self.reject = reject
        self.existential: list[str] = []
        self.counts: dict[str, int] = {}
        self.claimed: set[str] = set()

    def start(self, root: exp.Select) -> None:
        """Remember every table alias of the statement: an inlined table takes a fresh one
        when its alias occurs twice anywhere (SQL scopes keep them apart, one query does not)."""
        for table in root.find_all(exp.Table):
            key = table.alias_or_name.lower()
            self.counts[key] = self.counts.get(key, 0) + 1
        self.claimed = {a.lower() for a in _aliases(root)}

    def _fresh(self, alias: str) -> str:
        return fresh_alias(alias, self.counts, self.claimed)

    def inline(self, select: exp.Select, outer: tuple[exp.Table, ...] = ()) -> None:
        """Inline the positive subquery conjuncts of ``select``'s WHERE (in place); ``outer``
        are the tables of the enclosing scopes, for correlated columns."""
        where = select.args.get("where")
        if where is None:
            return
        if outer or any(True for _ in where.this.find_all(exp.Select)):
            self._qualify(select, outer)
        scope = (*[i for i in self._items(select) if isinstance(i, exp.Table)], *outer)
        kept: list[exp.Expr] = []
        for cond in conjuncts(where.this):
            added = self._conjunct(select, cond, scope)
            kept.extend([cond] if added is None else added)
        select.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)

    def _conjunct(self, outer: exp.Select, cond: exp.Expr,
                  scope: tuple[exp.Table, ...]) -> list[exp.Expr] | None:
        if isinstance(cond, exp.Exists):
            inner = _select_of(cond.this)
            if inner is None or not self._plain(inner):
                return None
            return self._merge(outer, inner, None, scope)
        if isinstance(cond, exp.In) and cond.args.get("query") is not None:
            inner = _select_of(cond.args["query"])
            if inner is None or not self._plain(inner) or len(inner.expressions) != 1:
                return None
            if not isinstance(_unaliased(inner.expressions[0]), exp.Column):
                return None
            return self._merge(outer, inner, cond.this, scope)
        return None

    def _plain(self, inner: exp.Select) -> bool:
        """Select-project-join: no aggregate, grouping, cut, set operation or window."""
        for key in ("group", "having", "limit", "offset", "qualify", "with", "with_"):
            if inner.args.get(key) is not None:
                return False
        if any(True for _ in inner.find_all(exp.AggFunc, exp.Window)):
            return False
        joins = inner.args.get("joins") or []
        for j in joins:
            kind = (j.args.get("kind") or "").upper()
            if j.args.get("side") or j.args.get("using") or kind not in ("", "INNER", "CROSS"):
                return False
        return bool(_aliases(inner)) and all(
            isinstance(i, exp.Table) for i in self._items(inner))

    @staticmethod
    def _items(select: exp.Select) -> list[exp.Expr]:
        from_ = select.args.get("from_") or select.args.get("from")
        items = [from_.this, *from_.expressions] if from_ is not None else []
        return items + [j.this for j in select.args.get("joins") or []]

    def _merge(self, outer: exp.Select, inner: exp.Select, member: exp.Expr | None,
               scope: tuple[exp.Table, ...]) -> list[exp.Expr]:
        """Add ``inner``'s tables to ``outer``; return its conditions (and ``member = y``)."""
        inner = inner.copy()
        self.inline(inner, scope)  # nested subqueries first
        self._qualify(inner, scope)
        renames: dict[str, str] = {}
        for item in self._items(inner):
            assert isinstance(item, exp.Table)
            alias = item.alias_or_name
            fresh = self._fresh(alias)
            if fresh != alias or not item.alias:
                renames[alias.lower()] = fresh
                item.set("alias", exp.TableAlias(this=exp.to_identifier(fresh)))
            self.existential.append(fresh)
        for col in inner.find_all(exp.Column):
            if col.table and col.table.lower() in renames:
                col.set("table", exp.to_identifier(renames[col.table.lower()]))
        from_ = outer.args.get("from_") or outer.args.get("from")
        if from_ is None:
            raise self.reject(outer, "SELECT without FROM", "there is no table to count over")
        for item in self._items(inner):
            from_.append("expressions", item.copy())
        added: list[exp.Expr] = []
        for join in inner.args.get("joins") or []:
            if join.args.get("on") is not None:
                added.append(join.args["on"].copy())
        if inner.args.get("where") is not None:
            added.append(inner.args["where"].this.copy())
        if member is not None:
            value = _unaliased(inner.expressions[0])
            added.append(exp.EQ(this=member.copy(), expression=value.copy()))
        return added

    def _qualify(self, select: exp.Select, outer: tuple[exp.Table, ...]) -> None:
        """Qualify ``select``'s own unqualified columns as SQL scoping resolves them: by the
        tables of its FROM first, then by those of the enclosing scopes (a correlated
        column).  Columns inside its subqueries are left to their own scope; a name no table
        has (a SELECT alias) is left as it is."""
        items = self._items(select)
        if not all(isinstance(i, exp.Table) for i in items):
            return  # a derived table's columns are not known here
        tables = [i for i in items if isinstance(i, exp.Table)]

        def nested(node: exp.Expr) -> bool:
            return node is not select and isinstance(node, (exp.Select, exp.Subquery))

        parts: list[exp.Expr] = [*select.expressions]  # not GROUP BY/ORDER BY: aliases
        parts += [j.args["on"] for j in select.args.get("joins") or [] if j.args.get("on")]
        if select.args.get("where") is not None:
            parts.append(select.args["where"])
        columns = [n for part in parts for n in part.walk(prune=nested)
                   if isinstance(n, exp.Column)]
        for col in columns:
            if col.table or isinstance(col.this, exp.Star):
                continue
            owners = [i for i in tables if self._has(i.name, col.name)]
            if len(owners) > 1:
                if not outer:
                    continue  # the outer query's resolver names both tables
                raise self.reject(col, f"column {col.name}",
                                  "it is ambiguous in the subquery; qualify it")
            owners = owners or [i for i in outer if self._has(i.name, col.name)][:1]
            if owners:
                col.set("table", exp.to_identifier(owners[0].alias_or_name))

    def _has(self, table: str, column: str) -> bool:
        if self.schema is None:
            return False
        rel = self.schema.find(table)
        return rel is not None and rel.index(column) is not None


def inline_semijoins(select: exp.Select, schema: Schema | None, reject: Reject) -> list[str]:
    """Inline the positive subqueries of ``select``'s WHERE clause as semi-joins (in place).

    Returns the aliases of the tables that came from subqueries: their
    variables are existential.  Without a schema, a subquery's unqualified
    columns are read as the outer query would read them (qualify them).
    """
    inliner = _Inliner(schema, reject)
    inliner.start(select)
    inliner.inline(select)
    return inliner.existential
