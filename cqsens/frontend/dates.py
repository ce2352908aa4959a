"""Constant date arithmetic, folded into date literals.

``DATE '1998-12-01' - INTERVAL '90' DAY`` is a constant: every SQL engine that
accepts it computes ``DATE '1998-09-02'``.  SQLite, which evaluates witnesses and
may be the database a release reads, has no INTERVAL type and refuses the
expression, so :func:`fold_date_arithmetic` replaces such sums by the date they
denote before anything else reads the statement.  The meaning is the SQL
standard's (and PostgreSQL's): days are added on the calendar, months and years
keep the day of the month and clamp it to the month's last day
(``DATE '1993-01-31' + INTERVAL '1' MONTH`` is ``DATE '1993-02-28'``).

Only a DATE literal (``DATE 'YYYY-MM-DD'`` or ``CAST('YYYY-MM-DD' AS DATE)``)
plus or minus an INTERVAL literal of whole days, weeks, months or years is
folded, repeatedly (``DATE 'x' + INTERVAL '1' YEAR - INTERVAL '1' DAY``).  A
timestamp, a time unit below a day, a column or a text that is not a date is
left as written.
"""

from __future__ import annotations

import datetime
import re

import sqlglot
import sqlglot.errors
from sqlglot import exp

from cqsens.ir.expr import shift_date

__all__ = ["fold_date_arithmetic", "shift_date", "sqlite_dates"]

_UNITS = {"DAY": "DAY", "DAYS": "DAY", "WEEK": "WEEK", "WEEKS": "WEEK", "MONTH": "MONTH",
          "MONTHS": "MONTH", "YEAR": "YEAR", "YEARS": "YEAR"}
_AMOUNT = re.compile(r"\s*([+-]?\d{1,6})\s*([A-Za-z]*)\s*")


def _date(node: exp.Expr) -> datetime.date | None:
    """The date of a DATE literal (``DATE 'x'``, ``CAST('x' AS DATE)``), else None."""
    if isinstance(node, exp.Paren):
        return _date(node.this)
    literal: exp.Expr | None = None
    if isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.DATE):
        literal = node.this
    elif isinstance(node, (exp.Date, exp.DateStrToDate, exp.TsOrDsToDate)) \
            and not node.args.get("expressions") and not node.args.get("format"):
        literal = node.this
    if not isinstance(literal, exp.Literal) or not literal.is_string:
        return None
    try:
        return datetime.date.fromisoformat(literal.this.strip())
    except ValueError:
        return None


def _interval(node: exp.Expr) -> tuple[int, str] | None:
    """``(amount, unit)`` of an INTERVAL literal of days, weeks, months or years, else None."""
    if not isinstance(node, exp.Interval) or not isinstance(node.this, exp.Literal):
        return None
    match = _AMOUNT.fullmatch(str(node.this.this))
    if match is None:
        return None
    unit_node = node.args.get("unit")
    written = match.group(2) or (unit_node.name if unit_node is not None else "")
    if match.group(2) and unit_node is not None:
        return None  # INTERVAL '3 day' MONTH: not a form to guess at
    unit = _UNITS.get(written.upper())
    return (int(match.group(1)), unit) if unit is not None else None


def _fold(node: exp.Expr) -> exp.Expr:
    if not isinstance(node, (exp.Add, exp.Sub)):
        return node
    day, shift = _date(node.this), _interval(node.expression)
    if isinstance(node, exp.Add) and (day is None or shift is None):
        day, shift = _date(node.expression), _interval(node.this)  # INTERVAL + DATE
    if day is None or shift is None:
        return node
    amount, unit = shift
    try:
        result = shift_date(day, -amount if isinstance(node, exp.Sub) else amount, unit)
    except OverflowError:
        return node
    return exp.cast(exp.Literal.string(result.isoformat()), exp.DataType.Type.DATE)


def fold_date_arithmetic(tree: exp.Expr) -> exp.Expr:
    """``tree`` with every constant DATE ± INTERVAL replaced by its date literal.

    Parameters
    ----------
    tree : sqlglot expression
        A statement; it is changed in place (and returned).

    Returns
    -------
    sqlglot expression
        The same tree (a new root only when the root itself was folded).

    Examples
    --------
    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT 1 FROM t WHERE d < DATE '1994-01-01' + INTERVAL '1' YEAR")
    >>> fold_date_arithmetic(q).sql()
    "SELECT 1 FROM t WHERE d < CAST('1995-01-01' AS DATE)"
    """
    for node in reversed(list(tree.find_all(exp.Add, exp.Sub, bfs=False))):
        folded = _fold(node)  # children first, so chains of intervals fold from the date
        if folded is not node:
            if node is tree:
                return folded
            node.replace(folded)
    return tree


_SQLITE_PARTS = {"YEAR": "%Y", "MONTH": "%m", "DAY": "%d"}


def _extract_for_sqlite(node: exp.Expr) -> exp.Expr:
    if not isinstance(node, exp.Extract):
        return node
    part = _SQLITE_PARTS.get(node.this.name.upper()) if node.this is not None else None
    if part is None:
        return node
    call = exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string(part),
                                                        node.expression.copy()])
    return exp.cast(call, exp.DataType.Type.INT)


def sqlite_extracts(tree: exp.Expr) -> exp.Expr:
    """``tree`` with ``EXTRACT(YEAR|MONTH|DAY FROM d)`` written as SQLite computes it
    (see :func:`sqlite_dates`).

    Examples
    --------
    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT EXTRACT(YEAR FROM d) FROM t, u")
    >>> sqlite_extracts(q).sql(dialect="sqlite")
    "SELECT CAST(STRFTIME('%Y', d) AS INTEGER) FROM t, u"
    """
    return tree.transform(_extract_for_sqlite)


def sqlite_dates(sql: str) -> str:
    """``sql`` with ``EXTRACT(YEAR|MONTH|DAY FROM d)`` written as SQLite computes it.

    SQLite has no EXTRACT; on its ISO date texts ``CAST(STRFTIME('%Y', d) AS INTEGER)``
    is the same number.  Text that does not parse is returned as it is (the database
    then names the error).

    Examples
    --------
    >>> sqlite_dates("SELECT EXTRACT(YEAR FROM l_shipdate) AS y FROM lineitem")
    "SELECT CAST(STRFTIME('%Y', l_shipdate) AS INTEGER) AS y FROM lineitem"
    """
    if "extract" not in sql.lower():
        return sql
    try:
        trees = sqlglot.parse(sql, read="sqlite")
    except sqlglot.errors.SqlglotError:
        return sql
    if len(trees) != 1 or trees[0] is None:
        return sql
    return trees[0].transform(_extract_for_sqlite).sql(dialect="sqlite")
