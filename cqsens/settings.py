"""One value for every setting of an analysis or a release, with one name per setting.

A :class:`Settings` is built once, from the metadata file (:meth:`Settings.from_toml`,
``cqsens.toml``), from the command line (:func:`cqsens.cli.config.settings_from_command`)
or from the keywords of :func:`cqsens.analyze` (:meth:`Settings.from_mapping`).  The
name of a field is the metadata file's key, the Python name of the click option and the
keyword of :func:`cqsens.analyze` (docs/guide/input.md, "One metadata file").  The spellings users
already type stay accepted as aliases: ``fd`` and ``cd`` in the metadata file (the
options are ``--fd`` and ``--cd``, repeated).

Defaults are the safe ones: no table is public, no dependency is declared, neighbours
add or remove one row.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path

from cqsens.errors import InputError, read_text
from cqsens.ir.dependencies import Dependency
from cqsens.ir.schema import Schema
from cqsens.release.aggregates import NEIGHBORS
from cqsens.release.noise import check_privacy

__all__ = ["ALIASES", "NEIGHBOR_MODELS", "OWNERLESS", "Settings", "TomlSettings", "check_settings",
           "load_toml"]

#: The neighbour models (docs/rules.md): one row added or removed, or one row changed.
NEIGHBOR_MODELS: tuple[str, ...] = NEIGHBORS

#: What a row whose ownership key is NULL is, with a privacy unit: refused when the query
#: can read it (the default), or a person of its own (docs/rules.md, rule ownerless-rows).
OWNERLESS: tuple[str, ...] = ("refuse", "person")

#: Other spellings of a setting's name, accepted in the metadata file and by
#: :meth:`Settings.from_mapping` (docs/guide/input.md, "One metadata file").
ALIASES: Mapping[str, str] = {"fd": "fds", "cd": "cds", "value_bounds": "bounds",
                              "keys_file": "keys", "schema_file": "schema"}

_Value = str | int | float | bool | tuple[str, ...] | None

#: The types a metadata-file value may have, per setting (``list``: of strings).
_TOML_TYPES: Mapping[str, tuple[type, ...]] = {
    "schema": (str,), "constraints": (str,), "fds": (list,), "cds": (list,), "bounds": (list,),
    "public": (list,), "unit": (str,), "owner": (list,), "ownerless": (str,),
    "neighbor": (str,),
    "contributions": (int,), "rows": (int,), "epsilon": (int, float), "delta": (float,),
    "dialect": (str,), "witness_time": (int, float), "timeout": (int, float),
    "ledger": (str,), "budget": (int, float), "delta_budget": (float,), "keys": (str,),
}
#: The settings a batch report lists, in this order.
_REPORTED = ("schema", "dialect", "fds", "cds", "constraints", "neighbor", "bounds",
             "contributions", "rows", "epsilon", "delta", "prove_lower", "public", "unit",
             "owner", "ownerless")
#: Settings that change no analysis: a time limit and the release's own settings.
_NOT_ANALYSIS = ("timeout", "ledger", "budget", "delta_budget", "keys")
#: Settings naming a file: relative to the metadata file's folder.
_PATHS = ("schema", "constraints", "ledger", "keys")


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting of an analysis or a release; the defaults are the safe ones.

    Attributes
    ----------
    schema : str, Path, Schema or None
        DDL text, a DDL file, or a parsed schema.
    dialect : str or None
        sqlglot dialect of the SQL and the DDL.
    fds, cds : tuple
        Dependencies (``"R[1->2]"``, ``"R[1->2]<=3"``) or :class:`Dependency` values.
    constraints : str, Path or None
        A file of dependencies, one per line.
    bounds : tuple of str
        Value bounds ``"Table.column=low:high"``.
    public : tuple of str
        Public tables (each item may list several, comma-separated).
    unit : str or None
        The privacy unit ``TABLE[.KEY]`` (docs/rules.md, rule privacy-unit).
    owner : tuple of str
        The foreign keys that carry ownership to the unit.
    ownerless : {"refuse", "person"}
        With a unit, a row whose ownership key is NULL: refused when the query can read
        it, or a person of its own (docs/rules.md, rule ownerless-rows).
    neighbor : {"add-remove", "substitute"}
        The neighbour model.
    contributions : int
        Rows one individual may own (Observation 1 of the paper).
    rows : int or None
        Number of rows, for the parity rule of a single-table MEDIAN.
    epsilon, delta : float or None
        Privacy parameters.
    prove_lower : bool
        Search for a witness proving a lower bound.
    witness_time : float
        Seconds of witness search.
    seed : int
        Seed of the witness search.
    timeout : float or None
        Seconds one analysis may take (None or ``inf``: no limit).
    ledger, budget, delta_budget, keys
        Release settings: the ledger file, its ε and δ budgets, the CSV of public
        GROUP BY keys.
    """

    schema: str | Path | Schema | None = None
    dialect: str | None = None
    fds: tuple[str | Dependency, ...] = ()
    cds: tuple[str | Dependency, ...] = ()
    constraints: str | Path | None = None
    bounds: tuple[str, ...] = ()
    public: tuple[str, ...] = ()
    unit: str | None = None
    owner: tuple[str, ...] = ()
    ownerless: str = "refuse"
    neighbor: str = "add-remove"
    contributions: int = 1
    rows: int | None = None
    epsilon: float | None = None
    delta: float | None = None
    prove_lower: bool = True
    witness_time: float = 0.5
    seed: int = 0
    timeout: float | None = 30.0
    ledger: str | None = None
    budget: float | None = None
    delta_budget: float | None = None
    keys: str | None = None

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The name of every setting, in declaration order."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_mapping(cls, values: Mapping[str, object], *,
                     base: Settings | None = None) -> Settings:
        """``base`` (default: the defaults) with the settings of ``values`` (aliases allowed).

        Lists become tuples; an unknown name is a :class:`TypeError` (a programming
        error, as an unknown keyword of :func:`cqsens.analyze` is).

        Examples
        --------
        >>> Settings.from_mapping({"fd": ["R[1->2]"], "epsilon": 1}).fds
        ('R[1->2]',)
        """
        known = set(cls.names())
        changes: dict[str, object] = {}
        for key, value in values.items():
            name = ALIASES.get(key, key)
            if name not in known:
                raise TypeError(f"unknown setting {key!r}")
            changes[name] = tuple(value) if isinstance(value, list) else value
        return replace(base if base is not None else cls(), **changes)  # type: ignore[arg-type]

    @classmethod
    def from_toml(cls, path: str | Path, *, base: Settings | None = None) -> Settings:
        """``base`` with the settings of a metadata file (see :func:`load_toml`)."""
        return load_toml(path).over(base if base is not None else cls())

    def changed(self) -> dict[str, object]:
        """The settings that differ from the defaults, by name (for reports and cache keys)."""
        default = Settings()
        return {name: getattr(self, name) for name in self.names()
                if getattr(self, name) != getattr(default, name)}

    def analysis_changed(self) -> dict[str, object]:
        """:meth:`changed` without the settings no analysis reads (the release settings)
        and without ``timeout`` (a limit, not an input): what an analysis depends on."""
        return {k: v for k, v in self.changed().items() if k not in _NOT_ANALYSIS}

    def reported(self) -> dict[str, object]:
        """The settings a batch report lists (docs/guide/reports.md, "Batch reports"), by name."""
        return {name: getattr(self, name) for name in _REPORTED}

    def public_tables(self) -> tuple[str, ...]:
        """The public tables, one name per item (``--public A,B`` is two)."""
        return split_names(self.public)


