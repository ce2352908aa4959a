"""The ``cqsens`` command line: thin wrappers over the API and the renderers."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from cqsens.analyze import Analysis, analyze
from cqsens.errors import InputError
from cqsens.report import Format, to_json, to_text

EXIT_OK = 0
EXIT_INPUT = 1
EXIT_USAGE = 2

__all__ = ["cli", "EXIT_OK", "EXIT_INPUT", "EXIT_USAGE"]


def _error(err: InputError) -> None:
    click.echo(f"error: {err}", err=True)


def schema_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--schema and --dialect."""
    f = click.option("--dialect", default=None, metavar="NAME",
                     help="sqlglot dialect of the SQL and DDL (postgres, mysql, bigquery, ...).")(f)
    f = click.option("--schema", "schema", type=click.Path(dir_okay=False), default=None,
                     help="SQL DDL file (CREATE TABLE ...): column order, keys (FDs), CHECK bounds.")(f)
    return f


def dependency_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--fd, --cd, --constraints, --neighbor."""
    f = click.option("--neighbor", type=click.Choice(["add-remove", "substitute"]),
                     default="add-remove", show_default=True,
                     help="Neighbouring databases: one row added/removed, or one row changed.")(f)
    f = click.option("--constraints", type=click.Path(dir_okay=False), default=None,
                     help="File of dependencies, one per line ('#' comments).")(f)
    f = click.option("--cd", "cds", multiple=True, metavar="'R[i->j]<=k'",
                     help="Cardinality dependency: at most k values at position j per value at i.")(f)
    f = click.option("--fd", "fds", multiple=True, metavar="'R[i->j]'",
                     help="Functional dependency (positions 1-based, or column names with --schema).")(f)
    return f


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cqsens")
def cli() -> None:
    """How much can one record change a SQL counting query?

    cqsens computes sound upper bounds on the global sensitivity of COUNT
    queries over multi-table databases (Arapinis, Figueira, Gaboardi, ICALP
    2016), explains them, and proves lower bounds with concrete databases.

    \b
    Examples:
      cqsens analyze examples/hospital/oncology.sql --schema examples/hospital/schema.sql
      cqsens analyze --cq "Q(x) :- R(x,y), S(y,z)" --fd 'S[1->2]' --format json
    """


@cli.command("analyze")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--cq", "cq_texts", multiple=True, metavar="TEXT",
              help="A conjunctive query, e.g. \"Q(x) :- R(x,y), S(y,'c')\".")
@click.option("--sql", "sql_texts", multiple=True, metavar="TEXT", help="A SQL query.")
@schema_options
@dependency_options
@click.option("--format", "fmt", type=click.Choice([f.value for f in Format]), default="text",
              show_default=True, help="Output format.")
def analyze_cmd(
    files: tuple[str, ...],
    cq_texts: tuple[str, ...],
    sql_texts: tuple[str, ...],
    schema: str | None,
    dialect: str | None,
    fds: tuple[str, ...],
    cds: tuple[str, ...],
    constraints: str | None,
    neighbor: str,
    fmt: str,
) -> None:
    """Analyse queries from FILES (.sql, .cq) or --cq/--sql text.

    Prints, per query, the sound upper bound on how much one added or removed
    row can change the count, the paper's literal values, and why.  Exit code
    0 when every query was analysed, 1 on bad input, 2 on bad usage.
    """
    jobs: list[tuple[str | Path, str | None, str]] = []
    for f in files:
        path = Path(f)
        if path.suffix not in (".sql", ".cq"):
            raise click.UsageError(f"{f}: expected a .sql or .cq file (or use --cq/--sql)")
        jobs.append((path, None, f))
    jobs += [(t, "cq", "<cq>") for t in cq_texts]
    jobs += [(t, "sql", "<sql>") for t in sql_texts]
    if not jobs:
        raise click.UsageError("give a query: a .sql/.cq FILE, --cq TEXT or --sql TEXT")
    results: list[Analysis] = []
    failed = False
    for source, kind, name in jobs:
        try:
            results.append(
                analyze(source, schema=schema, fds=fds, cds=cds, constraints=constraints,
                        dialect=dialect, neighbor=neighbor, kind=kind, name=name)
            )
        except InputError as err:
            _error(err)
            failed = True
    if results:
        if fmt == Format.json.value:
            click.echo(to_json(results))
        else:
            click.echo("\n\n".join(to_text(a) for a in results))
    sys.exit(EXIT_INPUT if failed else EXIT_OK)


def main() -> None:
    """Entry point for ``python -m cqsens``."""
    cli(prog_name="cqsens")
