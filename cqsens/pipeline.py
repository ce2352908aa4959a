"""The analysis pipeline: source text in, an :class:`~cqsens.analysis.Analysis` out.

``analyze`` reads the query and Σ, then runs the stages of :data:`PIPELINE` over
a frozen :class:`~cqsens.state.State`; each stage is a pure function ``State -> State``
that returns a new value (``dataclasses.replace``), so each can be run and tested
on its own.  The chase and the cores are computed once (:func:`stage_bound`) and
read by every later stage.  Each stage lives in its package; this module wires them:

1. ``engine.stage.stage_bound``: chase with the FDs of Σ, cores, the count bound;
2. ``engine.stage.stage_paper``: the paper's literal Δ_STR, Thm 13 and Thm 17 values;
3. ``report.stage.stage_explain``: the explanation and, when unbounded, the advice;
4. ``aggregate_stage.stage_release``: each aggregate's ℓ1/ℓ2 sensitivity and their combination;
5. ``witness.stage.stage_witness``: two databases proving a lower bound;
6. ``aggregate_stage.stage_noise``: Laplace and Gaussian scales at (ε, δ).

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries. ICALP 2016.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from cqsens.aggregate_stage import stage_noise, stage_release
from cqsens.analysis import Analysis
from cqsens.budget import deadline
from cqsens.compound import analyze_compound
from cqsens.engine.person import owner_key
from cqsens.engine.stage import stage_bound, stage_paper
from cqsens.explain import jsonable
from cqsens.frontend.load import load_query, load_statement, resolve_sigma
from cqsens.ir.compound import CompoundQuery
from cqsens.ir.cq import AggregateQuery
from cqsens.ir.dependencies import Dependency
from cqsens.ir.schema import Schema
from cqsens.prepare import first_state, options_for
from cqsens.report.stage import stage_explain
from cqsens.routes import route
from cqsens.settings import Settings, check_settings
from cqsens.state import Options, State, analysis_of
from cqsens.witness.stage import stage_witness

__all__ = [
    "PIPELINE", "Analysis", "Options", "State", "analyze", "analyze_with", "check_settings",
    "jsonable", "load_query", "resolve_sigma", "stage_bound", "stage_explain", "stage_noise",
    "stage_paper", "stage_release", "stage_witness",
]


PIPELINE: tuple[Callable[[State], State], ...] = (
    stage_bound, stage_paper, stage_explain, stage_release, stage_witness, stage_noise,
)


def analyze(
    source: str | Path, *, schema: str | Path | Schema | None = None,
    fds: Sequence[str | Dependency] = (), cds: Sequence[str | Dependency] = (),
    constraints: str | Path | None = None, dialect: str | None = None,
    neighbor: str = "add-remove", kind: str | None = None, name: str | None = None,
    prove_lower: bool = True, witness_time: float = 0.5, seed: int = 0,
    bounds: Sequence[str] = (), contributions: int = 1, rows: int | None = None,
    epsilon: float | None = None, delta: float | None = None, timeout: float | None = 30.0,
    public: Sequence[str] = (), unit: str | None = None, owner: Sequence[str] = (),
    ownerless: str = "refuse") -> Analysis:
    """Analyse one counting query: sensitivity bounds, the paper's values and why.

    Parameters
    ----------
    source : str or Path
        SQL text, CQ text, or a path to a ``.sql``/``.cq`` file.
    schema : str, Path or Schema, optional
        DDL text, a DDL file, or a parsed schema.
    fds, cds : sequences
        ``"PatDoc[1->2]"`` / ``"PatDoc[1->2]<=3"`` strings or Dependency values.
    constraints : path, optional
        A file with one dependency per line (``#`` comments).
    dialect : str, optional
        sqlglot dialect of the SQL.
    neighbor : {"add-remove", "substitute"}
        The neighbour model.
    kind : {"sql", "cq"}, optional
        Force the input language (otherwise guessed).
    name : str, optional
        Source name used in messages.
    prove_lower : bool
        Search for a witness (two databases) proving a lower bound; without
        one ``lower`` is None.
    witness_time : float
        Seconds the witness search may take in all (constructions, then a local
        search when they do not reach the upper bound).
    seed : int
        Seed of that search (results are reproducible).
    bounds : sequence of str
        Value bounds ``"Table.column=low:high"`` for SUM/AVG/MEDIAN/MIN/MAX.
    contributions : int
        Tuples one individual may own (a neighbour relation of order k
        multiplies the sensitivity by k, Observation 1).
    rows : int, optional
        Number of rows, for the parity rule of a single-table MEDIAN.
    epsilon, delta : float, optional
        Privacy parameters: the output then gives the Laplace scale and the
        analytic Gaussian σ.
    public : sequence of str
        Public tables: their rows are the same in both neighbours (reference
        data such as a product catalogue), so they never play the added or
        removed row (docs/rules.md, rule public-tables).
    unit : str, optional
        The privacy unit, ``"users"`` or ``"users.id"``: neighbours differ by one
        row of that table and every row that references it through foreign keys
        (needs the schema; docs/rules.md, rule privacy-unit).  Every table the
        query reads must then be public or reach the unit along NOT NULL foreign
        keys (docs/rules.md, rule ownership).
    owner : sequence of str
        The foreign keys that carry ownership to the unit (``"orders.uid"``);
        empty: every foreign key.  Others are ordinary references.
    ownerless : {"refuse", "person"}
        A row whose ownership key is NULL: refused where read, or a person of its
        own (docs/rules.md, rule ownerless-rows).
    timeout : float or None
        Seconds the whole analysis may take (``None`` or ``math.inf``: no
        limit).  The witness search stops early to stay within it; any other
        stage still running at the deadline raises :class:`TimeLimitError`.

    Returns
    -------
    Analysis

    Raises
    ------
    InputError
        Any bad input (query, schema, dependency), with file, position and construct.
    TimeLimitError
        The analysis did not finish within ``timeout``.

    Examples
    --------
    >>> a = analyze("Q(x) :- R(x, y), S(y, z)")
    >>> a.to_dict()["delta_str"], a.upper
    ('inf', inf)
    >>> analyze("Q(x) :- R(x, y), S(y, z)", fds=["S[1->2]", "R[2->1]"]).upper
    1
    """
    return analyze_with(source, Settings(
        schema=schema, fds=tuple(fds), cds=tuple(cds), constraints=constraints,
        dialect=dialect, neighbor=neighbor, prove_lower=prove_lower, witness_time=witness_time,
        seed=seed, bounds=tuple(bounds), contributions=contributions, rows=rows,
        epsilon=epsilon, delta=delta, timeout=timeout, public=tuple(public), unit=unit,
        owner=tuple(owner), ownerless=ownerless), kind=kind, name=name)


def analyze_with(source: str | Path, settings: Settings, *, kind: str | None = None,
                 name: str | None = None) -> Analysis:
    """:func:`analyze` with its settings as one :class:`~cqsens.settings.Settings` value.

    Parameters
    ----------
    source : str or Path
        SQL text, CQ text, or a path to a ``.sql``/``.cq`` file.
    settings : Settings
        Every setting; the fields are the keywords of :func:`analyze` (the release
        settings ``ledger``, ``budget``, ``delta_budget`` and ``keys`` are not read).
    kind : {"sql", "cq"}, optional
        Force the input language (otherwise guessed).
    name : str, optional
        Source name used in messages.

    Returns
    -------
    Analysis

    Examples
    --------
    >>> analyze_with("Q(x) :- R(x, y), S(y, z)", Settings(fds=("S[1->2]", "R[2->1]"))).upper
    1
    """
    check_settings(settings)
    with deadline(settings.timeout):
        return route(source, settings, kind=kind, name=name, plain=_analyze_plan)


def _analyze_plan(source: str | Path, settings: Settings, *, kind: str | None,
                  name: str | None) -> Analysis:
    options = options_for(settings)
    schema, unit = options.schema, options.nb.unit
    query = load_statement(source, schema=schema, dialect=settings.dialect, kind=kind, name=name,
                           public=frozenset(settings.public_tables()),
                           owner=owner_key(schema, unit)
                           if unit is not None and schema is not None else None)
    if isinstance(query, CompoundQuery):
        return analyze_compound(query, options, _analyze_one)
    return _analyze_one(query, options)


def _analyze_one(query: AggregateQuery, options: Options) -> Analysis:
    state = first_state(query, options)
    for stage in PIPELINE:
        state = stage(state)
    return analysis_of(state)
