"""Released subqueries: aggregating derived tables and ``WITH`` tables released as
statements of their own (docs/rules.md, rule released-subquery).

A derived table, a ``WITH`` table, or a branch of a set operation that is one of them,
whose SELECT has an aggregate over rows of private tables is a *part*: it is analysed and released
as a statement of its own (with the ``WITH`` tables it reads), its group keys handled as
a statement's are.  The rest of the statement, with each part's released rows in its
place, must read public tables and released rows only: it is post-processing of the
noisy rows (filters, joins with public tables, windows, arithmetic, aggregates over the
released rows, UNION, ORDER BY, LIMIT).  Parts are chosen innermost first: a SELECT that
aggregates the released rows of another part is post-processing, not a part.  An
uncorrelated scalar subquery over private tables is a part too where what holds it is
post-processing, and a part's HAVING compared with one is applied to its released rows
(:mod:`cqsens.frontend.scalar_parts`).

The rest of the statement is rewritten with a SELECT of markers in place of each part
(``SELECT CQSENS_VIEW_ROWS(n, i) AS column, …``, the marker of
:mod:`cqsens.frontend.released_views`); :func:`fill_parts` puts the released rows in
their place as ``VALUES`` lists, so whatever then runs reads noisy values only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from decimal import Decimal

from sqlglot import exp

from cqsens.errors import InputError
from cqsens.frontend.released_views import ROWS_MARKER, literal, owner, sources
from cqsens.frontend.scalar_parts import in_having, scalar_release, scalar_subqueries, split_having
from cqsens.frontend.statements import parse_statement
from cqsens.ir.schema import Schema

__all__ = ["Part", "Parts", "fill_parts", "split_parts"]


@dataclass(frozen=True, slots=True)
class Part:
    """One released part: ``number`` (from 1, as its marker names it), the statement
    released (``sql``: the part's SELECT with the ``WITH`` tables it reads) and the
    names of its SELECT items in order (``columns``: the released row's columns).

    Attributes
    ----------
    written : str
        The part as written.
    keys : tuple of str
        For each column, the name of the group column it selects ("" for an aggregate,
        a window or a constant).
    constants : tuple of (bool, value)
        For each column, whether it is a constant (which a release does not measure)
        and its value (``NULL`` is None).
    role : {"table", "scalar", "having"}
        A derived table or ``WITH`` table; a scalar subquery (its one value takes its
        place); such a table whose HAVING, compared with released values, is applied to
        its noisy rows (``sql`` is released without it).
    """

    number: int
    sql: str
    columns: tuple[str, ...]
    written: str
    keys: tuple[str, ...] = ()
    constants: tuple[tuple[bool, object], ...] = ()
    role: str = "table"


@dataclass(frozen=True, slots=True)
class Parts:
    """A statement's released parts and the rest of it, with markers in their place;
    ``tables``: the public tables the rest reads (none: it reads released rows only)."""

    parts: tuple[Part, ...]
    outer: str
    tables: tuple[str, ...] = ()


def _with(tree: exp.Expr) -> exp.With | None:
    found = tree.args.get("with_") or tree.args.get("with")
    return found if isinstance(found, exp.With) else None


def _ctes(tree: exp.Expr) -> dict[str, exp.CTE]:
    found = _with(tree)
    return {c.alias_or_name.lower(): c for c in found.expressions} if found is not None else {}


def _branches(body: exp.Expr) -> list[exp.Select]:
    """The SELECT blocks of a derived table's or ``WITH`` table's body (the branches of a
    set operation, each on its own)."""
    if isinstance(body, exp.Select):
        return [body]
    if isinstance(body, exp.SetOperation):
        return _branches(body.this) + _branches(body.expression)
    if isinstance(body, exp.Subquery):
        return _branches(body.this)
    return []


def _aggregates(select: exp.Select) -> bool:
    """Whether ``select`` has an aggregate of its own (a GROUP BY without one lists its
    groups: no release)."""
    return any(a.find_ancestor(exp.Select) is select for a in select.find_all(exp.AggFunc))


def _marked(node: exp.Expr) -> bool:
    return any(str(a.this).upper() == ROWS_MARKER for a in node.find_all(exp.Anonymous))


class _Reads:
    """Which tables a node reads, through the ``WITH`` tables it names."""

    def __init__(self, ctes: Mapping[str, exp.CTE], public: Set[str]) -> None:
        self.ctes, self.public = ctes, public

    def names(self, node: exp.Expr) -> set[str]:
        """``WITH`` tables read by ``node``, transitively (each visited once)."""
        out: set[str] = set()
        todo = [node]
        while todo:
            for table in todo.pop().find_all(exp.Table):
                name = table.name.lower()
                if name in self.ctes and name not in out and not table.args.get("db"):
                    out.add(name)
                    todo.append(self.ctes[name].this)
        return out

    def private(self, node: exp.Expr) -> list[str]:
        """The private tables ``node`` reads, directly or through ``WITH`` tables."""
        bodies = [node, *(self.ctes[n].this for n in self.names(node))]
        return sorted({t.name.lower() for b in bodies for t in b.find_all(exp.Table)
                       if (t.name.lower() not in self.ctes or t.args.get("db"))
                       and t.name.lower() not in self.public})

    def marked(self, node: exp.Expr) -> bool:
        """Whether ``node`` reads released rows, directly or through ``WITH`` tables."""
        return _marked(node) or any(_marked(self.ctes[n].this) for n in self.names(node))


def _candidates(tree: exp.Expr, ctes: Mapping[str, exp.CTE]) -> list[exp.Select]:
    """The SELECT blocks that may be parts, innermost first: the bodies of ``WITH`` tables
    and of derived tables in FROM/JOIN (each branch of a set operation on its own)."""
    out: list[exp.Select] = []
    roots: list[exp.Expr] = [c.this for c in ctes.values()]
    roots.append(tree)
    for root in roots:
        derived = [s for s in root.find_all(exp.Subquery)
                   if isinstance(s.parent, (exp.From, exp.Join))
                   and not (root is tree and s.find_ancestor(exp.CTE) is not None)]
        derived.sort(key=lambda s: -s.depth)
        for sub in derived:
            out += _branches(sub.this)
        if root is not tree:
            out += _branches(root)
    return out


def _columns(select: exp.Select) -> tuple[str, ...] | None:
    """The names of ``select``'s items (None with a ``*``): a ``WITH`` table's column list
    when it has one."""
    if any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
           for e in select.expressions):
        return None
    names = [e.alias_or_name if isinstance(e, (exp.Alias, exp.Column)) and e.alias_or_name
             else f"column{n}" for n, e in enumerate(select.expressions, start=1)]
    cte = select.parent
    if isinstance(cte, exp.CTE):
        alias = cte.args.get("alias")
        listed = alias.columns if isinstance(alias, exp.TableAlias) else []
        if listed and len(listed) == len(names):
            names = [c.name for c in listed]
    return tuple(names)


def _keys(select: exp.Select) -> tuple[str, ...]:
    """For each item of ``select``, the group column it selects, else ""."""
    group = select.args.get("group")
    grouped = {g.sql().lower() for g in group.expressions} if group is not None else set()
    out = []
    for item in select.expressions:
        value = item.unalias()
        out.append(value.name if isinstance(value, exp.Column) and (
            value.sql().lower() in grouped or value.name.lower() in grouped) else "")
    return tuple(out)


def _constant(value: exp.Expr) -> tuple[bool, object]:
    if isinstance(value, exp.Null):
        return True, None
    if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal) \
            and not value.this.is_string:
        found = _constant(value.this)
        return found[0], -found[1] if isinstance(found[1], (int, Decimal)) else found[1]
    if isinstance(value, exp.Literal):
        if value.is_string:
            return True, value.this
        text = value.this
        return True, int(text) if text.lstrip("-").isdigit() else Decimal(text)
    return False, None


def _constants(select: exp.Select) -> tuple[tuple[bool, object], ...]:
    """For each item of ``select``, whether it is a constant, and its value."""
    return tuple(_constant(item.unalias()) for item in select.expressions)


def _statement(select: exp.Select, reads: _Reads, dialect: str | None) -> str:
    """``select`` as a statement of its own, with the ``WITH`` tables it reads."""
    names = reads.names(select)
    body = select.copy()
    body.set("with_", None)
    if names:
        body.set("with_", exp.With(expressions=[c.copy() for n, c in reads.ctes.items()
                                                if n in names]))
    return body.sql(dialect=dialect)


def _marker(number: int, columns: Sequence[str]) -> exp.Select:
    return exp.select(*[exp.alias_(exp.Anonymous(this=ROWS_MARKER, expressions=[
        exp.Literal.number(number), exp.Literal.number(i)]), exp.to_identifier(c))
        for i, c in enumerate(columns)])


def _per_person(select: exp.Select, names_person: Callable[[str, str], bool],
                schema: Schema | None) -> bool:
    """Whether ``select`` groups by a column that names the person (a per-person table,
    docs/rules.md, rule person-groups, not a released subquery)."""
    group = select.args.get("group")
    items = sources(select)
    if group is None or items is None:
        return False
    for key in group.expressions:
        if isinstance(key, exp.Column):
            alias = owner(key, items, schema)
            if alias is not None and names_person(items[alias].name.lower(), key.name.lower()):
                return True
    return False


class _Split:
    """The parts of one statement: derived tables and ``WITH`` tables innermost first, and
    scalar subqueries (:mod:`cqsens.frontend.scalar_parts`) once what holds them is
    post-processing; passes repeat until none is found.  A part released twice (the same
    statement, the same columns) is released once: every place reads its rows."""

    def __init__(self, tree: exp.Expr, reads: _Reads, dialect: str | None,
                 schema: Schema | None) -> None:
        self.tree, self.reads, self.dialect, self.schema = tree, reads, dialect, schema
        self.parts: list[Part] = []
        self.numbers: dict[tuple[str, tuple[str, ...]], int] = {}

    def run(self, names_person: Callable[[str, str], bool] | None) -> bool:
        """Find the parts (``self.parts``); False for a per-person table."""
        tables = _candidates(self.tree, self.reads.ctes)
        scalars = scalar_subqueries(self.tree)
        done: set[int] = set()
        changed = True
        while changed:
            changed = False
            for sub in scalars:
                if id(sub) not in done and sub.root() is self.tree and self._scalar(sub, tables):
                    done.add(id(sub))
                    changed = True
            for select in tables:
                if id(select) in done or select.root() is not self.tree:
                    continue  # released, or replaced with its enclosing part
                found = self._table(select, names_person)
                if found is None:
                    return False
                if found:
                    done.add(id(select))
                    changed = True
        return bool(self.parts)

    def _number(self, released: exp.Select, columns: Sequence[str], written: str,
                role: str) -> int:
        sql = _statement(released, self.reads, self.dialect)
        key = (sql, tuple(columns))
        if key not in self.numbers:
            self.numbers[key] = len(self.parts) + 1
            self.parts.append(Part(len(self.parts) + 1, sql, tuple(columns), written,
                                   _keys(released), _constants(released), role))
        return self.numbers[key]

    def _table(self, select: exp.Select,
               names_person: Callable[[str, str], bool] | None) -> bool | None:
        """Release ``select`` (a derived table's or ``WITH`` table's SELECT) if it is a part;
        None when it is a per-person table."""
        columns = _columns(select)
        if columns is None or not _aggregates(select) or not self.reads.private(select):
            return False
        split = None
        if self.reads.marked(select):  # only a HAVING compared with released values
            split = split_having(select, columns, _marked)
            if split is None or self.reads.marked(split.released):
                return False
        if names_person is not None and _per_person(select, names_person, self.schema):
            return None
        written = select.sql(dialect=self.dialect)
        if split is None:
            select.replace(_marker(self._number(select, columns, written, "table"), columns))
            return True
        number = self._number(split.released, split.columns, written, "having")
        rows = _marker(number, split.columns).subquery(f"cqsens_part_{number}_rows")
        select.replace(exp.select(*[exp.Column(this=exp.to_identifier(c)) for c in columns])
                       .from_(rows).where(split.condition.copy()))
        return True

    def _scalar(self, sub: exp.Subquery, tables: Sequence[exp.Select]) -> bool:
        """Release the scalar subquery ``sub`` if it is a part."""
        inner, holder = sub.this, sub.find_ancestor(exp.Select)
        if not isinstance(inner, exp.Select) or holder is None or self.reads.marked(inner) \
                or not self.reads.private(inner):
            return False
        if self._splits(sub, holder, tables):
            pass  # its table is released, the HAVING applied to the noisy rows
        elif self._from_private(holder):
            return False  # a threshold on the rows of a release: rule two-stage
        body = scalar_release(inner, self.reads.ctes, self.schema)
        columns = _columns(inner)
        if body is None or columns is None:
            return False
        number = self._number(body, columns, inner.sql(dialect=self.dialect), "scalar")
        inner.replace(_marker(number, columns))
        return True

    @staticmethod
    def _splits(sub: exp.Subquery, holder: exp.Select, tables: Sequence[exp.Select]) -> bool:
        """Whether ``sub`` is in the HAVING of ``holder``, a part whose HAVING conjunct that
        holds it can be applied to its released rows."""
        if not in_having(sub, holder) or not _aggregates(holder) \
                or not any(holder is t for t in tables):
            return False
        columns = _columns(holder)
        return columns is not None and split_having(
            holder, columns, lambda p: sub is p or any(sub is a for a in p.find_all(
                exp.Subquery))) is not None

    def _from_private(self, select: exp.Select) -> bool:
        """Whether the FROM/JOIN items of ``select`` read private rows."""
        from_ = select.args.get("from_") or select.args.get("from")
        items = [from_.this, *from_.expressions] if from_ is not None else []
        items += [j.this for j in select.args.get("joins") or []]
        return any(self.reads.private(i) for i in items)


def split_parts(sql: str, dialect: str | None, *, public: Set[str],
                source: str = "<sql>", schema: Schema | None = None,
                names_person: Callable[[str, str], bool] | None = None) -> Parts | None:
    """The released parts of ``sql``, or None when it has none.

    Parameters
    ----------
    sql, dialect, public, source
        As for :func:`cqsens.frontend.public_statement.public_statement` (``public`` in
        lower case).
    schema : Schema, optional
        Tells which table an unqualified group column belongs to.
    names_person : callable, optional
        With a privacy unit: whether ``(table, column)`` names the person.  A statement
        with a part grouped by such a column is a per-person table (docs/rules.md, rule
        person-groups): None is returned.

    Returns
    -------
    Parts or None

    Raises
    ------
    InputError
        The statement has parts, but the rest of it reads private rows outside them
        (only public tables and released rows are post-processing).

    Examples
    --------
    >>> found = split_parts("SELECT MAX(n) FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) d",
    ...                     None, public=set())
    >>> found.parts[0].sql, found.parts[0].columns
    ('SELECT k, COUNT(*) AS n FROM t GROUP BY k', ('k', 'n'))
    """
    names = {p.lower() for p in public}
    tree = parse_statement(sql, dialect, source)
    ctes = _ctes(tree)
    found = _Split(tree, _Reads(ctes, names), dialect, schema)
    if not found.run(names_person):
        return None
    parts, reads = found.parts, found.reads
    if not parts:
        return None
    _drop_unread(tree, reads)
    left = reads.private(tree)
    if left:
        one = len(parts) == 1
        raise InputError(
            f"{len(parts)} aggregating subquer{'y' if one else 'ies'} can be released as "
            f"{'a statement of its' if one else 'statements of their'} own, but the rest of "
            f"the statement reads the private table{'' if len(left) == 1 else 's'} "
            f"{', '.join(left)} outside {'it' if one else 'them'}: only public tables and "
            "released rows are post-processing (docs/rules.md, rule released-subquery)",
            source=source, construct="released-subquery")
    tables = sorted({t.name.lower() for t in tree.find_all(exp.Table)
                     if t.name.lower() not in ctes or t.args.get("db")})
    return Parts(tuple(parts), tree.sql(dialect=dialect), tuple(tables))


def _drop_unread(tree: exp.Expr, reads: _Reads) -> None:
    """Remove the ``WITH`` tables the rest of the statement no longer reads (those read only
    inside a part travel with it)."""
    found = _with(tree)
    if found is None:
        return
    body = tree.copy()
    body.set("with_", None)
    kept = reads.names(body)
    found.set("expressions", [c for c in found.expressions if c.alias_or_name.lower() in kept])
    if not found.expressions:
        tree.set("with_", None)


def _rows_select(number: int, columns: Sequence[str], target: str,
                 rows: Sequence[Sequence[object]]) -> str:
    """The SQL of a SELECT of the released rows of part ``number`` named ``columns``."""
    quoted = [exp.to_identifier(c).sql(dialect=target) for c in columns]
    names = ", ".join(f"column{i} AS {c}" for i, c in enumerate(quoted, start=1))
    if not rows:
        return "SELECT " + ", ".join(f"NULL AS {c}" for c in quoted) + " WHERE 1 = 0"
    values = ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)
    return f"SELECT {names} FROM (VALUES {values}) AS cqsens_part_{number}"


def fill_parts(sql: str, dialect: str | None, target: str,
               rows: Mapping[int, Sequence[Sequence[object]]], *, source: str) -> str:
    """``sql`` (a statement with markers, :attr:`Parts.outer`) for a ``target`` database,
    with the released rows of part ``n`` (in its columns' order) in place of its marker.

    Examples
    --------
    >>> found = split_parts("SELECT MAX(n) FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) d",
    ...                     None, public=set())
    >>> fill_parts(found.outer, None, "sqlite", {1: [("a", 2.5)]}, source="<sql>")
    "SELECT MAX(n) FROM (SELECT column1 AS k, column2 AS n FROM (VALUES ('a', 2.5)) \
AS cqsens_part_1) AS d"
    """
    tree = parse_statement(sql, dialect, source)
    bodies: dict[str, str] = {}
    for select in list(tree.find_all(exp.Select)):
        calls = [e.unalias() for e in select.expressions]
        if not calls or not all(isinstance(c, exp.Anonymous) and str(c.this).upper()
                                == ROWS_MARKER for c in calls):
            continue
        number = int(calls[0].expressions[0].name)
        placeholder = f"cqsens_part_rows_{number}_{len(bodies)}"
        columns = [e.alias_or_name for e in select.expressions]
        bodies[placeholder] = _rows_select(number, columns, target, rows.get(number, []))
        select.replace(exp.select("*").from_(placeholder))
    text = tree.sql(dialect=target)
    for placeholder, body in bodies.items():
        text = text.replace(f"SELECT * FROM {placeholder}", body, 1)
    return text
