"""Advice that works (issue #25): for each unbounded query of the bundled examples, the
first proposal, once added, bounds it.

Every query file under examples/ is analysed as ``cqsens report examples/`` does (the
schema.sql and constraints.txt beside it).  For each one whose upper bound is infinite
and that has advice, its first proposal is added to what the user declared — a foreign
key to the schema, functional dependencies to the constraints — and the query is
analysed again, by the whole pipeline: the new upper bound must be finite.  A proposal
never repeats a dependency already declared, nor starts at a measure column.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

import cqsens
from cqsens.batch import BatchResult
from cqsens.engine.fk_advice import avoided_sources, foreign_key_candidates
from cqsens.engine.rules import Rule
from cqsens.explain import Advice, AdviceKind, suggestion
from cqsens.frontend.ddl import load_schema
from cqsens.frontend.load import resolve_sigma
from cqsens.ir.dependencies import Dependency
from cqsens.ir.schema import Schema
from cqsens.prepare import references

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _inputs(path: Path) -> tuple[Path, Path | None]:
    constraints = path.parent / "constraints.txt"
    return path.parent / "schema.sql", constraints if constraints.exists() else None


def _analyse(path: Path, schema: Schema, fds: tuple[str, ...] = ()) -> cqsens.Analysis:
    constraints = _inputs(path)[1]
    return cqsens.analyze(path, schema=schema, constraints=constraints, fds=fds,
                          prove_lower=False)


#: The example files whose upper bound is infinite (each with a schema.sql beside it), as
#: paths under examples/: listed here rather than found by analysing every example when
#: the tests are collected (3 CPU s in each xdist worker);
#: ``test_the_examples_have_unbounded_queries_with_advice`` checks the list against the
#: session's one analysis of examples/, and each test below checks its file is unbounded.
UNBOUNDED = [EXAMPLES / name for name in (
    "hospital/ny_patients.cq", "hospital/ny_patients.sql", "hospital/same_hospital_pairs.sql",
    "social/same_city_pairs.sql", "tpch/lines_in_region.sql", "tpch/queries/q05.sql",
    "tpch/queries/q07.sql", "tpch/queries/q08.sql", "tpch/queries/q09.sql",
    "tpch/queries/q10.sql", "tpch/queries/q14.sql", "tpch/queries/q16.sql",
    "tpch/queries/q19.sql", "tpch/queries/q21.sql", "tpch/suppliers_in_europe.sql")]
#: Unbounded example files that have no advice (none today: each unbounded one has).
NO_ADVICE: frozenset[str] = frozenset()


def _first(a: cqsens.Analysis, schema: Schema) -> Advice:
    nb = replace(a.nb, references=references(schema))  # as the analysis's stage saw it
    found = suggestion(a.query_obj, a.sigma, a.core, schema, public=nb.public,
                       references=nb.kept_references,
                       keeps_references=nb.add_remove and nb.contributions == 1)
    shown = [line for line in a.suggestion if not line.startswith("Or instead")]
    named = found[0].dependencies
    parts = named[::2] if found[0].kind is AdviceKind.FOREIGN_KEY else named  # (text, ddl)
    assert len(shown) == 1 and all(part in shown[0] for part in parts)
    firsts = [f for f in found if f.first]
    assert firsts, f"advice is shown but none is first: {found}"
    return firsts[0]


def schema_sigma(a: cqsens.Analysis, schema: Schema) -> set[object]:
    """The dependencies the schema's keys give."""
    return set(resolve_sigma(a.query_obj, schema=schema)[0])


def _with_foreign_keys(a: cqsens.Analysis, schema: Schema, advice: Advice) -> Schema:
    """``schema`` with the foreign keys the advice names declared."""
    chosen = [c for c in foreign_key_candidates(a.core, schema) if c.text in advice.dependencies]
    assert len(chosen) == len(advice.dependencies) // 2
    tables = list(schema.relations)
    for c in chosen:
        index = next(i for i, r in enumerate(tables) if r.name.lower() == c.relation.lower())
        tables[index] = replace(tables[index],
                                foreign_keys=(*tables[index].foreign_keys, c.fk))
    return replace(schema, relations=tuple(tables))


