"""Run a query on a database and release its answer with differential privacy:
:func:`release`, in named steps (:mod:`cqsens.releasing`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from cqsens.analysis import AggregateRecord, Analysis
from cqsens.db.connect import connect
from cqsens.db.reflect import reflect_schema
from cqsens.errors import InputError
from cqsens.frontend.dates import sqlite_dates
from cqsens.frontend.release_sql import NOISY_KINDS, QUANTILE_KINDS, ReleasePlan, release_plan
from cqsens.ir.schema import Schema
from cqsens.passwords import mask_url
from cqsens.public_statement import is_public_statement
from cqsens.release import noise
from cqsens.release.derived import with_tables
from cqsens.release.ledger import Charge, PrivacyModel
from cqsens.releasing.budget import _Budget, _budget, _charge
from cqsens.releasing.checks import _refuse_broken, _refuse_unbounded, _same_parts
from cqsens.releasing.domain import _public_domain, _selects_keys
from cqsens.releasing.measure import (
    _add_noise,
    _add_quantiles,
    _clamp_text,
    _part_values,
    _select_partitions,
    _value_range,
)
from cqsens.releasing.options import ReleaseOptions
from cqsens.releasing.post import _released_groups
from cqsens.releasing.public import (
    MECHANISM,
    NOTHING_SPENT,
    PublicAnswer,
    public_answer,
    split_text,
)
from cqsens.releasing.results import Number, PartRelease, Release, ReleasedGroup, ReleasedValue

__all__ = ["release", "release_with"]


def _dialect(conn: Any) -> str:
    name = str(conn.dialect.name)
    return "postgres" if name == "postgresql" else name


def _check_request(analysis: Analysis, mechanism: str, delta: float | None) -> None:
    """Refuse a CQ (a release runs SQL), an unknown mechanism, a Gaussian without δ."""
    if analysis.query_obj.sql is None:
        raise InputError("a release runs SQL on the database: give the query as SQL, not as a "
                         "conjunctive query", source=analysis.source, construct="release")
    if mechanism not in ("laplace", "gaussian"):
        raise InputError(f"unknown mechanism {mechanism!r}", construct="--mechanism")
    if mechanism == "gaussian" and delta is None:
        raise InputError("the Gaussian mechanism needs --delta", construct="--delta")


def _parts(analysis: Analysis, reanalyse: Callable[[str], Analysis], schema: Schema | None
           ) -> tuple[ReleasePlan, Analysis]:
    """The parts the release measures and their analysis (the user's own when it covers
    them, else the analysis of the parts' SQL)."""
    query = analysis.query_obj
    assert query.sql is not None  # _check_request refused a CQ
    # the user's own statement: a derived UNION, an outer join or a subquery runs as written
    # (a compound analysis keeps only its first part in query_obj)
    plan = release_plan(analysis.query or query.text or query.sql, query.dialect,
                        source=analysis.source, schema=schema)
    parts_analysis = analysis if _same_parts(plan, analysis) else reanalyse(plan.analysed_sql)
    _refuse_unbounded(parts_analysis)
    if len(parts_analysis.aggregates) != len(plan.parts):
        raise InputError("the released parts do not match the analysis", construct="release")
    return plan, parts_analysis


def release_with(analysis: Analysis, options: ReleaseOptions) -> Release:
    """Release the query of ``analysis`` as ``options`` say (:func:`release`, whose
    keywords are the fields of ``options``)."""
    if is_public_statement(analysis):  # docs/rules.md, rule public-statement: ε not spent
        return _public_release(analysis, public_answer(analysis, url=options.url),
                               options.url)
    _check_request(analysis, options.mechanism, options.delta)
    eps = noise.check_privacy(options.epsilon, options.delta)
    _refuse_unbounded(analysis)
    schema = _with_derived(analysis, options.schema, options.url)
    plan, parts_analysis = _parts(analysis, options.reanalyse, schema)
    neighbor, contributions = parts_analysis.neighbor, parts_analysis.contributions
    public_names = {n.strip().lower() for item in options.public for n in item.split(",")
                    if n.strip()}
    # a proven 0 over private rows still gets the noise of sensitivity 1 (a safeguard): only
    # a query that reads nothing but public tables is released exactly
    private = [t for t in plan.tables if t.lower() not in public_names]
    records = [replace(r, l1=1, l2=1) if r.l1 == 0 and private else r
               for r in parts_analysis.aggregates]
    budget = _budget(plan, _selects_keys(plan, options.keys_file, public_names, schema),
                     options.epsilon_parts or {}, eps, options.delta, options.mechanism)
    charge = _charge(plan, records, budget, eps, options.delta)
    if options.before_query is not None:
        options.before_query(charge, PrivacyModel(neighbor, contributions, analysis.unit))

    with connect(options.url) as conn:
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
            _refuse_broken(conn, analysis, parts_analysis, plan, url=options.url,
                           schema=schema, bounds=options.bounds)
            return _release(
                _rewritten(conn, target, options.rewrite), target, analysis,
                parts_analysis, plan, records, options, eps=eps, schema=schema,
                public_names=public_names, budget=budget, charge=charge, neighbor=neighbor,
                contributions=contributions)
        finally:
            trans.rollback()


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
        The whole release's privacy parameters (δ: Gaussian, partition selection).
    mechanism : {"laplace", "gaussian"}
        The noise added to counts and sums.
    reanalyse : callable
        Analyses another SQL text with the same settings (AVG and arithmetic parts, counts).
    schema, bounds : Schema (optional) and sequence of str
        The schema and the ``--bounds`` texts, for the value bounds of MEDIAN/MIN/MAX.
    keys_file, public : str (optional) and sequence of str
        A CSV of public group keys; the public tables.
    epsilon_parts : mapping, optional
        ε of some parts, by label.
    before_query : callable, optional
        Called with what the release will spend and its neighbour model
        before the database is opened (the ledger's budget check); raising
        there stops the release before any query runs.
    rewrite : callable, optional
        Applied to every SQL text run on the database (a two-stage release puts its
        earlier stages' noisy values in; :mod:`cqsens.releasing.stages`).

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
    return release_with(analysis, ReleaseOptions(
        url=url, epsilon=epsilon, reanalyse=reanalyse, delta=delta, mechanism=mechanism,
        schema=schema, bounds=bounds, keys_file=keys_file, public=public,
        epsilon_parts=epsilon_parts, before_query=before_query, rewrite=rewrite))


def _release(conn: Any, target: str, analysis: Analysis, parts_analysis: Analysis,
             plan: ReleasePlan, records: Sequence[AggregateRecord], options: ReleaseOptions,
             *, eps: float, schema: Schema | None, public_names: set[str], budget: _Budget,
             charge: Charge, neighbor: str, contributions: int) -> Release:
    notes: list[str] = []
    bounds, delta = options.bounds, options.delta
    private = [t for t in plan.tables if t.lower() not in public_names]
    # ---- the released keys: a public domain, none, or partition selection
    domain, key_mode = _public_domain(conn, target, plan, keys_file=options.keys_file,
                                      schema=schema, public_names=public_names, delta=delta,
                                      source=analysis.source)

    # ---- the parts' true values per group (kept in this function and the steps it calls
    # only); every value a SUM or a quantile reads is clamped to the range its bound assumed
    # (no change on data that obey it)
    ranges = {i: _value_range(parts_analysis, i, schema, bounds)
              for i, p in enumerate(plan.parts) if p.kind == "sum" or p.kind in QUANTILE_KINDS}
    clamps = {i: c for i, r in ranges.items() if (c := _clamp_text(r)) is not None}
    noisy = [i for i, p in enumerate(plan.parts) if p.kind in NOISY_KINDS]
    data = _part_values(conn, target, plan, clamps, noisy)
    column_of = {part: n for n, part in enumerate(noisy)}

    # ---- the measurements, with their share of ε and δ (``budget``)
    part_releases: dict[int, PartRelease] = {}
    released: dict[int, dict[str, Number | None]] = {}
    if domain is None:
        domain, key_mode = _select_partitions(conn, target, plan, records, budget, data,
                                              column_of, options.reanalyse, key_mode, part_releases,
                                              released, notes)
    if plan.keys:  # said whatever the data hold: its presence must not depend on them
        notes.append("groups outside the released keys are never shown (whether the data "
                     "hold any is not revealed)")
    _add_noise(plan, records, parts_analysis, domain, data, column_of, noisy, budget,
               options.mechanism, private, part_releases, released, notes)
    _add_quantiles(conn, target, plan, records, parts_analysis, domain, clamps, budget.shares,
                   schema=schema, bounds=bounds, neighbor=neighbor,
                   contributions=contributions, part_releases=part_releases,
                   released=released, notes=notes)
    del data  # the true values end here

    out_groups = _released_groups(plan, domain, released, part_releases, ranges, notes)
    ordered = [part_releases[i] for i in sorted(part_releases) if i >= 0]
    if -1 in part_releases:
        ordered.append(part_releases[-1])
    mechanisms = sorted({p.family for p in ordered})
    return Release(
        query=analysis.query, source=analysis.source, database=mask_url(options.url),
        neighbor=neighbor, contributions=contributions, epsilon=eps, delta=charge.delta,
        mechanism=" + ".join(mechanisms), split=budget.split, key_names=plan.keys,
        key_mode=key_mode, parts=tuple(ordered), groups=tuple(out_groups),
        rho=charge.rho if budget.gaussian else None, notes=tuple(notes),
        unit=analysis.unit, charge=charge)


def _public_release(analysis: Analysis, answer: PublicAnswer, url: str) -> Release:
    """The exact answer of a statement over public tables only, charged nothing."""
    groups = tuple(ReleasedGroup((str(n),), tuple(
        ReleasedValue(label, v, None if isinstance(v, str) else 0.0)
        for label, v in zip(answer.labels, row, strict=True)))
        for n, row in enumerate(answer.rows, start=1))
    return Release(query=analysis.query, source=analysis.source, database=mask_url(url),
                   neighbor=analysis.neighbor, contributions=analysis.contributions,
                   epsilon=0.0, delta=0.0, mechanism=MECHANISM, split=split_text(),
                   key_names=("row",), key_mode=answer.key_mode, parts=(), groups=groups,
                   notes=(answer.note,), unit=analysis.unit, charge=NOTHING_SPENT)


def _with_derived(analysis: Analysis, schema: Schema | None, url: str) -> Schema | None:
    """``schema`` with the per-person table's declared ranges (docs/rules.md, rule
    person-groups) when the analysis read one, else ``schema`` as given."""
    if not analysis.derived_ddl:
        return schema
    return with_tables(schema or reflect_schema(url), analysis.derived_ddl)


class _Rewritten:
    """A connection whose SQL texts pass through ``rewrite`` before they run."""

    def __init__(self, conn: Any, rewrite: Callable[[str], str]) -> None:
        self._conn, self._rewrite = conn, rewrite

    def exec_driver_sql(self, sql: str, *args: Any) -> Any:
        return self._conn.exec_driver_sql(self._rewrite(sql), *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _rewritten(conn: Any, target: str, rewrite: Callable[[str], str] | None) -> Any:
    """``conn``, its SQL texts passed through ``rewrite`` (a two-stage release) and, on
    SQLite, through :func:`~cqsens.frontend.dates.sqlite_dates` (SQLite has no EXTRACT)."""
    steps = [f for f in (rewrite, sqlite_dates if target == "sqlite" else None) if f is not None]
    if not steps:
        return conn

    def run(sql: str) -> str:
        for step in steps:
            sql = step(sql)
        return sql
    return _Rewritten(conn, run)
