"""Parse CQ text and dependency text with the lark grammar ``grammars/cq.lark``.

``Q(x, y) :- R(x, z), S(z, 'c'), T(y, 42).`` becomes a :class:`~cqsens.ir.cq.CQ`;
``PatDoc[1->2]`` or ``PatDoc[pat->doc]<=3`` becomes a
:class:`~cqsens.ir.dependencies.Dependency`.  lark objects never leave this module:
its errors become :class:`~cqsens.errors.ParseError` with line and column.
"""

from __future__ import annotations

import functools
import importlib.resources
import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, VisitError

from cqsens.errors import DependencyError, InputError, ParseError, SchemaNeededError
from cqsens.frontend.limits import (
    MAX_ARGUMENTS,
    MAX_ATOMS,
    MAX_INTEGER,
    MAX_LITERAL_LENGTH,
    check_count,
    check_integer_text,
    over_limit,
)
from cqsens.ir.cq import CQ, Atom, Const, Term, Var
from cqsens.ir.dependencies import AnyDependency, Dependency, MultiDependency

if TYPE_CHECKING:
    from cqsens.ir.schema import Schema

__all__ = ["ROWS", "grammar_text", "parse_cq", "parse_dependencies", "parse_dependency"]


def grammar_text() -> str:
    """The text of ``cq.lark``, from the installed package or the source checkout."""
    packaged = importlib.resources.files("cqsens") / "grammars" / "cq.lark"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "grammars" / "cq.lark").read_text("utf-8")


@functools.cache
def _parser() -> Lark:
    return Lark(
        grammar_text(),
        start=["query", "dependency"],
        parser="lalr",
        propagate_positions=True,
    )


