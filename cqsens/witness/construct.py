"""Canonical-database constructions for witnesses, over labelled nulls.

A :class:`Structure` is a database whose elements are labelled nulls (ints)
or the query's constants, with one row playing t.  :func:`build` glues
copies of the core along the atoms that play t, :func:`repair` merges values
until every dependency of Σ holds, and the remaining helpers choose what to
glue: the atoms that can play t together, the number of copies, and the trees
of steps behind an upper bound that guide a product construction.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cqsens.engine.upper import UpperBound, explaining_steps
from cqsens.ir.cq import CQ, Atom, Const, Term, Var, position_classes, unit_classes, with_atom
from cqsens.ir.dependencies import Sigma

__all__ = [
    "MAX_ROWS",
    "Element",
    "Row",
    "Structure",
    "Tree",
    "bound_trees",
    "build",
    "capped",
    "copy_counts",
    "determined",
    "group_sizes",
    "pattern_for",
    "player_sets",
    "repair",
    "substituted",
]

Element = int | Const  # a labelled null (an int) or a constant
Row = tuple[Element, ...]
Tree = dict[Var, tuple[Term, int]]  # child variable → (parent term, number of values)
MAX_ROWS = 40_000  # the largest database a construction builds


@dataclass
class Structure:
    """Rows of labelled nulls and constants per relation, with the row t."""

    rows: dict[str, dict[Row, None]] = field(default_factory=dict)  # ordered sets
    t: tuple[str, Row] | None = None
    copied: set[int] = field(default_factory=set)  # nulls that are fresh per copy
    origin: dict[int, Var] = field(default_factory=dict)  # the variable a null copies
    next_null: int = 0

    def fresh(self) -> int:
        """A new labelled null."""
        self.next_null += 1
        return self.next_null

    def add(self, relation: str, row: Row) -> None:
        """Add a row (a set: a row already there is kept once)."""
        self.rows.setdefault(relation, {})[row] = None


def pattern_for(atoms: Sequence[Atom]) -> tuple[list[int], dict[int, Const]] | None:
    """The position classes of atoms sent onto one row, or None if they cannot be."""
    return position_classes(atoms)


def determined(core_cq: CQ, sigma: Sigma | None, player: Atom) -> set[Var]:
    """Variables the FDs fix once the player's elements and the constants are fixed."""
    if sigma is None:
        return set()
    fds = {(r, i, j) for (r, i, j), k in sigma.weights().items() if k == 1}
    known: set[Term] = set(player.terms) | set(core_cq.constants())
    changed = True
    while changed:
        changed = False
        for atom in core_cq.relation_atoms():
            for (r, i, j) in fds:
                if r == atom.relation and atom.terms[i] in known and atom.terms[j] not in known:
                    known.add(atom.terms[j])
                    changed = True
    return {t for t in known if isinstance(t, Var) and t not in player.terms}


def build(
    core_cq: CQ,
    relation: str,
    players: Sequence[Atom],
    copies: int,
    trees: Sequence[Tree | None] | None = None,
    sigma: Sigma | None = None,
) -> Structure | None:
    """Glue copies of the core per player atom, every player sent onto t.

    Without a tree, ``copies`` copies with every other variable fresh.  With a
    tree of steps for a player (the one behind its upper bound), a *product*
    construction: one copy per choice of a value index on every tree edge,
    and a tree variable's value depends only on the indices along its path
    from the root, so siblings share their ancestors' values as the bound
    assumes.
    """
    unified = pattern_for(players)
    if unified is None:
        return None
    classes, consts = unified
    s = Structure()
    t = _glued_row(s, players[0], classes, consts)
    s.t = (relation, t)
    for number, player in enumerate(players):
        tree = trees[number] if trees is not None else None
        shared = determined(core_cq, sigma, player)  # one value in every copy (FDs force it)
        _add_copies(s, core_cq, number, player, t, copies, tree, shared)
    return s


