"""cqsens's own upper bound: the sensitivity answer ``sensitivity.upper``.

Adding one tuple ``t`` to a database of C_Σ creates new answers only through
homomorphisms of the core that send some atom ``ā`` (of t's relation) onto
``t`` (a homomorphism avoiding t already gives the answer before).  So the
number of new answers is at most, summed over the atoms of one relation,
the number of values the free variables can take once ``ā``'s elements are
fixed to ``t`` — and removing a tuple is the same move backwards (the classes
are closed under removing tuples).  Per atom this is bounded by

* 1 when the atom holds every free variable (and atoms with the same
  positions of the free variables give the *same* answer, so each position
  pattern counts once — the corrected Prop 7, docs/rules.md, rule delta-str-self-join);
* the product over free variables of the least walk cardinality from the
  atom's elements **or any constant** (docs/rules.md, rule walks-from-constants);
* the product of the weights of a tree of steps reaching every free variable
  (joint assignments, docs/rules.md, rule joint-assignment-tree).

The query is first chased with the FDs of Σ (valid on C_Σ) and reduced to its
core; a Boolean query's count is 0 or 1 (docs/rules.md, rule boolean-query); ⊥ gives 0
(rule unsatisfiable-query).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum

from cqsens.budget import checkpoint
from cqsens.engine.derivation import Hyperedge, cheapest_derivation, hyperedges
from cqsens.engine.ordered_pairs import ordered_pair
from cqsens.engine.paths import (
    Route,
    Step,
    Weight,
    arborescence_bound,
    hyper_cardinalities,
    least_cardinalities,
    step_graph,
)
from cqsens.ir.cq import CQ, Atom, Term, Var, position_classes
from cqsens.ir.dependencies import Sigma
from cqsens.ir.schema import ForeignKey

__all__ = [
    "AtomBound", "Extension", "Method", "References", "RelationBound", "UpperBound",
    "explaining_steps", "extension_bound", "referencing_atom", "upper_bound",
]


class Method(Enum):
    """Which argument gives an atom's bound."""

    HOLDS_FREE = "holds every free variable"
    JOINT_TREE = "joint tree of steps"
    WALKS = "per-variable walks"
    UNBOUNDED = "unbounded"
    SAME_ANSWER = "same answer as an atom above"
    REFERENCED = "joined to a row that references it (foreign key)"


@dataclass(frozen=True, slots=True)
class AtomBound:
    """How many new answers one atom can produce when it plays the added tuple."""

    atom: Atom
    value: Weight
    method: Method
    routes: tuple[tuple[Var, Route | None], ...] = ()
    product: Weight = math.inf
    tree: Weight = math.inf
    tree_steps: tuple[Step, ...] = ()
    pattern: tuple[int, ...] | None = None
    counted: bool = True
    reference: str = ""  # the foreign key that makes the atom's bound 0 (REFERENCED)

    @property
    def unreachable(self) -> tuple[Var, ...]:
        """Free variables no finite walk reaches from the atom or a constant."""
        return tuple(v for v, r in self.routes if r is None)


def explaining_steps(bound: AtomBound) -> tuple[Step, ...]:
    """The steps behind an atom's bound, without repetition: the joint tree when it
    gave the bound, else the union of the per-variable walks (none when unbounded).

    This one rule serves the explanation, the drawing and the witness's product
    construction, so all three follow the same steps.
    """
    if bound.value == math.inf or bound.method in (
            Method.HOLDS_FREE, Method.UNBOUNDED, Method.REFERENCED):
        return ()
    if bound.method is Method.JOINT_TREE:
        return bound.tree_steps
    return tuple(dict.fromkeys(
        step for _, route in bound.routes if route is not None for step in route.steps))


@dataclass(frozen=True, slots=True)
class RelationBound:
    """The sum over one relation's atoms (one added tuple of that relation)."""

    relation: str
    atoms: tuple[AtomBound, ...]
    total: Weight
    shared: int = 0  # answers counted by several atoms, taken off (rule new-answers)
    ordered: str = ""  # the filter the pair (t, t) fails (rule ordered-self-join)
    swapped: bool = False  # the filter is a strict order the swap of the two atoms reverses


@dataclass(frozen=True, slots=True)
class UpperBound:
    """``value`` = max over relations of their totals; ``relations`` explain it."""

    value: Weight
    relations: tuple[RelationBound, ...]
    boolean_cap: bool = False


def _pattern(atom: Atom, free: tuple[Var, ...]) -> tuple[int, ...] | None:
    first: dict[Term, int] = {}
    for p, t in enumerate(atom.terms):
        first.setdefault(t, p)
    if not all(v in first for v in free):
        return None
    return tuple(first[v] for v in free)


