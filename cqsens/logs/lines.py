"""The JSON Lines row of a cache hit, written straight from its key's row template.

``cqsens report LOG -o out.jsonl`` writes one line per record: the report row
without its ``analysis`` object (``cqsens/schemas/report-line.schema.json``).
For a record served from the cache whose lower bound is already decided (its
verdict kept from an earlier run, or ``--no-lower``), the line is the key's row
template with the record's own values put in: its id, name, text, constants,
lower bound, ``tight``, ``proof`` and key.  :func:`compile_line` splits the
template once per key at those places, so a record costs a few string joins
instead of decoding the template, building the row and encoding it again; the
text is the one :func:`line_text` gives for the row built the long way
(``tests/test_log_lines.py`` compares them on every record of a log).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from typing import Any

from cqsens.explain import jsonable
from cqsens.logs.shape import Lexed, literal_value
from cqsens.logs.template import render_literal
from cqsens.report.common import json_default
from cqsens.rows import LogPart, Row
from cqsens.schemas import versioned

__all__ = ["Line", "LineTemplate", "compile_line", "line_of", "line_text", "render_line"]

#: The values a record puts into its key's line template, in the order of the line.
_SLOTS = ("id", "file", "query", "lower", "tight", "proof", "shape")
_MARK = re.compile(r"\"⟦=(\w+)⟧\"|⟦(?:(\d+)\.(\d)|source|@(\d+))⟧")


@dataclass(frozen=True, slots=True)
class Line:
    """One record's JSON Lines row (``text``, without its newline) and what the run's
    summary reads of it."""

    text: str
    status: str
    upper: Any
    tight: bool
    proof: str | None
    error: str | None


def line_text(row: dict[str, Any]) -> str:
    """The JSON Lines text of a report row (its ``analysis`` object left out)."""
    compact = {k: v for k, v in row.items() if k != "analysis"}
    return json.dumps(versioned(compact), ensure_ascii=False, default=json_default)


def line_of(row: Row) -> Line:
    """A row as its JSON Lines row."""
    proof = row.log.proof if row.log is not None else None
    return Line(line_text(row.to_dict()), row.status, row.upper, row.tight, proof, row.error)


@dataclass(frozen=True, slots=True)
class LineTemplate:
    """A key's line as a format string: ``form.format(*values)`` gives a record's line,
    where ``values[i]`` is the text of ``fields[i]``: a slot's name (:data:`_SLOTS`),
    ``(literal, style)``, ``(-1, 0)`` for the record's name inside a text or ``(k, -1)``
    for its table alias ``k`` (each field once, however often the line shows it).
    ``upper`` is the key's upper bound."""

    form: str
    fields: tuple[str | tuple[int, int], ...]
    status: str
    upper: Any


def compile_line(template: str) -> LineTemplate | None:
    """The line template of a row template (:mod:`cqsens.logs.template`); None when its
    upper bound shows a constant (such a row is made the long way)."""
    row = json.loads(template)
    row.pop("analysis", None)
    upper = row.get("upper")
    if _MARK.search(json.dumps(upper, ensure_ascii=False)):
        return None
    # the keys in the order of the row made the long way (a template may lack "query")
    doc = replace(Row.from_dict(row), log=LogPart("", None, True, None)).to_dict()
    for slot in _SLOTS:
        doc[slot] = f"⟦={slot}⟧"
    text = json.dumps(versioned(doc), ensure_ascii=False)
    parts: list[str] = []
    fields: dict[str | tuple[int, int], int] = {}
    at = 0
    for m in _MARK.finditer(text):
        parts.append(text[at:m.start()].replace("{", "{{").replace("}", "}}"))
        mark: str | tuple[int, int]
        if m.group(1) is not None:
            mark = m.group(1)
        elif m.group(4) is not None:
            mark = (int(m.group(4)), -1)
        elif m.group(2) is None:
            mark = (-1, 0)
        else:
            mark = (int(m.group(2)), int(m.group(3)))
        parts.append("{%d}" % fields.setdefault(mark, len(fields)))  # noqa: UP031 - a field
        at = m.end()
    parts.append(text[at:].replace("{", "{{").replace("}", "}}"))
    return LineTemplate("".join(parts), tuple(fields), str(row.get("status")), upper)


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=json_default)
_STRING: Any = getattr(json.encoder, "c_encode_basestring", None) \
    or json.encoder.py_encode_basestring  # what json.dumps does with a str (no ASCII escapes)


def _dumps(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, default=json_default)``, one encoder (a text,
    an int and null without it)."""
    kind = type(value)
    if kind is str:
        return str(_STRING(value))
    if kind is int:
        return str(value)
    return "null" if value is None else _ENCODER.encode(value)


def render_line(template: LineTemplate, lexed: Lexed, *, ident: str, where: str, sql: str,
                lower: Any, proof: str | None, key: str) -> Line:
    """The line of one record: its id, name (``where``) and text, its constants, its lower
    bound (as :meth:`cqsens.rows.Row.with_lower` shows it) and where it came from, and
    its key (the first 16 hex digits are shown)."""
    shown = lower if lower is None or isinstance(lower, str) else jsonable(lower)
    if isinstance(lower, float) and math.isinf(lower):
        shown = "inf"
    tight = shown is not None and shown == template.upper
    slots = {"id": ident, "file": where, "query": sql, "lower": shown, "proof": proof,
             "shape": key[:16]}
    values: list[str] = []
    for mark in template.fields:
        if isinstance(mark, str):
            values.append(("true" if tight else "false") if mark == "tight"
                          else _dumps(slots[mark]))
        else:
            values.append(_dumps(
                lexed.aliases[mark[0]] if mark[1] < 0 else where if mark[0] < 0
                else render_literal(literal_value(lexed.literals[mark[0]]), mark[1]))[1:-1])
    return Line(template.form.format(*values), template.status, template.upper, tight, proof,
                None)
