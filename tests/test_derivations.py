"""Typed derivations: every bound carries the rule of docs/rules.md that gives it, and its
words come from one renderer (cqsens.report.words) in the neighbourhood's terms.

The analyses run the real pipeline on the shop example's schema; the property test draws
the inputs of every aggregate rule and checks the sentence against the derivation.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cqsens
from cqsens.analysis import Analysis
from cqsens.engine.neighbourhood import Neighbourhood, Unit
from cqsens.engine.rules import Derivation, Rule, for_unit
from cqsens.release.aggregates import (
    avg_bound,
    count_bound,
    grouped_range_bound,
    histogram_bound,
    median_bound,
    min_max_bound,
    sum_bound,
)
from cqsens.report.words import reason, render

SHOP = Path(__file__).resolve().parents[1] / "examples" / "shop" / "schema.sql"
KINDS = {
    "COUNT(*)": "count", "COUNT(DISTINCT o.uid)": "count_distinct", "SUM(o.total)": "sum",
    "AVG(o.total)": "avg", "MEDIAN(o.total)": "median", "MIN(o.total)": "min",
    "MAX(o.total)": "max",
}
HEADINGS = re.findall(r"^## ([a-z0-9-]+)$",
                      (SHOP.parents[2] / "docs" / "rules.md").read_text(encoding="utf-8"), re.M)


def _analyse(aggregate: str, *, group: bool = False, **options: object) -> Analysis:
    sql = f"SELECT {'o.uid, ' if group else ''}{aggregate} FROM orders o, items i " \
          f"WHERE i.oid = o.oid{' GROUP BY o.uid' if group else ''}"
    return cqsens.analyze(sql, kind="sql", schema=SHOP.read_text(), prove_lower=False,
                          cds=["orders[uid->oid]<=5", "items[oid->iid]<=4"], **options)


def test_rule_members_are_the_headings_of_rules_md() -> None:
    """One member per heading of docs/rules.md, in its order, the value its anchor."""
    assert [r.value for r in Rule] == HEADINGS
    assert len(HEADINGS) > 40


@pytest.mark.parametrize("group", [False, True], ids=["scalar", "grouped"])
@pytest.mark.parametrize("aggregate", list(KINDS))
def test_unit_speaks_of_a_person(aggregate: str, group: bool) -> None:
    """Under --unit the rule and the reason of every aggregate kind speak of one person, and the
    bound is the rule's value for the person's count bound."""
    a = _analyse(aggregate, group=group, unit="users")
    record = a.aggregates[0]
    assert record.kind == KINDS[aggregate]
    nb = record.derivation.neighbourhood
    assert nb.unit is not None and nb.unit.text == "users(id)"
    assert (nb.model, nb.contributions) == ("add-remove", 1)
    assert all(p.neighbourhood.person for p in record.derivation.premises)
    assert a.count_derivation.rule is Rule.PRIVACY_UNIT
    assert "person" in record.rule and "person" in a.reason()
    assert "tuple" not in record.rule
    assert record.derivation.value == record.l1
    row = _analyse(aggregate, group=group)
    assert "person" not in row.aggregates[0].rule and "person" not in row.reason()
    assert row.count_derivation.rule is Rule.NEW_ANSWERS
    assert record.count_bound >= row.aggregates[0].count_bound  # one person holds rows


@pytest.mark.parametrize("unit", [None, "users"])
@pytest.mark.parametrize("aggregate", list(KINDS))
def test_substitution_is_named(aggregate: str, unit: str | None) -> None:
    """Under --neighbor substitute every aggregate kind's rule and reason name the
    substitution (of one person with --unit); under add/remove none does."""
    a = _analyse(aggregate, neighbor="substitute", unit=unit)
    record = a.aggregates[0]
    assert record.derivation.neighbourhood.substitution
    assert "substitution" in record.rule and "substitution" in a.reason()
    assert ("person" in a.reason()) == (unit is not None)
    assert f"rule {record.derivation.rule.value}" in a.reason()
    plain = _analyse(aggregate, unit=unit)
    assert "substitution" not in plain.aggregates[0].rule
    assert "substitution" not in plain.reason()


def test_rules_and_values_of_the_pipeline() -> None:
    """The pipeline's records carry the rule and the value of the release rules themselves."""
    a = _analyse("SUM(o.total)", neighbor="substitute")
    record = a.aggregates[0]
    delta = record.count_bound
    assert record.derivation.rule is Rule.SUM_SUBSTITUTION
    assert record.l1 == sum_bound(delta, 0, 500, neighbor="substitute").l1
    a = _analyse("AVG(o.total)")
    assert a.aggregates[0].derivation.rule is Rule.AVG
    assert a.aggregates[0].l1 == avg_bound(a.aggregates[0].count_bound, 0, 500).l1
    a = _analyse("COUNT(*)", group=True, neighbor="substitute")
    assert a.aggregates[0].derivation.rule is Rule.GROUP_BY_HISTOGRAM
    assert a.aggregates[0].l1 == histogram_bound(a.aggregates[0].count_bound,
                                                 neighbor="substitute").l1
    a = _analyse("MEDIAN(o.total)", group=True, neighbor="substitute")
    derivation = a.aggregates[0].derivation
    assert derivation.rule is Rule.GROUPED_VALUE_AGGREGATES
    assert [p.rule for p in derivation.premises] == [Rule.MEDIAN, Rule.MEDIAN]
    assert [p.neighbourhood.model for p in derivation.premises] == ["substitute", "add-remove"]


