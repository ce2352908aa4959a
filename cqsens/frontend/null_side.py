"""Fold the columns of an outer join's null-supplying side in one term of its expansion.

In the term where a LEFT JOIN's table is *matched*, its columns hold the joined row's
values, and a column that a comparison of the join's ON reads is not NULL there; in
the terms where the table is *padded* (the preserved side alone, and the semi-join
subtracted from it), every column of the table is NULL.  Putting those values in and
folding SQL's three-valued logic turns ``COALESCE(s.x, 0)`` into ``0``, ``s.k IS
NULL`` into TRUE, ``CASE WHEN s.k IS NULL THEN 1 ELSE 0 END`` into ``1`` and
``WHERE s.k IS NULL`` into "keep every row" (padded) or "no row" (matched), so each
term is a conjunctive aggregate again (docs/rules.md, rule outer-joins, "The null-supplying side").
An expression that keeps a NULL this folding cannot resolve is refused by the caller.
sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

__all__ = ["FALSE", "TRUE", "Folder", "Term", "never_true", "no_row", "null_side_note",
           "strict_columns", "truth", "unresolved_null"]

TRUE = "true"
FALSE = "false"
UNKNOWN = "null"

_NULL_IF_OPERAND = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Neg, exp.Cast,
                    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike)
_NULL_IF_THIS = (exp.Between, exp.In)
_NULL_PARENTS = (exp.AggFunc, exp.If, exp.Case, exp.Is, exp.Paren, exp.Alias)


def truth(node: exp.Expr) -> str | None:
    """TRUE, FALSE or UNKNOWN for a constant condition, None for any other expression."""
    if isinstance(node, exp.Boolean):
        return TRUE if node.this else FALSE
    if isinstance(node, exp.Null):
        return UNKNOWN
    if isinstance(node, exp.Paren):
        return truth(node.this)
    return None


def _constant(value: str) -> exp.Expr:
    return exp.Null() if value == UNKNOWN else exp.Boolean(this=value == TRUE)


def _is_null_literal(node: exp.Expr) -> bool:
    return isinstance(node, exp.Null) or isinstance(node, exp.Paren) and _is_null_literal(
        node.this)


@dataclass(frozen=True)
class Folder:
    """Which columns are NULL (``nulls``) or known not NULL (``present``) in one term."""

    nulls: Callable[[exp.Column], bool]
    present: Callable[[exp.Column], bool]

    def fold(self, node: exp.Expr) -> exp.Expr:
        """A copy of ``node`` with the NULL columns replaced and the result folded."""
        return self._fold(node.copy())

    def _fold(self, node: exp.Expr) -> exp.Expr:
        """Fold the children first (post-order), then ``node``."""
        if isinstance(node, exp.Column):
            return self._step(node)
        if isinstance(node, (exp.Subquery, exp.Exists, exp.Select)):
            return node  # its own scope: the caller refuses one that reads a padded table
        for key, value in list(node.args.items()):
            if isinstance(value, exp.Expr):
                node.set(key, self._fold(value))
            elif isinstance(value, list):
                node.set(key, [self._fold(v) if isinstance(v, exp.Expr) else v for v in value])
        return self._step(node)

    def _step(self, node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column):
            return exp.Null() if self.nulls(node) else node
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            return self._is_null(node)
        if isinstance(node, exp.Not):
            value = truth(node.this)
            return node if value is None else _constant(
                {TRUE: FALSE, FALSE: TRUE, UNKNOWN: UNKNOWN}[value])
        if isinstance(node, exp.Count) and _is_null_literal(node.this):
            return exp.Sum(this=exp.Null())  # COUNT(NULL) is 0 on every row: a sum of nothing
        if isinstance(node, exp.Coalesce):
            return _coalesce(node, self.present)
        if isinstance(node, _NULL_IF_OPERAND):
            operands = [v for k, v in node.args.items() if k in ("this", "expression")]
            return exp.Null() if any(_is_null_literal(o) for o in operands) else node
        if isinstance(node, _NULL_IF_THIS):
            return exp.Null() if _is_null_literal(node.this) else node
        if isinstance(node, exp.And):
            return _and_or(node, absorbing=FALSE, neutral=TRUE)
        if isinstance(node, exp.Or):
            return _and_or(node, absorbing=TRUE, neutral=FALSE)
        if isinstance(node, exp.Case) and node.this is None:
            return _case(node)
        if isinstance(node, exp.Paren) and isinstance(inner := node.this, exp.Expr) and truth(
                inner) is not None:
            return inner
        return node

    def _is_null(self, node: exp.Is) -> exp.Expr:
        operand = node.this
        while isinstance(operand, exp.Paren):
            operand = operand.this
        if isinstance(operand, exp.Null):
            return exp.Boolean(this=True)
        if isinstance(operand, exp.Literal) or isinstance(operand, exp.Column) and self.present(
                operand):
            return exp.Boolean(this=False)
        return node


def _coalesce(node: exp.Coalesce, present: Callable[[exp.Column], bool]) -> exp.Expr:
    """COALESCE without its NULL arguments and the ones after a value never NULL."""
    kept: list[exp.Expr] = []
    for arg in [node.this, *node.expressions]:
        if _is_null_literal(arg):
            continue
        kept.append(arg)
        if isinstance(arg, exp.Literal) or isinstance(arg, exp.Column) and present(arg):
            break
    if not kept:
        return exp.Null()
    if len(kept) == 1:
        return kept[0]
    return exp.Coalesce(this=kept[0], expressions=kept[1:])


def _and_or(node: exp.Expr, absorbing: str, neutral: str) -> exp.Expr:
    """Kleene's AND (absorbing FALSE) or OR (absorbing TRUE) over folded operands."""
    operands: list[exp.Expr] = [node.this, node.expression]
    values = [truth(o) for o in operands]
    if absorbing in values:
        return _constant(absorbing)
    rest = [o for o, v in zip(operands, values, strict=True) if v != neutral]
    if not rest:
        return _constant(neutral)
    if all(truth(o) == UNKNOWN for o in rest):
        return exp.Null()
    if len(rest) == 1 and _boolean(rest[0]):  # a number stays a number: 2 AND TRUE is 1
        return rest[0]
    return node