def _distinct_answers(full: list[AtomBound], free: tuple[Var, ...]) -> set[Atom]:
    """Atoms holding every free variable, as many as the most answers one tuple gives.

    One added tuple t matches a set S of these atoms that unify (position
    classes); each gives the single answer read off t at its positions of the
    free variables, and two give the same answer when those positions fall in
    the same classes.  The count is the maximum over unifiable S (exhaustive up
    to 12 atoms; beyond, every distinct position pattern counts once).
    """
    if len(full) > 12:
        seen: dict[tuple[int, ...], Atom] = {}
        for b in full:
            assert b.pattern is not None
            seen.setdefault(b.pattern, b.atom)
        return set(seen.values())
    best: set[Atom] = set()
    for size in range(len(full), 0, -1):
        if size <= len(best):
            break
        for combo in itertools.combinations(full, size):
            unified = position_classes([b.atom for b in combo])
            if unified is None:
                continue
            classes, _ = unified
            answers: dict[tuple[int, ...], Atom] = {}
            for b in combo:
                key = tuple(classes[b.atom.terms.index(v)] for v in free)
                answers.setdefault(key, b.atom)
            if len(answers) > len(best):
                best = set(answers.values())
    return best


@dataclass(frozen=True, slots=True)
class Extension:
    """How many values the free variables take once some elements are fixed.

    ``routes`` are the least walks to each free variable and ``product`` their
    product; ``tree`` is the joint tree of steps (or Knuth's derivation under
    composite dependencies) with its ``steps``; ``value`` the smaller of the two.
    """

    routes: tuple[tuple[Var, Route | None], ...]
    product: Weight
    tree: Weight
    steps: tuple[Step, ...]

    @property
    def value(self) -> Weight:
        """The bound: the smaller of the tree and the per-variable product."""
        return min(self.tree, self.product)


def extension_bound(cq: CQ, sigma: Sigma, fixed: Sequence[Term],
                    graph: dict[Term, dict[Term, Step]] | None = None, *,
                    trees: bool = True, edges: Sequence[Hyperedge] | None = None) -> Extension:
    """Bound the assignments of the free variables of ``cq`` once ``fixed`` (and the
    constants) are fixed: walks from them, trees of steps and the cheapest derivation
    (docs/rules.md, rules walks-from-constants, joint-assignment-tree and
    cheapest-derivation); ``edges`` are Σ's hyperedges in ``cq`` when already built."""
    if graph is None:
        graph = step_graph(cq, sigma)
    free = cq.free
    constants = sorted(cq.constants(), key=lambda c: c.sort_key())
    sources = list(dict.fromkeys([*fixed, *constants]))
    reach = (hyper_cardinalities(cq, sigma, graph, sources) if sigma.multi
             else least_cardinalities(graph, sources))
    routes = tuple((v, reach.get(v)) for v in free)
    product: Weight = 1
    for _, route in routes:
        product = product * (route.cardinality if route is not None else math.inf)
    if not trees:
        return Extension(routes, product, math.inf, ())
    tree, steps = arborescence_bound(graph, sources, free)
    if sigma.multi and product < math.inf:
        # Knuth's derivation gives each reached element one step: fixing the atom and
        # firing the steps in order, the joint values number at most their product
        derivation = tuple(dict.fromkeys(
            step for _, route in routes if route is not None for step in route.steps))
        joint: Weight = 1
        for step in derivation:
            joint = joint * step.weight
        if joint < tree:
            tree, steps = joint, derivation
    if len(free) > 1 or sigma.rows:
        # the cheapest joint derivation over the hyperedges of Σ (docs/rules.md, rule
        # cheapest-derivation): pay for one element, follow keys and FDs for free
        cheaper = cheapest_derivation(hyperedges(cq, sigma) if edges is None else edges,
                                      sources, free, ceiling=min(tree, product))
        if cheaper is not None:
            tree, steps = cheaper.cost, cheaper.steps
    return Extension(routes, product, tree, steps)


def atom_bound(cq: CQ, sigma: Sigma, atom: Atom, graph: dict[Term, dict[Term, Step]],
               edges: Sequence[Hyperedge] | None = None) -> AtomBound:
    """Bound the new answers when ``atom`` is sent onto the added tuple."""
    pattern = _pattern(atom, cq.free)
    if pattern is not None:
        ext = extension_bound(cq, sigma, atom.terms, graph, trees=False)
        return AtomBound(atom, 1, Method.HOLDS_FREE, ext.routes, ext.product, 1, (), pattern)
    ext = extension_bound(cq, sigma, atom.terms, graph, edges=edges)
    if ext.tree < ext.product:
        return AtomBound(atom, ext.tree, Method.JOINT_TREE, ext.routes, ext.product, ext.tree,
                         ext.steps, None)
    method = Method.WALKS if ext.product < math.inf else Method.UNBOUNDED
    return AtomBound(atom, ext.product, method, ext.routes, ext.product, ext.tree, ext.steps,
                     None)


References = tuple[tuple[str, ForeignKey, str], ...]
"""Foreign keys as (referencing relation, key, how it reads), relations spelled as in Σ."""


