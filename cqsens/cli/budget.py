"""``cqsens budget``: the releases a ledger recorded and the privacy budget they spent."""

from __future__ import annotations

import json
import sys

import click

from cqsens.cli.config import config_option, uses_config
from cqsens.cli.exits import EXIT_OK, fail
from cqsens.cli.params import BUDGET
from cqsens.errors import InputError
from cqsens.release.ledger import read_ledger, spent
from cqsens.report.release import ledger_text

__all__ = ["budget_cmd"]


@click.command("budget")
@config_option
@click.option("--ledger", "ledger", type=click.Path(dir_okay=False), default=None,
              help="The ledger file (or ledger in cqsens.toml).")
@click.option("--budget", type=BUDGET, default=None, help="Total ε, to show what is left.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
@uses_config(lambda kw: None)
def budget_cmd(ledger: str | None, budget: float | None, fmt: str) -> None:
    """Show the releases recorded in a ledger and the ε and δ they spent.

    \b
    Example:
      cqsens budget --ledger ledger.sqlite --budget 3
    """
    if ledger is None:
        raise click.UsageError("give --ledger FILE (or ledger in cqsens.toml via --config)")
    try:
        entries = read_ledger(ledger)
    except InputError as err:
        fail(err)
    total = spent(entries)
    if fmt == "json":
        click.echo(json.dumps({
            "ledger": ledger, "releases": [e.to_dict() for e in entries],
            "epsilon_spent": total.epsilon, "delta_spent": total.delta, "rule": total.rule,
            "budget": budget,
            "epsilon_left": None if budget is None else max(0.0, budget - total.epsilon)},
            indent=2, ensure_ascii=False))
    else:
        click.echo(ledger_text(entries, total, ledger, budget))
    sys.exit(EXIT_OK)
