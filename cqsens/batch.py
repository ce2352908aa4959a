"""Analyse a batch of query files: a folder of analysts' queries, in a process pool.

``analyze_paths`` expands folders into their ``.sql``/``.cq`` files (DDL and
data scripts are skipped), analyses each with a per-query time limit, and
returns a :class:`BatchResult` whose rows keep the input order whatever the
number of worker processes.  A file that fails to parse or is unsupported is a
row with its error; the batch goes on.  The runs are :mod:`cqsens.runner`'s (the
one runner of folders and query logs) and each row is a :class:`cqsens.rows.Row`,
kept as its JSON object.  Nothing is rendered here.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cqsens.errors import InputError
from cqsens.ir.schema import Schema
from cqsens.pipeline import Analysis, analyze_with
from cqsens.rows import Inputs, Row, no_inputs, summarise
from cqsens.runner import NO_LIMIT_SECONDS, Ordered, executor, failure, limited
from cqsens.settings import Settings

__all__ = ["NO_LIMIT_SECONDS", "BatchResult", "collect_files", "analyze_paths", "inputs_for",
           "row_for", "summarise"]

_NOT_A_QUERY = re.compile(r"^\s*(--[^\n]*\n\s*)*(create|insert|drop|alter|copy|begin)\b", re.I)


@dataclass
class BatchResult:
    """Rows (one per file, input order) and the options they were run with."""

    rows: list[dict[str, Any]]
    options: dict[str, Any] = field(default_factory=dict)
    command: str = ""
    skipped: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Counts of bounded / unbounded / errors / timed out / tight and the bound histogram."""
        return summarise(self.rows)

    def as_dict(self) -> dict[str, Any]:
        """The JSON report object (also the input of the HTML and Markdown renderers)."""
        return {
            "title": "cqsens report",
            "generated": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": self.command,
            "options": self.options,
            "summary": self.summary(),
            "skipped": self.skipped,
            "rows": self.rows,
        }

    @property
    def failed(self) -> bool:
        """Any error or time-out."""
        return any(r["status"] != "ok" for r in self.rows)

    @property
    def unbounded(self) -> bool:
        """Any analysed query with an infinite upper bound."""
        return any(r["status"] == "ok" and r["upper"] == "inf" for r in self.rows)


def collect_files(
    inputs: Iterable[str | Path], *, exclude: Iterable[str | Path] = ()
) -> tuple[list[Path], list[str]]:
    """Query files under the inputs (sorted per folder), and the files skipped with why."""
    excluded = {Path(p).resolve() for p in exclude}
    files: list[Path] = []
    skipped: list[str] = []
    for item in inputs:
        path = Path(item)
        candidates = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for p in candidates:
            if p.suffix not in (".sql", ".cq") or p.resolve() in excluded:
                continue
            if p.suffix == ".sql" and _NOT_A_QUERY.match(_head(p)):
                skipped.append(f"{p}: DDL or data, not a query")
                continue
            files.append(p)
    return files, skipped


