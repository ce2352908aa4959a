"""Translate a SQL aggregate query into a conjunctive query plus its aggregates.

Each ``FROM``/``JOIN`` item becomes an atom over every column of its table
(from the schema; without one, the columns the query references plus a
``rest`` column standing for the others).  Top-level ``AND``-ed equalities
``column = column`` unify variables, ``column = literal`` puts the constant in
the atom (``ON``/``USING`` likewise).  Any other row-level predicate becomes a
*filter atom* (it can only remove answers).  ``COUNT(*)``/``COUNT(col)`` count
the distinct assignments of every variable (set semantics, no NULLs);
``COUNT(DISTINCT c1, ...)`` counts those columns.  Constructs that are not
monotone or not conjunctive are rejected by name (docs/rules.md, rule setting).  sqlglot objects
never leave this module.

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries.
   ICALP 2016, Example 2 (SQL to CQ).
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from cqsens.frontend.common_conjuncts import factor_common_conjuncts
from cqsens.frontend.constant_keys import constant_keys_note, drop_constant_keys
from cqsens.frontend.derived_tables import inline_derived_tables
from cqsens.frontend.person_local import OwnerKey, drop_person_local_conjuncts
from cqsens.frontend.plan import Combine, Leaf, Plan, build_plan
from cqsens.frontend.post_processing import group_keys, split_post_processing
from cqsens.frontend.public_subqueries import drop_public_conjuncts
from cqsens.frontend.select_items import aggregates_in
from cqsens.frontend.sql_aggregates import aggregate_of, limit_name
from cqsens.frontend.sql_expr import ExprReader
from cqsens.frontend.sql_expr import conjuncts as and_parts
from cqsens.frontend.sql_scope import TableInstance, Translator
from cqsens.frontend.sql_terms import TermClasses, literal_const, var_name
from cqsens.frontend.statements import parse_statement, parse_statements
from cqsens.frontend.subqueries import inline_semijoins
from cqsens.frontend.two_stage import stage_marker, staged_filters
from cqsens.ir.compound import CompoundQuery
from cqsens.ir.cq import CQ, Aggregate, AggregateQuery, Atom, Term, Var
from cqsens.ir.expr import Expr, Slot
from cqsens.ir.schema import Schema

__all__ = ["parse_plan", "parse_query", "parse_sql", "parse_statements"]

_REST = "rest"
ROW_COLUMN = "_row"
"""The name of the hidden row identity of a table whose rows may repeat (no key);
underscores are added when the table has a real column of that name."""


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
    >>> print(parse_sql("SELECT SUM(t.v) FROM T t WHERE t.v > 1 OR t.w IS NULL").cq)
    Q(t_v, t_w, t_rest, t__row) :- T(t_v, t_w, t_rest, t__row), [t_v > 1 OR t_w IS NULL].
    """
    query = parse_query(sql, schema=schema, dialect=dialect, source=source)
    if isinstance(query, CompoundQuery):
        first = parse_statement(sql, dialect, source)
        raise Translator(sql, schema, source).unsupported(
            first, query.operator,
            "a set operation is several conjunctive queries; cqsens.analyze (and the command "
            "line) combine their sensitivities")
    return query


def parse_plan(sql: str, *, schema: Schema | None = None, dialect: str | None = None,
               source: str = "<sql>") -> Plan:
    """The plan of a statement (:mod:`cqsens.frontend.plan`): its passes applied, before
    any leaf is translated.  :func:`cqsens.frontend.plan.render` prints it."""
    tree = parse_statement(sql, dialect, source)
    return build_plan(tree, Translator(sql, schema, source).unsupported, dialect, schema)


