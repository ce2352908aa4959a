"""``cqsens profile``: check declared dependencies against a live database, measure fan-outs.

The command connects to a SQLite or PostgreSQL database (``--db URL``), takes
its schema from ``--schema FILE`` or reflects it from the database, and

* checks every declared dependency — the FDs of the schema's keys, ``--fd``,
  ``--cd`` and ``--constraints FILE``, single-column, composite
  ``R[a,b->c]<=k`` or rows-per-value ``R[a->*]<=k`` — with SQL run in the
  database, listing the offending values of each violation;
* checks every foreign key of the schema (SQLite enforces them only under
  ``PRAGMA foreign_keys``), listing values that reference no row;
* measures the rows each person holds along the foreign keys that carry ownership
  (``--unit``, ``--owner``, or a proposed unit), largest and 99th percentile;
* measures the fan-out of every ordered pair of columns of every table and
  proposes cardinality dependencies for the undeclared pairs, which are
  *observed in this data, not guaranteed*; ``-o FILE`` writes them as a
  constraints file that ``--constraints`` reads (with ``--schema``).

Exit codes: 0 when the profile ran (violations found or not; ``--strict`` makes
violated dependencies and broken foreign keys exit 1), 1 on bad input (URL,
unreachable server, wrong password, missing table or column, bad dependency),
2 on bad usage.  Passwords in the URL are masked in every message.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cqsens.cli.config import config_option, uses_config
from cqsens.cli.exits import EXIT_OK, fail
from cqsens.cli.options import (
    PROPOSED_OWNER,
    PROPOSED_UNIT,
    cd_option,
    constraints_option,
    db_file,
    db_option,
    dialect_option,
    fd_option,
    format_option,
    output_option,
    owner_option,
    path_of,
    schema_option,
    strict_option,
    unit_option,
)
from cqsens.cli.output import check_output, force_option, write_output
from cqsens.db import (
    OBSERVED_NOTE,
    Profile,
    declared_dependencies,
    mask_url,
    profile_database,
    proposals_text,
    reflect_schema,
)
from cqsens.errors import InputError
from cqsens.files import write_text_atomically
from cqsens.frontend.ddl import load_schema
from cqsens.report.profile import render_json, render_text
from cqsens.settings import Settings

__all__ = ["profile"]


def _profile(db: str, schema_file: str | None, dialect: str | None, constraints: str | None,
             fds: tuple[str, ...], cds: tuple[str, ...], samples: int,
             unit: str | None, owner: tuple[str, ...]) -> Profile:
    """Load or reflect the schema, gather the declared dependencies and profile the database."""
    loaded = load_schema(Path(schema_file), dialect=dialect) if schema_file else None
    schema = loaded if loaded is not None else reflect_schema(db)
    deps, origins = declared_dependencies(schema, fds=fds, cds=cds, constraints=constraints)
    return profile_database(db, schema=schema, deps=deps, origins=origins, samples=samples,
                            unit=unit, owner=owner)


def _violated(report: Profile) -> str:
    """``2 declared dependencies are``, ``1 foreign key is``, or both joined by ``and``."""
    parts = []
    deps, keys = len(report.violations), len(report.broken_foreign_keys)
    if deps:
        parts.append(f"{deps} declared {'dependency' if deps == 1 else 'dependencies'}")
    if keys:
        parts.append(f"{keys} foreign {'key' if keys == 1 else 'keys'}")
    verb = "is" if deps + keys == 1 else "are"
    return f"{' and '.join(parts)} {verb}"


def _write_proposals(report: Profile, db: str, output: Path) -> None:
    """Write the proposed dependencies as a constraints file (exits 1 if it cannot)."""
    text = proposals_text(report.fanouts, report.schema, database=mask_url(db))
    write_output(output, lambda: write_text_atomically(output, text))
    click.echo(f"{output}: {len(report.proposals)} proposed dependencies written "
               f"({OBSERVED_NOTE})", err=True)


@click.command("profile")
@config_option
@db_option(required=True)
@schema_option("SQL DDL file (CREATE TABLE ...); reflected from the database when absent.")
@dialect_option("sqlglot dialect of the --schema DDL (any casing).")
@constraints_option("File of dependencies to check, one per line ('#' comments).")
@fd_option("Functional dependency to check (positions 1-based or column names).")
@cd_option("Cardinality dependency to check.")
@output_option(help="Write the proposed CDs (observed, not guaranteed) as a constraints file.")
@force_option
@format_option(["text", "json"])
@click.option("--samples", type=click.IntRange(min=0), default=3, show_default=True,
              help="Offending values shown per violated dependency.")
@strict_option("Exit 1 when a declared dependency or a foreign key is violated "
               "(default: exit 0).")
@unit_option(PROPOSED_UNIT, metavar="TABLE[.COLUMN]")
@owner_option(PROPOSED_OWNER)
@uses_config(lambda kw: None)
def profile(
    db: str,
    output: str | None,
    force: bool,
    fmt: str,
    samples: int,
    strict: bool,
    settings: Settings,
) -> None:
    """Check declared dependencies and foreign keys against a live database; measure fan-outs.

    Every declared dependency (schema keys, --fd, --cd, --constraints; also
    R[a,b->c]<=k and rows per value R[a->*]<=k) and every foreign key of the
    schema is checked with SQL run in the database; violations are listed with
    offending values.  The fan-out of every pair of columns is measured and undeclared
    pairs get a proposed cardinality dependency: OBSERVED IN THIS DATA, NOT
    GUARANTEED.  The rows per person (max, p99) are measured along every foreign key
    that carries ownership to the privacy unit (--unit, --owner, or proposed).
    Exit code 0 when the profile ran (1 with --strict if a dependency or foreign
    key is violated), 1 on bad input, 2 on bad usage.

    \b
    Examples:
      cqsens profile --db sqlite:///hospital.db --constraints examples/hospital/constraints.txt
      cqsens profile --db postgresql://me@localhost/hospital -o observed.txt
    """
    schema_file, constraints = path_of(settings.schema), path_of(settings.constraints)
    target = None if output is None else check_output(output, force=force, inputs=[
        ("the --schema file", schema_file), ("the --constraints file", constraints),
        ("the --db database", db_file(db))])
    try:
        report = _profile(db, schema_file, settings.dialect, constraints,
                          tuple(str(d) for d in settings.fds),
                          tuple(str(d) for d in settings.cds), samples, settings.unit,
                          settings.owner)
    except InputError as err:
        fail(err)
    click.echo(render_json(report) if fmt == "json" else render_text(report))
    if target is not None:
        _write_proposals(report, db, target)
    if strict and report.violated:
        fail(f"error: {_violated(report)} violated in the database")
    sys.exit(EXIT_OK)
