"""Person-local groups: ``x [NOT] IN (SELECT g FROM … GROUP BY g HAVING …)``.

With a privacy unit, TPC-H q18's ``o_orderkey IN (SELECT l_orderkey FROM lineitem
GROUP BY l_orderkey HAVING SUM(l_quantity) > 300)`` is uncorrelated, yet whether
an order passes depends only on the lines of that order: the subquery's group
``g = v`` reads only rows that name the order ``v``, and they, like the outer
order, belong to the customer who owns ``v``.  The condition is a predicate of
the outer row that only its own person can change, as in
:mod:`cqsens.frontend.person_local` (docs/rules.md, rule person-local).

:func:`person_local_membership` accepts the conjunct when

* it is ``x IN (subquery)`` or ``x NOT IN (subquery)``, ``x`` a column of the
  outer query's tables, and the subquery selects one column ``g``;
* ``x`` and ``g`` name the same row of an owned table (``owner_key``, so both
  are NOT NULL and ``NOT IN`` never meets a NULL);
* the subquery is uncorrelated, reads only tables (inner joins), has no nested
  subquery, window, ``LIMIT``/``OFFSET`` or grouping set, and, when it
  aggregates or has ``HAVING``, groups by ``g`` itself;
* every table it reads is public or has a column tied to ``g`` by top-level
  equalities (WHERE, ON) that names the same owned row (so every row of the
  group ``g = v`` names the row ``v``).
"""

from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import dataclass

from sqlglot import exp

from cqsens.frontend.sql_expr import conjuncts
from cqsens.ir.schema import Schema
from cqsens.ir.union_find import UnionFind

__all__ = ["Tie", "person_key_tie", "person_local_membership", "table_of"]

_Owner = Callable[[str, str], tuple[str, str] | None]

Ref = tuple[str, str]
"""A column of the subquery: ``(alias, column)`` in lower case."""


def _strip(node: exp.Expr) -> tuple[exp.Expr, bool]:
    """``node`` without ``NOT`` and parentheses, and whether it was negated."""
    negated = False
    while isinstance(node, (exp.Not, exp.Paren)):
        negated ^= isinstance(node, exp.Not)
        node = node.this
    return node, negated


def _subquery(node: exp.Expr | None) -> exp.Select | None:
    while isinstance(node, (exp.Subquery, exp.Paren)):
        node = node.this
    return node if isinstance(node, exp.Select) else None


def _items(select: exp.Select, left_joins: bool = False) -> list[exp.Expr] | None:
    """The FROM and JOIN items of ``select``; None when a join is not a plain inner one
    (or, with ``left_joins``, a LEFT JOIN)."""
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None:
        return None
    items = [from_.this, *from_.expressions]
    for join in select.args.get("joins") or []:
        kind = (join.args.get("kind") or "").upper()
        side = (join.args.get("side") or "").upper()
        if side not in ("", "LEFT") or (side and not left_joins) or join.args.get("using") \
                or kind not in ("", "INNER", "CROSS", "OUTER") or (kind == "OUTER" and not side):
            return None
        items.append(join.this)
    return items


class _Scope:
    """The subquery's tables, by alias, and how its columns resolve."""

    def __init__(self, own: dict[str, str], schema: Schema) -> None:
        self.own = own
        self.schema = schema

    def ref(self, column: exp.Column) -> Ref | None:
        """The subquery's table column ``column`` names (None: another scope's, or unknown)."""
        name = column.name.lower()
        if column.table:
            alias = column.table.lower()
            relation = self.schema.find(self.own[alias]) if alias in self.own else None
            return (alias, name) if relation is not None and relation.index(name) is not None \
                else None
        found = [a for a, t in self.own.items()
                 if (rel := self.schema.find(t)) is not None and rel.index(name) is not None]
        return (found[0], name) if len(found) == 1 else None


def _classes(pairs: list[tuple[Ref, Ref]]) -> dict[Ref, Ref]:
    """Union-find over the column equalities: each column → its class representative."""
    uf: UnionFind[Ref] = UnionFind()
    for a, b in pairs:
        into = uf.find(b)
        uf.link(uf.find(a), into)
    return {r: uf.find(r) for r in list(uf.parent)}


def _plain_group_by(sub: exp.Select, scope: _Scope, grouped: Ref) -> bool:
    """Whether the subquery groups by ``grouped`` (or needs no grouping at all)."""
    group = sub.args.get("group")
    if group is None:
        return sub.args.get("having") is None and not any(
            True for _ in sub.find_all(exp.AggFunc))
    if any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets", "totals")):
        return False
    return any(isinstance(g, exp.Column) and scope.ref(g) == grouped
               for g in group.expressions)


