"""``cqsens report``: analyse every query file under some folders and write one report."""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cqsens.cli.config import uses_config
from cqsens.cli.exits import EXIT_INPUT, EXIT_OK, fail
from cqsens.cli.masking import command_args, masked_command
from cqsens.cli.options import (
    analysis_options,
    db_file,
    format_option,
    no_lower_option,
    output_option,
    path_of,
    query_column_option,
    resolve_schema,
    strict_option,
    timeout_option,
)
from cqsens.cli.output import check_output, force_option, write_output
from cqsens.cli.params import TIMEOUT
from cqsens.cli.rendering import render_batch
from cqsens.cli.validate import check_shared_options
from cqsens.errors import InputError
from cqsens.files import write_text_atomically
from cqsens.settings import Settings

if TYPE_CHECKING:
    from cqsens.batch import BatchResult

__all__ = ["report_cmd"]

_SUFFIX_FORMATS = {"htm": "html", "html": "html", "md": "md", "markdown": "md", "json": "json",
                   "jsonl": "jsonl", "ndjson": "jsonl"}


@click.command("report")
@click.argument("inputs", nargs=-1, required=True,
                type=click.Path(exists=True, allow_dash=True))
@analysis_options
@output_option(required=True,
               help="report.html, report.md or report.json (format from the suffix).")
@force_option
@format_option(["html", "md", "json", "jsonl"], default=None,
               help="Output format (default: from the output's suffix).")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes; the output order does not depend on it.")
@timeout_option(10.0, "Seconds per query; a slower query is reported as timed out")
@click.option("--total-timeout", type=TIMEOUT, default=None, metavar="SECONDS",
              help="Seconds for a whole query log (logs only): past it, records of stored "
                   "shapes get no lower bound and others a timeout row.")
@strict_option("Exit 1 if any file fails, times out, or is unbounded (for CI gates).")
@no_lower_option("Skip the witness search (lower bounds null).")
@query_column_option("The CSV column holding the query (default: sql, else query).")
@click.option("--cache", "cache_file", default=None, type=click.Path(dir_okay=False),
              help="SQLite file of analysed shapes, kept between runs (logs only).")
@click.option("--no-cache", is_flag=True,
              help="Analyse every log record on its own (no sharing between shapes).")
@uses_config(lambda kw: _config_near(kw.get("inputs") or ()))
def report_cmd(
    inputs: tuple[str, ...],
    db_url: str | None,
    output: str,
    force: bool,
    fmt: str | None,
    jobs: int,
    total_timeout: float | None,
    strict: bool,
    query_column: str | None,
    cache_file: str | None,
    no_cache: bool,
    settings: Settings,
) -> None:
    """Analyse every .sql/.cq file under INPUTS and write one report.

    Folders are searched recursively; DDL and data scripts are skipped.  Without
    --schema/--constraints, a schema.sql / constraints.txt beside each query is
    used.  A file that fails to parse is a row with its error and the batch goes
    on: the exit code is 0 when the batch ran (1 with --strict if any file failed,
    timed out or is unbounded).  A bad option every query shares (--schema,
    --constraints, --fd, --cd, --bounds, --dialect, --epsilon, --delta) stops
    the command at once with exit 2.  An existing output file is replaced only
    with --force, and never when it is one of the inputs.

    A .jsonl/.ndjson/.csv input, or - (standard input), is a query log: one
    query per record (see docs/guide/reports.md, "Query logs").  Its records of one shape
    share one analysis (--cache FILE keeps them for the next run).  With -o
    out.jsonl the rows are written one per record, in input order, as they
    complete; HTML and Markdown reports of a log group the rows by shape.
    """
    suffix = Path(output).suffix.lower().lstrip(".")
    chosen = fmt or _SUFFIX_FORMATS.get(suffix)
    if chosen is None:
        raise click.UsageError(f"cannot tell the format of {output}: use .html, .md or .json, "
                               "or --format")
    target = check_output(output, inputs=_inputs(inputs, path_of(settings.schema),
                                                 path_of(settings.constraints), db_url),
                          force=force)
    shared = resolve_schema(settings.schema, db_url)
    check_shared_options(settings, schema=shared)
    timeout = settings.timeout if settings.timeout is not None else math.inf
    settings = replace(settings, schema=shared)
    command = masked_command("cqsens", command_args())
    from cqsens.logs.records import is_log

    if any(is_log(i) for i in inputs):
        from cqsens.cli.logs import run_log

        run_log(inputs, target=target, chosen=chosen, jobs=jobs, timeout=timeout,
                command=command, settings=settings, query_column=query_column,
                cache_file=None if no_cache else cache_file, share=not no_cache,
                strict=strict, output=output,
                total_timeout=None if total_timeout == float("inf") else total_timeout)
        return
    if chosen == "jsonl":
        raise click.UsageError("-o .jsonl streams the rows of a query log: give a .jsonl, "
                               ".csv log or - as input")
    try:
        result = _run_batch(inputs, jobs, timeout, command, settings)
    except InputError as err:
        fail(err)
    batch = result.as_dict()
    text = render_batch(batch, chosen)
    write_output(output, lambda: write_text_atomically(target, text))
    s = batch["summary"]
    click.echo(f"{output}: {s['total']} queries: {s['bounded']} bounded, "
               f"{s['unbounded']} unbounded, {s['errors']} errors, "
               f"{s['timed_out']} timed out; {s['tight']} tight")
    for row in result.rows:
        if row["status"] != "ok":
            click.echo(f"  {row['status']}: {row['error']}", err=True)
    sys.exit(EXIT_INPUT if strict and (result.failed or result.unbounded) else EXIT_OK)


def _config_near(inputs: tuple[str, ...]) -> str | None:
    """A path whose folder may hold cqsens.toml: inside the first input folder, or beside
    the first input file."""
    if not inputs:
        return None
    first = Path(inputs[0])
    return str(first / "cqsens.toml") if first.is_dir() else str(first)


def _inputs(inputs: tuple[str, ...], schema: str | None, constraints: str | None,
            db_url: str | None) -> list[tuple[str, Path | None]]:
    """Every file the report reads: queries, schemas and constraints found, options' files."""
    from cqsens.batch import collect_files
    from cqsens.logs.records import is_log

    files, _ = collect_files(i for i in inputs if not is_log(i))
    found: list[tuple[str, Path | None]] = [("an input", Path(i)) for i in inputs if i != "-"]
    found += [("a query file", f) for f in files]
    for folder in (Path(i) for i in inputs if i != "-" and Path(i).is_dir()):
        found += [("a schema or constraints file", p) for p in folder.rglob("*")
                  if p.name in ("schema.sql", "constraints.txt")]
    return found + [("the --schema file", None if schema is None else Path(schema)),
                    ("the --constraints file", None if constraints is None else Path(constraints)),
                    ("the --db database", db_file(db_url))]


def _run_batch(inputs: tuple[str, ...], jobs: int, timeout: float, command: str,
               settings: Settings) -> BatchResult:
    """Run the batch with a rich progress bar when stdout is a terminal."""
    from cqsens.batch import analyze_paths

    if not sys.stdout.isatty():
        return analyze_paths(inputs, jobs=jobs, timeout=timeout, command=command,
                             settings=settings)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task("analysing", total=None)

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return analyze_paths(inputs, jobs=jobs, timeout=timeout, progress=tick, command=command,
                             settings=settings)