def _unquote(token: str) -> str:
    body = token[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            out.append(body[i + 1])
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


def _terms(items: list[object]) -> tuple[Term, ...]:
    out: list[Term] = []
    for t in items:
        if t is not None:
            assert isinstance(t, (Var, Const))
            out.append(t)
    return tuple(out)


def _head(item: object) -> tuple[str, tuple[Term, ...]]:
    assert isinstance(item, tuple) and len(item) == 2
    name, terms = item
    assert isinstance(name, str) and isinstance(terms, tuple)
    return name, terms


class _ToCQ(Transformer):  # type: ignore[type-arg]
    """Transformer for ``cq.lark`` (start rule ``query``)."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source
        self.seen: dict[str, tuple[int, int]] = {}  # variable → its first position

    def _over(self, tok: Token, what: str, found: int | str, limit: int | str,
              construct: str) -> ParseError:
        return over_limit(what, found, limit, source=self.source, line=tok.line,
                          column=tok.column, construct=construct)

    @v_args(inline=True)
    def variable(self, tok: Token) -> Term:
        if len(tok) > MAX_LITERAL_LENGTH:
            raise self._over(tok, "name too long (characters)", len(tok), MAX_LITERAL_LENGTH,
                             "variable")
        self.seen.setdefault(str(tok), (tok.line or 1, tok.column or 1))
        return Var(str(tok))

    @v_args(inline=True)
    def string(self, tok: Token) -> Term:
        if len(tok) > MAX_LITERAL_LENGTH:
            raise self._over(tok, "string too long (characters)", len(tok), MAX_LITERAL_LENGTH,
                             "literal")
        return Const(_unquote(str(tok)))

    @v_args(inline=True)
    def number(self, tok: Token) -> Term:
        text = str(tok)
        if text.lstrip("+-").isdigit():
            return Const(check_integer_text(text, source=self.source, line=tok.line,
                                            column=tok.column))
        if len(text) > MAX_LITERAL_LENGTH:
            raise self._over(tok, "number too long (characters)", len(text),
                             MAX_LITERAL_LENGTH, "literal")
        value = float(text)
        if math.isinf(value):
            raise self._over(tok, "number too large", text,
                             "about 1.8e308 (the range of a double)", "literal")
        return Const(value)

    def _arguments(self, tok: Token, items: list[object]) -> tuple[Term, ...]:
        terms = _terms(items)
        check_count(f"too many arguments in {tok}(...)", len(terms), MAX_ARGUMENTS,
                    source=self.source, line=tok.line, column=tok.column,
                    construct=f"atom {tok}")
        return terms

    def head(self, items: list[object]) -> tuple[str, tuple[Term, ...]]:
        tok = items[0]
        assert isinstance(tok, Token)
        return str(tok), self._arguments(tok, items[1:])

    def atom(self, items: list[object]) -> tuple[Atom, Token]:
        tok = items[0]
        assert isinstance(tok, Token)
        return Atom(str(tok), self._arguments(tok, items[1:])), tok

    def body(self, items: list[tuple[Atom, Token]]) -> list[tuple[Atom, Token]]:
        return items

    def query(self, items: list[object]) -> CQ:
        head, body = items
        name, terms = _head(head)
        assert isinstance(body, list)
        return self._build(name, terms, body)

    def fact_query(self, items: list[object]) -> CQ:
        name, terms = _head(items[0])
        return self._build(name, terms, [])

    def _build(
        self, name: str, head: tuple[Term, ...], body: list[tuple[Atom, Token]]
    ) -> CQ:
        if len(body) > MAX_ATOMS:
            tok = body[MAX_ATOMS][1]
            raise self._over(tok, "too many atoms in the body", len(body), MAX_ATOMS, "body")
        arities: dict[str, tuple[int, Token]] = {}
        body_vars: set[Var] = set()
        for atom, tok in body:
            if atom.relation in arities and arities[atom.relation][0] != atom.arity:
                first = arities[atom.relation]
                raise ParseError(
                    f"relation {atom.relation} is used with {first[0]} arguments at "
                    f"line {first[1].line} and with {atom.arity} here",
                    source=self.source,
                    line=tok.line,
                    column=tok.column,
                    construct=f"atom {atom}",
                )
            arities.setdefault(atom.relation, (atom.arity, tok))
            body_vars |= atom.variables()
        for term in head:
            if isinstance(term, Var) and term not in body_vars:
                line, column = self.seen.get(term.name, (1, 1))
                raise ParseError(
                    f"head variable {term} does not occur in the body (the query is not safe)",
                    source=self.source,
                    line=line,
                    column=column,
                    construct=f"head variable {term}",
                )
        return CQ.of(head, (a for a, _ in body), name)


def _wrap_lark_error(exc: UnexpectedInput, text: str, source: str, what: str) -> ParseError:
    if isinstance(exc, UnexpectedEOF):
        lines = text.splitlines() or [""]
        return ParseError(
            f"unexpected end of {what}",
            source=source,
            line=len(lines),
            column=len(lines[-1]) + 1,
            construct=what,
        )
    line, column = getattr(exc, "line", None), getattr(exc, "column", None)
    if isinstance(exc, UnexpectedCharacters):
        found = repr(text[exc.pos_in_stream]) if exc.pos_in_stream is not None else "?"
        message = f"unexpected character {found} in {what}"
    else:
        token = getattr(exc, "token", None)
        expected = sorted(getattr(exc, "expected", []) or [])
        if token is None:
            message = f"bad {what}"
        elif getattr(token, "type", "") == "$END":
            message = f"unexpected end of input in {what}"
        else:
            message = f"unexpected {str(token)!r} in {what}"
        if expected:
            message += f" (expected one of: {', '.join(expected[:8])})"
    context = exc.get_context(text, span=30).rstrip()
    return ParseError(
        f"{message}\n{context}",
        source=source,
        line=line if isinstance(line, int) and line > 0 else 1,
        column=column if isinstance(column, int) and column > 0 else 1,
        construct=what,
    )


def parse_cq(text: str, *, source: str = "<cq>") -> CQ:
    """Parse CQ text into a :class:`~cqsens.ir.cq.CQ`.

    Parameters
    ----------
    text : str
        ``Q(x) :- R(x, y), S(y, 'c').`` (final dot optional, ``%`` comments).
    source : str
        Name used in error messages.

    Returns
    -------
    CQ

    Raises
    ------
    ParseError
        Malformed text, an unsafe head, or a relation used with two arities.

    Examples
    --------
    >>> print(parse_cq("Q(x) :- S(y, 'c'), R(x, y)"))
    Q(x) :- R(x, y), S(y, 'c').
    """
    try:
        tree = _parser().parse(text, start="query")
        cq = _ToCQ(source).transform(tree)
    except UnexpectedInput as exc:
        raise _wrap_lark_error(exc, text, source, "conjunctive query") from exc
    except VisitError as exc:
        if isinstance(exc.orig_exc, InputError):
            raise exc.orig_exc from None
        raise
    assert isinstance(cq, CQ)
    return cq


def parse_dependency(
    text: str,
    *,
    schema: Schema | None = None,
    arities: dict[str, int] | None = None,
    kind: str = "auto",
    source: str = "<dependency>",
    line: int | None = None,
    column: int = 1,
) -> AnyDependency:
    """Parse ``R[i->j]`` (FD) or ``R[i->j]<=k`` (CD), by position or column name.

    Parameters
    ----------
    text : str
        The dependency.  Positions are 1-based; names need a schema.
    schema : Schema, optional
        Resolves relation names (case-insensitively) and column names, and
        checks positions.
    arities : dict, optional
        Relation arities known without a schema (from the query).
    kind : {"auto", "fd", "cd"}
        ``"fd"`` rejects a ``<=k`` part other than 1; ``"cd"`` requires it.
    source, line : optional
        Where the text came from, for errors.
    column : int
        The column of the text's first character in its line (errors give the
        column of the token at fault).

    Raises
    ------
    DependencyError
        Malformed text, unknown relation or column, position out of range (or
        above :data:`~cqsens.frontend.limits.MAX_ARGUMENTS`), k < 1 or k above
        :data:`~cqsens.frontend.limits.MAX_INTEGER`.

    Examples
    --------
    >>> str(parse_dependency("PatDoc[1->2]<=3"))
    'PatDoc[1->2]<=3'
    """
    try:
        tree = _parser().parse(text, start="dependency")
    except UnexpectedInput as exc:
        err = _wrap_lark_error(exc, text, source, f"dependency {_shown(text)!r}")
        err.message = (
            err.message.split("\n")[0]
            + "; write R[i->j] for a functional dependency or R[i->j]<=k for a cardinality one"
        )
        raise DependencyError(
            err.message, source=source, line=line,
            column=column + (err.column or 1) - 1, construct="dependency",
        ) from exc
    return _Dependency(text, schema, arities, source, line, column).read(tree, kind)


def _shown(text: str) -> str:
    """``text`` for a message, its middle cut when it is long."""
    return text if len(text) <= 80 else f"{text[:40]}...{text[-20:]}"


ROWS = -1
"""The position a parsed ``R[col->*]`` names: the row identity, placed by the query."""


class _Dependency:
    """Resolves a parsed dependency against the schema (or the query's arities)."""

    def __init__(self, text: str, schema: Schema | None, arities: dict[str, int] | None,
                 source: str, line: int | None, column: int) -> None:
        self.text, self.schema, self.arities = text, schema, arities
        self.source, self.line, self.column = source, line, column
        self.relation = ""
        self.columns: tuple[str, ...] | None = None
        self.arity: int | None = None

    def fail(self, message: str, tok: Token | None = None,
             error: type[DependencyError] = DependencyError) -> DependencyError:
        offset = (tok.column or 1) - 1 if tok is not None else 0
        return error(f"{message} in {_shown(self.text)!r}", source=self.source,
                     line=self.line, column=self.column + offset, construct="dependency")

    def read(self, tree: Tree, kind: str) -> AnyDependency:  # type: ignore[type-arg]
        name_tok = tree.children[0]
        assert isinstance(name_tok, Token)
        self.relation = str(name_tok)
        if self.schema is not None:
            rel = self.schema.find(self.relation)
            if rel is None:
                known = ", ".join(self.schema.relation_names()) or "none"
                raise self.fail(f"unknown relation {self.relation} (the schema has: {known})",
                                name_tok)
            self.relation, self.columns, self.arity = rel.name, rel.columns, len(rel.columns)
        elif self.arities is not None:
            match = {r.lower(): r for r in self.arities}.get(self.relation.lower())
            if match is not None:
                self.relation, self.arity = match, self.arities[match]
        parts = list(tree.children[1:])
        bound = parts.pop() if parts and isinstance(parts[-1], Tree) \
            and parts[-1].data == "bound" else None
        *sources, target = parts
        if any(isinstance(s, Tree) and s.data == "pos_rows" for s in sources):
            raise self.fail("* (one row) determines every column already: write it on the "
                            "right, R[col->*]<=k, to bound the rows that share a value")
        positions = [self.position(s) for s in sources]
        j = self.position(target)
        k = 1
        if bound is not None:
            assert isinstance(bound, Tree)
            tok = bound.children[0]
            assert isinstance(tok, Token)
            k = self.integer(tok, MAX_INTEGER, "bound k")
            if k < 1:
                raise self.fail(f"the bound k must be at least 1, got {k}", tok)
        if kind == "fd" and k != 1:
            raise self.fail("--fd takes a functional dependency R[i->j]; use --cd for R[i->j]<=k")
        if kind == "cd" and bound is None:
            raise self.fail("--cd needs a bound: R[i->j]<=k")
        if j in positions and j != ROWS:
            raise self.fail("a dependency between a position and itself says nothing")
        if len(set(positions)) != len(positions):
            raise self.fail("a position is named twice on the left of ->")
        if len(positions) > 1:
            return MultiDependency(self.relation, tuple(positions), j, k)
        return Dependency(self.relation, positions[0], j, k)

    def rows_position(self) -> int:
        """``*``: the row itself, ``R[col->*]<=k`` bounding the rows that share a value.

        Returns :data:`ROWS`; where the row identity stands (a table whose rows may
        repeat) is the query's business (``AggregateQuery.row_positions``), see
        :func:`cqsens.frontend.load.resolve_sigma`.  On a table with a key the rows
        are distinct and the dependency bounds them whatever the key is.
        """
        return ROWS

    def integer(self, tok: Token, limit: int, what: str) -> int:
        try:
            return check_integer_text(str(tok), limit=limit, what=what, source=self.source,
                                      line=self.line, column=self.column + (tok.column or 1) - 1,
                                      construct="dependency")
        except ParseError as err:
            raise DependencyError(f"{err.message} in {_shown(self.text)!r}", source=err.source,
                                  line=err.line, column=err.column,
                                  construct="dependency") from None

    def position(self, node: object) -> int:
        assert isinstance(node, Tree)
        if node.data == "pos_rows":
            return self.rows_position()
        tok = node.children[0]
        assert isinstance(tok, Token)
        relation, arity, columns = self.relation, self.arity, self.columns
        if node.data == "pos_number":
            pos = self.integer(tok, MAX_ARGUMENTS, "position")
            if pos < 1:
                raise self.fail(f"position {pos} is not valid (positions start at 1)", tok)
            if arity is not None and pos > arity:
                raise self.fail(f"position {pos} is out of range: {relation} has {arity} "
                                "columns", tok)
            return pos - 1
        name = str(tok)
        if columns is None:
            raise self.fail(f"column name {name!r} needs a schema (--schema) to resolve; "
                            "use 1-based positions otherwise", tok, SchemaNeededError)
        lowered = [c.lower() for c in columns]
        if name.lower() not in lowered:
            raise self.fail(f"{relation} has no column {name!r} (columns: "
                            f"{', '.join(columns)})", tok)
        return lowered.index(name.lower())


def parse_dependencies(
    lines: Iterable[str],
    *,
    schema: Schema | None = None,
    arities: dict[str, int] | None = None,
    source: str = "<constraints>",
) -> list[AnyDependency]:
    """Parse a constraints file: one dependency per line, ``#`` starts a comment.

    >>> [str(d) for d in parse_dependencies(["# keys", "R[1->2]", "", "S[2->1]<=4  # fan-out"])]
    ['R[1->2]', 'S[2->1]<=4']
    """
    out: list[AnyDependency] = []
    for number, raw in enumerate(lines, start=1):
        text = raw.split("#", 1)[0].strip()
        if text:
            indent = len(raw) - len(raw.lstrip())
            out.append(
                parse_dependency(
                    text, schema=schema, arities=arities, source=source, line=number,
                    column=indent + 1,
                )
            )
    return out
