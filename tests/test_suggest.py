"""Advice for unbounded queries, confirmed by re-running the analysis."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cqsens.analysis import Analysis
from cqsens.engine.chase import chase
from cqsens.engine.core import core
from cqsens.engine.fk_advice import names_match
from cqsens.engine.suggest import suggest
from cqsens.explain import Advice, AdviceKind, suggestion
from cqsens.frontend.ddl import load_schema, schema_from_ddl
from cqsens.frontend.parse_cq import parse_cq
from cqsens.ir.dependencies import Sigma
from cqsens.pipeline import analyze
from cqsens.report.explanation import advice
from tests.strategies import cqs, dependencies_for


def _advice(a: Analysis) -> list[Advice]:
    return suggestion(a.query_obj, a.sigma, a.core, None)


def test_example_2_suggests_one_doctor_per_patient_among_the_options() -> None:
    schema = "examples/hospital/schema.sql"
    a = analyze("examples/hospital/oncology.sql", schema=schema)
    found = suggestion(a.query_obj, a.sigma, a.core, load_schema(Path(schema)))
    ours = [s for s in found if s.dependencies == ("PatDoc[pat->doc]",)]
    assert len(ours) == 1 and ours[0].kind is AdviceKind.DECLARE
    fd = analyze("examples/hospital/oncology.sql", schema=schema, fds=["PatDoc[pat->doc]"])
    cd = analyze("examples/hospital/oncology.sql", schema=schema, cds=["PatDoc[pat->doc]<=3"])
    assert (ours[0].bound, ours[0].cd_bound) == (fd.upper, cd.upper) == (1, 3)
    assert a.suggestion == tuple(advice(s) for s in found)


def test_disconnected_query_gets_a_reason() -> None:
    a = analyze("Q(x) :- R(x), S(y)")
    assert a.upper == math.inf
    assert [s.kind for s in _advice(a)] == [AdviceKind.NONE_HELPS]
    assert suggest(a.core, a.sigma).disconnected


def test_bounded_query_gets_no_suggestion() -> None:
    assert analyze("Q(x) :- R(x, y)").suggestion == ()


@given(data=st.data())
def test_every_suggestion_bounds_the_query(data: st.DataObject) -> None:
    cq = data.draw(cqs(max_atoms=4))
    sigma = data.draw(dependencies_for(cq))
    c = core(chase(cq, sigma.fds()))
    advice = suggest(c, sigma)
    if not advice.dependencies:
        return
    a = analyze(str(cq), fds=[d for d in sigma if d.k == 1], cds=[d for d in sigma if d.k > 1],
                prove_lower=False)
    b = analyze(str(cq), fds=[d for d in sigma if d.k == 1] + list(advice.dependencies),
                prove_lower=False, cds=[d for d in sigma if d.k > 1])
    assert a.upper == math.inf and b.upper < math.inf


def test_suggestion_is_minimal_for_a_chain() -> None:
    c = parse_cq("Q(x) :- R(x, y), S(y, z), T(z, w)")
    advice = suggest(c, Sigma.of())
    assert len(advice.dependencies) == 2  # S and T atoms each need one step back to x


# ----------------------------------------------------------------------------- foreign keys

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _with_foreign_keys(ddl: str, found: Advice) -> str:
    """The schema with the proposed foreign keys declared on their columns."""
    for declaration in found.dependencies[1::2]:
        column, _, target = declaration.partition(" ... ")
        ddl, n = re.subn(rf"\b({re.escape(column)}\s+INTEGER)\b", rf"\1 {target}", ddl, count=1)
        assert n == 1, declaration
    return ddl


def _unbounded_examples() -> list[tuple[str, str]]:
    out = []
    for folder in ("hospital", "social", "tpch"):
        for query in sorted((EXAMPLES / folder).glob("*.sql")):
            if query.name not in ("schema.sql", "data.sql", "data_violating.sql"):
                out.append((folder, query.name))
    return out


@pytest.mark.parametrize(("folder", "name"), _unbounded_examples())
def test_first_proposal_bounds_every_unbounded_example(folder: str, name: str) -> None:
    """Declared as proposed (a foreign key in the schema, or FDs), the first proposal bounds
    the query, to the bound it announced."""
    ddl = (EXAMPLES / folder / "schema.sql").read_text()
    sql = (EXAMPLES / folder / name).read_text()
    a = analyze(sql, schema=ddl, prove_lower=False)
    if a.upper != math.inf:
        return
    found = suggestion(a.query_obj, a.sigma, a.core, load_schema(EXAMPLES / folder / "schema.sql"),
                       keeps_references=True)
    assert found and found[0].first, a.suggestion
    first = found[0]
    if first.kind is AdviceKind.FOREIGN_KEY:
        after = analyze(sql, schema=_with_foreign_keys(ddl, first), prove_lower=False)
    else:
        assert first.kind is AdviceKind.DECLARE
        after = analyze(sql, schema=ddl, fds=list(first.dependencies), prove_lower=False)
    assert after.bound.value == first.bound < math.inf  # the count bound advice speaks of
    assert after.upper < math.inf


def test_tpch_joins_get_the_foreign_key_first() -> None:
    ddl = (EXAMPLES / "tpch" / "schema.sql").read_text()
    a = analyze((EXAMPLES / "tpch" / "customer_orders.sql").read_text(), schema=ddl,
                prove_lower=False)
    assert a.suggestion[0].startswith(
        "To bound it, declare the foreign key orders(o_custkey) → customer(c_custkey) (FK: "
        "o_custkey ... REFERENCES customer(c_custkey)")
    assert a.suggestion[1].startswith("Or instead, declare orders[o_custkey->o_orderkey]")


def test_no_foreign_key_advice_under_substitution() -> None:
    """A substitution may not keep foreign keys (docs/rules.md, rule foreign-keys)."""
    ddl = (EXAMPLES / "tpch" / "schema.sql").read_text()
    a = analyze((EXAMPLES / "tpch" / "customer_orders.sql").read_text(), schema=ddl,
                neighbor="substitute", prove_lower=False)
    assert a.upper == math.inf
    assert a.suggestion and not any("foreign key" in s for s in a.suggestion)


def test_names_that_read_as_references() -> None:
    assert names_match("o_custkey", "customer", "c_custkey")
    assert names_match("patient_id", "patients", "patient_id")
    assert names_match("user_id", "users", "id")
    assert not names_match("l_orderkey", "customer", "c_custkey")
    assert not names_match("id", "patients", "id")


MEASURES = """
CREATE TABLE shop (sid INTEGER PRIMARY KEY, city TEXT);
CREATE TABLE sale (id INTEGER PRIMARY KEY, sid INTEGER, amount INTEGER
                   CHECK (amount BETWEEN 0 AND 10), sale_comment TEXT);
