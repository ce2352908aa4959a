"""Positions of sqlglot nodes in the text they were parsed from.

sqlglot keeps a token's line and the column of its *last* character in the
node's metadata; these helpers give the 1-based column of its first character,
falling back to the first identifier, literal or ``*`` inside the node, then to
a position the caller knows (the statement's start).
"""

from __future__ import annotations

from sqlglot import exp

__all__ = ["node_position", "text_start"]


def node_position(
    node: exp.Expr | None, fallback: tuple[int | None, int | None] = (None, None)
) -> tuple[int | None, int | None]:
    """Best-known 1-based (line, column) of ``node``: its own, else its first identifier's.

    Returns ``fallback`` when neither the node nor anything inside it has a position.
    """
    if node is None:
        return fallback
    for candidate in [node, *node.find_all(exp.Identifier, exp.Literal, exp.Star)]:
        meta = getattr(candidate, "_meta", None) or {}
        if "line" in meta:
            col = meta.get("col")
            start, end = meta.get("start"), meta.get("end")
            if isinstance(col, int) and isinstance(start, int) and isinstance(end, int):
                col = col - (end - start)  # sqlglot reports the column of the token's end
            return meta["line"], max(col, 1) if isinstance(col, int) else fallback[1]
    return fallback


def text_start(text: str) -> tuple[int, int]:
    """1-based (line, column) of the first character of ``text`` that is not blank.

    >>> text_start("\\n  SELECT 1")
    (2, 3)
    """
    stripped = text.lstrip()
    before = text[: len(text) - len(stripped)]
    line = before.count("\n") + 1
    return line, len(before) - (before.rfind("\n") + 1) + 1