#: Statements bounded as a sum of parts, each analysed on its own: the advice is given per
#: unbounded part, in the part's name (its first proposal bounds that part, not the others).
PER_PART = frozenset({Rule.SEMI_JOIN_FLIPS, Rule.OUTER_JOINS, Rule.SET_OPERATIONS})


def _advice_per_part(a: cqsens.Analysis) -> None:
    """Each part the explanation shows unbounded has advice that names it."""
    unbounded = [line.split(":", 1)[0].lower() for line in a.explanation
                 if " — ℓ1 ∞" in line]
    assert unbounded, a.explanation
    for name in unbounded:
        mine = [line for line in a.suggestion if line.lower().startswith(name + ":")]
        assert any(not line.split(": ", 1)[1].startswith("Or instead") for line in mine), \
            (name, a.suggestion)


def test_the_examples_have_unbounded_queries_with_advice(examples_batch: BatchResult) -> None:
    """UNBOUNDED is every example file with a schema.sql beside it whose upper bound is
    infinite in ``cqsens report examples/`` (the session's one batch), and the measurement
    below is not empty: 15 unbounded queries with advice (9 in examples/tpch/queries, 3 in
    examples/hospital, 1 in examples/social, ...)."""
    found = {Path(row["file"]) for row in examples_batch.rows
             if row["status"] == "ok" and row["upper"] == "inf"
             and (Path(row["file"]).parent / "schema.sql").exists()}
    assert found == set(UNBOUNDED)
    assert len(UNBOUNDED) - len(NO_ADVICE) >= 10


@pytest.mark.parametrize("path", UNBOUNDED, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_the_first_proposal_bounds_the_query(path: Path) -> None:
    schema = load_schema(path.parent / "schema.sql")
    a = _analyse(path, schema)
    assert a.upper == math.inf
    if str(path.relative_to(EXAMPLES)) in NO_ADVICE:
        assert not a.suggestion
        return
    assert a.suggestion, "an unbounded example without advice (list it in NO_ADVICE)"
    if a.derivation is not None and a.derivation.rule in PER_PART:
        _advice_per_part(a)
        return
    first = _first(a, schema)
    assert first.bound < math.inf  # what the advice promises
    if first.kind is AdviceKind.FOREIGN_KEY:
        after = _analyse(path, _with_foreign_keys(a, schema, first))
    else:
        assert first.kind is AdviceKind.DECLARE
        avoided = avoided_sources(a.query_obj, schema)
        for text in first.dependencies:  # each one new, none out of a measure column
            sigma, _ = resolve_sigma(a.query_obj, schema=schema, fds=[text])
            (dep,) = [d for d in sigma if d not in schema_sigma(a, schema)]
            assert isinstance(dep, Dependency)
            assert not any(isinstance(d, Dependency) and (d.relation, d.i, d.j) ==
                           (dep.relation, dep.i, dep.j) for d in a.sigma), f"{text} declared"
            assert (dep.relation, dep.i) not in avoided, f"{text} starts at a measure column"
        after = _analyse(path, schema, tuple(first.dependencies))
    assert after.upper < math.inf
    print(f"{path.relative_to(EXAMPLES)}: {first.kind.value} -> upper {after.upper}")
    assert after.bound.value <= first.bound  # the count bound the advice promised


def test_a_replaced_schema_leaves_the_cached_one_alone() -> None:
    """``dataclasses.replace`` on a schema (as above, a foreign key added) builds its own
    index: the cached schema of the same DDL, which later analyses read, is unchanged (it
    once shared the index, and the advice of the next query saw the added keys)."""
    path = EXAMPLES / "tpch" / "schema.sql"
    schema = load_schema(path)
    assert schema is not None
    customer = schema.find("customer")
    assert customer is not None
    changed = replace(customer, foreign_keys=())
    other = replace(schema, relations=tuple(changed if r is customer else r
                                            for r in schema.relations))
    assert other.find("customer") is changed
    assert load_schema(path) is schema and schema.find("customer") is customer
