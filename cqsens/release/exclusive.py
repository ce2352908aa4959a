"""Mutually exclusive CASE columns: ``SUM(CASE WHEN c = 'a' THEN x ELSE 0 END)``, ``… c = 'b' …``.

Several SUMs (or COUNTs of a CASE without ELSE, each a SUM of 0 or 1) of one
SELECT list whose CASE conditions cannot hold on the same row (equalities or IN
lists on one term with disjoint constants) split each row's value among them: a
row adds to one of them at most.  One added or
removed row then moves the vector of these SUMs by the value of one branch, so
the group is bounded like one SUM over the union of the branches' ranges, not
like the sum of the columns (docs/rules.md, rule exclusive-cases).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from cqsens.engine.rules import Rule
from cqsens.ir.cq import CQ, Aggregate, Term
from cqsens.ir.exact import Exact, exact, mul, sqrt_upper
from cqsens.ir.expr import And, Case, Compare, Expr, InList, Kind, Literal, Or, Predicate, Slot
from cqsens.release.aggregates import AggregateBound, derived

__all__ = ["ExclusiveSum", "exclusive_groups", "merge_exclusive"]

_Key = tuple[str, object]


@dataclass(frozen=True, slots=True)
class _Pin:
    """What a condition says of one term: it equals one of ``keys`` (``positive``), or
    it differs from every literal of ``raw`` (not ``positive``).

    ``keys`` are collation-proof comparison keys (None when a literal has none);
    ``raw`` are the literals as written, ``(kind, value)``: ``c = L`` and ``c <> L``
    with the same literal ``L`` never hold together, whatever the collation.
    """

    positive: bool
    keys: frozenset[_Key] | None
    raw: frozenset[tuple[str, object]]


_Support = dict[Term, _Pin]


def _raw(node: Expr) -> tuple[str, object] | None:
    if not isinstance(node, Literal) or node.kind is Kind.NULL or isinstance(node.value, bool):
        return None
    return node.kind.value, node.value


def _pin(items: Sequence[Expr], positive: bool) -> _Pin | None:
    raw = [_raw(item) for item in items]
    if not raw or any(r is None for r in raw):
        return None
    return _Pin(positive, _keys(items) if positive else None,
                frozenset(r for r in raw if r is not None))


@dataclass(frozen=True, slots=True)
class ExclusiveSum:
    """One SUM of the SELECT list as the rule sees it.

    Parameters
    ----------
    aggregate : Aggregate
        The aggregate (only ``sum`` or ``count`` over a CASE expression can join a group).
    cq : CQ
        The query whose rows it sums (``AggregateQuery.cq_for``).
    bound : AggregateBound
        Its own bound (kept when it is in no group).
    delta : int, Fraction or float
        The count bound Δ its bound used.
    low, high : int, Fraction or float
        The range of the summed expression, 0 and 1 for a count (None when it has none).
    """

    aggregate: Aggregate
    cq: CQ
    bound: AggregateBound
    delta: Exact
    low: Exact | None
    high: Exact | None


def _key(node: Expr) -> _Key | None:
    """A constant as a comparison key; None when no collation-proof key is known.

    Numbers compare by exact value; a text without digits compares case-, accent-
    and trailing-space-insensitively (so no collation makes two different keys
    equal); a text with digits may equal a number or a date written otherwise.
    """
    if not isinstance(node, Literal):
        return None
    if node.kind in (Kind.INTEGER, Kind.DECIMAL) and isinstance(node.value, (int, Decimal)) \
            and not isinstance(node.value, bool):
        return ("number", exact(node.value))
    if node.kind is Kind.TEXT and isinstance(node.value, str) \
            and not any(ch.isdigit() for ch in node.value):
        plain = unicodedata.normalize("NFKD", node.value.rstrip(" ")).casefold()
        return ("text", "".join(ch for ch in plain if not unicodedata.combining(ch)))
    return None


def _keys(items: Sequence[Expr]) -> frozenset[_Key] | None:
    found = [_key(item) for item in items]
    if not found or any(k is None for k in found):
        return None
    return frozenset(k for k in found if k is not None)


def _both(a: _Pin, b: _Pin) -> _Pin:
    """What two pins of one term say together (AND)."""
    if a.positive and b.positive:
        keys = a.keys & b.keys if a.keys is not None and b.keys is not None else None
        # a row meeting both equals a literal of each: of the smaller list, say (the
        # lists' common literals would miss a collation that equates two others)
        return _Pin(True, keys, a.raw if len(a.raw) <= len(b.raw) else b.raw)
    if not a.positive and not b.positive:
        return _Pin(False, None, a.raw | b.raw)
    return a if a.positive else b  # equal to one of the keys (and unequal to others)


def _either(pins: Sequence[_Pin]) -> _Pin | None:
    """What pins of one term say when one of them holds (OR); None when not a set."""
    if not all(p.positive for p in pins):
        return None
    keys = None if any(p.keys is None for p in pins) else \
        frozenset().union(*(p.keys for p in pins if p.keys is not None))
    return _Pin(True, keys, frozenset().union(*(p.raw for p in pins)))


def _support(node: Predicate, terms: Sequence[Term]) -> _Support:
    """Term → what it must equal, or differ from, when ``node`` holds (terms it does not
    pin are absent)."""
    if isinstance(node, Compare) and node.op in ("=", "<>", "!="):
        for a, b in ((node.left, node.right), (node.right, node.left)):
            if isinstance(a, Slot) and (pin := _pin((b,), node.op == "=")) is not None:
                return {terms[a.index]: pin}
        return {}
    if isinstance(node, InList) and isinstance(node.operand, Slot):
        pin = _pin(node.items, not node.negated)
        return {} if pin is None else {terms[node.operand.index]: pin}
    if isinstance(node, And):
        out: _Support = {}
        for part in node.parts:
            for term, pin in _support(part, terms).items():
                out[term] = _both(out[term], pin) if term in out else pin
        return out
    if isinstance(node, Or) and node.parts:
        parts = [_support(part, terms) for part in node.parts]
        common = set(parts[0]).intersection(*parts[1:])
        either = {t: _either([p[t] for p in parts]) for t in common}
        return {t: pin for t, pin in either.items() if pin is not None}
    return {}


def _zero(node: Expr | None) -> bool:
    """A branch that adds nothing to a SUM: no ELSE, NULL or the number 0."""
    return node is None or (isinstance(node, Literal) and (
        node.kind is Kind.NULL or (node.kind in (Kind.INTEGER, Kind.DECIMAL)
                                   and not isinstance(node.value, bool) and node.value == 0)))


def _null(node: Expr | None) -> bool:
    """A branch that a COUNT skips: no ELSE, or NULL."""
    return node is None or (isinstance(node, Literal) and node.kind is Kind.NULL)


def support(aggregate: Aggregate) -> _Support | None:
    """What a row must hold for ``aggregate`` (a SUM or a COUNT over a CASE) to add to it.

    A SUM's value is non-zero only through a WHEN whose value is not 0 or NULL, a
    COUNT counts a row only through a WHEN whose value is not NULL, hence only
    when that WHEN's condition holds: the union over those WHENs of what each
    condition pins.  None when the aggregate is not such a SUM or COUNT.

    >>> from cqsens.ir.cq import Var
    >>> e = Case(((Compare("=", Slot(0), Literal("a", Kind.TEXT)), Slot(1)),),
    ...          Literal(0, Kind.INTEGER))
    >>> s = support(Aggregate("sum", "s", expression=e, terms=(Var("c"), Var("x"))))
    >>> s[Var("c")].keys == frozenset({("text", "a")})
    True
    """
    e = aggregate.expression
    adds_nothing = {"sum": _zero, "count": _null}.get(aggregate.kind)
    if adds_nothing is None or not isinstance(e, Case) or not adds_nothing(e.default):
        return None
    live = [condition for condition, value in e.whens if not adds_nothing(value)]
    if not live:
        return None
    return _support(Or(tuple(live)), aggregate.terms) if len(live) > 1 \
        else _support(live[0], aggregate.terms)


def _disjoint(a: _Pin, b: _Pin) -> bool:
    """No value meets both pins: two sets of keys of one kind with no key in common, or a
    set of literals every one of which the other pin excludes as written."""
    if a.positive and b.positive:
        if a.keys is None or b.keys is None or not a.keys or not b.keys:
            return False
        return len({k[0] for k in a.keys | b.keys}) == 1 and not a.keys & b.keys
    if a.positive != b.positive:
        included, excluded = (a, b) if a.positive else (b, a)
        return bool(included.raw) and included.raw <= excluded.raw
    return False


def _exclusive(a: _Support, b: _Support) -> bool:
    """Some term is pinned by both, and no value meets both pins."""
    return any(term in b and _disjoint(pin, b[term]) for term, pin in a.items())


def exclusive_groups(sums: Sequence[ExclusiveSum]) -> list[list[int]]:
    """Groups (of two or more indices) of pairwise exclusive SUMs over the same rows.

    Greedy: each SUM joins the first group it is exclusive with, member by member.
    Any partition into pairwise exclusive groups is sound.
    """
    groups: list[list[int]] = []
    supports = [support(s.aggregate) for s in sums]
    for i, s in enumerate(sums):
        mine = supports[i]
        if mine is None or s.low is None or s.high is None:
            continue
        for group in groups:
            if sums[group[0]].cq == s.cq and all(
                    _exclusive(mine, theirs) for j in group
                    if (theirs := supports[j]) is not None):
                group.append(i)
                break
        else:
            groups.append([i])
    return [g for g in groups if len(g) > 1]


def _magnitude(s: ExclusiveSum) -> Exact:
    low, high = s.low, s.high
    assert low is not None and high is not None
    if low > high:
        return 0
    return high if high >= -low else -low


def group_bound(members: Sequence[ExclusiveSum], *, neighbor: str, contributions: int) \
        -> AggregateBound:
    """The bound of a group of exclusive SUMs released together.

    Each joined row adds to one member at most, by at most ``M`` (the largest
    magnitude of the members' ranges): one tuple adds or removes at most ``kΔ``
    rows, so ``ℓ1, ℓ2 ≤ kΔ·M``; a substitution removes and adds at most ``kΔ`` rows
    each: ``2kΔ·M``.  Each norm is also at most what the members' own bounds give
    together, and the smaller is kept.
    """
    delta: Exact = max(m.delta for m in members)
    magnitude: Exact = max(_magnitude(m) for m in members)
    rows = mul(contributions, delta)
    value = mul(rows, magnitude) if neighbor == "add-remove" else mul(2 * rows, magnitude)
    separate_l1: Exact = 0
    squares: Exact = 0
    for m in members:
        separate_l1 = separate_l1 + m.bound.l1
        squares = squares + mul(m.bound.l2, m.bound.l2)
    l1 = min(value, separate_l1)
    l2 = min(value, sqrt_upper(squares))
    labels = "; ".join(m.aggregate.label for m in members)
    return derived(l1, l2, neighbor, Rule.EXCLUSIVE_CASES, contributions,
                   tuple(m.bound.derivation for m in members), aggregates=len(members),
                   delta=delta, magnitude=magnitude, columns=labels, separate=separate_l1)


def merge_exclusive(sums: Sequence[ExclusiveSum], *, neighbor: str, contributions: int) \
        -> list[AggregateBound]:
    """The bounds to release together: each exclusive group as one bound, the others as they are.

    Examples
    --------
    >>> from cqsens.ir.cq import Atom, Var
    >>> from cqsens.release.aggregates import sum_bound
    >>> c, x = Var("c"), Var("x")
    >>> q = CQ((c, x), (Atom("t", (c, x)),))
    >>> def col(v):
    ...     e = Case(((Compare("=", Slot(0), Literal(v, Kind.TEXT)), Slot(1)),),
    ...              Literal(0, Kind.INTEGER))
    ...     return ExclusiveSum(Aggregate("sum", v, expression=e, terms=(c, x)), q,
    ...                         sum_bound(1, 0, 7), 1, 0, 7)
    >>> [b.l1 for b in merge_exclusive([col("a"), col("b"), col("c")],
    ...                                neighbor="add-remove", contributions=1)]
    [7]
    """
    first: dict[int, list[int]] = {g[0]: g for g in exclusive_groups(sums)}
    grouped = {i for g in first.values() for i in g}
    out: list[AggregateBound] = []
    for i, s in enumerate(sums):
        if i in first:
            out.append(group_bound([sums[j] for j in first[i]], neighbor=neighbor,
                                   contributions=contributions))
        elif i not in grouped:
            out.append(s.bound)
    return out
