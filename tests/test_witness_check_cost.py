"""What makes the certificate check of a query log's witness instances cheaper keeps its
answers: everything declared is closed under taking fewer rows (so is_witness checks it
on A ∪ {t} only), the CHECK rows inserted together answer as each row alone, and an
instance's database maps each distinct cell as the mapper maps it."""

from __future__ import annotations

import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from cqsens.frontend.ddl import load_schema
from cqsens.ir.dependencies import Dependency, MultiDependency, Sigma
from cqsens.ir.expr import Compare, Slot, literal_of
from cqsens.logs.proofs import _layout, _mapped_db
from cqsens.witness import schema_checks
from cqsens.witness.certificate import declared_hold
from cqsens.witness.evaluate import Database, Value
from cqsens.witness.schema_checks import checks_hold

COLUMNS = {"R": ("a", "b", "c")}
_cell = st.one_of(st.integers(-2, 3), st.sampled_from(["x", "1", "y"]))
_rows = st.sets(st.tuples(_cell, _cell, _cell), max_size=6)
_dependency = st.one_of(
    st.builds(Dependency, st.just("R"), st.integers(0, 2), st.integers(0, 2),
              st.integers(1, 2)),
    st.builds(Dependency, st.just("R"), st.integers(0, 2), st.just(-1), st.integers(1, 2)),
    st.builds(MultiDependency, st.just("R"), st.just((0, 1)), st.just(2), st.integers(1, 2)),
)


@given(rows=_rows, extra=st.tuples(_cell, _cell, _cell),
       deps=st.lists(_dependency, max_size=3),
       keys=st.sampled_from([(), ((0,),), ((0, 1),)]),
       low=st.integers(-3, 3))
def test_what_is_declared_holds_on_fewer_rows(rows: set[tuple[Value, ...]],
                                              extra: tuple[Value, ...],
                                              deps: list[Dependency | MultiDependency],
                                              keys: tuple[tuple[int, ...], ...],
                                              low: int) -> None:
    """declared_hold(A ∪ {t}) implies declared_hold(A), keys, Σ and CHECK ranges alike."""
    a = Database(COLUMNS, {"R": frozenset(rows)})
    full = a.with_row("R", extra)
    checks = {("R", 0): [Compare(">=", Slot(0), literal_of(low))]}
    kwargs = {"column_checks": checks, "keys": {"R": keys} if keys else {}}
    sigma = Sigma.of(deps)
    if declared_hold(full, sigma, **kwargs):  # type: ignore[arg-type]
        assert declared_hold(a, sigma, **kwargs)  # type: ignore[arg-type]


SCHEMA = load_schema("CREATE TABLE R (a INTEGER NOT NULL CHECK (a BETWEEN 0 AND 5), "
                     "b TEXT CHECK (length(b) < 3), c INT, CHECK (c IS NULL OR c <> a));")
_checked_cell = st.one_of(st.none(), st.integers(-1, 6), st.sampled_from(["", "ab", "abc", "2"]))


def _alone(row: tuple[Value | None, ...]) -> bool:
    """The row inserted alone into a new SQLite table of the witness's column types and
    the schema's CHECKs (what checks_hold replays; NOT NULL is a CHECK of its own there)."""
    assert SCHEMA is not None
    table = SCHEMA.find("R")
    assert table is not None
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"CREATE TABLE R (a INTEGER, b TEXT, c INT, "
                     f"{', '.join(f'CHECK ({c})' for c in table.checks)})")
        conn.execute("INSERT INTO R VALUES (?, ?, ?)", row)
        return True
    except sqlite3.Error:
        return False
    finally:
        conn.close()


@given(st.lists(st.sets(st.tuples(_checked_cell, _checked_cell, _checked_cell), max_size=5),
                min_size=1, max_size=4))
def test_check_rows_together_answer_as_each_row_alone(batches: list[set[tuple[object, ...]]]
                                                      ) -> None:
    schema_checks._ROWS.memo.clear()  # every batch's rows new, then some remembered
    for rows in batches:
        db = Database(COLUMNS, {"R": frozenset(rows)},  # type: ignore[arg-type]
                      {"R": ("INTEGER", "TEXT", "INT")})
        assert checks_hold(db, SCHEMA) == all(_alone(r) for r in rows)  # type: ignore[arg-type]


_typed_cell = st.one_of(st.integers(0, 3), st.sampled_from([1.0, True, "1", "a", 2.5]))


@given(rows=st.sets(st.tuples(_typed_cell, _typed_cell), max_size=8),
       image=st.dictionaries(st.tuples(st.sampled_from([int, float, bool, str]), _typed_cell),
                             _typed_cell))
def test_an_instance_maps_each_distinct_cell_as_the_mapper_does(
        rows: set[tuple[Value, ...]], image: dict[tuple[type, Value], Value]) -> None:
    db = Database({"R": ("a", "b")}, {"R": frozenset(rows)})

    def value(v: Value | None) -> Value | None:
        return image.get((type(v), v), v)

    assert _mapped_db(db, value).rows["R"] == frozenset(
        tuple(value(x) for x in row) for row in rows)
    # row by row, types included (1, 1.0 and True are equal in Python, not in SQL)
    layout = _layout(db)
    mapped = [value(c) for c in layout.cells]
    got = [get(mapped) for get in layout.getters["R"]]
    assert list(map(repr, got)) == [repr(tuple(value(x) for x in row)) for row in db.rows["R"]]
