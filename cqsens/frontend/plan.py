"""A statement as a plan: single SELECT blocks (leaves) combined by rewrites (passes).

The frontend rewrites that split a statement into conjunctive parts are
*passes* over one plan type.  A :class:`Leaf` is one SELECT block, translated
later into one :class:`~cqsens.ir.cq.AggregateQuery`; a :class:`Combine` says how
its parts' sensitivities combine (``kind``: ``"concat"``, ``"sum"`` or
``"count"``, as in :class:`~cqsens.ir.compound.CompoundQuery`).  Each pass looks at
one leaf and returns a plan in its place: a :class:`Combine` of new leaves (a
split), a rewritten :class:`Leaf`, or None.  :func:`build_plan` applies the
passes in the order of :data:`PASSES` to the statement and again to every new
leaf, until no pass applies: so the rewrites nest in any order (a LEFT JOIN in a
UNION ALL branch, a LEFT JOIN under ROLLUP, a UNION in a derived table in a
UNION branch).

A nesting is accepted only where its combination rule is clear
(docs/rules.md, rules set-operations, grouping-sets, outer-joins):

* under ``"concat"`` (parts released side by side) any part: each part's
  bound holds for its own released vector, so ℓ1 adds and ℓ2 is the root of
  the sum of squares;
* under ``"sum"`` (each released value is a signed sum of the parts') a leaf or
  another sum: a signed sum of signed sums is a signed sum, and ℓ1 and ℓ2 add
  (triangle inequality);
* under ``"count"`` (a count of distinct result rows) leaves only: the rule
  needs each part's count bound Δᵢ of one conjunctive query.

The plan holds sqlglot nodes, so it lives in :mod:`cqsens.frontend` (the only
package that imports sqlglot); what leaves the frontend is the
:class:`~cqsens.ir.compound.CompoundQuery` built from it.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import dataclass, replace

from sqlglot import exp

from cqsens.frontend.derived_tables import lift_derived_table
from cqsens.frontend.grouping_sets import split_grouping_sets
from cqsens.frontend.outer_joins import split_outer_joins
from cqsens.frontend.person_local import OwnerKey
from cqsens.frontend.semijoin_flips import split_semijoin_flips
from cqsens.frontend.set_operations import SetSplit, split_set_operation
from cqsens.frontend.stars import expand_stars, has_listed_star
from cqsens.ir.schema import Schema

__all__ = ["MAX_PLAN_LEAVES", "PASSES", "Combine", "Leaf", "Plan", "build_plan", "leaves",
           "render"]

Reject = Callable[[exp.Expr, str, str], Exception]
MAX_PLAN_LEAVES = 128
"""The most conjunctive parts one statement may be split into."""


@dataclass(frozen=True)
class Leaf:
    """One SELECT block, translated into one aggregate query.

    ``distinct``: its rows are counted as distinct rows (below a
    duplicate-removing set operation).  ``root``: the statement as written
    (no pass applied), whose SQL is the user's text.
    """

    tree: exp.Expr
    distinct: bool = False
    root: bool = False


@dataclass(frozen=True)
class Combine:
    """Parts combined by ``kind`` (``concat``, ``sum`` or ``count``) by the pass ``rule``."""

    kind: str
    operator: str
    rule: str
    whole: str
    parts: tuple[Plan, ...]
    notes: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    signs: tuple[int, ...] = ()
    monotone: str = ""


Plan = Leaf | Combine


@dataclass(frozen=True)
class Context:
    """What every pass reads: how to reject, the dialect and the schema."""

    reject: Reject
    dialect: str | None
    schema: Schema | None
    public: Set[str] = frozenset()
    owner: OwnerKey | None = None


Pass = Callable[[Leaf, Context], Plan | None]
"""A pass reads one leaf and returns a plan in its place (a :class:`Combine` of new
leaves, or a rewritten :class:`Leaf`), or None when it does not apply."""


def _split(rule: str, split: SetSplit | None) -> Combine | None:
    """A split function's result as a plan node whose parts are new leaves."""
    if split is None:
        return None
    parts = tuple(Leaf(p, d) for p, d in zip(split.parts, split.distinct, strict=True))
    return Combine(split.kind, split.operator, rule, split.whole, parts, tuple(split.notes),
                   tuple(split.names), tuple(split.signs), split.monotone)


def _grouping_sets(leaf: Leaf, ctx: Context) -> Plan | None:
    if not isinstance(leaf.tree, exp.Select):
        return None
    return _split("grouping-sets", split_grouping_sets(leaf.tree, ctx.reject, ctx.dialect))


def _set_operations(leaf: Leaf, ctx: Context) -> Plan | None:
    return _split("set-operations", split_set_operation(leaf.tree, ctx.reject, ctx.dialect))


def _derived_tables(leaf: Leaf, ctx: Context) -> Plan | None:
    if not isinstance(leaf.tree, exp.Select):
        return None
    lifted = lift_derived_table(leaf.tree, ctx.schema, ctx.reject)
    return Leaf(lifted, leaf.distinct) if lifted is not None else None


