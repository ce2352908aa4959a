"""Schemas from SQL DDL: column order, key dependencies and value bounds.

``CREATE TABLE`` statements (any sqlglot dialect) give each relation its
columns in order.  A single-column ``PRIMARY KEY`` or ``UNIQUE`` gives a
functional dependency from that column to every other column; ``CHECK (c
BETWEEN a AND b)``, ``CHECK (c >= a AND c <= b)`` or ``CHECK (c IN (0, 1))`` gives
value bounds (used by SUM/MEDIAN).  Every CHECK is kept as text (for the SQL of a
witness) and, when it reads one column, as a predicate (an ``IN`` list of
literals is that column's finite domain).  A composite key gives a dependency
from its columns together.
``REFERENCES`` and ``FOREIGN KEY`` give foreign keys; each must reference a key
of a table of the same schema (the primary key when no column is named).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import Token, TokenType

from cqsens.errors import ParseError, SchemaError, read_text
from cqsens.frontend.limits import MAX_ARGUMENTS, check_count
from cqsens.frontend.parse_sql import parse_statements
from cqsens.frontend.sql_expr import ExprReader, node_position, text_start
from cqsens.ir.domains import domain_of
from cqsens.ir.exact import Exact, exact
from cqsens.ir.expr import Expr, Predicate, Slot
from cqsens.ir.schema import ForeignKey, Relation, Schema

__all__ = ["column_bounds", "load_schema", "schema_from_ddl"]


def _number(node: exp.Expression) -> Exact | None:
    """The exact value of a numeric literal (an int, or a Fraction for a decimal)."""
    if isinstance(node, exp.Neg):
        inner = _number(node.this)
        return None if inner is None else -inner
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return exact(node.this)
        except (ValueError, ZeroDivisionError):
            return None
    if isinstance(node, exp.Paren):
        return _number(node.this)
    return None


def column_bounds(condition: exp.Expression) -> dict[str, tuple[Exact, Exact]]:
    """Value bounds a conjunction of comparisons puts on columns.

    Reads ``c BETWEEN a AND b``, ``c >= a``, ``c > a`` (integer-agnostic: kept
    closed, which is sound), ``a <= c``, ``c IN (n1, n2, ...)`` of numbers (the
    range from the least to the greatest) and so on, joined by AND.  Other parts
    are ignored.  Returns column name (lower case, unqualified) → (low, high).
    """
    out: dict[str, list[Exact]] = {}

    def put(col: exp.Expression, low: Exact | None, high: Exact | None) -> None:
        if not isinstance(col, exp.Column):
            return
        entry = out.setdefault(col.name.lower(), [-math.inf, math.inf])
        if low is not None and low > entry[0]:
            entry[0] = low
        if high is not None and high < entry[1]:
            entry[1] = high

    def visit(node: exp.Expression) -> None:
        if isinstance(node, exp.Paren):
            visit(node.this)
        elif isinstance(node, exp.And):
            visit(node.this)
            visit(node.expression)
        elif isinstance(node, exp.Between):
            put(node.this, _number(node.args["low"]), _number(node.args["high"]))
        elif isinstance(node, exp.In) and node.expressions and node.args.get("query") is None:
            items = [_number(e) for e in node.expressions]
            numbers = [n for n in items if n is not None]
            if len(numbers) == len(items):  # a NULL or a string in the list: no range
                put(node.this, min(numbers), max(numbers))
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


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class _TableReader:
    """Reads one ``CREATE TABLE`` into a Relation, or raises a SchemaError at the fault."""

    def __init__(self, create: exp.Create, source: str, start: tuple[int, int]) -> None:
        self.create = create
        self.source = source
        self.start = start
        node = create.this
        self.table = node.this if isinstance(node, exp.Schema) else node
        self.name = self.table.name
        self.items = list(node.expressions) if isinstance(node, exp.Schema) else []

    def error(self, node: exp.Expr | None, message: str) -> SchemaError:
        line, column = node_position(node, node_position(self.create, self.start))
        return SchemaError(message, source=self.source, line=line, column=column,
                           construct=f"CREATE TABLE {self.name!r}"
                           if _CONTROL.search(self.name) else f"CREATE TABLE {self.name}")

    def name_check(self, node: exp.Expr, name: str, what: str) -> None:
        bad = _CONTROL.search(name)
        if bad is not None:
            raise self.error(node, f"{what} {name!r} contains the control character "
                                   f"{bad.group()!r}; names must be printable")

    def read(self) -> Relation:
        self.name_check(self.table, self.name, "table name")
        if self.create.args.get("expression") is not None:
            raise self.error(self.create, f"CREATE TABLE {self.name} ... AS SELECT is not "
                             "supported: declare the columns, CREATE TABLE t (col TYPE, ...)")
        columns = [item for item in self.items if isinstance(item, exp.ColumnDef)]
        if not columns:
            raise self.error(self.table, f"table {self.name} declares no column")
        line, column = node_position(columns[-1], self.start)
        check_count(f"too many columns in table {self.name}", len(columns), MAX_ARGUMENTS,
                    source=self.source, line=line, column=column,
                    construct=f"CREATE TABLE {self.name}")
        names: list[str] = []
        for item in columns:
            self.name_check(item, item.name, "column name")
            if item.name.lower() in (n.lower() for n in names):
                raise self.error(item, f"table {self.name} declares column {item.name} twice")
            names.append(item.name)
        keys, composite = self.keys(columns, [n.lower() for n in names])
        primary, not_null = self.primary_and_not_null(columns, [n.lower() for n in names])
        checks = self.checks(columns, [n.lower() for n in names])
        texts, predicates = check_parts(checks, [n.lower() for n in names])
        return Relation(
            self.name,
            tuple(names),
            tuple(kind.sql() if (kind := item.args.get("kind")) is not None else ""
                  for item in columns),
            tuple(sorted(set(keys))),
            tuple(composite),
            merged_bounds(checks, [n.lower() for n in names], predicates),
            primary,
            not_null,
            checks=texts,
            column_checks=predicates,
        )

    def primary_and_not_null(
        self, columns: list[exp.ColumnDef], lowered: list[str]
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The PRIMARY KEY's positions, and the positions that cannot hold NULL."""
        primary: list[int] = []
        not_null: list[int] = []
        for i, item in enumerate(columns):
            for constraint in item.args.get("constraints") or []:
                ckind = constraint.args.get("kind")
                if isinstance(ckind, exp.PrimaryKeyColumnConstraint):
                    primary.append(i)
                if isinstance(ckind, exp.NotNullColumnConstraint) \
                        and not ckind.args.get("allow_null"):
                    not_null.append(i)
        for item in self.items:
            found = item if isinstance(item, exp.PrimaryKey) else next(
                (sub for sub in item.expressions if isinstance(sub, exp.PrimaryKey)), None
            ) if isinstance(item, exp.Constraint) else None
            if found is not None:
                primary += [lowered.index(c.name.lower()) for c in found.expressions
                            if c.name.lower() in lowered]
        return tuple(sorted(set(primary))), tuple(sorted(set(not_null) | set(primary)))

    def keys(
        self, columns: list[exp.ColumnDef], lowered: list[str]
    ) -> tuple[list[int], list[tuple[int, ...]]]:
        """Single-column keys and composite keys; at most one PRIMARY KEY per table."""
        keys: list[int] = []
        composite: list[tuple[int, ...]] = []
        primary: list[exp.Expr] = []
        for i, item in enumerate(columns):
            for constraint in item.args.get("constraints") or []:
                ckind = constraint.args.get("kind")
                if isinstance(ckind, exp.PrimaryKeyColumnConstraint):
                    primary.append(item)
                if isinstance(ckind, (exp.PrimaryKeyColumnConstraint,
                                      exp.UniqueColumnConstraint)):
                    keys.append(i)
        for item in self.items:
            key_columns: list[exp.Expr] | None = None
            if isinstance(item, exp.PrimaryKey):
                key_columns = list(item.expressions)
                primary.append(item)
            elif isinstance(item, exp.UniqueColumnConstraint) and isinstance(item.this, exp.Schema):
                key_columns = list(item.this.expressions)
            elif isinstance(item, exp.Constraint):
                for sub in item.expressions:
                    if isinstance(sub, exp.PrimaryKey):
                        key_columns = list(sub.expressions)
                        primary.append(sub)
            if key_columns is None:
                continue
            positions = []
            for column in key_columns:
                if column.name.lower() not in lowered:
                    raise self.error(column, f"key of table {self.name} names column "
                                             f"{column.name!r}, which the table does not have")
                positions.append(lowered.index(column.name.lower()))
            if len(positions) == 1:
                keys.append(positions[0])
            else:
                composite.append(tuple(positions))
        if len(primary) > 1:
            raise self.error(primary[1], f"table {self.name} declares {len(primary)} primary "
                             "keys; a table has one: write PRIMARY KEY (a, b) for a composite "
                             "key, or UNIQUE for each further key")
        return keys, composite

    def foreign_keys(self, lowered: list[str]) -> list[_RawForeignKey]:
        """``REFERENCES`` on a column and ``FOREIGN KEY (...) REFERENCES`` items, unresolved."""
        raw: list[_RawForeignKey] = []
        columns = [item for item in self.items if isinstance(item, exp.ColumnDef)]
        for i, item in enumerate(columns):
            for constraint in item.args.get("constraints") or []:
                reference = constraint.args.get("kind")
                if isinstance(reference, exp.Reference):
                    raw.append(self._reference(reference, (i,), reference))
        found = [item for item in self.items if isinstance(item, exp.ForeignKey)]
        found += [sub for item in self.items if isinstance(item, exp.Constraint)
                  for sub in item.expressions if isinstance(sub, exp.ForeignKey)]
        for fk in found:
            positions = []
            for column in fk.expressions:
                if column.name.lower() not in lowered:
                    raise self.error(column, f"foreign key of table {self.name} names column "
                                             f"{column.name!r}, which the table does not have")
                positions.append(lowered.index(column.name.lower()))
            reference = fk.args.get("reference")
            if not isinstance(reference, exp.Reference):
                raise self.error(fk, f"foreign key of table {self.name} has no REFERENCES")
            raw.append(self._reference(reference, tuple(positions), fk))
        return raw

    def _reference(self, reference: exp.Reference, positions: tuple[int, ...],
                   node: exp.Expr) -> _RawForeignKey:
        target = reference.this
        names: tuple[str, ...] = ()
        if isinstance(target, exp.Schema):
            names = tuple(c.name for c in target.expressions)
            target = target.this
        return _RawForeignKey(self, node, positions, target.name, names)

    def checks(self, columns: list[exp.ColumnDef], lowered: list[str]) -> list[exp.Expression]:
        """Every CHECK of the table (on a column, on the table, named or not); a CHECK must
        name columns of the table."""
        checks: list[exp.Expression] = []
        for item in columns:
            for constraint in item.args.get("constraints") or []:
                if isinstance(constraint.args.get("kind"), exp.CheckColumnConstraint):
                    checks.append(constraint.args["kind"].this)
        for item in self.items:
            if isinstance(item, exp.CheckColumnConstraint):
                checks.append(item.this)
        named = [sub.this for item in self.items if isinstance(item, exp.Constraint)
                 for sub in item.expressions if isinstance(sub, exp.CheckColumnConstraint)]
        for check in [*checks, *named]:
            for column in check.find_all(exp.Column):
                if column.name.lower() not in lowered:
                    raise self.error(column, f"a CHECK of table {self.name} names column "
                                             f"{column.name!r}, which the table does not have "
                                             f"(columns: {', '.join(c.name for c in columns)})")
        return [*checks, *named]


