"""The SQL a release runs: the user's query split into the aggregates it releases.

``cqsens release`` never runs a SELECT item that combines aggregates: each
aggregate is released on its own with its own noise, and the arithmetic of the
SELECT list is recomputed from the noisy parts (post-processing keeps
differential privacy: Dwork and Roth, The Algorithmic Foundations of
Differential Privacy, 2014, Prop 2.1).  ``AVG(x)`` is released as ``SUM(x)``
and ``COUNT(x)``; a MEDIAN, MIN or MAX is released by the exponential
mechanism over the rows' values, so its rows are read instead of the aggregate.

The plan keeps the user's FROM, WHERE and GROUP BY clauses (so the analysed
query and the run query are the same query) and drops ORDER BY, LIMIT, FETCH,
TOP and OFFSET, which must be applied to the noisy result (see docs/guide/input.md).
sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from cqsens.errors import InputError, UnsupportedQueryError
from cqsens.frontend.column_lists import inline_column_lists
from cqsens.frontend.dates import fold_date_arithmetic
from cqsens.frontend.filters import rewrite_filters
from cqsens.frontend.post_processing import split_post_processing
from cqsens.frontend.select_items import aggregates_in, is_aggregate
from cqsens.frontend.variance import rewrite_variance
from cqsens.ir.schema import Schema

__all__ = ["Formula", "Item", "Part", "PostPlan", "ReleasePlan", "distinct_values_sql",
           "release_plan"]

#: aggregate kinds released by adding noise to a number
NOISY_KINDS = ("count", "count_distinct", "sum")
#: aggregate kinds released by the exponential mechanism over the rows' values
QUANTILE_KINDS = {"median": 0.5, "min": 0.0, "max": 1.0}


@dataclass(frozen=True, slots=True)
class Formula:
    """Arithmetic over released parts: ``op`` is ``part``, ``num``, ``null``, ``neg``,
    ``abs``, ``sqrt``, ``round``, ``clamp``, ``+``, ``-``, ``*`` or ``/``; ``value`` is a
    part index,
    a number, the digits of ``round``, or for ``clamp`` the part whose value range
    bounds the result (an AVG's SUM)."""

    op: str
    args: tuple[Formula, ...] = ()
    value: float | int | None = None


@dataclass(frozen=True, slots=True)
class PostPlan:
    """The statement's post-processing, run on the noisy values in SQLite in memory.

    ``sql`` reads the table ``released(k0…, a0…)``: one row per released group, the
    group key's values in ``k0…`` and in ``a0…`` the value of each aggregate of the
    statement (``inputs``, formulas over the noisy parts).  It returns the key columns,
    then one column per item (``labels``); ``parts[n]`` is the part an item is, when it
    is one part alone (its half-width is shown).
    """

    sql: str
    inputs: tuple[Formula, ...]
    labels: tuple[str, ...]
    parts: tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class Part:
    """One released aggregate: its kind, its SQL call and, for a quantile, its argument."""

    kind: str
    sql: str
    argument: str | None = None

    @property
    def integer(self) -> bool:
        """Whether the released value is an integer (a count)."""
        return self.kind in ("count", "count_distinct")


@dataclass(frozen=True, slots=True)
class Item:
    """One released SELECT item: its label and the formula over the parts."""

    label: str
    formula: Formula


@dataclass(frozen=True, slots=True)
class ReleasePlan:
    """What a release runs and how it recombines the noisy parts.

    Attributes
    ----------
    keys : tuple of str
        The names of the group key's columns, in GROUP BY order.
    key_tables : tuple of (str or None)
        For each key that is a plain column, ``(table, column)`` as written in
        the query's FROM clause; None for an expression.
    parts : tuple of Part
        The aggregates released, each once.
    items : tuple of Item
        The SELECT items that are released (group keys excluded).
    analysed_sql : str
        ``SELECT keys, parts FROM … GROUP BY …`` in the user's dialect: the
        query whose sensitivity calibrates the noise.
    tables : tuple of str
        Every table the query reads (subqueries and derived tables included,
        common table expressions excluded).
    post : PostPlan or None
        HAVING, window functions, ORDER BY and LIMIT, computed on the noisy
        values (post-processing); None when the statement has none.
    """

    keys: tuple[str, ...]
    key_tables: tuple[tuple[str, str] | None, ...]
    parts: tuple[Part, ...]
    items: tuple[Item, ...]
    analysed_sql: str
    dialect: str | None
    _tree: exp.Select
    _keys: tuple[exp.Expr, ...]
    tables: tuple[str, ...] = ()
    post: PostPlan | None = None

    def parts_sql(self, dialect: str, clamps: Mapping[int, tuple[str, str]] | None = None) -> str:
        """``SELECT keys…, noisy parts… FROM … GROUP BY …`` in ``dialect``; the argument of
        each part in ``clamps`` (index → low, high as SQL digits) is clamped to its range."""
        noisy = [self._clamped(i, (clamps or {}).get(i), dialect)
                 for i, p in enumerate(self.parts) if p.kind in NOISY_KINDS]
        tree = self._tree.copy()
        tree.set("expressions", [k.copy() for k in self._keys] + noisy)
        return _strip(tree).sql(dialect=dialect)

    def domain_sql(self, dialect: str) -> str:
        """``SELECT DISTINCT keys FROM table``, when every key is a column of one table."""
        tables = {kt[0] for kt in self.key_tables if kt is not None}
        assert len(tables) == 1 and all(kt is not None for kt in self.key_tables)
        columns = [exp.column(kt[1]) for kt in self.key_tables if kt is not None]
        return exp.select(*columns).distinct().from_(exp.to_table(tables.pop())) \
            .sql(dialect=dialect)

    def count_sql(self, dialect: str | None) -> str:
        """``SELECT keys…, COUNT(*) FROM … GROUP BY …``: the rows of each group."""
        tree = self._tree.copy()
        tree.set("expressions", [k.copy() for k in self._keys] + [exp.Count(this=exp.Star())])
        return _strip(tree).sql(dialect=dialect)

    def rows_sql(self, index: int, dialect: str, clamp: tuple[str, str] | None = None) -> str:
        """``SELECT keys…, argument FROM … WHERE …``: the values of quantile part ``index``
        (clamped to ``clamp``, low and high as SQL digits)."""
        part = self.parts[index]
        assert part.argument is not None
        tree = self._tree.copy()
        keys = [_unalias(k) for k in self._keys]
        argument = sqlglot.parse_one(part.argument, read=self.dialect)
        tree.set("expressions", keys + [_clamp(argument, clamp, dialect) if clamp else argument])
        tree.set("group", None)
        tree.set("having", None)
        return _strip(tree).sql(dialect=dialect)


    def _clamped(self, index: int, clamp: tuple[str, str] | None, dialect: str) -> exp.Expr:
        """Part ``index``'s call, its argument clamped to ``clamp`` (SUM's, or each of
        SUM(DISTINCT …)'s)."""
        node = sqlglot.parse_one(self.parts[index].sql, read=self.dialect)
        if clamp is None or not isinstance(node, exp.Sum):
            return node
        inner = node.this
        if isinstance(inner, exp.Distinct):
            inner.set("expressions", [_clamp(e, clamp, dialect) for e in inner.expressions])
        else:
            node.set("this", _clamp(inner, clamp, dialect))
        return node


def _clamp(value: exp.Expr, clamp: tuple[str, str], dialect: str | None) -> exp.Expr:
    """``CASE WHEN v < low THEN low WHEN v > high THEN high ELSE v END``: NULL stays NULL
    (unlike GREATEST/LEAST in some dialects), a value inside the range is unchanged.  In
    SQLite the tests read ``v + 0``, the number SUM reads: a TEXT column compares its text
    ``'1000000'`` below ``120``, and SUM would still add a million."""
    low, high = (exp.Literal.number(c) for c in clamp)

    def tested() -> exp.Expr:
        v = exp.paren(value.copy())
        return exp.paren(exp.Add(this=v, expression=exp.Literal.number(0))) \
            if dialect == "sqlite" else v

    return exp.Case(ifs=[exp.If(this=exp.LT(this=tested(), expression=low), true=low.copy()),
                         exp.If(this=exp.GT(this=tested(), expression=high), true=high.copy())],
                    default=exp.paren(value.copy()))


def _strip(tree: exp.Select) -> exp.Select:
    inline_column_lists(tree)
    for arg in ("order", "limit", "offset", "fetch"):
        tree.set(arg, None)
    tree.set("top", None) if "top" in tree.args else None
    return tree


def _unalias(node: exp.Expr) -> exp.Expr:
    return node.this.copy() if isinstance(node, exp.Alias) else node.copy()


class _Builder:
    def __init__(self, dialect: str | None, source: str) -> None:
        self.dialect = dialect
        self.source = source
        self.parts: list[Part] = []

    def part(self, kind: str, node: exp.Expr, argument: exp.Expr | None = None) -> Formula:
        text = node.sql(dialect=self.dialect)
        arg = argument.sql(dialect=self.dialect) if argument is not None else None
        for i, p in enumerate(self.parts):
            if p.kind == kind and p.sql == text:
                return Formula("part", value=i)
        self.parts.append(Part(kind, text, arg))
        return Formula("part", value=len(self.parts) - 1)

    def aggregate(self, node: exp.Expr) -> Formula:
        if isinstance(node, exp.WithinGroup):  # PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY x)
            order = node.expression
            ordered = order.expressions[0] if isinstance(order, exp.Order) else order
            column = ordered.this if isinstance(ordered, exp.Ordered) else ordered
            return self.part("median", node, column)
        if isinstance(node, exp.Count):
            inner = node.this
            return self.part("count_distinct" if isinstance(inner, exp.Distinct) else "count",
                             node)
        if isinstance(node, exp.Avg):
            arg = node.this
            if isinstance(arg, exp.Distinct):
                raise UnsupportedQueryError(
                    "AVG(DISTINCT …) is not released: release SUM(DISTINCT …) and "
                    "COUNT(DISTINCT …) instead", source=self.source, construct="AVG(DISTINCT)")
            total = self.part("sum", exp.Sum(this=arg.copy()))
            count = self.part("count", exp.Count(this=arg.copy()))
            # an average lies in its values' range: the noisy ratio is clamped to it
            return Formula("clamp", (Formula("/", (total, count)),), value=total.value)
        if isinstance(node, exp.Sum):
            return self.part("sum", node)
        for cls, kind in ((exp.Median, "median"), (exp.Min, "min"), (exp.Max, "max")):
            if isinstance(node, cls):
                return self.part(kind, node, node.this)
        raise UnsupportedQueryError(f"{node.sql(dialect=self.dialect)} cannot be released",
                                    source=self.source, construct=node.key.upper())

    def formula(self, node: exp.Expr) -> Formula:
        if is_aggregate(node):
            return self.aggregate(node)
        if isinstance(node, (exp.Paren, exp.Cast)):
            return self.formula(node.this)
        if isinstance(node, exp.Neg):
            return Formula("neg", (self.formula(node.this),))
        if isinstance(node, exp.Abs):
            return Formula("abs", (self.formula(node.this),))
        if isinstance(node, exp.Sqrt):  # a standard deviation (frontend/variance.py)
            return Formula("sqrt", (self.formula(node.this),))
        if isinstance(node, exp.Round):
            digits = node.args.get("decimals")
            return Formula("round", (self.formula(node.this),),
                           value=int(digits.name) if isinstance(digits, exp.Literal) else 0)
        if isinstance(node, exp.Null):
            return Formula("null")
        if isinstance(node, exp.Literal) and not node.is_string:
            text = node.name
            return Formula("num", value=int(text) if text.lstrip("-").isdigit() else float(text))
        ops = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/"}
        for cls, op in ops.items():
            if isinstance(node, cls):
                return Formula(op, (self.formula(node.this), self.formula(node.expression)))
        raise UnsupportedQueryError(
            f"{node.sql(dialect=self.dialect)} cannot be recomputed from noisy aggregates",
            source=self.source, construct=node.key.upper())


def _name(node: exp.Expr, dialect: str | None) -> str:
    if isinstance(node, exp.Alias):
        return node.alias
    if isinstance(node, exp.Column):
        return node.name
    return node.sql(dialect=dialect)


def _key_items(tree: exp.Select, dialect: str | None) -> list[exp.Expr]:
    """The group key's expressions, with the alias of the SELECT item that repeats each."""
    group = tree.args.get("group")
    if group is None:
        return []
    items = list(tree.expressions)
    aliases = {i.alias.lower(): i for i in items if isinstance(i, exp.Alias)}
    out: list[exp.Expr] = []
    for g in group.expressions:
        if isinstance(g, exp.Literal) and g.is_int and 1 <= int(g.name) <= len(items):
            out.append(items[int(g.name) - 1].copy())
        elif isinstance(g, exp.Column) and not g.table and g.name.lower() in aliases:
            out.append(aliases[g.name.lower()].copy())
        else:
            same = [i for i in items if _unalias(i) == g]
            out.append(same[0].copy() if same else g.copy())
    return out


def _tables(tree: exp.Select) -> dict[str, str]:
    """Alias (or name), lower case → table name, for the tables of the FROM clause."""
    from_ = tree.args.get("from_") or tree.args.get("from")
    item = from_.this if from_ is not None and not from_.expressions else None
    if isinstance(item, exp.Subquery) and item.alias and not tree.args.get("joins") \
            and isinstance(item.this, exp.Select) and item.this.args.get("group"):
        # one grouping derived table (rule person-groups): its columns are its own
        return {item.alias.lower(): item.alias}
    out: dict[str, str] = {}
    for table in tree.find_all(exp.Table):
        out[(table.alias_or_name or table.name).lower()] = table.name
    return out


def _key_table(key: exp.Expr, tables: dict[str, str], schema: Schema | None
               ) -> tuple[str, str] | None:
    """The (table, column) a group key reads, when it is a column of one known table."""
    if not isinstance(key, exp.Column):
        return None
    if key.table:
        table = tables.get(key.table.lower())
        return (table, key.name) if table is not None else None
    if len(tables) == 1:
        return next(iter(tables.values())), key.name
    having = {t for t in tables.values()
              if schema is not None and (rel := schema.find(t)) is not None
              and rel.index(key.name) is not None}
    return (having.pop(), key.name) if len(having) == 1 else None


def release_plan(sql: str, dialect: str | None, *, source: str = "<sql>",
                 schema: Schema | None = None) -> ReleasePlan:
    """Split ``sql`` (one SELECT the analysis accepted) into its released parts.

    Parameters
    ----------
    sql : str
        The user's query.
    dialect : str or None
        Its sqlglot dialect.
    source : str
        The file name for messages.
    schema : Schema, optional
        Names the table of an unqualified group column of a join (the one table of the
        FROM clause that has it), so that its declared keys are found.

    Returns
    -------
    ReleasePlan

    Raises
    ------
    InputError
        A SELECT item that cannot be recomputed from noisy aggregates.

    Examples
    --------
    >>> p = release_plan("SELECT sex, 100 * SUM(age) / COUNT(*) AS r FROM Pat GROUP BY sex", None)
    >>> p.keys, [q.kind for q in p.parts], p.items[0].label
    (('sex',), ['sum', 'count'], 'r')
    >>> p.parts_sql("sqlite")
    'SELECT sex, SUM(age), COUNT(*) FROM Pat GROUP BY sex'
    """
    try:
        tree = fold_date_arithmetic(sqlglot.parse_one(sql, read=dialect))
    except SqlglotError as exc:
        raise InputError(f"the query does not parse: {exc}", source=source,
                         construct="SQL") from None
    tree = rewrite_filters(tree, source=source, dialect=dialect)  # as the analysis reads it
    tree = rewrite_variance(tree, source=source, dialect=dialect)
    if isinstance(tree, exp.SetOperation):
        raise UnsupportedQueryError(
            f"a top-level {tree.key.upper()} is analysed but not released yet: release each "
            "branch as its own query (their ε add up under basic composition)", source=source,
            construct=tree.key.upper())
    if not isinstance(tree, exp.Select):
        raise UnsupportedQueryError("a release runs one SELECT", source=source,
                                    construct=tree.key.upper())
    group = tree.args.get("group")
    if group is not None and (
            any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets"))
            or any(isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets))
                   for g in group.expressions)):
        raise UnsupportedQueryError(
            "GROUP BY ROLLUP, CUBE and GROUPING SETS are analysed but not released yet: "
            "release each grouping set as its own GROUP BY query (their ε add up)",
            source=source, construct="GROUP BY")
    original = tree.copy()

    def reject(node: exp.Expr, construct: str, why: str) -> Exception:
        return UnsupportedQueryError(f"{construct} cannot be released: {why}", source=source,
                                     construct=construct)

    post = split_post_processing(tree, dialect, reject)
    builder = _Builder(dialect, source)
    keys = _key_items(tree, dialect)
    key_exprs = {_unalias(k) for k in keys}
    items: list[Item] = []
    for node in tree.expressions:
        inner = _unalias(node)
        if _shown_with_key(inner, keys, key_exprs, dialect):
            continue  # the group key, shown with every group
        items.append(Item(_name(node, dialect), builder.formula(inner)))
    cut = any(original.args.get(k) is not None for k in ("order", "limit", "offset"))
    post_plan = (_post_plan(original, builder, keys, key_exprs, dialect)
                 if post.having or post.windows or cut else None)
    tables = _tables(tree)
    key_tables = [_key_table(_unalias(k), tables, schema) for k in keys]
    analysed = tree.copy()
    analysed.set("expressions", [k.copy() for k in keys]
                 + [sqlglot.parse_one(p.sql, read=dialect) for p in builder.parts])
    return ReleasePlan(
        keys=tuple(_name(k, dialect) for k in keys), key_tables=tuple(key_tables),
        parts=tuple(builder.parts), items=tuple(items),
        analysed_sql=_strip(analysed).sql(dialect=dialect), dialect=dialect,
        _tree=tree, _keys=tuple(keys), tables=_read_tables(tree), post=post_plan)


