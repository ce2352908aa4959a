"""Read a sqlglot condition or scalar expression into the typed IR of :mod:`cqsens.ir.expr`.

Columns become slots through a callback, so the caller decides which CQ term
each column stands for.  A construct outside the typed IR raises the error the
caller's ``reject`` callback builds, naming the construct.

:func:`node_position` gives a node's place in the text for such errors:
sqlglot keeps a token's line and the column of its *last* character; this
gives the 1-based column of its first, falling back to the first identifier,
literal or ``*`` inside the node, then to a position the caller knows (the
statement's start, :func:`text_start`).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from cqsens.ir.expr import (
    Abs,
    And,
    Arith,
    Between,
    Case,
    Cast,
    Coalesce,
    Compare,
    Expr,
    Function,
    InList,
    IsNull,
    Kind,
    Like,
    Literal,
    Negate,
    Not,
    Or,
    Predicate,
    Truth,
)

__all__ = ["ExprReader", "conjuncts", "flatten", "fresh_alias", "node_position", "text_start"]

Reject = Callable[[exp.Expr, str, str], Exception]

_COMPARE: dict[type[exp.Expr], str] = {
    exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
}
_ARITH: dict[type[exp.Expr], str] = {
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.DPipe: "||",
}
_DATE_TYPES = {"DATE": Kind.DATE, "TIMESTAMP": Kind.TIMESTAMP, "DATETIME": Kind.TIMESTAMP}


def _number(text: str) -> Literal | None:
    try:
        return Literal(int(text), Kind.INTEGER)
    except ValueError:
        pass
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    return Literal(value, Kind.DECIMAL) if value.is_finite() else None


class ExprReader:
    """Translate sqlglot nodes; ``column`` maps a column node to its expression (a slot)."""

    def __init__(self, column: Callable[[exp.Column], Expr], reject: Reject) -> None:
        self.column = column
        self.reject = reject

    # -- predicates -------------------------------------------------------
    def predicate(self, node: exp.Expr) -> Predicate:
        """The typed predicate of a condition."""
        if isinstance(node, exp.Paren):
            return self.predicate(node.this)
        if isinstance(node, (exp.And, exp.Or)):
            return self._chain(node)
        if isinstance(node, exp.Not):
            inner = self.predicate(node.this)
            if isinstance(inner, (IsNull, InList, Between, Like)):
                return _negated(inner)  # NOT (x IN ...) is x NOT IN ..., in three-valued logic too
            return Not(inner)
        if type(node) in _COMPARE:
            return Compare(_COMPARE[type(node)], self.expr(node.this), self.expr(node.expression))
        if isinstance(node, exp.Between):
            return Between(self.expr(node.this), self.expr(node.args["low"]),
                           self.expr(node.args["high"]))
        if isinstance(node, exp.In):
            if node.args.get("query") is not None or node.args.get("unnest") is not None:
                raise self.reject(node, "IN (subquery)", "write the join in FROM/WHERE")
            if not node.expressions:
                raise self.reject(node, "IN without values", "write IN (value, ...)")
            return InList(self.expr(node.this), tuple(self.expr(e) for e in node.expressions))
        if isinstance(node, (exp.Like, exp.ILike)):
            if isinstance(node.expression, exp.Escape):
                raise self.reject(node, "LIKE ... ESCAPE", "use a pattern without ESCAPE")
            return Like(self.expr(node.this), self.expr(node.expression),
                        negated=bool(node.args.get("negate")),
                        case_insensitive=isinstance(node, exp.ILike))
        if isinstance(node, exp.Escape):
            raise self.reject(node, "LIKE ... ESCAPE", "use a pattern without ESCAPE")
        if isinstance(node, exp.Is):
            if isinstance(node.expression, exp.Null):
                return IsNull(self.expr(node.this))
            raise self.reject(node, f"IS {node.expression.sql().upper()}",
                              "compare with = or use IS [NOT] NULL")
        if isinstance(node, exp.Predicate):
            name = node.key.upper()
            raise self.reject(node, f"condition {name}", "not a supported row filter")
        return Truth(self.expr(node))

    def _chain(self, node: exp.And | exp.Or) -> Predicate:
        """An AND (or OR) chain as one flat conjunction (disjunction), read without
        recursion along the chain: a WHERE clause may AND hundreds of conditions."""
        kind = type(node)
        parts: list[Predicate] = []
        stack: list[exp.Expr] = [node]
        while stack:
            current = stack.pop()
            while isinstance(current, exp.Paren):
                current = current.this
            if type(current) is kind:
                stack.extend((current.expression, current.this))  # left side first
                continue
            part = self.predicate(current)
            same = isinstance(part, And) if kind is exp.And else isinstance(part, Or)
            parts.extend(part.parts if same else [part])  # type: ignore[union-attr]
        return And(tuple(parts)) if kind is exp.And else Or(tuple(parts))

    # -- expressions ------------------------------------------------------
    def expr(self, node: exp.Expr) -> Expr:
        """The typed expression of a scalar value."""
        if isinstance(node, exp.Paren):
            return self.expr(node.this)
        if isinstance(node, exp.Column):
            return self.column(node)
        literal = self.literal(node)
        if literal is not None:
            return literal
        if type(node) in _ARITH:
            return Arith(_ARITH[type(node)], self.expr(node.this), self.expr(node.expression))
        if isinstance(node, exp.Neg):
            return Negate(self.expr(node.this))
        if isinstance(node, exp.Abs):
            return Abs(self.expr(node.this))
        if isinstance(node, exp.Coalesce):
            return Coalesce(tuple(self.expr(e) for e in [node.this, *node.expressions]))
        if isinstance(node, exp.Case):
            return self._case(node)
        if isinstance(node, exp.If):
            default = node.args.get("false")
            return Case(((self.predicate(node.this), self.expr(node.args["true"])),),
                        self.expr(default) if default is not None else None)
        if isinstance(node, exp.Cast):
            return Cast(self.expr(node.this), node.to.sql().upper())
        if isinstance(node, (exp.Anonymous, exp.Func)) and not isinstance(node, exp.AggFunc):
            return self._function(node)
        raise self.reject(node, f"expression {node.sql()}", "not a supported scalar expression")

    def literal(self, node: exp.Expr) -> Literal | None:
        """A typed literal, or None when ``node`` is not one."""
        if isinstance(node, exp.Literal):
            return Literal(node.this, Kind.TEXT) if node.is_string else _number(node.this)
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) \
                and not node.this.is_string:
            inner = _number(node.this.this)
            if inner is not None and isinstance(inner.value, (int, Decimal)):
                return Literal(-inner.value, inner.kind)
        if isinstance(node, exp.Null):
            return Literal(None, Kind.NULL)
        if isinstance(node, exp.Boolean):
            return Literal(bool(node.this), Kind.BOOLEAN)
        if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) \
                and node.this.is_string:
            kind = _DATE_TYPES.get(node.to.sql().upper())
            if kind is not None:
                return Literal(node.this.this, kind)
        if isinstance(node, exp.Interval) and isinstance(node.this, exp.Literal):
            unit = node.args.get("unit")
            return Literal(node.this.this, Kind.INTERVAL, unit.name.upper() if unit else "")
        return None

    def _case(self, node: exp.Case) -> Case:
        subject = node.this
        whens: list[tuple[Predicate, Expr]] = []
        for branch in node.args.get("ifs") or []:
            condition = branch.this
            test: Predicate = (Compare("=", self.expr(subject), self.expr(condition))
                               if subject is not None else self.predicate(condition))
            whens.append((test, self.expr(branch.args["true"])))
        default = node.args.get("default")
        return Case(tuple(whens), self.expr(default) if default is not None else None)

    def _function(self, node: exp.Expr) -> Function:
        if isinstance(node, exp.Anonymous):
            name = str(node.this).upper()
            args = list(node.expressions)
        else:
            assert isinstance(node, exp.Func)
            name = node.sql_name().upper()
            args = []
            for key in node.arg_types:
                value = node.args.get(key)
                args.extend(value if isinstance(value, list) else [] if value is None else [value])
        return Function(name, tuple(self.expr(a) for a in args))


def _negated(node: IsNull | InList | Between | Like) -> Predicate:
    flip = not node.negated
    if isinstance(node, IsNull):
        return IsNull(node.operand, negated=flip)
    if isinstance(node, InList):
        return InList(node.operand, node.items, negated=flip)
    if isinstance(node, Between):
        return Between(node.operand, node.low, node.high, negated=flip)
    return Like(node.operand, node.pattern, negated=flip, case_insensitive=node.case_insensitive)


def node_position(
    node: exp.Expr | None, fallback: tuple[int | None, int | None] = (None, None)
) -> tuple[int | None, int | None]:
    """Best-known 1-based (line, column) of ``node``: the first of its own and those of the
    identifiers, literals and ``*`` inside it.

    Returns ``fallback`` when neither the node nor anything inside it has a position.
    """
    if node is None:
        return fallback
    best: tuple[int, int] | None = None
    for candidate in [node, *node.find_all(exp.Identifier, exp.Literal, exp.Star)]:
        meta = getattr(candidate, "_meta", None) or {}
        line, col = meta.get("line"), meta.get("col")
        if not isinstance(line, int) or not isinstance(col, int):
            continue
        start, end = meta.get("start"), meta.get("end")
        if isinstance(start, int) and isinstance(end, int):
            col = col - (end - start)  # sqlglot reports the column of the token's end
        if best is None or (line, col) < best:
            best = (line, max(col, 1))
    return best if best is not None else fallback


def text_start(text: str) -> tuple[int, int]:
    """1-based (line, column) of the first character of ``text`` that is not blank.

    >>> text_start("\\n  SELECT 1")
    (2, 3)
    """
    stripped = text.lstrip()
    before = text[: len(text) - len(stripped)]
    line = before.count("\n") + 1
    return line, len(before) - (before.rfind("\n") + 1) + 1


def flatten(node: exp.Expr, kind: type[exp.Expr]) -> list[exp.Expr]:
    """The parts of an AND (or OR) chain, left to right (without recursion: chains can be
    long)."""
    out: list[exp.Expr] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, exp.Paren):
            stack.append(current.this)
        elif isinstance(current, kind):
            stack.extend((current.expression, current.this))
        else:
            out.append(current)
    return out


def conjuncts(node: exp.Expr) -> list[exp.Expr]:
    """The parts of an AND chain, left to right."""
    return flatten(node, exp.And)


def fresh_alias(alias: str, counts: dict[str, int], claimed: set[str]) -> str:
    """``alias`` if no other table of the statement uses it, else ``alias_2``, ``alias_3``...

    ``counts`` says how often each (lower-case) alias occurs in the statement;
    ``claimed`` collects the aliases handed out (and is updated).
    """
    key = alias.lower()
    if counts.get(key, 0) <= 1 and key not in claimed:
        claimed.add(key)
        return alias
    n = 2
    while f"{key}_{n}" in counts or f"{key}_{n}" in claimed:
        n += 1
    claimed.add(f"{key}_{n}")
    return f"{alias}_{n}"
