"""The ``cqsens`` command line: thin wrappers over the API and the renderers."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from cqsens.errors import InputError
from cqsens.pipeline import Analysis, analyze
from cqsens.report.text import Format, to_json, to_text

EXIT_OK = 0
EXIT_INPUT = 1
EXIT_USAGE = 2

__all__ = ["cli", "EXIT_OK", "EXIT_INPUT", "EXIT_USAGE"]


def _error(err: InputError) -> None:
    click.echo(str(err), err=True)  # file:line:col: message [construct]


def _schema_arg(schema: str | None, db_url: str | None) -> Any:
    """The --schema file, or the schema reflected from --db (exits 1 on failure)."""
    if db_url is None:
        return schema
    if schema is not None:
        raise click.UsageError("give --schema or --db, not both")
    from cqsens.db.database import reflect_schema

    try:
        return reflect_schema(db_url)
    except InputError as err:
        _error(err)
        sys.exit(EXIT_INPUT)


def schema_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--schema, --db and --dialect."""
    f = click.option("--db", "db_url", default=None, metavar="URL",
                     help="Read the schema from a live database instead of a DDL file "
                          "(sqlite:///path.db, postgresql://user:pass@host/db).")(f)
    f = click.option("--dialect", default=None, metavar="NAME",
                     help="sqlglot dialect of the SQL and DDL (postgres, mysql, bigquery, ...).")(f)
    f = click.option("--schema", "schema", type=click.Path(dir_okay=False), default=None,
                     help="SQL DDL file (CREATE TABLE ...): column order, keys (FDs), CHECK bounds.")(f)
    return f


def release_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--bounds, --contributions, --rows, --epsilon, --delta."""
    f = click.option("--delta", type=float, default=None,
                     help="δ for the Gaussian mechanism (with --epsilon).")(f)
    f = click.option("--epsilon", type=float, default=None,
                     help="ε: print the Laplace scale Δ1/ε (and the Gaussian σ with --delta).")(f)
    f = click.option("--rows", type=click.IntRange(min=1), default=None,
                     help="Number of rows, for the parity rule of a single-table MEDIAN.")(f)
    f = click.option("--contributions", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Rows one individual may own: the sensitivity is multiplied by it.")(f)
    f = click.option("--bounds", "value_bounds", multiple=True, metavar="'T.col=low:high'",
                     help="Value bounds of a summed/averaged column, e.g. 'Pat.age=0:120'.")(f)
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
@release_options
@click.option("--format", "fmt", type=click.Choice([f.value for f in Format]), default="text",
              show_default=True, help="Output format.")
@click.option("--witness", "show_witness", is_flag=True,
              help="Show the witness databases behind the lower bound.")
@click.option("--no-lower", is_flag=True,
              help="Skip the witness search (faster; the lower bound is then null).")
@click.option("--witness-time", type=click.FloatRange(min=0), default=0.25, show_default=True,
              help="Seconds of local search when the constructions do not reach the upper bound.")
def analyze_cmd(
    files: tuple[str, ...],
    cq_texts: tuple[str, ...],
    sql_texts: tuple[str, ...],
    schema: str | None,
    dialect: str | None,
    db_url: str | None,
    fds: tuple[str, ...],
    cds: tuple[str, ...],
    constraints: str | None,
    neighbor: str,
    fmt: str,
    show_witness: bool,
    no_lower: bool,
    witness_time: float,
    value_bounds: tuple[str, ...],
    contributions: int,
    rows: int | None,
    epsilon: float | None,
    delta: float | None,
) -> None:
    """Analyse queries from FILES (.sql, .cq) or --cq/--sql text.

    Prints, per query, the sound upper bound on how much one added or removed
    row can change the count, the lower bound a pair of databases proves, the
    paper's literal values, and why.  Exit code 0 when every query was
    analysed, 1 on bad input, 2 on bad usage.

    \b
    Examples:
      cqsens analyze examples/hospital/oncology.sql --schema examples/hospital/schema.sql
      cqsens analyze examples/hospital/oncology.sql --schema examples/hospital/schema.sql \\
          --cd 'PatDoc[pat->doc]<=3' --witness
      cqsens analyze --cq "Q(x) :- R(x,y), S(y,z)" --fd 'S[1->2]' --fd 'R[2->1]'
      cqsens analyze --sql "SELECT SUM(age) FROM Pat GROUP BY sex" \\
          --schema examples/hospital/schema.sql --neighbor substitute --epsilon 1
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
    schema_obj = _schema_arg(schema, db_url)
    results: list[Analysis] = []
    failed = False
    for source, kind, name in jobs:
        try:
            results.append(
                analyze(source, schema=schema_obj, fds=fds, cds=cds, constraints=constraints,
                        dialect=dialect, neighbor=neighbor, kind=kind, name=name,
                        prove_lower=not no_lower, witness_time=witness_time,
                        bounds=value_bounds, contributions=contributions, rows=rows,
                        epsilon=epsilon, delta=delta)
            )
        except InputError as err:
            _error(err)
            failed = True
    if results:
        if fmt == Format.json.value:
            click.echo(to_json(results, witness=show_witness, as_list=len(jobs) > 1))
        else:
            click.echo("\n\n".join(to_text(a, witness=show_witness) for a in results))
    sys.exit(EXIT_INPUT if failed else EXIT_OK)


