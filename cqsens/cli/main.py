"""The ``cqsens`` command group: one command per module, registered here.

The group is also the one place where errors end: every
:class:`~cqsens.errors.CqsensError` a command lets through is printed as its
one-line message (exit 1), a runaway recursion too, and any other exception is
a bug, reported in one line that says how to report it (exit 3).  Python's
traceback is shown only with ``cqsens --debug``.  Passwords of ``--db`` URLs
and ``PGPASSWORD`` are masked in these messages.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn, cast

import click

from cqsens.cli.exits import EXIT_INPUT, EXIT_INTERNAL
from cqsens.cli.masking import ARGS_KEY, scrub_message
from cqsens.errors import CqsensError

__all__ = ["COMMANDS", "cli", "main"]
_REPORT_TO = "the cqsens issue tracker"

#: Each command's name → its module under ``cqsens.cli`` and the click command's name there.
#: A command's module is imported only when the command runs (or ``--help`` lists them all),
#: so ``cqsens analyze`` does not import the database drivers or NumPy.
COMMANDS = {
    "analyze": ("analyze", "analyze_cmd"), "budget": ("budget", "budget_cmd"),
    "init": ("init", "init_cmd"), "noiseless": ("noiseless", "noiseless"),
    "profile": ("profile", "profile"), "release": ("release", "release_cmd"),
    "report": ("report", "report_cmd"), "witness": ("witness", "witness_cmd"),
}


def _issue_tracker() -> str:
    """The project's issue tracker (its ``Issues`` project URL), else a description."""
    try:
        from importlib.metadata import metadata

        for entry in metadata("cqsens").get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip().lower() in ("issues", "bug tracker", "tracker", "bugs"):
                return str(url).strip()
    except Exception:  # noqa: BLE001 - no metadata: the description will do
        pass
    return _REPORT_TO


class _Group(click.Group):
    """A click group that loads its commands when they are asked for (:data:`COMMANDS`) and
    turns every escaping exception into one line and an exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, name = COMMANDS[cmd_name]
        return cast(click.Command, getattr(importlib.import_module(f"cqsens.cli.{module}"), name))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[ARGS_KEY] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort,
                SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - the one place every error ends
            _report(exc, ctx.meta.get(ARGS_KEY, []), debug=bool(ctx.params.get("debug")))


def _report(exc: Exception, args: Sequence[str], *, debug: bool) -> NoReturn:
    """Print ``exc`` in one line (and its traceback with --debug), then exit."""
    if isinstance(exc, BrokenPipeError):  # the reader went away (| head): nothing to say
        _silence_stdout()
        sys.exit(EXIT_INPUT)
    if debug:
        click.echo(scrub_message("".join(traceback.format_exception(exc)), args), err=True,
                   nl=False)
    if isinstance(exc, CqsensError):
        click.echo(scrub_message(str(exc), args), err=True)
        sys.exit(EXIT_INPUT)
    if isinstance(exc, RecursionError):
        click.echo("error: the input is too deeply nested to analyse", err=True)
        sys.exit(EXIT_INPUT)
    message = " ".join(f"{type(exc).__name__}: {exc}".split())
    click.echo(scrub_message(
        f"internal error: {message} — please report it at {_issue_tracker()} with the "
        "command you ran" + ("" if debug else " (cqsens --debug ... shows the traceback)"),
        args), err=True)
    sys.exit(EXIT_INTERNAL)


def _silence_stdout() -> None:
    """Point stdout at the null device, so that Python's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (tests): nothing to do
        pass


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cqsens")
@click.option("--debug", is_flag=True,
              help="Show Python's traceback when cqsens fails on a bug (exit 3).")
def cli(debug: bool) -> None:
    """How much can one record change a SQL counting query?

    cqsens computes sound upper bounds on the global sensitivity of COUNT
    queries over multi-table databases (Arapinis, Figueira, Gaboardi, ICALP
    2016), explains them, and proves lower bounds with concrete databases.

    Exit codes: 0 done, 1 bad input (or a query over --timeout), 2 bad usage,
    3 a bug in cqsens (please report it).

    \b
    Examples:
      cqsens analyze examples/hospital/oncology.sql --schema examples/hospital/schema.sql
      cqsens analyze --cq "Q(x) :- R(x,y), S(y,z)" --fd 'S[1->2]' --format json
    """
    del debug  # read by _Group.invoke


def main() -> None:
    """Entry point for ``python -m cqsens`` and the ``cqsens`` script."""
    cli(prog_name="cqsens")
