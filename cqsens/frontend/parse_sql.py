"""Translate a SQL aggregate query into a conjunctive query plus its aggregates.

Each ``FROM``/``JOIN`` item becomes an atom over every column of its table
(from the schema; without one, the columns the query references plus a
``rest`` column standing for the others).  Top-level ``AND``-ed equalities
``column = column`` unify variables, ``column = literal`` puts the constant in
the atom (``ON``/``USING`` likewise).  Any other row-level predicate becomes a
*filter atom* (it can only remove answers).  ``COUNT(*)``/``COUNT(col)`` count
the distinct assignments of every variable (set semantics, no NULLs);
``COUNT(DISTINCT c1, ...)`` counts those columns.  Constructs that are not
monotone or not conjunctive are rejected by name (SPEC §4).  sqlglot objects
never leave this module.

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries.
   ICALP 2016, Example 2 (SQL to CQ).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError

from cqsens.errors import ParseError, SchemaError, UnsupportedQueryError
from cqsens.frontend.ddl import column_bounds
from cqsens.ir.cq import CQ, Aggregate, AggregateQuery, Atom, Const, Term, Var
from cqsens.ir.schema import Schema

__all__ = ["parse_sql"]

_REST = "rest"


def _position(node: exp.Expression | None) -> tuple[int | None, int | None]:
    """Best-known (line, column) of a node: its own or its first identifier's."""
    if node is None:
        return None, None
    for candidate in [node, *node.find_all(exp.Identifier, exp.Literal, exp.Star)]:
        meta = getattr(candidate, "_meta", None) or {}
        if "line" in meta:
            col = meta.get("col")
            start, end = meta.get("start"), meta.get("end")
            if isinstance(col, int) and isinstance(start, int) and isinstance(end, int):
                col = col - (end - start)  # sqlglot reports the column of the token's end
            return meta["line"], max(col, 1) if isinstance(col, int) else None
    return None, None


@dataclass
class _Instance:
    alias: str
    relation: str
    columns: list[str]
    node: exp.Expression
    variables: list[Var] = field(default_factory=list)


