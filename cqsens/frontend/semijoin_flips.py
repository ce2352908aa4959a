"""Semi-joins under OR and NOT: ``NOT EXISTS``, ``NOT IN`` and EXISTS/IN inside a boolean
combination, bounded by the rows whose condition can flip (docs/rules.md, rule
semi-join-flips).

A WHERE conjunct φ(r) that is a boolean combination (``AND``, ``OR``, ``NOT``) of
predicates on the outer row r and of *atoms* ``EXISTS (SELECT … FROM S WHERE θ)`` and
``x IN (SELECT y FROM S WHERE θ)`` is not monotone, and the exact sensitivity of such a
query is undecidable in general [AFG16, Thm 4].  An upper bound is not: when one row
(or one person) is added or removed, a counted row r either is new or gone (it reads
the changed rows: the query without φ counts it), or it is there on both sides and
φ(r) flips, which needs one of its atoms to flip, which (each atom being a monotone
semi-join) makes r a new or a gone answer of the query with that atom as a positive
semi-join in φ's place.  So the change of the statement is at most the sum of the
changes of

* the statement without φ (part 0), and
* for each atom, the statement with the atom (positive) in φ's place, and for ``IN``
  also the atoms of its NULL cases: ``EXISTS (… WHERE θ AND y IS NULL)`` (a NULL in
  the subquery makes ``x IN`` unknown for every row) and ``x IS NULL AND EXISTS
  (… WHERE θ)``, unless the schema declares the column NOT NULL,

each with ``COUNT(DISTINCT …)`` counted as ``COUNT(*)`` (a distinct value enters or
leaves only with a row whose status changes) and ``SUM(v)`` as ``SUM(ABS(v))`` (a
flipped row moves a sum by |v|).  The statement as written is what the database
runs; the parts only bound it, as the signed sum of rule outer-joins does.

An atom whose subquery reads only public tables is a constant; with a privacy unit,
an atom whose subquery is person-local (:mod:`cqsens.frontend.person_local`) changes
only with the outer row's own person, whose rows part 0 already counts: neither adds
a part.  sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import dataclass, field

from sqlglot import exp

from cqsens.frontend.person_groups import person_local_membership, table_of
from cqsens.frontend.person_local import OwnerKey, subquery_is_person_local
from cqsens.frontend.set_operations import SetSplit
from cqsens.frontend.sql_expr import conjuncts
from cqsens.ir.compound import FLIPS_OPERATOR
from cqsens.ir.schema import Schema

__all__ = ["split_semijoin_flips"]

Reject = Callable[[exp.Expr, str, str], Exception]
_RULE = "docs/rules.md, rule semi-join-flips"
_CONNECTIVES = (exp.And, exp.Or, exp.Not, exp.Paren)


@dataclass(frozen=True)
class _Atom:
    """One semi-join atom of a conjunct: its node and its subquery."""

    node: exp.Exists | exp.In
    select: exp.Select


def _from_items(select: exp.Select) -> list[exp.Expr]:
    from_ = select.args.get("from_") or select.args.get("from")
    items = [from_.this, *from_.expressions] if isinstance(from_, exp.From) else []
    return items + [j.this for j in select.args.get("joins") or []]


def _select_of(node: exp.Expr | None) -> exp.Select | None:
    while isinstance(node, (exp.Subquery, exp.Paren)):
        node = node.this
    return node if isinstance(node, exp.Select) else None


def _atom(node: exp.Expr) -> _Atom | None:
    if isinstance(node, exp.Exists):
        inner = _select_of(node.this)
        return _Atom(node, inner) if inner is not None else None
    if isinstance(node, exp.In) and node.args.get("query") is not None:
        inner = _select_of(node.args["query"])
        return _Atom(node, inner) if inner is not None else None
    return None


def _atoms(cond: exp.Expr) -> list[_Atom] | None:
    """The atoms of a boolean combination, left to right, or None when a subquery sits
    elsewhere (a scalar subquery, an atom under a function or a comparison).  The walk
    keeps its own stack: a long chain of OR is no deep recursion."""
    found: list[_Atom] = []
    stack = [cond]
    while stack:
        node = stack.pop()
        atom = _atom(node)
        if atom is not None:
            found.append(atom)
        elif isinstance(node, _CONNECTIVES):
            stack.extend(reversed(list(node.iter_expressions())))
        elif any(True for _ in node.find_all(exp.Select)):
            return None
    return found


def _public(select: exp.Select, public: Set[str]) -> bool:
    return bool(public) and all(t.name.lower() in public for t in select.find_all(exp.Table))


def _plain(select: exp.Select) -> str | None:
    """Why a subquery is not a select-project-join of tables (None: it is one)."""
    for key in ("group", "having", "limit", "offset", "qualify", "with", "with_"):
        if select.args.get(key) is not None:
            return f"{key.rstrip('_').upper()} in the subquery"
    if any(True for _ in select.find_all(exp.AggFunc, exp.Window)):
        return "an aggregate in the subquery"
    if any(n is not select for n in select.find_all(exp.Select)):
        return "a subquery inside the subquery"
    for join in select.args.get("joins") or []:
        kind = (join.args.get("kind") or "").upper()
        if join.args.get("side") or join.args.get("using") or kind not in ("", "INNER", "CROSS"):
            return "an outer join in the subquery"
    items = _from_items(select)
    if not items or not all(isinstance(i, exp.Table) for i in items):
        return "a derived table in the subquery"
    return None


@dataclass
class _Splitter:
    """What the atoms of one statement are checked against: the statement, its WITH names
    and its outer tables (alias → table; None when one is no named table)."""

    tree: exp.Select
    reject: Reject
    dialect: str | None
    schema: Schema | None
    public: Set[str]
    owner: OwnerKey | None
    ctes: set[str] = field(init=False)
    outer: dict[str, str] | None = field(init=False)

    def __post_init__(self) -> None:
        with_ = self.tree.args.get("with_") or self.tree.args.get("with")
        self.ctes = {c.alias_or_name.lower() for c in with_.expressions} \
            if isinstance(with_, exp.With) else set()
        items = _from_items(self.tree)
        self.outer = {i.alias_or_name.lower(): i.name for i in items
                      if isinstance(i, exp.Table)} \
            if all(isinstance(i, exp.Table) for i in items) else None

    def local(self, atom: _Atom) -> bool:
        """A person-local atom (with a privacy unit): only its outer row's person changes it."""
        if self.owner is None or self.schema is None or self.outer is None:
            return False
        return subquery_is_person_local(atom.select, self.outer, self.owner, self.public,
                                        self.schema) \
            or person_local_membership(atom.node, self.outer, self.owner, self.public,
                                       self.schema)

    def whole_handled(self, cond: exp.Expr, atoms: list[_Atom]) -> bool:
        """A conjunct today's route reads: a positive atom (a semi-join, or refused by
        name), or one whose every subquery is public or person-local (a fixed filter)."""
        if _atom(cond) is not None:
            return True
        return all(_public(a.select, self.public) or self.local(a) for a in atoms)

    def moving(self, atoms: list[_Atom]) -> list[_Atom]:
        """The atoms that another person's rows (or any row) can flip."""
        return [a for a in atoms if not _public(a.select, self.public) and not self.local(a)]

    def nullable(self, column: exp.Expr, scope: dict[str, str]) -> bool:
        """Whether ``column`` may be NULL (not a column of a known table declared NOT NULL)."""
        if not isinstance(column, exp.Column) or self.schema is None:
            return True
        table = table_of(column, scope, self.schema)
        rel = self.schema.find(table) if table is not None else None
        index = rel.index(column.name) if rel is not None else None
        return rel is None or index is None or rel.nullable(index)

    def positives(self, atom: _Atom) -> list[tuple[str, list[exp.Expr]]]:
        """The positive conjuncts whose semi-join counts bound the atom's flips, named."""
        why = _plain(atom.select)
        tables = atom.select.find_all(exp.Table)
        if why is None and any(t.name.lower() in self.ctes for t in tables):
            why = "a WITH table in the subquery"
        if why is not None:
            raise self.reject(atom.node, f"{_text(atom.node)} under OR / NOT",
                              f"{why}: its truth is not a monotone semi-join, so the rows it "
                              f"flips are not bounded ({_RULE}); it is accepted when its "
                              "tables are public or, with --unit, person-local")
        if isinstance(atom.node, exp.Exists):
            return [(f"EXISTS ({_short(atom.select, self.dialect)})",
                     [exp.Exists(this=atom.select.copy())])]
        inner = atom.select
        if len(inner.expressions) != 1 or not isinstance(_unaliased(inner.expressions[0]),
                                                          exp.Column):
            raise self.reject(atom.node, f"{_text(atom.node)} under OR / NOT",
                              "the subquery must select one column")
        member = atom.node.this
        value = _unaliased(inner.expressions[0])
        out: list[tuple[str, list[exp.Expr]]] = [
            (f"{member.sql(dialect=self.dialect)} IN ({_short(inner, self.dialect)})",
             [exp.In(this=member.copy(), query=exp.Subquery(this=inner.copy()))])]
        own = {i.alias_or_name.lower(): i.name for i in _from_items(inner)
               if isinstance(i, exp.Table)}
        if self.nullable(value, own) and not _rejects_nulls(inner, value):
            nulls = _exists_where(inner, exp.Is(this=value.copy(), expression=exp.Null()))
            out.append((f"a NULL {value.sql(dialect=self.dialect)} in the subquery", [nulls]))
        if self.nullable(member, self.outer or {}):
            out.append((f"{member.sql(dialect=self.dialect)} IS NULL",
                        [exp.Is(this=member.copy(), expression=exp.Null()),
                         _exists_where(inner, None)]))
        return out


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _rejects_nulls(inner: exp.Select, value: exp.Expr) -> bool:
    """Whether a top-level condition of the subquery (WHERE, ON) fails when ``value`` is
    NULL: ``value IS NOT NULL`` or a comparison of ``value`` with anything."""
    found = [c for j in inner.args.get("joins") or [] if j.args.get("on") is not None
             for c in conjuncts(j.args["on"])]
    where = inner.args.get("where")
    found += conjuncts(where.this) if where is not None else []
    for cond in found:
        if isinstance(cond, exp.Not) and isinstance(cond.this, exp.Is) \
                and cond.this.this == value and isinstance(cond.this.expression, exp.Null):
            return True
        if isinstance(cond, _COMPARISONS) and value in (cond.this, cond.expression):
            return True
    return False


