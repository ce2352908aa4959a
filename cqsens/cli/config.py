"""``--config`` and ``cqsens.toml``: a command's settings as one value, command line first.

A command declares its options (:mod:`cqsens.cli.options`) and takes one
``settings`` parameter: :func:`uses_config` gathers every option that is a field of
:class:`~cqsens.settings.Settings` into that value.  A setting of the metadata file
fills an option only when the option was not given on the command line;
``--config FILE`` names the file, otherwise ``cqsens.toml`` next to the (first)
query is used when there is one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from cqsens.cli.exits import fail
from cqsens.cli.options import config_option
from cqsens.config import find_config
from cqsens.errors import InputError
from cqsens.settings import Settings, load_toml

__all__ = ["config_option", "settings_from_command", "uses_config"]

_Command = Callable[..., Any]


def settings_from_command(given: Mapping[str, object], file: Path | None,
                          ctx: click.Context) -> Settings:
    """The one Settings of a command: its options, and the metadata file where an option
    was left at its default (only the settings the command has options for).

    Exits 1 when the metadata file is bad (the error names ``file:line``).
    """
    settings = Settings.from_mapping(given)
    if file is None:
        return settings
    try:
        toml = load_toml(file)
    except InputError as err:
        fail(err)
    typed = {name for name in given
             if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)}
    absent = set(Settings.names()) - set(given)
    return toml.over(settings, keep=typed | absent)


def uses_config(locate: Callable[[dict[str, Any]], str | None]) -> Callable[[_Command], _Command]:
    """Pass the command one ``settings`` value in place of its setting options.

    ``locate`` returns the query path whose folder may hold ``cqsens.toml``.
    Place this decorator directly above the command function, below its options.
    """

    def decorator(command: _Command) -> _Command:
        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            explicit = kwargs.pop("config", None)
            given = {name: kwargs.pop(name) for name in Settings.names() if name in kwargs}
            near = locate(kwargs)
            path = Path(explicit) if explicit else (
                find_config(Path(near).parent) if near else None)
            settings = settings_from_command(given, path, click.get_current_context())
            return command(settings=settings, **kwargs)

        return wrapper

    return decorator
