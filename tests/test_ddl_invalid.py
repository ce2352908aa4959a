"""Invalid DDL is an error at ``file:line:col`` naming the construct; so is ``--bounds``
for a column the schema lacks."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens.cli.exits import EXIT_INPUT
from cqsens.cli.main import cli
from cqsens.errors import InputError, ParseError, SchemaError
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.release.values import check_value_bounds, parse_value_bounds

ROOT = Path(__file__).resolve().parents[1]

# (ddl, error class, line, column, words of the message)
INVALID = [
    ("CREATE TABLE t (a INT,, b INT)", ParseError, 1, 23, "empty item in a list"),
    ("CREATE TABLE t (, a INT)", ParseError, 1, 17, "empty item in a list"),
    ("CREATE TABLE t (a INT,)", ParseError, 1, 22, "empty item in a list"),
    ("CREATE TABLE t (a INT, b TEXT, a INT)", SchemaError, 1, 32, "declares column a twice"),
    ("CREATE TABLE t (a INT, A INT)", SchemaError, 1, 24, "declares column A twice"),
    ("CREATE TABLE t ()", SchemaError, 1, 14, "declares no column"),
    ("CREATE TABLE t", SchemaError, 1, 14, "declares no column"),
    ("CREATE TABLE t AS SELECT * FROM u", SchemaError, 1, 14, "AS SELECT is not supported"),
    ("CREATE TABLE t (a INT CHECK (b > 0))", SchemaError, 1, 30, "names column 'b'"),
    ("CREATE TABLE t (a INT,\n  CHECK (a > 0 AND zz < 5))", SchemaError, 2, 20,
     "names column 'zz'"),
    ("CREATE TABLE t (a INT, CONSTRAINT c CHECK (q > 0))", SchemaError, 1, 44,
     "names column 'q'"),
    ('CREATE TABLE "t\x00x" (a INT)', SchemaError, 1, 14, "control character"),
    ('CREATE TABLE t ("a\x00" INT)', SchemaError, 1, 17, "control character"),
    ("CREATE TABLE t (a INT PRIMARY KEY,\n b INT PRIMARY KEY)", SchemaError, 2, 2,
     "declares 2 primary keys"),
    ("CREATE TABLE t (a INT PRIMARY KEY, b INT, PRIMARY KEY (b))", SchemaError, 1, 56,
     "declares 2 primary keys"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (zz))", SchemaError, 1, 37, "names column 'zz'"),
    ("CREATE TABLE t (a INT);\nCREATE TABLE T (b INT)", SchemaError, 2, 14,
     "declared twice"),
    ("CREATE INDEX i ON t (a)", SchemaError, 1, 1, "declares no table"),
    ("CREATE TABLE t (a INT", ParseError, 1, 21, "does not parse"),
    ("CREATE TABLE t (a VARCHAR(10) DEFAULT 'x)", ParseError, 1, None, "does not parse"),
]


@pytest.mark.parametrize(("ddl", "error", "line", "column", "words"), INVALID,
                         ids=[case[4] + f" {i}" for i, case in enumerate(INVALID)])
def test_invalid_ddl(ddl: str, error: type[InputError], line: int, column: int | None,
                     words: str) -> None:
    with pytest.raises(error) as info:
        schema_from_ddl(ddl, source="s.sql")
    err = info.value
    assert words in err.message
    assert err.construct
    assert err.line == line and err.column is not None
    if column is not None:
        assert err.column == column, str(err)
    assert str(err).startswith(f"s.sql:{line}:{err.column}: ")


def test_keys_that_stay_valid() -> None:
    schema = schema_from_ddl("CREATE TABLE t (a INT PRIMARY KEY, b INT UNIQUE, c INT, "
                             "d INT, UNIQUE (c, d), CHECK (c BETWEEN 0 AND 9))")
    rel = schema.relations[0]
    assert rel.keys == (0, 1) and rel.composite_keys == ((2, 3),)
    assert rel.bounds == ((2, 0.0, 9.0),)


def test_a_check_bound_beyond_64_bits_is_still_read() -> None:
    rel = schema_from_ddl("CREATE TABLE t (a NUMERIC CHECK (a BETWEEN 0 AND "
                          "99999999999999999999999))").relations[0]
    assert rel.bounds[0][2] == 99999999999999999999999  # exact, not the float 1e23


def test_cli_reports_the_schema_position(tmp_path: Path) -> None:
    schema = tmp_path / "schema.sql"
    schema.write_text("CREATE TABLE Pat (id INT PRIMARY KEY,\n  sex TEXT PRIMARY KEY)\n")
    result = CliRunner().invoke(cli, ["analyze", "--sql", "SELECT COUNT(*) FROM Pat",
                                      "--schema", str(schema)])
    assert result.exit_code == EXIT_INPUT
    assert result.stderr.startswith(f"{schema}:2:3: table Pat declares 2 primary keys")


# -- --bounds against the schema ---------------------------------------------------------

SCHEMA = schema_from_ddl((ROOT / "examples/hospital/schema.sql").read_text(encoding="utf-8"))


def test_bounds_for_a_missing_column() -> None:
    with pytest.raises(InputError) as info:
        check_value_bounds(parse_value_bounds(["Pat.nocol=0:1"]), SCHEMA)
    assert str(info.value) == ("--bounds: table Pat has no column nocol (columns: id, sex, hos, "
                               "age) [--bounds]")


def test_bounds_for_a_missing_table() -> None:
    with pytest.raises(InputError, match="table nope is not in the schema"):
        check_value_bounds(parse_value_bounds(["Nope.age=0:1"]), SCHEMA)


def test_bounds_without_a_schema_or_for_a_real_column() -> None:
    check_value_bounds(parse_value_bounds(["Pat.nocol=0:1"]), None)
    check_value_bounds(parse_value_bounds(["PAT.AGE=0:120"]), SCHEMA)
