"""Checks of the options every query of a batch shares, made once before any row runs.

``cqsens report`` applies ``--schema``/``--db``, ``--constraints``, ``--fd``,
``--cd`` and ``--bounds`` to every query it finds.  A bad one would make every
row fail the same way; :func:`check_shared_options` finds it first and makes
it one usage error (exit 2).  What depends on a query (a position out of a
relation's range, a relation the query does not use) is still checked per row.
"""

from __future__ import annotations

from pathlib import Path

import click

from cqsens.errors import DependencyError, InputError, SchemaNeededError, read_text
from cqsens.ir.schema import Schema
from cqsens.settings import Settings

__all__ = ["check_shared_options"]


def _check_dependency(text: str, *, kind: str, schema: Schema | None, source: str,
                      line: int | None = None) -> None:
    """Parse one dependency; a column name is left to the rows when no schema is shared."""
    from cqsens.frontend.parse_cq import parse_dependency

    try:
        parse_dependency(text, schema=schema, kind=kind, source=source, line=line)
    except SchemaNeededError:
        if schema is None:
            return  # a schema.sql beside each query may name the columns
        raise


def check_shared_options(settings: Settings, *, schema: Path | Schema | None) -> Schema | None:
    """Load the shared schema and check the shared settings, or raise a usage error.

    Parameters
    ----------
    settings : Settings
        The batch's settings: ``dialect`` (already checked by its option type),
        ``fds``, ``cds``, ``constraints`` and ``bounds`` are checked.
    schema : Path, Schema or None
        The ``--schema`` file, or the schema reflected from ``--db``.

    Returns
    -------
    Schema or None
        The shared schema once parsed.

    Raises
    ------
    click.UsageError
        The first bad option, with the error that every row would have had.
    """
    from cqsens.frontend.ddl import load_schema
    from cqsens.release.values import parse_value_bounds

    try:
        parsed = load_schema(schema, dialect=settings.dialect)
        parse_value_bounds(settings.bounds)
        for kind, items in (("fd", settings.fds), ("cd", settings.cds)):
            for item in items:
                _check_dependency(str(item), kind=kind, schema=parsed, source=f"--{kind}")
        constraints = settings.constraints
        if constraints is not None:
            text = read_text(Path(constraints), error=DependencyError, what="constraints file")
            for number, raw in enumerate(text.splitlines(), start=1):
                line = raw.split("#", 1)[0].strip()
                if line:
                    _check_dependency(line, kind="auto", schema=parsed,
                                      source=str(constraints), line=number)
    except InputError as err:
        raise click.UsageError(f"{err} (an option every query shares; nothing was analysed)"
                               ) from None
    return parsed
