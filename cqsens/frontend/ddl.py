"""Schemas from SQL DDL: column order, key dependencies and value bounds.

``CREATE TABLE`` statements (any sqlglot dialect) give each relation its
columns in order.  A single-column ``PRIMARY KEY`` or ``UNIQUE`` gives a
functional dependency from that column to every other column; ``CHECK (c
BETWEEN a AND b)`` or ``CHECK (c >= a AND c <= b)`` gives value bounds (used by
SUM/MEDIAN).  Composite keys give no single-column dependency and are kept
only for information.
"""

from __future__ import annotations

import math
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError

from cqsens.errors import ParseError, SchemaError, read_text
from cqsens.ir.schema import Relation, Schema

__all__ = ["column_bounds", "load_schema", "schema_from_ddl"]


def _number(node: exp.Expression) -> float | None:
    if isinstance(node, exp.Neg):
        inner = _number(node.this)
        return None if inner is None else -inner
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return float(node.this)
        except ValueError:
            return None
    if isinstance(node, exp.Paren):
        return _number(node.this)
    return None


def column_bounds(condition: exp.Expression) -> dict[str, tuple[float, float]]:
    """Value bounds a conjunction of comparisons puts on columns.

    Reads ``c BETWEEN a AND b``, ``c >= a``, ``c > a`` (integer-agnostic: kept
    closed, which is sound), ``a <= c`` and so on, joined by AND.  Other parts are
    ignored.  Returns column name (lower case, unqualified) → (low, high).
    """
    out: dict[str, list[float]] = {}

    def put(col: exp.Expression, low: float | None, high: float | None) -> None:
        if not isinstance(col, exp.Column):
            return
        entry = out.setdefault(col.name.lower(), [-math.inf, math.inf])
        if low is not None:
            entry[0] = max(entry[0], low)
        if high is not None:
            entry[1] = min(entry[1], high)

    def visit(node: exp.Expression) -> None:
        if isinstance(node, exp.Paren):
            visit(node.this)
        elif isinstance(node, exp.And):
            visit(node.this)
            visit(node.expression)
        elif isinstance(node, exp.Between):
            put(node.this, _number(node.args["low"]), _number(node.args["high"]))
        elif isinstance(node, (exp.GTE, exp.GT, exp.LTE, exp.LT, exp.EQ)):
            left, right = node.this, node.expression
            lnum, rnum = _number(left), _number(right)
            if isinstance(node, exp.EQ):
                if rnum is not None:
                    put(left, rnum, rnum)
                elif lnum is not None:
                    put(right, lnum, lnum)
                return
            lower_bound = isinstance(node, (exp.GTE, exp.GT))
            if rnum is not None:  # col OP number
                put(left, rnum if lower_bound else None, None if lower_bound else rnum)
            elif lnum is not None:  # number OP col: flip
                put(right, None if lower_bound else lnum, lnum if lower_bound else None)

    visit(condition)
    return {k: (v[0], v[1]) for k, v in out.items()}


def _relation_from_create(create: exp.Create) -> Relation:
    schema_node = create.this
    table = schema_node.this if isinstance(schema_node, exp.Schema) else schema_node
    name = table.name
    columns: list[str] = []
    types: list[str] = []
    keys: list[int] = []
    composite: list[tuple[int, ...]] = []
    checks: list[exp.Expression] = []
    items = schema_node.expressions if isinstance(schema_node, exp.Schema) else []
    for item in items:
        if isinstance(item, exp.ColumnDef):
            columns.append(item.name)
            kind = item.args.get("kind")
            types.append(kind.sql() if kind is not None else "")
            for constraint in item.args.get("constraints") or []:
                ckind = constraint.args.get("kind")
                if isinstance(ckind, (exp.PrimaryKeyColumnConstraint, exp.UniqueColumnConstraint)):
                    keys.append(len(columns) - 1)
                elif isinstance(ckind, exp.CheckColumnConstraint):
                    checks.append(ckind.this)
    lowered = [c.lower() for c in columns]
    for item in items:
        names: list[str] | None = None
        if isinstance(item, exp.PrimaryKey):
            names = [e.name for e in item.expressions]
        elif isinstance(item, exp.UniqueColumnConstraint) and isinstance(item.this, exp.Schema):
            names = [e.name for e in item.this.expressions]
        elif isinstance(item, exp.CheckColumnConstraint):
            checks.append(item.this)
        elif isinstance(item, exp.Constraint):
            for sub in item.expressions:
                if isinstance(sub, exp.PrimaryKey):
                    names = [e.name for e in sub.expressions]
        if names is None:
            continue
        positions = []
        for n in names:
            if n.lower() not in lowered:
                raise SchemaError(
                    f"key of table {name} names column {n!r}, which the table does not have",
                    construct=f"CREATE TABLE {name}",
                )
            positions.append(lowered.index(n.lower()))
        if len(positions) == 1:
            keys.append(positions[0])
        else:
            composite.append(tuple(positions))
    bounds: list[tuple[int, float, float]] = []
    merged: dict[int, tuple[float, float]] = {}
    for check in checks:
        for col, (low, high) in column_bounds(check).items():
            if col in lowered:
                i = lowered.index(col)
                old = merged.get(i, (-math.inf, math.inf))
                merged[i] = (max(old[0], low), min(old[1], high))
    bounds = [(i, lo, hi) for i, (lo, hi) in sorted(merged.items())]
    return Relation(
        name,
        tuple(columns),
        tuple(types),
        tuple(sorted(set(keys))),
        tuple(composite),
        tuple(bounds),
    )