_BOOLEAN = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.Not, exp.And,
            exp.Or, exp.Boolean, exp.Between, exp.In, exp.Like, exp.ILike, exp.Exists)


def _boolean(node: exp.Expr) -> bool:
    """An expression whose value is TRUE, FALSE or NULL (1, 0 or NULL in SQLite)."""
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, _BOOLEAN)


def _case(node: exp.Case) -> exp.Expr:
    """A searched CASE without the branches whose condition folded to FALSE or NULL, cut
    at the first branch whose condition folded to TRUE."""
    kept: list[exp.Expr] = []
    default = node.args.get("default")
    for branch in node.args.get("ifs") or []:
        value = truth(branch.this)
        if value in (FALSE, UNKNOWN) or never_true(branch.this):
            continue
        if value == TRUE:
            default = branch.args.get("true")
            break
        kept.append(branch)
    if not kept:
        return default if default is not None else exp.Null()
    return exp.Case(ifs=kept, default=default)


def never_true(cond: exp.Expr) -> bool:
    """Whether a conjunct of ``cond`` folded to FALSE or NULL (so ``cond`` is never TRUE:
    a WHERE drops the row, a CASE skips the branch)."""
    if isinstance(cond, exp.Paren):
        return never_true(cond.this)
    if isinstance(cond, exp.And):
        return never_true(cond.this) or never_true(cond.expression)
    return truth(cond) in (FALSE, UNKNOWN)


def unresolved_null(node: exp.Expr) -> exp.Expr | None:
    """A NULL the folding left where SQL's value is not yet known (inside AND, OR, NOT,
    IN, a function): the node that reads it, else None.  NULL as an aggregate's
    argument, a CASE result or the operand of IS is read as it is."""
    for null in node.find_all(exp.Null):
        parent = null.parent
        if parent is not None and not isinstance(parent, _NULL_PARENTS):
            return parent
        if isinstance(parent, exp.If) and null.arg_key == "this":
            return parent
    return None


Reject = Callable[[exp.Expr, str, str], Exception]


