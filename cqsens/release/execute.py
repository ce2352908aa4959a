"""Run a query on a database and release its answer with differential privacy.

:func:`release` takes the analysis of the user's query (whose sensitivity
calibrates the noise) and

1. refuses an unbounded query, with the analysis's advice;
2. splits the SELECT list into the aggregates it releases
   (:func:`cqsens.frontend.release_sql.release_plan`): each is noised on its
   own, and the arithmetic of the SELECT list (``AVG`` = SUM/COUNT included)
   is recomputed from the noisy parts;
3. runs the parts in one read-only transaction (PostgreSQL's read-only
   transactions, SQLite's ``query_only``);
4. picks the released groups: every key of a public domain (zeros included),
   or the keys that pass OpenDP's Laplace threshold mechanism (partition
   selection, which needs δ);
5. adds OpenDP's noise (:mod:`cqsens.release.noise`) calibrated to each part's
   sensitivity: discrete noise for counts, float noise for sums, the
   exponential mechanism for MEDIAN, MIN and MAX.

**Budget split.**  The release is a composition of ``m`` measurements: one per
released part, plus the partition selection when it is not the release of a
COUNT of the query.  Unless ε is given per part, every measurement gets
``ε/m`` (basic composition, Dwork and Roth 2014, Thm 3.16); δ is split evenly
among the measurements that use it (the Gaussian parts and the selection).

The true answer stays in memory: it is not returned, logged or stored, and no
error message shows it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cqsens.analysis import AggregateRecord, Analysis
from cqsens.db.connect import connect, mask_url
from cqsens.errors import InputError
from cqsens.frontend.release_sql import (
    NOISY_KINDS,
    QUANTILE_KINDS,
    Formula,
    ReleasePlan,
    release_plan,
)
from cqsens.ir.exact import Exact, display
from cqsens.ir.schema import Schema
from cqsens.release import noise
from cqsens.release.keys import key_label, key_text, read_keys
from cqsens.release.ledger import Entry, now, query_hash
from cqsens.release.values import expression_bound, parse_value_bounds, value_bound

__all__ = ["PartRelease", "Release", "ReleasedGroup", "ReleasedValue", "UnboundedRelease",
           "release"]

_GRID = 1001  # candidates of the exponential mechanism over a continuous range
Number = int | float


class UnboundedRelease(InputError):
    """The query's sensitivity is unbounded: no noise makes its release private."""


@dataclass(frozen=True, slots=True)
class PartRelease:
    """How one aggregate was released (never its value)."""

    label: str
    kind: str
    mechanism: str
    epsilon: float
    delta: float
    scale: float
    halfwidth_95: float | None
    sensitivity: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the part."""
        return {"label": self.label, "kind": self.kind, "mechanism": self.mechanism,
                "epsilon": self.epsilon, "delta": self.delta, "scale": self.scale,
                "halfwidth_95": self.halfwidth_95, "sensitivity": self.sensitivity}


@dataclass(frozen=True, slots=True)
class ReleasedValue:
    """One released number (noisy) and its 95 % error half-width (None when unknown)."""

    label: str
    value: Number | None
    halfwidth_95: float | None


@dataclass(frozen=True, slots=True)
class ReleasedGroup:
    """The released values of one group (the key is () without GROUP BY)."""

    key: tuple[str | None, ...]
    values: tuple[ReleasedValue, ...]


@dataclass(frozen=True, slots=True)
class Release:
    """A differentially private release: noisy values and how they were made."""

    query: str
    source: str
    database: str
    neighbor: str
    contributions: int
    epsilon: float
    delta: float
    mechanism: str
    split: str
    key_names: tuple[str, ...]
    key_mode: str
    parts: tuple[PartRelease, ...]
    groups: tuple[ReleasedGroup, ...]
    rho: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    unit: str | None = None  # --unit: one person is a row of this table and its cascade

    @property
    def privacy_unit(self) -> str:
        """The neighbour model in words."""
        if self.unit is not None:
            return f"{self.neighbor}, one person: {self.unit} with the rows that reference it"
        rows = "1 row" if self.contributions == 1 else f"up to {self.contributions} rows"
        return f"{self.neighbor}, {rows} per person"

    @property
    def query_sha256(self) -> str:
        """The hash the ledger records."""
        return query_hash(self.query)

    def entry(self) -> Entry:
        """The ledger entry of this release (no answer in it)."""
        return Entry(now(), self.query_sha256, self.epsilon, self.delta, self.rho,
                     self.mechanism, self.privacy_unit, self.database)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: one object per group, the number under ``value``."""
        groups = []
        for g in self.groups:
            obj: dict[str, Any] = {"group": dict(zip(self.key_names, g.key, strict=True))}
            items = [{"label": v.label, "value": v.value, "halfwidth_95": v.halfwidth_95}
                     for v in g.values]
            if len(items) == 1:
                obj.update(items[0])
            else:
                obj["values"] = items
            groups.append(obj)
        return {
            "query": self.query, "source": self.source, "database": self.database,
            "query_sha256": self.query_sha256, "epsilon": self.epsilon, "delta": self.delta,
            "privacy_unit": self.privacy_unit, "mechanism": self.mechanism,
            "budget_split": self.split, "keys": self.key_mode,
            "parts": [p.to_dict() for p in self.parts], "groups": groups,
            "notes": list(self.notes),
        }