"""


def test_no_dependency_out_of_a_measure_or_free_text_column() -> None:
    """The sale's amount is summed and its comment is free text: neither is proposed as a
    source, though amount -> id would bound the join as well as sid -> id."""
    sql = ("SELECT SUM(s.amount) FROM sale s JOIN shop h ON s.sid = h.sid "
           "WHERE s.sale_comment = 'x'")
    a = analyze(sql, schema=MEASURES, prove_lower=False)
    assert a.upper == math.inf
    found = suggestion(a.query_obj, a.sigma, a.core, schema_from_ddl(MEASURES),
                       keeps_references=True)
    declared = [d for s in found if s.kind is AdviceKind.DECLARE for d in s.dependencies]
    assert declared and all(not d.startswith(("sale[amount->", "sale[sale_comment->"))
                            for d in declared)
    keys = [s for s in found if s.kind is AdviceKind.FOREIGN_KEY]
    assert [s.dependencies[0] for s in keys] == ["sale(sid) → shop(sid)"]


def test_a_declared_rows_per_person_bound_is_not_proposed_again() -> None:
    """shop: users own orders and items; items per order are not declared, so the query is
    unbounded for one person.  Without orders[uid->oid] the advice proposes it at 3; with
    orders[uid->oid]<=40 declared it keeps the user's 40 and proposes the rest only."""
    schema = str(EXAMPLES / "shop" / "schema.sql")
    sql = (EXAMPLES / "shop" / "items_sold.sql").read_text()
    bare = analyze(sql, schema=schema, unit="users", public=["products"], prove_lower=False)
    assert bare.upper == math.inf and "'orders[uid->oid]<=3'" in bare.suggestion[0]
    a = analyze(sql, schema=schema, unit="users", public=["products"],
                cds=["orders[uid->oid]<=40"], prove_lower=False)
    assert a.upper == math.inf and a.suggestion
    assert not any("orders[uid->oid]" in s for s in a.suggestion)
    assert "'items[oid->iid]<=3'" in a.suggestion[0]