def referencing_atom(cq: CQ, atom: Atom, references: References) -> tuple[Atom, str] | None:
    """An atom of another relation joined to ``atom`` on a foreign key into ``atom``'s
    relation, with the key's text; None when there is none.

    Under add/remove such an atom never lets ``atom`` play the added row t: the
    referencing row would be in both databases, so the smaller one would hold a
    referenced row with t's key beside t (docs/rules.md, rule foreign-keys).
    """
    for relation, fk, text in references:
        if fk.table != atom.relation or relation == atom.relation:
            continue
        if max(fk.referenced) >= atom.arity:
            continue
        key = tuple(atom.terms[p] for p in fk.referenced)
        for other in cq.relation_atoms():
            if other.relation == relation and max(fk.columns) < other.arity \
                    and tuple(other.terms[c] for c in fk.columns) == key:
                return other, text
    return None


def _one_shared_answer(cq: CQ, relation: str, bounds: Sequence[AtomBound]) -> bool:
    """Whether one answer is counted by every atom of ``bounds``, whatever the tuple t.

    True when the query is nothing but two or more atoms of ``relation``, all counted
    with a finite bound of at least 1, with no constant, no filter and every variable
    at one position only: the homomorphism sending every atom onto t then exists in
    any database holding t, and its answer is among those each atom's bound counts
    (docs/rules.md, rule new-answers).
    """
    atoms = cq.relation_atoms()
    if len(bounds) < 2 or len(atoms) != len(cq.atoms) or len(bounds) != len(atoms):
        return False
    if any(a.relation != relation for a in atoms) or any(
            not b.counted or b.value == math.inf or b.value < 1 for b in bounds):
        return False
    position: dict[Term, int] = {}
    for atom in atoms:
        for p, term in enumerate(atom.terms):
            if not isinstance(term, Var) or position.setdefault(term, p) != p:
                return False
    return True


def upper_bound(cq: CQ, sigma: Sigma, *, public: frozenset[str] = frozenset(),
                references: References = ()) -> UpperBound:
    """The sound upper bound on the add/remove-one sensitivity of ``#cq`` on C_Σ.

    Parameters
    ----------
    cq : CQ
        The query, already chased with the FDs of ``sigma`` and reduced to its core
        (the bound is sound on any equivalent query; these steps make it tighter).
    sigma : Sigma
        Functional and cardinality dependencies.

    public : frozenset of str
        Public tables: their rows are never the added or removed row, so their
        atoms do not play t (docs/rules.md, rule public-tables).
    references : tuple
        Foreign keys, for add/remove neighbours that both keep them: an atom
        joined on a foreign key to an atom of the referencing relation gives 0
        (docs/rules.md, rule foreign-keys).  Not for substitution.

    Returns
    -------
    UpperBound

    Notes
    -----
    Polynomial: one Dijkstra and one Edmonds arborescence per atom.  Departs
    from the paper where the paper is wrong or loose: self-joins, Boolean
    queries, walks from constants, joint trees (each in docs/rules.md).

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> upper_bound(parse_cq("Q(x) :- R(x, y), R(y, x)"), Sigma.of()).value
    2
    >>> upper_bound(parse_cq("Q() :- R(x), S(y)"), Sigma.of()).value
    1
    """
    if not cq.satisfiable:
        return UpperBound(0, ())
    graph = step_graph(cq, sigma)
    edges = hyperedges(cq, sigma)
    by_relation: dict[str, list[AtomBound]] = {}
    for atom in cq.relation_atoms():
        checkpoint("upper bound")
        if atom.relation in public:
            continue  # a public table's rows are the same in both neighbours
        referenced = referencing_atom(cq, atom, references) if references else None
        if referenced is not None:
            by_relation.setdefault(atom.relation, []).append(AtomBound(
                atom, 0, Method.REFERENCED, reference=f"{referenced[0]} ({referenced[1]})"))
            continue
        by_relation.setdefault(atom.relation, []).append(
            atom_bound(cq, sigma, atom, graph, edges))
    relations: list[RelationBound] = []
    for relation, bounds in sorted(by_relation.items()):
        full = [b for b in bounds if b.pattern is not None]
        counted = _distinct_answers(full, cq.free)
        marked: list[AtomBound] = []
        total: Weight = 0
        for b in bounds:
            if b.pattern is not None and b.atom not in counted:
                marked.append(replace(b, method=Method.SAME_ANSWER, counted=False))
                continue
            marked.append(b)
            total = total + b.value
        shared = len(marked) - 1 if _one_shared_answer(cq, relation, marked) else 0
        pair = ordered_pair(cq, relation, [(b.atom, b.value) for b in marked]) \
            if all(b.counted for b in marked) else None
        if pair is not None and pair.total < total - shared:
            relations.append(RelationBound(relation, tuple(marked), pair.total, pair.fixed,
                                           pair.filter, pair.swapped))
            continue
        relations.append(RelationBound(relation, tuple(marked), total - shared, shared))
    value: Weight = max((r.total for r in relations), default=0)
    capped = False
    if cq.is_boolean and value > 1:
        value, capped = 1, True
    return UpperBound(value, tuple(relations), capped)