def _glued_row(s: Structure, first: Atom, classes: list[int], consts: dict[int, Const]) -> Row:
    """The row t: one element per position class, a constant where the class has one."""
    class_value: dict[int, Element] = {}
    for p, root in enumerate(classes):
        if root not in class_value:
            value: Element = consts[root] if root in consts else s.fresh()
            class_value[root] = value
            term = first.terms[p]
            if isinstance(term, Var) and isinstance(value, int):
                s.origin[value] = term
    return tuple(class_value[root] for root in classes)


def _add_copies(
    s: Structure,
    core_cq: CQ,
    number: int,
    player: Atom,
    t: Row,
    copies: int,
    tree: Tree | None,
    shared: set[Var],
) -> None:
    """Add the copies of the core for one player (number ``number``), sent onto t."""
    edges = sorted(tree.items(), key=lambda kv: kv[0].name) if tree else []
    position = {child: k for k, (child, _) in enumerate(edges)}
    if edges:
        indices = list(itertools.product(*(range(w) for _, (_, w) in edges)))
    else:
        indices = [(c,) for c in range(copies)]
    atoms = core_cq.relation_atoms()
    keyed: dict[tuple[object, ...], int] = {}
    # the variables each copy gives a null, in the order of their first use, with what
    # their key reads (the same for every copy): "shared", their path of edges, or the index
    placed = {term for term in player.terms if isinstance(term, Var)}
    order: list[tuple[Var, list[int] | None, bool]] = []
    for atom in atoms:
        for term in atom.terms:
            if isinstance(term, Var) and term not in placed:
                placed.add(term)
                if term in shared:
                    order.append((term, None, True))
                elif tree and term in position:
                    order.append((term, _path(term, tree, position), False))
                else:
                    order.append((term, None, False))
    for index in indices:
        mapping: dict[Var, Element] = {}
        for p, term in enumerate(player.terms):
            if isinstance(term, Var):
                mapping[term] = t[p]
        for term, path, is_shared in order:
            key: tuple[object, ...] = (number, term, "shared") if is_shared else \
                (number, term, index) if path is None else \
                (number, term, tuple(index[k] for k in path))
            mapping[term] = _null_for(s, keyed, key, term, shared)
        for atom in atoms:
            s.add(atom.relation, tuple(term if isinstance(term, Const) else mapping[term]
                                       for term in atom.terms))


def _path(v: Var, tree: Tree, position: dict[Var, int]) -> list[int]:
    """The edge numbers from ``v`` up to the root of its tree."""
    out: list[int] = []
    while v in tree:
        out.append(position[v])
        parent = tree[v][0]
        if not isinstance(parent, Var):
            break
        v = parent
    return out


def _null_for(
    s: Structure, keyed: dict[tuple[object, ...], int], key: tuple[object, ...],
    term: Var, shared: set[Var],
) -> int:
    """The null standing for ``key``, made on first use."""
    if key not in keyed:
        null = s.fresh()
        keyed[key] = null
        if term not in shared:
            s.copied.add(null)
        s.origin[null] = term
    return keyed[key]


def repair(s: Structure, sigma: Sigma) -> tuple[Structure, int] | None:
    """Merge values until every dependency holds; returns (structure, merges) or None.

    For an FD this is the chase; for a CD ``R[i->j]<=k`` the values beyond the
    k-th in a group are merged into the first k.  None when two constants
    would have to be merged.
    """
    parent: dict[Element, Element] = {}

    def find(e: Element) -> Element:
        while e in parent:
            e = parent[e]
        return e

    merges = 0
    weights = sigma.weights()
    while True:
        violation = False
        for (rel, i, j), k in sorted(weights.items()):
            groups: dict[Element, list[Element]] = {}
            for row in s.rows.get(rel, {}):
                key, value = find(row[i]), find(row[j])
                values = groups.setdefault(key, [])
                if value not in values:
                    values.append(value)
            for values in groups.values():
                if len(values) <= k:
                    continue
                kept, extra = values[:k], values[k:]
                for n, e in enumerate(extra):
                    target = kept[n % k]
                    if isinstance(e, Const) and isinstance(target, Const):
                        nulls = [x for x in kept if not isinstance(x, Const)]
                        if not nulls:
                            return None
                        target = nulls[0]
                    a, b = find(e), find(target)
                    if a == b:
                        continue
                    if isinstance(a, Const) and isinstance(b, Const):
                        return None
                    if isinstance(a, Const):
                        a, b = b, a
                    parent[a] = b  # a is a null
                    merges += 1
                violation = True
            if violation:
                break  # apply this dependency's merges, then look again
        if not violation:
            break
        s = substituted(s, find)
        parent = {}
    return s, merges