def parse_query(
    sql: str,
    *,
    schema: Schema | None = None,
    dialect: str | None = None,
    source: str = "<sql>",
    public: frozenset[str] = frozenset(),
    owner: OwnerKey | None = None,
) -> AggregateQuery | CompoundQuery:
    """Like :func:`parse_sql`, and a set operation becomes a :class:`CompoundQuery`.

    The statement becomes a plan (:mod:`cqsens.frontend.plan`): set operations, grouping
    sets and outer joins split it into parts, at any depth, each translated on its own
    (docs/rules.md, rules set-operations, grouping-sets, outer-joins).
    A WHERE condition whose subqueries read only ``public`` tables is a fixed filter
    (:mod:`cqsens.frontend.public_subqueries`); with a privacy unit (``owner``), one whose
    subqueries read only the outer row's person is kept out of the query too
    (:mod:`cqsens.frontend.person_local`).
    """
    tree = parse_statement(sql, dialect, source)
    tr = Translator(sql, schema, source, public, owner)
    plan = build_plan(tree, tr.unsupported, dialect, schema, public, owner)
    if isinstance(plan, Leaf):
        if not isinstance(plan.tree, exp.Select):
            raise tr.unsupported(plan.tree, type(plan.tree).__name__.upper(),
                                 "cqsens analyses SELECT queries")
        if plan.root:
            return _Query(tr, plan.tree, dialect).translate()
        query = _Query(tr, plan.tree, dialect, standalone=True).translate()
        return replace(query, text=sql)
    return _compound(plan, sql, Translator(sql, schema, source, public, owner), dialect, sql)


def _compound(plan: Combine, sql: str, tr: Translator, dialect: str | None,
              text: str) -> CompoundQuery:
    """The CompoundQuery of a plan node: each leaf translated on its own."""
    parts: list[AggregateQuery | CompoundQuery] = []
    for part in plan.parts:
        if isinstance(part, Combine):
            parts.append(_compound(part, sql, tr, dialect, part.whole))
            continue
        if not isinstance(part.tree, exp.Select):
            raise tr.unsupported(part.tree, type(part.tree).__name__.upper(),
                                 "each part must be a SELECT")
        query = _Query(Translator(sql, tr.schema, tr.source, tr.public, tr.owner), part.tree,
                       dialect, standalone=True, distinct_expressions=part.distinct).translate()
        parts.append(replace(query, text=query.sql or ""))
    return CompoundQuery(tuple(parts), plan.kind, plan.operator, plan.whole, dialect=dialect,
                         source=tr.source, text=text, notes=plan.notes, names=plan.names,
                         signs=plan.signs, monotone=plan.monotone)


