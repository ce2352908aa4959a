"""The shape of a query: its SQL tokens with the literals taken out, and the cache key.

Most statements of a query log are a few thousand shapes with different
constants.  :func:`lex` splits SQL text into a *template* (every token but the
literals, whitespace and comments dropped) and its *literals* (numbers, a
unary minus folded in, and quoted strings), in one regular-expression pass
and without parsing, so that a record already seen costs microseconds.

:func:`shape_key` makes the cache key of a record from its template, the
options' fingerprint and, for each literal, either its value (a *pinned*
literal) or only how it compares with the record's other literals (an
*abstract* literal).  Which literals may be abstract is decided once per shape
by :func:`cqsens.logs.plan.abstract_literals`, with the *groups* of literals
that can meet (docs/rules.md, rule shape-cache); everything about the order
and equality of literals that the upper bound could observe is in the key,
within each group:

* the rank of its value among the literals of its kind (numbers, texts),
  with ties, so equal constants stay equal and filters keep their order
  relations;
* the class of its normalised form (``Const.definitely_differs``: ``5`` and
  ``'5'``, ``'F'`` and ``'f'`` may be equal in a database), so the chase
  meets the same contradictions;
* for an abstract text, whether it is an ISO date.

The orders in which the output sorts atoms (by the ``repr`` of constants and
their CQ rendering) are not in the key: a hit may list the atoms of its CQ in
another order than a fresh analysis would.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from cqsens.frontend.limits import MAX_INTEGER
from cqsens.ir.cq import Const, format_term
from cqsens.logs.aliases import Token, placeholder, table_aliases

__all__ = ["Lexed", "Literal", "lex", "lex_tokens", "literal_value", "record_key", "shape_key",
           "substitute_literals"]

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# one token per match (or the end), after the white space and comments before it, skipped
# atomically as matches of their own would be (no backtracking into them)
_TOKEN = re.compile(
    r"""(?>(?:\s+|--[^\n]*|/\*.*?\*/)*)
      (?: (?P<string>'(?:[^']|'')*')
      | (?P<qident>"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\])
      | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![\w$]))
      | (?P<ident>[^\W\d][\w$]*)
      | (?P<op><=|>=|<>|!=|\|\||::|[^\s])
      | (?P<end>\Z) )
    """,
    re.VERBOSE | re.DOTALL,
)
# the literals only, for a text whose skeleton was lexed before (:func:`lex`): identifiers,
# white space and other characters are skipped in runs (possessive: never backtracked
# into); each match ends at a literal, a quoted identifier, a comment, one other character
# (a '.', a digit or a quote that starts no literal) or the end
_LITERALS = re.compile(
    r"""(?:[^\W\d][\w$]*+|[^\w'"`\[\-/.]++|-(?!-)|/(?!\*)|\.(?!\d))*+
      (?: (?P<string>'(?:[^']|'')*')
      | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![\w$]))
      | "(?:[^"]|"")*" | `[^`]*` | \[[^\]]*\]
      | --[^\n]* | /\*.*?\*/
      | . | \Z )
    """,
    re.VERBOSE | re.DOTALL,
)
#: After these tokens a ``-`` is a sign, not a subtraction.
_SIGN_AFTER = {"(", ",", "=", "<", ">", "<=", ">=", "<>", "!=", "+", "-", "*", "/", "%",
               "and", "or", "not", "between", "where", "select", "then", "else", "when",
               "in", "on", "having", "case", "by", "limit", "offset", "is", "like", "return"}


@dataclass(frozen=True, slots=True)
class Literal:
    """One literal of a query text: ``number`` or ``string``, as written, and where."""

    kind: str
    text: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Lexed:
    """A query text split into its template and its literals; ``aliases`` are its table
    aliases that the template holds as ``⟨k⟩`` (:mod:`cqsens.logs.aliases`), by first
    appearance, and ``alias_spans`` where each is written: ``(k, start, end)``."""

    template: str
    literals: tuple[Literal, ...]
    aliases: tuple[str, ...] = ()
    alias_spans: tuple[tuple[int, int, int], ...] = ()


#: Skeletons lexed before (see :func:`lex`) at most; the table is emptied when full.
SKELETONS = 16384
_Known = tuple[str, tuple[int, ...], tuple[str, ...], tuple[tuple[int, int, int, int], ...]]
_SKELETONS: dict[tuple[str, ...], _Known | None] = {}


def lex(sql: str) -> Lexed:
    """Split SQL into its template (literals as ``?``) and its literals.

    The text between the literals (its *skeleton*) decides the template and which
    number literals take the ``-`` before them as a sign: a text whose skeleton was
    lexed before only has its literals found (:data:`_LITERALS`), the rest is
    remembered.  A skeleton is remembered only when its full lexing found the same
    literals (``tests/test_log_lines.py`` compares the two on random texts).

    >>> x = lex("SELECT COUNT(*) FROM t WHERE a = 7 AND b > -2.5 -- note\\n AND c = 'it''s'")
    >>> x.template
    'SELECT COUNT ( * ) FROM t WHERE a = ? AND b > ? AND c = ?'
    >>> [(lit.kind, lit.text) for lit in x.literals]
    [('number', '7'), ('number', '-2.5'), ('string', "'it''s'")]
    """
    spans = [(m.lastgroup, m.start(m.lastindex), m.end()) for m in _LITERALS.finditer(sql)
             if m.lastindex]
    parts: list[str] = []
    at = 0
    for kind, start, end in spans:
        parts.append(sql[at:start])
        parts.append(kind)  # type: ignore[arg-type]
        at = end
    parts.append(sql[at:])
    skeleton = tuple(parts)
    known = _SKELETONS.get(skeleton)
    if known is None:
        full = lex_tokens(sql)
        if skeleton not in _SKELETONS:
            if len(_SKELETONS) >= SKELETONS:
                _SKELETONS.clear()
            _SKELETONS[skeleton] = _signs(full, spans)
        return full
    template, signs, names, places = known
    literals = []
    for (kind, start, end), sign in zip(spans, signs, strict=True):
        text = sql[start:end]
        literals.append(Literal(kind, "-" + text, start - sign, end) if sign  # type: ignore[arg-type]
                        else Literal(kind, text, start, end))  # type: ignore[arg-type]
    if not names:
        return Lexed(template, tuple(literals))
    alias_spans = []
    for k, part, offset, length in places:
        at = (spans[part - 1][2] if part else 0) + offset
        alias_spans.append((k, at, at + length))
    return Lexed(template, tuple(literals), names, tuple(alias_spans))


def _signs(full: Lexed, spans: list[tuple[str | None, int, int]]) -> _Known | None:
    """The template of a skeleton, per literal how far before it its sign is (0: none), and
    its aliases with, per place written, the part of the skeleton it is in and where
    (:data:`_Known`), when the full lexing found the literals ``spans`` found; None when
    not."""
    if len(full.literals) != len(spans):
        return None
    signs: list[int] = []
    for lit, (kind, start, end) in zip(full.literals, spans, strict=True):
        if lit.kind != kind or lit.end != end or lit.start > start:
            return None
        sign = start - lit.start
        if sign and (kind != "number" or lit.text[:1] != "-"):
            return None
        signs.append(sign)
    places = []
    for k, start, end in full.alias_spans:
        part = sum(1 for _, _, lit_end in spans if lit_end <= start)
        base = spans[part - 1][2] if part else 0
        if part < len(spans) and spans[part][1] < end:
            return None
        places.append((k, part, start - base, end - start))
    return full.template, tuple(signs), full.aliases, tuple(places)


def lex_tokens(sql: str) -> Lexed:
    """:func:`lex`, token by token (what it remembers per skeleton comes from here)."""
    tokens: list[Token] = []
    literals: list[Literal] = []
    previous = "("
    sign_at: int | None = None
    for m in _TOKEN.finditer(sql):
        kind = m.lastgroup or "end"
        if kind == "end":  # white space or a comment up to the end
            continue
        value = m.group(kind)
        if kind == "number" or kind == "string":
            start = m.start(kind)
            text = value
            if kind == "number" and sign_at is not None:
                tokens.pop()
                start = sign_at
                text = "-" + value
            literals.append(Literal(kind, text, start, m.end()))
            tokens.append(Token("?", "literal", start, m.end()))
            previous, sign_at = "?", None
            continue
        sign_at = m.start(kind) if value == "-" and previous.lower() in _SIGN_AFTER else None
        tokens.append(Token(value, kind, m.start(kind), m.end()))
        previous = value
    names, where = table_aliases(tokens)
    texts = [placeholder(where[i]) if i in where else t.text for i, t in enumerate(tokens)]
    spans = tuple((where[i], tokens[i].start, tokens[i].end) for i in sorted(where))
    return Lexed(" ".join(texts), tuple(literals), names, spans)


def literal_value(literal: Literal) -> int | Fraction | str:
    """The value a literal writes: an int, an exact decimal (Fraction), or the text.

    >>> literal_value(Literal("number", "-2.50", 0, 5))
    Fraction(-5, 2)
    >>> literal_value(Literal("string", "'a''b'", 0, 6))
    "a'b"
    """
    if literal.kind == "string":
        return literal.text[1:-1].replace("''", "'")
    text = literal.text
    digits = text[1:] if text[:1] == "-" else text
    if digits.isascii() and digits.isdecimal():
        return int(text)  # the common case, without a Fraction
    value = Fraction(text)
    return value.numerator if value.denominator == 1 else value


def _dense_ranks(keys: Sequence[object]) -> list[int]:
    order = sorted(set(keys))  # type: ignore[type-var]
    index = {k: i for i, k in enumerate(order)}
    return [index[k] for k in keys]


def _classes(keys: Sequence[object]) -> list[int]:
    seen: dict[object, int] = {}
    return [seen.setdefault(k, len(seen)) for k in keys]


def _const(value: int | Fraction | str) -> Const:
    return Const(value if not isinstance(value, Fraction) else float(value))


def within_limits(lexed: Lexed, abstract: frozenset[int]) -> frozenset[int]:
    """``abstract`` without the integer literals past the 64-bit range: a record that
    writes one is keyed by its text, so it is analysed on its own, where the analysis
    refuses the literal (SQLite would read it as a float, equal to another such literal).

    >>> lexed = lex("SELECT COUNT(*) FROM t WHERE a = 99999999999999999999 AND b = 2")
    >>> sorted(within_limits(lexed, frozenset({0, 1})))
    [1]
    """
    too_large = {i for i in abstract if lexed.literals[i].kind == "number"
                 and len(lexed.literals[i].text) > 18
                 and isinstance(v := literal_value(lexed.literals[i]), int)
                 and abs(v) > MAX_INTEGER}
    return abstract - too_large if too_large else abstract


def shape_key(fingerprint: str, lexed: Lexed, abstract: frozenset[int],
              groups: Sequence[Sequence[int]] | None = None, *,
              presentation: bool = False, aliases: bool = False) -> str:
    """The cache key of a record (a hex digest).

    Parameters
    ----------
    fingerprint : str
        What else the analysis depends on: cqsens's version, the options, Σ,
        the schema and the dialect.
    lexed : Lexed
        The record's template and literals.
    abstract : frozenset of int
        The literals (by index) whose value may change without changing the
        analysis, as long as the order and equality relations stay.
    groups : sequence of sequences of int, optional
        The literals that can meet (:class:`cqsens.logs.plan.Plan`): order and
        equality are recorded within each group only (None: all literals are one group).
    presentation : bool
        Also record the orders in which the output sorts the literals (their ``repr``
        and CQ rendering).  They decide only the order in which atoms are listed, so the
        cache key leaves them out; the check of a row template keeps them
        (:mod:`cqsens.logs.template`).
    aliases : bool
        Leave the names of the table aliases out (the template holds each as ``⟨k⟩``,
        :mod:`cqsens.logs.aliases`); otherwise they are in the key as written.

    Returns
    -------
    str
    """
    abstract = within_limits(lexed, abstract)
    values = [literal_value(lit) for lit in lexed.literals]
    kinds = [lit.kind for lit in lexed.literals]
    # what Const holds (_const): a decimal as a float, anything else as it is
    plain = [float(v) if isinstance(v, Fraction) else v for v in values]
    parts: list[object] = [fingerprint, lexed.template]
    if groups is None:
        groups = [range(len(values))]
    parts.append([list(g) for g in groups])
    normal: dict[int, str] = {}
    for group in groups:
        numbers = [i for i in group if kinds[i] == "number"]
        texts = [i for i in group if kinds[i] == "string"]
        for members in (numbers, texts):
            parts.append(_dense_ranks([values[i] for i in members]))
            if presentation:
                consts = [Const(plain[i]) for i in members]
                parts.append(_dense_ranks([repr(c.value) for c in consts]))
                parts.append(_dense_ranks([format_term(c) for c in consts]))
        for i in group:
            if i not in normal:
                normal[i] = _number_form(str(plain[i]).strip().lower())
        parts.append(_classes([normal[i] for i in group]))
    # an abstract text keeps its form: an ISO date stays one (its text order is its date order)
    parts.append([bool(_ISO_DATE.fullmatch(v)) if i in abstract and isinstance(v, str) else None
                  for i, v in enumerate(values)])
    parts.append([None if i in abstract else lit.text for i, lit in enumerate(lexed.literals)])
    if lexed.aliases and not aliases:
        parts.append(["aliases", *lexed.aliases])
    blob = json.dumps(parts, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _number_form(text: str) -> str:
    """As ``Const.definitely_differs`` normalises: a number by its value."""
    if len(text) <= 15 and text.isascii() and text.isdecimal():
        return str(int(text))  # what the float gives: exact below 10**15 < 2**53
    try:
        number = float(text)
    except ValueError:
        return text
    return repr(number) if not number.is_integer() else str(int(number))


def substitute_literals(sql: str, lexed: Lexed, new: dict[int, str],
                        aliases: Sequence[str] | None = None) -> str:
    """``sql`` with literal ``i`` rewritten as ``new[i]`` (SQL text) and, given
    ``aliases``, alias ``k`` renamed ``aliases[k]`` wherever it is written; the rest
    unchanged."""
    places = [(lit.start, lit.end, new[i]) for i, lit in enumerate(lexed.literals) if i in new]
    if aliases is not None:
        places.extend((start, end, aliases[k]) for k, start, end in lexed.alias_spans)
    out: list[str] = []
    at = 0
    for start, end, text in sorted(places):
        out.append(sql[at:start])
        out.append(text)
        at = end
    out.append(sql[at:])
    return "".join(out)


@dataclass(frozen=True, slots=True)
class _Recipe:
    """What :func:`shape_key` reads of a record beyond its template, for one (template,
    kinds, plan): per group its numbers, its texts and all its literals (by index); the
    abstract texts (whose ISO-date form counts) and the pinned literals (whose text
    counts)."""

    groups: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...]
    abstract_texts: tuple[int, ...]
    pinned: tuple[int, ...]
    digests: dict[tuple[object, ...], str]


_RECIPES: dict[tuple[object, ...], _Recipe] = {}
#: Recipes, and keys remembered over all recipes, at most: past either, all are forgotten.
KEYS = 4096
DIGESTS = 65536
_DIGESTS = [0]  # keys remembered now, over all recipes


def _recipe(lexed: Lexed, abstract: frozenset[int],
            groups: Sequence[Sequence[int]] | None, aliases: bool) -> _Recipe:
    kinds = tuple(lit.kind for lit in lexed.literals)
    every = [tuple(range(len(kinds)))] if groups is None else [tuple(g) for g in groups]
    slot = (lexed.template, kinds, abstract, tuple(every), aliases)
    found = _RECIPES.get(slot)
    if found is None:
        parts = tuple((tuple(i for i in g if kinds[i] == "number"),
                       tuple(i for i in g if kinds[i] == "string"), g) for g in every)
        found = _Recipe(parts, tuple(i for i in sorted(abstract) if kinds[i] == "string"),
                        tuple(i for i in range(len(kinds)) if i not in abstract), {})
        if len(_RECIPES) >= KEYS:
            _forget()
        _RECIPES[slot] = found
    return found


def record_key(fingerprint: str, lexed: Lexed, abstract: frozenset[int],
               groups: Sequence[Sequence[int]] | None = None, *, aliases: bool = False) -> str:
    """:func:`shape_key` (without ``presentation``), remembered per the relations among
    the literals it reads: a record whose literals relate as an earlier record's did
    (ranks and classes within each group, ISO dates, pinned texts, the aliases' names
    unless ``aliases``) gets its key without a new digest."""
    abstract = within_limits(lexed, abstract)
    recipe = _recipe(lexed, abstract, groups, aliases)
    literals = lexed.literals
    values = [literal_value(lit) for lit in literals]
    relations: list[object] = [fingerprint]
    for numbers, texts, members in recipe.groups:
        for part in (numbers, texts):
            relations.append(tuple(_dense_ranks([values[i] for i in part])) if len(part) > 1
                             else len(part))
        if len(members) > 1:
            relations.append(tuple(_classes([_normal(values[i]) for i in members])))
    for i in recipe.abstract_texts:
        relations.append(bool(_ISO_DATE.fullmatch(values[i])))  # type: ignore[arg-type]
    for i in recipe.pinned:
        relations.append(literals[i].text)
    if not aliases:
        relations.append(lexed.aliases)
    memo = tuple(relations)
    digest = recipe.digests.get(memo)
    if digest is None:
        digest = shape_key(fingerprint, lexed, abstract, groups, aliases=aliases)
        if _DIGESTS[0] >= DIGESTS:
            _forget()
        recipe.digests[memo] = digest
        _DIGESTS[0] += 1
    return digest


def _forget() -> None:
    """Forget every recipe and remembered key (memory stays bounded whatever the log)."""
    for recipe in _RECIPES.values():
        recipe.digests.clear()
    _RECIPES.clear()
    _DIGESTS[0] = 0


def _normal(value: int | Fraction | str) -> str:
    """A literal's class as :func:`shape_key` reads it (``Const.definitely_differs``)."""
    plain = float(value) if isinstance(value, Fraction) else value
    return _number_form(str(plain).strip().lower())