def person_local_membership(cond: exp.Expr, outer: dict[str, str],
                            owner_key: _Owner, public: Set[str],
                            schema: Schema) -> bool:
    """Whether ``cond`` is ``x [NOT] IN (SELECT g …)`` whose groups are person-local.

    Parameters
    ----------
    cond : sqlglot expression
        A top-level WHERE conjunct of the outer query.
    outer : dict of str to str
        The outer query's tables, alias (lower case) → table name.
    owner_key : callable
        ``(table, column)`` → the owned row the column names
        (:func:`cqsens.engine.person.owner_key`).
    public : set of str
        The public tables, in lower case.
    schema : Schema
        The tables' columns.

    Returns
    -------
    bool
        True when only the persons of the outer row's owned row ``x`` can change
        ``cond`` (docs/rules.md, rule person-local).
    """
    node, _ = _strip(cond)
    if not isinstance(node, exp.In):
        return False
    sub = _subquery(node.args.get("query"))
    member = node.this
    if sub is None or not isinstance(member, exp.Column) or len(sub.expressions) != 1:
        return False
    outer_table = table_of(member, outer, schema)
    key = owner_key(outer_table, member.name) if outer_table is not None else None
    if key is None:
        return False
    scope = _local_scope(sub, schema)
    selected = sub.expressions[0]
    selected = selected.this if isinstance(selected, exp.Alias) else selected
    if scope is None or not isinstance(selected, exp.Column):
        return False
    grouped = scope.ref(selected)
    if grouped is None or owner_key(scope.own[grouped[0]], grouped[1]) != key:
        return False
    if not _plain_group_by(sub, scope, grouped):
        return False
    return _anchored(sub, scope, grouped, key, owner_key, public)


def table_of(column: exp.Column, scope: dict[str, str], schema: Schema) -> str | None:
    """The table (by name) a column of ``scope`` (alias → table) belongs to."""
    if column.table:
        return scope.get(column.table.lower())
    owners = [t for t in scope.values()
              if (rel := schema.find(t)) is not None and rel.index(column.name) is not None]
    return owners[0] if len(set(owners)) == 1 else None


def _local_scope(sub: exp.Select, schema: Schema, left_joins: bool = False) -> _Scope | None:
    """The subquery's scope when it is uncorrelated and cuts no rows across groups."""
    items = _items(sub, left_joins)
    if not items or not all(isinstance(i, exp.Table) and schema.find(i.name) is not None
                            for i in items):
        return None
    for key in ("limit", "offset", "qualify", "with", "with_"):
        if sub.args.get(key) is not None:
            return None
    if any(n is not sub for n in sub.find_all(exp.Select)) or \
            any(True for _ in sub.find_all(exp.Window)):
        return None
    own = {i.alias_or_name.lower(): i.name for i in items if isinstance(i, exp.Table)}
    if len(own) != len(items):
        return None  # one alias twice
    scope = _Scope(own, schema)
    if any(scope.ref(c) is None for c in sub.find_all(exp.Column)):
        return None  # correlated, or a name SQL resolves elsewhere (a SELECT alias)
    return scope


def _anchored(sub: exp.Select, scope: _Scope, grouped: Ref, key: tuple[str, str],
              owner_key: _Owner, public: Set[str]) -> bool:
    """Whether every table of ``sub`` is public or tied to ``grouped`` on the owned row."""
    conds: list[exp.Expr] = []
    where = sub.args.get("where")
    if where is not None:
        conds.extend(conjuncts(where.this))
    for join in sub.args.get("joins") or []:
        if join.args.get("on") is not None:
            conds.extend(conjuncts(join.args["on"]))
    classes = _classes([(grouped, grouped), *_equalities(conds, scope)])
    anchor = classes[grouped]
    tied = {alias for (alias, column), root in classes.items()
            if root == anchor and owner_key(scope.own[alias], column) == key}
    return all(alias in tied or table.lower() in public for alias, table in scope.own.items())


@dataclass(frozen=True)
class Tie:
    """How a grouping SELECT ties its groups to persons: the columns that are the group
    key or columns of the person's own row (each the same in the whole group)."""

    scope: _Scope
    group_columns: frozenset[Ref]

    def owns(self, column: exp.Column) -> bool:
        """Whether ``column`` is one of the group's key columns."""
        return self.scope.ref(column) in self.group_columns


