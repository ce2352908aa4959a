"""Table aliases a query log's cache key leaves out: alpha-renaming does not change a query.

Logs written by BI tools name their tables ``t0``, ``t1``, ... afresh in every
query; ``FROM Pat t0 WHERE t0.age > 3`` and ``FROM Pat t7 WHERE t7.age > 3`` are
one query.  :func:`table_aliases` finds, on the tokens of a query text (no
parsing), the table aliases that can be renamed without changing what the
query means (docs/rules.md, rule ``shape-cache``, "Table aliases"): a name ``a``
is such an alias when

* it is a plain lower-case identifier (``[a-z_][a-z0-9_]*``) that is no
  keyword of any dialect (:data:`cqsens.logs.keywords.KEYWORDS`);
* it is declared as a table's alias: ``FROM T a``, ``JOIN T AS a``, ``, T a``
  in a ``FROM`` list, with ``T`` an unqualified name and ``a`` followed by
  neither ``.`` nor ``(``;
* every other token that spells it, in any case or quoted, is a qualifier
  ``a.c`` (or ``a.*``) of a column, outside a table position, not part of a
  longer dotted name and not a function's.

Every occurrence of such a name is then the alias itself, so replacing it by
another name with the same properties, in all its places and distinct from
the query's other aliases, is an alpha-renaming: the same tables, columns,
rows and answers.  The key holds the template with each such alias as its
index ``⟨k⟩`` (by first appearance); two texts of one template differ only
by such a renaming.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from cqsens.logs.keywords import KEYWORDS

__all__ = ["Token", "placeholder", "plain_alias", "table_aliases"]

_PLAIN = re.compile(r"[a-z_][a-z0-9_]*")
#: Tokens after which a FROM list ends (at the same depth of parentheses).
_ENDS_FROM = frozenset({"where", "group", "order", "having", "limit", "union", "except",
                        "intersect", "window", "qualify", "offset", "fetch", "select",
                        "on", "using", "returning"})
_TABLE_AFTER = frozenset({"from", "join"})


def placeholder(k: int) -> str:
    """The template's token for alias ``k`` (the lexer never makes ``⟨``: it would be a
    token of its own)."""
    return f"⟨{k}⟩"


class Token(NamedTuple):
    """A token of a query text: its text, its kind (``ident``, ``qident``, ``op``,
    ``literal``) and where it is (immutable; a tuple, as a text has many)."""

    text: str
    kind: str
    start: int
    end: int


def plain_alias(name: str) -> bool:
    """Whether ``name`` may be an abstracted alias: a plain lower-case identifier and no
    keyword.

    >>> plain_alias("t0"), plain_alias("where"), plain_alias("T0")
    (True, False, False)
    """
    return len(name) <= 64 and _PLAIN.fullmatch(name) is not None and name not in KEYWORDS


def _lows(tokens: Sequence[Token]) -> list[str]:
    """Each token's text in lower case (a quoted identifier without its quotes; "" for a
    literal): what names and keywords are compared with."""
    out = []
    for token in tokens:
        kind = token.kind
        out.append(token.text.lower() if kind == "ident" or kind == "op"
                   else token.text[1:-1].lower() if kind == "qident" else "")
    return out


def _table_positions(tokens: Sequence[Token], lows: list[str]) -> set[int]:
    """The tokens that start a table reference: after FROM, JOIN, or a comma of a FROM
    list (at its depth of parentheses)."""
    starts: set[int] = set()
    in_from = [False]
    before = ""
    for i, token in enumerate(tokens):
        low = lows[i] if token.kind != "qident" else ""
        if before in _TABLE_AFTER or (before == "," and in_from[-1]):
            starts.add(i)
        if low == "(":
            in_from.append(False)
        elif low == ")":
            if len(in_from) > 1:
                in_from.pop()
        elif low == "from":
            in_from[-1] = True
        elif low in _ENDS_FROM:
            in_from[-1] = False
        before = low
    return starts


def _declared(tokens: Sequence[Token], starts: set[int]) -> dict[int, str]:
    """The tokens that declare a table alias (by index), with its name."""
    out: dict[int, str] = {}
    n = len(tokens)
    for i in sorted(starts):
        table = tokens[i]
        if table.kind != "ident" or (i + 1 < n and tokens[i + 1].text == "."):
            continue
        j = i + 1
        if j < n and tokens[j].kind == "ident" and tokens[j].text.lower() == "as":
            j += 1
        if j >= n or tokens[j].kind != "ident":
            continue
        if j + 1 < n and tokens[j + 1].text in (".", "("):
            continue
        name = tokens[j].text
        if plain_alias(name):
            out[j] = name
    return out


def _qualifier(tokens: Sequence[Token], k: int, starts: set[int]) -> bool:
    """Whether token ``k`` qualifies a column: ``k . c`` with ``c`` a name or ``*``, not
    dotted further, not a function, not in a table position."""
    n = len(tokens)
    if k in starts or (k and tokens[k - 1].text == "."):
        return False
    if k + 2 >= n or tokens[k + 1].text != ".":
        return False
    column = tokens[k + 2]
    if column.kind not in ("ident", "qident") and column.text != "*":
        return False
    return not (k + 3 < n and tokens[k + 3].text in (".", "("))


def table_aliases(tokens: Sequence[Token]) -> tuple[tuple[str, ...], dict[int, int]]:
    """The abstracted aliases of a query's tokens, by first appearance, and for each token
    that spells one (by index) the alias's index."""
    lows = _lows(tokens)
    starts = _table_positions(tokens, lows)
    declared = _declared(tokens, starts)
    if not declared:
        return (), {}
    names = set(declared.values())
    places: dict[str, list[int]] = {name: [] for name in names}
    for k, low in enumerate(lows):
        if low in places and tokens[k].kind != "op":
            places[low].append(k)
    kept: list[str] = []
    for name in names:
        if all(token_ok(tokens, k, name, declared, starts) for k in places[name]):
            kept.append(name)
    kept.sort(key=lambda name: places[name][0])
    index = {name: i for i, name in enumerate(kept)}
    where = {k: index[name] for name in kept for k in places[name]}
    return tuple(kept), where


def token_ok(tokens: Sequence[Token], k: int, name: str, declared: dict[int, str],
             starts: set[int]) -> bool:
    """Whether token ``k`` (which spells ``name``) is the alias itself, written as declared."""
    token = tokens[k]
    if token.kind != "ident" or token.text != name:
        return False
    return k in declared or _qualifier(tokens, k, starts)