def _read_tables(tree: exp.Expr) -> tuple[str, ...]:
    """The tables ``tree`` reads, without the names its WITH clauses define."""
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    names = {t.name for t in tree.find_all(exp.Table) if t.name.lower() not in ctes}
    return tuple(sorted(names, key=str.lower))


def distinct_values_sql(table: str, column: str, dialect: str) -> str:
    """``SELECT DISTINCT "column" FROM "table"`` in ``dialect`` (names quoted).

    >>> distinct_values_sql("Hos", "id", "sqlite")
    'SELECT DISTINCT "id" FROM "Hos"'
    """
    return exp.select(exp.column(exp.to_identifier(column, quoted=True))).distinct() \
        .from_(exp.table_(exp.to_identifier(table, quoted=True))).sql(dialect=dialect)


def _shown_with_key(inner: exp.Expr, keys: list[exp.Expr], key_exprs: set[exp.Expr],
                    dialect: str | None) -> bool:
    """A SELECT item without aggregate that repeats the group key (or a constant)."""
    if aggregates_in(inner) is not None or any(True for _ in inner.find_all(exp.AggFunc)):
        return False
    if any(True for _ in inner.find_all(exp.Window)):
        return False
    names = {_name(k, dialect).lower() for k in keys}
    return inner in key_exprs or all(c in key_exprs or c.name.lower() in names
                                     for c in inner.find_all(exp.Column))


