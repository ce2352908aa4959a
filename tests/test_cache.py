"""The canonical-shape cache: a cached result equals a fresh analysis; value bounds stay keyed."""

from __future__ import annotations

import json
from datetime import date, timedelta
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cqsens.errors import ParseError
from cqsens.explain import jsonable
from cqsens.logs import Record, ShapeCache, analyse_log
from cqsens.pipeline import analyze
from cqsens.witness.certificate import is_witness
from cqsens.witness.model import Witness
from tests.conftest import scaled_examples

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
    """A fresh analysis without the witness search: :func:`_same` compares the cached row's
    lower bound with the fresh upper bound, and every other field it compares is the same
    with or without a search."""
    return analyze(sql, schema=SCHEMA, kind="sql", prove_lower=False).to_dict()


def _same(row: dict[str, object], fresh: dict[str, object]) -> None:
    got = row["analysis"]
    assert isinstance(got, dict)
    for key in ("satisfiable", "connected", "delta_str", "paper", "aggregate", "aggregates",
                "dependencies", "free"):
        assert got[key] == fresh[key], key
    s, f = got["sensitivity"], fresh["sensitivity"]
    assert (s["upper"], s["l1"], s["l2"]) == (f["upper"], f["l1"], f["l2"])
    # a lower bound is a witness of the record's own (each search may find another one)
    assert s["lower"] is None or f["upper"] == "inf" or (
        s["lower"] != "inf" and Fraction(str(s["lower"])) <= Fraction(str(f["upper"])))
    # the texts name the record's own constants (atoms may be listed in another order)
    assert sorted(str(got["cq"]).split()) == sorted(str(fresh["cq"]).split())
    assert sorted(" ".join(got["explanation"]).split()) == \
        sorted(" ".join(fresh["explanation"]).split())


@pytest.mark.slow
@settings(max_examples=scaled_examples(25), deadline=None)
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


@pytest.mark.parametrize("big", ["99999999999999999999", "-9223372036854775809",
                                 "18446744073709551616"])
def test_an_integer_past_64_bits_is_refused_as_in_a_fresh_analysis(big: str) -> None:
    """SQLite reads 99999999999999999998 and 99999999999999999999 as the same float, so
    ``x = A AND y = B AND x = y`` holds; a fresh analysis refuses the literal, and the
    cache served the shape's 0 (as ``1 ≠ 2``) before."""
    template = "SELECT COUNT(*) FROM Pat p WHERE p.hos = {} AND p.age = {} AND p.hos = p.age"
    sqls = [template.format(1, 2), template.format(big[:-1] + "8", big)]
    rows = list(analyse_log([Record(str(i), str(i), s) for i, s in enumerate(sqls)],
                            cache=ShapeCache(), schema=SCHEMA, prove_lower=False))
    assert rows[0]["status"] == "ok" and rows[0]["upper"] == 0
    assert rows[1]["status"] == "error" and not rows[1]["cached"]
    assert "integer too large" in str(rows[1]["error"])
    with pytest.raises(ParseError, match="integer too large"):
        analyze(sqls[1], schema=SCHEMA, kind="sql", prove_lower=False)


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


# -- issue #28: ranges, dates and LIKE abstracted; witnesses per key -------------------------

