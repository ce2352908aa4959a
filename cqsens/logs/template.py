"""A cached result that any record of its shape can be instantiated from.

A shape's result is computed on its first record and stored as a *row
template*: the report row in JSON, where every place that shows an abstract
constant holds a marker ``⟦i.s⟧`` (literal ``i`` of the record, rendered in
style ``s``) instead.  Where the constants show is found, not guessed: the
record is analysed a second time with its abstract literals renamed (order,
equality and sort order kept, checked by :func:`~cqsens.logs.shape.shape_key`),
and the two rows must differ only in the renderings of those constants;
otherwise the shape is cached with every literal pinned.  This second analysis
is also a check of the plan: a result that moved with the constants keeps them
in the key.  It runs without the witness search, and a template holds no lower
bound (:func:`without_lower`): each record gets its own from the shape's
witnesses, checked for it (:mod:`cqsens.logs.proofs`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from cqsens.ir.cq import Const, format_term
from cqsens.logs.aliases import plain_alias
from cqsens.logs.plan import Plan
from cqsens.logs.shape import Lexed, lex, literal_value, shape_key, substitute_literals

__all__ = ["SOURCE", "Compiled", "Template", "compile_template", "derive_template", "instantiate",
           "render_literal", "sql_text", "without_lower"]

#: Stands for the record's name in a stored row.
SOURCE = "⟦source⟧"
_PLACE = re.compile(r"⟦(?:(\d+)\.(\d)|source|@(\d+))⟧")
_TOKENS = re.compile(r"'(?:[^'\\]|\\.|'')*'|-?\d+(?:\.\d+)?|\w+|\s+|.", re.DOTALL)
_NUMBER_MAPS: tuple[Callable[[int], int], ...] = (
    lambda v: v + 1_000_000, lambda v: v * 1000 + 7 if v >= 0 else v * 1000 - 7,
    lambda v: v + 1, lambda v: v - 1, lambda v: v + 2,
)
_ISO_DATE = re.compile(r"(\d{4})(-\d{2}-\d{2})")


def _date_or(other: Callable[[str], str]) -> Callable[[str], str]:
    """An ISO date a thousand years later (same form, same order), another text by ``other``."""
    def rename(v: str) -> str:
        m = _ISO_DATE.fullmatch(v)
        return f"{int(m.group(1)) + 1000:04d}{m.group(2)}" if m else other(v)
    return rename


# a quote in the new text tells the renderings apart ('M' shows alike as a CQ term and in
# SQL; 'M''q' and 'M\'q' do not), so that a marker takes the style the output really uses
_TEXT_MAPS: tuple[Callable[[str], str], ...] = (
    _date_or(lambda v: v + "'q"), _date_or(lambda v: v + "·q"), _date_or(lambda v: "~" + v),
    lambda v: v + "·q", lambda v: v + "~", lambda v: v + "0", lambda v: "~" + v,
)


@dataclass(frozen=True, slots=True)
class Template:
    """A row template and the plan it was made with (``plan.abstract`` empty: every
    literal pinned)."""

    row: str
    plan: Plan


def without_lower(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with what the witness decides taken out: ``lower``, ``tight`` and the
    analysis's ``lower_note`` (a row template holds the upper bound only; the lower
    bound of each record is its own, :mod:`cqsens.logs.proofs`)."""
    out = dict(row, lower=None, tight=False, proof=None)
    analysis = out.get("analysis")
    if isinstance(analysis, dict):
        analysis = dict(analysis, lower_note=None)
        analysis["sensitivity"] = dict(analysis["sensitivity"], lower=None, tight=False)
        out["analysis"] = analysis
    return out


