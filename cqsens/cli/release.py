"""``cqsens release``: a differentially private answer from a real database.

The query is analysed first (an unbounded one is refused with the advice),
run in a read-only transaction, and released with OpenDP's noise calibrated to
the proven sensitivity.  With a ledger (``--ledger`` or ``ledger`` in
``cqsens.toml``) the release is recorded, and refused beyond ``--budget``,
before anything is printed.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from cqsens.cli.config import config_option, uses_config
from cqsens.cli.exits import EXIT_OK, fail
from cqsens.cli.options import (
    bounds_option,
    budget_option,
    contributions_option,
    db_option,
    delta_budget_option,
    delta_option,
    dependency_options,
    dialect_option,
    epsilon_option,
    format_option,
    ledger_option,
    path_of,
    rows_option,
    schema_option,
    sql_option,
    stack,
    timeout_option,
)
from cqsens.db.connect import sqlite_file
from cqsens.errors import CqsensError, InputError
from cqsens.ir.schema import Schema
from cqsens.pipeline import Analysis, analyze_with
from cqsens.release.ledger import (
    Charge,
    Ledger,
    Limits,
    PrivacyModel,
    open_ledger,
    precheck,
    record,
)
from cqsens.release.noise import EPSILON_MAX, EPSILON_MIN, check_privacy
from cqsens.releasing import Release
from cqsens.releasing.options import ReleaseOptions
from cqsens.releasing.parts import parts_of, release_parts
from cqsens.releasing.public import is_public_release
from cqsens.releasing.run import release_with
from cqsens.releasing.stages import StagedRelease, release_stages
from cqsens.releasing.views import release_views, views_of
from cqsens.report.release import (
    ledger_json,
    render_csv,
    render_json,
    render_stages_json,
    render_text,
    spent_line,
)
from cqsens.settings import Settings

__all__ = ["release_cmd"]


def _epsilon_parts(texts: tuple[str, ...]) -> dict[str, float]:
    out: dict[str, float] = {}
    for text in texts:
        label, sep, value = text.rpartition("=")
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not sep or not label.strip() or not EPSILON_MIN <= number <= EPSILON_MAX:
            raise click.BadParameter(f"{text!r}: expected 'AGGREGATE=ε' with ε in "
                                     f"[{EPSILON_MIN:g}, {EPSILON_MAX:g}], e.g. 'COUNT(*)=0.3'",
                                     param_hint="--epsilon-part")
        out[label.strip()] = number
    return out


def _schema(schema: str | None, dialect: str | None, db: str) -> Schema | None:
    from cqsens.db.reflect import reflect_schema
    from cqsens.frontend.ddl import load_schema

    if schema is not None:
        return load_schema(Path(schema), dialect=dialect)
    return reflect_schema(db)


def _same_file(a: Path, b: Path | None) -> bool:
    if b is None:
        return False
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


def _ledger_line(ledger: str | None, state: Ledger | None) -> str:
    """The line that says what the ledger has spent (or that there is none)."""
    if state is not None and ledger is not None:
        return spent_line(ledger, state)
    return "ledger: none (give --ledger to count this release against a budget)"


def _show_stages(results: tuple[Release, ...], fmt: str, ledger: str | None,
                 state: Ledger | None, rule: str) -> None:
    """A release in stages (docs/rules.md, ``rule``): each stage as its own release, in
    order."""
    spent = ledger_json(ledger, state) if state is not None and ledger is not None else None
    if fmt == "json":
        click.echo(render_stages_json(results, spent))
        return
    line = _ledger_line(ledger, state)
    if fmt == "csv":  # the answer: the outer statement's release
        click.echo(render_csv(results[-1]))
        return
    for number, result in enumerate(results, start=1):
        click.echo(f"== stage {number} of {len(results)} (docs/rules.md, rule {rule})")
        click.echo(render_text(result, line if number == len(results) else None))


#: The database a release answers from, its schema and its dialect.
_database_options = stack(
    db_option(required=True, help="The database to answer from: sqlite:///path.db or "
                                  "postgresql://user:password@host/db."),
    schema_option("SQL DDL file; reflected from --db when absent."),
    dialect_option("sqlglot dialect of the query and DDL."),
)

#: The privacy of a release: value bounds, contributions, ε and δ and how they are spent.
_privacy_options = stack(
    bounds_option(),
    contributions_option("Rows one person may own."),
    rows_option(),
    epsilon_option("ε of the whole release, in [1e-9, 1000]."),
    delta_option("δ in (0, 1): for --mechanism gaussian and for partition selection."),
    click.option("--mechanism", type=click.Choice(["laplace", "gaussian"]), default="laplace",
                 show_default=True, help="Noise added to counts and sums."),
    click.option("--epsilon-part", "epsilon_parts", multiple=True, metavar="'AGG=ε'",
                 help="ε of one aggregate (as the output labels it); the rest of ε is split "
                      "evenly over the other measurements."),
    click.option("--keys", "keys", type=click.Path(dir_okay=False), default=None,
                 help="CSV file of the public GROUP BY keys (header: the group columns)."),
)

#: The ledger that records releases, and its budgets.
_ledger_options = stack(
    ledger_option("SQLite file recording every release (created when absent)."),
    budget_option("Total ε the ledger may spend; a release beyond it is refused (exit 1). "
                  "Stored in the ledger by the first release that gives it; a different "
                  "value is then refused (change it with `cqsens budget --set`)."),
    delta_budget_option("Total δ the ledger may spend, stored like --budget. With --budget "
                        "and no δ budget, a release that spends δ is refused."),
)


def _recorded(ledger: str | None, results: tuple[Release, ...], limits: Limits
              ) -> Ledger | None:
    """Record each release that spent privacy in ``ledger`` (committed before anything is
    shown); the ledger's state after, or None without a ledger."""
    if ledger is None:
        return None
    if all(is_public_release(r) for r in results):
        return open_ledger(ledger)  # spent nothing: not recorded
    state: Ledger | None = None
    for stage in results:  # a stage computed from public tables spent nothing
        if not is_public_release(stage):
            state = record(ledger, stage.entry(), stage.model, limits)
    return state


