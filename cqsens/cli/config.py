"""``--config`` and ``cqsens.toml``: settings from the metadata file, command-line options first.

A setting of the metadata file (:mod:`cqsens.config`) fills an option only when
the option was not given on the command line; ``--config FILE`` names the file,
otherwise ``cqsens.toml`` next to the (first) query is used when there is one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from cqsens.cli.exits import fail
from cqsens.config import find_config, load_config
from cqsens.errors import InputError

__all__ = ["config_option", "uses_config"]

_Command = Callable[..., Any]

#: metadata-file key → the click parameter it fills (when the command has it)
_PARAMETERS = {
    "schema": ("schema", "schema_file"), "constraints": ("constraints",), "fd": ("fds",),
    "cd": ("cds",), "bounds": ("value_bounds",), "public": ("public",), "unit": ("unit",),
    "owner": ("owner",),
    "neighbor": ("neighbor",), "contributions": ("contributions",), "rows": ("rows",),
    "epsilon": ("epsilon",), "delta": ("delta",), "dialect": ("dialect",),
    "witness_time": ("witness_time",), "timeout": ("timeout",), "ledger": ("ledger",),
    "budget": ("budget",), "delta_budget": ("delta_budget",), "keys": ("keys_file",),
}


def config_option(f: _Command) -> _Command:
    """--config FILE."""
    return click.option(
        "--config", "config", type=click.Path(dir_okay=False), default=None,
        help="Metadata file (TOML): schema, dependencies, bounds, public tables, neighbour "
             "model, ε/δ. Default: cqsens.toml next to the query, if any. Options given on "
             "the command line win.")(f)


def uses_config(locate: Callable[[dict[str, Any]], str | None]) -> Callable[[_Command], _Command]:
    """Fill the options left at their defaults from the metadata file.

    ``locate`` returns the query path whose folder may hold ``cqsens.toml``.
    Place this decorator directly above the command function, below its options.
    """

    def decorator(command: _Command) -> _Command:
        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            explicit = kwargs.pop("config", None)
            near = locate(kwargs)
            path = Path(explicit) if explicit else (
                find_config(Path(near).parent) if near else None)
            if path is not None:
                try:
                    settings = load_config(path)
                except InputError as err:
                    fail(err)
                ctx = click.get_current_context()
                for key, value in settings.values.items():
                    for name in _PARAMETERS.get(key, ()):
                        if name in kwargs and ctx.get_parameter_source(name) in (
                                ParameterSource.DEFAULT, None):
                            kwargs[name] = tuple(value) if isinstance(value, list) else value
            return command(**kwargs)

        return wrapper

    return decorator