# ----------------------------------------------------------------------------- helpers


def _refuse_unbounded(analysis: Analysis) -> None:
    if analysis.bounded:
        return
    advice = " ".join(analysis.suggestion) or "no declared dependency bounds it"
    raise UnboundedRelease(
        f"the sensitivity of this query is unbounded: no calibrated noise makes its release "
        f"private, so nothing is released. {analysis.reason()}. Advice: {advice}",
        source=analysis.source, construct="release")


def _same_parts(plan: ReleasePlan, analysis: Analysis) -> bool:
    """Whether the analysis of the user's query already covers each part, in order."""
    kinds = [a.kind for a in analysis.aggregates]
    return (kinds == [p.kind for p in plan.parts]
            and all(i.formula.op == "part" and i.formula.value == n
                    for n, i in enumerate(plan.items)))


def _evaluate(formula: Formula, parts: Sequence[Number | None]) -> Number | None:
    op, args = formula.op, formula.args
    if op == "part":
        return parts[int(formula.value or 0)]
    if op == "num":
        return formula.value
    if op == "null":
        return None
    values = [_evaluate(a, parts) for a in args]
    if any(v is None for v in values):
        return None
    x = values[0]
    assert x is not None
    if op == "neg":
        return -x
    if op == "abs":
        return abs(x)
    if op == "round":
        return round(x, int(formula.value or 0))
    y = values[1]
    assert y is not None
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if y == 0:
        return None  # SQL gives NULL (or an error) on a division by zero
    return x / y


def _dialect(conn: Any) -> str:
    name = str(conn.dialect.name)
    return "postgres" if name == "postgresql" else name


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
    query = analysis.query_obj
    agg = query.aggregates[index]
    cli = parse_value_bounds(bounds)
    if agg.expression is not None:
        vb = expression_bound(agg, cli=cli, schema=schema, query=query)
    else:
        assert agg.column_name is not None
        name = getattr(agg.column, "name", None)
        vb = value_bound(agg.column_name, cli=cli, schema=schema, query=query,
                         variable=name if isinstance(name, str) else None)
    return vb.low, vb.high


def _rows_changed(record: AggregateRecord, neighbor: str, contributions: int) -> int:
    """How many rows of the aggregated multiset one neighbour changes (symmetric distance)."""
    if record.count_bound == math.inf:
        raise InputError(f"{record.label}: the rows one person changes are unbounded, so the "
                         "exponential mechanism cannot be calibrated", construct="release")
    rows = math.ceil(record.count_bound) * contributions
    return rows * (2 if neighbor == "substitute" else 1)