def merged_bounds(checks: Sequence[exp.Expression], lowered: list[str],
                  predicates: Sequence[tuple[int, Predicate]] = ()
                  ) -> tuple[tuple[int, Exact, Exact], ...]:
    """Value bounds of the CHECKs, merged per column (``lowered``: the column names); a
    finite domain of numbers (``CHECK (x IN (0, 1) OR x = 7)``) bounds by its least and
    greatest value."""
    found: list[tuple[int, Exact, Exact]] = []
    for check in checks:
        for col, (low, high) in column_bounds(check).items():
            if col in lowered:
                found.append((lowered.index(col), low, high))
    for position, predicate in predicates:
        values = domain_of(predicate)
        if values and all(isinstance(v, (int, Decimal)) and not isinstance(v, bool)
                          for v in values):
            numbers = [exact(v) for v in values if not isinstance(v, (str, bool))]
            found.append((position, min(numbers), max(numbers)))
    merged: dict[int, tuple[Exact, Exact]] = {}
    for i, low, high in found:
        lo, hi = merged.get(i, (-math.inf, math.inf))
        merged[i] = (low if low > lo else lo, high if high < hi else hi)
    return tuple((i, lo, hi) for i, (lo, hi) in sorted(merged.items()))


class _Unreadable(Exception):
    """A CHECK outside the typed predicates: kept as text only."""


