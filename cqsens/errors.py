"""Errors raised by cqsens.

One hierarchy rooted at :class:`CqsensError`.  Bad input (a malformed query, an
unsupported SQL construct, a bad schema or dependency) raises an
:class:`InputError`, which carries the source name, line, column and the
construct at fault; its ``str`` reads ``file:line:col: message [construct]``.
Bugs stay ordinary Python exceptions and are never reported as bad input.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = [
    "MAX_INPUT_BYTES",
    "read_bytes",
    "read_text",
    "CqsensError",
    "InputError",
    "ParseError",
    "UnsupportedQueryError",
    "SchemaError",
    "DependencyError",
    "TimeLimitError",
]


class CqsensError(Exception):
    """Base class of every error cqsens raises on purpose."""


class TimeLimitError(CqsensError):
    """The analysis ran past its time limit (``--timeout``); names the stage it was in."""

    def __init__(self, stage: str, timeout: float) -> None:
        shown = f"{timeout:g} s" if timeout != float("inf") else "its deadline"
        super().__init__(f"the analysis did not finish within {shown} (in the {stage}); "
                         "raise --timeout, or simplify the query")
        self.stage = stage
        self.timeout = timeout


class InputError(CqsensError, ValueError):
    """Bad input: names the source, the position (when known) and the construct.

    Parameters
    ----------
    message : str
        What is wrong, in words a user understands.
    source : str, optional
        File name, or ``<cq>``/``<sql>`` for inline text.
    line, column : int, optional
        1-based position of the fault.
    construct : str, optional
        The construct at fault (``"UNION"``, ``"dependency"``...).
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
        construct: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.line = line
        self.column = column
        self.construct = construct
        self.reasons: list[str] = []

    def add_reason(self, reason: str) -> None:
        """Add one more reason to the message (``message; reason``), once.

        A refusal that several routes looked at gathers their reasons as values,
        so a route tests whether a reason is already there by equality, never by
        searching the rendered message.
        """
        if reason == self.message or reason in self.reasons:
            return
        self.reasons.append(reason)
        self.message = f"{self.message}; {reason}"
        self.args = (self.message,)

    def with_source(self, source: str) -> InputError:
        """Return the same error with ``source`` set (when it was not set yet)."""
        if self.source is None or self.source.startswith("<"):
            self.source = source
        return self

    def location(self) -> str:
        """``file:line:col`` (the parts that are known)."""
        parts = [self.source or "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def __str__(self) -> str:
        text = f"{self.location()}: {self.message}"
        if self.construct:
            text += f" [{self.construct}]"
        return text


class ParseError(InputError):
    """The text is not valid CQ, SQL, DDL or dependency syntax."""


class UnsupportedQueryError(InputError):
    """Valid SQL that is not a (monotone, conjunctive) counting query cqsens can analyse."""


class SchemaError(InputError):
    """The schema is malformed, or the query names a table or column it lacks."""


class DependencyError(InputError):
    """A functional or cardinality dependency is malformed or does not fit the schema."""


class SchemaNeededError(DependencyError):
    """A dependency names a column, but no schema gives the columns' names."""


#: The largest input file cqsens reads (query, schema, constraints, probabilities): 10 MB.
MAX_INPUT_BYTES = 10 * 1024 * 1024


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_bytes(path: str | Path, *, error: type[InputError] = InputError, what: str = "file",
               limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, or raise ``error`` naming it.

    A FIFO, a device, a socket or a directory is refused without being read
    (it could block forever or never end); so is a file over ``limit`` bytes.
    The file is opened without blocking and checked again once open, so a
    file swapped for a FIFO in between is refused too.
    """
    name = str(path)
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"cannot read {what}: it is {_kind(mode)}; give a regular file",
                        source=name)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror}", source=name) from exc
    with os.fdopen(fd, "rb") as handle:
        try:
            opened = os.fstat(handle.fileno())
            if not stat.S_ISREG(opened.st_mode):
                raise error(f"cannot read {what}: it is {_kind(opened.st_mode)}; "
                            "give a regular file", source=name)
            if opened.st_size > limit:
                raise error(f"{what} is too large: {opened.st_size:,} bytes, the limit is "
                            f"{_size(limit)}", source=name)
            data = handle.read(limit + 1)
        except OSError as exc:
            raise error(f"cannot read {what}: {exc.strerror}", source=name) from exc
    if len(data) > limit:
        raise error(f"{what} is too large: the limit is {_size(limit)}", source=name)
    return data


def _size(limit: int) -> str:
    """``10 MB`` for a whole number of megabytes, else bytes."""
    mb = 1024 * 1024
    return f"{limit // mb} MB" if limit % mb == 0 else f"{limit:,} bytes"


def read_text(path: str | Path, *, error: type[InputError] = InputError, what: str = "file",
              limit: int = MAX_INPUT_BYTES) -> str:
    """Read a UTF-8 text file, or raise ``error`` naming it.

    The file must be a regular file of at most ``limit`` bytes (see
    :func:`read_bytes`); a missing, unreadable or non-UTF-8 file is refused too.
    Line ends are read as :func:`open` reads them in text mode.
    """
    data = read_bytes(path, error=error, what=what, limit=limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{what} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})",
            source=str(path),
        ) from exc
    return text.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as open()
