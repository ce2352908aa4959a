"""Two copies of one table ordered by a strict filter: rule ordered-self-join, by brute force.

``SELECT COUNT(*) FROM pd a JOIN pd b ON a.pat = b.pat WHERE a.doc < b.doc`` with at
most 3 doctors per patient changes by at most 2 (the added row pairs once with each
other doctor of its patient), not 6 (3 per atom).  Random small databases (a keyed
table, a keyless bag with NULLs, a table of patients) are built in SQLite and every
one-row neighbour (add-remove and substitution) is evaluated with the statement itself
(docs/rules.md, rule ordered-self-join).
"""

from __future__ import annotations

import functools
import itertools

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import cqsens
from cqsens.engine.count import count_bound
from cqsens.engine.rules import Rule
from cqsens.ir.cq import CQ, Atom, Const, Term, Var
from cqsens.ir.dependencies import Dependency, Sigma
from cqsens.ir.expr import Compare, Slot
from cqsens.pipeline import Analysis
from tests.conftest import scaled_examples
from tests.oracle import Rows, local_sensitivity, sql_sensitivity
from tests.strategies import ARITIES, COLUMNS
from tests.strategies import databases as cq_databases

DDL = """
CREATE TABLE pd (pat INTEGER NOT NULL, doc INTEGER NOT NULL CHECK (doc BETWEEN 0 AND 3),
                 PRIMARY KEY (pat, doc));
CREATE TABLE pb (pat INTEGER, doc INTEGER CHECK (doc BETWEEN 0 AND 3));
CREATE TABLE p (id INTEGER PRIMARY KEY, age INTEGER NOT NULL);
"""
CDS = ["pd[pat->doc]<=3", "pb[pat->*]<=3"]
CANDIDATES: Rows = {
    "pd": [(pat, doc) for pat in (0, 1) for doc in range(4)],
    "pb": [(pat, doc) for pat in (None, 0, 1) for doc in (None, 0, 1, 2, 3)],
    "p": [(i, age) for i in (0, 1) for age in (20, 70)],
}


def _ok(db: Rows) -> bool:
    """Keys, at most 3 doctors per patient in pd and at most 3 rows per pat in pb (copies
    and NULLs counted: a smaller class than the constraints allow, so still sound)."""
    if len(set(db["pd"])) != len(db["pd"]) or len({r[0] for r in db["p"]}) != len(db["p"]):
        return False
    for table in ("pd", "pb"):
        per: dict[object, int] = {}
        for pat, _ in db[table]:
            per[pat] = per.get(pat, 0) + 1
        if any(n > 3 for n in per.values()):
            return False
    return True


databases = st.fixed_dictionaries({
    "pd": st.lists(st.sampled_from(CANDIDATES["pd"]), max_size=5, unique=True),
    "pb": st.lists(st.sampled_from(CANDIDATES["pb"]), max_size=4),
    "p": st.lists(st.sampled_from(CANDIDATES["p"]), max_size=2, unique_by=lambda r: r[0]),
}).filter(_ok)

PAIRS = "FROM pd a JOIN pd b ON a.pat = b.pat"
# (statement, add-remove bound, whether rule ordered-self-join gives it)
CASES = [
    (f"SELECT COUNT(*) {PAIRS} WHERE a.doc < b.doc", 2, True),
    (f"SELECT COUNT(*) {PAIRS} WHERE b.doc > a.doc", 2, True),
    (f"SELECT COUNT(*) {PAIRS} WHERE a.doc < b.doc AND a.doc > 0", 2, True),
    (f"SELECT a.pat AS g, COUNT(*) {PAIRS} WHERE a.doc < b.doc GROUP BY a.pat", 2, True),
    (f"SELECT SUM(b.doc) {PAIRS} WHERE a.doc < b.doc", 6, True),
    ("SELECT COUNT(*) FROM pb a JOIN pb b ON a.pat = b.pat WHERE a.doc < b.doc", 2, True),
    # another table: no pair with itself guaranteed, one atom's bound (3) for pd; p's 9
    (f"SELECT COUNT(*) {PAIRS} JOIN p ON p.id = a.pat WHERE a.doc < b.doc", 9, False),
    # projections the swap does not preserve: the rule does not apply
    (f"SELECT COUNT(DISTINCT a.doc) {PAIRS} WHERE a.doc < b.doc", 4, False),
    (f"SELECT COUNT(DISTINCT a.pat) {PAIRS} WHERE a.doc < b.doc", 1, False),
    # not an order: both (t, u) and (u, t) count, (t, t) in neither atom's: 3 + 3 − 2
    (f"SELECT COUNT(*) {PAIRS} WHERE a.doc <> b.doc", 4, True),
    (f"SELECT COUNT(*) {PAIRS} WHERE a.doc <> b.doc AND a.doc > 0", 4, True),
]


