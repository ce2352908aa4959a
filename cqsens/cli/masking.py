"""Passwords on the command line: masked wherever the command line is shown.

A ``--db`` URL may carry a password (in its user-info part, in its query
string, or as a libpq ``key=value`` string), and ``PGPASSWORD`` may hold one.
:func:`masked_command` is the command line as ``cqsens report`` records it in
its output, and :func:`scrub_message` masks them in a message that came from
elsewhere (an unexpected exception's text).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

__all__ = ["ARGS_KEY", "command_args", "masked_command", "scrub_message"]

#: Key of ``click.Context.meta`` where the ``cqsens`` group keeps its raw arguments.
ARGS_KEY = "cqsens.args"


def command_args() -> list[str]:
    """The arguments after ``cqsens`` (the command's name first), as typed."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ARGS_KEY in ctx.meta:
        return list(ctx.meta[ARGS_KEY])
    return sys.argv[1:]


def _value(arg: str) -> tuple[str, str]:
    """``("--db=", URL)`` for ``--db=URL``, ``("", arg)`` otherwise."""
    if arg.startswith("--") and "=" in arg:
        name, _, value = arg.partition("=")
        return name + "=", value
    return "", arg


def _secrets(args: Sequence[str]) -> list[str]:
    from cqsens.passwords import secrets_of

    return secrets_of(*(_value(a)[1] for a in args))


def masked_command(prog: str, args: Sequence[str]) -> str:
    """``prog`` and its arguments with every password masked.

    Parameters
    ----------
    prog : str
        ``"cqsens report"``.
    args : sequence of str
        The arguments that followed it.

    Returns
    -------
    str
        One line, safe to write into a report.
    """
    from cqsens.passwords import mask_url, scrub

    secrets = _secrets(args)
    shown = []
    for arg in args:
        name, value = _value(arg)
        shown.append(scrub(name + mask_url(value), secrets))
    return " ".join([prog, *shown])


def scrub_message(text: str, args: Sequence[str]) -> str:
    """``text`` with the passwords of ``args`` (and ``PGPASSWORD``) masked.

    Parameters
    ----------
    text : str
        A message about to be shown.
    args : sequence of str
        The command-line arguments.
    """
    from cqsens.passwords import scrub

    return scrub(text, _secrets(args))
