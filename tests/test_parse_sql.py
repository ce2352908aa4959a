"""SQL → CQ golden cases, and rejected constructs."""

from __future__ import annotations

import pytest

from cqsens.errors import InputError
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.parse_cq import parse_cq
from cqsens.frontend.parse_sql import parse_sql
from tests.helpers import FIXTURES, load_golden_pairs, load_invalid

PAIRS = load_golden_pairs("parse_sql.sql")
SCHEMA = schema_from_ddl((FIXTURES.parents[1] / "examples/hospital/schema.sql").read_text())


@pytest.mark.parametrize(("meta", "sql", "expected"), PAIRS, ids=[m["title"] for m, _, _ in PAIRS])
def test_golden(meta: dict[str, str], sql: str, expected: str) -> None:
    schema = SCHEMA if meta.get("schema") else None
    q = parse_sql(sql, schema=schema)
    text = str(q.cq)
    # filter atoms print as [template]; compare on the canonical text
    assert _normalise(text) == _normalise(expected)


def _normalise(text: str) -> str:
    import re

    # "[{0} > 40](Pat_age)" in the fixture stands for the printed "[Pat_age > 40]"
    def fill(m: re.Match[str]) -> str:
        args = [a.strip() for a in m.group(2).split(",")]
        return "[" + m.group(1).format(*args) + "]"

    return re.sub(r"\[(.*?)\]\(([^)]*)\)", fill, text)


@pytest.mark.parametrize("sql", load_invalid("parse_sql__invalid.sql"))
def test_invalid(sql: str) -> None:
    with pytest.raises(InputError) as info:
        parse_sql(sql, schema=SCHEMA, source="q.sql")
    err = info.value
    assert err.construct, "the error names the construct"
    assert err.line is not None and err.column is not None, f"no position: {err}"
    assert str(err).startswith("q.sql:")


def test_without_schema_notes_the_columns() -> None:
    q = parse_sql("SELECT COUNT(*) FROM R WHERE R.a = 1")
    assert any("no schema" in n for n in q.notes)
    # without a key the rows of R may repeat: COUNT(*) counts each copy (its row identity)
    assert str(q.cq) == str(parse_cq("Q(R_rest, R__row) :- R(1, R_rest, R__row)."))
    assert q.row_positions == {"R": 2}


def test_dialect() -> None:
    q = parse_sql("SELECT COUNT(DISTINCT `t`.`a`) FROM `R` AS `t`", dialect="mysql")
    assert [v.name for v in q.cq.free] == ["t_a"]


def test_unknown_dialect_is_an_input_error() -> None:
    with pytest.raises(InputError):
        parse_sql("SELECT COUNT(*) FROM R", dialect="nosuchdialect")


@pytest.mark.parametrize(("sql", "where", "words"), [
    ("SELECT COUNT(*) FROM Pat WHERE", "q.sql:1:", "incomplete WHERE"),
    ("SELECT COUNT(*) FROM Pat WHERE age IN", "q.sql:1:", "IN without values"),
    ("SELECT COUNT(*) FROM Pat WHERE sex = 'F", "q.sql:1:", "does not parse"),
    ("SELECT COUNT(*) FROM Pat; SELECT COUNT(*) FROM Doc", "q.sql:1:", "exactly one"),
    ("\n  \n", "q.sql:3:1", "found 0"),
])
def test_errors_give_a_position(sql: str, where: str, words: str) -> None:
    with pytest.raises(InputError) as info:
        parse_sql(sql, schema=SCHEMA, source="q.sql")
    assert str(info.value).startswith(where) and words in str(info.value)
    assert "sqlglot" not in str(info.value)


def test_unknown_dialect_names_the_option() -> None:
    with pytest.raises(InputError) as info:
        parse_sql("SELECT COUNT(*) FROM R", dialect="Postgres", source="q.sql")
    assert str(info.value).startswith("--dialect: Unknown dialect 'Postgres'")