def _split(measurements: int, per_part: Mapping[str, float], labels: Sequence[str],
           epsilon: float) -> tuple[list[float], str]:
    """ε of each measurement: the user's per-part values, the rest split evenly."""
    given = {label: per_part[label] for label in labels if label in per_part}
    unknown = sorted(set(per_part) - set(labels))
    if unknown:
        raise InputError(f"--epsilon-part names {', '.join(unknown)}, which is not a released "
                         f"aggregate (they are: {', '.join(labels)})", construct="--epsilon-part")
    left = epsilon - math.fsum(given.values())
    rest = measurements - len(given)
    if left <= 0 and rest > 0 or left < -1e-12:
        raise InputError(f"the per-part ε add up to {math.fsum(given.values()):g}, more than "
                         f"--epsilon {epsilon:g}", construct="--epsilon-part")
    share = left / rest if rest else 0.0
    out = [given.get(label, share) for label in labels] + [share] * (measurements - len(labels))
    if given:
        rule = (f"ε per part as given; the other {rest} measurement(s) share the remaining "
                f"{left:g} evenly") if rest else "ε per part as given"
    elif measurements == 1:
        rule = "one measurement: all of ε"
    else:
        rule = f"ε split evenly over {measurements} measurements: {share:g} each"
    return out, rule


# ----------------------------------------------------------------------------- release


def release(
    analysis: Analysis,
    *,
    url: str,
    epsilon: float,
    delta: float | None = None,
    mechanism: str = "laplace",
    reanalyse: Callable[[str], Analysis],
    schema: Schema | None = None,
    bounds: Sequence[str] = (),
    keys_file: str | None = None,
    public: Sequence[str] = (),
    epsilon_parts: Mapping[str, float] | None = None,
) -> Release:
    """Release the query of ``analysis`` from the database at ``url``.

    Parameters
    ----------
    analysis : Analysis
        The analysis of the user's SQL query.
    url : str
        ``sqlite:///file.db`` or ``postgresql://…``.
    epsilon, delta : float
        The privacy parameters of the whole release (δ for the Gaussian
        mechanism and for partition selection).
    mechanism : {"laplace", "gaussian"}
        The noise added to counts and sums.
    reanalyse : callable
        Analyses another SQL text with the same schema, Σ and options (for
        the parts of an AVG or of arithmetic, and the counts of partition selection).
    schema : Schema, optional
        For the value bounds of MEDIAN/MIN/MAX.
    bounds : sequence of str
        ``--bounds`` texts.
    keys_file : str, optional
        CSV of public group keys.
    public : sequence of str
        Public tables.
    epsilon_parts : mapping, optional
        ε of some parts, by label.

    Returns
    -------
    Release

    Raises
    ------
    UnboundedRelease
        The sensitivity is unbounded.
    InputError
        A CQ, no δ where one is needed, a database error, a bad keys file.
    """
    query = analysis.query_obj
    if query.sql is None:
        raise InputError("a release runs SQL on the database: give the query as SQL, not as a "
                         "conjunctive query", source=analysis.source, construct="release")
    if mechanism not in ("laplace", "gaussian"):
        raise InputError(f"unknown mechanism {mechanism!r}", construct="--mechanism")
    if mechanism == "gaussian" and delta is None:
        raise InputError("the Gaussian mechanism needs --delta", construct="--delta")
    eps = noise.check_privacy(epsilon, delta)
    _refuse_unbounded(analysis)
    plan = release_plan(query.text or query.sql, query.dialect, source=analysis.source)
    parts_analysis = analysis if _same_parts(plan, analysis) else reanalyse(plan.analysed_sql)
    _refuse_unbounded(parts_analysis)
    records = parts_analysis.aggregates
    if len(records) != len(plan.parts):
        raise InputError("the released parts do not match the analysis", construct="release")
    neighbor, contributions = parts_analysis.neighbor, parts_analysis.contributions
    public_names = {n.strip().lower() for item in public for n in item.split(",") if n.strip()}

    with connect(url) as conn:
        trans = conn.begin()
        try:
            target = _dialect(conn)
            if target == "sqlite":
                conn.exec_driver_sql("PRAGMA query_only = ON")
            return _release(
                conn, target, analysis, parts_analysis, plan, records, url=url, eps=eps,
                delta=delta, mechanism=mechanism, reanalyse=reanalyse, schema=schema,
                bounds=bounds, keys_file=keys_file, public_names=public_names,
                epsilon_parts=epsilon_parts or {}, neighbor=neighbor,
                contributions=contributions)
        finally:
            trans.rollback()