VISITS = """CREATE TABLE Pat (id INTEGER PRIMARY KEY, name TEXT,
                  age INTEGER CHECK (age BETWEEN 0 AND 120));
CREATE TABLE Visit (id INTEGER PRIMARY KEY, pat INTEGER REFERENCES Pat(id), day DATE, kind TEXT);
"""
RANGE_SHAPES = [
    (SCHEMA, "SELECT COUNT(*) FROM Pat p JOIN PatDoc pd ON p.id = pd.pat "
             "WHERE p.age > {age} AND pd.pat > {a}"),
    (SCHEMA, "SELECT COUNT(*) FROM Pat p JOIN Hos h ON p.hos = h.id "
             "WHERE h.loc = '{s}' AND p.age BETWEEN {age} AND {age2}"),
    (SCHEMA, "SELECT COUNT(DISTINCT p.hos) FROM Pat p WHERE p.age < {age} AND p.sex = '{s}'"),
    (SCHEMA, "SELECT COUNT(*) FROM Doc d, PatDoc x WHERE d.id = x.doc "
             "AND d.specialty LIKE '{s}%' AND x.pat > {a}"),
    (SCHEMA, "SELECT COUNT(*) FROM Pat p1, Pat p2 WHERE p1.id = p2.id AND p1.age > {age} "
             "AND p2.age < {age2}"),  # the chase meets both ranges: their order is kept
    (SCHEMA, "SELECT SUM(p.age) FROM Pat p WHERE p.age <= {age2} AND p.sex = '{s}'"),
    (VISITS, "SELECT COUNT(DISTINCT v.pat) FROM Visit v "
             "WHERE v.day BETWEEN DATE '{d1}' AND DATE '{d2}' AND v.kind = '{s}'"),
    (VISITS, "SELECT COUNT(*) FROM Visit v JOIN Pat p ON v.pat = p.id "
             "WHERE v.day >= DATE '{d1}' AND p.name LIKE '{s}%'"),
    (VISITS, "SELECT v.kind, COUNT(*) FROM Visit v WHERE v.day < DATE '{d2}' GROUP BY v.kind"),
]
_values_of = st.tuples(st.integers(1, 5000), st.integers(0, 130), st.integers(0, 40),
                       st.sampled_from(["F", "M", "NY", "a_b", "z", "%"]),
                       st.dates(min_value=date(1990, 1, 1), max_value=date(2030, 12, 31)),
                       st.integers(0, 400))


def _sql(shape: str, values: tuple[int, int, int, str, date, int]) -> str:
    a, age, wide, s, day, days = values
    return shape.format(a=a, age=age, age2=age + wide, s=s, d1=day.isoformat(),
                        d2=(day + timedelta(days=days)).isoformat())


@settings(max_examples=scaled_examples(40), deadline=None)
@given(shape=st.sampled_from(RANGE_SHAPES), values=st.lists(_values_of, min_size=2, max_size=5))
def test_cached_upper_equals_fresh_upper_on_ranges_dates_and_like(
        shape: tuple[str, str], values: list[tuple[int, int, int, str, date, int]]) -> None:
    schema, text = shape
    sqls = [_sql(text, v) for v in values]
    records = [Record(f"r{i}", f"log:{i}", sql) for i, sql in enumerate(sqls)]
    rows = list(analyse_log(records, cache=ShapeCache(), schema=schema, prove_lower=False))
    for row, sql in zip(rows, sqls, strict=True):
        fresh = analyze(sql, schema=schema, kind="sql", prove_lower=False).to_dict()
        s, f = row["analysis"]["sensitivity"], fresh["sensitivity"]
        assert (row["upper"], s["l1"], s["l2"]) == (f["upper"], f["l1"], f["l2"]), sql
        assert row["analysis"]["satisfiable"] == fresh["satisfiable"], sql


def test_range_constants_share_one_key() -> None:
    text = RANGE_SHAPES[1][1]
    sqls = [_sql(text, (1, age, wide, s, date(2020, 1, 1), 1))
            for age, wide, s in ((20, 20, "C"), (78, 18, "D"), (5, 14, "X"), (99, 1, "M"))]
    cache = ShapeCache()
    rows = list(analyse_log([Record(str(i), str(i), s) for i, s in enumerate(sqls)],
                            cache=cache, schema=SCHEMA, prove_lower=False))
    assert [r["cached"] for r in rows] == [False, True, True, True]
    assert cache.stats() == {"hits": 3, "misses": 1, "stored": 1}


