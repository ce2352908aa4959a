"""A record's SQLite text from its key's template equals sqlglot's own transpilation."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cqsens.frontend.sqlgen import _transpiled
from cqsens.logs.shape import lex
from cqsens.logs.transpiled import record_sqlite

SHAPES = [
    "SELECT COUNT(*) FROM Pat p JOIN PatDoc pd ON p.id = pd.pat WHERE p.age > {n} AND pd.pat > {m}",
    "SELECT COUNT(*) FROM Pat p JOIN Hos h ON p.hos = h.id WHERE h.loc = {s} "
    "AND p.age BETWEEN {n} AND {m}",
    "SELECT COUNT(*) FROM Doc d WHERE d.specialty LIKE {s} AND d.hos IN ({n}, {m})",
    "SELECT SUM(p.age * {n}) FROM Pat p WHERE p.sex = {s} AND p.id < {m} LIMIT 5",
    "SELECT COUNT(*) FROM t WHERE t.d >= DATE {s} AND t.d < DATE {s} + INTERVAL '1' DAY",
    "SELECT COUNT(*) FROM t WHERE t.x = {n} -- a comment with 7310000009137\n AND t.y = {s}",
    "SELECT COUNT(*) FROM t WHERE t.name = 'cqsens~mark~1~' AND t.x = {n}",
]
numbers = st.one_of(st.integers(-10**12, 10**12).map(str),
                    st.decimals(-1000, 1000, places=3, allow_nan=False).map(str),
                    st.sampled_from(["007", "1e3", ".5", "1.", "-0", "2.50"]))
strings = st.text(alphabet="abF'%_\\ 1-", max_size=6).map(lambda t: "'" + t.replace("'", "''")
                                                         + "'")


@given(shape=st.sampled_from(SHAPES), first=st.tuples(numbers, numbers, strings),
       later=st.lists(st.tuples(numbers, numbers, strings), min_size=1, max_size=4),
       dialect=st.sampled_from([None, "postgres", "mysql", "duckdb"]))
def test_a_record_from_the_template_is_what_sqlglot_writes(
        shape: str, first: tuple[str, str, str], later: list[tuple[str, str, str]],
        dialect: str | None) -> None:
    key = f"{shape}|{first}"  # a key of its own per example: the first record builds it
    for n, m, s in (first, *later):
        sql = shape.format(n=n, m=m, s=s)
        lexed = lex(sql)
        if len(lexed.literals) != len(lex(shape.format(n=1, m=2, s="'x'")).literals):
            continue  # a sign folded into another token: another shape, another key
        assert record_sqlite(key, sql, lexed, dialect) == _transpiled(sql, dialect), sql


def test_the_template_serves_plain_literals_and_refuses_the_rest() -> None:
    from cqsens.logs import transpiled

    def built(key: str, sql: str) -> bool:
        record_sqlite(key, sql, lex(sql), "postgres")
        return transpiled._TEMPLATES[(key, "postgres")] is not None

    assert built("k0", SHAPES[0].format(n="-2.5", m="7", s=""))
    assert built("k1", SHAPES[1].format(n="1", m="20", s="'it''s'"))
    assert not built("k2", SHAPES[0].format(n="1e3", m="7", s=""))  # not a plain number
    assert not built("k3", SHAPES[5].format(n="1", s="'a'"))  # a marker in the text
    assert not built("k4", "SELECT COUNT(*) FROM t WHERE t.s = 'a\\'b'")  # a backslash