def test_json_carries_the_rule_ids() -> None:
    """The JSON keeps the sentence and adds the rule's anchor beside it."""
    a = _analyse("AVG(o.total)", unit="users", neighbor="substitute")
    out = json.loads(json.dumps(a.to_dict()))
    assert out["aggregates"][0]["rule_id"] == "avg"
    assert out["aggregates"][0]["rule"] == a.aggregates[0].rule
    assert out["count_rule_id"] == "privacy-unit"
    count = json.loads(json.dumps(_analyse("COUNT(*)").to_dict()))
    assert count["aggregates"][0]["rule_id"] == "new-answers"
    assert count["count_rule_id"] == "new-answers"


def test_count_derivations() -> None:
    """The count bound's derivation: its rule, the relation and the atoms behind it."""
    a = cqsens.analyze("Q(x) :- R(x, y), S(y, z)", kind="cq", fds=["S[1->2]", "R[2->1]"],
                       prove_lower=False)
    d = a.count_derivation
    assert d.rule is Rule.NEW_ANSWERS and d.value == a.upper == 1
    assert {p.rule for p in d.premises} <= {Rule.DELTA_STR_SELF_JOIN,
                                             Rule.WALKS_FROM_CONSTANTS,
                                             Rule.JOINT_ASSIGNMENT_TREE}
    unbounded = cqsens.analyze("Q(x) :- R(x, y), S(y, z)", kind="cq", prove_lower=False)
    assert unbounded.count_derivation.rule is Rule.WALKS_FROM_CONSTANTS
    assert unbounded.count_derivation.value == math.inf
    assert unbounded.count_derivation["missing"] in ("x", "y")
    boolean = cqsens.analyze("Q() :- R(x, y)", kind="cq", prove_lower=False)
    assert boolean.count_derivation.rule is Rule.BOOLEAN_QUERY
    assert reason(boolean) == "a Boolean query: its count is 0 or 1"


_EXACT = st.one_of(st.integers(-50, 50), st.fractions(-50, 50, max_denominator=7))


@st.composite
def _derivations(draw: st.DrawFn) -> Derivation:
    low = draw(_EXACT)
    high = low + draw(st.one_of(st.integers(0, 60), st.fractions(0, 60, max_denominator=5)))
    delta = draw(st.one_of(st.integers(0, 6), st.just(math.inf), st.just(Fraction(3, 2))))
    model = draw(st.sampled_from(["add-remove", "substitute"]))
    k = draw(st.integers(1, 3))
    rows = draw(st.one_of(st.none(), st.integers(1, 9)))
    kind = draw(st.sampled_from(["count", "histogram", "sum", "avg", "median", "min_max",
                                 "grouped"]))
    common = {"neighbor": model, "contributions": k}
    if kind == "count":
        bound = count_bound(delta, **common)
    elif kind == "histogram":
        bound = histogram_bound(delta, **common)
    elif kind == "sum":
        bound = sum_bound(delta, low, high, **common)
    elif kind == "avg":
        bound = avg_bound(delta, low, high, **common)
    elif kind == "median":
        bound = median_bound(delta, low, high, rows=rows, **common)
    elif kind == "min_max":
        bound = min_max_bound(delta, low, high, **common)
    else:
        scalar = draw(st.sampled_from([avg_bound, median_bound, min_max_bound]))
        touched = draw(st.integers(0, 4))
        bound = grouped_range_bound(scalar(delta, low, high, neighbor="substitute",
                                           contributions=k),
                                    scalar(delta, low, high, contributions=k), touched * k,
                                    kind=draw(st.sampled_from(["avg", "median", "min", "max"])))
    return for_unit(bound.derivation, draw(st.sampled_from([None, Unit("users", (0,), "users(id)")])))


