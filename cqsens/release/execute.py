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

import itertools
import math
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cqsens.analysis import AggregateRecord, Analysis
from cqsens.db.connect import connect, mask_url
from cqsens.db.guard import broken_constraints
from cqsens.db.reflect import reflect_schema
from cqsens.errors import InputError
from cqsens.frontend.release_sql import (
    NOISY_KINDS,
    QUANTILE_KINDS,
    Formula,
    PostPlan,
    ReleasePlan,
    distinct_values_sql,
    release_plan,
)
from cqsens.ir.exact import Exact, display, sql_decimal
from cqsens.ir.schema import Schema
from cqsens.release import noise
from cqsens.release.keys import key_label, key_text, read_keys
from cqsens.release.ledger import Charge, Entry, PrivacyModel, now, query_hash
from cqsens.release.values import expression_bound, parse_value_bounds, value_bound

__all__ = ["BrokenConstraint", "PartRelease", "Release", "ReleasedGroup", "ReleasedValue",
           "UnboundedRelease", "release"]

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
    family: str  # the mechanism's name alone ("discrete Laplace"), for the release's summary

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
    charge: Charge | None = None  # what the ledger is charged (None: ε and δ, no ρ)

    @property
    def model(self) -> PrivacyModel:
        """The neighbour model the release protects."""
        return PrivacyModel(self.neighbor, self.contributions, self.unit)

    @property
    def privacy_unit(self) -> str:
        """The neighbour model in words."""
        return self.model.text()

    @property
    def query_sha256(self) -> str:
        """The hash the ledger records."""
        return query_hash(self.query)

    def entry(self) -> Entry:
        """The ledger entry of this release (no answer in it)."""
        c = self.charge or Charge(self.epsilon, self.delta)
        gauss = c.rho > 0 or c.rho_epsilon > 0
        return Entry(now(), self.query_sha256, c.epsilon, c.delta, c.rho if gauss else None,
                     self.mechanism, self.privacy_unit, self.database,
                     c.rho_epsilon if gauss else 0.0, c.rho_delta if gauss else 0.0)

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


class BrokenConstraint(InputError):
    """The data break a constraint the sensitivity bound relies on: nothing is released."""


def _refuse_broken(conn: Any, analysis: Analysis, parts_analysis: Analysis, plan: ReleasePlan,
                   *, url: str, schema: Schema | None, bounds: Sequence[str]) -> None:
    """Check, in the release's transaction and before the query, every constraint the bound
    may rely on (:mod:`cqsens.db.guard`); refuse naming the broken ones, nothing else."""
    if schema is None:
        schema = reflect_schema(url)
    deps = {*analysis.sigma, *parts_analysis.sigma}
    broken = broken_constraints(conn, schema, tables=plan.tables,
                                deps=sorted(deps, key=str), value_bounds=parse_value_bounds(bounds),
                                masked=mask_url(url))
    if broken:
        raise BrokenConstraint(
            f"the data break what the sensitivity bound relies on: {'; '.join(broken)}. "
            "Noise calibrated to that bound would not protect every person, so nothing is "
            "released and nothing is charged. Fix the data, or declare the constraints the "
            "data obey (cqsens profile measures them)", source=mask_url(url),
            construct="release")


def _same_parts(plan: ReleasePlan, analysis: Analysis) -> bool:
    """Whether the analysis of the user's query already covers each part, in order."""
    kinds = [a.kind for a in analysis.aggregates]
    return (kinds == [p.kind for p in plan.parts]
            and all(i.formula.op == "part" and i.formula.value == n
                    for n, i in enumerate(plan.items)))


def _evaluate(formula: Formula, parts: Sequence[Number | None],
              ranges: Mapping[int, tuple[Exact, Exact]] | None = None) -> Number | None:
    op, args = formula.op, formula.args
    if op == "part":
        return parts[int(formula.value or 0)]
    if op == "num":
        return formula.value
    if op == "null":
        return None
    values = [_evaluate(a, parts, ranges) for a in args]
    if any(v is None for v in values):
        return None
    x = values[0]
    assert x is not None
    if op == "clamp":  # post-processing: an average lies in its values' range
        low, high = (ranges or {}).get(int(formula.value or 0), (-math.inf, math.inf))
        return min(max(x, float(low)), float(high)) if low <= high else x
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


