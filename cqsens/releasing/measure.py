"""The measurements of a release, on the true values read in its transaction: DP partition
selection (OpenDP's Laplace threshold mechanism), Laplace or Gaussian noise for counts and
sums (discrete for counts), the exponential mechanism for MEDIAN, MIN and MAX
(:mod:`cqsens.release.noise`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from cqsens.analysis import AggregateRecord, Analysis
from cqsens.errors import CqsensError, InputError
from cqsens.frontend.parse_sql import parse_query
from cqsens.frontend.release_sql import QUANTILE_KINDS, ReleasePlan
from cqsens.ir.compound import CompoundQuery
from cqsens.ir.cq import AggregateQuery
from cqsens.ir.exact import Exact, display, sql_decimal, text
from cqsens.ir.expr import Abs
from cqsens.ir.schema import Schema
from cqsens.release import noise
from cqsens.release.keys import key_text
from cqsens.release.values import expression_bound, parse_value_bounds, value_bound
from cqsens.releasing.budget import _Budget
from cqsens.releasing.checks import _refuse_unbounded
from cqsens.releasing.results import Number, PartRelease

_GRID = 1001  # candidates of the exponential mechanism over a continuous range


def _number(value: object) -> Number:
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    return float(value)  # type: ignore[arg-type]


def _candidates(low: Exact, high: Exact) -> list[float]:
    """The exponential mechanism's grid over ``[low, high]``."""
    lo, hi = float(low), float(high)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise InputError("MEDIAN/MIN/MAX need finite value bounds for the candidates of the "
                         "exponential mechanism", construct="--bounds")
    if lo == hi:
        return [lo]
    if float(low).is_integer() and float(high).is_integer() and hi - lo <= 2 * _GRID:
        return [float(v) for v in range(int(lo), int(hi) + 1)]
    step = (hi - lo) / (_GRID - 1)
    return [lo + i * step for i in range(_GRID - 1)] + [hi]


def _value_range(analysis: Analysis, index: int, schema: Schema | None,
                 bounds: Sequence[str]) -> tuple[Exact, Exact]:
    """The range a release clamps the values of aggregate ``index`` to: the hull of the
    ranges its terms' bounds assumed (the terms of a signed sum, such as an outer join's,
    filter one column differently; a compound analysis keeps only its first term in
    ``query_obj``; a term summing ``ABS(v)`` bounds ``v`` in ``[−H, H]``).  Each term's
    values satisfy its own filters, so a value clamped to the hull stays in that term's
    range: the bound holds and data that obey the declared ranges are not changed."""
    cli = parse_value_bounds(bounds)
    lows: list[Exact] = []
    highs: list[Exact] = []
    for query in (analysis.query_obj, *_sum_terms(analysis, schema)):
        if index >= len(query.aggregates):
            continue
        agg = query.aggregates[index]
        if agg.expression is not None:
            vb = expression_bound(agg, cli=cli, schema=schema, query=query)
        else:
            assert agg.column_name is not None
            name = getattr(agg.column, "name", None)
            vb = value_bound(agg.column_name, cli=cli, schema=schema, query=query,
                             variable=name if isinstance(name, str) else None)
        # a semi-join-flips part sums ABS(v) for the statement's SUM(v): |v| ≤ H there,
        # so the statement's values may lie anywhere in [−H, H]
        lows.append(-vb.high if isinstance(agg.expression, Abs) else vb.low)
        highs.append(vb.high)
    return min(lows), max(highs)


def _sum_terms(analysis: Analysis, schema: Schema | None) -> tuple[AggregateQuery, ...]:
    """The conjunctive terms of the statement when it is a signed sum of them (outer joins,
    semi-joins under OR / NOT), else none."""
    sql = analysis.query_obj.sql
    if sql is None:
        return ()
    return _terms_of(analysis.query or sql, analysis.query_obj.dialect, analysis.source, schema)


@lru_cache(maxsize=16)
def _terms_of(sql: str, dialect: str | None, source: str,
              schema: Schema | None) -> tuple[AggregateQuery, ...]:
    """:func:`_sum_terms` of one statement, read once for all its aggregates."""
    try:
        parsed = parse_query(sql, schema=schema, dialect=dialect, source=source)
    except CqsensError:  # a statement read by another route: its first part is its query
        return ()
    out: list[AggregateQuery] = []
    stack: list[AggregateQuery | CompoundQuery] = [parsed]
    while stack:
        node = stack.pop()
        if isinstance(node, CompoundQuery):
            if node.combination == "sum":
                stack.extend(node.parts)
        elif node is not parsed:
            out.append(node)
    return tuple(out)