def _release(conn: Any, target: str, analysis: Analysis, parts_analysis: Analysis,
             plan: ReleasePlan, records: Sequence[AggregateRecord], *, url: str, eps: float,
             delta: float | None, mechanism: str, reanalyse: Callable[[str], Analysis],
             schema: Schema | None, bounds: Sequence[str], keys_file: str | None,
             public_names: set[str], epsilon_parts: Mapping[str, float], neighbor: str,
             contributions: int) -> Release:
    notes: list[str] = []
    # ---- the released keys: a public domain, none, or partition selection
    domain: list[str] | None
    if not plan.keys:
        domain, key_mode = [key_text([])], "no GROUP BY: one value"
    elif keys_file is not None:
        domain = read_keys(keys_file, plan.keys)
        key_mode = (f"public keys from {keys_file} ({len(domain)}): every key released, "
                    "zeros included")
    else:
        tables = {kt[0] for kt in plan.key_tables if kt is not None}
        if len(tables) == 1 and all(kt is not None for kt in plan.key_tables) \
                and next(iter(tables)).lower() in public_names:
            table = next(iter(tables))
            found = conn.exec_driver_sql(plan.domain_sql(target)).fetchall()
            domain = sorted({key_text(r) for r in found})
            key_mode = (f"public keys: the {len(domain)} distinct values of public table "
                        f"{table}: every key released, zeros included")
        else:
            domain = None
            key_mode = "DP partition selection (Laplace threshold mechanism)"
            if delta is None:
                raise InputError(
                    f"the group keys ({', '.join(plan.keys)}) are not public, so they must be "
                    "chosen by DP partition selection, which needs δ > 0: give --delta, or "
                    "give the keys with --keys FILE, or mark a public table that holds them "
                    "(--public)", source=analysis.source, construct="GROUP BY")

    # ---- the measurements and their share of ε and δ
    counts = [i for i, p in enumerate(plan.parts) if p.kind == "count"]
    select_with = counts[0] if domain is None and counts else None
    extra_selection = domain is None and select_with is None
    labels = [p.sql for p in plan.parts]
    shares, split = _split(len(plan.parts) + int(extra_selection), epsilon_parts, labels, eps)
    uses_delta = [(domain is None and i == select_with)
                  or (mechanism == "gaussian" and p.kind in NOISY_KINDS)
                  for i, p in enumerate(plan.parts)] + ([True] if extra_selection else [])
    delta_each = (delta / sum(uses_delta)) if delta is not None and any(uses_delta) else 0.0

    # ---- the parts' true values per group (kept in this function only)
    noisy = [i for i, p in enumerate(plan.parts) if p.kind in NOISY_KINDS]
    data: dict[str, list[Number]] = {}
    if noisy:
        width = len(plan.keys)
        for row in conn.exec_driver_sql(plan.parts_sql(target)).fetchall():
            data[key_text(row[:width])] = [_number(v) for v in row[width:]]
    column_of = {part: n for n, part in enumerate(noisy)}

    part_releases: dict[int, PartRelease] = {}
    released: dict[int, dict[str, Number | None]] = {}
    if domain is None:
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
        calib = noise.threshold_calibration(math.ceil(display(l1)), sel_eps, delta_each)
        chosen = noise.select_partitions(stats, calib)
        domain = sorted(chosen)
        selection = PartRelease(label, "count", "Laplace threshold (partition selection)",
                                sel_eps, delta_each, calib.scale,
                                noise.laplace_halfwidth(calib.scale, integer=True),
                                f"ℓ1 {display(l1)}")
        if select_with is not None:
            released[select_with] = dict(chosen)
            part_releases[select_with] = selection
        else:
            notes.append(f"partition selection released {label} with its own noise")
        key_mode += (f": a group is shown when its noisy count reaches {calib.threshold} "
                     f"(scale {calib.scale:g}, δ {delta_each:g})")
        if extra_selection:
            part_releases[-1] = selection
    if plan.keys and any(k not in domain for k in data):
        notes.append("groups of the data outside the released keys are not shown")

    rho_total = 0.0
    only_gaussian = mechanism == "gaussian" and not extra_selection and select_with is None
    for i in noisy:
        if i in released:
            continue
        part, record = plan.parts[i], records[i]
        values = [data[k][column_of[i]] if k in data else 0 for k in domain]
        if mechanism == "gaussian":
            out, sigma, rho = noise.sample_gaussian(values, l2=record.l2, epsilon=shares[i],
                                                    delta=delta_each, integer=part.integer)
            rho_total += rho
            part_releases[i] = PartRelease(
                part.sql, part.kind, f"{'discrete ' if part.integer else ''}Gaussian (zCDP)",
                shares[i], delta_each, sigma, noise.gaussian_halfwidth(sigma, integer=part.integer),
                f"ℓ2 {display(record.l2)}")
        else:
            out, scale = noise.sample_laplace(values, l1=record.l1, epsilon=shares[i],
                                              integer=part.integer)
            part_releases[i] = PartRelease(
                part.sql, part.kind, f"{'discrete ' if part.integer else ''}Laplace",
                shares[i], 0.0, scale, noise.laplace_halfwidth(scale, integer=part.integer),
                f"ℓ1 {display(record.l1)}")
        released[i] = dict(zip(domain, out, strict=True))
        if part_releases[i].scale == 0:
            notes.append(f"{part.sql}: its sensitivity is 0 (no row can change it), so it is "
                         "released without noise")

    for i, part in enumerate(plan.parts):
        if part.kind not in QUANTILE_KINDS:
            continue
        only_gaussian = False
        low, high = _value_range(parts_analysis, i, schema, bounds)
        candidates = _candidates(low, high)
        rows = _rows_changed(records[i], neighbor, contributions)
        width = len(plan.keys)
        groups: dict[str, list[float]] = {}
        for row in conn.exec_driver_sql(plan.rows_sql(i, target)).fetchall():
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
            f"{rows} rows")
        if len(domain) > 1:
            notes.append(f"{part.sql}: each group's mechanism is ε-DP for the rows it holds; "
                         f"a person's {rows} rows lie in at most that many groups, and the "
                         "privacy loss is linear in the rows changed, so together they are "
                         f"{shares[i]:g}-DP")
    del data  # the true values end here

    out_groups: list[ReleasedGroup] = []
    for k in domain:
        parts = [released[i].get(k) for i in range(len(plan.parts))]
        items: list[ReleasedValue] = []
        for item in plan.items:
            f = item.formula
            half = part_releases[int(f.value or 0)].halfwidth_95 if f.op == "part" else None
            items.append(ReleasedValue(item.label, _evaluate(f, parts), half))
        out_groups.append(ReleasedGroup(key_label(k), tuple(items)))
    if any(i.formula.op != "part" for i in plan.items):
        notes.append("items that combine aggregates are computed from the noisy parts "
                     "(post-processing): no half-width is given for them")
    ordered = [part_releases[i] for i in sorted(part_releases) if i >= 0]
    if -1 in part_releases:
        ordered.append(part_releases[-1])
    mechanisms = sorted({p.mechanism.split(" (")[0].split(" over ")[0] for p in ordered})
    delta_used = math.fsum(p.delta for p in ordered)
    return Release(
        query=analysis.query, source=analysis.source, database=mask_url(url),
        neighbor=neighbor, contributions=contributions, epsilon=eps, delta=delta_used,
        mechanism=" + ".join(mechanisms), split=split, key_names=plan.keys, key_mode=key_mode,
        parts=tuple(ordered), groups=tuple(out_groups),
        rho=rho_total if only_gaussian and noisy else None, notes=tuple(notes),
        unit=analysis.unit)
