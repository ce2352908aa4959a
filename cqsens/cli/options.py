"""Click options, each declared once and shared by the commands that take it.

The Python name of an option that is a setting is the name of its
:class:`~cqsens.settings.Settings` field (``--bounds`` is ``bounds``, ``--fd`` is
``fds``, ``--no-lower`` is ``prove_lower``), so that :func:`cqsens.cli.config.uses_config`
gathers a command's settings into one :class:`~cqsens.settings.Settings` value and
the command takes that value instead of one parameter per option.  A command whose
option means something narrower (the database ``release`` answers from, the DDL
``profile`` checks) passes its own help text or default.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from cqsens.cli.exits import fail
from cqsens.cli.params import BUDGET, DELTA, DIALECT, DURATION, EPSILON, TIMEOUT
from cqsens.errors import InputError
from cqsens.ir.schema import Schema
from cqsens.settings import NEIGHBOR_MODELS, OWNERLESS

__all__ = [
    "PROPOSED_OWNER",
    "PROPOSED_UNIT",
    "analysis_options",
    "budget_option",
    "cd_option",
    "constraints_option",
    "contributions_option",
    "config_option",
    "cq_option",
    "db_file",
    "db_option",
    "delta_budget_option",
    "delta_option",
    "dependency_options",
    "dialect_option",
    "epsilon_option",
    "fd_option",
    "force_option",
    "format_option",
    "ledger_option",
    "no_lower_option",
    "output_option",
    "path_of",
    "owner_option",
    "ownerless_option",
    "query_column_option",
    "release_options",
    "resolve_schema",
    "schema_option",
    "schema_options",
    "sql_option",
    "stack",
    "strict_option",
    "timeout_option",
    "unit_option",
    "witness_time_option",
]

#: --unit and --owner of the commands that propose them from the foreign keys.
PROPOSED_UNIT = ("Privacy unit of the rows-per-person view (default: proposed, the table "
                 "the most others reference).")
PROPOSED_OWNER = "A foreign key that carries ownership (repeatable; default: proposed)."

_Command = Callable[..., Any]
_Decorator = Callable[[_Command], _Command]


def stack(*decorators: _Decorator) -> _Decorator:
    """The decorators applied in order, so that ``--help`` lists them in that order."""
    def apply(f: _Command) -> _Command:
        for decorator in reversed(decorators):
            f = decorator(f)
        return f

    return apply


def config_option(f: _Command) -> _Command:
    """--config FILE: the metadata file (:mod:`cqsens.cli.config` reads it)."""
    return click.option(
        "--config", "config", type=click.Path(dir_okay=False), default=None,
        help="Metadata file (TOML): schema, dependencies, bounds, public tables, neighbour "
             "model, ε/δ. Default: cqsens.toml next to the query, if any. Options given on "
             "the command line win.")(f)


def force_option(f: _Command) -> _Command:
    """--force: replace an existing ``-o`` file."""
    return click.option("--force", is_flag=True,
                        help="Replace the -o file if it exists (never one of the inputs).")(f)


# -- the query and the output -------------------------------------------------------------


def cq_option(*, multiple: bool = False,
              help: str = "A conjunctive query.") -> _Decorator:
    """--cq TEXT (``cq_texts`` when repeatable, else ``cq_text``)."""
    return click.option("--cq", "cq_texts" if multiple else "cq_text", multiple=multiple,
                        default=None, metavar="TEXT", help=help)


def sql_option(*, multiple: bool = False,
               help: str = "A SQL query.") -> _Decorator:
    """--sql TEXT (``sql_texts`` when repeatable, else ``sql_text``)."""
    return click.option("--sql", "sql_texts" if multiple else "sql_text", multiple=multiple,
                        default=None, metavar="TEXT", help=help)


def query_column_option(help: str) -> _Decorator:
    """--query-column NAME: the CSV column of a log that holds the query."""
    return click.option("--query-column", default=None, metavar="NAME", help=help)


def output_option(*, help: str, required: bool = False,
                  default: str | None = None) -> _Decorator:
    """-o/--output FILE.  No ``default`` is passed when there is none: click 8.3 and later
    take an explicit ``default=None`` as a default, and a required option with one is never
    reported missing."""
    extra: dict[str, Any] = {} if default is None else {"default": default,
                                                        "show_default": True}
    return click.option("-o", "--output", required=required, type=click.Path(dir_okay=False),
                        help=help, **extra)


def format_option(choices: Sequence[str], *, default: str | None = "text",
                  help: str = "Output format.") -> _Decorator:
    """--format (Python name ``fmt``)."""
    return click.option("--format", "fmt", type=click.Choice(list(choices)), default=default,
                        show_default=default is not None, help=help)


def strict_option(help: str) -> _Decorator:
    """--strict: exit 1 on what the command counts as a failure."""
    return click.option("--strict", is_flag=True, help=help)


def db_option(*, required: bool = False, help: str | None = None) -> _Decorator:
    """--db URL: the database a command reads (``db`` when required, else ``db_url``: the
    schema reflected from it instead of a DDL file)."""
    if required:
        return click.option("--db", "db", required=True, metavar="URL",
                            help=help or "sqlite:///path.db or "
                                         "postgresql://user:password@host:port/dbname.")
    return click.option("--db", "db_url", default=None, metavar="URL",
                        help=help or "Read the schema from a live database instead of a DDL "
                                     "file (sqlite:///path.db, postgresql://user:pass@host/db).")


# -- settings (the Python name is the Settings field) ----------------------------------------


def schema_option(help: str = "SQL DDL file (CREATE TABLE ...): column order, keys (FDs), "
                              "CHECK bounds.") -> _Decorator:
    """--schema FILE."""
    return click.option("--schema", "schema", type=click.Path(dir_okay=False), default=None,
                        help=help)


def dialect_option(help: str = "sqlglot dialect of the SQL and DDL (postgres, mysql, "
                               "bigquery, ...; any casing).") -> _Decorator:
    """--dialect NAME."""
    return click.option("--dialect", "dialect", type=DIALECT, default=None, metavar="NAME",
                        help=help)


def fd_option(help: str = "Functional dependency (positions 1-based, or column names "
                          "with --schema).") -> _Decorator:
    """--fd (Python name ``fds``)."""
    return click.option("--fd", "fds", multiple=True, metavar="'R[i->j]'", help=help)


def cd_option(help: str = "Cardinality dependency: at most k values at position j "
                          "per value at i.") -> _Decorator:
    """--cd (Python name ``cds``)."""
    return click.option("--cd", "cds", multiple=True, metavar="'R[i->j]<=k'", help=help)


def constraints_option(help: str = "File of dependencies, one per line "
                                   "('#' comments).") -> _Decorator:
    """--constraints FILE."""
    return click.option("--constraints", "constraints", type=click.Path(dir_okay=False),
                        default=None, help=help)


def neighbor_option() -> _Decorator:
    """--neighbor add-remove|substitute."""
    return click.option("--neighbor", "neighbor", type=click.Choice(list(NEIGHBOR_MODELS)),
                        default="add-remove", show_default=True,
                        help="Neighbouring databases: one row added/removed, or one row "
                             "changed.")


def public_option() -> _Decorator:
    """--public TABLE[,TABLE...] (repeatable)."""
    return click.option("--public", "public", multiple=True, metavar="TABLE[,TABLE...]",
                        help="Public tables (reference data): their rows are the same in both "
                             "neighbours, so they never play the added or removed row.")


def unit_option(help: str = "Privacy unit: neighbours differ by one row of TABLE and every "
                            "row that references it through foreign keys (one person, not one "
                            "row). Needs the schema's foreign keys; every table read must "
                            "reach TABLE through NOT NULL foreign keys or be --public.",
                metavar: str = "TABLE[.KEY]") -> _Decorator:
    """--unit TABLE[.KEY]."""
    return click.option("--unit", "unit", default=None, metavar=metavar, help=help)


def owner_option(help: str = "With --unit: a foreign key that carries ownership (repeat it, "
                             "e.g. --owner visits.patient_id). Only these keys say which rows "
                             "belong to a person; other foreign keys, self-references "
                             "included, are ordinary references. Default: every foreign "
                             "key.") -> _Decorator:
    """--owner TABLE.COLUMN (repeatable)."""
    return click.option("--owner", "owner", multiple=True, metavar="TABLE.COLUMN", help=help)


def ownerless_option() -> _Decorator:
    """--ownerless refuse|person."""
    return click.option("--ownerless", "ownerless", type=click.Choice(list(OWNERLESS)),
                        default="refuse", show_default=True,
                        help="With --unit: a row whose ownership key is NULL. refuse: the "
                             "query must not read such rows; person: each is a person of its "
                             "own (only for queries that read neither the key nor the unit "
                             "table; docs/rules.md, rule ownerless-rows).")


def bounds_option() -> _Decorator:
    """--bounds 'T.col=low:high' (repeatable)."""
    return click.option("--bounds", "bounds", multiple=True, metavar="'T.col=low:high'",
                        help="Value bounds of a summed/averaged column, e.g. 'Pat.age=0:120'.")


def contributions_option(help: str = "Rows one individual may own (neighbours differ by up "
                                     "to K single-row steps): counts and sums are multiplied "
                                     "by K; AVG, MIN, MAX and MEDIAN take their value "
                                     "range.") -> _Decorator:
    """--contributions K."""
    return click.option("--contributions", "contributions", type=click.IntRange(min=1),
                        default=1, show_default=True, help=help)


def rows_option() -> _Decorator:
    """--rows N."""
    return click.option("--rows", "rows", type=click.IntRange(min=1), default=None,
                        help="Number of rows, for the parity rule of a single-table MEDIAN.")


def epsilon_option(help: str = "ε > 0: print the Laplace scale Δ1/ε (and the Gaussian σ "
                               "with --delta).") -> _Decorator:
    """--epsilon ε."""
    return click.option("--epsilon", "epsilon", type=EPSILON, default=None, help=help)


def delta_option(help: str = "δ in (0, 1) for the Gaussian mechanism "
                             "(with --epsilon).") -> _Decorator:
    """--delta δ."""
    return click.option("--delta", "delta", type=DELTA, default=None, help=help)


def no_lower_option(help: str) -> _Decorator:
    """--no-lower (Python name ``prove_lower``, False when given)."""
    return click.option("--no-lower", "prove_lower", flag_value=False, default=True, help=help)


def timeout_option(default: float, what: str) -> _Decorator:
    """--timeout: seconds > 0, ``inf`` for no limit."""
    return click.option("--timeout", "timeout", type=TIMEOUT, default=default,
                        show_default=True, metavar="SECONDS", help=f"{what} (inf: no limit).")


def witness_time_option(default: float) -> _Decorator:
    """--witness-time: a finite number of seconds >= 0."""
    return click.option("--witness-time", "witness_time", type=DURATION, default=default,
                        show_default=True, metavar="SECONDS",
                        help="Budget of the witness search, as the work a typical core "
                             "does in that many seconds (the same seed and budget give "
                             "the same witness on any machine; the clock stops it only at "
                             "4 x the budget + 1 s, at most 5 s past it).")


def ledger_option(help: str) -> _Decorator:
    """--ledger FILE."""
    return click.option("--ledger", "ledger", type=click.Path(dir_okay=False), default=None,
                        help=help)


def budget_option(help: str) -> _Decorator:
    """--budget ε: the total ε of a ledger."""
    return click.option("--budget", "budget", type=BUDGET, default=None, help=help)


def delta_budget_option(help: str) -> _Decorator:
    """--delta-budget δ: the total δ of a ledger."""
    return click.option("--delta-budget", "delta_budget", type=DELTA, default=None, help=help)


# -- groups ----------------------------------------------------------------------------------


def schema_options(f: _Command) -> _Command:
    """--schema, --dialect and --db (the schema reflected from a database)."""
    return stack(schema_option(), dialect_option(), db_option())(f)


def dependency_options(f: _Command) -> _Command:
    """--fd, --cd, --constraints, --neighbor, --public, --unit, --owner, --ownerless."""
    return stack(fd_option(), cd_option(), constraints_option(), neighbor_option(),
                 public_option(), unit_option(), owner_option(), ownerless_option())(f)


def release_options(f: _Command) -> _Command:
    """--bounds, --contributions, --rows, --epsilon, --delta."""
    return stack(bounds_option(), contributions_option(), rows_option(), epsilon_option(),
                 delta_option())(f)


def analysis_options(f: _Command) -> _Command:
    """The settings of an analysis: --config, then :func:`schema_options`,
    :func:`dependency_options` and :func:`release_options`."""
    return stack(config_option, schema_options, dependency_options, release_options)(f)


def db_file(db_url: str | None) -> Path | None:
    """The SQLite file a --db URL names (an input no -o may write over), else None."""
    if db_url is None:
        return None
    from cqsens.db.connect import sqlite_file

    return sqlite_file(db_url)


def path_of(value: str | Path | Schema | None) -> str | None:
    """The file a schema or constraints setting names (None for a parsed schema)."""
    return None if value is None or isinstance(value, Schema) else str(value)


def resolve_schema(schema: str | Path | Schema | None,
                   db_url: str | None) -> Path | Schema | None:
    """The --schema file (always a path, never DDL text), or the schema reflected from --db.

    Exits 1 when the database cannot be read.

    Raises
    ------
    click.UsageError
        Both --schema and --db were given.
    """
    if db_url is None:
        return None if schema is None else schema if isinstance(schema, Schema) \
            else Path(schema)
    if schema is not None:
        raise click.UsageError("give --schema or --db, not both")
    from cqsens.db.reflect import reflect_schema

    try:
        return reflect_schema(db_url)
    except InputError as err:
        fail(err)
