"""From the CQ count bound to the released statistic: aggregates, neighbours, noise.

The CQ engine bounds how many answers one added or removed tuple can create
(``count_delta``).  This module turns that into the ℓ1/ℓ2 sensitivity of what
is released — COUNT, COUNT(DISTINCT), SUM, AVG, MEDIAN, MIN, MAX, GROUP BY
histograms, several aggregates at once — under the chosen neighbour model and
number of tuples per individual (docs/rules.md, rules contributions and
grouped-value-aggregates), and calibrates the noise.

Value bounds for a column come from ``--bounds 'Table.col=low:high'``, a CHECK
in the schema, or range filters of the WHERE clause; the tightest applies
(their intersection) and the output says which source gave each end.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from fractions import Fraction

from cqsens.engine.rules import Rule
from cqsens.errors import InputError
from cqsens.ir.cq import CQ, Aggregate, AggregateQuery, Const, Var
from cqsens.ir.exact import Exact, exact, mul, sqrt_upper, text
from cqsens.ir.expr import Case, render
from cqsens.ir.expr import Literal as ExprLiteral
from cqsens.ir.schema import Schema
from cqsens.ir.semantics import slot_ranges
from cqsens.release.aggregates import (
    AggregateBound,
    avg_bound,
    count_bound,
    derived,
    grouped_range_bound,
    histogram_bound,
    median_bound,
    min_max_bound,
    sum_bound,
    vector_bound,
)
from cqsens.release.intervals import Interval, Unbounded, expression_range

__all__ = [
    "VALUE_KINDS",
    "ValueBound",
    "aggregate_bound",
    "check_value_bounds",
    "expression_bound",
    "expression_nullable",
    "parse_value_bounds",
    "value_bound",
    "where_ranges",
]

VALUE_KINDS = ("sum", "avg", "median", "min", "max")
_NUMBER = r"(-?[\d.eE+]+)"
_BOUND = re.compile(
    r"^\s*([A-Za-z_][\w$]*)\.([A-Za-z_][\w$]*)\s*=\s*" + _NUMBER + r"\s*:\s*" + _NUMBER + r"\s*$"
)


@dataclass(frozen=True, slots=True)
class ValueBound:
    """``[low, high]`` for a column and where each end comes from."""

    column: str
    low: Exact
    high: Exact
    low_source: str
    high_source: str

    def describe(self) -> str:
        """``Pat.age in [0, 120] (CHECK; CHECK)``."""
        src = self.low_source if self.low_source == self.high_source else (
            f"low from {self.low_source}, high from {self.high_source}")
        return f"{self.column} in [{_num(self.low)}, {_num(self.high)}] ({src})"


def _num(x: Exact) -> str:
    return text(x, digits=17)


def parse_value_bounds(texts: Iterable[str]) -> dict[str, tuple[Exact, Exact]]:
    """``['Pat.age=0:120']`` → ``{'pat.age': (0, 120)}``, read exactly.

    >>> parse_value_bounds(["Pat.age=0:120", "Doc.fee=-5:2.5", "T.v=0:9007199254740993"])
    {'pat.age': (0, 120), 'doc.fee': (-5, Fraction(5, 2)), 't.v': (0, 9007199254740993)}
    """
    out: dict[str, tuple[Exact, Exact]] = {}
    for entry in texts:
        m = _BOUND.match(entry)
        if not m:
            raise InputError(f"bad value bound {entry!r}: write Table.column=low:high, "
                             "e.g. Pat.age=0:120",
                             source="--bounds", construct="--bounds")
        try:
            low, high = exact(m.group(3)), exact(m.group(4))
        except (ValueError, ZeroDivisionError):
            raise InputError(f"bad value bound {entry!r}: {m.group(3)} or {m.group(4)} is not "
                             "a number", source="--bounds", construct="--bounds") from None
        if low > high:
            raise InputError(f"bad value bound {entry!r}: low {text(low)} is above high "
                             f"{text(high)}", source="--bounds", construct="--bounds")
        out[f"{m.group(1)}.{m.group(2)}".lower()] = (low, high)
    return out


def check_value_bounds(bounds: Mapping[str, tuple[Exact, Exact]], schema: Schema | None) -> None:
    """Refuse ``--bounds`` for a table or column the schema lacks (nothing to check without one).

    Parameters
    ----------
    bounds : mapping
        What :func:`parse_value_bounds` returns: ``'table.column'`` (lower case) → bounds.
    schema : Schema, optional
        The schema of the analysis.

    Raises
    ------
    InputError
        Naming the table and its columns (or the schema's tables).

    >>> from cqsens.ir.schema import Relation, Schema
    >>> s = Schema((Relation("Pat", ("id", "age")),))
    >>> check_value_bounds({"pat.age": (0.0, 120.0)}, s)
    >>> check_value_bounds({"pat.nocol": (0.0, 1.0)}, s)
    Traceback (most recent call last):
    ...
    cqsens.errors.InputError: --bounds: table Pat has no column nocol (columns: id, age) [--bounds]
    """
    if schema is None:
        return
    for key in bounds:
        table, _, column = key.partition(".")
        rel = schema.find(table)
        if rel is None:
            raise InputError(f"table {table} is not in the schema (it has: "
                             f"{', '.join(schema.relation_names())})",
                             source="--bounds", construct="--bounds")
        if rel.index(column) is None:
            raise InputError(f"table {rel.name} has no column {column} (columns: "
                             f"{', '.join(rel.columns)})", source="--bounds", construct="--bounds")


def where_ranges(cq: CQ) -> dict[str, tuple[Exact, Exact]]:
    """Variable name → the range the query's filters over that variable alone put on it.

    Only a filter atom over a single variable counts (one alias's column, not
    every alias of the table); its conjuncts of comparisons with numbers are read
    by :func:`cqsens.ir.expr.slot_ranges`.
    """
    out: dict[str, tuple[Exact, Exact]] = {}
    for atom in cq.sorted_atoms():
        if atom.predicate is None or len(atom.terms) != 1 or not isinstance(atom.terms[0], Var):
            continue
        found = slot_ranges(atom.predicate).get(0)
        if found is None or (found[0] == -math.inf and found[1] == math.inf):
            continue
        name = atom.terms[0].name
        low, high = out.get(name, (-math.inf, math.inf))
        out[name] = (found[0] if found[0] > low else low, found[1] if found[1] < high else high)
    return out


def value_bound(
    column: str,
    *,
    cli: Mapping[str, tuple[Exact, Exact]],
    schema: Schema | None,
    query: AggregateQuery,
    variable: str | None = None,
) -> ValueBound:
    """The tightest ``[low, high]`` for ``Table.column`` from the three sources.

    ``--bounds`` and CHECKs hold for the column in every alias; a WHERE range
    filter only for the aliased column it names (``variable``).

    Raises
    ------
    InputError
        No source bounds the column on both sides.
    """
    low: Exact = -math.inf
    high: Exact = math.inf
    low_src = high_src = ""
    sources: list[tuple[str, Exact, Exact]] = []
    if column.lower() in cli:
        sources.append(("--bounds", *cli[column.lower()]))
    table, _, col = column.partition(".")
    if schema is not None and (rel := schema.find(table)) is not None:
        pos = rel.index(col)
        if pos is not None and (b := rel.bound(pos)) is not None:
            sources.append(("CHECK in the schema", *b))
    ranges = where_ranges(query.cq)
    if variable is not None and variable in ranges:
        lo, hi = ranges[variable]  # filters on this alias's column only
        sources.append(("WHERE filter", lo, hi))
    for src, lo, hi in sources:
        if lo > low:
            low, low_src = lo, src
        if hi < high:
            high, high_src = hi, src
    if low == -math.inf or high == math.inf:
        raise InputError(
            f"{column} needs value bounds on both sides for this aggregate: give "
            f"--bounds '{column}=low:high', a CHECK ({col} BETWEEN low AND high) in the schema, "
            f"or a range filter in the WHERE clause",
            source=query.source, construct=f"bounds of {column}",
        )
    return ValueBound(column, low, high, low_src, high_src)  # low > high: no row qualifies


def expression_bound(
    aggregate: Aggregate,
    *,
    cli: Mapping[str, tuple[Exact, Exact]],
    schema: Schema | None,
    query: AggregateQuery,
) -> ValueBound:
    """``[low, high]`` of an aggregated expression, by exact interval arithmetic
    (:mod:`cqsens.release.intervals`) from the bounds of its columns (:func:`value_bound`).

    Each column of the expression contributes its tightest range (``--bounds``,
    CHECK, WHERE filters on that alias's column); a term the WHERE clause fixes
    to a number contributes that number.

    Raises
    ------
    InputError
        A column without bounds on both sides (named, with how to bound it), or
        an expression whose range is unbounded: a divisor that can be 0, a text
        value, a function cqsens cannot bound (the reason is in the message).
    """
    expression = aggregate.expression
    assert expression is not None, "expression_bound is for aggregates over an expression"
    names = list(aggregate.term_columns)
    ranges: list[Interval] = []
    used: list[ValueBound] = []
    missing: list[str] = []
    for term, column in zip(aggregate.terms, aggregate.term_columns, strict=True):
        if isinstance(term, Const) and isinstance(term.value, (int, float)) \
                and not isinstance(term.value, bool):
            v = exact(term.value)
            ranges.append(Interval(v, v))
            continue
        try:
            b = value_bound(column, cli=cli, schema=schema, query=query,
                            variable=term.name if isinstance(term, Var) else None)
        except InputError:
            missing.append(column)
            ranges.append(Interval(-math.inf, math.inf))
            continue
        used.append(b)
        ranges.append(Interval(b.low, b.high))
    shown = render(expression, names)
    what = f"{aggregate.kind.upper()}({shown})"
    try:
        found = expression_range(expression, ranges, names)
    except Unbounded as exc:
        raise InputError(f"{what} is unbounded: {exc.reason}", source=query.source,
                         construct=f"bounds of {shown}") from None
    if found is None:  # always NULL: no value is ever aggregated
        found = Interval(1, 0)
    if math.isinf(found.low) or math.isinf(found.high):
        columns = ", ".join(dict.fromkeys(missing)) or shown
        first = missing[0] if missing else "Table.column"
        raise InputError(
            f"{what} needs value bounds on both sides: bound {columns} with --bounds "
            f"'{first}=low:high', a CHECK in the schema, or a range filter in the WHERE clause",
            source=query.source, construct=f"bounds of {shown}")
    sources = "interval arithmetic from " + (
        "; ".join(dict.fromkeys(b.describe() for b in used)) or "constants")
    return ValueBound(shown, found.low, found.high, sources, sources)


def expression_nullable(aggregate: Aggregate, schema: Schema | None) -> bool:
    """Whether the aggregated expression may be NULL: a column that may hold NULL
    (True without a schema that says otherwise), a NULL constant or a CASE without ELSE."""
    expression = aggregate.expression
    if expression is None:
        return False
    for column in aggregate.term_columns:
        table, _, name = column.partition(".")
        rel = schema.find(table) if schema is not None else None
        position = rel.index(name) if rel is not None else None
        if rel is None or position is None or rel.nullable(position):
            return True
    return _null_inside(expression)


def _null_inside(node: object) -> bool:
    """A NULL literal or a CASE without ELSE anywhere in a typed expression."""
    if isinstance(node, ExprLiteral):
        return node.value is None
    if isinstance(node, Case) and node.default is None:
        return True
    if isinstance(node, tuple):
        return any(_null_inside(part) for part in node)
    if is_dataclass(node):
        return any(_null_inside(getattr(node, f.name)) for f in fields(node))
    return False


def aggregate_bound(
    aggregate: Aggregate,
    count_delta: float,
    *,
    grouped: bool,
    neighbor: str,
    contributions: int,
    values: ValueBound | None,
    single_table_unfiltered: bool,
    rows: int | None = None,
    groups: Exact | None = None,
) -> AggregateBound:
    """ℓ1/ℓ2 of one aggregate given the CQ engine's count bound.

    ``groups`` bounds how many groups one tuple touches (the count bound of the
    query whose free variables are the GROUP BY variables); AVG, MEDIAN, MIN and
    MAX use it in place of Δ when it is smaller.

    ``count_delta`` is the bound on the counted answers (with the group columns
    free for a histogram, or the COUNT(*) bound for value aggregates).

    Notes
    -----
    Grouped value aggregates: one tuple touches at most Δ rows (add-remove),
    hence at most Δ groups; each group's value moves at most by the scalar bound,
    so ℓ1 ≤ groups × that and ℓ2 ≤ √groups × that. Under substitution a group
    touched by the removal or the addition alone moves by at most the add-remove
    bound a, one touched by both by at most the substitution bound s:
    ℓ1 ≤ Δk·max(s, 2a) (:func:`cqsens.release.aggregates.grouped_range_bound`).
    A grouped SUM moves by at most max(|m|,|M|) per touched row: ℓ1 ≤ Δ·max(|m|,|M|)
    add-remove and twice that under substitution (ℓ2 ≤ √2 times it).
    """
    kind = aggregate.kind
    k = contributions
    if kind in ("count", "count_distinct"):
        if grouped:
            return histogram_bound(count_delta, neighbor=neighbor, contributions=k)
        if kind == "count" and aggregate.column is None and aggregate.expression is None \
                and neighbor == "substitute" and single_table_unfiltered:
            return derived(0, 0, neighbor, Rule.COUNT_SUBSTITUTION, k, aggregate="count",
                           single_table=1)
        return count_bound(count_delta, neighbor=neighbor, contributions=k)
    assert values is not None
    lo, hi = values.low, values.high
    if lo > hi:
        return derived(0, 0, neighbor, Rule.EMPTY_VALUE_RANGE, k, aggregate=kind,
                       column=values.column, low=lo, high=hi)
    if kind == "sum":
        if grouped and neighbor == "substitute":
            ar = sum_bound(count_delta, lo, hi, neighbor="add-remove", contributions=k)
            # Removing a negative value and adding a positive one move one group the same
            # way, so no √2 saving: ℓ2 ≤ ℓ1.
            return derived(2 * ar.l1, 2 * ar.l1, neighbor, Rule.GROUPED_VALUE_AGGREGATES, k,
                           (ar.derivation,), aggregate="sum")
        return sum_bound(count_delta, lo, hi, neighbor=neighbor, contributions=k,
                         single_table_unfiltered=single_table_unfiltered and not grouped)
    if kind not in ("avg", "median", "min", "max"):  # pragma: no cover - not produced
        raise InputError(f"unknown aggregate {kind}")

    def scalar_bound(model: str) -> AggregateBound:
        if kind == "avg":
            return avg_bound(count_delta, lo, hi, neighbor=model, contributions=k)
        if kind == "median":
            return median_bound(count_delta, lo, hi, neighbor=model, rows=rows, contributions=k)
        return min_max_bound(count_delta, lo, hi, neighbor=model, contributions=k)

    scalar = scalar_bound(neighbor)
    if not grouped:
        return scalar
    if count_delta == 0:
        return AggregateBound(0, 0, neighbor, scalar.derivation)
    touched: Exact = count_delta if groups is None or groups > count_delta else groups
    if neighbor == "substitute":
        return grouped_range_bound(scalar, scalar_bound("add-remove"), touched * k, kind=kind)
    many = touched * k
    if kind == "avg" and k == 1 and count_delta != math.inf and lo < hi \
            and hi - lo != math.inf:  # a chain of k > 1 steps may remove rows and add others
        return _spread_avg(scalar, many, exact(count_delta), hi - lo)
    return derived(mul(many, scalar.l1), mul(sqrt_upper(many), scalar.l2), neighbor,
                   Rule.GROUPED_VALUE_AGGREGATES, k, (scalar.derivation,), aggregate=kind,
                   groups=many)


def _spread_avg(scalar: AggregateBound, groups: Exact, rows: Exact,
                span: Exact) -> AggregateBound:
    """Grouped AVG, add-remove of one row: ``groups`` groups share the ``rows`` added rows.

    A group with ``n ≥ 1`` rows that gains ``d`` moves by at most ``d/(n + d)·span ≤
    h(d)·span`` with ``h(d) = d/(1 + d)``; ``h`` is concave and Σ d ≤ ``rows``, so the
    ℓ1 change is at most ``T·h(rows/T)·span = T·rows/(T + rows)·span`` over ``T``
    groups (Jensen), and ``h ≤ 1`` gives ℓ2² ≤ Σ h(d)²·span² ≤ Σ h(d)·span²
    (docs/rules.md, rule grouped-value-aggregates).
    """
    share = Fraction(groups) * Fraction(rows) / (Fraction(groups) + Fraction(rows))
    l1 = mul(share, span)
    l2 = min(mul(sqrt_upper(groups), scalar.l2), mul(sqrt_upper(share), span))
    return derived(l1, l2, "add-remove", Rule.GROUPED_VALUE_AGGREGATES, 1,
                   (scalar.derivation,), aggregate="avg", groups=groups, rows=rows)


def combine(bounds: list[AggregateBound]) -> AggregateBound:
    """Several aggregates released together: ℓ1 sums, ℓ2 is the root of the sum of squares."""
    return bounds[0] if len(bounds) == 1 else vector_bound(bounds)