def substituted(s: Structure, find: Callable[[Element], Element]) -> Structure:
    """The structure with every element ``e`` replaced by ``find(e)``."""
    out = Structure(next_null=s.next_null)
    for rel, rows in s.rows.items():
        for row in rows:
            out.add(rel, tuple(find(e) for e in row))
    assert s.t is not None
    out.t = (s.t[0], tuple(find(e) for e in s.t[1]))
    out.copied = {e for e in (find(x) for x in s.copied) if isinstance(e, int)}
    for null, var in s.origin.items():
        rep = find(null)
        if isinstance(rep, int):
            out.origin.setdefault(rep, var)
    return out


def bound_trees(bound: UpperBound | None) -> dict[Atom, Tree]:
    """Per atom, the tree of steps behind its bound (child → parent, weight)."""
    out: dict[Atom, Tree] = {}
    if bound is None:
        return out
    for rel in bound.relations:
        for ab in rel.atoms:
            steps = explaining_steps(ab)
            if not steps:
                continue
            tree: Tree = {}
            for step in steps:
                if isinstance(step.target, Var) and step.target not in tree:
                    tree[step.target] = (step.source, int(step.weight))
            out[ab.atom] = tree
    return out


def capped(tree: Tree, cap: int) -> Tree:
    """The tree with weights lowered so the product of choices stays under ``cap``."""
    out: Tree = {}
    total = 1
    for child in sorted(tree, key=lambda v: v.name):
        parent, w = tree[child]
        w = max(1, min(w, cap // total))
        out[child] = (parent, w)
        total *= w
    return out


def copy_counts(upper: float) -> list[int]:
    """Copies to glue: powers of 2 for a growth family; more divisors for a finite target."""
    if upper == math.inf:
        return [1, 2, 4, 8, 16, 32, 64]
    base = [1, 2, 3, 4, 6, 8, 9, 12, 16, 27, 32, 64]
    if upper <= 256:
        base.append(int(upper))
    return sorted({n for n in base if n <= max(upper, 1)})


def player_sets(core_cq: CQ, relation: str) -> list[list[Atom]]:
    """The atoms of ``relation`` that can play t: each alone, and greedy groups that unify.

    A group's position classes grow one atom at a time, so building every greedy
    group costs O(n² · arity) for n atoms of the relation.
    """
    atoms = [a for a in core_cq.relation_atoms() if a.relation == relation]
    out: list[list[Atom]] = [[a] for a in atoms]
    if len(atoms) > 1:
        seen: set[tuple[Atom, ...]] = set()
        empty = unit_classes(atoms[0].arity)
        for anchor in atoms:
            group = [anchor]
            classes = with_atom(empty, anchor)
            assert classes is not None  # an atom alone always unifies with itself
            for other in atoms:
                if other is anchor:
                    continue
                grown = with_atom(classes, other)
                if grown is not None:
                    group.append(other)
                    classes = grown
            if len(group) > 1 and tuple(group) not in seen:
                seen.add(tuple(group))
                out.append(group)
    return out


def group_sizes(s: Structure, sigma: Sigma) -> dict[tuple[str, int, int, Element], int]:
    """Per dependency ``R[i->j]`` and uncopied key value, the number of j-values."""
    out: dict[tuple[str, int, int, Element], int] = {}
    for (rel, i, j), _k in sigma.weights().items():
        groups: dict[Element, set[Element]] = {}
        for row in s.rows.get(rel, {}):
            groups.setdefault(row[i], set()).add(row[j])
        for key, values in groups.items():
            if not isinstance(key, int) or key not in s.copied:
                out[(rel, i, j, key)] = len(values)
    return out