def _unreadable(node: exp.Expr, construct: str, why: str) -> Exception:
    del node, construct, why
    return _Unreadable()


def check_parts(
    checks: Sequence[exp.Expression], lowered: list[str]
) -> tuple[tuple[str, ...], tuple[tuple[int, Predicate], ...]]:
    """Each CHECK as SQLite text (the witness's SQL declares it), and each one that reads a
    single column as a predicate over ``Slot(0)`` (``(position, predicate)``)."""
    texts: list[str] = []
    predicates: list[tuple[int, Predicate]] = []
    for check in checks:
        try:
            text = check.sql(dialect="sqlite")
        except Exception:  # noqa: BLE001 - sqlglot cannot spell it for SQLite: keep it as written
            text = check.sql()
        if text not in texts:
            texts.append(text)
        named = {c.name.lower() for c in check.find_all(exp.Column)}
        if len(named) != 1 or next(iter(named)) not in lowered:
            continue

        def column(col: exp.Column) -> Expr:
            del col
            return Slot(0)

        try:
            predicate = ExprReader(column, _unreadable).predicate(check)
        except _Unreadable:
            continue
        entry = (lowered.index(next(iter(named))), predicate)
        if entry not in predicates:
            predicates.append(entry)
    return tuple(texts), tuple(predicates)