@functools.cache
def _analysis(sql: str, neighbor: str) -> Analysis:
    """The upper bound of ``sql`` (it does not depend on the random database)."""
    return cqsens.analyze(sql, schema=DDL, cds=CDS, neighbor=neighbor, prove_lower=False)


@pytest.mark.parametrize(("sql", "bound", "ordered"), CASES)
def test_the_bound_and_its_rule(sql: str, bound: int, ordered: bool) -> None:
    a = _analysis(sql, "add-remove")
    assert a.l1 == bound
    assert (Rule.ORDERED_SELF_JOIN in a.count_derivation.rules()) is ordered


@pytest.mark.parametrize(("sql", "bound", "ordered"), CASES)
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
@settings(max_examples=scaled_examples(15), deadline=None)
@given(db=databases)
def test_ordered_self_joins_are_sound(sql: str, bound: int, ordered: bool, neighbor: str,
                                      db: Rows) -> None:
    a = _analysis(sql, neighbor)
    l1, l2 = sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok, neighbor=neighbor)
    assert l1 <= a.l1
    assert l2 <= float(a.l2) + 1e-9


@pytest.mark.parametrize("sql", [c[0] for c in CASES if c[2] and "pb" not in c[0]])
@pytest.mark.parametrize("neighbor", ["add-remove", "substitute"])
def test_ordered_self_joins_reach_the_bound(sql: str, neighbor: str) -> None:
    """Every database of two patients' doctors (up to 3 and 2, no other row): the largest
    change seen is the bound, so the rule is tight there."""
    a = _analysis(sql, neighbor)
    subsets = [c for n in range(4) for c in itertools.combinations(range(4), n)]
    seen = 0.0
    for first, second in itertools.product(subsets, [s for s in subsets if len(s) <= 2]):
        db: Rows = {"pd": [(0, d) for d in first] + [(1, d) for d in second], "pb": [],
                    "p": []}
        seen = max(seen, sql_sensitivity(DDL, [sql], db, CANDIDATES, _ok,
                                         neighbor=neighbor)[0])
    assert seen == a.l1


def test_the_explanation_names_the_rule() -> None:
    a = cqsens.analyze(CASES[0][0], schema=DDL, cds=CDS, prove_lower=False)
    line = next(e for e in a.explanation if "ordered-self-join" in e)
    assert "[a_doc < b_doc]" in line and "minus 1" in line


@st.composite
def ordered_queries(draw: st.DrawFn) -> CQ:
    """Two U atoms exchanged by the swap a↔b, c↔d, the filter [a < b] (or [a <> b]), maybe
    a pair of R atoms exchanged by the same swap, and a random head (closed under the swap
    or not)."""
    p, k, a, b, c, d = (Var(n) for n in "pkabcd")
    swap: dict[Term, Term] = {a: b, b: a, c: d, d: c}
    pool: list[Term] = [p, k, a, c, Const(1)]
    terms = draw(st.permutations([a, *draw(st.lists(st.sampled_from(pool), min_size=2,
                                                     max_size=2))]))
    first = Atom("U", tuple(terms))
    op = draw(st.sampled_from(["<", "<", "<>"]))
    atoms = [first, first.substitute(swap), Atom.filter(Compare(op, Slot(0), Slot(1)), (a, b))]
    if draw(st.booleans()):
        x = draw(st.sampled_from([p, k, a, c]))
        atoms += [Atom("R", (x, k)), Atom("R", (swap.get(x, x), k))]
    body = sorted({v for atom in atoms for v in atom.variables()})
    if draw(st.integers(0, 3)) == 0:
        head = draw(st.lists(st.sampled_from(body), max_size=4, unique=True))
    else:  # a union of the swap's orbits
        orbits = sorted({tuple(sorted({v, swap.get(v, v)})) for v in body})
        chosen = draw(st.lists(st.sampled_from(orbits), min_size=1, unique=True))
        head = [v for orbit in chosen for v in orbit if v in body]
    return CQ.of(head, atoms)