def test_like_meeting_a_constant_and_value_ranges_stay_keyed() -> None:
    from cqsens.logs.plan import abstract_literals
    from cqsens.logs.shape import lex

    def plan(sql: str) -> tuple[int, ...]:
        query = analyze(sql, schema=SCHEMA, kind="sql", prove_lower=False).query_obj
        return tuple(sorted(abstract_literals(query, lex(sql)).abstract))

    # the LIKE pattern 'a_c' and the constant 'abc' can meet (the key id makes d and e one
    # row): 'abd' would not match, so both stay in the key
    assert plan("SELECT COUNT(*) FROM Doc d, Doc e WHERE d.id = e.id AND d.specialty = 'abc' "
                "AND e.specialty LIKE 'a_c'") == ()
    assert plan("SELECT COUNT(*) FROM Doc d WHERE d.specialty LIKE 'a_c' AND d.hos = 3") == (0, 1)
    # a SUM's column: its range is its value bound; another column's constant is not
    assert plan("SELECT SUM(p.age) FROM Pat p WHERE p.age <= 30 AND p.hos = 7") == (1,)


def _captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Witness]:
    import cqsens.logs.serve as run

    seen: dict[str, Witness] = {}
    original = run._reuse

    def spy(proof: object, key: str, lexed: object, record: Record, opts: object,
            plan: object) -> Witness | None:
        got = original(proof, key, lexed, record, opts, plan)  # type: ignore[arg-type]
        if got is not None:
            seen[record.id] = got
        return got

    monkeypatch.setattr(run, "_reuse", spy)
    return seen


@settings(max_examples=scaled_examples(6), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.sampled_from([0, 1, 2, 3, 6]),
       values=st.lists(_values_of, min_size=3, max_size=6))
def test_every_reported_lower_bound_has_a_witness_checked_for_its_own_record(
        monkeypatch: pytest.MonkeyPatch, index: int,
        values: list[tuple[int, int, int, str, date, int]]) -> None:
    schema, text = RANGE_SHAPES[index]
    seen = _captured(monkeypatch)
    sqls = [_sql(text, v) for v in values]
    records = [Record(f"r{i}", f"log:{i}", sql) for i, sql in enumerate(sqls)]
    rows = list(analyse_log(records, cache=ShapeCache(), schema=schema))
    earlier: dict[str, object] = {}
    for row, sql in zip(rows, sqls, strict=True):
        assert (row["lower"] is None) == (row["proof"] is None)
        repeated = sql in earlier
        proven = earlier.setdefault(sql, row["lower"])
        if row["proof"] != "reused":
            continue
        if row["id"] not in seen:  # the text of an earlier record: the bound proven for it
            assert repeated and proven is not None and row["lower"] == proven
            continue
        # the instance, checked again from scratch against the record's own parsed query
        witness = seen[row["id"]]
        own = analyze(sql, schema=schema, kind="sql", prove_lower=False)
        assert is_witness(own.query_obj, own.sigma, witness, schema=own_schema(schema)), sql
        assert row["lower"] == jsonable(witness.lower)
        assert row["upper"] == jsonable(own.upper)
        assert witness.lower <= own.upper


def own_schema(schema: str) -> object:
    from cqsens.frontend.ddl import load_schema

    return load_schema(schema)


def test_witnesses_reused_in_workers_from_a_wal_file_and_merged(tmp_path: Path) -> None:
    text = RANGE_SHAPES[0][1]
    sqls = [_sql(text, (a, age, 0, "F", date(2020, 1, 1), 1))
            for a, age in ((50, 30), (70, 40), (90, 55), (10, 20), (33, 61), (44, 12))]
    records = [Record(f"r{i}", f"log:{i}", sql) for i, sql in enumerate(sqls)]
    file = tmp_path / "shapes.sqlite"
    cache = ShapeCache(file)
    rows = list(analyse_log(records, jobs=2, cache=cache, schema=SCHEMA))
    cache.close()
    import sqlite3

    (mode,) = sqlite3.connect(file).execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"
    assert rows[0]["proof"] == "searched" and rows[0]["lower"] is not None
    assert all(r["cached"] for r in rows[1:]) and any(r["proof"] == "reused" for r in rows)
    assert all(r["lower"] is not None for r in rows)
    merged = ShapeCache(tmp_path / "all.sqlite")
    assert merged.merge(file) == 1 and merged.merge(file) == 0
    again = list(analyse_log(records[1:2], cache=merged, schema=SCHEMA))
    assert again[0]["cached"] and again[0]["proof"] == "reused"