def _head(path: Path) -> str:
    """The first 4000 characters of a regular file ("" for anything else: never blocks)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return ""
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return ""
            return handle.read(16000).decode("utf-8", errors="replace")[:4000]
    except OSError:
        return ""


def _source_name(value: Any) -> str | None:
    """Where a schema or constraints option came from: a file name, a database, or inline text."""
    if value is None:
        return None
    if isinstance(value, Schema):
        return value.source
    if isinstance(value, Path):
        return str(value)
    text = str(value)
    return text if "\n" not in text and Path(text).is_file() else "(inline text)"


def inputs_for(path: Path, settings: Settings) -> Inputs:
    """The schema and constraints a query file is analysed with, as the report names them.

    Parameters
    ----------
    path : Path
        The query file.
    settings : Settings
        The batch's settings (``schema``, ``constraints``, ``fds``, ``cds`` are read).

    Returns
    -------
    dict
        ``schema`` and ``constraints``: the file (or database) that supplied
        them, or None; ``dependencies``: the ``--fd``/``--cd`` texts given as
        options.
    """
    own = _settings_for(path, settings)
    return {"schema": _source_name(own.schema), "constraints": _source_name(own.constraints),
            "dependencies": [str(d) for d in (*own.fds, *own.cds)]}


def analysed_row(file: str, analysis: Analysis, inputs: Inputs | None = None) -> Row:
    """The typed report row of an analysed query (``inputs``: see :func:`inputs_for`)."""
    d = analysis.to_dict()
    s = d["sensitivity"]
    return Row(file, "ok", None, d.get("query"), Inputs(**inputs) if inputs else no_inputs(),
               d["aggregate"], s["upper"], s["lower"], s["tight"], analysis.reason(),
               d["suggestion"][0] if d["suggestion"] else None, d.get("noise"), d)


def row_for(path: Path, analysis: Analysis, inputs: Inputs | None = None) -> dict[str, Any]:
    """The JSON report row of an analysed file (``inputs``: see :func:`inputs_for`)."""
    return analysed_row(str(path), analysis, inputs).to_dict()


def _settings_for(path: Path, settings: Settings) -> Settings:
    """Per-file settings: a schema.sql / constraints.txt beside the query when none is given."""
    if settings.schema is None and (path.parent / "schema.sql").exists():
        settings = replace(settings, schema=path.parent / "schema.sql")
    if settings.constraints is None and not settings.fds and not settings.cds \
            and (path.parent / "constraints.txt").exists():
        settings = replace(settings, constraints=path.parent / "constraints.txt")
    return settings


def _run_one(task: tuple[str, Settings, float | None]) -> dict[str, Any]:
    """Analyse one file under a time limit (:func:`cqsens.runner.limited`): its JSON row."""
    name, settings, timeout = task
    path = Path(name)
    inputs = inputs_for(path, settings)
    try:
        analysis = limited(lambda: analyze_with(path, replace(_settings_for(path, settings),
                                                              timeout=timeout)), timeout)
        return row_for(path, analysis, inputs)
    except Exception as exc:  # noqa: BLE001 - a bug must not stop the batch; it is shown, not hidden
        status, message = failure(exc, str(path), timeout)
        return Row.failed(str(path), status, message, _head(path) or None, inputs).to_dict()


def _shown(value: Any) -> Any:
    """An option as the JSON report shows it: a schema by its (masked) source, paths as text."""
    if isinstance(value, Schema):
        return value.source
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list | tuple):
        return [_shown(v) for v in value]
    return value if value is None or isinstance(value, str | int | float | bool) else str(value)


def _limit(timeout: float | None) -> float | None:
    """``timeout`` checked: None or ``inf`` for no limit, else seconds > 0."""
    if timeout is None or timeout == math.inf:
        return None
    if not timeout > 0:  # also NaN
        raise InputError(f"--timeout must be a number of seconds > 0 (inf for no limit), "
                         f"got {timeout}", construct="--timeout")
    return timeout


def analyze_paths(
    inputs: Iterable[str | Path],
    *,
    jobs: int = 1,
    timeout: float | None = 10.0,
    progress: Callable[[int, int], None] | None = None,
    command: str = "",
    settings: Settings | None = None,
    **keywords: object,
) -> BatchResult:
    """Analyse every query file under ``inputs``.

    Parameters
    ----------
    inputs : iterable of paths
        Files and folders (searched recursively for ``.sql`` and ``.cq``).
    jobs : int
        Worker processes (1: in this process).
    timeout : float or None
        Seconds per query; a query over it is a ``timeout`` row (``None`` or
        ``math.inf``: no limit; a value over about 31 years is no limit either).
    progress : callable, optional
        Called with (done, total) after each file.
    settings : Settings, optional
        The settings of every analysis (:func:`cqsens.analyze_with`); its ``timeout`` is
        replaced by ``timeout``.  Without ``schema``/``constraints``, a
        ``schema.sql``/``constraints.txt`` beside each query is used.
    **keywords
        Settings by name (the keywords of :func:`cqsens.analyze`), over ``settings``.

    Returns
    -------
    BatchResult
        Rows in input order, whatever ``jobs`` is.

    Raises
    ------
    InputError
        ``timeout`` is NaN, zero or negative.
    """
    limit = _limit(timeout)
    settings = Settings.from_mapping(keywords, base=settings)
    paths = [p for p in (settings.schema, settings.constraints) if isinstance(p, str | Path)]
    files, skipped = collect_files(inputs, exclude=paths)
    tasks = [(str(f), settings, limit) for f in files]
    rows = list(_ordered(tasks, jobs, progress))
    shown = {k: _shown(v) for k, v in settings.reported().items()}
    shown["timeout"] = "inf" if limit is None else limit
    return BatchResult(rows, shown, command, skipped)




def _ordered(tasks: list[tuple[str, Settings, float | None]], jobs: int,
             progress: Callable[[int, int], None] | None) -> Iterator[dict[str, Any]]:
    """The rows of ``tasks`` in their order (:class:`cqsens.runner.Ordered`)."""
    stream: Ordered[dict[str, Any]] = Ordered(executor(jobs if len(tasks) > 1 else 1),
                                              64 * max(jobs, 1))
    done = 0
    try:
        for task in tasks:
            stream.submit(stream.add(task), stream.fill, _run_one, task)
            for row in stream.throttle():
                done += 1
                if progress:
                    progress(done, len(tasks))
                yield row
        for row in stream.drain():
            done += 1
            if progress:
                progress(done, len(tasks))
            yield row
    finally:
        stream.close()
