"""Split a statement with ``UNION [ALL]`` or ``INTERSECT [ALL]`` into conjunctive parts.

Two shapes are read (docs/rules.md, rule set-operations):

* **several releases**: ``SELECT COUNT(*) FROM a … UNION ALL SELECT SUM(x) FROM b …``,
  a set operation whose every part is an aggregate query.  Each part is a
  release with its own sensitivity; the released vector is their
  concatenation (ℓ1 adds, ℓ2 is the root of the sum of squares).  Removing
  duplicate result rows (``UNION``) or keeping the common ones (``INTERSECT``)
  must be applied to the noisy results: it is post-processing.
* **an aggregate over a set operation**: ``SELECT … COUNT(*) … FROM (q1 UNION ALL
  q2) AS t …`` (or a ``WITH`` table holding one).  Under ``UNION ALL`` only, a
  bag union, every additive aggregate (``COUNT``, ``SUM``) of the union is the
  sum of the parts' aggregates: each part is the outer query over that part
  alone (``"sum"``).  Under ``UNION`` or ``INTERSECT`` (or ``INTERSECT ALL``) only
  ``COUNT(*)`` is read (``"count"``): one row changes the number of result rows
  by at most the sum of what it changes in the parts, counted as distinct rows
  below a duplicate-removing operator and as rows otherwise.

``EXCEPT [ALL]`` is read under ``COUNT(*)`` only (the third shape): one row changes
the membership of at most the rows it changes in the parts, whatever boolean
combination of memberships the operators take.  Elsewhere it is negation (Thm 4)
and stays rejected.  sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from cqsens.frontend.select_items import is_aggregate

__all__ = ["SetSplit", "split_set_operation"]

Reject = Callable[[exp.Expr, str, str], Exception]
SET_OPERATIONS = (exp.Union, exp.Intersect, exp.Except)
_NEGATION = "negation makes sensitivity undecidable in general (Thm 4)"


@dataclass
class SetSplit:
    """A statement split into parts, each a statement cqsens translates on its own.

    ``kind`` is ``"concat"`` (the parts are released side by side), ``"sum"``
    (the released values are the sums of the parts') or ``"count"`` (a count of
    result rows, changed by at most the sum of the parts' count changes).
    ``distinct[i]`` says part i is counted as distinct rows (below a
    duplicate-removing operator).  ``whole`` is the statement without its
    post-processing clauses, as SQL in the statement's dialect.  ``signs`` and
    ``monotone``: see :class:`cqsens.ir.compound.CompoundQuery`.
    """

    kind: str
    operator: str
    parts: list[exp.Select]
    distinct: list[bool]
    whole: str
    notes: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    signs: list[int] = field(default_factory=list)
    monotone: str = ""


def _name(node: exp.Expr) -> str:
    word = "UNION" if isinstance(node, exp.Union) else "INTERSECT" \
        if isinstance(node, exp.Intersect) else "EXCEPT"
    return word if node.args.get("distinct") is not False else f"{word} ALL"


class _Splitter:
    def __init__(self, reject: Reject, dialect: str | None) -> None:
        self.reject = reject
        self.dialect = dialect
        self.operators: list[str] = []
        self.root: exp.Expr | None = None
        self.except_allowed = False  # COUNT(*) over the operation (docs/rules.md)

    def leaves(self, node: exp.Expr, distinct: bool) -> list[tuple[exp.Select, bool]]:
        """The SELECTs of a tree of set operations, each with whether its rows are
        deduplicated by an operator above it."""
        if isinstance(node, exp.Subquery) and not any(
                node.args.get(k) is not None for k in ("alias", "order", "limit", "offset")):
            return self.leaves(node.this, distinct)
        if isinstance(node, exp.Except) and not self.except_allowed:
            raise self.reject(node, "EXCEPT", _NEGATION + "; COUNT(*) over it is bounded "
                              "(SELECT COUNT(*) FROM (… EXCEPT …) AS t)")
        if isinstance(node, SET_OPERATIONS):
            for key in ("order", "limit", "offset"):
                if node.args.get(key) is not None and node is not self.root:
                    raise self.reject(node.args[key], f"{key.upper()} inside a set operation",
                                      "it chooses rows before the set operation combines them")
            if node.args.get("by_name") or node.args.get("side") or node.args.get("kind") \
                    or node.args.get("on") is not None:
                raise self.reject(node, f"{_name(node)} BY NAME",
                                  "match the parts' columns by position")
            name = _name(node)
            self.operators.append(name)
            below = distinct or not name.endswith("ALL")
            return [*self.leaves(node.this, below), *self.leaves(node.expression, below)]
        if isinstance(node, exp.Select):
            return [(node, distinct)]
        raise self.reject(node, f"{type(node).__name__.upper()} in a set operation",
                          "each part of a set operation must be a SELECT")

    def operator(self) -> str:
        return " / ".join(dict.fromkeys(self.operators))

    def deduplicates(self) -> bool:
        return any(not op.endswith("ALL") for op in self.operators)


def _aggregates(select: exp.Select) -> list[exp.Expr]:
    return [n for item in select.expressions for n in item.find_all(exp.AggFunc, exp.WithinGroup)
            if is_aggregate(n)]


def _strip_post_processing(tree: exp.Expr, notes: list[str], dialect: str | None) -> None:
    cut = [key for key in ("order", "limit", "offset") if tree.args.get(key) is not None]
    if not cut:
        return
    names = {"order": "ORDER BY", "limit": "LIMIT", "offset": "OFFSET"}
    notes.append(
        f"{' and '.join(names[k] for k in cut)} of the set operation "
        f"{'acts' if len(cut) == 1 else 'act'} on the released result: cqsens analyses the "
        "full result, and they must be applied to the noisy result")
    for key in cut:
        tree.set(key, None)


def _top_level(tree: exp.Expr, reject: Reject, dialect: str | None) -> SetSplit:
    """A set operation of aggregate queries: several releases side by side."""
    tree = tree.copy()
    notes: list[str] = []
    _strip_post_processing(tree, notes, dialect)
    splitter = _Splitter(reject, dialect)
    splitter.root = tree
    with_ = tree.args.get("with_") or tree.args.get("with")
    leaves = [s for s, _ in splitter.leaves(tree, False)]
    aggregating = [bool(_aggregates(s)) for s in leaves]
    operator = splitter.operator()
    if not any(aggregating):
        raise reject(tree, f"{operator} of row queries",
                     "cqsens analyses aggregates; count the rows with "
                     f"SELECT COUNT(*) FROM (… {operator.split(' / ')[0]} …) AS t")
    if not all(aggregating):
        raise reject(leaves[aggregating.index(False)], f"{operator} of an aggregate query "
                     "and a row query", "every part must release aggregates")
    parts: list[exp.Select] = []
    for leaf in leaves:
        part = leaf.copy()
        if with_ is not None and not (part.args.get("with_") or part.args.get("with")):
            part.set("with_", with_.copy())
        parts.append(part)
    distinct = splitter.deduplicates() or any(op.startswith("INTERSECT")
                                              for op in splitter.operators)
    notes.append(
        f"{operator} of {len(parts)} aggregate queries: each part is released with its own "
        "sensitivity and the released vector is their concatenation (ℓ1 adds, ℓ2 is the root "
        "of the sum of squares)"
        + ("; removing or keeping duplicate result rows must be applied to the noisy results, "
           "because comparing true values is not private" if distinct else ""))
    return SetSplit("concat", operator, parts, [False] * len(parts),
                    tree.sql(dialect=dialect), notes)


def _inline_set_ctes(select: exp.Select) -> None:
    """Replace each read of a WITH table that holds a set operation by a derived table."""
    with_ = select.args.get("with_") or select.args.get("with")
    if not isinstance(with_, exp.With) or with_.args.get("recursive"):
        return
    kept: list[exp.Expr] = []
    for cte in with_.expressions:
        if not isinstance(cte.this, SET_OPERATIONS):
            kept.append(cte)
            continue
        name = cte.alias_or_name.lower()
        for table in list(select.find_all(exp.Table)):
            if table.name.lower() == name and not table.args.get("db"):
                alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name))
                if cte.args.get("alias") is not None and cte.args["alias"].columns:
                    alias.set("columns", [c.copy() for c in cte.args["alias"].columns])
                table.replace(exp.Subquery(this=cte.this.copy(), alias=alias))
    if len(kept) != len(with_.expressions):
        if kept:
            with_.set("expressions", kept)
        else:
            select.set("with_", None)
            select.set("with", None)


def _items(select: exp.Select) -> list[exp.Expr]:
    from_ = select.args.get("from_") or select.args.get("from")
    items = [from_.this, *from_.expressions] if isinstance(from_, exp.From) else []
    return items + [j.this for j in select.args.get("joins") or []]


def _output_names(item: exp.Subquery, first: exp.Select) -> list[str]:
    alias = item.args.get("alias")
    given = [c.name for c in alias.columns] if alias is not None else []
    names: list[str] = []
    for k, e in enumerate(first.expressions):
        name = given[k] if k < len(given) else e.alias_or_name
        if not name or name.lower() in (n.lower() for n in names) \
                or not isinstance(e, (exp.Alias, exp.Column)) and k >= len(given):
            name = f"_c{k + 1}"
        names.append(name)
    return names


def _renamed(leaf: exp.Select, names: list[str], reject: Reject, operator: str) -> exp.Select:
    if len(leaf.expressions) != len(names):
        raise reject(leaf, f"{operator} of parts of different widths",
                     f"every part must select {len(names)} columns")
    part = leaf.copy()
    items: list[exp.Expr] = []
    for e, name in zip(part.expressions, names, strict=True):
        value = e.this if isinstance(e, exp.Alias) else e
        if isinstance(value, exp.Star) or (isinstance(value, exp.Column)
                                           and isinstance(value.this, exp.Star)):
            raise reject(e, f"SELECT * in {operator}", "list the columns each part returns")
        items.append(exp.alias_(value.copy(), name))
    part.set("expressions", items)
    return part


def target_select(part: exp.Select) -> exp.Select:
    """The SELECT of the one derived table of ``part`` that replaced the set operation."""
    found = next(i for i in _items(part) if isinstance(i, exp.Subquery) and i.meta.get("part"))
    assert isinstance(found.this, exp.Select)
    return found.this


def _derived(tree: exp.Select, reject: Reject, dialect: str | None) -> SetSplit | None:
    """An aggregate over a set operation in FROM: one part per SELECT of the operation."""
    if tree.find(*SET_OPERATIONS) is None:  # none anywhere (a CTE's included): no copy
        return None
    tree = tree.copy()
    _inline_set_ctes(tree)
    found = [i for i in _items(tree)
             if isinstance(i, exp.Subquery) and isinstance(i.this, SET_OPERATIONS)]
    if not found:
        return None
    if len(found) > 1:
        raise reject(found[1], "two set operations in FROM",
                     "cqsens reads one UNION / INTERSECT per query")
    item = found[0]
    notes: list[str] = []
    whole_tree = tree.copy()
    _strip_post_processing(whole_tree, [], dialect)
    splitter = _Splitter(reject, dialect)
    splitter.root = item.this
    splitter.except_allowed = True
    leaves = splitter.leaves(item.this, False)
    operator = splitter.operator()
    bag = all(op == "UNION ALL" for op in splitter.operators)
    aggregates = _aggregates(tree)
    alias = item.alias_or_name
    names = _output_names(item, leaves[0][0])
    if bag:
        for node in aggregates:
            additive = isinstance(node, exp.Sum) or isinstance(node, exp.Count)
            if not additive or isinstance(node.this, exp.Distinct):
                raise reject(node, f"{node.sql(dialect=dialect)} over UNION ALL",
                             "only COUNT and SUM of a UNION ALL are the sums of the parts' "
                             "values; release SUM and COUNT (a ratio of them is post-processing)")
        notes.append(
            f"the aggregates over UNION ALL are the sums of the same aggregates over each of its "
            f"{len(leaves)} parts, so their change is at most the sum of the parts' changes "
            "(ℓ1 and ℓ2 add: triangle inequality; docs/rules.md, rule set-operations)")
    else:
        if len(_items(tree)) != 1:
            raise reject(item, f"a join with {operator}",
                         "a join counts each result row with its matches, which a union of sets "
                         "does not bound; count the set operation alone, or use UNION ALL")
        for node in aggregates:
            star = isinstance(node, exp.Count) and (
                node.this is None or isinstance(node.this, (exp.Star, exp.Literal)))
            if not star:
                raise reject(node, f"{node.sql(dialect=dialect)} over {operator}",
                             "only COUNT(*) of the result rows is bounded under set semantics; "
                             "use UNION ALL for SUM")
        if len(aggregates) != 1:
            raise reject(tree, f"several aggregates over {operator}", "release one COUNT(*)")
        notes.append(
            f"COUNT(*) over {operator}: one row changes the number of result rows by at most "
            "the sum of what it changes in the parts, each counted as distinct rows below a "
            "duplicate-removing operator (docs/rules.md, rule set-operations)")
    parts: list[exp.Select] = []
    distinct: list[bool] = []
    for leaf, dedup in leaves:
        part = tree.copy()
        target = next(i for i in _items(part)
                      if isinstance(i, exp.Subquery) and isinstance(i.this, SET_OPERATIONS))
        replacement = exp.Subquery(this=_renamed(leaf, names, reject, operator),
                                   alias=exp.TableAlias(this=exp.to_identifier(alias)))
        replacement.meta["part"] = True
        target.replace(replacement)
        if dedup:
            inner = target_select(part)
            inner.set("distinct", None)  # the operator removes duplicates anyway
            columns = [exp.column(n, table=alias) for n in names]
            for node in _aggregates(part):
                node.replace(exp.Count(this=exp.Distinct(expressions=columns)))
        parts.append(part)
        distinct.append(dedup)
    return SetSplit("sum" if bag else "count", operator, parts, distinct,
                    whole_tree.sql(dialect=dialect), notes)


def split_set_operation(tree: exp.Expr, reject: Reject, dialect: str | None) -> SetSplit | None:
    """The parts of a statement with a set operation, or None when it has none that
    this module reads (a set operation elsewhere is rejected later, by name).

    The parameters are those of :func:`cqsens.frontend.plan.build_plan`; ``tree`` is not changed.
    """
    if isinstance(tree, exp.Except):
        raise reject(tree, "EXCEPT", _NEGATION + "; COUNT(*) over it is bounded "
                     "(SELECT COUNT(*) FROM (… EXCEPT …) AS t)")
    if isinstance(tree, (exp.Union, exp.Intersect)):
        return _top_level(tree, reject, dialect)
    if isinstance(tree, exp.Select):
        return _derived(tree, reject, dialect)
    return None
