"""WITH tables beside an outer join: which ones keep the outer-join refinements sound.

The refinements of docs/rules.md, rule outer-joins (monotone values, the larger of
two bounds, substitution in two steps) read the schema by table name (keys,
CHECKs) and need each value to grow when a row is added.  A WITH table is *plain*
when its name is no schema table's (so no lookup by name finds the wrong keys or
CHECKs) and its body is a SELECT of schema tables with inner joins and filters
only: no aggregate, GROUP BY, HAVING, DISTINCT, window, subquery, set operation,
LIMIT or outer join, so adding a row of a schema table only adds rows to it.
sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from sqlglot import exp

from cqsens.frontend.select_items import is_aggregate
from cqsens.ir.schema import Schema

__all__ = ["plain_ctes", "tables_read"]

_NOT_MONOTONE = (exp.Subquery, exp.Exists, exp.Window, exp.Union, exp.Intersect, exp.Except)


def _monotone_body(body: exp.Expr, schema: Schema, names: set[str]) -> bool:
    """A SELECT of schema tables (no other WITH table) with inner joins and filters only."""
    if not isinstance(body, exp.Select):
        return False
    if any(body.args.get(k) is not None for k in ("group", "having", "distinct", "limit",
                                                 "offset", "order", "with")):
        return False
    if any(True for _ in body.find_all(*_NOT_MONOTONE)) or any(
            is_aggregate(a) for a in body.find_all(exp.AggFunc)):
        return False
    from_ = body.args.get("from_") or body.args.get("from")
    if not isinstance(from_, exp.From):
        return False
    joins = list(body.args.get("joins") or [])
    if any(j.args.get("side") or j.args.get("using") or j.args.get("method")
           or (j.args.get("kind") or "").upper() not in ("", "INNER", "CROSS") for j in joins):
        return False
    items = [from_.this, *from_.expressions, *(j.this for j in joins)]
    return all(isinstance(t, exp.Table) and t.name.lower() not in names
               and schema.find(t.name) is not None for t in items)


def plain_ctes(statement: exp.Expr, schema: Schema | None) -> dict[str, tuple[str, ...]] | None:
    """Each WITH table of ``statement`` (lower-case name) with the schema tables its FROM
    and joins read (a table joined twice is listed twice), or None when one is not plain
    (see the module's docstring); ``{}`` without WITH.

    >>> import sqlglot
    >>> from cqsens.frontend.ddl import schema_from_ddl
    >>> s = schema_from_ddl("CREATE TABLE r (k INTEGER PRIMARY KEY); CREATE TABLE s (r INTEGER);")
    >>> q = sqlglot.parse_one("WITH w AS (SELECT s.r FROM s WHERE s.r > 1) "
    ...                       "SELECT COUNT(*) FROM r LEFT JOIN w ON w.r = r.k")
    >>> plain_ctes(q, s)
    {'w': ('s',)}
    >>> plain_ctes(sqlglot.parse_one("WITH s AS (SELECT r.k FROM r) SELECT 1 FROM s"), s) is None
    True
    """
    ctes = list(statement.find_all(exp.CTE))
    if not ctes:
        return {}
    if schema is None:
        return None
    names = {c.alias_or_name.lower() for c in ctes}
    out: dict[str, tuple[str, ...]] = {}
    for cte in ctes:
        name = cte.alias_or_name.lower()
        if schema.find(name) is not None or not _monotone_body(cte.this, schema, names):
            return None
        out[name] = tuple(t.name.lower() for t in cte.this.find_all(exp.Table))
    return out


def tables_read(table: exp.Table, ctes: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The schema tables that ``table`` (a schema table or a plain WITH table) reads: one
    for a schema table or a WITH table over one table (one row of it per row)."""
    name = table.name.lower()
    return ctes.get(name, (name,))
