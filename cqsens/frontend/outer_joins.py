"""Split a COUNT or SUM over ``LEFT`` / ``RIGHT`` / ``FULL JOIN`` into conjunctive counts.

A row ``c`` of the preserved side appears ``max(1, m(c))`` times in ``C LEFT JOIN B
ON θ``, where ``m(c)`` is its number of matches in ``B``; and ``max(1, m) = m + 1 −
[m ≥ 1]``.  So the count is a signed sum of three monotone counts: the inner
join ``C ⋈θ B``, the preserved side ``C`` alone, and the semi-join ``C ⋉θ B``
(``EXISTS``).  Several LEFT JOINs expand term by term; a join whose ON condition
rejects the NULLs of a padded table adds nothing to the terms where that table
is padded.  A WHERE condition that rejects NULLs of a null-supplying table makes
its join an inner join; any other condition on it (``IS NULL``: an anti-join,
negation) is rejected.  The aggregates (COUNT, SUM) are sums over the rows, so
the released values are signed sums of the terms' values, and their change is at
most the sum of the terms' changes (docs/rules.md, rule outer-joins).

``A RIGHT JOIN B`` is ``B LEFT JOIN A`` (as the only join); ``A FULL JOIN B ON θ``
(the only join, no WHERE) counts ``|A ⋈ B| + |A| − |A ⋉ B| + |B| − |B ⋉ A|``.
sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from cqsens.frontend.null_side import Folder, Term, no_row, null_side_note, strict_columns
from cqsens.frontend.outer_ctes import plain_ctes, tables_read
from cqsens.frontend.select_items import is_aggregate
from cqsens.frontend.set_operations import SetSplit
from cqsens.frontend.sql_expr import conjuncts
from cqsens.ir.schema import Schema

__all__ = ["MAX_OUTER_JOINS", "split_outer_joins"]

Reject = Callable[[exp.Expr, str, str], Exception]
MAX_OUTER_JOINS = 3
"""The most LEFT JOINs one query may have (they make up to 3^3 = 27 conjunctive counts)."""

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In,
                exp.Like, exp.ILike)
_STRICT = (exp.Column, exp.Paren, exp.Cast, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Neg)


@dataclass
class _Outer:
    table: exp.Table
    on: list[exp.Expr]

    @property
    def alias(self) -> str:
        return self.table.alias_or_name.lower()


class _Splitter:
    def __init__(self, tree: exp.Select, reject: Reject, schema: Schema | None) -> None:
        self.tree = tree
        self.reject = reject
        self.schema = schema
        from_ = tree.args.get("from_") or tree.args.get("from")
        assert isinstance(from_, exp.From)
        self.tables: list[exp.Table] = []
        for item in [from_.this, *from_.expressions, *(j.this for j in tree.args["joins"])]:
            if not isinstance(item, exp.Table):
                raise reject(item, "outer join with a derived table",
                             "join base tables with LEFT JOIN")
            self.tables.append(item)
        root = tree.root()
        self.ctes = {c.alias_or_name.lower() for c in root.find_all(exp.CTE)}

    def owners(self, node: exp.Expr) -> set[str]:
        """The aliases of the tables whose columns ``node`` reads."""
        out: set[str] = set()
        for col in node.find_all(exp.Column):
            if col.table:
                out.add(col.table.lower())
                continue
            found = [t.alias_or_name.lower() for t in self.tables
                     if self.schema is not None and (rel := self.schema.find(t.name)) is not None
                     and rel.index(col.name) is not None]
            out.update(found or (t.alias_or_name.lower() for t in self.tables))
        return out

    def not_null(self, alias: str, column: str) -> bool:
        """Whether the schema table behind ``alias`` (not a WITH table of that name)
        declares ``column`` NOT NULL or in its PRIMARY KEY."""
        table = next((t for t in self.tables if t.alias_or_name.lower() == alias), None)
        if table is None or self.schema is None or table.name.lower() in self.ctes:
            return False
        rel = self.schema.find(table.name)
        index = rel.index(column) if rel is not None else None
        return rel is not None and index is not None and not rel.nullable(index)

    def rejects_nulls(self, cond: exp.Expr, alias: str) -> bool:
        """Whether ``cond`` is false or unknown when the columns of ``alias`` are NULL."""
        if isinstance(cond, exp.Not) and isinstance(cond.this, exp.Is):
            return self._strict(cond.this.this, alias)
        if not isinstance(cond, _COMPARISONS):
            return False
        operands = [cond.this, *(v for k, v in cond.args.items()
                                 if k != "this" and isinstance(v, exp.Expr))]
        return any(self._strict(o, alias) for o in operands)

    def _strict(self, node: exp.Expr, alias: str) -> bool:
        """An expression that is NULL when a column of ``alias`` it reads is NULL."""
        if isinstance(node, exp.Column):
            return alias in self.owners(node)
        if isinstance(node, _STRICT):
            return any(self._strict(c, alias) for c in node.args.values()
                       if isinstance(c, exp.Expr))
        return False


def _join_parts(tree: exp.Select, reject: Reject,
                schema: Schema | None) -> tuple[list[exp.Expr], list[_Outer], str] | None:
    """(inner joins, LEFT JOINs in order, operator) after RIGHT/FULL are rewritten."""
    joins = list(tree.args.get("joins") or [])
    sides = [(j.args.get("side") or "").upper() for j in joins]
    if not any(sides):
        return None
    operator = " / ".join(dict.fromkeys(f"{s} JOIN" for s in sides if s))
    inner: list[exp.Expr] = []
    outer: list[_Outer] = []
    for join, side in zip(joins, sides, strict=True):
        if side and (join.args.get("using") or (join.args.get("method") or "").upper()
                     == "NATURAL"):
            raise reject(join, f"{side} JOIN ... USING", "write the join condition with ON")
        if side == "RIGHT" and len(joins) != 1:
            raise reject(join, "RIGHT JOIN beside other joins",
                         "write it as a LEFT JOIN, with the preserved table first")
        if side == "FULL" and (len(joins) != 1 or tree.args.get("where") is not None):
            raise reject(join, "FULL JOIN beside other joins or a WHERE",
                         "cqsens reads FULL JOIN between two tables with an ON condition only")
        if not side:
            inner.append(join)
            continue
        if not isinstance(join.this, exp.Table):
            raise reject(join.this, f"{side} JOIN of a derived table",
                         "join base tables with LEFT JOIN")
        on = join.args.get("on")
        outer.append(_Outer(join.this, conjuncts(on) if on is not None else []))
    return inner, outer, operator


def _aggregates_read_core(tree: exp.Select, splitter: _Splitter, padded: set[str],
                          reject: Reject, operator: str) -> None:
    group = tree.args.get("group")
    nodes = [*tree.expressions, *(group.expressions if group is not None else [])]
    for node in nodes:
        for agg in node.find_all(exp.AggFunc, exp.WithinGroup):
            if not is_aggregate(agg):
                continue
            star = isinstance(agg, exp.Count) and (
                agg.this is None or isinstance(agg.this, (exp.Star, exp.Literal)))
            if not star and not isinstance(agg, (exp.Count, exp.Sum)) or isinstance(
                    agg.this, exp.Distinct):
                raise reject(agg, f"{agg.sql()} over {operator}",
                             "only COUNT and SUM, sums over the rows, are read over an outer "
                             "join")
    having = tree.args.get("having")
    for node in [*tree.expressions, *(group.expressions if group is not None else []),
                 *([having] if having is not None else [])]:
        for col in node.find_all(exp.Column):
            if not splitter.owners(col) & padded:
                continue
            agg = col.find_ancestor(exp.AggFunc, exp.Select)
            if (node.parent is not tree or node is having or not isinstance(agg, exp.AggFunc)
                    or col.find_ancestor(exp.Subquery, exp.Exists) is not None):
                raise reject(node, f"a column of the null-supplying side of {operator}",
                             "group by the preserved tables' columns and read the others "
                             "inside COUNT or SUM (they are NULL in the unmatched rows)")


def _build(tree: exp.Select, core_where: list[exp.Expr], outer: list[_Outer],
           present: tuple[int, ...], semi: tuple[int, ...]) -> exp.Select:
    part = tree.copy()
    joins = [j for j in part.args.get("joins") or [] if not j.args.get("side")]
    for j in present:
        on = exp.and_(*[c.copy() for c in outer[j].on]) if outer[j].on else None
        joins.append(exp.Join(this=outer[j].table.copy(), on=on))
    part.set("joins", joins or None)
    where = [c.copy() for c in core_where]
    for j in semi:
        inner = exp.select("1").from_(outer[j].table.copy())
        if outer[j].on:
            inner = inner.where(exp.and_(*[c.copy() for c in outer[j].on]))
        where.append(exp.Exists(this=inner))
    part.set("where", exp.Where(this=exp.and_(*where)) if where else None)
    return part


def split_outer_joins(tree: exp.Select, reject: Reject, dialect: str | None,
                      schema: Schema | None) -> SetSplit | None:
    """The conjunctive counts whose signed sum a query over outer joins releases, or None
    without LEFT, RIGHT or FULL JOIN (docs/rules.md, rule outer-joins).

    The parameters are those of :func:`cqsens.frontend.plan.build_plan`; ``tree`` is not changed.
    """
    found = _join_parts(tree, reject, schema)
    if found is None:
        return None
    tree = tree.copy()
    whole = tree.copy()
    for key in ("order", "limit", "offset"):
        tree.set(key, None)
        whole.set(key, None)
    side = (tree.args["joins"][0].args.get("side") or "").upper()
    from_ = tree.args.get("from_") or tree.args.get("from")
    assert isinstance(from_, exp.From)
    left = from_.this
    right = tree.args["joins"][0].this
    swapped = _swapped(tree, left, right)  # B LEFT JOIN A: the rows of B, for RIGHT and FULL
    operator = found[2]
    if side == "RIGHT":
        tree = swapped.copy()
    parts_found = _join_parts(tree, reject, schema)
    assert parts_found is not None
    inner, outer = parts_found[0], parts_found[1]
    splitter = _Splitter(tree, reject, schema)
    where = tree.args.get("where")
    pending = [c for c in (conjuncts(where.this) if where is not None else [])]
    pending += [c for j in inner for c in (conjuncts(j.args["on"]) if j.args.get("on")
                                           is not None else [])]
    for j in inner:
        j.set("on", None)
    _make_inner(tree, outer, pending, splitter)
    padded = {o.alias for o in outer}
    _check_where(pending, splitter, padded, reject, operator)
    if not outer:
        return _inner_only(whole, tree, pending, dialect, operator)
    if len(outer) > MAX_OUTER_JOINS:
        raise reject(outer[MAX_OUTER_JOINS].table, f"more than {MAX_OUTER_JOINS} outer joins",
                     f"cqsens expands at most {MAX_OUTER_JOINS} LEFT JOINs")
    both = {left.alias_or_name.lower()} if side == "FULL" else set()
    _aggregates_read_core(tree, splitter, padded | both, reject, operator)
    _check_on_chain(outer, splitter, reject, operator)
    # a WITH table may shadow a schema table (its keys and CHECKs are not the table's) or
    # not grow with its tables: only plain ones keep the refinements (frontend/outer_ctes.py)
    ctes = plain_ctes(whole, schema)
    plain = ctes is not None
    reads = _null_side_reads(tree, pending, splitter, padded)
    keyed = [n for n, o in enumerate(outer)
             if plain and o.alias not in reads and _at_most_one_match(o, splitter, schema)]
    terms = _cancel_keyed(_terms(outer, splitter), keyed)
    built = [(_term_part(tree, pending, outer, term, splitter, bool(reads), reject, operator),
              (-1) ** len(term[1]), _describe(outer, term[0], term[1])) for term in terms]
    if side == "FULL":  # the rows of the right table that match nothing
        assert isinstance(left, exp.Table)
        back = [_Outer(left.copy(), outer[0].on)]
        fold = bool(_null_side_reads(tree, [], splitter, {back[0].alias}))
        built += [(_term_part(swapped, [], back, ((), semi, frozenset({0})), splitter, fold,
                              reject, operator), sign, name) for semi, sign, name in (
            ((), 1, f"{right.alias_or_name} alone"),
            ((0,), -1, f"{right.alias_or_name} ⋉ {left.alias_or_name}"))]
    if reads and built[0][0] is None:
        _check_dropped(terms, [p is not None for p, _, _ in built], outer, reject, operator)
    kept = [(p, sign, name) for p, sign, name in built if p is not None] or [
        (no_row(tree), 1, "no row")]
    parts = [p for p, _, _ in kept if p is not None]
    signs = [sign for _, sign, _ in kept]
    names = [name for _, _, name in kept]
    notes = [_signed_sum_note(operator, len(parts))]
    if reads:
        notes.append(null_side_note(", ".join(o.table.alias_or_name for o in outer
                                              if o.alias in reads), len(built) - len(parts)))
    if keyed:
        notes.append(_keyed_note(", ".join(outer[n].table.alias_or_name for n in keyed)))
    monotone = plain and not reads and _monotone(tree, splitter, schema)
    if monotone:
        notes.append("counts and non-negative sums over outer joins only grow when rows are "
                     "added: under add-remove only the added terms' bounds count "
                     "(docs/rules.md, rule outer-joins)")
    one = side != "FULL" and ctes is not None and _one_preserved_table(tree, outer, ctes)
    signed = (not monotone and plain and one and not reads
              and _monotone(tree, splitter, schema, signed=True))
    if signed:
        notes.append("one table LEFT JOINed to another: a preserved row counts max(1, m) "
                     "times, which moves with m and by no more, so under add-remove the "
                     "signed values change by at most the larger of the inner join's and the "
                     "preserved table's bounds (docs/rules.md, rule outer-joins)")
    split = SetSplit("sum", operator, parts, [False] * len(parts), whole.sql(dialect=dialect),
                     notes, signs=signs)
    split.names = names
    if monotone:
        split.monotone = "max" if one else "sum"
    elif signed:
        split.monotone = "signed-max"
    return split


def _one_preserved_table(tree: exp.Select, outer: list[_Outer],
                         ctes: dict[str, tuple[str, ...]]) -> bool:
    """One table (or plain WITH table over one table, one row per row) LEFT JOINed to one
    other table or plain WITH table that does not read it, nothing else in FROM."""
    from_ = tree.args.get("from_") or tree.args.get("from")
    if not (isinstance(from_, exp.From) and isinstance(from_.this, exp.Table)
            and not from_.expressions and not tree.args.get("joins") and len(outer) == 1):
        return False
    preserved = tables_read(from_.this, ctes)
    return len(preserved) == 1 and preserved[0] not in tables_read(outer[0].table, ctes)


def _monotone(tree: exp.Select, splitter: _Splitter, schema: Schema | None, *,
              signed: bool = False) -> bool:
    """Whether every released value is a ``COUNT`` or a ``SUM`` of a column that a CHECK
    keeps non-negative (any column when ``signed``), with no HAVING, DISTINCT, window or
    subquery: then each value only grows when a row is added, or (``signed``) is a sum
    of per-row values each weighted by max(1, m) (docs/rules.md, rule outer-joins)."""
    if (tree.args.get("having") is not None or tree.args.get("distinct") is not None
            or any(True for _ in tree.find_all(exp.Subquery, exp.Exists, exp.Window))):
        return False
    for item in tree.expressions:
        node = item.this if isinstance(item, exp.Alias) else item
        if not any(is_aggregate(n) for n in node.find_all(exp.AggFunc, exp.WithinGroup)):
            continue  # a group key
        if isinstance(node, exp.Count):
            continue
        if not (isinstance(node, exp.Sum) and isinstance(node.this, exp.Column)
                and (signed or _non_negative(node.this, splitter, schema))):
            return False
    return True


def _non_negative(col: exp.Column, splitter: _Splitter, schema: Schema | None) -> bool:
    """A column whose CHECK bounds it below by 0."""
    owners = splitter.owners(col)
    tables = {t.alias_or_name.lower(): t.name for t in splitter.tables}
    if schema is None or len(owners) != 1:
        return False
    rel = schema.find(tables.get(next(iter(owners)), ""))
    index = rel.index(col.name) if rel is not None else None
    bound = rel.bound(index) if rel is not None and index is not None else None
    return bound is not None and bound[0] >= 0


def _affinity(declared: str) -> str:
    """SQLite's type affinity of a declared column type (its documented rules)."""
    t = declared.upper()
    if "INT" in t:
        return "integer"
    if any(w in t for w in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if not t or "BLOB" in t:
        return "blob"
    return "real" if any(w in t for w in ("REAL", "FLOA", "DOUB")) else "numeric"


def _type_of(node: exp.Expr, splitter: _Splitter, schema: Schema | None) -> str | None:
    """The affinity of a column or a literal, None when unknown."""
    if isinstance(node, exp.Literal):
        return "text" if node.is_string else "numeric"
    if not isinstance(node, exp.Column) or schema is None:
        return None
    owners = splitter.owners(node)
    tables = {t.alias_or_name.lower(): t.name for t in splitter.tables}
    if len(owners) != 1:
        return None
    rel = schema.find(tables.get(next(iter(owners)), ""))
    index = rel.index(node.name) if rel is not None else None
    if rel is None or index is None or index >= len(rel.types):
        return None
    return _affinity(rel.types[index])


def _at_most_one_match(o: _Outer, splitter: _Splitter, schema: Schema | None) -> bool:
    """Whether ON equates every column of a key of ``o``'s table with a value read from the
    other tables, of the same type affinity (so no conversion makes two keys equal)."""
    rel = schema.find(o.table.name) if schema is not None else None
    if rel is None:
        return False
    bound: set[int] = set()
    for cond in o.on:
        if not isinstance(cond, exp.EQ):
            continue
        for own, other in ((cond.this, cond.expression), (cond.expression, cond.this)):
            index = rel.index(own.name) if isinstance(own, exp.Column) else None
            if (index is None or splitter.owners(own) != {o.alias}
                    or o.alias in splitter.owners(other)):
                continue
            mine, theirs = _type_of(own, splitter, schema), _type_of(other, splitter, schema)
            if mine is not None and (theirs == mine or theirs == "numeric"
                                     and mine in ("integer", "real", "numeric")):
                bound.add(index)
    keys = [set(rel.primary_key), *({k} for k in rel.keys), *(set(k) for k in rel.composite_keys)]
    return any(k and k <= bound for k in keys)


def _cancel_keyed(terms: list[_Term], keyed: list[int]) -> list[_Term]:
    """The terms without the pairs that cancel: for an outer join ``n`` with at most one
    match per row, the term joining ``n`` (every join reading ``n`` padded) equals the
    term with ``EXISTS n`` in its place, with the opposite sign."""
    out = list(terms)
    for n in keyed:
        for term in list(out):
            present, semi, pad = term
            if n not in semi or term not in out:
                continue
            twin = (tuple(sorted((*present, n))), tuple(i for i in semi if i != n), pad - {n})
            match = next((t for t in out if (tuple(sorted(t[0])), t[1], t[2]) == twin), None)
            if match is not None:
                out.remove(term)
                out.remove(match)
    return out


def _swapped(tree: exp.Select, left: exp.Expr, right: exp.Expr) -> exp.Select:
    """``right LEFT JOIN left`` with the first join's ON: the rows of the right table."""
    swapped = tree.copy()
    swapped.set("from_", exp.From(this=right.copy()))
    swapped.set("joins", [exp.Join(this=left.copy(), side="LEFT",
                                   on=tree.args["joins"][0].args.get("on"))])
    return swapped


def _make_inner(tree: exp.Select, outer: list[_Outer], pending: list[exp.Expr],
                splitter: _Splitter) -> None:
    """Turn into inner joins (in place) the outer joins whose null-supplying table a
    condition rejects the NULLs of, and drop the outer joins left from ``tree``."""
    # a condition that rejects the NULLs of a null-supplying table makes its join inner
    changed = True
    while changed:
        changed = False
        nullable = {o.alias: o for o in outer}
        for cond in pending:
            for alias in splitter.owners(cond) & set(nullable):
                if splitter.rejects_nulls(cond, alias):
                    o = nullable[alias]
                    outer.remove(o)
                    pending.extend(o.on)
                    tree.append("joins", exp.Join(this=o.table.copy()))
                    changed = True
                    break
            if changed:
                break
    kept = [j for j in tree.args.get("joins") or []
            if not j.args.get("side") and j.this.alias_or_name.lower()
            not in {o.alias for o in outer}]
    tree.set("joins", kept)


def _check_where(pending: list[exp.Expr], splitter: _Splitter, padded: set[str],
                 reject: Reject, operator: str) -> None:
    """Refuse a WHERE condition on a null-supplying table that stays outer when it reads
    that table inside a subquery (the terms fold the others, frontend/null_side.py)."""
    for cond in pending:
        touched = splitter.owners(cond) & padded
        if touched and any(True for _ in cond.find_all(exp.Subquery, exp.Exists)):
            raise reject(cond, f"a WHERE subquery on the null-supplying side of {operator}",
                         "compare the null-supplying table's columns outside subqueries")


def _check_on_chain(outer: list[_Outer], splitter: _Splitter, reject: Reject,
                    operator: str) -> None:
    """Refuse an ON condition that keeps the NULLs of an earlier outer-joined table."""
    for index, o in enumerate(outer):
        earlier = {p.alias for p in outer[:index]}
        for alias in {a for c in o.on for a in splitter.owners(c)} & earlier:
            if not any(splitter.rejects_nulls(c, alias) for c in o.on):
                raise reject(o.table, f"{operator} whose ON keeps NULLs of {alias}",
                             "an ON condition on an earlier outer-joined table must reject its "
                             "NULLs (compare its column)")


_Term = tuple[tuple[int, ...], tuple[int, ...], frozenset[int]]


def _terms(outer: list[_Outer], splitter: _Splitter) -> list[_Term]:
    """The terms of the signed sum: for each outer join, matched, NULL-padded or semi-join,
    as (joined, semi-joined, padded) numbers of the outer joins (a join that cannot match
    a padded table is padded too, with factor 1)."""
    terms: list[_Term] = [((), (), frozenset())]
    for number, o in enumerate(outer):
        refs = {a for c in o.on for a in splitter.owners(c)}
        out = []
        for present, semi, pad in terms:
            if refs & {outer[i].alias for i in pad}:
                out.append((present, semi, pad | {number}))  # o cannot match a padded row
                continue
            out += [((*present, number), semi, pad), (present, semi, pad | {number}),
                    (present, (*semi, number), pad | {number})]
        terms = out
    return terms


def _describe(outer: list[_Outer], present: tuple[int, ...], semi: tuple[int, ...]) -> str:
    joined = [o.table.alias_or_name for i, o in enumerate(outer) if i in present]
    exists = [o.table.alias_or_name for i, o in enumerate(outer) if i in semi]
    text = "inner join" + (f" with {', '.join(joined)}" if joined else " without "
                           + ", ".join(o.table.alias_or_name for o in outer))
    return text + (f", EXISTS {', '.join(exists)}" if exists else "")


def _inner_only(whole: exp.Select, tree: exp.Select, where: list[exp.Expr],
                dialect: str | None, operator: str) -> SetSplit:
    """Every outer join turned inner by a NULL-rejecting WHERE: one conjunctive part."""
    part = tree.copy()
    part.set("where", exp.Where(this=exp.and_(*[c.copy() for c in where])) if where else None)
    note = (f"{operator} read as an inner join: a WHERE condition rejects the NULLs of its "
            "null-supplying side (docs/rules.md, rule outer-joins)")
    split = SetSplit("sum", operator, [part], [False], whole.sql(dialect=dialect), [note])
    split.names = ["inner join"]
    return split


def _null_side_reads(tree: exp.Select, pending: list[exp.Expr], splitter: _Splitter,
                     padded: set[str]) -> set[str]:
    """The null-supplying tables whose columns the SELECT list or the WHERE reads."""
    out: set[str] = set()
    for node in [*tree.expressions, *pending]:
        for col in node.find_all(exp.Column):
            out |= splitter.owners(col) & padded
    return out


def _term_part(tree: exp.Select, pending: list[exp.Expr], outer: list[_Outer],
               term: _Term, splitter: _Splitter, fold: bool, reject: Reject,
               operator: str) -> exp.Select | None:
    """One term's conjunctive aggregate; with ``fold``, the null-supplying tables' columns
    are NULL where the term pads them and have values where it joins them
    (frontend/null_side.py), and None when its WHERE keeps no row."""
    present, semi, pad = term
    if not fold:
        return _build(tree, pending, outer, present, semi)
    folding = _term_folding(outer, present, pad, splitter, reject, operator)
    where = folding.where(pending)
    if where is None:
        return None
    base = tree.copy()
    if pad:  # the term joining every table keeps the statement's own SELECT list, whose
        # value ranges a release clamps to (the release reads the first part's query)
        base.set("expressions", folding.select(list(base.expressions)))
    return _build(base, where, outer, present, semi)


def _term_folding(outer: list[_Outer], present: tuple[int, ...], pad: frozenset[int],
                  splitter: _Splitter, reject: Reject, operator: str) -> Term:
    """The folding of one term: NULL for the padded tables' columns, a value for the
    columns that a joined table's ON compares."""
    nulls = {outer[i].alias for i in pad}
    known = {(outer[i].alias, c.name.lower()) for i in present
             for c in strict_columns(outer[i].on) if splitter.owners(c) == {outer[i].alias}}

    def is_null(col: exp.Column) -> bool:
        owners = splitter.owners(col)
        if not owners & nulls:
            return False
        if len(owners) > 1:
            raise reject(col, f"a column of {operator} that may belong to several tables",
                         "qualify it with its table's name or alias")
        return True

    def has_value(col: exp.Column) -> bool:
        owners = splitter.owners(col)
        if len(owners) != 1:
            return False
        alias = next(iter(owners))
        return (alias, col.name.lower()) in known or splitter.not_null(alias, col.name)

    return Term(Folder(is_null, has_value), reject, operator)


def _signed_sum_note(operator: str, parts: int) -> str:
    return (f"{operator}: each preserved row counts max(1, m) = m + 1 − [m ≥ 1] times, m its "
            f"matches, so the released values are a signed sum of {parts} conjunctive "
            "aggregates (inner join, preserved side, semi-join) and change by at most the sum "
            "of their changes (docs/rules.md, rule outer-joins)")


def _keyed_note(names: str) -> str:
    return (names + " joined on a key: at most one match per row, so a term joining it "
            "equals the term with EXISTS in its place, and the two cancel "
            "(docs/rules.md, rule outer-joins)")


def _check_dropped(terms: list[_Term], alive: list[bool], outer: list[_Outer], reject: Reject,
                   operator: str) -> None:
    """With the term joining every table dropped by the WHERE, the first term kept must
    pad only tables that every row of the statement has padded (every term joining one of
    them dropped): a release clamps each value to the range of the first part's SELECT
    list, which must then hold the statement's values."""
    first = next((t for t, ok in zip(terms, alive, strict=False) if ok), None)
    if first is None:
        return
    pad = first[2]
    for (present, _, _), ok in zip(terms, alive, strict=False):
        if ok and set(present) & pad:
            raise reject(outer[min(pad)].table, f"a WHERE that keeps matched and unmatched "
                         f"rows of several tables of {operator}",
                         "test IS NULL on one outer-joined table per statement, or split "
                         "the statement")
