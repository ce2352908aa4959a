"""``-o FILE`` and ``--force``: never lose a file, and never write over an input.

:func:`check_output` runs before any work: it refuses an existing file unless
``--force`` is given, refuses any of the command's own inputs (the query file,
the schema, the constraints file, the ``--db`` SQLite file) even with
``--force``, and refuses a folder that does not exist.  The file itself is
written by :mod:`cqsens.files`: to a temporary file beside it, then renamed
into place.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from cqsens.cli.exits import fail
from cqsens.cli.options import force_option
from cqsens.errors import CqsensError

__all__ = ["check_output", "force_option", "write_output"]

_Command = Callable[..., Any]


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths are the same file (same resolved path, or same inode)."""
    try:
        if a.resolve() == b.resolve():
            return True
    except (OSError, RuntimeError):
        pass
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_output(output: str, *, inputs: Iterable[tuple[str, str | Path | None]],
                 force: bool) -> Path:
    """The ``-o`` path once it is safe to write (usage error, exit 2, otherwise).

    Parameters
    ----------
    output : str
        The ``-o`` value.
    inputs : iterable of (str, path) pairs
        The command's input files, each with what it is (``"the query
        file"``); None paths are skipped.  The output may never be one of
        them, even with ``force``.
    force : bool
        Whether an existing file may be replaced.

    Returns
    -------
    Path
        The output path.

    Raises
    ------
    click.BadParameter
        The output is an input, exists without ``force``, is not a regular
        file, or its folder does not exist.
    """
    target = Path(output)
    for what, item in inputs:
        if item is not None and _same_file(target, Path(item)):
            raise click.BadParameter(
                f"{output} is {what} of this command; cqsens never writes over its inputs, "
                "even with --force: choose another file", param_hint="'-o' / '--output'")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise click.BadParameter(f"the folder {folder} does not exist",
                                 param_hint="'-o' / '--output'")
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise click.BadParameter(f"{output}: {exc.strerror}",
                                 param_hint="'-o' / '--output'") from None
    if not stat.S_ISREG(mode):
        raise click.BadParameter(f"{output} exists and is not a regular file; "
                                 "cqsens only replaces regular files",
                                 param_hint="'-o' / '--output'")
    if not force:
        raise click.BadParameter(f"{output} already exists; pass --force to replace it",
                                 param_hint="'-o' / '--output'")
    return target


def write_output(output: str | Path, write: Callable[[], None]) -> None:
    """Run ``write`` (which writes ``output`` atomically); exit 1 with one line if it cannot."""
    try:
        write()
    except OSError as exc:
        fail(f"error: {output}: cannot write: {exc.strerror or exc}")
    except CqsensError as err:
        fail(err)
