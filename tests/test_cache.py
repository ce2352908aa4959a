"""The canonical-shape cache: a cached result equals a fresh analysis; value bounds stay keyed."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cqsens.logs import Record, ShapeCache, analyse_log
from cqsens.pipeline import analyze

SCHEMA = str(Path(__file__).resolve().parents[1] / "examples/hospital/schema.sql")
SHAPES = [
    "SELECT COUNT(*) FROM Pat p JOIN PatDoc pd ON p.id = pd.pat WHERE p.sex = '{s}' AND pd.doc = {a}",
    "SELECT COUNT(*) FROM Pat p JOIN Hos h ON p.hos = h.id WHERE h.loc = '{s}' AND p.id > {a}",
    "SELECT COUNT(DISTINCT p.hos) FROM Pat p WHERE p.id BETWEEN {a} AND {b} AND p.sex IN ('{s}', 'F')",
    "SELECT SUM(p.age) FROM Pat p WHERE p.age BETWEEN {a} AND {b}",
    "SELECT AVG(p.age) FROM Pat p WHERE p.hos = {a} AND p.sex = '{s}'",
    "SELECT COUNT(*) FROM Doc d, PatDoc x WHERE d.id = x.doc AND d.hos = {a} AND x.pat = {b}",
]


def _fresh(sql: str) -> dict[str, object]:
    return analyze(sql, schema=SCHEMA, kind="sql").to_dict()


def _same(row: dict[str, object], fresh: dict[str, object]) -> None:
    got = row["analysis"]
    assert isinstance(got, dict)
    for key in ("satisfiable", "connected", "delta_str", "paper", "aggregate", "aggregates",
                "dependencies", "free"):
        assert got[key] == fresh[key], key
    s, f = got["sensitivity"], fresh["sensitivity"]
    assert (s["upper"], s["l1"], s["l2"]) == (f["upper"], f["l1"], f["l2"])
    assert s["lower"] is None or s["lower"] == f["lower"]  # dropped, never different
    # the texts name the record's own constants (atoms may be listed in another order)
    assert sorted(str(got["cq"]).split()) == sorted(str(fresh["cq"]).split())
    assert sorted(" ".join(got["explanation"]).split()) == \
        sorted(" ".join(fresh["explanation"]).split())


@settings(max_examples=25, deadline=None)
@given(shape=st.sampled_from(SHAPES),
       values=st.lists(st.tuples(st.integers(-3, 200), st.integers(-3, 200),
                                 st.sampled_from(["F", "M", "NY", "a'b", "z"])),
                       min_size=2, max_size=4))
def test_cached_result_equals_fresh_analysis(shape: str, values: list[tuple[int, int, str]]) -> None:
    sqls = [shape.format(a=a, b=b, s=s.replace("'", "''")) for a, b, s in values]
    records = [Record(f"r{i}", f"log:{i}", sql) for i, sql in enumerate(sqls)]
    rows = list(analyse_log(records, cache=ShapeCache(), schema=SCHEMA))
    for row, sql in zip(rows, sqls, strict=True):
        _same(row, _fresh(sql))


def test_value_bound_constants_stay_in_the_key() -> None:
    sqls = ["SELECT SUM(p.age) FROM Pat p WHERE p.age BETWEEN 10 AND 20",
            "SELECT SUM(p.age) FROM Pat p WHERE p.age BETWEEN 10 AND 30",
            "SELECT SUM(p.age) FROM Pat p WHERE p.age BETWEEN 11 AND 30"]
    rows = list(analyse_log([Record(str(i), str(i), s) for i, s in enumerate(sqls)],
                            cache=ShapeCache(), schema=SCHEMA, prove_lower=False))
    assert [r["upper"] for r in rows] == [20, 30, 30]
    assert not any(r["cached"] for r in rows)


def test_equal_constants_stay_equal_and_cache_persists(tmp_path: Path) -> None:
    same = "SELECT COUNT(*) FROM Doc d, PatDoc x WHERE d.id = x.doc AND d.hos = 5 AND x.pat = 5"
    other = "SELECT COUNT(*) FROM Doc d, PatDoc x WHERE d.id = x.doc AND d.hos = 6 AND x.pat = 7"
    file = tmp_path / "c.sqlite"
    cache = ShapeCache(file)
    rows = list(analyse_log([Record("a", "a", same), Record("b", "b", other)], cache=cache,
                            schema=SCHEMA))
    cache.close()
    assert [r["cached"] for r in rows] == [False, False]  # 5 = 5 is another shape than 6 ≠ 7
    cache = ShapeCache(file)
    again = list(analyse_log([Record("c", "c", other.replace("6", "8").replace("7", "9"))],
                             cache=cache, schema=SCHEMA))
    assert again[0]["cached"] and cache.stats()["misses"] == 0
    assert "8" in json.dumps(again[0]["analysis"]["cq"])
    _same(again[0], _fresh(other.replace("6", "8").replace("7", "9")))


def test_compact_rows_equal_full_rows_and_memory_is_bounded(tmp_path: Path,
                                                             monkeypatch: object) -> None:
    import cqsens.logs.cache as cache_module
    from cqsens.cli.logs import compact
    from cqsens.logs.shape import lex, literal_value

    monkeypatch.setattr(cache_module, "MEMORY", 2)  # type: ignore[attr-defined]
    sqls = [shape.format(a=a, b=a + 3, s=s) for a, s in ((5, "F"), (-7, "M"), (40, "x''y"))
            for shape in SHAPES]
    records = [Record(f"r{i}", f"log:{i}", sql) for i, sql in enumerate(sqls)]
    file = tmp_path / "c.sqlite"
    first = ShapeCache(file)
    full = list(analyse_log(records, cache=first, schema=SCHEMA, prove_lower=False))
    first.close()
    again = ShapeCache(file)  # every record a hit, read back from the file through 2 slots
    short = list(analyse_log(records, cache=again, schema=SCHEMA, prove_lower=False,
                             full=False))
    assert again.stats()["misses"] == 0 and len(again._plans) <= 2
    assert all("analysis" not in row for row in short)
    assert [compact(r) | {"cached": True} for r in full] == short
    assert any(r["cached"] for r in full) and short[-1]["query"] == sqls[-1]
    assert [literal_value(lit) for lit in lex("SELECT -12, 0012, 1.50, '7'").literals] == \
        [-12, 12, Fraction(3, 2), "7"]
