"""Click options shared by several commands, and the schema they select."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from cqsens.cli.exits import fail
from cqsens.cli.params import DELTA, DIALECT, DURATION, EPSILON, TIMEOUT
from cqsens.errors import InputError
from cqsens.ir.schema import Schema
from cqsens.release.aggregates import NEIGHBORS

__all__ = [
    "db_file",
    "dependency_options",
    "release_options",
    "resolve_schema",
    "schema_options",
    "timeout_option",
    "witness_time_option",
]

_Command = Callable[..., Any]


def schema_options(f: _Command) -> _Command:
    """--schema, --db and --dialect."""
    f = click.option("--db", "db_url", default=None, metavar="URL",
                     help="Read the schema from a live database instead of a DDL file "
                          "(sqlite:///path.db, postgresql://user:pass@host/db).")(f)
    f = click.option("--dialect", type=DIALECT, default=None, metavar="NAME",
                     help="sqlglot dialect of the SQL and DDL "
                          "(postgres, mysql, bigquery, ...; any casing).")(f)
    f = click.option("--schema", "schema", type=click.Path(dir_okay=False), default=None,
                     help="SQL DDL file (CREATE TABLE ...): column order, keys (FDs), "
                          "CHECK bounds.")(f)
    return f


def release_options(f: _Command) -> _Command:
    """--bounds, --contributions, --rows, --epsilon, --delta."""
    f = click.option("--delta", type=DELTA, default=None,
                     help="δ in (0, 1) for the Gaussian mechanism (with --epsilon).")(f)
    f = click.option("--epsilon", type=EPSILON, default=None,
                     help="ε > 0: print the Laplace scale Δ1/ε (and the Gaussian σ with "
                          "--delta).")(f)
    f = click.option("--rows", type=click.IntRange(min=1), default=None,
                     help="Number of rows, for the parity rule of a single-table MEDIAN.")(f)
    f = click.option("--contributions", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Rows one individual may own: the sensitivity is multiplied by it.")(f)
    f = click.option("--bounds", "value_bounds", multiple=True, metavar="'T.col=low:high'",
                     help="Value bounds of a summed/averaged column, e.g. 'Pat.age=0:120'.")(f)
    return f


def dependency_options(f: _Command) -> _Command:
    """--fd, --cd, --constraints, --neighbor, --public, --unit, --owner."""
    f = click.option("--owner", "owner", multiple=True, metavar="TABLE.COLUMN",
                     help="With --unit: a foreign key that carries ownership (repeat it, e.g. "
                          "--owner visits.patient_id). Only these keys say which rows belong "
                          "to a person; other foreign keys, self-references included, are "
                          "ordinary references. Default: every foreign key.")(f)
    f = click.option("--unit", "unit", default=None, metavar="TABLE[.KEY]",
                     help="Privacy unit: neighbours differ by one row of TABLE and every row "
                          "that references it through foreign keys (one person, not one "
                          "row). Needs the schema's foreign keys; every table read must "
                          "reach TABLE through NOT NULL foreign keys or be --public.")(f)
    f = click.option("--public", "public", multiple=True, metavar="TABLE[,TABLE...]",
                     help="Public tables (reference data): their rows are the same in both "
                          "neighbours, so they never play the added or removed row.")(f)
    f = click.option("--neighbor", type=click.Choice(list(NEIGHBORS)),
                     default="add-remove", show_default=True,
                     help="Neighbouring databases: one row added/removed, or one row changed.")(f)
    f = click.option("--constraints", type=click.Path(dir_okay=False), default=None,
                     help="File of dependencies, one per line ('#' comments).")(f)
    f = click.option("--cd", "cds", multiple=True, metavar="'R[i->j]<=k'",
                     help="Cardinality dependency: at most k values at position j "
                          "per value at i.")(f)
    f = click.option("--fd", "fds", multiple=True, metavar="'R[i->j]'",
                     help="Functional dependency (positions 1-based, or column names "
                          "with --schema).")(f)
    return f


def timeout_option(default: float, what: str) -> Callable[[_Command], _Command]:
    """--timeout: seconds > 0, ``inf`` for no limit."""
    return click.option("--timeout", type=TIMEOUT, default=default, show_default=True,
                        metavar="SECONDS", help=f"{what} (inf: no limit).")


def witness_time_option(default: float) -> Callable[[_Command], _Command]:
    """--witness-time: a finite number of seconds >= 0."""
    return click.option("--witness-time", type=DURATION, default=default, show_default=True,
                        metavar="SECONDS",
                        help="Budget of the witness search, as the work a typical core "
                             "does in that many seconds (the same seed and budget give "
                             "the same witness on any machine; the clock stops it only at "
                             "4 x the budget + 1 s).")


def db_file(db_url: str | None) -> Path | None:
    """The SQLite file a --db URL names (an input no -o may write over), else None."""
    if db_url is None:
        return None
    from cqsens.db.connect import sqlite_file

    return sqlite_file(db_url)


def resolve_schema(schema: str | None, db_url: str | None) -> Path | Schema | None:
    """The --schema file (always a path, never DDL text), or the schema reflected from --db.

    Exits 1 when the database cannot be read.

    Raises
    ------
    click.UsageError
        Both --schema and --db were given.
    """
    if db_url is None:
        return None if schema is None else Path(schema)
    if schema is not None:
        raise click.UsageError("give --schema or --db, not both")
    from cqsens.db.reflect import reflect_schema

    try:
        return reflect_schema(db_url)
    except InputError as err:
        fail(err)
