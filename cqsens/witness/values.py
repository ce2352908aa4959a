"""Concrete values for labelled nulls, meeting the CHECKs and unary filters."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Mapping, Sequence

from cqsens.frontend.sqlgen import ColumnRef, predicate_sql
from cqsens.ir.cq import CQ, Const, Var
from cqsens.ir.expr import Expr, Predicate, Slot, bind, literal_of, literals
from cqsens.ir.semantics import Bound, Undecided, checks_range, evaluate
from cqsens.witness.evaluate import Value

__all__ = ["RANGE_SCAN", "NoValue", "Values", "fresh_in_range", "fresh_or_repeated", "span",
           "unary_checks"]


class NoValue(Exception):
    """No fresh value meets the predicates on a column (a small finite domain)."""


class Values:
    """Concrete values for nulls: distinct, avoiding the query's constants, and
    satisfying the unary filters on the variable they stand for when possible."""

    def __init__(
        self, cq: CQ, conn: sqlite3.Connection,
        memo: dict[Predicate, dict[str, bool]] | None = None,
    ) -> None:
        self.conn = conn
        self.used: set[Value] = {c.value for c in cq.constants()}
        self.counter = 0
        # predicate → (repr of a value → holds), across attempts: a predicate is hashed once
        # per call, not once per candidate value (hashing a predicate walks its whole tree)
        self.memo = {} if memo is None else memo
        # id of a check → (the check, its SQL with the value as a parameter)
        self.templates: dict[int, tuple[Predicate, str]] = {}
        # id of a check → (the check, its table in memo): the table found without hashing
        # the check again (the entry holds the check, so its identity is not reused)
        self.by_id: dict[int, tuple[Predicate, dict[str, bool]]] = {}

    def fresh(self, checks: Sequence[Predicate] = ()) -> Value:
        """A value not used before that meets every predicate in ``checks``.

        The candidates are tried in the order of :meth:`_candidates`; those that do not
        depend on the counter (the values near the predicates' literals) are decided
        once per ``checks`` (:func:`_plan`), so a column filled many times (the copies
        of a growing family) costs a few set lookups per value.

        Raises
        ------
        NoValue
            When ``checks`` is not empty and no candidate meets it.
        """
        if not checks:
            return self._fresh_unchecked()
        tables = self._tables(checks)
        low, high = span(checks)
        for _ in range(3):  # the fresh numbers first, as in _candidates
            self.counter += 1
        counter = self.counter
        for number in (counter + 998, counter + 999, counter + 1000):
            if number not in self.used and low <= number <= high \
                    and self._all_hold(tables, number):
                self.used.add(number)
                return number
        for kind, item in _plan(self, checks, tables):
            value: Value = item if kind == "" else (f"{item}{counter}" if kind == "+" else
                                             f"{counter}{item}")
            if value in self.used:
                continue
            if kind == "" or self._all_hold(tables, value):
                self.used.add(value)
                return value
        raise NoValue  # never a value that breaks a CHECK or a filter on its column

    def _fresh_unchecked(self) -> Value:
        """:meth:`fresh` without predicates: the first unused of the counter's values
        (:meth:`_candidates` without predicates, written out)."""
        start = self.counter
        self.counter += 3
        for value in (1001 + start, 1002 + start, 1003 + start, f"v{start + 3}"):
            if value not in self.used:
                self.used.add(value)
                return value
        self.counter += 1  # pragma: no cover
        return 1000 + self.counter  # pragma: no cover

    def meeting(self, checks: Sequence[Predicate]) -> Value | None:
        """A value that meets every predicate in ``checks``, used before or not (None
        when no candidate does): for a column whose values may repeat.  The first of
        :meth:`_candidates` that does (the counter moves on as it does there)."""
        tables = self._tables(checks)
        low, high = span(checks)
        for _ in range(3):
            self.counter += 1
        counter = self.counter
        for number in (counter + 998, counter + 999, counter + 1000):
            if low <= number <= high and self._all_hold(tables, number):
                return number
        for kind, item in _plan(self, checks, tables):
            value: Value = item if kind == "" else (
                f"{item}{counter}" if kind == "+" else f"{counter}{item}")
            if kind == "" or self._all_hold(tables, value):
                return value
        return None

    def _candidates(self, checks: Sequence[Predicate]) -> list[Value]:
        """Values to try: fresh numbers, then values near the predicates' literals."""
        candidates: list[Value] = []
        for _ in range(3):
            self.counter += 1
            candidates.append(1000 + self.counter)
        for checker in checks:
            for lit in literals(checker):
                if isinstance(lit, (int, float)):
                    for delta in (1, -1, 0, 2, -2):
                        candidates.append(lit + delta + 0)
                    candidates.extend(lit + 1 + n for n in range(3, 200, 7))
                else:
                    base = lit.replace("%", "").replace("_", "x")
                    candidates += [base, base + f"{self.counter}", f"{self.counter}{base}", lit]
        candidates.append(f"v{self.counter}")
        return candidates

    def holds(self, check: Predicate, value: Value) -> bool:
        """Does ``check`` (over ``Slot(0)``) hold for ``value``?  Decided in Python,
        or by SQLite where Python cannot match SQLite's semantics exactly."""
        return self._holds(check, self._table(check)[1], value, repr(value))

    def _table(self, check: Predicate) -> tuple[Predicate, dict[str, bool]]:
        got = self.by_id.get(id(check))
        if got is None or got[0] is not check:
            got = self.by_id[id(check)] = (check, self.memo.setdefault(check, {}))
        return got

    def _tables(self, checks: Sequence[Predicate]) -> list[tuple[Predicate, dict[str, bool]]]:
        return [self._table(chk) for chk in checks]

    def _all_hold(self, tables: Sequence[tuple[Predicate, dict[str, bool]]],
                  value: Value) -> bool:
        shown = repr(value)
        for chk, table in tables:
            got = table.get(shown)
            if not (self._holds(chk, table, value, shown) if got is None else got):
                return False
        return True

    def _holds(self, check: Predicate, table: dict[str, bool], value: Value,
               shown: str) -> bool:
        got = table.get(shown)
        if got is None:
            try:
                got = evaluate(check, [value]) is True
            except Undecided:
                try:
                    row = self._in_sqlite(check, value).fetchone()
                    got = bool(row and row[0])
                except sqlite3.Error:
                    got = False
            table[shown] = got
        return got

    def _in_sqlite(self, check: Predicate, value: Value) -> sqlite3.Cursor:
        """SQLite's answer to ``check`` for ``value``: an integer or a plain text bound as a
        parameter of the check's SQL, written once per check (SQLite reads a bound integer
        or text as the literal that spells it); any other value spelled as a literal."""
        if not _bindable(value):
            return self.conn.execute("SELECT " + predicate_sql(check, [value]))
        got = self.templates.get(id(check))
        if got is None or got[0] is not check:
            got = (check, f"SELECT {predicate_sql(check, [_PROBE])} FROM (SELECT ? AS "
                          f'"{_PROBE.name}") AS "{_PROBE.table}"')
            if len(self.templates) >= _TEMPLATES_MAX:
                self.templates.clear()
            self.templates[id(check)] = got
        return self.conn.execute(got[1], (value,))


#: The column a check's prepared SQL reads its value from (a one-row subquery).
_PROBE = ColumnRef("cqsens_probe", "value")
#: The prepared checks one :class:`Values` keeps (then it starts afresh).
_TEMPLATES_MAX = 4096


def _bindable(value: Value) -> bool:
    """An integer SQLite stores as one (64 bits) or a text of printable characters without
    a backslash: bound as a parameter it is the value its literal spells."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -(2**63) < value < 2**63
    return isinstance(value, str) and value.isprintable() and "\\" not in value


#: The spans of :func:`span` kept at most (then they start afresh).
_SPANS_MAX = 4096
_SPANS: dict[tuple[int, ...], tuple[tuple[Predicate, ...], tuple[Bound, Bound]]] = {}


def span(checks: Sequence[Predicate]) -> tuple[Bound, Bound]:
    """The closed range :func:`~cqsens.ir.semantics.checks_range` the checks put on their
    column: a number outside it breaks one of them (an inside one is still evaluated), so
    a fresh number outside it is passed over without evaluating each check.  Kept per
    ``checks`` by identity (the entry holds the predicates, so an identity is not reused
    while it is kept; hashing a predicate walks its whole tree)."""
    key = tuple(id(c) for c in checks)
    got = _SPANS.get(key)
    if got is not None and len(got[0]) == len(checks) and all(
            a is b for a, b in zip(got[0], checks, strict=True)):
        return got[1]
    found = checks_range(checks)
    if len(_SPANS) >= _SPANS_MAX:
        _SPANS.clear()
    _SPANS[key] = (tuple(checks), found)
    return found


#: The plans of :func:`_plan` kept at most (then they start afresh).
_PLANS_MAX = 4096
_PLANS: dict[tuple[int, ...], tuple[tuple[Predicate, ...], tuple[tuple[str, Value], ...]]] = {}


def _plan(values: Values, checks: Sequence[Predicate],
          tables: Sequence[tuple[Predicate, dict[str, bool]]]) -> tuple[tuple[str, Value], ...]:
    """The candidates of :meth:`Values._candidates` after the three fresh numbers, in
    order, as ``("", value)`` for a value that meets every check (those that do not
    are left out: a check is deterministic), or ``("+", base)`` / ``("-", base)`` for
    ``base`` followed or preceded by the counter (the last is ``v`` and the counter),
    decided when used.  Kept per ``checks`` by identity (the entry holds the
    predicates, so an identity is not reused while it is kept)."""
    key = tuple(id(c) for c in checks)
    got = _PLANS.get(key)
    if got is not None and len(got[0]) == len(checks) and all(
            a is b for a, b in zip(got[0], checks, strict=True)):
        return got[1]
    out: list[tuple[str, Value]] = []
    seen: set[tuple[str, str, Value]] = set()

    def add(kind: str, item: Value) -> None:
        entry = (kind, item)
        if (kind, type(item).__name__, item) in seen:  # 1 and 1.0 are two candidates
            return
        seen.add((kind, type(item).__name__, item))
        if kind == "" and not values._all_hold(tables, item):
            return
        out.append(entry)

    for checker in checks:
        for lit in literals(checker):
            if isinstance(lit, (int, float)):
                for delta in (1, -1, 0, 2, -2):
                    add("", lit + delta + 0)
                for n in range(3, 200, 7):
                    add("", lit + 1 + n)
            else:
                base = lit.replace("%", "").replace("_", "x")
                add("", base)
                add("+", base)
                add("-", base)
                add("", lit)
    add("+", "v")
    if len(_PLANS) >= _PLANS_MAX:
        _PLANS.clear()
    _PLANS[key] = (tuple(checks), tuple(out))
    return tuple(out)


def unary_checks(
    core_cq: CQ, column_checks: Mapping[tuple[str, int], Sequence[Predicate]]
) -> dict[Var, list[Predicate]]:
    """The predicates each variable's value must meet: its columns' CHECKs, and
    the filters over it alone (constants bound in), each over ``Slot(0)``."""
    checks: dict[Var, list[Predicate]] = {}
    for atom in core_cq.relation_atoms():
        for pos, term in enumerate(atom.terms):
            if isinstance(term, Var):
                for check in column_checks.get((atom.relation, pos), ()):
                    if check not in checks.setdefault(term, []):
                        checks[term].append(check)
    for atom in core_cq.sorted_atoms():
        if atom.predicate is not None and len(atom.variables()) == 1:
            (var,) = atom.variables()
            args: list[Expr] = []
            for term in atom.terms:
                if isinstance(term, Const):
                    args.append(literal_of(term.value))
                else:  # the filter's only variable
                    args.append(Slot(0))
            checks.setdefault(var, []).append(bind(atom.predicate, args))
    return checks


RANGE_SCAN = 100_000  # integers of a CHECK range tried for a distinct value


#: The ranges :func:`_checks_range` keeps at most (then it starts afresh).
_RANGES_MAX = 4096
_RANGES: dict[tuple[int, ...], tuple[tuple[Predicate, ...], range | None]] = {}


def _checks_range(checks: Sequence[Predicate]) -> range | None:
    """The integers :func:`fresh_in_range` scans for ``checks``: from the low end of
    their :func:`~cqsens.ir.semantics.checks_range`, at most ``RANGE_SCAN`` past it, up to
    the high end (None when a finite range is not given).  Kept per ``checks`` by
    identity (the entry holds the predicates, so an identity is not reused while it is
    kept; hashing a predicate walks its whole tree): one column's checks are read again
    for every value a construction gives it."""
    key = tuple(id(c) for c in checks)
    got = _RANGES.get(key)
    if got is not None and len(got[0]) == len(checks) and all(
            a is b for a, b in zip(got[0], checks, strict=True)):
        return got[1]
    low, high = checks_range(checks)
    found: range | None = None
    if not (low == -math.inf or high == math.inf or low > high):
        start = math.ceil(low)
        found = range(start, min(math.floor(high), start + RANGE_SCAN) + 1)
    if len(_RANGES) >= _RANGES_MAX:
        _RANGES.clear()
    _RANGES[key] = (tuple(checks), found)
    return found


def fresh_in_range(values: Values, checks: Sequence[Predicate]) -> Value:
    """A distinct integer inside the range the checks put on the column, scanned from its
    low end, when the values near the checks' literals are used up (many rows of one
    checked column: 20 orders each with a total in [0, 500]).

    Raises
    ------
    NoValue
        When the checks give no finite integer range, or every integer of it is used or
        fails a check.
    """
    scan = _checks_range(checks)
    if scan is None:
        raise NoValue
    for value in scan:
        if value not in values.used and all(values.holds(c, value) for c in checks):
            values.used.add(value)
            return value
    raise NoValue


def fresh_or_repeated(values: Values, checks: Sequence[Predicate]) -> Value:
    """A distinct value of the checks' integer range, else one used before that meets them
    (a column with a small domain, ``CHECK (flag IN (0, 1))``, under many rows): the
    database is evaluated from scratch, so a repeated value only changes what it proves.

    Raises
    ------
    NoValue
        When no candidate meets the checks.
    """
    try:
        return fresh_in_range(values, checks)
    except NoValue:
        repeated = values.meeting(checks)
        if repeated is None:
            raise
        return repeated