def _unaliased(node: exp.Expr) -> exp.Expr:
    return node.this if isinstance(node, exp.Alias) else node


def _exists_where(inner: exp.Select, extra: exp.Expr | None) -> exp.Exists:
    """``EXISTS (SELECT 1 FROM <inner's tables> WHERE <inner's WHERE> AND extra)``."""
    sub = inner.copy()
    sub.set("expressions", [exp.Literal.number(1)])
    sub.set("distinct", None)
    if extra is not None:
        where = sub.args.get("where")
        sub.set("where", exp.Where(this=exp.and_(where.this, extra) if where is not None
                                   else extra))
    return exp.Exists(this=sub)


def _text(node: exp.Expr) -> str:
    negated = "NOT " if isinstance(node.parent, exp.Not) else ""
    return negated + ("IN (subquery)" if isinstance(node, exp.In) else "EXISTS (subquery)")


def _short(select: exp.Select, dialect: str | None) -> str:
    text = select.sql(dialect=dialect)
    return text if len(text) <= 80 else text[:77] + "..."


def _counted(tree: exp.Select, reject: Reject, dialect: str | None) -> None:
    """Rewrite the aggregates of ``tree`` (outside subqueries) in place: ``COUNT(DISTINCT …)``
    as ``COUNT(*)``, ``SUM(v)`` as ``SUM(ABS(v))``, ``AVG(v)`` as ``MIN(v)`` (``MIN`` and
    ``MAX`` kept: a touched group moves by at most M − m); refuse the others by name."""
    nodes = [n for n in tree.find_all(exp.AggFunc)
             if not any(isinstance(p, exp.Select) and p is not tree for p in _parents(n, tree))]
    for node in nodes:
        if isinstance(node, exp.Count):
            if isinstance(node.this, exp.Distinct):
                node.replace(exp.Count(this=exp.Star()))
            continue
        if isinstance(node, exp.Sum) and not isinstance(node.this, exp.Distinct):
            node.set("this", exp.Abs(this=node.this.copy()))
            continue
        if isinstance(node, (exp.Min, exp.Max)):
            continue
        if isinstance(node, exp.Avg):
            node.replace(exp.Min(this=node.this.copy()))
            continue
        raise reject(node, f"{node.sql(dialect=dialect)} with EXISTS / IN under OR / NOT",
                     "only COUNT, COUNT(DISTINCT …), SUM, AVG, MIN and MAX are bounded "
                     f"through the rows whose condition flips ({_RULE})")