@given(_derivations())
def test_sentences_follow_the_neighbourhood(d: Derivation) -> None:
    """Every aggregate rule's sentence names its rule and speaks of a person exactly under a
    unit and of a substitution exactly under the substitute model (an unsatisfiable MEDIAN
    never changes, whoever changes)."""
    sentence = render(d)
    assert f"rule {d.rule.value}" in sentence or d.value == 0
    if d.rule is Rule.MEDIAN and d["delta"] == 0:
        return
    if d.rule is Rule.GROUPED_VALUE_AGGREGATES:
        assert d.neighbourhood.substitution and "substitution" in sentence
        assert ("person" in sentence) == d.neighbourhood.person, sentence
        assert d.value == 0 or d.value == d.number("touched") * max(
            d.number("s"), 2 * d.number("a"))
        return
    assert ("person" in sentence) == d.neighbourhood.person, sentence
    assert ("substitution" in sentence) == d.neighbourhood.substitution, sentence
    assert ("times k = " in sentence) == (
        d.neighbourhood.contributions > 1
        and d.rule in (Rule.NEW_ANSWERS, Rule.COUNT_SUBSTITUTION, Rule.GROUP_BY_HISTOGRAM,
                       Rule.SUM, Rule.SUM_SUBSTITUTION)), sentence
    assert render(d, "html").count("&") >= sentence.count("&")


def test_shared_options_branch_on_the_error_type(tmp_path: Path) -> None:
    """A column name without a shared schema is a typed error the batch leaves to each row;
    any other bad dependency is a usage error."""
    import click

    from cqsens.cli.validate import check_shared_options
    from cqsens.errors import DependencyError, SchemaNeededError
    from cqsens.frontend.parse_cq import parse_dependency

    with pytest.raises(SchemaNeededError):
        parse_dependency("orders[uid->oid]", schema=None, kind="fd", source="--fd")
    from cqsens.settings import Settings

    assert check_shared_options(Settings(fds=("orders[uid->oid]",)), schema=None) is None
    with pytest.raises(click.UsageError):
        check_shared_options(Settings(fds=("orders[0->1]",)), schema=None)
    with pytest.raises(DependencyError) as err:
        parse_dependency("orders[0->1]", schema=None, kind="fd", source="--fd")
    assert not isinstance(err.value, SchemaNeededError)


def test_paper_notes_skip_what_does_not_apply() -> None:
    """The text report leaves out the paper's values that have nothing to apply to (no
    dependency given), by the value's flag, and keeps the others' reasons."""
    from cqsens.report.text import to_text

    a = cqsens.analyze("Q(x) :- R(x, y)", kind="cq", prove_lower=False)
    assert not a.paper["fd_upper"].applies and not a.paper["cd_upper"].applies
    shown = to_text(a)
    assert a.paper["fd_upper"].reason not in shown
    b = cqsens.analyze("Q(x) :- R(x, y), S(z)", kind="cq", fds=["R[1->2]"], prove_lower=False)
    assert b.paper["fd_upper"].applies and b.paper["fd_upper"].value is None
    assert b.paper["fd_upper"].reason in to_text(b)


def test_relation_derivations_sum_their_atoms() -> None:
    """Per relation, the derivation's value is the sum of its counted atoms' values, the
    largest one is the count bound, and the explanation has one sentence per relation."""
    from cqsens.engine.count import relation_derivations

    a = _analyse("COUNT(*)")
    derivations = relation_derivations(a.bound)
    assert [d.rule for d in derivations] == [Rule.NEW_ANSWERS] * len(a.bound.relations)
    for d in derivations:
        assert d.value == sum(p.value for p in d.premises if p["counted"])
    assert max(d.value for d in derivations) == a.upper == a.aggregates[0].count_bound
    assert len(a.explanation) == 1 + len(derivations)
    person = _analyse("COUNT(*)", unit="users")
    assert person.count_derivation.value == person.upper
    assert person.count_derivation["table"] == "users"


def test_set_operation_combines_its_parts_derivations() -> None:
    """A set operation's derivation names the combining rule, one premise per part with the
    part's ℓ1, and the analysis's ℓ1 is what the combination gives."""
    ddl = ("CREATE TABLE r (k INTEGER PRIMARY KEY, a INTEGER); "
           "CREATE TABLE s (c INTEGER, r INTEGER REFERENCES r(k));")
    a = cqsens.analyze("SELECT COUNT(*) FROM r UNION ALL SELECT COUNT(*) FROM s JOIN r "
                       "ON s.r = r.k", kind="sql", schema=ddl, cds=["s[r->c]<=2"],
                       prove_lower=False)
    d = a.count_derivation
    assert a.combined and d.rule is Rule.SET_OPERATIONS and d["combination"] == "concat"
    parts = [cqsens.analyze(sql, kind="sql", schema=ddl, cds=["s[r->c]<=2"], prove_lower=False)
             for sql in ("SELECT COUNT(*) FROM r", "SELECT COUNT(*) FROM s JOIN r ON s.r = r.k")]
    assert [p.value for p in d.premises] == [p.l1 for p in parts]
    assert a.l1 == d.value == sum(p.l1 for p in parts)
    assert [p.premises[0].rule for p in d.premises] == [p.count_derivation.rule for p in parts]
    assert a.to_dict()["count_rule_id"] == "set-operations"
    assert not parts[0].combined and parts[0].summary == ""
