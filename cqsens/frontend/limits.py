"""Size limits on the queries, schemas and dependencies cqsens reads, and their checks.

Every limit is a module constant.  Input over a limit is refused before any
analysis starts, with a :class:`~cqsens.errors.ParseError` at the position of
the construct at fault whose message reads ``<what>: <found>, over the limit of
<limit>``.  The limits are generous for real workloads (the TPC-H queries join
at most 8 tables and nest expressions less than 10 deep) and small enough that
reading a query never exhausts Python's stack and the analysis stays fast.

The nesting of SQL text is measured on its tokens, before the text is parsed,
because the SQL parser recurses once per level of parentheses; the depth of the
parsed expression tree is measured again afterwards.  See docs/model.md, section
"Limits and safety".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sqlglot import exp
from sqlglot.tokenizer_core import Token, TokenType

from cqsens.errors import ParseError
from cqsens.frontend.sql_expr import node_position

__all__ = [
    "MAX_ARGUMENTS",
    "MAX_ATOMS",
    "MAX_CONDITIONS",
    "MAX_EXPRESSION_DEPTH",
    "MAX_INTEGER",
    "MAX_LITERAL_LENGTH",
    "MAX_NESTING",
    "check_count",
    "check_expression_tree",
    "check_integer_text",
    "check_sql_tokens",
    "over_limit",
]

MAX_ATOMS = 500
"""Most relational atoms in one query: body atoms of a CQ, tables in FROM/JOIN of a SQL query."""

MAX_ARGUMENTS = 2048
"""Most arguments of one atom (and columns of one table in a schema).

Above PostgreSQL's limit on the columns of a table (1600) and SQLite's default
(2000); MySQL allows 4096.  Dependency positions are 1-based and at most this number.
"""

MAX_NESTING = 32
"""Deepest nesting in SQL text, counted on its tokens before parsing.

Each open parenthesis, ``CASE ... END`` and prefix ``NOT``, ``-``, ``+`` or
``~`` counts one level (``NOT NOT x`` is 2 levels, ``((x))`` is 2).
"""

MAX_EXPRESSION_DEPTH = 100
"""Deepest SQL expression tree after parsing.

Each operator of a chain ``a + b + c`` counts one level (the chain is a tree of
binary operators); a chain of AND (or OR) counts as one level, parentheses as none.
"""

MAX_CONDITIONS = 500
"""Most AND and OR operators in one SQL statement (WHERE, ON and CHECK conditions alike)."""

MAX_LITERAL_LENGTH = 10_000
"""Most characters in one token: a string or number literal, or a name."""

MAX_INTEGER = 2**63 - 1
"""Largest magnitude of an integer in a query or a cardinality bound ``<=k``.

The 64-bit signed range that SQL databases (and SQLite, where witnesses are
checked) store; write a larger number as a decimal (``1e30``) in a query.
"""

_OPEN = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.CASE}
_CLOSE = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.END}
_PREFIX = {TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE}
_OPERAND = {
    TokenType.NUMBER, TokenType.STRING, TokenType.VAR, TokenType.IDENTIFIER, TokenType.NULL,
    TokenType.TRUE, TokenType.FALSE, TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.END,
    TokenType.STAR,
}


def over_limit(
    what: str,
    found: int | str,
    limit: int | str,
    *,
    source: str,
    line: int | None,
    column: int | None,
    construct: str,
) -> ParseError:
    """The error for input over a limit: ``<what>: <found>, over the limit of <limit>``."""
    return ParseError(f"{what}: {found}, over the limit of {limit}", source=source,
                      line=line if line is not None else 1,
                      column=column if column is not None else 1, construct=construct)


def check_count(
    what: str,
    found: int,
    limit: int,
    *,
    source: str,
    line: int | None = None,
    column: int | None = None,
    construct: str,
) -> None:
    """Raise :func:`over_limit` when ``found`` is above ``limit``."""
    if found > limit:
        raise over_limit(what, found, limit, source=source, line=line, column=column,
                         construct=construct)


def check_integer_text(
    text: str,
    *,
    limit: int = MAX_INTEGER,
    what: str = "integer",
    source: str,
    line: int | None,
    column: int | None,
    construct: str = "literal",
) -> int:
    """The value of a string of decimal digits (optionally signed), at most ``limit`` in magnitude.

    The number of digits is checked before the text is converted, so a
    5,000-digit number costs nothing.

    >>> check_integer_text("42", source="<cq>", line=1, column=1)
    42
    """
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) <= len(str(limit)):
        value = int(text)
        if abs(value) <= limit:
            return value
    shown = text if len(text) <= 40 else f"a number of {len(digits)} digits"
    bound = f"{limit} (2^63 - 1, the 64-bit range SQL databases store)" \
        if limit == MAX_INTEGER else str(limit)
    raise over_limit(f"{what} too large", shown, bound, source=source,
                     line=line, column=column, construct=construct)


def _start(token: Token) -> tuple[int, int]:
    """1-based (line, column) of a token's first character (sqlglot gives its last)."""
    col = token.col - (token.end - token.start) if "\n" not in token.text else 1
    return token.line, max(col, 1)


