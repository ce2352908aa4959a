"""Query logs in: JSON Lines and CSV files (or standard input), one query per record.

A JSON Lines record is an object ``{"id": ..., "sql": ...}`` with optional
``dialect`` and ``schema`` (a DDL file, relative to the log's folder, or DDL
text); ``query`` is accepted for ``sql``.  A CSV log has a header row; the query
is in the column named by ``query_column`` (default: ``sql``, else ``query``)
and ``id``, ``dialect`` and ``schema`` columns are read when present.  Records
are read lazily, one at a time, so a log of any length is read in constant
memory.  A record that cannot be read (bad JSON, no query) is still yielded,
with its ``error`` set, so the run reports it and goes on.  Every record knows
where it came from: ``file:line``.
"""

from __future__ import annotations

import csv
import itertools
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from cqsens.errors import InputError

__all__ = ["LOG_SUFFIXES", "Record", "is_log", "read_records"]

#: File suffixes read as logs (anything else is a query file).
LOG_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}
_MAX_FIELD = 10_000_000  # csv's default field limit is 128 KiB; a long query is not an error


@dataclass(frozen=True, slots=True)
class Record:
    """One query of a log.

    Attributes
    ----------
    id : str
        The record's own ``id`` when it has one, else ``file:line``.
    where : str
        ``file:line`` of the record.
    sql : str
        The query text ("" when the record could not be read).
    dialect : str or None
        The record's dialect (None: the run's ``--dialect``).
    schema : str or None
        The record's schema: a DDL file (relative to the log's folder) or DDL text.
    error : str or None
        Why the record could not be read.
    """

    id: str
    where: str
    sql: str
    dialect: str | None = None
    schema: str | None = None
    error: str | None = None


def is_log(path: str) -> bool:
    """Whether an input is read as a log: ``-`` (standard input) or a .jsonl/.ndjson/.csv file."""
    return path == "-" or Path(path).suffix.lower() in LOG_SUFFIXES


def _text(value: object) -> str | None:
    if value is None:
        return None
    if type(value) is int:
        return str(value)  # what json.dumps writes for an int, faster
    return value if isinstance(value, str) else json.dumps(value)


def _schema_of(value: str | None, folder: Path | None) -> str | None:
    """A record's schema: DDL text as given, a file name made relative to the log's folder."""
    if value is None or not value.strip():
        return None
    if "\n" in value or "create" in value.lower() or folder is None:
        return value
    path = Path(value)
    return str(path if path.is_absolute() else folder / path)


def _jsonl(handle: Iterable[str], name: str, folder: Path | None) -> Iterator[Record]:
    for number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as err:
            yield Record(where, where, "", error=f"{where}:{err.colno}: not a JSON object "
                                                 f"({err.msg}) [JSON Lines record]")
            continue
        if not isinstance(item, dict):
            yield Record(where, where, "", error=f"{where}: a record must be a JSON object "
                                                 "with \"sql\" [JSON Lines record]")
            continue
        ident = _text(item.get("id")) or where
        sql = item.get("sql", item.get("query"))
        if not isinstance(sql, str) or not sql.strip():
            yield Record(ident, where, "", error=f"{where}: the record has no \"sql\" text "
                                                 "[JSON Lines record]")
            continue
        dialect = item.get("dialect")
        schema = item.get("schema")
        if dialect is not None and not isinstance(dialect, str) \
                or schema is not None and not isinstance(schema, str):
            yield Record(ident, where, sql, error=f"{where}: \"dialect\" and \"schema\" must be "
                                                  "text [JSON Lines record]")
            continue
        yield Record(ident, where, sql, dialect or None, _schema_of(schema, folder))


def _column(header: list[str], wanted: str | None, name: str) -> int:
    lowered = [h.strip().lower() for h in header]
    choices = [wanted.lower()] if wanted else ["sql", "query"]
    for choice in choices:
        if choice in lowered:
            return lowered.index(choice)
    shown = ", ".join(header) or "none"
    asked = f"column {wanted!r}" if wanted else "a column named sql or query"
    raise InputError(f"the CSV log has no {asked} (its columns: {shown}); "
                     "use --query-column", source=name, line=1, construct="--query-column")


def _csv(handle: Iterable[str], name: str, folder: Path | None,
         query_column: str | None) -> Iterator[Record]:
    csv.field_size_limit(_MAX_FIELD)
    reader = csv.reader(handle)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as err:
        raise InputError(f"the CSV header cannot be read ({err})", source=name, line=1,
                         construct="CSV header") from None
    at = _column(header, query_column, name)
    lowered = [h.strip().lower() for h in header]
    extra: dict[str, int] = {k: lowered.index(k) for k in ("id", "dialect", "schema")
                             if k in lowered}
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            where = f"{name}:{line}"
            yield Record(where, where, "", error=f"{where}: bad CSV ({err}) [CSV record]")
            continue
        where = f"{name}:{line}"
        if not any(cell.strip() for cell in row):
            continue

        def cell(key: str, row: list[str] = row) -> str | None:
            i = extra.get(key)
            return row[i] if i is not None and i < len(row) and row[i].strip() else None

        ident = cell("id") or where
        sql = row[at] if at < len(row) else ""
        if not sql.strip():
            yield Record(ident, where, "", error=f"{where}: the query column is empty "
                                                 "[CSV record]")
            continue
        yield Record(ident, where, sql, cell("dialect"), _schema_of(cell("schema"), folder))


def _sniff(handle: IO[str]) -> tuple[str, Iterator[str]]:
    """JSON Lines when the first non-blank character is ``{``, else CSV; standard input
    cannot be rewound, so the lines read to tell are put back in front."""
    head: list[str] = []
    for line in handle:
        head.append(line)
        if line.strip():
            break
    fmt = "jsonl" if "".join(head).lstrip().startswith("{") else "csv"
    return fmt, itertools.chain(head, handle)


def read_records(path: str, *, query_column: str | None = None,
                 fmt: str | None = None) -> Iterator[Record]:
    """The records of a log, lazily, in order.

    Parameters
    ----------
    path : str
        A .jsonl/.ndjson/.csv file, or ``-`` for standard input (its format is
        told from the first character: ``{`` for JSON Lines, else CSV).
    query_column : str, optional
        The CSV column holding the query (default: ``sql``, else ``query``).
    fmt : {"jsonl", "csv"}, optional
        Force the format.

    Yields
    ------
    Record

    Raises
    ------
    InputError
        The file cannot be read, or a CSV log has no query column.
    """
    if path == "-":
        name, folder = "<stdin>", Path.cwd()
        chosen, lines = _sniff(sys.stdin) if fmt is None else (fmt, iter(sys.stdin))
        yield from (_jsonl(lines, name, folder) if chosen == "jsonl"
                    else _csv(lines, name, folder, query_column))
        return
    chosen = fmt or LOG_SUFFIXES.get(Path(path).suffix.lower(), "jsonl")
    try:
        opened = open(path, encoding="utf-8", errors="replace", newline="")  # noqa: SIM115
    except OSError as err:
        raise InputError(f"cannot read the log: {err.strerror}", source=path,
                         construct="log file") from None
    with opened as handle:
        folder = Path(path).parent
        yield from (_jsonl(handle, path, folder) if chosen == "jsonl"
                    else _csv(handle, path, folder, query_column))
