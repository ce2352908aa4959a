"""The metadata file: one TOML file with the schema, dependencies, value bounds, public
tables, the neighbour model and the privacy parameters of a set of queries.

``cqsens.toml`` next to the queries (or ``--config FILE``) is read by analyze,
witness, report and profile; an option given on the command line wins over the
file.  Paths in the file are relative to the file's folder::

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

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cqsens.errors import InputError, read_text

__all__ = ["CONFIG_NAME", "Config", "find_config", "load_config"]

CONFIG_NAME = "cqsens.toml"

_TYPES: dict[str, tuple[type, ...]] = {
    "schema": (str,), "constraints": (str,), "fd": (list,), "cd": (list,), "bounds": (list,),
    "public": (list,), "unit": (str,), "owner": (list,), "neighbor": (str,),
    "contributions": (int,),
    "rows": (int,),
    "epsilon": (int, float), "delta": (float,), "dialect": (str,), "witness_time": (int, float),
    "timeout": (int, float), "ledger": (str,), "budget": (int, float),
    "delta_budget": (float,), "keys": (str,),
}
_PATHS = ("schema", "constraints", "ledger", "keys")


@dataclass(frozen=True, slots=True)
class Config:
    """The settings of a metadata file (absent keys are not in ``values``)."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        """A setting, with relative paths resolved against the file's folder."""
        return self.values.get(key, default)


def _line_of(text: str, key: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(rf"\s*{re.escape(key)}\s*=", line):
            return number
    return None


def _check(key: str, value: Any, text: str, source: str) -> Any:
    def fail(message: str) -> InputError:
        return InputError(message, source=source, line=_line_of(text, key), column=1,
                          construct=key)

    if key not in _TYPES:
        known = ", ".join(sorted(_TYPES))
        raise fail(f"unknown setting {key!r} (settings: {known})")
    if isinstance(value, bool) or not isinstance(value, _TYPES[key]):
        wanted = " or ".join(t.__name__ for t in _TYPES[key])
        raise fail(f"{key} must be a {wanted}, not {type(value).__name__}")
    if isinstance(value, list) and not all(isinstance(v, str) for v in value):
        raise fail(f"{key} must be a list of strings")
    if isinstance(value, float) and not math.isfinite(value):
        raise fail(f"{key} must be a finite number, not {value}")
    return value


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
    target = Path(path)
    text = read_text(target, what="metadata file")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+), column (\d+)", str(exc))
        line, column = (int(found.group(1)), int(found.group(2))) if found else (None, None)
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise InputError(f"the metadata file does not parse: {message}", source=str(target),
                         line=line, column=column, construct="TOML") from None
    values: dict[str, Any] = {}
    for key, value in raw.items():
        checked = _check(key, value, text, str(target))
        if key in _PATHS:
            checked = str((target.parent / checked).resolve()) \
                if not Path(checked).is_absolute() else checked
        values[key] = checked
    return Config(target, values)


def find_config(folder: str | Path) -> Path | None:
    """``cqsens.toml`` in ``folder``, if there is one."""
    candidate = Path(folder) / CONFIG_NAME
    return candidate if candidate.is_file() else None
