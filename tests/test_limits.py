"""The size limits of cqsens.frontend.limits: each hostile input is refused with a clean
InputError (exit 1) that states the limit and gives ``file:line:col``; input just within
a limit is read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens.cli.exits import EXIT_INPUT, EXIT_OK
from cqsens.cli.main import cli
from cqsens.errors import InputError
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.limits import (
    MAX_ARGUMENTS,
    MAX_ATOMS,
    MAX_CONDITIONS,
    MAX_EXPRESSION_DEPTH,
    MAX_INTEGER,
    MAX_LITERAL_LENGTH,
    MAX_NESTING,
)
from cqsens.frontend.parse_cq import parse_cq, parse_dependency
from cqsens.frontend.parse_sql import parse_sql

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "examples" / "hospital" / "schema.sql"
WHERE = "SELECT COUNT(*) FROM Pat WHERE "


def _refused(call: Callable[[], object], limit: int | str) -> InputError:
    with pytest.raises(InputError) as info:
        call()
    err = info.value
    assert "over the limit of" in err.message and str(limit) in err.message, err
    assert err.line is not None and err.column is not None, err
    return err


# -- the reproducers: each crashed with a RecursionError, OverflowError or ValueError ----------

def test_sixty_nested_parentheses() -> None:
    sql = WHERE + "(" * 60 + "Pat.age = 1" + ")" * 60
    err = _refused(lambda: parse_sql(sql, source="q.sql"), MAX_NESTING)
    assert str(err).startswith(f"q.sql:1:{len(WHERE) + MAX_NESTING + 1}: nesting too deep")


def test_thousand_term_and_chain() -> None:
    sql = WHERE + " AND ".join(f"Pat.age > {i}" for i in range(1000))
    err = _refused(lambda: parse_sql(sql, source="q.sql"), MAX_CONDITIONS)
    assert err.message.startswith("too many AND/OR operators: 999,")
    assert (err.line, err.column) == (1, len(WHERE) + 1)


def test_two_thousand_nots() -> None:
    _refused(lambda: parse_sql(WHERE + "NOT " * 2000 + "Pat.age = 1"), MAX_NESTING)


def test_three_thousand_deep_check() -> None:
    ddl = "CREATE TABLE t (a INT CHECK (" + "(" * 3000 + "a > 0" + ")" * 3000 + "))"
    err = _refused(lambda: schema_from_ddl(ddl, source="s.sql"), MAX_NESTING)
    assert str(err).startswith("s.sql:1:")


@pytest.mark.parametrize("text", [
    WHERE + "Pat.age = 99999999999999999999999",
    WHERE + "Pat.age = -9223372036854775808",
    WHERE + "Pat.age IN (1, 18446744073709551616)",
])
def test_integer_beyond_64_bits_in_sql(text: str) -> None:
    err = _refused(lambda: parse_sql(text, source="q.sql"), MAX_INTEGER)
    assert err.message.startswith("integer too large:")


def test_integer_beyond_64_bits_in_cq() -> None:
    err = _refused(lambda: parse_cq("Q() :- R(x, 99999999999999999999999)", source="q.cq"),
                   MAX_INTEGER)
    assert str(err).startswith("q.cq:1:13: integer too large: 99999999999999999999999,")


def test_integer_beyond_64_bits_in_a_cd() -> None:
    err = _refused(lambda: parse_dependency("PatDoc[1->2]<=99999999999999999999999"),
                   MAX_INTEGER)
    assert err.column == 15


def test_five_thousand_digit_position() -> None:
    err = _refused(lambda: parse_dependency("R[" + "1" * 5000 + "->1]"), MAX_ARGUMENTS)
    assert "a number of 5000 digits" in err.message and len(err.message) < 300


def test_five_thousand_digit_bound() -> None:
    _refused(lambda: parse_dependency("R[1->2]<=" + "9" * 5000), MAX_INTEGER)


def test_select_into_is_rejected_by_name() -> None:
    with pytest.raises(InputError) as info:
        parse_sql("SELECT COUNT(*) INTO x FROM Pat", source="q.sql")
    assert info.value.construct == "SELECT ... INTO"
    assert str(info.value).startswith("q.sql:1:")


def test_ten_thousand_atom_cq() -> None:
    text = "Q() :- " + ", ".join(f"R(x{i}, x{i + 1})" for i in range(10_000))
    err = _refused(lambda: parse_cq(text), MAX_ATOMS)
    assert err.message.startswith("too many atoms in the body: 10000,")


def test_atom_with_5001_arguments() -> None:
    text = "Q() :- R(" + ", ".join(f"x{i}" for i in range(5001)) + ")"
    err = _refused(lambda: parse_cq(text), MAX_ARGUMENTS)
    assert (err.line, err.column) == (1, 8)


# -- the other limits ----------------------------------------------------------------------

def test_too_many_tables_in_from() -> None:
    sql = "SELECT COUNT(*) FROM " + ", ".join(f"R t{i}" for i in range(MAX_ATOMS + 1))
    _refused(lambda: parse_sql(sql), MAX_ATOMS)


def test_expression_tree_depth() -> None:
    sql = WHERE + "Pat.age = " + " + ".join(["Pat.hos"] * (MAX_EXPRESSION_DEPTH + 5))
    err = _refused(lambda: parse_sql(sql), MAX_EXPRESSION_DEPTH)
    assert err.construct == "expression depth"


def test_long_literal() -> None:
    sql = WHERE + "Pat.sex = '" + "F" * (MAX_LITERAL_LENGTH + 1) + "'"
    _refused(lambda: parse_sql(sql), MAX_LITERAL_LENGTH)
    _refused(lambda: parse_cq("Q() :- R('" + "a" * (MAX_LITERAL_LENGTH + 1) + "')"),
             MAX_LITERAL_LENGTH)


def test_number_beyond_a_double() -> None:
    _refused(lambda: parse_sql(WHERE + "Pat.age = 1e400"), "1.8e308")
    _refused(lambda: parse_cq("Q() :- R(1e400)"), "1.8e308")


def test_too_many_columns_in_a_table() -> None:
    ddl = "CREATE TABLE t (" + ", ".join(f"c{i} INT" for i in range(MAX_ARGUMENTS + 1)) + ")"
    _refused(lambda: schema_from_ddl(ddl), MAX_ARGUMENTS)


# -- just within the limits: read, and analysed without a crash ---------------------------

@pytest.mark.parametrize("sql", [
    WHERE + "(" * MAX_NESTING + "Pat.age = 1" + ")" * MAX_NESTING,
    WHERE + "NOT " * MAX_NESTING + "Pat.age = 1",
    WHERE + " AND ".join(f"Pat.age > {i}" for i in range(MAX_CONDITIONS + 1)),
    WHERE + " OR ".join(f"Pat.age = {i}" for i in range(MAX_CONDITIONS + 1)),
    WHERE + "Pat.age = " + " + ".join(["Pat.hos"] * 90),
    WHERE + f"Pat.age = {MAX_INTEGER} OR Pat.age = -{MAX_INTEGER}",
])
def test_within_the_limits_is_analysed(sql: str) -> None:
    result = CliRunner().invoke(cli, ["analyze", "--sql", sql, "--schema", str(SCHEMA),
                                      "--format", "json"])
    assert result.exit_code == EXIT_OK, result.stderr
    assert '"upper": 1' in result.stdout


def test_within_the_limits_cq_and_ddl() -> None:
    assert len(parse_cq("Q() :- " + ", ".join(f"R{i}(x)" for i in range(MAX_ATOMS))).atoms) \
        == MAX_ATOMS
    assert parse_cq("Q() :- R(" + ", ".join(f"x{i}" for i in range(MAX_ARGUMENTS)) + ")")
    ddl = "CREATE TABLE t (" + ", ".join(f"c{i} INT" for i in range(MAX_ARGUMENTS)) + ")"
    assert len(schema_from_ddl(ddl).relations[0].columns) == MAX_ARGUMENTS
    assert parse_dependency(f"R[1->{MAX_ARGUMENTS}]<={MAX_INTEGER}").k == MAX_INTEGER


# -- through the command line: exit 1, file:line:col, no traceback -------------------------

@pytest.mark.parametrize(("name", "text"), [
    ("parens.sql", WHERE + "(" * 60 + "Pat.age = 1" + ")" * 60),
    ("and.sql", WHERE + " AND ".join(f"Pat.age > {i}" for i in range(1000))),
    ("not.sql", WHERE + "NOT " * 2000 + "Pat.age = 1"),
    ("big.sql", WHERE + "Pat.age = 99999999999999999999999"),
    ("into.sql", "SELECT COUNT(*) INTO x FROM Pat"),
    ("big.cq", "Q() :- Pat(x, y, z, 99999999999999999999999)"),
])
def test_cli_exits_1_with_a_position(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    result = CliRunner().invoke(cli, ["analyze", str(path), "--schema", str(SCHEMA)])
    assert result.exit_code == EXIT_INPUT, result.output
    assert result.stderr.startswith(f"{path}:1:") and "Traceback" not in result.stderr


@pytest.mark.parametrize("dependency", [
    "PatDoc[1->2]<=99999999999999999999999",
    "PatDoc[" + "1" * 5000 + "->2]",
])
def test_cli_refuses_huge_dependency_numbers(tmp_path: Path, dependency: str) -> None:
    constraints = tmp_path / "c.txt"
    constraints.write_text("# dependencies\n" + dependency + "\n")
    result = CliRunner().invoke(cli, ["analyze", str(ROOT / "examples/hospital/oncology.sql"),
                                      "--schema", str(SCHEMA), "--constraints",
                                      str(constraints)])
    assert result.exit_code == EXIT_INPUT, result.output
    assert result.stderr.startswith(f"{constraints}:2:") and "over the limit of" in result.stderr