@st.composite
def fan_outs(draw: st.DrawFn, cq: CQ) -> Sigma:
    """FDs and CDs (k ≤ 2) between the positions of the query's relations, each drawn with
    probability 1/2, so that most bounds are finite."""
    deps = [Dependency(rel, i, j, draw(st.integers(1, 2)))
            for rel, arity in sorted(cq.relations().items())
            for i in range(arity) for j in range(arity) if i != j and draw(st.booleans())]
    return Sigma.of(deps)


@settings(max_examples=scaled_examples(150), deadline=None)
@given(data=st.data())
def test_random_ordered_copies_are_sound(data: st.DataObject) -> None:
    """Random queries of two copies ordered by a strict filter, random FDs and CDs, random
    databases (mixed types: SQLite's order across them), every one-row move."""
    cq = data.draw(ordered_queries())
    sigma = data.draw(fan_outs(cq))
    relations = {r: ARITIES[r] for r in cq.relations()}
    db = data.draw(cq_databases(relations, sigma, max_rows=6))
    bound = count_bound(cq, sigma).bound
    fired = [r for r in bound.relations if r.ordered]
    event("other rules" if not fired else "swapped" if fired[0].swapped else "both atoms")
    observed, _ = local_sensitivity(cq, relations, COLUMNS, db, sigma)
    assert observed <= bound.value


def test_the_random_queries_reach_the_rule() -> None:
    """The generator's plain case fires the rule (so the property above tests it)."""
    p, a, b, k = Var("p"), Var("a"), Var("b"), Var("k")
    cq = CQ.of((p, a, b, k), (Atom("U", (p, a, k)), Atom("U", (p, b, k)),
                           Atom.filter(Compare("<", Slot(0), Slot(1)), (a, b))))
    bound = count_bound(cq, Sigma.of([Dependency("U", 0, 1, 3)])).bound
    assert bound.value == 2 and bound.relations[0].ordered == "[a < b]"


@st.composite
def different_copies(draw: st.DrawFn) -> CQ:
    """Two U atoms equal but for one position (a in one, b in the other), every variable at
    one position, a filter a <> b, a < b or b < a, and a random head."""
    p, k, z, a, b = (Var(n) for n in "pkzab")
    terms = draw(st.permutations([a, draw(st.sampled_from([p, k])), draw(st.sampled_from([z]))]))
    first = Atom("U", tuple(terms))
    second = first.substitute({a: b})
    left, right = draw(st.permutations([a, b]))
    op = draw(st.sampled_from(["<>", "<>", "<", ">"]))
    atoms = [first, second, Atom.filter(Compare(op, Slot(0), Slot(1)), (left, right))]
    body = sorted({v for atom in atoms for v in atom.variables()})
    head = draw(st.lists(st.sampled_from(body), min_size=1, max_size=4, unique=True))
    if draw(st.integers(0, 3)) > 0:  # mostly both compared columns counted
        head = [a, b, *(v for v in head if v not in (a, b))]
    return CQ.of(head, atoms)


@settings(max_examples=scaled_examples(100), deadline=None)
@given(data=st.data())
def test_random_different_copies_are_sound(data: st.DataObject) -> None:
    """The pair of the row with itself taken off each atom (rule ordered-self-join,
    different copies), random FDs and CDs, random databases, every one-row move."""
    cq = data.draw(different_copies())
    sigma = data.draw(fan_outs(cq))
    relations = {r: ARITIES[r] for r in cq.relations()}
    db = data.draw(cq_databases(relations, sigma, max_rows=6))
    bound = count_bound(cq, sigma).bound
    fired = [r for r in bound.relations if r.ordered]
    event("other rules" if not fired else "swapped" if fired[0].swapped else "both atoms")
    observed, _ = local_sensitivity(cq, relations, COLUMNS, db, sigma)
    assert observed <= bound.value