@dataclass(frozen=True)
class _RawForeignKey:
    """A foreign key as written, before the referenced table is known."""

    reader: _TableReader
    node: exp.Expr
    columns: tuple[int, ...]
    table: str
    names: tuple[str, ...]

    def resolve(self, relations: dict[str, Relation]) -> ForeignKey:
        """The key by positions; the referenced table and columns must exist and be a key."""
        here = f"foreign key of table {self.reader.name}"
        target = relations.get(self.table.lower())
        if target is None:
            raise self.reader.error(self.node, f"{here} references table {self.table!r}, which "
                                    "the schema does not declare: add its CREATE TABLE (a "
                                    "foreign key must reference a key of a declared table)")
        if self.names:
            referenced = []
            for name in self.names:
                position = target.index(name)
                if position is None:
                    raise self.reader.error(self.node, f"{here} references column {name!r} of "
                                            f"{target.name}, which that table does not have")
                referenced.append(position)
        else:
            referenced = list(target.primary_key)
            if not referenced:
                raise self.reader.error(self.node, f"{here} references {target.name} without "
                                        f"naming columns, and {target.name} has no primary key")
        if len(referenced) != len(self.columns):
            raise self.reader.error(self.node, f"{here} has {len(self.columns)} column(s) but "
                                    f"references {len(referenced)}")
        if not target.is_key(tuple(referenced)):
            shown = ", ".join(target.columns[c] for c in referenced)
            raise self.reader.error(self.node, f"{here} references {target.name}({shown}), "
                                    f"which is not a PRIMARY KEY or UNIQUE of {target.name}: "
                                    "a foreign key must reference a key")
        return ForeignKey(self.columns, target.name, tuple(referenced))