def _clamp_text(bounds: tuple[Exact, Exact]) -> tuple[str, str] | None:
    """A finite range as SQL digits rounded inward (a narrower clamp keeps the bound)."""
    low, high = bounds
    if low in (math.inf, -math.inf) or high in (math.inf, -math.inf) or low > high:
        return None
    return sql_decimal(low, toward=1), sql_decimal(high, toward=-1)


def _rows_changed(record: AggregateRecord, neighbor: str, contributions: int) -> int:
    """How many rows of the aggregated multiset one neighbour changes (symmetric distance)."""
    if record.count_bound == math.inf:
        raise InputError(f"{record.label}: the rows one person changes are unbounded, so the "
                         "exponential mechanism cannot be calibrated", construct="release")
    rows = math.ceil(record.count_bound) * contributions
    return rows * (2 if neighbor == "substitute" else 1)


def _part_values(conn: Any, target: str, plan: ReleasePlan, clamps: Mapping[int, tuple[str, str]],
                 noisy: Sequence[int]) -> dict[str, list[Number]]:
    """The true values of the noisy parts, per group key (the caller drops them)."""
    data: dict[str, list[Number]] = {}
    if noisy:
        width = len(plan.keys)
        for row in conn.exec_driver_sql(plan.parts_sql(target, clamps)).fetchall():
            data[key_text(row[:width])] = [_number(v) for v in row[width:]]
    return data


def _select_partitions(conn: Any, target: str, plan: ReleasePlan,
                       records: Sequence[AggregateRecord], budget: _Budget,
                       data: Mapping[str, Sequence[Number]], column_of: Mapping[int, int],
                       reanalyse: Callable[[str], Analysis], key_mode: str,
                       part_releases: dict[int, PartRelease],
                       released: dict[int, dict[str, Number | None]], notes: list[str]
                       ) -> tuple[list[str], str]:
    """The keys DP partition selection releases, with a COUNT part of the query or a
    COUNT(*) of its own (recorded under -1), and the key mode that says so."""
    select_with, extra_selection = budget.select_with, budget.extra_selection
    shares, delta_each = budget.shares, budget.delta_each
    labels = [p.sql for p in plan.parts]
    if select_with is not None:
        l1 = records[select_with].l1
        stats = {k: int(v[column_of[select_with]]) for k, v in data.items()}
        sel_eps, label = shares[select_with], labels[select_with]
    else:
        counted = reanalyse(plan.count_sql(plan.dialect))
        _refuse_unbounded(counted)
        l1 = counted.l1
        stats = {key_text(r[:-1]): int(r[-1])
                 for r in conn.exec_driver_sql(plan.count_sql(target)).fetchall()}
        sel_eps, label = shares[-1], "COUNT(*) (partition selection)"
    calib = noise.threshold_calibration(max(math.ceil(display(l1)), 1), sel_eps,
                                        delta_each)
    chosen = noise.select_partitions(stats, calib)
    domain = sorted(chosen)
    selection = PartRelease(label, "count", "Laplace threshold (partition selection)",
                            sel_eps, delta_each, calib.scale,
                            noise.laplace_halfwidth(calib.scale, integer=True),
                            f"ℓ1 {text(l1)}", "Laplace threshold")
    if select_with is not None:
        released[select_with] = dict(chosen)
        part_releases[select_with] = selection
    else:
        notes.append(f"partition selection released {label} with its own noise")
    key_mode += (f": a group is shown when its noisy count reaches {calib.threshold} "
                 f"(scale {calib.scale:g}, δ {delta_each:g})")
    if extra_selection:
        part_releases[-1] = selection
    return domain, key_mode