def person_key_tie(sub: exp.Select, schema: Schema, owner_key: _Owner, public: Set[str],
                   person: tuple[str, str], *, outer_joins: bool = False) -> Tie | str:
    """Whether every group of ``sub`` holds the rows of one person only.

    ``sub`` must group by a column that names the person (``owner_key`` gives
    ``person``), any other group column must be a column of the same table row (whose
    key that column is), and every table must be public or tied to the group key by
    equalities that every row of the group satisfies: WHERE and inner ``ON``
    conjuncts, and for the right side of a LEFT JOIN its own ``ON`` conjuncts.

    Returns
    -------
    Tie or str
        The tie, or why there is none.
    """
    scope = _local_scope(sub, schema, outer_joins)
    if scope is None:
        return ("it reads something other than tables joined by inner or LEFT joins, or "
                "has a nested subquery, a window, LIMIT or a column of another scope")
    group = sub.args.get("group")
    if group is None or any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets")):
        return "it does not group by plain columns"
    refs = [scope.ref(g) if isinstance(g, exp.Column) else None for g in group.expressions]
    keys = [r for r in refs if r is not None and owner_key(scope.own[r[0]], r[1]) == person]
    if not keys or None in refs:
        return f"it does not group by a column that names the person ({'.'.join(person)})"
    g = keys[0]
    from_ = sub.args.get("from_") or sub.args.get("from")
    first = from_.this.alias_or_name.lower() if from_ is not None else ""
    if sub.args.get("joins") and any(j.args.get("side") for j in sub.args["joins"]) \
            and g[0] != first:
        return "its group key is on the side of a LEFT JOIN that may be NULL"
    table = scope.own[g[0]]
    own_key = owner_key(table, g[1]) == (table.lower(), g[1])
    if any(r != g and (r is None or r[0] != g[0] or not own_key) for r in refs):
        return "it groups by a column that is not of the person's own row: several groups " \
               "per person"
    tied = _tied(sub, scope, g, person, owner_key)
    loose = [a for a, t in scope.own.items() if a not in tied and t.lower() not in public]
    if loose:
        return f"table {loose[0]} is not tied to the group key by an equality"
    return Tie(scope, frozenset(r for r in refs if r is not None))


def _tied(sub: exp.Select, scope: _Scope, g: Ref, person: tuple[str, str],
          owner_key: _Owner) -> set[str]:
    """The aliases whose every row in a group belongs to the group's person only.

    The group key's table is; then a table with a column equal to a column of a tied
    table, both naming the same owned row (``owner_key``: the row's only way to a
    person), is too.  Equalities count when every row of the group satisfies them:
    WHERE and inner ``ON`` conjuncts, and a LEFT JOIN's ``ON`` for its right side."""
    filters: list[exp.Expr] = []
    where = sub.args.get("where")
    if where is not None:
        filters.extend(conjuncts(where.this))
    left: dict[str, list[exp.Expr]] = {}
    for join in sub.args.get("joins") or []:
        on = conjuncts(join.args["on"]) if join.args.get("on") is not None else []
        if join.args.get("side"):
            left[join.this.alias_or_name.lower()] = on
        else:
            filters.extend(on)
    # (mine, other): a row of mine's table in a group satisfies mine = other
    steps = [(m, o) for a, b in _equalities(filters, scope) for m, o in ((a, b), (b, a))
             if m[0] not in left]  # a LEFT JOIN's right side is tied by its own ON only
    steps += [(m, o) for right, on in left.items() for a, b in _equalities(on, scope)
              for m, o in ((a, b), (b, a)) if m[0] == right]
    tied = {g[0]}
    changed = True
    while changed:
        changed = False
        for mine, other in steps:
            if mine[0] in tied or other[0] not in tied:
                continue
            named = owner_key(scope.own[mine[0]], mine[1])
            if named is not None and named == owner_key(scope.own[other[0]], other[1]):
                tied.add(mine[0])
                changed = True
    return tied


def _equalities(conds: list[exp.Expr], scope: _Scope) -> list[tuple[Ref, Ref]]:
    out: list[tuple[Ref, Ref]] = []
    for cond in conds:
        if isinstance(cond, exp.EQ) and isinstance(cond.this, exp.Column) \
                and isinstance(cond.expression, exp.Column):
            left, right = scope.ref(cond.this), scope.ref(cond.expression)
            if left is not None and right is not None:
                out.append((left, right))
    return out
