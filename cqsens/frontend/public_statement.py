"""A statement that reads only public tables is a constant (docs/rules.md, rule public-statement).

When every table a statement reads (its FROM and joins, its subqueries, CTEs,
derived tables and set-operation branches) is public (``--public``), both
neighbouring databases hold the same rows of every table it reads, so the
statement gives the same answer in both, whatever SQL it computes: plain
columns, HAVING, window functions, ORDER BY/LIMIT, scalar subqueries, NOT
EXISTS.  :func:`public_statement` recognises such a statement on the sqlglot
tree, before any translation into a conjunctive query, so any SQL is accepted.

It errs on the side of privacy: a table reference counts as a CTE only when a
``WITH`` in scope defines that (unqualified) name, a table-valued function or
any other source it cannot name makes the statement not public, and so does a
statement that is not a query.  sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from sqlglot import exp

from cqsens.errors import CqsensError
from cqsens.frontend.column_lists import inline_column_lists
from cqsens.frontend.select_items import is_aggregate
from cqsens.frontend.stars import cte_for
from cqsens.frontend.statements import parse_statement

__all__ = ["OutputColumn", "PublicStatement", "public_statement", "statement_for"]

_KINDS: dict[type[exp.Expr], str] = {
    exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max", exp.Median: "median",
}


@dataclass(frozen=True, slots=True)
class OutputColumn:
    """One item of the statement's SELECT list: its label and what it computes.

    ``kind`` is the aggregate's kind (``count``, ``count_distinct``, ``sum``, ``avg``,
    ``min``, ``max``, ``median``) for an item that is one aggregate call,
    ``expression`` for an item that combines aggregates, ``value`` otherwise.
    """

    label: str
    kind: str


@dataclass(frozen=True, slots=True)
class PublicStatement:
    """A statement that reads only public tables.

    ``tables`` are the tables it reads, as it spells them (without alias), each
    once, in the order they first appear; ``from_sql`` lists them as a FROM
    clause (a cross join); ``columns`` are the items of its SELECT list (the
    first branch's for a set operation).
    """

    tables: tuple[str, ...]
    from_sql: str
    columns: tuple[OutputColumn, ...]

    @property
    def aggregates(self) -> tuple[OutputColumn, ...]:
        """The output columns that compute an aggregate."""
        return tuple(c for c in self.columns if c.kind != "value")


def public_statement(sql: str, *, dialect: str | None, public: Set[str],
                     source: str) -> PublicStatement | None:
    """The statement ``sql`` when every table it reads is public, else None.

    Parameters
    ----------
    sql : str
        One SQL statement.
    dialect : str or None
        Its sqlglot dialect.
    public : set of str
        The public tables (compared case-insensitively, by table name without
        its schema, as :mod:`cqsens.frontend.public_subqueries` does).
    source : str
        File name (unused when the text does not parse: the caller's own parse
        reports the error).

    Returns
    -------
    PublicStatement or None
        None when a table is private, a source is not a named table, the text is
        not one query, or it reads no table at all.

    Examples
    --------
    >>> s = public_statement("SELECT n_name FROM nation ORDER BY 1", dialect=None,
    ...                      public={"nation"}, source="<sql>")
    >>> s.tables, s.columns[0].kind
    (('nation',), 'value')
    >>> public_statement("SELECT n_name FROM nation WHERE n_nationkey IN "
    ...                  "(SELECT c_nationkey FROM customer)", dialect=None,
    ...                  public={"nation"}, source="<sql>") is None
    True
    """
    names = {p.strip().lower() for p in public if p.strip()}
    if not names:
        return None
    try:
        tree = parse_statement(sql, dialect, source)
    except CqsensError:
        return None
    if not isinstance(tree, exp.Query):
        return None
    read: dict[str, exp.Table] = {}
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            return None  # a table-valued function or another source without a name
        if cte_for(table) is not None:
            continue
        if table.name.lower() not in names:
            return None
        bare = exp.Table(this=table.this.copy(), db=_copy(table.args.get("db")),
                         catalog=_copy(table.args.get("catalog")))
        read.setdefault(bare.sql(dialect=dialect).lower(), bare)
    if not read:
        return None
    tables = tuple(t.sql(dialect=dialect) for t in read.values())
    return PublicStatement(tables, ", ".join(tables), _columns(tree, dialect))


def _copy(node: object) -> exp.Expr | None:
    return node.copy() if isinstance(node, exp.Expr) else None


def _columns(tree: exp.Query, dialect: str | None) -> tuple[OutputColumn, ...]:
    """The items of the statement's SELECT list (the leftmost branch of a set operation)."""
    select: exp.Expr = tree
    while isinstance(select, (exp.SetOperation, exp.Subquery)):
        select = select.this if isinstance(select, exp.Subquery) else select.left
    if not isinstance(select, exp.Select):
        return ()
    return tuple(OutputColumn(item.alias or (item.name if isinstance(item, exp.Column)
                                             else item.sql(dialect=dialect)),
                              _kind(item.unalias()))
                 for item in select.expressions)


def _kind(item: exp.Expr) -> str:
    """The aggregate kind of one SELECT item (``value`` when it aggregates nothing)."""
    if isinstance(item, exp.Window):
        return "value"  # computed over the result rows
    core = item.this if isinstance(item, exp.Filter) else item
    if isinstance(core, exp.Count):
        return "count_distinct" if isinstance(core.this, exp.Distinct) else "count"
    if type(core) in _KINDS:
        return _KINDS[type(core)]
    if is_aggregate(core) or any(is_aggregate(n) for n in _outer_nodes(item)):
        return "expression"
    return "value"


def _outer_nodes(item: exp.Expr) -> list[exp.Expr]:
    """The nodes of ``item`` outside its subqueries and window specifications."""
    out: list[exp.Expr] = []
    stack = [item]
    while stack:
        node = stack.pop()
        out.append(node)
        for child in node.iter_expressions():
            if not isinstance(child, (exp.Query, exp.Subquery, exp.Window)):
                stack.append(child)
    return out


def statement_for(sql: str, *, dialect: str | None, target: str, source: str) -> str:
    """The statement ``sql`` to run on a ``target`` database (``sqlite``, ``postgres``): as
    written when it is in that dialect or in sqlglot's default one, else transpiled."""
    if dialect is None or dialect == target:
        return sql.strip().rstrip(";").rstrip()
    return inline_column_lists(parse_statement(sql, dialect, source)).sql(dialect=target)
