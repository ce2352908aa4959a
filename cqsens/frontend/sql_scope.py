"""The tables of a SELECT's FROM clause and the columns they resolve.

:class:`Translator` holds one statement's text, schema and privacy settings: it builds
the errors of the translation (with line and column), rejects the constructs a
conjunctive query cannot express, lists the table instances of ``FROM``/``JOIN`` (with
their ``ON``/``USING`` conditions) and resolves each column reference to its instance.
:mod:`cqsens.frontend.parse_sql` translates the rest.  sqlglot objects never leave
:mod:`cqsens.frontend`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from cqsens.errors import SchemaError, UnsupportedQueryError
from cqsens.frontend.limits import MAX_ATOMS, check_count
from cqsens.frontend.person_local import OwnerKey
from cqsens.frontend.sql_expr import node_position, text_start
from cqsens.ir.cq import Var
from cqsens.ir.schema import Schema

__all__ = ["TableInstance", "Translator"]


@dataclass
class TableInstance:
    """One table of FROM/JOIN under its alias: its columns and, once named, its variables."""

    alias: str
    relation: str
    columns: list[str]
    node: exp.Expr
    variables: list[Var] = field(default_factory=list)


class Translator:
    """One statement's text, schema and privacy settings, and the notes of its translation."""

    def __init__(self, sql: str, schema: Schema | None, source: str,
                 public: frozenset[str] = frozenset(), owner: OwnerKey | None = None) -> None:
        self.sql = sql
        self.schema = schema
        self.public = frozenset(p.lower() for p in public)
        self.owner = owner
        self.source = source
        self.notes: list[str] = []
        self.start = text_start(sql)

    def position(self, node: exp.Expr | None) -> tuple[int | None, int | None]:
        """The node's (line, column), else the statement's start."""
        return node_position(node, self.start)

    # -- errors ---------------------------------------------------------------
    def unsupported(self, node: exp.Expr | None, construct: str, why: str) -> UnsupportedQueryError:
        line, col = self.position(node)
        return UnsupportedQueryError(
            f"{construct} is not supported: {why}",
            source=self.source,
            line=line,
            column=col,
            construct=construct,
        )

    def schema_error(self, node: exp.Expr | None, message: str, construct: str) -> SchemaError:
        line, col = self.position(node)
        return SchemaError(message, source=self.source, line=line, column=col, construct=construct)

    # -- checks ---------------------------------------------------------------
    def reject_constructs(self, select: exp.Select) -> None:
        for key, name, why in (
            ("into", "SELECT ... INTO",
             "it writes a table; cqsens analyses queries that only read"),
            ("having", "HAVING",
             "it filters on aggregate values, which is not a conjunctive query"),
            ("qualify", "QUALIFY", "it filters on window functions"),
            ("with_", "WITH (common table expression)",
             "subqueries are not conjunctive queries; inline the tables"),
            ("with", "WITH (common table expression)",
             "subqueries are not conjunctive queries; inline the tables"),
        ):
            if select.args.get(key) is not None:
                raise self.unsupported(select.args[key], name, why)
        for node in select.walk():
            if node is select:
                continue
            if isinstance(node, exp.Exists):
                parent = node.parent
                negated = isinstance(parent, exp.Not)
                raise self.unsupported(
                    node,
                    "NOT EXISTS" if negated else "EXISTS (subquery)",
                    "negation makes sensitivity undecidable in general (Thm 4)"
                    if negated
                    else "subqueries are not conjunctive queries; write the join in FROM/WHERE",
                )
            if isinstance(node, (exp.Union, exp.Except, exp.Intersect)):
                raise self._set_operation(node)
            if isinstance(node, (exp.Subquery, exp.Select)):
                parent = node.parent
                if isinstance(parent, exp.In) and isinstance(parent.parent, exp.Not):
                    raise self.unsupported(
                        node, "NOT IN (subquery)",
                        "negation makes sensitivity undecidable in general (Thm 4)",
                    )
                raise self.unsupported(
                    node, "subquery",
                    "subqueries are not conjunctive queries; write the join in FROM/WHERE",
                )
            if isinstance(node, exp.Window):
                raise self.unsupported(node, "window function",
                                       "an OVER clause is not an aggregate over a CQ")

    def _set_operation(self, node: exp.Expr) -> UnsupportedQueryError:
        if isinstance(node, exp.Except):
            return self.unsupported(node, "EXCEPT",
                                    "negation makes sensitivity undecidable in general (Thm 4)")
        name = "UNION" if isinstance(node, exp.Union) else "INTERSECT"
        return self.unsupported(node, name, "a union of CQs is not a single conjunctive query")

    # -- tables ---------------------------------------------------------------
    def instances(self, select: exp.Select) -> tuple[list[TableInstance], list[exp.Expr]]:
        from_ = select.args.get("from_") or select.args.get("from")
        if from_ is None:
            raise self.unsupported(select, "SELECT without FROM", "there is no table to count over")
        items: list[exp.Expr] = [from_.this, *from_.expressions]
        conditions: list[exp.Expr] = []
        using: list[tuple[int, exp.Identifier]] = []
        joins = select.args.get("joins") or []
        for join in joins:
            side = (join.args.get("side") or "").upper()
            kind = (join.args.get("kind") or "").upper()
            method = (join.args.get("method") or "").upper()
            if side in {"LEFT", "RIGHT", "FULL"} or kind == "OUTER":
                raise self.unsupported(
                    join, f"{side or 'OUTER'} OUTER JOIN",
                    "outer joins add NULL-padded rows, which a conjunctive query cannot express; "
                    "use an inner JOIN",
                )
            if kind in {"SEMI", "ANTI"} or method == "NATURAL":
                raise self.unsupported(
                    join, f"{method or kind} JOIN",
                    "write the join condition explicitly with JOIN ... ON or USING",
                )
            items.append(join.this)
            if join.args.get("on") is not None:
                conditions.append(join.args["on"])
            for ident in join.args.get("using") or []:
                using.append((len(items) - 1, ident))
        if len(items) > MAX_ATOMS:
            line, col = self.position(items[MAX_ATOMS])
            check_count("too many tables in FROM and JOIN", len(items), MAX_ATOMS,
                        source=self.source, line=line, column=col, construct="FROM")
        out: list[TableInstance] = []
        seen_alias: set[str] = set()
        shared: dict[str, list[str]] = {}  # without a schema, one column list per table
        for item in items:
            if not isinstance(item, exp.Table) or not item.name:
                raise self.unsupported(item, "subquery in FROM", "only base tables can be joined")
            if item.args.get("db") is not None or item.args.get("catalog") is not None:
                pass  # schema-qualified names: use the table name
            relation = item.name
            if self.schema is not None:
                rel = self.schema.find(relation)
                if rel is None:
                    raise self.schema_error(
                        item,
                        f"table {relation} is not in the schema "
                        f"(it has: {', '.join(self.schema.relation_names())})",
                        f"table {relation}",
                    )
                relation, columns = rel.name, list(rel.columns)
            else:
                columns = shared.setdefault(relation.lower(), [])
                relation = next((i.relation for i in out
                                 if i.relation.lower() == relation.lower()), relation)
            alias = item.alias_or_name
            if alias.lower() in seen_alias:
                raise self.schema_error(
                    item, f"table name or alias {alias} is used twice; give each a distinct alias",
                    f"alias {alias}",
                )
            seen_alias.add(alias.lower())
            out.append(TableInstance(alias, relation, columns, item))
        for index, ident in using:
            name = ident.name
            left = [inst for inst in out[:index] if self._has_column(inst, name)]
            if not left:
                raise self.schema_error(ident, f"USING column {name} is not in an earlier table",
                                        "USING")
            right = out[index]
            conditions.append(
                exp.EQ(
                    this=exp.column(name, table=left[0].alias),
                    expression=exp.column(name, table=right.alias),
                )
            )
        return out, conditions

    def _has_column(self, inst: TableInstance, name: str) -> bool:
        if self.schema is None:
            return True
        return name.lower() in (c.lower() for c in inst.columns)

    # -- columns --------------------------------------------------------------
    def resolve(self, column: exp.Column,
                instances: list[TableInstance]) -> tuple[TableInstance, int]:
        name = column.name
        table = column.table
        if isinstance(column.this, exp.Star):
            raise self.unsupported(column, f"{table}.*", "count rows with COUNT(*)")
        if table:
            matches = [i for i in instances if i.alias.lower() == table.lower()]
            if not matches:
                raise self.schema_error(column, f"unknown table or alias {table} in {column.sql()}",
                                        f"column {column.sql()}")
            inst = matches[0]
        else:
            owners = [i for i in instances if self.schema is not None and self._has_column(i, name)]
            if self.schema is None:
                if len(instances) == 1:
                    owners = instances
                else:
                    raise self.schema_error(
                        column,
                        f"column {name} is not qualified and there is no schema to tell which "
                        "table it belongs to; write table.column or pass --schema",
                        f"column {name}",
                    )
            if not owners:
                raise self.schema_error(column, f"no table in FROM has a column {name}",
                                        f"column {name}")
            if len(owners) > 1:
                raise self.schema_error(
                    column,
                    f"column {name} is ambiguous (in {', '.join(o.alias for o in owners)}); "
                    "qualify it",
                    f"column {name}",
                )
            inst = owners[0]
        lowered = [c.lower() for c in inst.columns]
        if name.lower() in lowered:
            return inst, lowered.index(name.lower())
        if self.schema is not None:
            raise self.schema_error(
                column,
                f"table {inst.relation} has no column {name} (columns: {', '.join(inst.columns)})",
                f"column {column.sql()}",
            )
        inst.columns.append(name)
        return inst, len(inst.columns) - 1