def split_names(items: Iterable[str]) -> tuple[str, ...]:
    """Comma-separated names, stripped, in order (``["A, B", "C"]`` → ``("A", "B", "C")``)."""
    return tuple(n.strip() for item in items for n in item.split(",") if n.strip())


@dataclass(frozen=True, slots=True)
class TomlSettings:
    """The settings a metadata file gives (by canonical name), and the file."""

    path: Path
    values: Mapping[str, _Value]

    def over(self, base: Settings, *, keep: Iterable[str] = ()) -> Settings:
        """``base`` with this file's settings, except those named in ``keep``."""
        kept = set(keep)
        return Settings.from_mapping({k: v for k, v in self.values.items() if k not in kept},
                                     base=base)


def _line_of(text: str, key: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(rf"\s*{re.escape(key)}\s*=", line):
            return number
    return None


def _check(key: str, value: object, text: str, source: str) -> _Value:
    """The value of ``key`` once checked (lists as tuples), or an InputError at file:line."""
    def fail(message: str) -> InputError:
        return InputError(message, source=source, line=_line_of(text, key), column=1,
                          construct=key)

    name = ALIASES.get(key, key) if key in ("fd", "cd") else key
    if name not in _TOML_TYPES:
        known = ", ".join(sorted({*_TOML_TYPES, "fd", "cd"}))
        raise fail(f"unknown setting {key!r} (settings: {known})")
    types = _TOML_TYPES[name]
    if isinstance(value, bool) or not isinstance(value, types):
        wanted = " or ".join(t.__name__ for t in types)
        raise fail(f"{key} must be a {wanted}, not {type(value).__name__}")
    if isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise fail(f"{key} must be a list of strings")
        return tuple(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise fail(f"{key} must be a finite number, not {value}")
    if name == "ownerless" and value not in OWNERLESS:
        raise fail(f"ownerless must be one of {', '.join(OWNERLESS)}, not {value!r}")
    if name == "neighbor" and value not in NEIGHBOR_MODELS:
        raise fail(f"neighbor must be one of {', '.join(NEIGHBOR_MODELS)}, not {value!r}")
    if name in ("contributions", "rows") and isinstance(value, int) and value < 1:
        raise fail(f"{key} must be at least 1, not {value}")
    assert isinstance(value, str | int | float)
    return value


def load_toml(path: str | Path) -> TomlSettings:
    """The settings of a metadata file; a syntax error or a bad setting names ``file:line``.

    Keys are the names of :class:`Settings` (``fd`` and ``cd`` also spell ``fds`` and
    ``cds``); paths are relative to the file's folder.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> p = Path(folder) / "cqsens.toml"
    >>> _ = p.write_text('schema = "s.sql"\\ncd = ["R[1->2]<=3"]\\nepsilon = 1\\n')
    >>> s = Settings.from_toml(p)
    >>> s.cds, s.schema == str(Path(folder) / "s.sql"), s.epsilon
    (('R[1->2]<=3',), True, 1)
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
    values: dict[str, _Value] = {}
    for key, value in raw.items():
        checked = _check(key, value, text, str(target))
        name = ALIASES.get(key, key)
        if name in values:
            raise InputError(f"{key} repeats setting {name}", source=str(target),
                             line=_line_of(text, key), column=1, construct=key)
        if name in _PATHS and isinstance(checked, str) and not Path(checked).is_absolute():
            checked = str((target.parent / checked).resolve())
        values[name] = checked
    return TomlSettings(target, values)


def check_settings(settings: Settings) -> None:
    """Refuse settings that no analysis can take, before any work.

    Raises
    ------
    InputError
        An unknown neighbour model, fewer than one contribution, ``owner`` without
        ``unit``, an unknown ``ownerless`` or ``ownerless = "person"`` without ``unit``,
        ``contributions`` with ``unit``, a timeout that is not > 0, or ε/δ
        beyond cqsens's limits (docs/model.md, Limits and safety).
    """
    neighbor, contributions = settings.neighbor, settings.contributions
    if neighbor not in NEIGHBOR_MODELS:
        raise InputError(f"unknown neighbour model {neighbor!r} (choose add-remove or substitute)",
                         construct="--neighbor")
    if contributions < 1:
        raise InputError(f"--contributions must be at least 1, got {contributions}",
                         construct="--contributions")
    if settings.owner and settings.unit is None:
        raise InputError("--owner names the foreign keys that carry ownership to the privacy "
                         "unit; give the unit too (--unit TABLE)", construct="--owner")
    if settings.ownerless not in OWNERLESS:
        raise InputError(f"unknown --ownerless {settings.ownerless!r} (choose "
                         f"{' or '.join(OWNERLESS)})", construct="--ownerless")
    if settings.ownerless == "person" and settings.unit is None:
        raise InputError("--ownerless person says what a row with a NULL ownership key is "
                         "under a privacy unit; give the unit too (--unit TABLE)",
                         construct="--ownerless")
    if settings.unit is not None and contributions != 1:
        raise InputError("--contributions counts rows per person at row level; with --unit the "
                         "unit's foreign keys say which rows one person has: use one or the "
                         "other", construct="--contributions")
    timeout = settings.timeout
    if timeout is not None and not timeout > 0:  # also NaN
        raise InputError(f"--timeout must be a number of seconds > 0 (inf for no limit), "
                         f"got {timeout}", construct="--timeout")
    if settings.epsilon is not None or settings.delta is not None:
        check_privacy(1.0 if settings.epsilon is None else settings.epsilon, settings.delta)