def _parents(node: exp.Expr, stop: exp.Expr) -> list[exp.Expr]:
    out: list[exp.Expr] = []
    parent = node.parent
    while parent is not None and parent is not stop:
        out.append(parent)
        parent = parent.parent
    return out


def _part(tree: exp.Select, kept: list[exp.Expr], added: list[exp.Expr], reject: Reject,
          dialect: str | None) -> exp.Select:
    part = tree.copy()
    where = [c.copy() for c in kept] + added
    part.set("where", exp.Where(this=exp.and_(*where)) if where else None)
    _counted(part, reject, dialect)
    return part


def split_semijoin_flips(tree: exp.Expr, reject: Reject, dialect: str | None,
                         schema: Schema | None, public: Set[str] = frozenset(),
                         owner: OwnerKey | None = None) -> SetSplit | None:
    """The parts that bound a statement whose WHERE has semi-join atoms under OR / NOT.

    Parameters
    ----------
    tree : sqlglot expression
        One SELECT (not changed).
    reject : callable
        Builds the error for a construct that cannot be bounded.
    dialect : str, optional
        For the parts' SQL.
    schema : Schema, optional
        NOT NULL columns (``IN``'s NULL cases), the tables' columns.
    public : set of str
        The public tables, in lower case: an atom over them is a constant.
    owner : callable, optional
        With a privacy unit, tells person-local atoms (which add no part).

    Returns
    -------
    SetSplit or None
        A ``"sum"`` split (the statement without the conjuncts, then one part per
        moving atom), or None when no WHERE conjunct needs one.
    """
    if not isinstance(tree, exp.Select) or tree.args.get("where") is None:
        return None
    splitter = _Splitter(tree, reject, dialect, schema, public, owner)
    kept: list[exp.Expr] = []
    flips: list[tuple[exp.Expr, list[_Atom]]] = []
    for cond in conjuncts(tree.args["where"].this):
        atoms = _atoms(cond)
        if not atoms or splitter.whole_handled(cond, atoms):
            kept.append(cond)
            continue
        flips.append((cond, splitter.moving(atoms)))
    if not flips:
        return None
    whole = tree.copy()
    for key in ("order", "limit", "offset"):
        whole.set(key, None)
    texts = [c.sql(dialect=dialect) for c, _ in flips]
    parts = [_part(tree, kept, [], reject, dialect)]
    names = ["without " + " AND ".join(texts)]
    for _, atoms in flips:
        for atom in atoms:
            for name, added in splitter.positives(atom):
                parts.append(_part(tree, kept, added, reject, dialect))
                names.append(f"rows flipped by {name}")
    notes = [
        f"{' AND '.join(texts)}: a boolean combination of semi-joins (EXISTS / IN) is not "
        "monotone; a counted row changes only if it is new or gone (the query without the "
        f"condition) or one of its {len(parts) - 1} semi-join atoms flips for it (the query "
        "with that atom as a positive semi-join), so the change is at most the sum of the "
        f"{len(parts)} parts' changes, with COUNT(DISTINCT …) counted as COUNT(*) and SUM(v) "
        f"as SUM(ABS(v)) ({_RULE}); the statement runs as written"]
    if any(isinstance(n, (exp.Avg, exp.Min, exp.Max)) for n in tree.find_all(exp.AggFunc)):
        notes.append("MIN, MAX and AVG: a group the changed rows touch stays in [m, M] "
                     "(assumed defined on both neighbours), so it moves by at most M − m, "
                     "the MIN/MAX bound of each part that touches it; AVG is read as MIN in "
                     f"the parts, since flipped rows leave a group as others enter ({_RULE})")
    trivial = sum(len(_atoms(c) or []) - len(a) for c, a in flips)
    if trivial:
        notes.append(f"{trivial} atom{'s' if trivial > 1 else ''} read only public tables or, "
                     "with --unit, only the outer row's own person: no flip part "
                     f"({_RULE})")
    split = SetSplit("sum", FLIPS_OPERATOR, parts, [False] * len(parts),
                     whole.sql(dialect=dialect), notes)
    split.names = names
    return split