def _empty_items(tokens: Sequence[Token], source: str) -> None:
    """Refuse an empty item in a list: ``(a INT,, b INT)``, ``(, a INT)``, ``(a INT,)``."""
    for before, after in zip(tokens, tokens[1:], strict=False):
        pair = (before.token_type, after.token_type)
        if pair in _EMPTY_ITEM:
            at = after if after.token_type == TokenType.COMMA else before
            line, column = at.line, max(at.col - (at.end - at.start), 1)
            raise ParseError(f"the schema does not parse: empty item in a list "
                             f"({before.text!r} followed by {after.text!r})", source=source,
                             line=line,
                             column=column, construct="schema syntax")


_EMPTY_ITEM = {
    (TokenType.COMMA, TokenType.COMMA),
    (TokenType.L_PAREN, TokenType.COMMA),
    (TokenType.COMMA, TokenType.R_PAREN),
}


@functools.lru_cache(maxsize=32)  # a Schema is frozen: one per text, dialect and source
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
        The DDL does not parse, has an empty item in a list (``a INT,, b INT``)
        or is over a limit of :mod:`cqsens.frontend.limits`.
    SchemaError
        A table is declared twice, has no column, a column twice, two primary
        keys, a control character in a name, or is made ``AS SELECT``; a key or
        CHECK names a missing column.  Each error gives the line and column.

    Examples
    --------
    >>> s = schema_from_ddl("CREATE TABLE R (a INT PRIMARY KEY, b INT, c INT)")
    >>> [str(d) for d in s.key_dependencies()]
    ['R[1->2]', 'R[1->3]']
    """
    statements = parse_statements(ddl, dialect=dialect, source=source, what="schema",
                                  integers=False, check=lambda t: _empty_items(t, source))
    start = text_start(ddl)
    relations: list[Relation] = []
    raw: list[list[_RawForeignKey]] = []
    seen: set[str] = set()
    for statement in statements:
        if not isinstance(statement, exp.Create):
            continue
        if str(statement.args.get("kind")).upper() != "TABLE":
            continue
        reader = _TableReader(statement, source, start)
        relation = reader.read()
        if relation.name.lower() in seen:
            raise reader.error(reader.table, f"table {relation.name} is declared twice")
        seen.add(relation.name.lower())
        relations.append(relation)
        raw.append(reader.foreign_keys([c.lower() for c in relation.columns]))
    if not relations:
        raise SchemaError("the schema declares no table (expected CREATE TABLE statements)",
                          source=source, line=start[0], column=start[1], construct="DDL")
    by_name = {r.name.lower(): r for r in relations}
    relations = [replace(r, foreign_keys=tuple(fk.resolve(by_name) for fk in fks))
                 if fks else r for r, fks in zip(relations, raw, strict=True)]
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
    primary_key: tuple[int, ...] = (),
    not_null: tuple[int, ...] = (),
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
        bound and is kept as written (a witness's SQL declares it).
    keys, composite : tuple
        Single-column key positions and composite keys, copied as they are.
    primary_key, not_null : tuple
        Positions of the primary key, and of the columns that cannot hold NULL.
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
    (('INT', ''), ((1, 0, 9),))
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
    trees: list[exp.Expression] = []
    unread: list[str] = []
    for text in checks:
        try:
            tree = sqlglot.parse_one(text, read=dialect)
        except (SqlglotParseError, TokenError, ValueError):
            unread.append(text)  # declared as written: a witness must still meet it
            continue
        if isinstance(tree, exp.Expression):
            trees.append(tree.transform(uncast))
    texts, predicates = check_parts(trees, lowered)
    texts += tuple(unread)
    return Relation(name, columns, tuple(type_sql(t) for t in types), keys, composite,
                    merged_bounds(trees, lowered, predicates), primary_key,
                    tuple(sorted(set(not_null) | set(primary_key))), checks=texts,
                    column_checks=predicates)