def _check_number(token: Token, source: str) -> None:
    line, col = _start(token)
    text = token.text.replace("_", "")
    if text.isdigit():
        check_integer_text(text, source=source, line=line, column=col)
        return
    try:
        value = float(text)
    except ValueError:
        return
    if math.isinf(value):
        raise over_limit("number too large", text, "about 1.8e308 (the range of a double)",
                         source=source, line=line, column=col, construct="literal")


def check_sql_tokens(tokens: Sequence[Token], *, source: str, integers: bool = True) -> None:
    """Refuse SQL text nested deeper than :data:`MAX_NESTING`, or with an oversized literal.

    Parameters
    ----------
    tokens : sequence of sqlglot tokens
        The tokenized text (tokenizing does not recurse; parsing does).
    source : str
        File name for errors.
    integers : bool
        Also refuse integers beyond :data:`MAX_INTEGER` and numbers beyond a
        double's range (queries: True; schemas, whose CHECK bounds may be any
        number: False).

    Raises
    ------
    ParseError
        At the token where the limit is passed.
    """
    stack: list[tuple[int, int]] = []
    depth = prefix = 0
    previous: Token | None = None
    for token in tokens:
        kind = token.token_type
        if len(token.text) > MAX_LITERAL_LENGTH:
            line, col = _start(token)
            raise over_limit("token too long (characters)", len(token.text), MAX_LITERAL_LENGTH,
                             source=source, line=line, column=col, construct="literal")
        if kind in _OPEN:
            stack.append((depth, prefix))
            depth, prefix = depth + prefix + 1, 0
        elif kind in _CLOSE:
            depth, prefix = stack.pop() if stack else (0, 0)
            prefix = 0
        elif kind in _PREFIX and (previous is None or previous.token_type not in _OPERAND):
            prefix += 1
        else:
            prefix = 0
            if integers and kind == TokenType.NUMBER:
                _check_number(token, source)
        if depth + prefix > MAX_NESTING:
            line, col = _start(token)
            raise over_limit("nesting too deep (levels of parentheses, CASE and prefix NOT/-/+)",
                             depth + prefix, MAX_NESTING, source=source, line=line, column=col,
                             construct="nesting depth")
        previous = token


def _flattened(node: exp.Expr) -> bool:
    """True for a node that adds no level: parentheses, the inner links of an AND/OR chain."""
    parent = node.parent
    return isinstance(node, exp.Paren) or (
        isinstance(node, (exp.And, exp.Or)) and type(parent) is type(node))


def check_expression_tree(
    tree: exp.Expr,
    *,
    source: str,
    position: tuple[int, int] = (1, 1),
) -> None:
    """Refuse a parsed statement deeper than :data:`MAX_EXPRESSION_DEPTH` or with too many
    AND/OR (:data:`MAX_CONDITIONS`); walks the tree without recursion.

    ``position`` is the (line, column) to report when a node has none of its own.
    """
    fallback: tuple[int | None, int | None] = position
    conditions, deepest, deepest_node, first_condition = 0, 0, tree, tree
    stack: list[tuple[exp.Expr, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (exp.And, exp.Or)):
            if conditions == 0:
                first_condition = node
            conditions += 1
        if depth > deepest:
            deepest, deepest_node = depth, node
        for child in node.iter_expressions():
            stack.append((child, depth + (0 if _flattened(child) else 1)))
    if conditions > MAX_CONDITIONS:
        while isinstance(first_condition, (exp.And, exp.Or, exp.Paren)):
            first_condition = first_condition.this  # the chain's leftmost condition
        line, col = node_position(first_condition, fallback)
        raise over_limit("too many AND/OR operators", conditions, MAX_CONDITIONS, source=source,
                         line=line, column=col, construct="condition")
    if deepest > MAX_EXPRESSION_DEPTH:
        line, col = node_position(deepest_node, fallback)
        raise over_limit("expression too deep (levels; each operator of a chain such as "
                         "a + b + c is one level)", deepest, MAX_EXPRESSION_DEPTH,
                         source=source, line=line, column=col, construct="expression depth")
