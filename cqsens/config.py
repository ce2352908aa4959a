"""The metadata file: one TOML file with the schema, dependencies, value bounds, public
tables, the neighbour model and the privacy parameters of a set of queries.

``cqsens.toml`` next to the queries (or ``--config FILE``) is read by analyze,
witness, report, release, profile and budget; an option given on the command line
wins over the file.  Its keys are the names of :class:`cqsens.settings.Settings`
(``fd`` and ``cd`` also spell ``fds`` and ``cds``); paths in the file are relative
to the file's folder::

    schema = "schema.sql"
    constraints = "constraints.txt"
    fd = ["Pat[id->hos]"]
    cd = ["PatDoc[pat->doc]<=3"]
    bounds = ["Pat.age=0:120"]
    public = ["Hos"]
    unit = "Pat"
    neighbor = "add-remove"
    contributions = 1
    epsilon = 1.0
    delta = 1e-6
    dialect = "postgres"
    ledger = "ledger.sqlite"
    budget = 3
    delta_budget = 1e-5
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cqsens.settings import ALIASES, load_toml

__all__ = ["CONFIG_NAME", "Config", "find_config", "load_config"]

CONFIG_NAME = "cqsens.toml"


@dataclass(frozen=True, slots=True)
class Config:
    """The settings a metadata file gives, by :class:`~cqsens.settings.Settings` name."""

    path: Path
    values: Mapping[str, object]

    def get(self, key: str, default: object = None) -> object:
        """A setting by any of its names (lists as lists), with paths resolved against the
        file's folder."""
        value = self.values.get(ALIASES.get(key, key), default)
        return list(value) if isinstance(value, tuple) else value


def load_config(path: str | Path) -> Config:
    """Read a metadata file; a syntax error or a bad setting names ``file:line``.

    Examples
    --------
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> p = Path(folder) / "cqsens.toml"
    >>> _ = p.write_text('schema = "s.sql"\\ncd = ["R[1->2]<=3"]\\nepsilon = 1\\n')
    >>> c = load_config(p)
    >>> c.get("cd"), c.get("schema") == str(Path(folder) / "s.sql"), c.get("epsilon")
    (['R[1->2]<=3'], True, 1)
    """
    loaded = load_toml(path)
    return Config(loaded.path, loaded.values)


def find_config(folder: str | Path) -> Path | None:
    """``cqsens.toml`` in ``folder``, if there is one."""
    candidate = Path(folder) / CONFIG_NAME
    return candidate if candidate.is_file() else None
