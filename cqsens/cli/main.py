"""The ``cqsens`` command group: one command per module, registered here."""

from __future__ import annotations

import click

from cqsens.cli.analyze import analyze_cmd
from cqsens.cli.noiseless import noiseless
from cqsens.cli.profile import profile
from cqsens.cli.report import report_cmd
from cqsens.cli.witness import witness_cmd

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cqsens")
def cli() -> None:
    """How much can one record change a SQL counting query?

    cqsens computes sound upper bounds on the global sensitivity of COUNT
    queries over multi-table databases (Arapinis, Figueira, Gaboardi, ICALP
    2016), explains them, and proves lower bounds with concrete databases.

    \b
    Examples:
      cqsens analyze examples/hospital/oncology.sql --schema examples/hospital/schema.sql
      cqsens analyze --cq "Q(x) :- R(x,y), S(y,z)" --fd 'S[1->2]' --format json
    """


for _command in (analyze_cmd, witness_cmd, report_cmd, noiseless, profile):
    cli.add_command(_command)


def main() -> None:
    """Entry point for ``python -m cqsens``."""
    cli(prog_name="cqsens")