def _outer_joins(leaf: Leaf, ctx: Context) -> Plan | None:
    tree = leaf.tree
    if not isinstance(tree, exp.Select) or not tree.args.get("joins"):
        return None
    if leaf.distinct:
        sided = next((j for j in tree.args["joins"] if j.args.get("side")), None)
        if sided is not None:
            raise _under_count(ctx, sided, f"{sided.args['side'].upper()} JOIN")
    return _split("outer-joins", split_outer_joins(tree, ctx.reject, ctx.dialect, ctx.schema))


def _semijoin_flips(leaf: Leaf, ctx: Context) -> Plan | None:
    return _split("semi-join-flips", split_semijoin_flips(leaf.tree, ctx.reject, ctx.dialect,
                                                          ctx.schema, ctx.public, ctx.owner))


def _under_count(ctx: Context, node: exp.Expr, operator: str) -> Exception:
    return ctx.reject(node, f"{operator} in a part of UNION / INTERSECT",
                      "COUNT(*) over a duplicate-removing set operation is bounded through each "
                      "part's count of distinct rows, which cqsens reads from one conjunctive "
                      "query only (docs/rules.md, rule set-operations); use UNION ALL")


PASSES: tuple[tuple[str, Pass], ...] = (
    ("grouping-sets", _grouping_sets),
    ("set-operations", _set_operations),
    ("derived-tables", _derived_tables),
    ("outer-joins", _outer_joins),
    ("semi-join-flips", _semijoin_flips),
)
"""The passes, tried in this order on every leaf (the first that applies wins, and
the passes run again on every leaf of what it returns)."""

_ALLOWED = {"concat": ("concat", "sum", "count"), "sum": ("sum",), "count": ()}


class _Builder:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.count = 0

    def expand(self, leaf: Leaf) -> Plan:
        for _, run in PASSES:
            out = run(leaf, self.ctx)
            if isinstance(out, Leaf):  # a rewrite: the same leaf, rewritten
                return self.expand(out)
            if isinstance(out, Combine):
                return self.nest(leaf, out)
        self.count += 1
        if self.count > MAX_PLAN_LEAVES:
            raise self.ctx.reject(leaf.tree, "statement with too many parts",
                                  f"its rewrites make more than {MAX_PLAN_LEAVES} conjunctive "
                                  "parts")
        return leaf

    def nest(self, leaf: Leaf, node: Combine) -> Combine:
        """``node`` with the passes run again on each of its leaves, where its rule allows."""
        if leaf.distinct:
            raise _under_count(self.ctx, leaf.tree, node.operator)
        parts = tuple(self.expand(p) if isinstance(p, Leaf) else p for p in node.parts)
        for part in parts:
            if isinstance(part, Combine) and part.kind not in _ALLOWED[node.kind]:
                raise self.ctx.reject(
                    leaf.tree, f"{part.operator} inside {node.operator}",
                    f"cqsens combines a {node.kind} of parts only over "
                    + (", ".join(_ALLOWED[node.kind]) + " parts" if _ALLOWED[node.kind]
                       else "single conjunctive queries")
                    + " (docs/rules.md, rule set-operations)")
        return replace(node, parts=parts)


def build_plan(tree: exp.Expr, reject: Reject, dialect: str | None,
               schema: Schema | None, public: Set[str] = frozenset(),
               owner: OwnerKey | None = None) -> Plan:
    """The plan of a parsed statement: the passes applied until none applies.

    Parameters
    ----------
    tree : sqlglot expression
        The parsed statement (not changed).
    reject : callable
        Builds the error for a construct that cannot be read.
    dialect : str, optional
        The statement's dialect, for the SQL of the parts.
    schema : Schema, optional
        Tells which table an unqualified column belongs to.
    public, owner : optional
        The public tables and, with a privacy unit, the owner keys: semi-join atoms over
        them add no part (rule semi-join-flips).

    Returns
    -------
    Plan
        ``Leaf(tree, root=True)`` when no pass applies, else a :class:`Combine`.
    """
    if has_listed_star(tree):  # before every other pass (a copy: ``tree`` is not changed)
        tree = expand_stars(tree.copy(), reject, schema)
    builder = _Builder(Context(reject, dialect, schema, public, owner))
    return builder.expand(Leaf(tree, root=True))  # a rewritten root leaf is not root


def leaves(plan: Plan) -> list[Leaf]:
    """The leaves of ``plan``, left to right."""
    if isinstance(plan, Leaf):
        return [plan]
    return [leaf for part in plan.parts for leaf in leaves(part)]


def render(plan: Plan, dialect: str | None = None, indent: int = 0, name: str = "") -> str:
    """A stable, readable text of the plan tree: node kinds and each leaf's SQL."""
    pad = "  " * indent
    label = f"{name}: " if name else ""
    if isinstance(plan, Leaf):
        flags = " [distinct]" if plan.distinct else ""
        return f"{pad}{label}leaf{flags}: {plan.tree.sql(dialect=dialect)}\n"
    out = f"{pad}{label}{plan.kind} {plan.operator} [{plan.rule}]\n"
    for i, part in enumerate(plan.parts):
        part_name = plan.names[i] if i < len(plan.names) else f"part {i + 1}"
        out += render(part, dialect, indent + 1, part_name)
    return out
