"""``cqsens init``: write a commented ``cqsens.toml`` from a live database's catalogue.

The command reflects the schema of ``--db URL`` and writes it as ``schema.sql`` next to
the metadata file, then writes the metadata file itself (:mod:`cqsens.report.init`):
the keys and foreign keys as found, a proposed privacy unit, ownership keys and public
tables (each marked ``PROPOSAL``), and the rows per person measured along every
ownership chain as commented-out ``cd`` lines, *observed in this data, not
guaranteed*.  An existing file is replaced only with ``--force``, never the ``--db``
file itself.  Exit codes: 0 written, 1 bad input (URL, unreachable server, wrong
password, a bad ``--unit``), 2 bad usage (an existing file without ``--force``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cqsens.cli.exits import EXIT_OK, fail
from cqsens.cli.options import (
    PROPOSED_OWNER,
    db_file,
    db_option,
    output_option,
    owner_option,
    unit_option,
)
from cqsens.cli.output import check_output, force_option, write_output
from cqsens.db.persons import PersonView, measure_persons
from cqsens.db.reflect import reflect_schema
from cqsens.errors import InputError
from cqsens.files import write_text_atomically
from cqsens.ir.schema import Schema
from cqsens.passwords import mask_url
from cqsens.report.init import config_text, schema_sql

__all__ = ["init_cmd"]

SCHEMA_NAME = "schema.sql"


def _read(db: str, unit: str | None, owner: tuple[str, ...]) -> tuple[Schema, PersonView | None]:
    """The reflected schema and the rows per person along the (proposed) ownership."""
    schema = reflect_schema(db)
    return schema, measure_persons(db, schema, unit=unit, owner=owner)


def _summary(output: Path, schema: Schema, view: PersonView | None) -> str:
    if view is None:
        return (f"{output}: written; no privacy unit proposed (no foreign key in the "
                f"catalogue); {SCHEMA_NAME}: {len(schema.relations)} tables")
    o = view.ownership
    how = "proposed" if view.proposed else "given"
    lines = len(view.proposals)
    return (f"{output}: written; unit {view.unit_text} ({how}), {len(o.owners)} ownership "
            f"keys, {len(o.public)} public tables (proposed), {lines} rows-per-person "
            f"lines commented out (observed, not guaranteed); {SCHEMA_NAME}: "
            f"{len(schema.relations)} tables. Review every line marked PROPOSAL.")


@click.command("init")
@db_option(required=True)
@output_option(default="cqsens.toml",
               help=f"The metadata file to write; the DDL goes to {SCHEMA_NAME} beside it.")
@force_option
@unit_option("The table of persons (default: proposed, the table the most others reference).",
             metavar="TABLE[.COLUMN]")
@owner_option(PROPOSED_OWNER)
def init_cmd(db: str, output: str, force: bool, unit: str | None, owner: tuple[str, ...]) -> None:
    """Write a commented cqsens.toml (and schema.sql) from a live database.

    The schema is reflected from the catalogue; the privacy unit, the foreign
    keys that carry ownership and the public tables are PROPOSED from the
    foreign keys and marked as such; the rows per person along every ownership
    chain are measured in the data (max, p99) and written as commented-out cd
    lines: OBSERVED IN THIS DATA, NOT GUARANTEED.  Existing files are replaced
    only with --force.

    \b
    Examples:
      cqsens init --db sqlite:///shop.db
      cqsens init --db postgresql://me@localhost/shop -o meta/cqsens.toml --unit customers
    """
    inputs = [("the --db database", db_file(db))]
    target = check_output(output, force=force, inputs=inputs)
    ddl = check_output(str(target.parent / SCHEMA_NAME), force=force, inputs=inputs)
    if ddl == target or target.resolve() == ddl.resolve():
        raise click.BadParameter(f"{output} would be the schema file too: choose another "
                                 "name", param_hint="'-o' / '--output'")
    try:
        schema, view = _read(db, unit, owner)
    except InputError as err:
        fail(err)
    masked = mask_url(db.strip())
    write_output(ddl, lambda: write_text_atomically(ddl, schema_sql(schema, source=masked)))
    text = config_text(schema, view, database=masked, schema_file=SCHEMA_NAME)
    write_output(target, lambda: write_text_atomically(target, text))
    click.echo(_summary(target, schema, view), err=True)
    sys.exit(EXIT_OK)