def schema_from_ddl(ddl: str, *, dialect: str | None = None, source: str = "<schema>") -> Schema:
    """Read ``CREATE TABLE`` statements into a :class:`Schema`.

    Parameters
    ----------
    ddl : str
        SQL DDL text; statements other than CREATE TABLE are ignored.
    dialect : str, optional
        sqlglot dialect name.
    source : str
        File name for error messages.

    Raises
    ------
    ParseError
        The DDL does not parse.
    SchemaError
        A table is declared twice, or a key names a missing column.

    Examples
    --------
    >>> s = schema_from_ddl("CREATE TABLE R (a INT PRIMARY KEY, b INT, c INT)")
    >>> [str(d) for d in s.key_dependencies()]
    ['R[1->2]', 'R[1->3]']
    """
    try:
        statements = sqlglot.parse(ddl, read=dialect)
    except (SqlglotParseError, TokenError) as exc:
        errors = getattr(exc, "errors", None) or [{}]
        raise ParseError(
            f"the schema does not parse: {str(exc).splitlines()[0]}",
            source=source,
            line=errors[0].get("line"),
            column=errors[0].get("col"),
            construct="DDL",
        ) from exc
    relations: list[Relation] = []
    seen: set[str] = set()
    for statement in statements:
        if not isinstance(statement, exp.Create):
            continue
        if str(statement.args.get("kind")).upper() != "TABLE":
            continue
        try:
            relation = _relation_from_create(statement)
        except SchemaError as err:
            raise err.with_source(source) from None
        if relation.name.lower() in seen:
            raise SchemaError(
                f"table {relation.name} is declared twice",
                source=source,
                construct=f"CREATE TABLE {relation.name}",
            )
        seen.add(relation.name.lower())
        relations.append(relation)
    if not relations:
        raise SchemaError("the schema declares no table (expected CREATE TABLE statements)",
                          source=source, construct="DDL")
    return Schema(tuple(relations), source)


def load_schema(
    schema: str | Path | Schema | None, *, dialect: str | None = None
) -> Schema | None:
    """Accept DDL text, a path to a DDL file, or a Schema (the API's ``schema=``)."""
    if schema is None or isinstance(schema, Schema):
        return schema
    text, source = str(schema), "<schema>"
    if isinstance(schema, Path) or (
        "\n" not in text and "(" not in text and Path(text).exists()
    ):
        path = Path(schema)
        text, source = read_text(path, error=SchemaError, what="schema file"), str(path)
    elif "(" not in text:
        raise SchemaError("schema file not found", source=text, construct="--schema")
    return schema_from_ddl(text, dialect=dialect, source=source)




def relation_from_catalogue(
    name: str,
    columns: tuple[str, ...],
    types: tuple[str | None, ...],
    checks: list[str],
    *,
    keys: tuple[int, ...] = (),
    composite: tuple[tuple[int, ...], ...] = (),
    dialect: str | None = None,
) -> Relation:
    """A relation from the SQL text a live database's catalogue gives.

    The catalogue spells column types and ``CHECK`` constraints as SQL text;
    this reads them as :func:`schema_from_ddl` reads ``CREATE TABLE``.  Casts
    around literals and columns are dropped first (``0::numeric`` → ``0``,
    ``'-5'::integer`` → ``-5``) so the bounds read as numbers.

    Parameters
    ----------
    name : str
        The table's name.
    columns : tuple of str
        Its columns, in order.
    types : tuple of str or None
        The type of each column as the database writes it (None: no type).
    checks : list of str
        The text of each ``CHECK`` constraint; one that does not parse gives no
        bound (bounds are information only).
    keys, composite : tuple
        Single-column key positions and composite keys, copied as they are.
    dialect : str, optional
        sqlglot dialect of the texts.

    Returns
    -------
    Relation
        Types in sqlglot's spelling (the database's when sqlglot cannot read
        it) and the value bounds of the checks, merged per column.

    Examples
    --------
    >>> r = relation_from_catalogue("t", ("a", "b"), ("INTEGER", None),
    ...                             ["b >= 0::numeric AND b <= 9"], dialect="postgres")
    >>> r.types, r.bounds
    (('INT', ''), ((1, 0.0, 9.0),))
    """

    def type_sql(text: str | None) -> str:
        if text is None:
            return ""
        try:
            return exp.DataType.build(text, dialect=dialect).sql()
        except Exception:  # noqa: BLE001 - keep the database's spelling
            return text

    def strip(n: exp.Expression) -> exp.Expression:
        while isinstance(n, (exp.Cast, exp.Paren)):
            n = n.this
        if isinstance(n, exp.Literal) and n.is_string:
            try:
                float(n.this)
            except ValueError:
                return n
            return exp.Literal.number(n.this)
        return n

    def uncast(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Cast):
            inner = strip(n)
            if isinstance(inner, (exp.Literal, exp.Neg, exp.Column)):
                return inner.copy()
        return n

    lowered = [c.lower() for c in columns]
    merged: dict[int, tuple[float, float]] = {}
    for text in checks:
        try:
            tree = sqlglot.parse_one(text, read=dialect)
        except (SqlglotParseError, TokenError, ValueError):
            continue
        if not isinstance(tree, exp.Expression):
            continue
        for col, (low, high) in column_bounds(tree.transform(uncast)).items():
            if col in lowered:
                i = lowered.index(col)
                old = merged.get(i, (-math.inf, math.inf))
                merged[i] = (max(old[0], low), min(old[1], high))
    bounds = tuple((i, lo, hi) for i, (lo, hi) in sorted(merged.items()))
    return Relation(name, columns, tuple(type_sql(t) for t in types), keys, composite, bounds)
