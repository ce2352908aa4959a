"""``cqsens analyze``: the sensitivity of queries given as files or text."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from cqsens.cli.config import uses_config
from cqsens.cli.exits import EXIT_INPUT, EXIT_OK, echo_error
from cqsens.cli.options import (
    analysis_options,
    cq_option,
    format_option,
    no_lower_option,
    query_column_option,
    resolve_schema,
    sql_option,
    timeout_option,
    witness_time_option,
)
from cqsens.errors import CqsensError, TimeLimitError
from cqsens.ir.schema import Schema
from cqsens.pipeline import Analysis, analyze_with
from cqsens.report.text import Format, to_json, to_text
from cqsens.settings import Settings

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
@query_column_option("The CSV column of a log holding the query (default: sql, else query).")
@cq_option(multiple=True, help="A conjunctive query, e.g. \"Q(x) :- R(x,y), S(y,'c')\".")
@sql_option(multiple=True)
@analysis_options
@format_option([f.value for f in Format])
@click.option("--witness", "show_witness", is_flag=True,
              help="Show the witness databases behind the lower bound.")
@no_lower_option("Skip the witness search (faster; the lower bound is then null).")
@witness_time_option(0.5)
@timeout_option(30.0, "Seconds each query's analysis may take")
@uses_config(lambda kw: kw["files"][0] if kw.get("files") and kw["files"][0] != "-"
             else None)
def analyze_cmd(
    files: tuple[str, ...],
    query_column: str | None,
    cq_texts: tuple[str, ...],
    sql_texts: tuple[str, ...],
    db_url: str | None,
    fmt: str,
    show_witness: bool,
    settings: Settings,
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
    settings = replace(settings, schema=resolve_schema(settings.schema, db_url))
    results: list[Analysis] = []
    failed = False
    for source, kind, name in jobs:
        try:
            results.append(analyze_with(source, settings, kind=kind, name=name))
        except TimeLimitError as err:
            echo_error(f"{name}: {err}")
            failed = True
        except CqsensError as err:
            echo_error(err)
            failed = True
    if results and db_url is not None and isinstance(settings.schema, Schema):
        from cqsens.observed_advice import observed_advice

        try:
            results = [observed_advice(a, db_url, settings.schema) for a in results]
        except CqsensError as err:
            echo_error(err)
            failed = True
    if results:
        if fmt == Format.json.value:
            click.echo(to_json(results, witness=show_witness, as_list=len(jobs) > 1))
        else:
            click.echo("\n\n".join(to_text(a, witness=show_witness) for a in results))
    sys.exit(EXIT_INPUT if failed else EXIT_OK)