class _Rewritten:
    """A connection whose SQL texts pass through ``rewrite`` before they run."""

    def __init__(self, conn: Any, rewrite: Callable[[str], str]) -> None:
        self._conn, self._rewrite = conn, rewrite

    def exec_driver_sql(self, sql: str, *args: Any) -> Any:
        return self._conn.exec_driver_sql(self._rewrite(sql), *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


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


def _post_process(post: PostPlan, domain: Sequence[str],
                  released: Mapping[int, Mapping[str, Number | None]],
                  part_releases: Mapping[int, PartRelease],
                  ranges: Mapping[int, tuple[Exact, Exact]], parts: int, width: int
                  ) -> list[ReleasedGroup]:
    """Run the statement's post-processing on the noisy values only: one row per released
    group in an in-memory SQLite table ``released(k0…, a0…)``, then ``post.sql``."""
    conn = sqlite3.connect(":memory:")
    try:
        columns = [f"k{n}" for n in range(width)] + [f"a{n}" for n in range(len(post.inputs))]
        conn.execute(f"CREATE TABLE released ({', '.join(columns) or 'unused'})")
        shown: dict[tuple[object, ...], tuple[str | None, ...]] = {}
        for k in domain:
            noisy = [released[i].get(k) for i in range(parts)]
            row = [_key_value(v) for v in key_label(k)]
            shown[tuple(row)] = key_label(k)
            row += [_evaluate(f, noisy, ranges) for f in post.inputs]
            if row:
                conn.execute(f"INSERT INTO released VALUES ({', '.join('?' * len(row))})", row)
        try:
            result = conn.execute(post.sql).fetchall()
        except sqlite3.Error as exc:
            raise InputError(f"the post-processing of the noisy values failed in SQLite: {exc}",
                             construct="post-processing") from None
    finally:
        conn.close()
    out: list[ReleasedGroup] = []
    for row in result:
        key = shown.get(tuple(row[:width]),
                        tuple(None if v is None else str(v) for v in row[:width]))
        values = []
        for label, part, value in zip(post.labels, post.parts, row[width:], strict=True):
            half = part_releases[part].halfwidth_95 if part is not None else None
            values.append(ReleasedValue(label, value, half))
        out.append(ReleasedGroup(key, tuple(values)))
    return out


def _key_value(text: str | None) -> object:
    """A released key's value for the post-processing table: a number when it reads as one
    (so that ORDER BY a numeric key sorts numbers), else the text."""
    if text is None:
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


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


@dataclass(frozen=True, slots=True)
class _Budget:
    """The measurements of a release and their share of ε and δ (known before any query)."""

    shares: list[float]
    split: str
    delta_each: float
    uses_delta: list[bool]
    select_with: int | None  # the COUNT part that also selects the keys
    extra_selection: bool  # a COUNT(*) measured only to select the keys
    gaussian: list[int]  # the parts released with Gaussian noise


def _selects_keys(plan: ReleasePlan, keys_file: str | None, public_names: set[str],
                  schema: Schema | None = None) -> bool:
    """Whether the group keys go through DP partition selection (no public domain)."""
    if not plan.keys or keys_file is not None:
        return False
    if _declared_keys(plan, schema, public_names) is not None:
        return False
    tables = {kt[0] for kt in plan.key_tables if kt is not None}
    return not (len(tables) == 1 and all(kt is not None for kt in plan.key_tables)
                and next(iter(tables)).lower() in public_names)


_MAX_DECLARED_KEYS = 10_000


_Declared = tuple[tuple[int | str, ...], tuple[str, str] | None]


def _declared_keys(plan: ReleasePlan, schema: Schema | None, public_names: set[str]
                   ) -> list[_Declared] | None:
    """Where each group column's values are declared: the values of a CHECK IN list, or
    ``((), (table, column))`` for a foreign key into a public table; None when one
    column has neither (or the keys would be more than 10,000)."""
    if schema is None or not plan.keys or any(kt is None for kt in plan.key_tables):
        return None
    out: list[_Declared] = []
    size = 1
    for kt in plan.key_tables:
        assert kt is not None
        rel = schema.find(kt[0])
        position = rel.index(kt[1]) if rel is not None else None
        if rel is None or position is None:
            return None
        values = rel.domain(position)
        if values is not None and all(isinstance(v, (int, str)) and not isinstance(v, bool)
                                      for v in values):
            out.append((tuple(v for v in values if isinstance(v, (int, str))), None))
            size *= len(values)
            continue
        fk = next((f for f in rel.foreign_keys if f.columns == (position,)
                   and f.table.lower() in public_names), None)
        target = schema.find(fk.table) if fk is not None else None
        if fk is None or target is None:
            return None
        out.append(((), (target.name, target.columns[fk.referenced[0]])))
    return out if size <= _MAX_DECLARED_KEYS else None


def _declared_domain(conn: Any, target: str, declared: Sequence[_Declared]) -> list[str]:
    """Every key of the declared domains (their product), as key texts."""
    lists: list[list[object]] = []
    for values, public in declared:
        if public is None:
            lists.append(list(values))
            continue
        sql = distinct_values_sql(public[0], public[1], target)
        lists.append([row[0] for row in conn.exec_driver_sql(sql).fetchall()
                      if row[0] is not None])
    return sorted({key_text(combo) for combo in itertools.product(*lists)})


def _budget(plan: ReleasePlan, selection: bool, epsilon_parts: Mapping[str, float],
            eps: float, delta: float | None, mechanism: str) -> _Budget:
    counts = [i for i, p in enumerate(plan.parts) if p.kind == "count"]
    select_with = counts[0] if selection and counts else None
    extra_selection = selection and select_with is None
    labels = [p.sql for p in plan.parts]
    shares, split = _split(len(plan.parts) + int(extra_selection), epsilon_parts, labels, eps)
    uses_delta = [(selection and i == select_with)
                  or (mechanism == "gaussian" and p.kind in NOISY_KINDS)
                  for i, p in enumerate(plan.parts)] + ([True] if extra_selection else [])
    delta_each = (delta / sum(uses_delta)) if delta is not None and any(uses_delta) else 0.0
    gaussian = [i for i, p in enumerate(plan.parts) if mechanism == "gaussian"
                and p.kind in NOISY_KINDS and i != select_with]
    return _Budget(shares, split, delta_each, uses_delta, select_with, extra_selection, gaussian)


def _charge(plan: ReleasePlan, records: Sequence[AggregateRecord], budget: _Budget,
            eps: float, delta: float | None) -> Charge:
    """What the release spends: its ε and δ, and the zCDP ρ of its Gaussian parts.

    ρ = Δ2²/(2σ²) for the σ each Gaussian part is calibrated with (Bun and
    Steinke 2016, Prop 1.6), computed before the query runs.
    """
    spends_delta = delta is not None and any(budget.uses_delta)
    total_delta = delta if delta is not None and spends_delta else 0.0
    rhos = []
    for i in budget.gaussian:
        l2 = records[i].l2
        sigma = noise.gaussian_sigma(l2, budget.shares[i], budget.delta_each,
                                     integer=plan.parts[i].integer)
        if not math.isfinite(sigma) or not math.isfinite(float(l2)):
            raise InputError(f"{plan.parts[i].sql}: its ℓ2 sensitivity is unbounded, so the "
                             "Gaussian mechanism cannot be calibrated", construct="release")
        rhos.append(0.0 if sigma == 0 else float(l2) ** 2 / (2.0 * sigma * sigma))
    if not budget.gaussian:
        return Charge(eps, total_delta)
    every = len(budget.gaussian) == len(budget.shares)  # every measurement is Gaussian
    rho_eps = eps if every else min(eps, math.fsum(budget.shares[i] for i in budget.gaussian))
    rho_delta = total_delta if every else min(total_delta,
                                              budget.delta_each * len(budget.gaussian))
    return Charge(eps, total_delta, math.fsum(rhos), rho_eps, rho_delta)


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
    before_query: Callable[[Charge, PrivacyModel], None] | None = None,
    rewrite: Callable[[str], str] | None = None,
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
    before_query : callable, optional
        Called with what the release will spend and its neighbour model
        before the database is opened (the ledger's budget check); raising
        there stops the release before any query runs.
    rewrite : callable, optional
        Applied to every SQL text run on the database (a two-stage release puts its
        earlier stages' noisy values in; :mod:`cqsens.release.stages`).

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
    # the user's own statement: a derived UNION, an outer join or a subquery runs as written
    # (a compound analysis keeps only its first part in query_obj)
    plan = release_plan(analysis.query or query.text or query.sql, query.dialect,
                        source=analysis.source)
    parts_analysis = analysis if _same_parts(plan, analysis) else reanalyse(plan.analysed_sql)
    _refuse_unbounded(parts_analysis)
    if len(parts_analysis.aggregates) != len(plan.parts):
        raise InputError("the released parts do not match the analysis", construct="release")
    neighbor, contributions = parts_analysis.neighbor, parts_analysis.contributions
    public_names = {n.strip().lower() for item in public for n in item.split(",") if n.strip()}
    # a proven 0 over private rows still gets the noise of sensitivity 1 (a safeguard): only
    # a query that reads nothing but public tables is released exactly
    private = [t for t in plan.tables if t.lower() not in public_names]
    records = [replace(r, l1=1, l2=1) if r.l1 == 0 and private else r
               for r in parts_analysis.aggregates]
    budget = _budget(plan, _selects_keys(plan, keys_file, public_names, schema),
                     epsilon_parts or {},
                     eps, delta, mechanism)
    charge = _charge(plan, records, budget, eps, delta)
    if before_query is not None:
        before_query(charge, PrivacyModel(neighbor, contributions, analysis.unit))

    with connect(url) as conn:
        # one snapshot for the constraint check and the query: REPEATABLE READ on
        # PostgreSQL; on SQLite an explicit BEGIN (its driver opens none before a SELECT)
        # holds one read transaction until the rollback
        if conn.dialect.name == "postgresql":
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        trans = conn.begin()
        try:
            target = _dialect(conn)
            if target == "sqlite":
                conn.exec_driver_sql("PRAGMA query_only = ON")
                if not conn.connection.dbapi_connection.in_transaction:  # type: ignore[union-attr]
                    conn.exec_driver_sql("BEGIN")
            run: Any = conn if rewrite is None else _Rewritten(conn, rewrite)
            _refuse_broken(conn, analysis, parts_analysis, plan, url=url, schema=schema,
                           bounds=bounds)
            return _release(
                run, target, analysis, parts_analysis, plan, records, url=url, eps=eps,
                delta=delta, mechanism=mechanism, reanalyse=reanalyse, schema=schema,
                bounds=bounds, keys_file=keys_file, public_names=public_names,
                budget=budget, charge=charge, neighbor=neighbor,
                contributions=contributions)
        finally:
            trans.rollback()


def _release(conn: Any, target: str, analysis: Analysis, parts_analysis: Analysis,
             plan: ReleasePlan, records: Sequence[AggregateRecord], *, url: str, eps: float,
             delta: float | None, mechanism: str, reanalyse: Callable[[str], Analysis],
             schema: Schema | None, bounds: Sequence[str], keys_file: str | None,
             public_names: set[str], budget: _Budget, charge: Charge, neighbor: str,
             contributions: int) -> Release:
    notes: list[str] = []
    private = [t for t in plan.tables if t.lower() not in public_names]
    # ---- the released keys: a public domain, none, or partition selection
    domain: list[str] | None
    if not plan.keys:
        domain, key_mode = [key_text([])], "no GROUP BY: one value"
    elif keys_file is not None:
        domain = read_keys(keys_file, plan.keys)
        key_mode = (f"public keys from {keys_file} ({len(domain)}): every key released, "
                    "zeros included")
    elif (declared := _declared_keys(plan, schema, public_names)) is not None:
        domain = _declared_domain(conn, target, declared)
        key_mode = (f"public keys: the {len(domain)} values the schema declares (CHECK IN "
                    "lists, foreign keys into public tables): every key released, zeros "
                    "included")
    else:
        if not _selects_keys(plan, keys_file, public_names):
            table = next(kt[0] for kt in plan.key_tables if kt is not None)
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
    select_with, extra_selection = budget.select_with, budget.extra_selection
    labels = [p.sql for p in plan.parts]
    shares, split, delta_each = budget.shares, budget.split, budget.delta_each

    # ---- the parts' true values per group (kept in this function only); every value a
    # SUM or a quantile reads is clamped to the range its bound assumed (no change on data
    # that obey it)
    ranges = {i: _value_range(parts_analysis, i, schema, bounds)
              for i, p in enumerate(plan.parts) if p.kind == "sum" or p.kind in QUANTILE_KINDS}
    clamps = {i: c for i, r in ranges.items() if (c := _clamp_text(r)) is not None}
    noisy = [i for i, p in enumerate(plan.parts) if p.kind in NOISY_KINDS]
    data: dict[str, list[Number]] = {}
    if noisy:
        width = len(plan.keys)
        for row in conn.exec_driver_sql(plan.parts_sql(target, clamps)).fetchall():
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
        calib = noise.threshold_calibration(max(math.ceil(display(l1)), 1), sel_eps,
                                            delta_each)
        chosen = noise.select_partitions(stats, calib)
        domain = sorted(chosen)
        selection = PartRelease(label, "count", "Laplace threshold (partition selection)",
                                sel_eps, delta_each, calib.scale,
                                noise.laplace_halfwidth(calib.scale, integer=True),
                                f"ℓ1 {display(l1)}", "Laplace threshold")
        if select_with is not None:
            released[select_with] = dict(chosen)
            part_releases[select_with] = selection
        else:
            notes.append(f"partition selection released {label} with its own noise")
        key_mode += (f": a group is shown when its noisy count reaches {calib.threshold} "
                     f"(scale {calib.scale:g}, δ {delta_each:g})")
        if extra_selection:
            part_releases[-1] = selection
    if plan.keys:  # said whatever the data hold: its presence must not depend on them
        notes.append("groups outside the released keys are never shown (whether the data "
                     "hold any is not revealed)")

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
                f"ℓ1 {display(l1)}", f"{'discrete ' if part.integer else ''}Laplace")
        released[i] = dict(zip(domain, out, strict=True))
        if part_releases[i].scale == 0:
            notes.append(f"{part.sql}: its sensitivity is 0 and every table it reads is "
                         "declared public, so it is released without noise")

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
    del data  # the true values end here

    out_groups: list[ReleasedGroup] = []
    if plan.post is not None:
        out_groups = _post_process(plan.post, domain, released, part_releases, ranges,
                                   len(plan.parts), len(plan.keys))
        notes.append("HAVING, window functions, ORDER BY and LIMIT are computed on the noisy "
                     "values (post-processing, in SQLite in memory): they cost no privacy")
    for k in domain if plan.post is None else ():
        parts = [released[i].get(k) for i in range(len(plan.parts))]
        items: list[ReleasedValue] = []
        for item in plan.items:
            f = item.formula
            half = part_releases[int(f.value or 0)].halfwidth_95 if f.op == "part" else None
            items.append(ReleasedValue(item.label, _evaluate(f, parts, ranges), half))
        out_groups.append(ReleasedGroup(key_label(k), tuple(items)))
    if any(i.formula.op != "part" for i in plan.items):
        notes.append("items that combine aggregates are computed from the noisy parts "
                     "(post-processing): no half-width is given for them")
    ordered = [part_releases[i] for i in sorted(part_releases) if i >= 0]
    if -1 in part_releases:
        ordered.append(part_releases[-1])
    mechanisms = sorted({p.family for p in ordered})
    return Release(
        query=analysis.query, source=analysis.source, database=mask_url(url),
        neighbor=neighbor, contributions=contributions, epsilon=eps, delta=charge.delta,
        mechanism=" + ".join(mechanisms), split=split, key_names=plan.keys, key_mode=key_mode,
        parts=tuple(ordered), groups=tuple(out_groups),
        rho=charge.rho if budget.gaussian else None, notes=tuple(notes),
        unit=analysis.unit, charge=charge)