class _Translator:
    def __init__(self, sql: str, schema: Schema | None, source: str) -> None:
        self.sql = sql
        self.schema = schema
        self.source = source
        self.notes: list[str] = []

    # -- errors ---------------------------------------------------------------
    def unsupported(self, node: exp.Expression | None, construct: str, why: str) -> UnsupportedQueryError:
        line, col = _position(node)
        return UnsupportedQueryError(
            f"{construct} is not supported: {why}",
            source=self.source,
            line=line,
            column=col,
            construct=construct,
        )

    def schema_error(self, node: exp.Expression | None, message: str, construct: str) -> SchemaError:
        line, col = _position(node)
        return SchemaError(message, source=self.source, line=line, column=col, construct=construct)

    # -- checks ---------------------------------------------------------------
    def reject_constructs(self, select: exp.Select) -> None:
        for key, name, why in (
            ("having", "HAVING", "it filters on aggregate values, which is not a conjunctive query"),
            ("limit", "LIMIT", "it cuts the answer set, so the count is not a CQ count"),
            ("offset", "OFFSET", "it cuts the answer set, so the count is not a CQ count"),
            ("qualify", "QUALIFY", "it filters on window functions"),
            ("with_", "WITH (common table expression)", "subqueries are not conjunctive queries; inline the tables"),
            ("with", "WITH (common table expression)", "subqueries are not conjunctive queries; inline the tables"),
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
                raise self.unsupported(node, "window function", "an OVER clause is not an aggregate over a CQ")

    def _set_operation(self, node: exp.Expression) -> UnsupportedQueryError:
        if isinstance(node, exp.Except):
            return self.unsupported(node, "EXCEPT", "negation makes sensitivity undecidable in general (Thm 4)")
        name = "UNION" if isinstance(node, exp.Union) else "INTERSECT"
        return self.unsupported(node, name, "a union of CQs is not a single conjunctive query")

    # -- tables ---------------------------------------------------------------
    def instances(self, select: exp.Select) -> tuple[list[_Instance], list[exp.Expression]]:
        from_ = select.args.get("from_") or select.args.get("from")
        if from_ is None:
            raise self.unsupported(select, "SELECT without FROM", "there is no table to count over")
        items: list[exp.Expression] = [from_.this, *from_.expressions]
        conditions: list[exp.Expression] = []
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
        out: list[_Instance] = []
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
                relation = next((i.relation for i in out if i.relation.lower() == relation.lower()), relation)
            alias = item.alias_or_name
            if alias.lower() in seen_alias:
                raise self.schema_error(
                    item, f"table name or alias {alias} is used twice; give each a distinct alias",
                    f"alias {alias}",
                )
            seen_alias.add(alias.lower())
            out.append(_Instance(alias, relation, columns, item))
        for index, ident in using:
            name = ident.name
            left = [inst for inst in out[:index] if self._has_column(inst, name)]
            if not left:
                raise self.schema_error(ident, f"USING column {name} is not in an earlier table", "USING")
            right = out[index]
            conditions.append(
                exp.EQ(
                    this=exp.column(name, table=left[0].alias),
                    expression=exp.column(name, table=right.alias),
                )
            )
        return out, conditions

    def _has_column(self, inst: _Instance, name: str) -> bool:
        if self.schema is None:
            return True
        return name.lower() in (c.lower() for c in inst.columns)

    # -- columns --------------------------------------------------------------
    def resolve(self, column: exp.Column, instances: list[_Instance]) -> tuple[_Instance, int]:
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


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[Term, Term] = {}

    def find(self, t: Term) -> Term:
        self.parent.setdefault(t, t)
        while self.parent[t] != t:
            self.parent[t] = self.parent[self.parent[t]]
            t = self.parent[t]
        return t

    def union(self, a: Term, b: Term) -> bool | None:
        """Merge; constants win.

        Returns False on two constants that differ whatever the database's typing
        and collation ('F' and 'M'), None on two that might be equal (5 and '5',
        'a' and 'A'): the caller keeps the second as a filter.
        """
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        if isinstance(ra, Const) and isinstance(rb, Const):
            return False if ra.definitely_differs(rb) else None
        if isinstance(rb, Const) or (isinstance(ra, Var) and isinstance(rb, Var) and _order(rb) < _order(ra)):
            ra, rb = rb, ra
        self.parent[rb] = ra
        return True


_ORDER: dict[Var, int] = {}


def _order(v: Var) -> int:
    return _ORDER.get(v, 1 << 30)


def _literal(node: exp.Expression) -> Const | None:
    if isinstance(node, exp.Paren):
        return _literal(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        inner = _literal(node.this)
        return None if inner is None or isinstance(inner.value, str) else Const(-inner.value)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return Const(node.this)
        text = node.this
        try:
            return Const(int(text))
        except ValueError:
            try:
                return Const(float(text))
            except ValueError:
                return None
    return None


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


_SAFE = re.compile(r"[^A-Za-z0-9_]")


def _var_name(alias: str, column: str) -> str:
    prefix = "" if column.lower().startswith(alias.lower() + "_") else f"{alias}_"
    name = _SAFE.sub("_", f"{prefix}{column}")
    return name if re.match(r"[A-Za-z_]", name) else f"v_{name}"


def parse_sql(
    sql: str,
    *,
    schema: Schema | None = None,
    dialect: str | None = None,
    source: str = "<sql>",
) -> AggregateQuery:
    """Translate a SQL aggregate query into an :class:`~cqsens.ir.cq.AggregateQuery`.

    Parameters
    ----------
    sql : str
        One ``SELECT`` with COUNT/SUM/AVG/MEDIAN/MIN/MAX aggregates.
    schema : Schema, optional
        Gives every table its columns in order; without it a table's columns
        are the ones the query references (plus ``rest``), and the result says so.
    dialect : str, optional
        Any sqlglot dialect (``postgres``, ``mysql``, ``bigquery``...).
    source : str
        Name used in error messages.

    Raises
    ------
    ParseError
        The SQL does not parse (with line and column).
    UnsupportedQueryError
        A construct outside monotone conjunctive queries (named in the message).
    SchemaError
        A table or column the schema lacks; an ambiguous column.

    Examples
    --------
    >>> q = parse_sql("SELECT COUNT(DISTINCT d.id) FROM Doc d, PatDoc pd "
    ...               "WHERE d.id = pd.doc AND d.specialty = 'O'")
    >>> print(q.cq)
    Q(d_id) :- Doc(d_id, 'O', d_rest), PatDoc(d_id, pd_rest).
    """
    try:
        statements = sqlglot.parse(sql, read=dialect)
    except (SqlglotParseError, TokenError) as exc:
        errors = getattr(exc, "errors", None) or [{}]
        first = errors[0] if errors else {}
        message = str(exc).splitlines()[0]
        if first.get("description"):
            message = first["description"]
        if "<Token" in message or "TokenType" in message:
            near = (first.get("highlight") or "").strip()
            message = f"syntax error near {near!r}" if near else "syntax error (unexpected end of input?)"
        raise ParseError(
            f"the SQL does not parse: {message}",
            source=source,
            line=first.get("line"),
            column=first.get("col"),
            construct="SQL syntax",
        ) from exc
    except ValueError as exc:  # unknown dialect
        raise ParseError(str(exc), source=source, construct="--dialect") from exc
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise ParseError(
            f"expected exactly one SQL statement, found {len(statements)}",
            source=source, construct="SQL statement",
        )
    tree = statements[0]
    tr = _Translator(sql, schema, source)
    if isinstance(tree, (exp.Union, exp.Except, exp.Intersect)):
        raise tr._set_operation(tree)
    if not isinstance(tree, exp.Select):
        raise tr.unsupported(tree, type(tree).__name__.upper(), "cqsens analyses SELECT queries")
    tr.reject_constructs(tree)
    instances, join_conditions = tr.instances(tree)

    conditions = list(join_conditions)
    if tree.args.get("where") is not None:
        conditions.append(tree.args["where"].this)
    conjuncts = [c for cond in conditions for c in _conjuncts(cond)]

    # Resolve every column reference first, so that (without a schema) each
    # table knows all the columns the query mentions.
    refs: dict[int, tuple[_Instance, int]] = {}
    group_nodes = tree.args.get("group").expressions if tree.args.get("group") else []
    columns_in_text = [
        col
        for node in [*tree.expressions, *conjuncts, *group_nodes]
        for col in node.find_all(exp.Column)
    ]

    def text_offset(col: exp.Column) -> int:
        meta = getattr(col.this, "_meta", None) or {}
        return int(meta.get("start", 1 << 30))

    for col in sorted(columns_in_text, key=text_offset):
        refs[id(col)] = tr.resolve(col, instances)

    _ORDER.clear()
    rest_names: dict[str, str] = {}
    if schema is None:
        for inst in instances:
            if inst.relation not in rest_names:
                name = _REST
                while name.lower() in (c.lower() for c in inst.columns):
                    name += "_"  # a real column may be called "rest"
                rest_names[inst.relation] = name
                inst.columns.append(name)
    used: dict[str, tuple[str, str]] = {}
    for inst in instances:
        inst.variables = []
        for c in inst.columns:
            name = _var_name(inst.alias, c)
            base, n = name, 2
            while name in used and used[name] != (inst.alias.lower(), c.lower()):
                name = f"{base}_{n}"  # emp.dept_id and emp_dept.id must not meet
                n += 1
            used[name] = (inst.alias.lower(), c.lower())
            inst.variables.append(Var(name))
        for v in inst.variables:
            _ORDER.setdefault(v, len(_ORDER))
    if schema is None:
        for inst in {i.relation: i for i in instances}.values():
            shown = ", ".join(inst.columns[:-1]) or "no column"
            rest = rest_names[inst.relation]
            tr.notes.append(
                f"no schema: table {inst.relation} is read as {inst.relation}({', '.join(inst.columns)}), "
                f"the columns the query references ({shown}) plus '{rest}' for the others"
            )

    def term_of(col: exp.Column) -> Var:
        inst, pos = refs[id(col)]
        return inst.variables[pos]

    uf = _UnionFind()
    satisfiable = True
    filters: list[tuple[exp.Expression, list[Var]]] = []
    for cond in conjuncts:
        if isinstance(cond, exp.EQ):
            left, right = cond.this, cond.expression
            lc, rc = _literal(left), _literal(right)
            if isinstance(left, exp.Column) and isinstance(right, exp.Column):
                merged = uf.union(term_of(left), term_of(right))
                if merged is not None:
                    satisfiable &= merged
                    continue
            if isinstance(left, exp.Column) and rc is not None:
                merged = uf.union(term_of(left), rc)
                if merged is not None:
                    satisfiable &= merged
                    continue
            if isinstance(right, exp.Column) and lc is not None:
                merged = uf.union(term_of(right), lc)
                if merged is not None:
                    satisfiable &= merged
                    continue
        cols = list(cond.find_all(exp.Column))
        filters.append((cond, [term_of(c) for c in cols]))

    def final(t: Term) -> Term:
        return uf.find(t)

    atoms: list[Atom] = [
        Atom(inst.relation, tuple(final(v) for v in inst.variables)) for inst in instances
    ]
    filter_texts: list[str] = []
    for cond, _ in filters:
        template_node = cond.copy()
        terms: list[Term] = []
        index: dict[Term, int] = {}
        for col in list(template_node.find_all(exp.Column)):
            original = _matching_column(cond, col)
            t = final(term_of(original))
            if t not in index:
                index[t] = len(terms)
                terms.append(t)
            col.replace(exp.Var(this=f"__{index[t]}__"))
        text = template_node.sql(dialect="sqlite")
        text = text.replace("{", "{{").replace("}", "}}")
        text = re.sub(r"__(\d+)__", r"{\1}", text)
        atoms.append(Atom("$" + text, tuple(terms)))
        filter_texts.append(cond.sql(dialect=dialect))

    all_vars = tuple(dict.fromkeys(t for a in atoms if not a.is_filter for t in a.terms if isinstance(t, Var)))
    group_terms: tuple[Term, ...] = ()
    group = tree.args.get("group")
    if group is not None:
        gts: list[Term] = []
        for g in group.expressions:
            if not isinstance(g, exp.Column):
                raise tr.unsupported(g, "GROUP BY expression", "group by plain columns")
            gts.append(final(term_of(g)))
        group_terms = tuple(dict.fromkeys(gts))

    aggregates: list[Aggregate] = []
    heads: list[tuple[Term, ...]] = []
    for item in tree.expressions:
        node = item.this if isinstance(item, exp.Alias) else item
        label = item.sql(dialect=dialect)
        if isinstance(node, exp.Column) and group is not None:
            t = final(term_of(node))
            if t in group_terms:
                continue  # the group key itself, printed next to each count
        agg, head = _aggregate(tr, node, label, term_of, final, all_vars, refs)
        aggregates.append(agg)
        heads.append(tuple(dict.fromkeys((*group_terms, *head))))
    if not aggregates:
        raise tr.unsupported(tree, "SELECT without aggregate", "cqsens analyses COUNT/SUM/AVG/MEDIAN/MIN/MAX queries")
    head = heads[0]
    cq = CQ(head, frozenset(atoms), "Q", satisfiable)
    body = CQ(all_vars, frozenset(atoms), "Q", satisfiable)
    columns = {inst.relation: tuple(inst.columns) for inst in instances}
    # Range filters bound the *variable* they constrain (one alias of a table, not
    # every alias): only conjuncts over a single variable are read.
    bounds: dict[str, tuple[float, float, str]] = {}
    for cond, _ in filters:
        cols = list(cond.find_all(exp.Column))
        variables = {final(term_of(c)) for c in cols}
        if len(variables) != 1 or not isinstance(next(iter(variables)), Var):
            continue
        (var,) = variables
        assert isinstance(var, Var)
        for name, (low, high) in column_bounds(cond).items():
            if name == cols[0].name.lower() and (low > -math.inf or high < math.inf):
                old = bounds.get(var.name, (-math.inf, math.inf, ""))
                bounds[var.name] = (max(old[0], low), min(old[1], high), "WHERE filter")
    try:
        sqlite_sql: str | None = tree.sql(dialect="sqlite")
    except Exception:  # noqa: BLE001 - a dialect feature SQLite cannot express
        sqlite_sql = None
    return AggregateQuery(
        sqlite_sql=sqlite_sql,
        cq=cq,
        aggregates=tuple(aggregates),
        group_by=group_terms,
        sql=sql,
        dialect=dialect,
        filters=tuple(filter_texts),
        notes=tuple(tr.notes),
        columns=columns,
        value_bounds=bounds,
        source=source,
        heads=tuple(heads),
        body=body,
    )


def _matching_column(original: exp.Expression, copy_col: exp.Column) -> exp.Column:
    """The column of ``original`` at the same path as ``copy_col`` in its copy."""
    path: list[tuple[str, int | None]] = []
    node: exp.Expression = copy_col
    while node.parent is not None:
        parent = node.parent
        key = node.arg_key
        value = parent.args.get(key)
        index = value.index(node) if isinstance(value, list) else None
        path.append((key, index))
        node = parent
    target: exp.Expression = original
    for key, index in reversed(path):
        value = target.args[key]
        target = value[index] if index is not None else value
    assert isinstance(target, exp.Column)
    return target


def _aggregate(tr, node, label, term_of, final, all_vars, refs):  # type: ignore[no-untyped-def]
    """(Aggregate, counted head terms) for one SELECT item."""
    def column_name(col: exp.Column) -> str:
        inst, pos = refs[id(col)]
        return f"{inst.relation}.{inst.columns[pos]}"

    if isinstance(node, exp.Count):
        arg = node.this
        if isinstance(arg, exp.Star) or arg is None:
            return Aggregate("count", label), all_vars
        if isinstance(arg, exp.Distinct):
            cols = arg.expressions
            if not cols or not all(isinstance(c, exp.Column) for c in cols):
                raise tr.unsupported(arg, "COUNT(DISTINCT expression)", "count distinct plain columns")
            terms = tuple(final(term_of(c)) for c in cols)
            return Aggregate("count_distinct", label, columns=terms), terms
        if isinstance(arg, exp.Column):
            return Aggregate("count", label, column=final(term_of(arg)), column_name=column_name(arg)), all_vars
        if isinstance(arg, exp.Literal):
            return Aggregate("count", label), all_vars
        raise tr.unsupported(node, "COUNT(expression)", "count rows, a column or DISTINCT columns")
    kinds = {exp.Sum: "sum", exp.Avg: "avg", exp.Median: "median", exp.Min: "min", exp.Max: "max"}
    for cls, kind in kinds.items():
        if isinstance(node, cls):
            arg = node.this
            if isinstance(arg, exp.Distinct):
                raise tr.unsupported(node, f"{kind.upper()}(DISTINCT ...)", "aggregate every row")
            if not isinstance(arg, exp.Column):
                raise tr.unsupported(node, f"{kind.upper()}(expression)", "aggregate a plain column")
            return Aggregate(kind, label, column=final(term_of(arg)), column_name=column_name(arg)), all_vars
    if isinstance(node, exp.WithinGroup) and isinstance(node.this, exp.PercentileCont):
        q = _literal(node.this.this)
        order = node.expression
        cols = [o.this for o in order.expressions] if isinstance(order, exp.Order) else []
        if q is None or q.value != 0.5 or len(cols) != 1 or not isinstance(cols[0], exp.Column):
            raise tr.unsupported(node, "PERCENTILE_CONT", "only the median PERCENTILE_CONT(0.5) of one column")
        return Aggregate("median", label, column=final(term_of(cols[0])), column_name=column_name(cols[0])), all_vars
    if isinstance(node, exp.Column):
        raise tr.unsupported(node, f"plain column {node.sql()} in SELECT",
                             "select aggregates only (or GROUP BY the column)")
    if isinstance(node, exp.AggFunc):
        raise tr.unsupported(node, f"aggregate {node.key.upper()}",
                             "supported: COUNT, SUM, AVG, MEDIAN, PERCENTILE_CONT(0.5), MIN, MAX")
    raise tr.unsupported(node, f"SELECT expression {node.sql()}",
                         "select aggregates only (COUNT, SUM, AVG, MEDIAN, MIN, MAX)")
