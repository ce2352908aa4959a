"""The certificate check's scratch database (evaluate.scratch), refilled for each database,
answers every query as a new database (evaluate.connect) does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cqsens.witness.evaluate import Database, connect, scratch

QUERIES = [
    'SELECT COUNT(*) FROM "R"',
    'SELECT COUNT(*) FROM "R" JOIN "S" ON "R"."a" = "S"."a"',
    'SELECT COUNT(DISTINCT "b") FROM "R" WHERE "a" > 2',
    "SELECT COUNT(*) FROM \"S\" WHERE typeof(\"a\") = 'integer'",
    "SELECT name FROM sqlite_master ORDER BY name",
]
_value = st.one_of(st.integers(0, 5), st.sampled_from(["1", "x", "2"]))
_types = st.sampled_from([("INT", "TEXT"), ("TEXT", "INT"), ("", "")])


@st.composite
def _databases(draw: st.DrawFn) -> Database:
    names = draw(st.sampled_from([("R",), ("R", "S"), ("S",)]))
    columns = {n: ("a", "b") for n in names}
    types = {n: draw(_types) for n in names}
    rows = {n: frozenset(draw(st.lists(st.tuples(_value, _value), max_size=5))) for n in names}
    return Database(columns, rows, types)


def _answers(conn: object, db: Database) -> list[object]:
    out: list[object] = []
    for sql in QUERIES:
        try:
            out.append(conn.execute(sql).fetchall())  # type: ignore[attr-defined]
        except Exception as err:  # noqa: BLE001 - a missing table is an answer too
            out.append(type(err).__name__)
    return out


@given(st.lists(_databases(), min_size=1, max_size=6))
def test_the_scratch_database_answers_as_a_new_one(dbs: list[Database]) -> None:
    for db in dbs:
        fresh = connect(db)
        try:
            want = _answers(fresh, db)
        finally:
            fresh.close()
        assert _answers(scratch(db), db) == want


def test_a_fill_interrupted_mid_transaction_does_not_break_the_next() -> None:
    # a time limit may stop a fill between BEGIN and COMMIT (the alarm of `cqsens report`):
    # the next fill of the same layout still gives exactly its own database
    first = Database({"R": ("a", "b")}, {"R": frozenset({(1, 2), (3, 4)})}, {"R": ("INT", "INT")})
    second = Database({"R": ("a", "b")}, {"R": frozenset({(5, 6)})}, {"R": ("INT", "INT")})
    conn = scratch(first)
    conn.execute("BEGIN")
    conn.execute('DELETE FROM "R"')  # the interrupted fill left its transaction open
    assert conn.in_transaction
    assert _answers(scratch(second), second)[0] == [(1,)]
    assert not scratch(second).in_transaction
