"""A record's query in SQLite syntax, transpiled once per cache key rather than once per record.

Checking a stored witness against a record (:mod:`cqsens.logs.proofs`) runs the record's
own query in SQLite, so the record's text must be transpiled; sqlglot takes milliseconds
for that, the largest cost of a cache hit.  Records of one key differ only in their
literals and table aliases (:mod:`cqsens.logs.aliases`), so the key's first record is
transpiled with each literal replaced by a marker (a number or a string no query writes)
and each alias by a name no query writes, and a later record's SQLite text is that
template with the markers replaced by its own literals, written as it writes them, and
its own aliases.

The template is used only when it is exact on the record it was built from: the
markers' text, replaced by that record's literals, must give exactly what sqlglot gives
for the record itself, each marker must appear once, and every literal must be a plain
number (digits, an optional sign and decimal point) or a quoted string without a
backslash.  Otherwise (a literal that the transpiler rewrites, such as an interval's
text), every record of the key is transpiled in full.
"""

from __future__ import annotations

import re
from collections import OrderedDict

from cqsens.frontend.sqlgen import remember_sqlite, sqlite_query
from cqsens.logs.shape import Lexed, substitute_literals

__all__ = ["record_sqlite"]

_PLAIN_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
#: Templates kept (the most recently used last).
_KEPT = 4096
_TEMPLATES: OrderedDict[tuple[str, str | None], tuple[str, tuple[str, ...]] | None] = \
    OrderedDict()


def _plain(lexed: Lexed) -> bool:
    return all(_PLAIN_NUMBER.fullmatch(lit.text) if lit.kind == "number"
               else "\\" not in lit.text for lit in lexed.literals)


def _markers(lexed: Lexed) -> tuple[str, ...]:
    out = []
    for i, lit in enumerate(lexed.literals):
        if lit.kind == "number":
            out.append(f"{'-' if lit.text.startswith('-') else ''}7310{i:05d}9137")
        else:
            out.append(f"'cqsens~mark~{i}~'")
    return tuple(out)


def _alias_markers(lexed: Lexed) -> tuple[str, ...]:
    return tuple(f"cqsensalias{k}q" for k in range(len(lexed.aliases)))


def _fill(template: str, markers: tuple[str, ...], lexed: Lexed) -> str:
    out = template
    for marker, lit in zip(markers, lexed.literals, strict=True):
        out = out.replace(marker, lit.text, 1)
    for marker, name in zip(_alias_markers(lexed), lexed.aliases, strict=True):
        out = out.replace(marker, name)
    return out


def _template(sql: str, lexed: Lexed, dialect: str | None
              ) -> tuple[str, tuple[str, ...]] | None:
    """The SQLite template of ``sql``'s key, checked on ``sql`` itself; None when not exact."""
    if not _plain(lexed):
        return None
    markers = _markers(lexed)
    names = _alias_markers(lexed)
    marked = sqlite_query(substitute_literals(sql, lexed, dict(enumerate(markers)), names),
                          dialect)
    own = sqlite_query(sql, dialect)
    if marked is None or own is None or any(marked.count(m) != 1 for m in markers):
        return None
    if any(m in sql for m in (*markers, *names)):
        return None
    return (marked, markers) if _fill(marked, markers, lexed) == own else None


def record_sqlite(key: str, sql: str, lexed: Lexed, dialect: str | None) -> str | None:
    """``sql`` (a record of cache key ``key``, lexed as ``lexed``) in SQLite syntax, or None
    when SQLite cannot express it; the same text as :func:`sqlite_query` gives."""
    slot = (key, dialect)
    if slot not in _TEMPLATES:
        _TEMPLATES[slot] = _template(sql, lexed, dialect)
        if len(_TEMPLATES) > _KEPT:
            _TEMPLATES.popitem(last=False)
    found = _TEMPLATES[slot]
    _TEMPLATES.move_to_end(slot)
    if found is None or not _plain(lexed) or len(lexed.literals) != len(found[1]) \
            or any(m in sql for m in (*found[1], *_alias_markers(lexed))):
        return sqlite_query(sql, dialect)
    text = _fill(found[0], found[1], lexed)
    remember_sqlite(sql, dialect, text)
    return text
