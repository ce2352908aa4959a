"""``cqsens budget``: a ledger's stored budget and privacy unit, its releases, what they spent.

``--set`` is the one way to change a stored budget on purpose; the change is
written to the ledger's change log.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import click

from cqsens.cli.config import config_option, uses_config
from cqsens.cli.exits import EXIT_OK, fail
from cqsens.cli.options import budget_option, delta_budget_option, format_option, ledger_option
from cqsens.errors import InputError
from cqsens.release.ledger import Ledger, Limits, agreed, open_ledger, set_budget
from cqsens.report.release import ledger_json, ledger_text
from cqsens.schemas import versioned
from cqsens.settings import Settings

__all__ = ["budget_cmd"]


def _state(ledger: str, limits: Limits, store: bool) -> tuple[Ledger, list[str]]:
    """The ledger to show, and notes on budgets given here but not stored."""
    if store:
        return set_budget(ledger, limits), []
    state = open_ledger(ledger)
    shown = agreed(state, limits, ledger)
    notes = [f"{name} {value:g} is given here, not stored in the ledger: the first release "
             f"that gives {option} stores it, or store it now with --set"
             for name, option, value, stored in (
                 ("budget ε", "--budget", limits.epsilon, state.settings.epsilon_budget),
                 ("δ budget", "--delta-budget", limits.delta, state.settings.delta_budget))
             if value is not None and stored is None]
    return replace(state, settings=shown), notes


@click.command("budget")
@config_option
@ledger_option("The ledger file (or ledger in cqsens.toml).")
@click.option("--set", "store", is_flag=True, default=False,
              help="Store --budget and/or --delta-budget in the ledger, replacing the stored "
                   "values (raising a budget is allowed only this way; the change is logged "
                   "in the ledger).")
@budget_option("Total ε. With --set: stored. Without: checked against the stored budget "
               "(a different value is refused, exit 1).")
@delta_budget_option("Cap on the total δ; with or without --set, as --budget.")
@format_option(["text", "json"])
@uses_config(lambda kw: None)
def budget_cmd(store: bool, fmt: str, settings: Settings) -> None:
    """Show a ledger: its stored budget and privacy unit, its releases, what they spent.

    The budget (total ε, and a cap on the total δ) and the privacy unit are
    stored in the ledger by its first release that gives them; releases that
    ask for another are refused. Change the budget on purpose with --set.

    \b
    Examples:
      cqsens budget --ledger ledger.sqlite
      cqsens budget --ledger ledger.sqlite --set --budget 5 --delta-budget 1e-5
    """
    ledger, budget, delta_budget = settings.ledger, settings.budget, settings.delta_budget
    if ledger is None:
        raise click.UsageError("give --ledger FILE (or ledger in cqsens.toml via --config)")
    if store and budget is None and delta_budget is None:
        raise click.UsageError("--set stores --budget ε and/or --delta-budget δ: give one")
    try:
        state, notes = _state(ledger, Limits(budget, delta_budget), store)
    except InputError as err:
        fail(err)
    if fmt == "json":
        out = versioned(ledger_json(ledger, state))
        out.update({"ledger": ledger, "releases": [e.to_dict() for e in state.entries],
                    "changes": [c.to_dict() for c in state.changes], "notes": notes})
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        click.echo(ledger_text(ledger, state))
        for note in notes:
            click.echo(f"  note: {note}")
    sys.exit(EXIT_OK)
