"""Parse SQL text into sqlglot statements, within the limits of :mod:`cqsens.frontend.limits`.

A syntax error becomes a :class:`~cqsens.errors.ParseError` at its position.
sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import Token

from cqsens.errors import ParseError
from cqsens.frontend.dates import fold_date_arithmetic
from cqsens.frontend.filters import rewrite_filters
from cqsens.frontend.limits import check_expression_tree, check_sql_tokens
from cqsens.frontend.sql_expr import node_position, text_start
from cqsens.frontend.variance import rewrite_variance

__all__ = ["parse_statement", "parse_statements"]


def _syntax_error(exc: SqlglotParseError | TokenError, text: str, source: str,
                  what: str) -> ParseError:
    """sqlglot's error as a ParseError at its position (a tokenizer error at the text's
    point it names, else at the start)."""
    errors = getattr(exc, "errors", None) or [{}]
    first = errors[0] if errors else {}
    message = str(exc).splitlines()[0]
    if first.get("description"):
        message = first["description"]
    if "<Token" in message or "TokenType" in message:
        near = (first.get("highlight") or "").strip()
        message = (f"syntax error near {near!r}" if near
                   else "syntax error (unexpected end of input?)")
    missing = re.match(r"Required keyword: '(\w+)' missing for <class '[\w.]+\.(\w+)'>", message)
    if missing:
        message = f"incomplete {missing[2].upper()} (a part of it is missing)"
    line, column = first.get("line"), first.get("col")
    if isinstance(exc, TokenError):
        cause = str(exc.__cause__ or exc)
        found = re.search(r"(\d+):(\d+)", cause)
        line, column = (int(found[1]), int(found[2])) if found else text_start(text)
        message = cause.splitlines()[0] if found else "unterminated string, identifier or comment"
    if not isinstance(line, int):
        line, column = text_start(text)
    return ParseError(f"the {what} does not parse: {message}", source=source,
                      line=line, column=column if isinstance(column, int) else 1,
                      construct=f"{what} syntax")


def parse_statements(
    text: str,
    *,
    dialect: str | None,
    source: str,
    what: str = "SQL",
    integers: bool = True,
    check: Callable[[list[Token]], None] | None = None,
) -> list[exp.Expr]:
    """Parse SQL text into sqlglot statements within the limits of :mod:`cqsens.frontend.limits`.

    The tokens are checked (nesting, literal sizes) before the parser sees
    them, and every statement's tree afterwards (depth, AND/OR count).

    Parameters
    ----------
    text : str
        The SQL text.
    dialect : str, optional
        sqlglot dialect name.
    source : str
        File name for errors.
    what : str
        ``"SQL"`` or ``"schema"``, for messages.
    integers : bool
        Refuse integer literals beyond 64 bits (queries: yes; schemas: no).
    check : callable, optional
        Further checks of the tokens (the DDL reader refuses empty list items).

    Raises
    ------
    ParseError
        Unknown dialect, a syntax error or input over a limit, with its position.
    """
    try:
        reader = sqlglot.Dialect.get_or_raise(dialect)
    except ValueError as exc:  # unknown dialect
        raise ParseError(str(exc), source="--dialect", construct="--dialect") from exc
    try:
        tokens = reader.tokenize(text)
    except TokenError as exc:
        raise _syntax_error(exc, text, source, what) from exc
    check_sql_tokens(tokens, source=source, integers=integers)
    if check is not None:
        check(tokens)
    start = text_start(text)
    try:
        statements = reader.parser().parse(tokens, text)
    except (SqlglotParseError, TokenError) as exc:
        raise _syntax_error(exc, text, source, what) from exc
    except RecursionError as exc:  # a last resort: check_sql_tokens should refuse first
        raise ParseError(f"the {what} is nested too deeply to read", source=source,
                         line=start[0], column=start[1], construct="nesting depth") from exc
    found = [s for s in statements if s is not None]
    for statement in found:
        check_expression_tree(statement, source=source, position=start)
    return [fold_date_arithmetic(statement) for statement in found]


def parse_statement(sql: str, dialect: str | None, source: str) -> exp.Expr:
    """The one statement of ``sql``, or a ParseError with its position; aggregates with
    ``FILTER (WHERE …)`` come in their CASE form (:mod:`cqsens.frontend.filters`).

    The tree is the caller's own (a copy): an analysis reads its statement several times
    (the plan, the stages, the parts, the public and per-person forms), and a copy costs
    about a quarter of a parse; the last texts' trees are kept, errors are not.

    >>> a = parse_statement("SELECT COUNT(*) FROM t", None, "q.sql")
    >>> b = parse_statement("SELECT COUNT(*) FROM t", None, "q.sql")
    >>> a == b and a is not b
    True
    """
    return _parsed(sql, dialect, source).copy()


@functools.lru_cache(maxsize=64)
def _parsed(sql: str, dialect: str | None, source: str) -> exp.Expr:
    """:func:`parse_statement`'s tree, shared: never handed out (copies are)."""
    found = parse_statements(sql, dialect=dialect, source=source)
    if len(found) != 1:
        line, column = (node_position(found[1], text_start(sql)) if len(found) > 1
                        else text_start(sql))
        raise ParseError(
            f"expected exactly one SQL statement, found {len(found)}",
            source=source, line=line, column=column, construct="SQL statement",
        )
    tree = rewrite_filters(found[0], source=source, dialect=dialect)
    return rewrite_variance(tree, source=source, dialect=dialect)
