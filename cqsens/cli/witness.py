"""``cqsens witness``: write the databases that prove a query's lower bound."""

from __future__ import annotations

from pathlib import Path

import click

from cqsens.cli.exits import fail
from cqsens.cli.options import dependency_options, resolve_schema, schema_options
from cqsens.errors import InputError
from cqsens.pipeline import analyze

__all__ = ["witness_cmd"]


@click.command("witness")
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
    from cqsens.witness import write_witness

    given = [x for x in (query, cq_text, sql_text) if x is not None]
    if len(given) != 1:
        raise click.UsageError("give exactly one query: QUERY file, --cq TEXT or --sql TEXT")
    kind = "cq" if cq_text is not None else "sql" if sql_text is not None else None
    source: str | Path = Path(query) if query is not None else given[0]
    schema_obj = resolve_schema(schema, db_url)
    try:
        result = analyze(source, schema=schema_obj, fds=fds, cds=cds, constraints=constraints,
                         dialect=dialect, neighbor=neighbor, kind=kind,
                         witness_time=witness_time)
    except InputError as err:
        fail(err)
    if result.witness is None:
        fail(f"error: no witness found for {result.source}")
    try:
        write_witness(result.witness, output, title=f"{result.source}: {result.cq}")
    except OSError as exc:
        fail(f"error: {output}: cannot write: {exc.strerror}")
    click.echo(f"{output}: {result.witness.summary()}")
    click.echo(f"upper bound {result.upper}, lower bound {result.lower}"
               + (" (tight)" if result.tight else ""))