def _show(result: Release, fmt: str, ledger: str | None, state: Ledger | None) -> None:
    """One release, in the format asked for, with the ledger's line (or JSON) when there is
    a ledger."""
    if fmt == "json":
        click.echo(render_json(result, None if state is None or ledger is None
                               else ledger_json(ledger, state)))
    elif fmt == "csv":
        click.echo(render_csv(result))
    else:
        click.echo(render_text(result, _ledger_line(ledger, state)))


@click.command("release")
@click.argument("query", required=False, type=click.Path(dir_okay=False))
@sql_option(help="The SQL query as text.")
@config_option
@_database_options
@dependency_options
@_privacy_options
@_ledger_options
@format_option(["text", "json", "csv"])
@timeout_option(30.0, "Seconds the analysis may take")
@uses_config(lambda kw: kw.get("query"))
def release_cmd(
    query: str | None,
    sql_text: str | None,
    db: str,
    mechanism: str,
    epsilon_parts: tuple[str, ...],
    fmt: str,
    settings: Settings,
) -> None:
    """Release a differentially private answer to a SQL query from a database.

    The query is analysed with the schema and dependencies as for `cqsens
    analyze`; an unbounded query is refused with the advice (exit 1).  The
    query runs in a read-only transaction and OpenDP's noise, calibrated to
    the proven sensitivity, is added to each aggregate.  Only noisy values are
    printed, with their 95 % error half-width.  GROUP BY keys come from --keys,
    a public table, or DP partition selection (needs --delta).  With --ledger
    the release is recorded before it is printed; the ledger's stored budget
    and privacy unit are checked before the query runs, and again when it is
    recorded.

    \b
    Examples:
      cqsens release examples/hospital/oncology.sql --db sqlite:///hospital.db \\
          --constraints examples/hospital/constraints.txt --epsilon 1 --ledger ledger.sqlite
      cqsens release --sql "SELECT sex, COUNT(*) FROM Pat GROUP BY sex" \\
          --db sqlite:///hospital.db --epsilon 0.5 --delta 1e-6 --format json
    """
    if (query is None) == (sql_text is None):
        raise click.UsageError("give the query: a .sql FILE or --sql TEXT (one of them)")
    epsilon, delta, ledger = settings.epsilon, settings.delta, settings.ledger
    if epsilon is None:
        raise click.UsageError("give --epsilon (or epsilon in cqsens.toml)")
    try:  # ε and δ from cqsens.toml skip the option types: checked before any work
        check_privacy(epsilon, delta)
    except InputError as err:
        fail(err)
    if (settings.budget is not None or settings.delta_budget is not None) and ledger is None:
        raise click.UsageError("--budget and --delta-budget need a ledger: give --ledger FILE "
                               "(or ledger in cqsens.toml)")
    limits = Limits(settings.budget, settings.delta_budget)
    parts = _epsilon_parts(epsilon_parts)
    if ledger is not None and _same_file(Path(ledger), sqlite_file(db)):
        raise click.UsageError("--ledger must not be the --db database file")
    try:
        schema_obj = _schema(path_of(settings.schema), settings.dialect, db)
        # the release calibrates its own noise: the analysis proves no lower bound and
        # computes no scale
        analysed = replace(settings, schema=schema_obj, prove_lower=False, epsilon=None,
                           delta=None)

        def run(source: str | Path, kind: str | None, name: str | None) -> Analysis:
            return analyze_with(source, analysed, kind=kind, name=name)

        source: str | Path = Path(query) if query is not None else str(sql_text)
        analysis = run(source, "sql" if query is None else None,
                       "<sql>" if query is None else query)
        def check(charge: Charge, model: PrivacyModel) -> None:
            if ledger is not None:  # before the query runs
                precheck(ledger, charge, model, limits)

        views = views_of(analysis, settings.public, schema_obj)
        options = ReleaseOptions(
            url=db, epsilon=epsilon, reanalyse=lambda text: run(text, "sql", analysis.source),
            delta=delta, mechanism=mechanism, schema=schema_obj, bounds=settings.bounds,
            keys_file=settings.keys, public=settings.public, epsilon_parts=parts,
            before_query=check)
        done: Release | StagedRelease
        subqueries = parts_of(analysis, settings.public, schema_obj)
        if subqueries is not None:  # docs/rules.md, rule released-subquery
            done = release_parts(analysis, subqueries, options)
        elif views is not None:  # docs/rules.md, rule released-view
            done = release_views(analysis, views, options)
        elif analysis.stages:  # docs/rules.md, rule two-stage
            done = release_stages(analysis, options)
        else:
            done = release_with(analysis, options)
        results = done.stages if isinstance(done, StagedRelease) else (done,)
        result = results[-1]
        state = _recorded(ledger, results, limits)
    except (InputError, CqsensError) as err:
        fail(err)
    if len(results) > 1:
        _show_stages(results, fmt, ledger, state,
                     "released-subquery" if subqueries is not None else
                     "released-view" if views is not None else "two-stage")
    else:
        _show(result, fmt, ledger, state)
    sys.exit(EXIT_OK)
