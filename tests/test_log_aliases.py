"""Table aliases out of the log cache's key: a record with other aliases is a hit whose row
names its own aliases, equal to a fresh analysis, with its lower bound checked for it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cqsens.explain import jsonable
from cqsens.logs import Record, ShapeCache, analyse_log
from cqsens.logs.aliases import plain_alias
from cqsens.logs.keywords import KEYWORDS
from cqsens.logs.lines import line_text
from cqsens.logs.run import log_lines
from cqsens.logs.shape import lex, lex_tokens
from cqsens.pipeline import analyze
from cqsens.settings import Settings
from cqsens.witness.certificate import is_witness
from tests.conftest import scaled_examples
from tests.test_cache import SCHEMA, _captured, _same, own_schema

BASES = [
    "SELECT COUNT(*) FROM Pat {A} JOIN PatDoc {B} ON {A}.id = {B}.pat "
    "WHERE {A}.age > {age} AND {B}.doc = {a}",
    "SELECT COUNT(*) FROM Pat {A} JOIN Hos {B} ON {A}.hos = {B}.id "
    "WHERE {B}.loc = '{s}' AND {A}.age BETWEEN {age} AND {age2}",
    "SELECT COUNT(DISTINCT {A}.hos) FROM Pat {A} WHERE {A}.age < {age} AND {A}.sex = '{s}'",
    "SELECT SUM({A}.age) FROM Pat {A} WHERE {A}.hos = {a}",
    "SELECT COUNT(*) FROM Pat {A}, PatDoc {B}, Doc {C} WHERE {A}.id = {B}.pat "
    "AND {B}.doc = {C}.id AND {C}.specialty = '{s}' AND {A}.hos = {a}",
]
#: Alias names: generated ones, short ones, column and table names used as aliases, and
#: spellings that are not abstracted (upper case, keywords are never drawn: they fail to parse)
_NAMES = st.one_of(st.from_regex(r"t[0-9]{1,3}", fullmatch=True),
                   st.sampled_from(["p", "pd", "x", "a_b", "age", "hos", "doc", "Pat", "T1",
                                    "q9z", "_u"]))


def _text(base: str, names: list[str], values: tuple[int, int, int, str]) -> str:
    a, age, wide, s = values
    return base.format(A=names[0], B=names[1], C=names[2], a=a, age=age, age2=age + wide, s=s)


_SETTINGS = Settings.from_mapping({"schema": SCHEMA})
_values = st.tuples(st.integers(1, 400), st.integers(0, 120), st.integers(0, 30),
                    st.sampled_from(["F", "M", "NY", "z"]))


@pytest.mark.slow
@settings(max_examples=scaled_examples(8), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, len(BASES) - 1),
       records=st.lists(st.tuples(st.lists(_NAMES, min_size=3, max_size=3, unique_by=str.lower),
                                  _values), min_size=2, max_size=4))
def test_cached_rows_equal_fresh_on_random_aliases_and_constants(
        monkeypatch: pytest.MonkeyPatch, index: int,
        records: list[tuple[list[str], tuple[int, int, int, str]]]) -> None:
    seen = _captured(monkeypatch)
    sqls = [_text(BASES[index], names, values) for names, values in records]
    rows = list(analyse_log([Record(f"r{i}", f"log:{i}", sql) for i, sql in enumerate(sqls)],
                            cache=ShapeCache(), schema=SCHEMA))
    for row, sql in zip(rows, sqls, strict=True):
        fresh = analyze(sql, schema=SCHEMA, kind="sql", prove_lower=False).to_dict()
        _same(row, fresh)  # upper, l1, l2, the CQ and the explanation with its own names
        assert row["query"] == sql
        assert (row["lower"] is None) == (row["proof"] is None)
        if row["proof"] != "reused" or row["id"] not in seen:
            continue
        # the instance, checked again from scratch against the record's own parsed query
        witness = seen[row["id"]]
        # the SQL it was checked with is the record's own: its own aliases
        for alias in lex(sql).aliases:
            assert re.search(rf"\b{alias}\.", witness.query_sql), (alias, witness.query_sql)
        own = analyze(sql, schema=SCHEMA, kind="sql", prove_lower=False)
        assert is_witness(own.query_obj, own.sigma, witness, schema=own_schema(SCHEMA)), sql
        assert row["lower"] == jsonable(witness.lower)


def test_records_of_other_aliases_are_hits_that_show_their_own_aliases() -> None:
    base = BASES[4]
    sqls = [_text(base, [f"t{3 * i}", f"t{3 * i + 1}", f"t{3 * i + 2}"], (7 + i, 30, 5, "F"))
            for i in range(4)]
    cache = ShapeCache()
    rows = list(analyse_log([Record(str(i), str(i), s) for i, s in enumerate(sqls)],
                            cache=cache, schema=SCHEMA))
    assert [r["cached"] for r in rows] == [False, True, True, True]
    assert len({r["shape"] for r in rows}) == 1
    for i, row in enumerate(rows):
        text = json.dumps(row["analysis"]["cq"]) + " ".join(row["analysis"]["explanation"])
        own = {f"t{3 * i + j}" for j in range(3)}
        shown = set(re.findall(r"\b(t\d+)_", text))
        assert shown == own, (shown, own)
        assert row["proof"] in ("searched", "reused") and row["lower"] is not None
    # the JSON Lines rows written straight from the template name them too
    again = list(log_lines([Record(str(i), str(i), s) for i, s in enumerate(sqls)],
                           cache=cache, settings=_SETTINGS))
    for i, line in enumerate(again):
        assert json.loads(line.text)["query"] == sqls[i]
        assert line.text == line_text({**rows[i], "cached": True})


@pytest.mark.parametrize(("sql", "aliases"), [
    ("SELECT COUNT(*) FROM Pat t0 JOIN Hos t1 ON t0.hos = t1.id WHERE t1.loc = 'x'",
     ("t0", "t1")),
    ("SELECT COUNT(*) FROM Pat AS a, PatDoc b WHERE a.id = b.pat", ("a", "b")),
    # a subquery's alias, written again inside it
    ("SELECT COUNT(*) FROM Pat a WHERE a.id IN (SELECT b.pat FROM PatDoc b WHERE b.doc = 3)",
     ("a", "b")),
    # written in another case, or quoted, or as a column: the name stays in the key
    ("SELECT COUNT(*) FROM Pat p, PatDoc x WHERE P.id = x.pat", ("x",)),
    ("SELECT COUNT(*) FROM Pat p, PatDoc x WHERE \"p\".id = x.pat", ("x",)),
    ("SELECT COUNT(*) FROM Pat p WHERE p.p = 1", ()),
    ("SELECT COUNT(*) FROM Pat age WHERE age > 3 AND age.id = 1", ()),
    # a schema's name, a table named like the alias, an upper-case alias
    ("SELECT COUNT(*) FROM main.Pat main WHERE main.id = 1", ()),
    ("SELECT COUNT(*) FROM Pat hos, Hos WHERE hos.hos = Hos.id", ()),
    ("SELECT COUNT(*) FROM Pat T0 WHERE T0.id = 1", ()),
    # a function's qualifier, a table's alias named like a keyword
    ("SELECT COUNT(*) FROM Pat f WHERE f.lower(f.sex) = 'x'", ()),
    ("SELECT COUNT(*) FROM Pat natural JOIN Hos", ()),
])
def test_which_aliases_leave_the_key(sql: str, aliases: tuple[str, ...]) -> None:
    lexed = lex_tokens(sql)
    assert lexed.aliases == aliases
    assert lex(sql) == lexed
    for k, start, end in lexed.alias_spans:
        assert sql[start:end] == aliases[k]
    assert all(f"⟨{k}⟩" in lexed.template for k in range(len(aliases)))
    assert not any(re.search(rf"\b{re.escape(a)}\b", lexed.template) for a in aliases)


def test_renamed_text_has_the_same_template_and_a_fresh_skeleton_lexes_alike() -> None:
    one = "SELECT COUNT(*) FROM Pat t1 JOIN PatDoc t2 ON t1.id = t2.pat WHERE t1.age > -5"
    two = one.replace("t1", "x_9").replace("t2", "t1")
    assert lex(one).template == lex(two).template
    assert lex(two).aliases == ("x_9", "t1") and lex(two) == lex_tokens(two)
    swapped = one.replace("t1", "tmp").replace("t2", "t1").replace("tmp", "t2")
    assert lex(swapped).template == lex(one).template  # the order of first appearance counts
    assert lex(swapped).aliases == ("t2", "t1")


def test_the_keyword_list_holds_every_dialects_keywords() -> None:
    import sqlglot.dialects as dialects
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.tokens import Tokenizer

    words = {k.lower() for k in Tokenizer.KEYWORDS}
    for name in dialects.__all__:
        if name not in ("Dialect", "Dialects"):
            words |= {k.lower() for k in Dialect.get_or_raise(name.lower())
                      .tokenizer_class.KEYWORDS}
    plain = {w for w in words if re.fullmatch(r"[a-z_][a-z0-9_]*", w)}
    assert plain <= KEYWORDS, sorted(plain - KEYWORDS)
    assert not plain_alias("select") and not plain_alias("natural") and plain_alias("t0")


def test_warm_rows_equal_first_rows_with_aliases(tmp_path: Path) -> None:
    sqls = [_text(BASES[i % 3], [f"t{i}", f"u{i}", f"v{i}"], (i + 1, 20 + i, 3, "M"))
            for i in range(9)]
    records = [Record(str(i), f"log:{i}", s) for i, s in enumerate(sqls)]
    file = tmp_path / "c.sqlite"
    first = [line.text for line in log_lines(records, cache=ShapeCache(file), settings=_SETTINGS)]
    warm = [line.text for line in log_lines(records, cache=ShapeCache(file), jobs=2,
                                            settings=_SETTINGS)]

    def strip(text: str) -> dict[str, object]:
        return {k: v for k, v in json.loads(text).items() if k != "cached"}

    assert [strip(t) for t in first] == [strip(t) for t in warm]


def test_aliases_not_located_stay_keyed_and_the_constants_are_still_abstract(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import cqsens.logs.template as template

    monkeypatch.setattr(template, "_alias_site", lambda x, y, names: None)
    sqls = ["SELECT COUNT(*) FROM Pat t0 WHERE t0.age > 30 AND t0.sex = 'F'",
            "SELECT COUNT(*) FROM Pat t0 WHERE t0.age > 45 AND t0.sex = 'M'",
            "SELECT COUNT(*) FROM Pat t1 WHERE t1.age > 45 AND t1.sex = 'M'"]
    cache = ShapeCache()
    rows = list(analyse_log([Record(str(i), str(i), s) for i, s in enumerate(sqls)],
                            cache=cache, schema=SCHEMA, prove_lower=False))
    assert [r["cached"] for r in rows] == [False, True, False]
    assert "t1_age" in " ".join(rows[2]["analysis"]["explanation"]) + rows[2]["analysis"]["cq"]


def test_the_sqlite_text_of_a_record_is_its_own_with_its_aliases() -> None:
    from cqsens.frontend.sqlgen import sqlite_query
    from cqsens.logs.transpiled import record_sqlite

    base = BASES[1]
    first = _text(base, ["t0", "t1", "t2"], (5, 30, 4, "F"))
    assert record_sqlite("k-aliases", first, lex(first), None) == sqlite_query(first, None)
    from cqsens.logs.transpiled import _TEMPLATES

    assert _TEMPLATES[("k-aliases", None)] is not None  # the key's template serves the others
    for names in (["t7", "t8", "t9"], ["x", "age", "q"], ["hos", "a_b", "z"]):
        other = _text(base, names, (9, 41, 2, "M"))
        got = record_sqlite("k-aliases", other, lex(other), None)
        assert got == sqlite_query(other, None), (got, other)
        assert all(re.search(rf"\b{n}\b", got or "") for n in names[:2])


def test_a_narrower_plan_does_not_replace_the_shapes_plan(tmp_path: Path) -> None:
    """Records of one template whose later analyses abstract fewer literals than the
    first (a record of ``BETWEEN 18 AND 19`` among these): the shape keeps its first plan,
    so a warm run keys (and digests) every record as the first run did.  Replacing the
    plan made 11 of these 16 miss again in the warm run, with other digests."""
    sqls = [f"SELECT SUM(p.age) FROM Pat p JOIN PatDoc x ON p.id = x.pat WHERE p.age IN "
            f"({a}, {b}) AND p.hos <> {b} AND x.doc BETWEEN {lo} AND {hi}"
            for a, b, lo, hi in [
                (6695, 6909, 1, 16), (8396, 8827, 46, 51), (3411, 3480, 44, 48),
                (5404, 5586, 33, 42), (3299, 3501, 2, 20), (7698, 7806, 76, 85),
                (2631, 2847, 15, 32), (5373, 5542, 86, 100), (4999, 5225, 3, 10),
                (4431, 4637, 41, 54), (3434, 3927, 68, 75), (2688, 2745, 27, 35),
                (7477, 7719, 18, 19), (1349, 1747, 20, 33), (4796, 4857, 62, 72),
                (5819, 6211, 84, 97)]]
    records = [Record(str(i), f"log:{i}", s) for i, s in enumerate(sqls)]
    file = tmp_path / "c.sqlite"
    first = [json.loads(line.text) for line in log_lines(records, cache=ShapeCache(file),
                                                          settings=_SETTINGS)]
    again = ShapeCache(file)
    warm = [json.loads(line.text) for line in log_lines(records, cache=again,
                                                         settings=_SETTINGS)]
    assert [{k: v for k, v in r.items() if k != "cached"} for r in first] == \
        [{k: v for k, v in r.items() if k != "cached"} for r in warm]
    assert again.hits >= len(records) - 1, (again.hits, again.misses)
