"""The exit codes of every ``cqsens`` command, and the one way to report bad input.

``EXIT_OK`` when the command ran, ``EXIT_INPUT`` for bad input (a file that
does not parse, an unreachable database, an analysis over ``--timeout``, a
failed ``--strict`` gate), ``EXIT_USAGE`` for bad usage (click's own usage
errors already exit with it: an unknown option, a meaningless value, an
``-o`` file that exists or is an input), ``EXIT_INTERNAL`` for a bug, which
:mod:`cqsens.cli.main` reports in one line.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from cqsens.errors import CqsensError

__all__ = ["EXIT_INPUT", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "echo_error", "fail"]

EXIT_OK = 0
EXIT_INPUT = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


def echo_error(error: CqsensError | str) -> None:
    """Write one error line to stderr.

    An :class:`~cqsens.errors.InputError` reads ``file:line:col: message [construct]``.
    """
    click.echo(str(error), err=True)


def fail(error: CqsensError | str) -> NoReturn:
    """Write the error to stderr and exit with :data:`EXIT_INPUT`."""
    echo_error(error)
    sys.exit(EXIT_INPUT)