def sql_text(value: int | Fraction | str) -> str:
    """A value as a SQL literal."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def _renders(value: int | Fraction | str) -> tuple[str, ...]:
    """The ways cqsens shows a constant: as a CQ term, as a SQL literal, as it is."""
    const = Const(value if not isinstance(value, Fraction) else float(value))
    return (format_term(const), sql_text(value), str(value))


def render_literal(value: int | Fraction | str, style: int) -> str:
    """A constant rendered in the style of a marker ``⟦i.style⟧``: ``_renders(value)[style]``,
    without the other two."""
    if style == 0:
        return format_term(Const(value if not isinstance(value, Fraction) else float(value)))
    return sql_text(value) if style == 1 else str(value)


def _new_aliases(sql: str, lexed: Lexed) -> tuple[str, ...] | None:
    """Other names for the record's table aliases, for the second analysis: each is its
    name followed by ``_`` and more (so that ``alias_column`` names sort alike) and is
    written nowhere in ``sql``."""
    low = sql.lower()
    names = tuple(f"{name}_zq{k}x" for k, name in enumerate(lexed.aliases))
    if any(not plain_alias(n) or n in low for n in names):
        return None
    return names


def _renamed(sql: str, lexed: Lexed, abstract: frozenset[int], fingerprint: str,
             groups: tuple[tuple[int, ...], ...] | None
             ) -> tuple[dict[int, int | str], str] | None:
    """New values for the abstract literals keeping every relation the key records, and
    the SQL that writes them (None when no candidate keeps them)."""
    old = {i: literal_value(lexed.literals[i]) for i in abstract}
    if any(isinstance(v, Fraction) for v in old.values()):
        return None
    if not old:
        return {}, sql
    key = shape_key(fingerprint, lexed, abstract, groups, aliases=True)
    # every order among all the literals is kept too, so that the two analyses list
    # their atoms alike (a later record of the key may list them in another order)
    whole = shape_key(fingerprint, lexed, abstract, presentation=True, aliases=True)
    for number_map in _NUMBER_MAPS:
        for text_map in _TEXT_MAPS:
            new: dict[int, int | str] = {
                i: text_map(v) if isinstance(v, str) else number_map(v)  # type: ignore[arg-type]
                for i, v in old.items()}
            if set(map(repr, new.values())) & set(map(repr, old.values())):
                continue
            other_sql = substitute_literals(sql, lexed, {i: sql_text(v) for i, v in new.items()})
            other = lex(other_sql)
            if other.template == lexed.template \
                    and shape_key(fingerprint, other, abstract, groups, aliases=True) == key \
                    and shape_key(fingerprint, other, abstract, presentation=True,
                                  aliases=True) == whole:
                return new, other_sql
    return None


@dataclass(frozen=True, slots=True)
class _Names:
    """The record's table aliases (``old``) and their names in the second analysis."""

    old: tuple[str, ...]
    new: tuple[str, ...]


def _diff(a: Any, b: Any, old: dict[int, int | str], new: dict[int, int | str],
          names: _Names = _Names((), ())) -> Any:
    """``a`` with the renderings of ``old`` constants marked, where ``b`` shows ``new``, and
    the table aliases ``names.old`` marked where ``b`` shows ``names.new``."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            raise ValueError("keys")
        return {k: _diff(a[k], b[k], old, new, names) for k in a}
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            raise ValueError("length")
        return [_diff(x, y, old, new, names) for x, y in zip(a, b, strict=True)]
    if isinstance(a, str) and isinstance(b, str):
        if a == b:
            return a
        ta, tb = _TOKENS.findall(a), _TOKENS.findall(b)
        if len(ta) != len(tb):
            raise ValueError("tokens")
        out: list[str] = []
        for x, y in zip(ta, tb, strict=True):
            if x == y:
                out.append(x)
                continue
            out.append(_alias_site(x, y, names) or _site(x, y, old, new))
        return "".join(out)
    if a != b or type(a) is not type(b):
        raise ValueError("value")
    return a


def _alias_site(x: str, y: str, names: _Names) -> str | None:
    """``y`` with the second analysis's alias names marked ``⟦@k⟧``, when those marks
    filled with the record's own aliases give ``x``; else None."""
    marked = y
    for k in sorted(range(len(names.new)), key=lambda k: -len(names.new[k])):
        marked = marked.replace(names.new[k], f"⟦@{k}⟧")
    if marked == y:
        return None
    filled = marked
    for k, name in enumerate(names.old):
        filled = filled.replace(f"⟦@{k}⟧", name)
    return marked if filled == x else None


def _site(x: str, y: str, old: dict[int, int | str], new: dict[int, int | str]) -> str:
    for i, value in old.items():
        for style, (shown_old, shown_new) in enumerate(
                zip(_renders(value), _renders(new[i]), strict=True)):
            if x == shown_old and y == shown_new:
                return f"⟦{i}.{style}⟧"
    raise ValueError(f"{x!r} -> {y!r}")


def derive_template(row: dict[str, Any], *, sql: str, lexed: Lexed, fingerprint: str,
                    plan: Plan, rerun: Callable[[str], dict[str, Any] | None]) -> Template:
    """The row template of a shape, from its first record's row.

    Parameters
    ----------
    row : dict
        The first record's report row (analysed under the name :data:`SOURCE`).
    sql, lexed : str, Lexed
        Its text and literals.
    fingerprint : str
        The options' fingerprint (see :func:`shape_key`).
    plan : Plan
        The plan (:func:`cqsens.logs.plan.abstract_literals`).
    rerun : callable
        Analyses another SQL text the same way, without the witness search: its row,
        or None when it fails.

    Returns
    -------
    Template
        Without the lower bound (:func:`without_lower`); with ``plan.abstract`` empty
        when the constants could not be located, and ``plan.aliases`` False when the
        table aliases could not (then the constants are tried alone).
    """
    made = _derive(row, sql, lexed, fingerprint, plan, rerun)
    if plan.aliases and plan.abstract and not made.plan.abstract and not made.plan.aliases:
        # the aliases could not be located: the constants alone, the aliases keyed
        made = _derive(row, sql, lexed, fingerprint, replace(plan, aliases=False), rerun)
    return made