class _Query:
    """The translation of one SELECT: atoms, filters, groups and aggregates."""

    def __init__(self, tr: Translator, tree: exp.Select, dialect: str | None, *,
                 standalone: bool = False, distinct_expressions: bool = False) -> None:
        self.tr = tr
        self.standalone = standalone  # a part of a set operation: its SQL is its own
        self.distinct_expressions = distinct_expressions
        self.tree = tree
        self.dialect = dialect
        self.refs: dict[int, tuple[TableInstance, int]] = {}
        self.order: dict[Var, int] = {}
        self.row_positions: dict[str, int] = {}
        self.uf = TermClasses(self.order)
        self.split = False
        self.labels: dict[int, str] = {}  # an aggregate taken out of an arithmetic combination
        self.outputs: dict[int, str] = {}  # its result column's name (alias, else SQL text)

    def translate(self) -> AggregateQuery:
        tr, tree = self.tr, self.tree
        post = split_post_processing(tree, self.dialect, tr.unsupported)
        if post.having or post.windows:
            parts = (["HAVING"] if post.having else []) + (
                [f"{post.windows} window function{'s' if post.windows > 1 else ''}"]
                if post.windows else [])
            added = (f"; the aggregates they read ({', '.join(post.added)}) are released too"
                     if post.added else "")
            tr.notes.append(
                f"{' and '.join(parts)} {'act' if len(parts) > 1 or post.windows > 1 else 'acts'}"
                " on the released (noisy) values: post-processing, which costs no privacy"
                f"{added}")
        self._group_by_items()
        self._split_combinations()
        for item in tree.expressions:  # the labels as written, before any inlining
            self.labels.setdefault(id(item), item.sql(dialect=self.dialect))
            self.outputs.setdefault(id(item), self._output(item))
        released_sql = self._post_processing()
        opaque_filters = drop_public_conjuncts(tree, tr.public, self.dialect)
        if opaque_filters:
            tr.notes.append(
                f"{' AND '.join(opaque_filters)} reads only public tables in its subqueries: "
                "the same in both neighbours, a fixed filter that can only remove answers "
                "(docs/rules.md, rule public-subqueries); no witness is built for it")
        inline_derived_tables(tree, tr.schema, tr.unsupported)
        existential = {a.lower() for a in inline_semijoins(tree, tr.schema, tr.unsupported)}
        # after inlining, so every conjunct is seen
        opaque_filters = [*opaque_filters, *staged_filters(tree, self.dialect, tr.notes)]
        # after the semi-joins: a positive EXISTS/IN stays a join (with a witness)
        if tr.owner is not None and tr.schema is not None:
            local = drop_person_local_conjuncts(tree, tr.owner, tr.public, tr.schema,
                                                self.dialect)
            if local:
                tr.notes.append(
                    f"{' AND '.join(local)} reads, in its subqueries, only rows of the outer "
                    "row's own person (or public tables): only that person can change it, and "
                    "the person bound already counts every answer of that person (docs/rules.md,"
                    " rule person-local); no witness is built for it")
                opaque_filters = [*opaque_filters, *local]
        if (marker := stage_marker(tree)) is not None:
            raise tr.unsupported(marker, "scalar subquery over private data here",
                                 "a comparison with it is a two-stage release as a WHERE "
                                 "conjunct of its own, or inside a public or person-local "
                                 "subquery (docs/rules.md, rule two-stage)")
        tr.reject_constructs(tree)
        instances, join_conditions = tr.instances(tree)
        conditions = list(join_conditions)
        if tree.args.get("where") is not None:
            conditions.append(tree.args["where"].this)
        conjuncts = factor_common_conjuncts([c for cond in conditions for c in and_parts(cond)])
        group = tree.args.get("group")
        grouped = group.expressions if group else []
        self._resolve(instances, [*tree.expressions, *conjuncts, *grouped])
        self._name_variables(instances)
        satisfiable, filters = self._unify(conjuncts)
        atoms: list[Atom] = [
            Atom(inst.relation, tuple(self.final(v) for v in inst.variables)) for inst in instances
        ]
        atoms += [self._filter_atom(cond) for cond in filters]
        counted = {self.final(v) for inst in instances if inst.alias.lower() not in existential
                   for v in inst.variables}  # a semi-join's own variables are existential
        all_vars = tuple(dict.fromkeys(
            t for a in atoms if not a.is_filter for t in a.terms
            if isinstance(t, Var) and t in counted))
        if existential:
            tr.notes.append(
                f"EXISTS / IN (subquery) read as a semi-join: {', '.join(sorted(existential))} "
                "join the query with existential variables, so each outer row counts once")
        group_terms = self._group_terms(group)
        aggregates: list[Aggregate] = []
        heads: list[tuple[Term, ...]] = []
        for item in tree.expressions:
            node = item.this if isinstance(item, exp.Alias) else item
            if group is not None and self._repeats_group_key(node, group_terms):
                continue  # the group key itself, printed next to each count
            if not any(True for _ in node.find_all(exp.Column, exp.AggFunc, exp.Star)):
                continue  # a constant column ('all' AS label): the same in every answer
            label = self.labels.get(id(item)) or item.sql(dialect=self.dialect)
            agg, head = self._aggregate(node, label, all_vars)
            aggregates.append(replace(agg, output=self.outputs.get(id(item))
                                      or self._output(item)))
            heads.append(tuple(dict.fromkeys((*group_terms, *head))))
        if not aggregates:
            raise tr.unsupported(tree, "SELECT without aggregate",
                                 "cqsens analyses COUNT/SUM/AVG/MEDIAN/MIN/MAX queries")
        return AggregateQuery(
            cq=CQ(heads[0], frozenset(atoms), "Q", satisfiable),
            aggregates=tuple(aggregates),
            group_by=group_terms,
            sql=released_sql,
            dialect=self.dialect,
            notes=tuple(tr.notes),
            columns={inst.relation: tuple(inst.columns) for inst in instances},
            row_positions=dict(self.row_positions),
            source=tr.source,
            heads=tuple(heads),
            body=CQ(all_vars, frozenset(atoms), "Q", satisfiable),
            opaque_filters=tuple(opaque_filters),
        )

    def _group_by_items(self) -> None:
        """``GROUP BY 1`` and ``GROUP BY alias`` as the SELECT items they name (an alias only
        when no table of FROM has a column of that name: input columns come first)."""
        group = self.tree.args.get("group")
        if group is None:
            return
        resolved = group_keys(self.tree)
        out: list[exp.Expr] = []
        for g, key in zip(group.expressions, resolved, strict=True):
            if g is key or (isinstance(g, exp.Column) and self._is_input_column(g)):
                out.append(g)
            else:
                out.append(key.copy())
        group.set("expressions", out)

    def _is_input_column(self, column: exp.Column) -> bool:
        schema = self.tr.schema
        if schema is None:
            return False
        for table in self.tree.find_all(exp.Table):
            rel = schema.find(table.name)
            if rel is not None and rel.index(column.name) is not None:
                return True
        return False

    def _post_processing(self) -> str:
        """Take ORDER BY, LIMIT, FETCH, TOP and OFFSET off the statement (with a note).

        They choose rows of the released result; the full result is what is
        analysed (and what a witness evaluates).  Returns the SQL of that full result.
        """
        tree = self.tree
        cut = [key for key in ("order", "limit", "offset") if tree.args.get(key) is not None]
        if not cut:  # the statement as written, unless its aggregates were taken apart
            return tree.sql(dialect=self.dialect) if self.split or self.standalone \
                else self.tr.sql
        names = {"order": "ORDER BY", "offset": "OFFSET"}
        shown = [names.get(key) or limit_name(tree.args[key], self.dialect) for key in cut]
        self.tr.notes.append(
            f"{' and '.join(shown)} {'acts' if len(shown) == 1 else 'act'} on the released "
            "result: cqsens analyses the full result (every group), and they must be applied "
            "to the noisy result, because choosing groups by their true values is not private")
        for key in cut:
            tree.set(key, None)
        return tree.sql(dialect=self.dialect)

    def _resolve(self, instances: list[TableInstance], nodes: list[exp.Expr]) -> None:
        """Resolve every column reference first, so that (without a schema) each
        table knows all the columns the query mentions."""
        columns = [col for node in nodes for col in node.find_all(exp.Column)]

        def text_offset(col: exp.Column) -> int:
            meta = getattr(col.this, "_meta", None) or {}
            return int(meta.get("start", 1 << 30))

        for col in sorted(columns, key=text_offset):
            self.refs[id(col)] = self.tr.resolve(col, instances)

    def _name_variables(self, instances: list[TableInstance]) -> None:
        """One variable per column of each table instance (plus ``rest`` without a schema)."""
        rest_names: dict[str, str] = {}
        if self.tr.schema is None:
            for inst in instances:
                if inst.relation not in rest_names:
                    name = _REST
                    while name.lower() in (c.lower() for c in inst.columns):
                        name += "_"  # a real column may be called "rest"
                    rest_names[inst.relation] = name
                    inst.columns.append(name)
        self._row_identities(instances)
        used: dict[str, tuple[str, str]] = {}
        for inst in instances:
            inst.variables = []
            for c in inst.columns:
                name = var_name(inst.alias, c)
                base, n = name, 2
                while name in used and used[name] != (inst.alias.lower(), c.lower()):
                    name = f"{base}_{n}"  # emp.dept_id and emp_dept.id must not meet
                    n += 1
                used[name] = (inst.alias.lower(), c.lower())
                inst.variables.append(Var(name))
            for v in inst.variables:
                self.order.setdefault(v, len(self.order))
        if self.tr.schema is None:
            for inst in {i.relation: i for i in instances}.values():
                hidden = {rest_names[inst.relation]}
                if inst.relation in self.row_positions:
                    hidden.add(inst.columns[self.row_positions[inst.relation]])
                shown = ", ".join(c for c in inst.columns if c not in hidden) or "no column"
                rest = rest_names[inst.relation]
                self.tr.notes.append(
                    f"no schema: table {inst.relation} is read as "
                    f"{inst.relation}({', '.join(inst.columns)}), "
                    f"the columns the query references ({shown}) plus '{rest}' for the others"
                )

    def _row_identities(self, instances: list[TableInstance]) -> None:
        """A hidden row-identity column for every table whose rows may repeat.

        SQL tables are bags: without a primary key (or a UNIQUE key on NOT NULL
        columns) two rows can be equal, and COUNT(*) counts both.  The row
        identity makes each copy its own answer (docs/rules.md, rule bags);
        ``R[col->*]<=k`` bounds the copies.
        """
        schema = self.tr.schema
        counts_rows = any(
            not (isinstance(node, exp.Count) and isinstance(node.this, exp.Distinct))
            for item in self.tree.expressions for node in item.find_all(exp.AggFunc))
        if not counts_rows:
            return  # COUNT(DISTINCT ...) only: copies of a row change nothing
        for inst in instances:
            rel = schema.find(inst.relation) if schema is not None else None
            if rel is not None and rel.distinct_rows:
                continue
            if schema is None and inst.relation in self.row_positions:
                continue  # a table without schema: one column list shared by its instances
            name = ROW_COLUMN
            while name.lower() in (c.lower() for c in inst.columns):
                name += "_"
            inst.columns.append(name)
            self.row_positions[inst.relation] = len(inst.columns) - 1
        joined = len(instances) > 1
        for relation in sorted(self.row_positions):
            if joined:
                self.tr.notes.append(
                    f"table {relation} has no primary key, so its rows may repeat and COUNT(*) "
                    f"counts every copy: declare a PRIMARY KEY, or bound the copies per value "
                    f"with {relation}[column->*]<=k")

    def term_of(self, col: exp.Column) -> Var:
        inst, pos = self.refs[id(col)]
        return inst.variables[pos]

    def final(self, t: Term) -> Term:
        return self.uf.find(t)

    def _unify(self, conjuncts: list[exp.Expr]) -> tuple[bool, list[exp.Expr]]:
        """Merge the terms of ``column = column`` and ``column = literal``; the rest are filters."""
        satisfiable = True
        filters: list[exp.Expr] = []
        for cond in conjuncts:
            if isinstance(cond, exp.EQ):
                merged = self._equality(cond.this, cond.expression)
                if merged is not None:
                    satisfiable &= merged
                    continue
            filters.append(cond)
        return satisfiable, filters

    def _equality(self, left: exp.Expr, right: exp.Expr) -> bool | None:
        lc, rc = literal_const(left), literal_const(right)
        pairs: list[tuple[Term, Term]] = []
        if isinstance(left, exp.Column) and isinstance(right, exp.Column):
            pairs.append((self.term_of(left), self.term_of(right)))
        if isinstance(left, exp.Column) and rc is not None:
            pairs.append((self.term_of(left), rc))
        if isinstance(right, exp.Column) and lc is not None:
            pairs.append((self.term_of(right), lc))
        for a, b in pairs:
            merged = self.uf.union(a, b)
            if merged is not None:
                return merged
        return None

    def slot_reader(self) -> tuple[ExprReader, list[Term], list[str]]:
        """A reader of typed expressions whose columns become slots, and the terms and
        column names (``table.column``) of the slots, filled in order of first use."""
        terms: list[Term] = []
        names: list[str] = []
        index: dict[Term, int] = {}

        def column(col: exp.Column) -> Expr:
            t = self.final(self.term_of(col))
            if t not in index:
                index[t] = len(terms)
                terms.append(t)
                names.append(self.column_name(col))
            return Slot(index[t])

        def reject(node: exp.Expr, construct: str, why: str) -> Exception:
            return self.tr.unsupported(node, construct, why)

        return ExprReader(column, reject), terms, names

    def _filter_atom(self, cond: exp.Expr) -> Atom:
        """The typed filter atom of one conjunct: its terms in order of first use."""
        reader, terms, _ = self.slot_reader()
        predicate = reader.predicate(cond)
        return Atom.filter(predicate, terms)

    def _repeats_group_key(self, node: exp.Expr, group_terms: tuple[Term, ...]) -> bool:
        """A SELECT item without aggregate that reads only group columns (``o_year``)."""
        if isinstance(node, exp.Column):
            return self.final(self.term_of(node)) in group_terms
        if aggregates_in(node) is not None or any(True for _ in node.find_all(exp.AggFunc)):
            return False
        columns = list(node.find_all(exp.Column))
        return bool(columns) and all(self.final(self.term_of(c)) in group_terms for c in columns)

    def _group_terms(self, group: exp.Group | None) -> tuple[Term, ...]:
        """The group key's terms; an expression is grouped by the columns it reads.

        Grouping by the columns an expression reads (``o_orderdate`` for
        ``EXTRACT(YEAR FROM o_orderdate)``) gives groups that each lie inside one
        group of the expression: every expression group is a union of column
        groups.  The histogram and value-aggregate rules bound the change of the
        released vector through Δ, the number of counted rows one tuple adds or
        removes, which does not depend on the grouping: the ℓ1 change of a union
        of groups is at most the sum of theirs (triangle inequality), at most Δ
        groups are touched either way, and a COUNT(DISTINCT c) gains no more
        distinct (expression, c) pairs than (columns, c) pairs.  So the bounds
        hold for the expression's groups (docs/rules.md, rule group-by-expression).
        """
        if group is None:
            return ()
        special = [g for g in group.expressions
                   if isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets))]
        if special or group.args.get("rollup") or group.args.get("cube"):
            raise self.tr.unsupported(special[0] if special else group,
                                      "ROLLUP / CUBE / GROUPING SETS here",
                                      "cqsens reads them in the outermost SELECT only")
        out: list[Term] = []
        keys, constants = drop_constant_keys(list(group.expressions))
        if constants:
            self.tr.notes.append(constant_keys_note(constants, self.dialect))
        for g in keys:
            if isinstance(g, exp.Column):
                out.append(self.final(self.term_of(g)))
                continue
            columns = list(g.find_all(exp.Column))
            if any(True for _ in g.find_all(exp.AggFunc, exp.Window, exp.Select)) or not columns:
                raise self.tr.unsupported(g, "GROUP BY expression",
                                          "group by columns or by expressions over columns")
            out.extend(self.final(self.term_of(c)) for c in columns)
            names = ", ".join(dict.fromkeys(self.column_name(c) for c in columns))
            self.tr.notes.append(
                f"GROUP BY {g.sql(dialect=self.dialect)} is analysed as grouping by {names}: "
                "each group of the expression is a union of their groups, and the bounds, "
                "which depend only on how many rows one tuple changes, hold for it")
        return tuple(dict.fromkeys(out))

    def column_name(self, col: exp.Column) -> str:
        """``table.column`` of a column reference."""
        inst, pos = self.refs[id(col)]
        return f"{inst.relation}.{inst.columns[pos]}"

    def _aggregate(
        self, node: exp.Expr, label: str, all_vars: tuple[Var, ...]
    ) -> tuple[Aggregate, tuple[Term, ...]]:
        return aggregate_of(self, node, label, all_vars)

    def _output(self, item: exp.Expr) -> str:
        """The name of the result column of the SELECT item ``item``: its alias, else its
        SQL text."""
        return item.alias if isinstance(item, exp.Alias) else item.sql(dialect=self.dialect)

    def _split_combinations(self) -> None:
        """Replace each arithmetic combination of aggregates in SELECT by its aggregates.

        ``100 * SUM(a) / SUM(b)`` releases SUM(a) and SUM(b), each with its own
        sensitivity; the arithmetic is post-processing of the noisy values.  The
        statement (and so the SQL a witness evaluates) lists the aggregates.
        """
        items: list[exp.Expr] = []
        for item in self.tree.expressions:
            node = item.this if isinstance(item, exp.Alias) else item
            parts = aggregates_in(node)
            if parts is None or parts == [node]:
                items.append(item)
                continue
            name = item.alias if isinstance(item, exp.Alias) else item.sql(dialect=self.dialect)
            plural = "s: each is" if len(parts) > 1 else ": it is"
            self.tr.notes.append(
                f"{name} is arithmetic over {len(parts)} aggregate{plural} released with its "
                "own sensitivity, and the arithmetic is post-processing of the noisy values")
            for part in parts:
                copy = part.copy()
                self.labels[id(copy)] = f"{part.sql(dialect=self.dialect)} (in {name})"
                self.outputs[id(copy)] = part.sql(dialect=self.dialect)
                self.split = True
                items.append(copy)
        self.tree.set("expressions", items)
