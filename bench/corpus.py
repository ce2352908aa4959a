"""Seeded random corpora of (query, Σ) pairs, shared by the benchmark scripts."""

from __future__ import annotations

import random

from cqsens.ir.cq import CQ, Atom, Const, Term, Var
from cqsens.ir.dependencies import Dependency, Sigma

ARITIES = {"R": 2, "S": 2, "T": 1, "U": 3, "V": 2}


def random_cq(rng: random.Random, *, max_atoms: int = 5, n_vars: int = 5) -> CQ:
    """A random safe CQ with self-joins, constants and 0-3 free variables."""
    variables = [Var(f"x{i}") for i in range(n_vars)]
    atoms: list[Atom] = []
    for _ in range(rng.randint(1, max_atoms)):
        rel = rng.choice(sorted(ARITIES))
        terms: list[Term] = [
            Const(rng.choice(["a", "b", 7])) if rng.random() < 0.1 else rng.choice(variables)
            for _ in range(ARITIES[rel])
        ]
        atoms.append(Atom(rel, tuple(terms)))
    body = sorted({v for a in atoms for v in a.variables()})
    head = rng.sample(body, k=min(len(body), rng.randint(0, 3))) if body else []
    return CQ.of(head, atoms)


def random_sigma(rng: random.Random, cq: CQ, *, density: float = 0.35, max_k: int = 3) -> Sigma:
    """Random FDs (k = 1) and CDs over the query's relations."""
    deps = []
    for rel, arity in sorted(cq.relations().items()):
        for i in range(arity):
            for j in range(arity):
                if i != j and rng.random() < density:
                    deps.append(Dependency(rel, i, j, rng.randint(1, max_k)))
    return Sigma.of(deps)


def corpus(n: int, *, seed: int = 2016) -> list[tuple[CQ, Sigma]]:
    """``n`` seeded (query, Σ) pairs."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        cq = random_cq(rng)
        out.append((cq, random_sigma(rng, cq)))
    return out