def _derive(row: dict[str, Any], sql: str, lexed: Lexed, fingerprint: str, plan: Plan,
            rerun: Callable[[str], dict[str, Any] | None]) -> Template:
    """:func:`derive_template` with the aliases abstracted as ``plan.aliases`` says."""
    first_row = without_lower(row)
    exact = Template(json.dumps(first_row, ensure_ascii=False),
                     Plan(frozenset(), frozenset(), plan.groups))
    aliases = _new_aliases(sql, lexed) if plan.aliases and lexed.aliases else None
    if not plan.abstract and aliases is None:
        return exact
    plan = replace(plan, aliases=aliases is not None)
    names = _Names(lexed.aliases, aliases or ())
    if aliases is not None:  # the aliases renamed first (the literals' places move)
        sql = substitute_literals(sql, lexed, {}, aliases)
        renamed = lex(sql)
        if renamed.template != lexed.template or renamed.aliases != aliases:
            return exact
        lexed = replace(renamed, aliases=names.old)  # its literals, the record's aliases
    found = _renamed(sql, lexed, plan.abstract, fingerprint, plan.groups)
    if found is None:
        return exact
    new, other_sql = found
    other_row = rerun(other_sql)
    if other_row is None or other_row.get("status") != "ok":
        return exact
    other_row = without_lower(other_row)
    old = {i: literal_value(lexed.literals[i]) for i in plan.abstract}
    first = {k: v for k, v in first_row.items() if k != "query"}
    second = {k: v for k, v in other_row.items() if k != "query"}
    first["analysis"] = {k: v for k, v in first_row["analysis"].items() if k != "query"}
    second["analysis"] = {k: v for k, v in other_row["analysis"].items() if k != "query"}
    try:
        marked = _diff(first, second, old, new, names)  # type: ignore[arg-type]
    except ValueError:
        return exact
    return Template(json.dumps(marked, ensure_ascii=False), plan)


@dataclass(frozen=True, slots=True)
class Compiled:
    """A row template split at its markers: ``texts[0] mark[0] texts[1] ... texts[-1]``,
    each mark ``(literal, style)``, ``(-1, 0)`` for the record's name or ``(k, -1)`` for
    its table alias ``k``."""

    texts: tuple[str, ...]
    marks: tuple[tuple[int, int], ...]


def compile_template(template: str, *, compact: bool = False) -> Compiled:
    """Split a row template once, so that each record only fills in its constants.

    With ``compact`` the template loses its ``analysis`` object (the JSON Lines row).
    """
    if compact:
        row = json.loads(template)
        row.pop("analysis", None)
        template = json.dumps(row, ensure_ascii=False)
    texts: list[str] = []
    marks: list[tuple[int, int]] = []
    at = 0
    for m in _PLACE.finditer(template):
        texts.append(template[at:m.start()])
        if m.group(3) is not None:
            marks.append((int(m.group(3)), -1))
        else:
            marks.append((-1, 0) if m.group(1) is None else (int(m.group(1)), int(m.group(2))))
        at = m.end()
    texts.append(template[at:])
    return Compiled(tuple(texts), tuple(marks))


def instantiate(template: str | Compiled, lexed: Lexed, *, source: str) -> dict[str, Any]:
    """A row from its template, with the record's own constants and name."""
    compiled = template if isinstance(template, Compiled) else compile_template(template)
    shown: dict[tuple[int, int], str] = {}
    out = [compiled.texts[0]]
    for mark, text in zip(compiled.marks, compiled.texts[1:], strict=True):
        piece = shown.get(mark)
        if piece is None:
            if mark[1] < 0:
                piece = json.dumps(lexed.aliases[mark[0]], ensure_ascii=False)[1:-1]
            elif mark[0] < 0:
                piece = json.dumps(source, ensure_ascii=False)[1:-1]
            else:
                value = literal_value(lexed.literals[mark[0]])
                piece = json.dumps(render_literal(value, mark[1]), ensure_ascii=False)[1:-1]
            shown[mark] = piece
        out.append(piece)
        out.append(text)
    row: dict[str, Any] = json.loads("".join(out))
    return row