def _post_plan(original: exp.Select, builder: _Builder, keys: list[exp.Expr],
               key_exprs: set[exp.Expr], dialect: str | None) -> PostPlan:
    """The statement as a query over ``released``: aggregates and keys replaced by columns."""
    tree = original.copy()
    inputs: list[Formula] = []
    index: dict[str, int] = {}
    unaliased = [_unalias(k) for k in keys]

    def column_of(node: exp.Expr) -> exp.Expr:
        if is_aggregate(node):  # a window's own function never reaches here (replace)
            text = node.sql(dialect=dialect)
            if text not in index:
                index[text] = len(inputs)
                inputs.append(builder.formula(node))
            return exp.column(f"a{index[text]}")
        for n, key in enumerate(unaliased):
            if node == key or (isinstance(node, exp.Column) and isinstance(key, exp.Column)
                               and node.name.lower() == key.name.lower()):
                return exp.column(f"k{n}")
        return node

    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Window):
            function = node.this
            inner = function.copy().transform(  # the function's arguments, not itself
                lambda n: n if n.parent is None else column_of(n))
            node = node.copy()
            node.set("this", inner)
            partition = node.args.get("partition_by")
            if partition:
                node.set("partition_by", [e.transform(column_of) for e in partition])
            if node.args.get("order") is not None:
                node.set("order", node.args["order"].transform(column_of))
            return node
        return column_of(node)

    labels: list[str] = []
    parts: list[int | None] = []
    selected: list[exp.Expr] = [exp.alias_(exp.column(f"k{n}"), _name(k, dialect))
                                for n, k in enumerate(keys)]
    position: dict[int, int] = {}  # an item's 1-based position → its column in the result
    for number, item in enumerate(tree.expressions, start=1):
        inner = _unalias(item)
        if _shown_with_key(inner, keys, key_exprs, dialect):
            same = [n for n, k in enumerate(unaliased) if inner == k
                    or isinstance(inner, exp.Column) and isinstance(k, exp.Column)
                    and inner.name.lower() == k.name.lower()]
            if same:
                position[number] = same[0] + 1
            continue
        position[number] = len(selected) + 1
        labels.append(_name(item, dialect))
        formula = builder.formula(inner) if not any(True for _ in inner.find_all(exp.Window)) \
            else None
        parts.append(int(formula.value or 0) if formula is not None and formula.op == "part"
                     else None)
        new = item.transform(replace)
        selected.append(new)
    tree.set("expressions", selected)
    for key in ("from", "from_", "joins", "where", "group", "with", "with_"):
        if key in exp.Select.arg_types:
            tree.set(key, None)
    tree = tree.from_("released", copy=False)
    having = original.args.get("having")
    if having is not None:
        tree.set("having", None)
        tree.set("where", exp.Where(this=having.this.transform(replace)))
    order = tree.args.get("order")
    if order is not None:
        shifted = []
        for o in order.expressions:
            target = o.this
            if isinstance(target, exp.Literal) and target.is_int \
                    and int(target.name) in position:
                o = o.copy()
                o.set("this", exp.Literal.number(position[int(target.name)]))
            else:
                o = o.transform(replace)
            shifted.append(o)
        order.set("expressions", shifted)
    return PostPlan(tree.sql(dialect="sqlite"), tuple(inputs), tuple(labels), tuple(parts))