def test_a_record_run_again_is_served_its_proven_lower_bound_without_a_new_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import cqsens.logs.serve as run

    text = RANGE_SHAPES[0][1]
    sqls = [_sql(text, (a, age, 0, "F", date(2020, 1, 1), 1))
            for a, age in ((50, 30), (70, 40), (90, 55), (10, 20))]
    records = [Record(f"r{i}", f"log:{i}", sql) for i, sql in enumerate(sqls)]
    file = tmp_path / "shapes.sqlite"
    cache = ShapeCache(file)
    first = list(analyse_log(records, cache=cache, schema=SCHEMA))
    cache.close()
    assert all(r["lower"] is not None for r in first)
    checks: list[str] = []
    original = run._reuse

    def counted(proof: object, key: str, lexed: object, record: Record, opts: object,
                plan: object) -> Witness | None:
        checks.append(record.sql)
        return original(proof, key, lexed, record, opts, plan)  # type: ignore[arg-type]

    monkeypatch.setattr(run, "_reuse", counted)
    again_cache = ShapeCache(file)
    again = list(analyse_log(records, jobs=2, cache=again_cache, schema=SCHEMA))
    assert checks == []  # every record was proven on the first run: nothing checked again
    assert [(r["lower"], r["upper"], r["tight"], r["proof"]) for r in again] == \
        [(r["lower"], r["upper"], r["tight"], r["proof"]) for r in first]
    assert [r["proof"] for r in again] == ["searched", "reused", "reused", "reused"]
    # a record with new constants is still checked against its own query
    new = Record("n", "log:n", _sql(text, (61, 33, 0, "F", date(2020, 1, 1), 1)))
    row = list(analyse_log([new], cache=again_cache, schema=SCHEMA))[0]
    assert checks == [new.sql] and row["proof"] == "reused" and row["lower"] is not None


def test_total_timeout_and_the_summary(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cqsens.cli.main import cli

    rows = list(analyse_log([Record("a", "a", "SELECT COUNT(*) FROM Pat")], cache=ShapeCache(),
                            schema=SCHEMA, total_timeout=1e-9))
    assert rows[0]["status"] == "timeout" and "--total-timeout" in rows[0]["error"]
    log = tmp_path / "log.jsonl"
    text = RANGE_SHAPES[2][1]
    log.write_text("".join(json.dumps({"id": i, "sql": _sql(text, (1, age, 0, "F",
                                                                     date(2020, 1, 1), 1))})
                           + "\n" for i, age in enumerate((30, 40, 50))), encoding="utf-8")
    result = CliRunner().invoke(cli, ["report", str(log), "--schema", SCHEMA, "-o",
                                      str(tmp_path / "out.jsonl"), "--total-timeout", "60"])
    assert result.exit_code == 0, result.output
    assert "lower bounds: 1 proven, 2 reused, 0 skipped" in result.output


def test_a_file_that_is_not_a_cache_is_left_alone(tmp_path: Path) -> None:
    import sqlite3

    from cqsens.errors import InputError

    data = tmp_path / "data.sqlite"
    with sqlite3.connect(data) as conn:
        conn.execute("CREATE TABLE results (x)")
        conn.execute("CREATE TABLE patients (id)")
    with pytest.raises(InputError, match="not a cqsens cache"):
        ShapeCache(data)
    with sqlite3.connect(data) as conn:  # nothing dropped
        names = {n for (n,) in conn.execute("SELECT name FROM sqlite_master")}
    assert names == {"results", "patients"}