def _add_noise(plan: ReleasePlan, records: Sequence[AggregateRecord], parts_analysis: Analysis,
               domain: Sequence[str], data: Mapping[str, Sequence[Number]],
               column_of: Mapping[int, int], noisy: Sequence[int], budget: _Budget,
               mechanism: str, private: Sequence[str], part_releases: dict[int, PartRelease],
               released: dict[int, dict[str, Number | None]], notes: list[str]) -> None:
    """Release every count and sum not released yet: Laplace or Gaussian noise calibrated to
    its sensitivity, a value for every key of ``domain`` (0 when the data hold none)."""
    shares, delta_each = budget.shares, budget.delta_each
    for i in noisy:
        if i in released:
            continue
        part, record = plan.parts[i], records[i]
        values = [data[k][column_of[i]] if k in data else 0 for k in domain]
        l1, l2 = record.l1, record.l2
        if parts_analysis.aggregates[i].l1 == 0 and l1 != 0:
            notes.append(f"{part.sql}: its sensitivity is 0, but the query reads private "
                         f"tables ({', '.join(private)}): released with the noise of "
                         "sensitivity 1, as a safeguard (declare every table it reads public "
                         "to release it exactly)")
        if mechanism == "gaussian":
            out, sigma, _ = noise.sample_gaussian(values, l2=l2, epsilon=shares[i],
                                                  delta=delta_each, integer=part.integer)
            part_releases[i] = PartRelease(
                part.sql, part.kind, f"{'discrete ' if part.integer else ''}Gaussian (zCDP)",
                shares[i], delta_each, sigma,
                noise.gaussian_halfwidth(sigma, integer=part.integer), f"ℓ2 {display(l2)}",
                f"{'discrete ' if part.integer else ''}Gaussian")
        else:
            out, scale = noise.sample_laplace(values, l1=l1, epsilon=shares[i],
                                              integer=part.integer)
            part_releases[i] = PartRelease(
                part.sql, part.kind, f"{'discrete ' if part.integer else ''}Laplace",
                shares[i], 0.0, scale, noise.laplace_halfwidth(scale, integer=part.integer),
                f"ℓ1 {text(l1)}", f"{'discrete ' if part.integer else ''}Laplace")
        released[i] = dict(zip(domain, out, strict=True))
        if part_releases[i].scale == 0:
            notes.append(f"{part.sql}: its sensitivity is 0 and every table it reads is "
                         "declared public, so it is released without noise")


def _add_quantiles(conn: Any, target: str, plan: ReleasePlan, records: Sequence[AggregateRecord],
                   parts_analysis: Analysis, domain: Sequence[str],
                   clamps: Mapping[int, tuple[str, str]], shares: Sequence[float], *,
                   schema: Schema | None, bounds: Sequence[str], neighbor: str,
                   contributions: int, part_releases: dict[int, PartRelease],
                   released: dict[int, dict[str, Number | None]], notes: list[str]) -> None:
    """Release every MEDIAN, MIN and MAX by the exponential mechanism over a grid of its value
    range, one measurement per released key."""
    for i, part in enumerate(plan.parts):
        if part.kind not in QUANTILE_KINDS:
            continue
        low, high = _value_range(parts_analysis, i, schema, bounds)
        candidates = _candidates(low, high)
        rows = _rows_changed(records[i], neighbor, contributions)
        width = len(plan.keys)
        groups: dict[str, list[float]] = {}
        for row in conn.exec_driver_sql(plan.rows_sql(i, target, clamps.get(i))).fetchall():
            if row[width] is not None:
                groups.setdefault(key_text(row[:width]), []).append(float(row[width]))
        out_q: dict[str, Number | None] = {}
        scale = 0.0
        for k in domain:
            value, scale = noise.sample_quantile(groups.get(k, []), candidates=candidates,
                                                 alpha=QUANTILE_KINDS[part.kind], rows=rows,
                                                 epsilon=shares[i])
            out_q[k] = value
        released[i] = out_q
        part_releases[i] = PartRelease(
            part.sql, part.kind, f"exponential mechanism over {len(candidates)} candidates "
            f"in [{display(low)}, {display(high)}]", shares[i], 0.0, scale, None,
            f"{rows} rows", "exponential mechanism")
        if len(domain) > 1:
            notes.append(f"{part.sql}: each group's mechanism is ε-DP for the rows it holds; "
                         f"a person's {rows} rows lie in at most that many groups, and the "
                         "privacy loss is linear in the rows changed, so together they are "
                         f"{shares[i]:g}-DP")