@cli.command("witness")
@click.argument("query", type=click.Path(dir_okay=False), required=False)
@click.option("--cq", "cq_text", default=None, metavar="TEXT", help="A conjunctive query.")
@click.option("--sql", "sql_text", default=None, metavar="TEXT", help="A SQL query.")
@schema_options
@dependency_options
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Where to write: a .sql script, or a .sqlite/.db database.")
@click.option("--witness-time", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Seconds of local search when the constructions do not reach the upper bound.")
def witness_cmd(
    query: str | None,
    cq_text: str | None,
    sql_text: str | None,
    schema: str | None,
    dialect: str | None,
    db_url: str | None,
    fds: tuple[str, ...],
    cds: tuple[str, ...],
    constraints: str | None,
    neighbor: str,
    output: str,
    witness_time: float,
) -> None:
    """Write the databases that prove the lower bound of QUERY.

    A .sql output is a runnable script: CREATE TABLE, the INSERTs of A, the
    counts as comments, and the INSERT of the added row t as the last
    statement.  A .sqlite/.db output holds A in the tables and A ∪ {t} in
    <table>_with_t copies.
    """
    from cqsens.witness.witness import write_witness

    given = [x for x in (query, cq_text, sql_text) if x is not None]
    if len(given) != 1:
        raise click.UsageError("give exactly one query: QUERY file, --cq TEXT or --sql TEXT")
    kind = "cq" if cq_text is not None else "sql" if sql_text is not None else None
    source: str | Path = Path(query) if query is not None else given[0]
    schema_obj = _schema_arg(schema, db_url)
    try:
        result = analyze(source, schema=schema_obj, fds=fds, cds=cds, constraints=constraints,
                         dialect=dialect, neighbor=neighbor, kind=kind,
                         witness_time=witness_time)
    except InputError as err:
        _error(err)
        sys.exit(EXIT_INPUT)
    if result.witness is None:
        click.echo(f"error: no witness found for {result.source}", err=True)
        sys.exit(EXIT_INPUT)
    try:
        write_witness(result.witness, output, title=f"{result.source}: {result.cq}")
    except OSError as exc:
        click.echo(f"error: {output}: cannot write: {exc.strerror}", err=True)
        sys.exit(EXIT_INPUT)
    click.echo(f"{output}: {result.witness.summary()}")
    click.echo(f"upper bound {result.upper}, lower bound {result.lower}"
               + (" (tight)" if result.tight else ""))


@cli.command("report")
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
    from cqsens.batch import analyze_paths

    suffix = Path(output).suffix.lower().lstrip(".")
    chosen = fmt or {"htm": "html", "html": "html", "md": "md", "markdown": "md",
                     "json": "json"}.get(suffix)
    if chosen is None:
        raise click.UsageError(f"cannot tell the format of {output}: use .html, .md or .json, "
                               "or --format")
    options = dict(schema=_schema_arg(schema, db_url), dialect=dialect, fds=list(fds), cds=list(cds),
                   constraints=constraints, neighbor=neighbor, bounds=list(value_bounds),
                   contributions=contributions, rows=rows, epsilon=epsilon, delta=delta,
                   prove_lower=not no_lower)
    command = "cqsens report " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else "cqsens report"
    try:
        result = _run_batch(analyze_paths, inputs, jobs, timeout, command, options)
    except InputError as err:  # bad shared options (schema, constraints) stop the batch
        _error(err)
        sys.exit(EXIT_INPUT)
    batch = result.as_dict()
    try:
        if chosen == "json":
            import json

            text = json.dumps(batch, indent=2, ensure_ascii=False)
        else:
            from cqsens.report import html as report_html

            text = report_html.to_html(batch) if chosen == "html" else report_html.to_markdown(batch)
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        click.echo(f"error: {output}: cannot write: {exc.strerror}", err=True)
        sys.exit(EXIT_INPUT)
    s = batch["summary"]
    click.echo(f"{output}: {s['total']} queries: {s['bounded']} bounded, {s['unbounded']} unbounded, "
               f"{s['errors']} errors, {s['timed_out']} timed out; {s['tight']} tight")
    for row in result.rows:
        if row["status"] != "ok":
            click.echo(f"  {row['status']}: {row['error']}", err=True)
    sys.exit(EXIT_INPUT if strict and (result.failed or result.unbounded) else EXIT_OK)


def _run_batch(analyze_paths: Any, inputs: Any, jobs: int, timeout: float, command: str,
               options: dict[str, Any]) -> Any:
    """Run the batch with a rich progress bar when stdout is a terminal."""
    from cqsens.frontend.ddl import load_schema
    from cqsens.pipeline import resolve_sigma  # noqa: F401 - fail early on bad shared options

    if not isinstance(options["schema"], (str, type(None))):
        pass  # already a Schema (reflected from --db)
    else:
        load_schema(options["schema"], dialect=options["dialect"])
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


def _register_subcommands() -> None:
    from cqsens.cli.noiseless import noiseless
    from cqsens.cli.profile import profile

    cli.add_command(noiseless)
    cli.add_command(profile)


_register_subcommands()


def main() -> None:
    """Entry point for ``python -m cqsens``."""
    cli(prog_name="cqsens")
