"""The short paths of a cache hit give what the long ones give: the lexer's remembered
skeletons, the remembered keys and the JSON line written straight from a template."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqsens.logs import Record, ShapeCache, analyse_log
from cqsens.logs import shape as shapes
from cqsens.logs.lines import line_text
from cqsens.logs.run import log_lines
from cqsens.logs.shape import lex, lex_tokens, record_key, shape_key
from tests.conftest import scaled_examples

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "examples/hospital/schema.sql")

_FRAGMENTS = ["SELECT", "a", "x1", "_y$", "é", " ", "  ", "\n", "\t", "(", ")", ",", "=", "<",
              ">=", "<>", "!=", "||", "::", "+", "-", "*", "/", "%", ".", "'", '"', "`", "[",
              "]", "$", "--", "/*", "*/", "e", "E", "5", "0", "12", "3.5", ".7", "1e5", "2E-3",
              "'s'", "'it''s'", "''", '"q 1"', "`b 2`", "[c 3]", "AND", "BETWEEN", "in",
              "LIKE", "-- note\n", "/* 4 */", "\u00b2", "\u0663"]


def _literal_like(kind: str, rng: random.Random) -> str:
    if kind == "number":
        return rng.choice(["7", "0", "123456", "2.25", ".5", "9e2", "10"])
    return rng.choice(["'z'", "'a''b'", "''", "'2020-01-01'", "'x y'"])


@settings(max_examples=scaled_examples(400), deadline=None)
@given(parts=st.lists(st.sampled_from(_FRAGMENTS), max_size=40), seed=st.integers(0, 10**6))
def test_lex_with_remembered_skeletons_equals_lexing_token_by_token(parts: list[str],
                                                                    seed: int) -> None:
    text = "".join(parts)
    assert lex(text) == lex_tokens(text)
    assert lex(text) == lex_tokens(text)  # its skeleton remembered now
    # another text of the same skeleton: its literals rewritten, same kinds
    full = lex_tokens(text)
    rng = random.Random(seed)
    other, at = [], 0
    for lit in full.literals:
        start = lit.start + (1 if lit.text.startswith("-") and lit.kind == "number" else 0)
        start = text.index(lit.text.lstrip("-"), start) if lit.kind == "number" else lit.start
        other.append(text[at:start])
        other.append(_literal_like(lit.kind, rng))
        at = lit.end
    other.append(text[at:])
    second = "".join(other)
    assert lex(second) == lex_tokens(second), (text, second)


def test_lex_remembers_skeletons_and_signs() -> None:
    shapes._SKELETONS.clear()
    sql = "SELECT a - -3, f(- 2) FROM t WHERE a BETWEEN -1 AND 'x' -- 5\n AND b = 2"
    assert lex(sql) == lex_tokens(sql)
    assert len(shapes._SKELETONS) == 1
    (template, signs, _, _), = shapes._SKELETONS.values()  # type: ignore[misc]
    assert signs == (1, 2, 1, 0, 0)  # the '-' before 3, 2 and 1 are signs; 'x' and 2 none
    again = sql.replace("-3", "-40").replace("'x'", "'it''s'")
    assert lex(again) == lex_tokens(again) and len(shapes._SKELETONS) == 1
    assert [lit.text for lit in lex(again).literals] == ["-40", "-2", "-1", "'it''s'", "2"]


@settings(max_examples=scaled_examples(200), deadline=None)
@given(values=st.lists(st.tuples(st.integers(-5, 30), st.integers(-5, 30),
                                 st.sampled_from(["F", "f", "5", "2020-01-02", "2021-03-04",
                                                  "a'b"]),
                                 st.sampled_from(["1", "1.0", "2.50", "-3", "0012"])),
                       min_size=1, max_size=6),
       abstract=st.sets(st.integers(0, 4)),
       groups=st.sampled_from([None, ((0, 1), (2, 3, 4)), ((0,), (1, 2), (3, 4)),
                               ((0, 1, 2, 3, 4),)]))
def test_remembered_keys_equal_shape_key(values: list[tuple[int, int, str, str]],
                                         abstract: set[int],
                                         groups: tuple[tuple[int, ...], ...] | None) -> None:
    chosen = frozenset(abstract)
    for a, b, s, d in values:
        quoted = s.replace("'", "''")
        sql = (f"SELECT COUNT(*) FROM t WHERE a > {a} AND b < {b} AND c = '{quoted}' "
               f"AND d = {d} AND e = '{quoted}'")
        lexed = lex(sql)
        assert record_key("fp", lexed, chosen, groups) == shape_key("fp", lexed, chosen, groups)
        assert record_key("fp2", lexed, chosen, groups) == shape_key("fp2", lexed, chosen, groups)


TEXTS = [
    "SELECT COUNT(DISTINCT p.hos) FROM Pat p WHERE p.age < {age} AND p.sex = '{s}'",
    "SELECT COUNT(*) FROM Doc d, PatDoc x WHERE d.id = x.doc AND d.specialty LIKE '{s}%' "
    "AND x.pat > {a}",
    "SELECT COUNT(*) FROM Pat p JOIN Hos h ON p.hos = h.id WHERE h.loc = '{s}' "
    "AND p.age BETWEEN {age} AND {age2}",
    "SELECT SUM(p.age) FROM Pat p WHERE p.age BETWEEN {a} AND {age2}",
    "SELECT AVG(p.age) FROM Pat p WHERE p.hos = {a} AND p.sex = '{s}'",
]


def _records(count: int, seed: int) -> list[Record]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        age, a = rng.randrange(0, 90), rng.randrange(1, 40)
        text = rng.choice(["F", "M", "é", "a'b", 'q"\\'])
        sql = rng.choice(TEXTS).format(age=age, a=a, age2=age + a, s=text.replace("'", "''"))
        out.append(Record(f"r{i}\u2028", f"log.jsonl:{i + 1}", sql))
    return out


@pytest.mark.parametrize("lower", [True, False])
def test_lines_written_from_templates_equal_the_rows_made_the_long_way(
        tmp_path: Path, lower: bool) -> None:
    records = _records(60, 1 if lower else 2)
    cache = ShapeCache(tmp_path / "shapes.sqlite")
    first = [line.text for line in log_lines(records, cache=cache,
                                             settings=_settings(lower))]
    cache.commit()
    # the rows made the long way (decode the template, build the row, encode it)
    slow = [line_text(row) for row in analyse_log(records, cache=cache, full=False,
                                                  settings=_settings(lower))]
    fast = [line.text for line in log_lines(records, cache=cache, settings=_settings(lower))]
    assert fast == slow
    # in workers, in batches (the decided hits written there, the others here)
    assert [line.text for line in log_lines(records + records[:5], jobs=2, cache=cache,
                                            settings=_settings(lower))] == slow + slow[:5]
    assert [_uncached(t) for t in fast] == [_uncached(t) for t in first]
    rows = [json.loads(t) for t in fast]
    assert all(r["cached"] for r in rows) and {r["status"] for r in rows} == {"ok"}
    assert any(r["tight"] for r in rows) == lower
    assert all(r["id"] == rec.id and r["query"] == rec.sql for r, rec in zip(rows, records,
                                                                              strict=True))


def _settings(lower: bool) -> object:
    from cqsens.settings import Settings

    return Settings.from_mapping({"schema": SCHEMA, "prove_lower": lower})


def _uncached(text: str) -> str:
    return text.replace('"cached": true', '"cached": false')


def test_remembered_keys_and_skeletons_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shapes, "DIGESTS", 50)
    monkeypatch.setattr(shapes, "KEYS", 8)
    monkeypatch.setattr(shapes, "SKELETONS", 8)
    for i in range(400):  # pinned texts: a new remembered key for each value
        sql = f"SELECT SUM(p{i % 20}.age) FROM Pat p{i % 20} WHERE p{i % 20}.age > {i}"
        lexed = lex(sql)
        assert record_key("fp", lexed, frozenset()) == shape_key("fp", lexed, frozenset())
        assert sum(len(r.digests) for r in shapes._RECIPES.values()) <= 50
        assert len(shapes._RECIPES) <= 8 and len(shapes._SKELETONS) <= 8
