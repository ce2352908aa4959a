"""``SELECT *`` in a derived table, a CTE or a set-operation branch, expanded to its columns.

The passes that inline derived tables and split set operations read a SELECT
list column by column, so a star there is replaced first by the columns it
stands for, in SQL's order: the FROM items left to right, each with its columns
in the schema's order (a table), in its own SELECT list's order (a derived
table or a CTE, expanded first).  ``t.*`` takes the columns of ``t`` alone.
Each column is qualified by its item's alias, so it reads the same row.

A star is left alone elsewhere (``EXISTS (SELECT * …)`` reads no column).  It is
refused, by name, when it cannot be expanded exactly: a table the schema does not
list (or no schema), a FROM item that is not a table or a derived table, a join
with ``USING`` or ``NATURAL`` (which merges columns), or two columns of the same
name in one derived table, CTE or branch (the outer query could not tell them
apart).  sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from cqsens.ir.schema import Schema

__all__ = ["cte_for", "expand_stars", "has_listed_star"]

Reject = Callable[[exp.Expr, str, str], Exception]


def cte_for(table: exp.Table) -> exp.CTE | None:
    """The CTE that ``table`` names in its scope, or None for a base table.

    A CTE is in scope in the query that defines it and, without ``RECURSIVE``, in
    the bodies of the CTEs after it; with ``RECURSIVE``, in every CTE body of its WITH.
    A qualified name (``main.t``) is never a CTE.
    """
    if table.args.get("db") is not None or table.args.get("catalog") is not None:
        return None
    name = table.name.lower()
    path: list[exp.Expr] = [table]
    node = table.parent
    while node is not None:
        with_ = node.args.get("with_")
        if isinstance(with_, exp.With):
            ctes = list(with_.expressions)
            visible = ctes
            if path[-1] is with_:  # the table is inside the body of one of these CTEs
                inside = path[-2] if len(path) >= 2 else None
                index = next((i for i, c in enumerate(ctes) if c is inside), len(ctes))
                visible = ctes if with_.args.get("recursive") else ctes[:index]
            for cte in visible:
                if isinstance(cte, exp.CTE) and cte.alias_or_name.lower() == name:
                    return cte
        path.append(node)
        node = node.parent
    return None


def expand_stars(tree: exp.Expr, reject: Reject, schema: Schema | None) -> exp.Expr:
    """``tree`` with the stars of its derived tables, CTEs and set-operation branches
    expanded (in place; returned).

    Raises
    ------
    Exception
        Built by ``reject`` for a star that cannot be expanded exactly (see the module).
    """
    _Expander(reject, schema).run(tree)
    return tree


def has_listed_star(tree: exp.Expr) -> bool:
    """Whether a derived table, a CTE or a set-operation branch of ``tree`` selects ``*``."""
    return any(_listed(s) and _has_star(s) for s in tree.find_all(exp.Select))


def _has_star(select: exp.Select) -> bool:
    return any(_is_star(e) for e in select.expressions)


def _is_star(e: exp.Expr) -> bool:
    return isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))


def _listed(select: exp.Select) -> bool:
    """Whether the SELECT list of ``select`` is read column by column by another pass: a
    derived table's, a CTE's or a set-operation branch's."""
    node: exp.Expr = select
    while isinstance(node.parent, exp.Subquery) and node.parent.parent is not None \
            and isinstance(node.parent.parent, exp.SetOperation):
        node = node.parent.parent
    parent = node.parent
    if isinstance(parent, (exp.CTE, exp.SetOperation)):
        return True
    return isinstance(parent, exp.Subquery) and isinstance(parent.parent, (exp.From, exp.Join))


class _Expander:
    def __init__(self, reject: Reject, schema: Schema | None) -> None:
        self.reject = reject
        self.schema = schema
        self.done: set[int] = set()

    def run(self, tree: exp.Expr) -> None:
        for select in list(tree.find_all(exp.Select)):
            if _listed(select) and _has_star(select):
                self.expand(select)

    def expand(self, select: exp.Select) -> None:
        if id(select) in self.done:
            return
        self.done.add(id(select))
        sources = self._sources(select)
        items: list[exp.Expr] = []
        for e in select.expressions:
            if not _is_star(e):
                items.append(e)
                continue
            qualifier = e.table.lower() if isinstance(e, exp.Column) else ""
            chosen = [s for s in sources if not qualifier or s[0].lower() == qualifier]
            if not chosen:
                raise self.reject(e, f"SELECT {e.sql()}", f"no FROM item is called {e.table}")
            for alias, columns in chosen:
                items.extend(exp.column(exp.to_identifier(c), table=exp.to_identifier(alias))
                             for c in columns)
        names = [i.alias_or_name.lower() for i in items]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise self.reject(select, "SELECT * with two columns of one name",
                              f"the columns {', '.join(twice)} come twice: list the columns "
                              "it returns")
        select.set("expressions", items)

    def _sources(self, select: exp.Select) -> list[tuple[str, list[str]]]:
        """Each FROM item's alias and output columns, in order."""
        from_ = select.args.get("from_")
        items = ([from_.this, *from_.expressions] if isinstance(from_, exp.From) else [])
        for join in select.args.get("joins") or []:
            if join.args.get("using") or (join.args.get("method") or "").upper() == "NATURAL":
                raise self.reject(join, "SELECT * over a join with USING or NATURAL",
                                  "it merges columns: list the columns it returns")
            items.append(join.this)
        return [(item.alias_or_name, self._columns(item)) for item in items]

    def _columns(self, item: exp.Expr) -> list[str]:
        if isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
            cte = cte_for(item)
            if cte is not None:
                return self._outputs(cte.this, cte)
            relation = self.schema.find(item.name) if self.schema is not None else None
            if relation is None:
                why = ("the schema does not list it" if self.schema is not None
                       else "no schema is given (--schema)")
                raise self.reject(item, f"SELECT * over table {item.name}",
                                  f"{why}: list the columns it returns")
            return list(relation.columns)
        if isinstance(item, exp.Subquery):
            return self._outputs(item.this, item)
        raise self.reject(item, f"SELECT * over {item.key.upper()}",
                          "list the columns it returns")

    def _outputs(self, query: exp.Expr, holder: exp.Expr) -> list[str]:
        """The column names of ``query`` (a derived table's or a CTE's body), its own
        column list first (``AS t(a, b)``)."""
        alias = holder.args.get("alias")
        renamed = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
        first: exp.Expr = query
        while isinstance(first, (exp.SetOperation, exp.Subquery)):
            first = first.this if isinstance(first, exp.Subquery) else first.left
        if not isinstance(first, exp.Select):
            raise self.reject(query, f"SELECT * over {query.key.upper()}",
                              "list the columns it returns")
        if _has_star(first):
            self.expand(first)
        names = [e.alias_or_name for e in first.expressions]
        return renamed + names[len(renamed):]
