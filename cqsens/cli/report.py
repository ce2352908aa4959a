"""``cqsens report``: analyse every query file under some folders and write one report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cqsens.cli.exits import EXIT_INPUT, EXIT_OK, fail
from cqsens.cli.options import dependency_options, release_options, resolve_schema, schema_options
from cqsens.errors import InputError

if TYPE_CHECKING:
    from cqsens.batch import BatchResult

__all__ = ["report_cmd"]

_SUFFIX_FORMATS = {"htm": "html", "html": "html", "md": "md", "markdown": "md", "json": "json"}


@click.command("report")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True))
@schema_options
@dependency_options
@release_options
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="report.html, report.md or report.json (format from the suffix).")
@click.option("--format", "fmt", type=click.Choice(["html", "md", "json"]), default=None,
              help="Output format (default: from the output's suffix).")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes; the output order does not depend on it.")
@click.option("--timeout", type=click.FloatRange(min=0), default=10.0, show_default=True,
              help="Seconds per query; a slower query is reported as timed out (0: no limit).")
@click.option("--strict", is_flag=True,
              help="Exit 1 if any file fails, times out, or is unbounded (for CI gates).")
@click.option("--no-lower", is_flag=True, help="Skip the witness search (lower bounds null).")
def report_cmd(
    inputs: tuple[str, ...],
    schema: str | None,
    dialect: str | None,
    db_url: str | None,
    fds: tuple[str, ...],
    cds: tuple[str, ...],
    constraints: str | None,
    neighbor: str,
    value_bounds: tuple[str, ...],
    contributions: int,
    rows: int | None,
    epsilon: float | None,
    delta: float | None,
    output: str,
    fmt: str | None,
    jobs: int,
    timeout: float,
    strict: bool,
    no_lower: bool,
) -> None:
    """Analyse every .sql/.cq file under INPUTS and write one report.

    Folders are searched recursively; DDL and data scripts are skipped.  Without
    --schema/--constraints, a schema.sql / constraints.txt beside each query is
    used.  A file that fails to parse is a row with its error and the batch goes
    on: the exit code is 0 when the batch ran (1 with --strict if any file failed,
    timed out or is unbounded).
    """
    suffix = Path(output).suffix.lower().lstrip(".")
    chosen = fmt or _SUFFIX_FORMATS.get(suffix)
    if chosen is None:
        raise click.UsageError(f"cannot tell the format of {output}: use .html, .md or .json, "
                               "or --format")
    options = dict(schema=resolve_schema(schema, db_url), dialect=dialect, fds=list(fds),
                   cds=list(cds), constraints=constraints, neighbor=neighbor,
                   bounds=list(value_bounds), contributions=contributions, rows=rows,
                   epsilon=epsilon, delta=delta, prove_lower=not no_lower)
    command = "cqsens report " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else "cqsens report"
    try:
        result = _run_batch(inputs, jobs, timeout, command, options)
    except InputError as err:  # bad shared options (schema, constraints) stop the batch
        fail(err)
    batch = result.as_dict()
    try:
        Path(output).write_text(_render(batch, chosen), encoding="utf-8")
    except OSError as exc:
        fail(f"error: {output}: cannot write: {exc.strerror}")
    s = batch["summary"]
    click.echo(f"{output}: {s['total']} queries: {s['bounded']} bounded, "
               f"{s['unbounded']} unbounded, {s['errors']} errors, "
               f"{s['timed_out']} timed out; {s['tight']} tight")
    for row in result.rows:
        if row["status"] != "ok":
            click.echo(f"  {row['status']}: {row['error']}", err=True)
    sys.exit(EXIT_INPUT if strict and (result.failed or result.unbounded) else EXIT_OK)


def _render(batch: dict[str, Any], chosen: str) -> str:
    """The batch as JSON, HTML or Markdown text."""
    if chosen == "json":
        import json

        return json.dumps(batch, indent=2, ensure_ascii=False)
    from cqsens.report import html as report_html

    return report_html.to_html(batch) if chosen == "html" else report_html.to_markdown(batch)


def _run_batch(inputs: tuple[str, ...], jobs: int, timeout: float, command: str,
               options: dict[str, Any]) -> BatchResult:
    """Run the batch with a rich progress bar when stdout is a terminal."""
    from cqsens.batch import analyze_paths
    from cqsens.frontend.ddl import load_schema

    if isinstance(options["schema"], (str, type(None))):  # not yet a Schema (--db reflects it)
        load_schema(options["schema"], dialect=options["dialect"])  # fail early on a bad one
    if not sys.stdout.isatty():
        return analyze_paths(inputs, jobs=jobs, timeout=timeout, command=command, **options)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task("analysing", total=None)

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return analyze_paths(inputs, jobs=jobs, timeout=timeout, progress=tick, command=command,
                             **options)
