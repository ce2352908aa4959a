"""Errors raised by cqsens.

One hierarchy rooted at :class:`CqsensError`.  Bad input (a malformed query, an
unsupported SQL construct, a bad schema or dependency) raises an
:class:`InputError`, which carries the source name, line, column and the
construct at fault; its ``str`` reads ``file:line:col: message [construct]``.
Bugs stay ordinary Python exceptions and are never reported as bad input.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
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


def read_text(path: str | Path, *, error: type[InputError] = InputError, what: str = "file") -> str:
    """Read a UTF-8 text file, or raise ``error`` naming it (missing, unreadable, not text)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror}", source=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise error(
            f"{what} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})",
            source=str(path),
        ) from exc
