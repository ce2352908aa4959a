"""``cqsens witness``: write the databases that prove a query's lower bound."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from cqsens.cli.config import uses_config
from cqsens.cli.exits import fail
from cqsens.cli.options import (
    analysis_options,
    cq_option,
    db_file,
    format_option,
    output_option,
    path_of,
    resolve_schema,
    sql_option,
    timeout_option,
    witness_time_option,
)
from cqsens.cli.output import check_output, force_option, write_output
from cqsens.errors import CqsensError
from cqsens.pipeline import analyze_with
from cqsens.report.text import witness_json
from cqsens.settings import Settings

__all__ = ["witness_cmd"]


@click.command("witness")
@click.argument("query", type=click.Path(dir_okay=False), required=False)
@cq_option()
@sql_option()
@analysis_options
@output_option(required=True, help="Where to write: a .sql script, or a .sqlite/.db database.")
@force_option
@format_option(["text", "json"],
               help="What to print: two lines, or a JSON document with the witness databases.")
@witness_time_option(1.0)
@timeout_option(30.0, "Seconds the analysis may take")
@uses_config(lambda kw: kw.get("query"))
def witness_cmd(
    query: str | None,
    cq_text: str | None,
    sql_text: str | None,
    db_url: str | None,
    output: str,
    force: bool,
    fmt: str,
    settings: Settings,
) -> None:
    """Write the databases that prove the lower bound of QUERY.

    A .sql output is a runnable script: CREATE TABLE, the INSERTs of A, the
    query, the INSERT of the added row t, and the query again, so that
    `sqlite3 :memory: < w.sql` prints both counts.  A .sqlite/.db output is two
    files, w.sqlite holding A and w.with_t.sqlite holding A ∪ {t}, on which the
    query runs unchanged.  An existing output file is replaced only with
    --force, and never when it is one of the inputs (query, schema,
    constraints, the --db file).  --format json prints a JSON document (with
    schema_version) holding the files, the bounds and both databases.
    """
    from cqsens.witness import write_witness
    from cqsens.witness.writers import companion_path, is_database_path

    given = [x for x in (query, cq_text, sql_text) if x is not None]
    if len(given) != 1:
        raise click.UsageError("give exactly one query: QUERY file, --cq TEXT or --sql TEXT")
    kind = "cq" if cq_text is not None else "sql" if sql_text is not None else None
    source: str | Path = Path(query) if query is not None else given[0]
    inputs: list[tuple[str, str | Path | None]] = [
        ("the query file", query), ("the --schema file", path_of(settings.schema)),
        ("the --constraints file", path_of(settings.constraints)),
        ("the --db database", db_file(db_url))]
    target = check_output(output, force=force, inputs=inputs)
    if is_database_path(target):
        check_output(str(companion_path(target)), force=force, inputs=inputs)
    settings = replace(settings, schema=resolve_schema(settings.schema, db_url))
    try:
        result = analyze_with(source, settings, kind=kind)
    except CqsensError as err:  # bad input, or over --timeout
        fail(err)
    witness = result.witness
    if witness is None:
        fail(f"error: no witness found for {result.source}")
    write_output(output, lambda: write_witness(witness, target,
                                               title=f"{result.source}: {result.cq}"))
    if fmt == "json":
        files = [str(target)] + ([str(companion_path(target))] if is_database_path(target)
                                 else [])
        click.echo(witness_json(result, output, files))
        return
    click.echo(f"{output}: {witness.summary()}")
    click.echo(f"upper bound {result.upper}, lower bound {result.lower}"
               + (" (tight)" if result.tight else ""))
