"""``cqsens analyze``: the sensitivity of queries given as files or text."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cqsens.cli.config import config_option, uses_config
from cqsens.cli.exits import EXIT_INPUT, EXIT_OK, echo_error
from cqsens.cli.options import (
    dependency_options,
    release_options,
    resolve_schema,
    schema_options,
    timeout_option,
    witness_time_option,
)
from cqsens.errors import CqsensError, TimeLimitError
from cqsens.pipeline import Analysis, analyze
from cqsens.report.text import Format, to_json, to_text

__all__ = ["analyze_cmd"]

_Job = tuple[str | Path, str | None, str]


def _jobs(files: tuple[str, ...], cq_texts: tuple[str, ...],
          sql_texts: tuple[str, ...], query_column: str | None = None) -> list[_Job]:
    """(source, kind, name) of every query to analyse, files first; a .jsonl/.csv log or
    ``-`` gives one per record, named by its id (a record that cannot be read is an error)."""
    from cqsens.logs.records import is_log, read_records

    jobs: list[_Job] = []
    for f in files:
        if is_log(f):
            for record in read_records(f, query_column=query_column):
                if record.error is not None:
                    raise CqsensError(record.error)
                jobs.append((record.sql, "sql", record.id))
            continue
        path = Path(f)
        if path.suffix not in (".sql", ".cq"):
            raise click.UsageError(f"{f}: expected a .sql or .cq file (or use --cq/--sql)")
        jobs.append((path, None, f))
    jobs += [(t, "cq", "<cq>") for t in cq_texts]
    jobs += [(t, "sql", "<sql>") for t in sql_texts]
    if not jobs:
        raise click.UsageError("give a query: a .sql/.cq FILE, --cq TEXT or --sql TEXT")
    return jobs


@click.command("analyze")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--query-column", default=None, metavar="NAME",
              help="The CSV column of a log holding the query (default: sql, else query).")
@click.option("--cq", "cq_texts", multiple=True, metavar="TEXT",
              help="A conjunctive query, e.g. \"Q(x) :- R(x,y), S(y,'c')\".")
@click.option("--sql", "sql_texts", multiple=True, metavar="TEXT", help="A SQL query.")
@config_option
@schema_options
@dependency_options
@release_options
@click.option("--format", "fmt", type=click.Choice([f.value for f in Format]), default="text",
              show_default=True, help="Output format.")
@click.option("--witness", "show_witness", is_flag=True,
              help="Show the witness databases behind the lower bound.")
@click.option("--no-lower", is_flag=True,
              help="Skip the witness search (faster; the lower bound is then null).")
@witness_time_option(0.5)
@timeout_option(30.0, "Seconds each query's analysis may take")
@uses_config(lambda kw: kw["files"][0] if kw.get("files") and kw["files"][0] != "-"
             else None)
def analyze_cmd(
    files: tuple[str, ...],
    query_column: str | None,
    cq_texts: tuple[str, ...],
    sql_texts: tuple[str, ...],
    schema: str | None,
    dialect: str | None,
    db_url: str | None,
    fds: tuple[str, ...],
    cds: tuple[str, ...],
    constraints: str | None,
    neighbor: str,
    public: tuple[str, ...],
    unit: str | None,
    owner: tuple[str, ...],
    fmt: str,
    show_witness: bool,
    no_lower: bool,
    witness_time: float,
    timeout: float,
    value_bounds: tuple[str, ...],
    contributions: int,
    rows: int | None,
    epsilon: float | None,
    delta: float | None,
) -> None:
    """Analyse queries from FILES (.sql, .cq, a .jsonl/.csv log or -) or --cq/--sql text.

    Prints, per query, the sound upper bound on how much one added or removed
    row can change the count, the lower bound a pair of databases proves, the
    paper's literal values, and why.  Exit code 0 when every query was
    analysed, 1 on bad input or a query over --timeout, 2 on bad usage.

    \b
    Examples:
      cqsens analyze examples/hospital/oncology.sql --schema examples/hospital/schema.sql
      cqsens analyze examples/hospital/oncology.sql --schema examples/hospital/schema.sql \\
          --cd 'PatDoc[pat->doc]<=3' --witness
      cqsens analyze --cq "Q(x) :- R(x,y), S(y,z)" --fd 'S[1->2]' --fd 'R[2->1]'
      cqsens analyze --sql "SELECT SUM(age) FROM Pat GROUP BY sex" \\
          --schema examples/hospital/schema.sql --neighbor substitute --epsilon 1
    """
    try:
        jobs = _jobs(files, cq_texts, sql_texts, query_column)
    except CqsensError as err:
        echo_error(err)
        sys.exit(EXIT_INPUT)
    schema_obj = resolve_schema(schema, db_url)
    results: list[Analysis] = []
    failed = False
    for source, kind, name in jobs:
        try:
            results.append(
                analyze(source, schema=schema_obj, fds=fds, cds=cds, constraints=constraints,
                        dialect=dialect, neighbor=neighbor, kind=kind, name=name,
                        prove_lower=not no_lower, witness_time=witness_time,
                        bounds=value_bounds, contributions=contributions, rows=rows,
                        epsilon=epsilon, delta=delta, timeout=timeout, public=public,
                        unit=unit, owner=owner)
            )
        except TimeLimitError as err:
            echo_error(f"{name}: {err}")
            failed = True
        except CqsensError as err:
            echo_error(err)
            failed = True
    if results:
        if fmt == Format.json.value:
            click.echo(to_json(results, witness=show_witness, as_list=len(jobs) > 1))
        else:
            click.echo("\n\n".join(to_text(a, witness=show_witness) for a in results))
    sys.exit(EXIT_INPUT if failed else EXIT_OK)