@dataclass(frozen=True)
class Term:
    """One term's view of the outer joins: ``folder`` puts its NULLs in, ``reject``
    names what cannot be folded, ``operator`` is the statement's outer join.

    The SELECT list is folded with the NULLs only (a column known not NULL keeps its
    ``IS NULL`` test), so that the value ranges a release reads from a term's SELECT list
    cover every row of the statement whose padded tables are the term's."""

    folder: Folder
    reject: Reject
    operator: str

    def select(self, items: list[exp.Expr]) -> list[exp.Expr]:
        """The SELECT items folded; one that keeps an unresolved NULL is refused."""
        nulls_only = Folder(self.folder.nulls, lambda _: False)
        out = []
        for item in items:
            folded = nulls_only.fold(item)
            self._resolved(folded, item)
            out.append(folded)
        return out

    def where(self, conds: list[exp.Expr]) -> list[exp.Expr] | None:
        """The WHERE conjuncts folded (TRUE ones dropped), or None when one is never TRUE
        in this term (the term has no rows)."""
        out: list[exp.Expr] = []
        for cond in conds:
            folded = self.folder.fold(cond)
            if never_true(folded):
                return None
            self._resolved(folded, cond)
            out += [c for c in _conjuncts(folded) if truth(c) != TRUE]
        return out

    def _resolved(self, folded: exp.Expr, original: exp.Expr) -> None:
        if unresolved_null(folded) is not None:
            raise self.reject(original, f"an expression over the null-supplying side of "
                              f"{self.operator} that does not fold",
                              "cqsens puts NULL for the unmatched rows' columns and folds "
                              "COALESCE, IS [NOT] NULL, CASE, AND, OR, NOT and strict "
                              "operators; write the expression with those")


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    if isinstance(node, exp.And):
        return [*_conjuncts(node.this), *_conjuncts(node.expression)]
    return [node]


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In,
                exp.Like, exp.ILike)
_STRICT = (exp.Column, exp.Paren, exp.Cast, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Neg)


def strict_columns(on: list[exp.Expr]) -> list[exp.Column]:
    """The columns that ON's conjuncts reject the NULL of: a matched row has a value in
    each (an operand of a comparison read through arithmetic and casts, or IS NOT NULL)."""
    out: list[exp.Column] = []
    for cond in on:
        if isinstance(cond, exp.Not) and isinstance(cond.this, exp.Is) and isinstance(
                cond.this.expression, exp.Null):
            out += _strict_in(cond.this.this)
        elif isinstance(cond, _COMPARISONS):
            for key, value in cond.args.items():
                if key == "this" or isinstance(cond, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT,
                                                      exp.LTE)) and key == "expression":
                    out += _strict_in(value) if isinstance(value, exp.Expr) else []
    return out


def _strict_in(node: exp.Expr) -> list[exp.Column]:
    if isinstance(node, exp.Column):
        return [node]
    if isinstance(node, _STRICT):
        return [c for v in node.args.values() if isinstance(v, exp.Expr)
                for c in _strict_in(v)]
    return []


def no_row(tree: exp.Select) -> exp.Select:
    """The statement with a WHERE no row passes: every term was empty."""
    part = tree.copy()
    part.set("joins", [j for j in part.args.get("joins") or [] if not j.args.get("side")]
             or None)
    part.set("where", exp.Where(this=exp.EQ(this=exp.Literal.number(1),
                                            expression=exp.Literal.number(0))))
    return part


def null_side_note(names: str, dropped: int) -> str:
    """What the terms of an outer join read of the null-supplying tables ``names``."""
    text = (f"the columns of {names} are the joined row's values in the terms that join it "
            "and NULL in the terms of the unmatched rows (the preserved side and the "
            "semi-join subtracted from it): COALESCE, IS [NOT] NULL and CASE folded in each "
            "term (docs/rules.md, rule outer-joins)")
    if dropped:
        text += (f"; {dropped} term(s) whose WHERE no row passes dropped (WHERE … IS NULL "
                 "keeps the unmatched rows: the preserved side minus the semi-join, an "
                 "anti-join)")
    return text
