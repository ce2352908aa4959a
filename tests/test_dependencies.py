"""Dependencies from flags, constraints files and schema keys; their errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cqsens.errors import DependencyError, SchemaError
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.parse_cq import parse_dependency
from cqsens.ir.dependencies import Dependency, Sigma, satisfies, violations
from cqsens.pipeline import analyze
from tests.helpers import FIXTURES

SCHEMA = schema_from_ddl((FIXTURES.parents[1] / "examples/hospital/schema.sql").read_text())
ONCOLOGY = "Q(xdoc) :- Doc(xdoc, 'O', xhos), Pat(xpat, 'F', xhos), PatDoc(xpat, xdoc)."


def test_names_resolve_with_a_schema() -> None:
    assert parse_dependency("patdoc[pat->doc]<=3", schema=SCHEMA) == Dependency("PatDoc", 0, 1, 3)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Nope[1->2]", "unknown relation Nope"),
        ("PatDoc[pat->nurse]", "no column 'nurse'"),
        ("PatDoc[1->3]", "out of range"),
        ("PatDoc[1->2]<=0", "at least 1"),
        ("PatDoc(1->2)", "R[i->j]"),
    ],
)
def test_errors_name_the_text(text: str, message: str) -> None:
    with pytest.raises(DependencyError) as info:
        parse_dependency(text, schema=SCHEMA)
    assert message in str(info.value) and text in str(info.value) or message in str(info.value)


def test_fd_flag_rejects_a_cd_and_cd_flag_needs_a_bound() -> None:
    with pytest.raises(DependencyError, match="--cd"):
        analyze(ONCOLOGY, fds=["PatDoc[1->2]<=3"])
    with pytest.raises(DependencyError, match="needs a bound"):
        analyze(ONCOLOGY, cds=["PatDoc[1->2]"])


def test_unknown_relation_without_schema_is_an_error() -> None:
    with pytest.raises(DependencyError, match="unknown relation"):
        analyze(ONCOLOGY, fds=["Nurse[1->2]"])


def test_constraints_file(tmp_path: Path) -> None:
    f = tmp_path / "c.txt"
    f.write_text("# business rules\nPatDoc[1->2]<=3  # three doctors\n\nHos[1->2]\n")
    a = analyze(ONCOLOGY, constraints=f)
    assert a.upper == 3
    assert any("Hos" in n for n in a.notes)  # not in the query: ignored, and said so


def test_constraints_file_errors_carry_the_line(tmp_path: Path) -> None:
    f = tmp_path / "c.txt"
    f.write_text("PatDoc[1->2]\nPatDoc[1->\n")
    with pytest.raises(DependencyError) as info:
        analyze(ONCOLOGY, constraints=f)
    assert info.value.line == 2 and str(f) in str(info.value)


def test_schema_keys_give_fds() -> None:
    deps = {str(d) for d in SCHEMA.key_dependencies()}
    assert {"Pat[1->2]", "Pat[1->3]", "Doc[1->3]", "Hos[1->2]"} <= deps
    assert not any(d.startswith("PatDoc") for d in deps)  # composite key: no single-column FD
    assert SCHEMA.find("Pat").bound(3) == (0, 120)


def test_schema_errors() -> None:
    with pytest.raises(SchemaError, match="no table"):
        schema_from_ddl("SELECT 1")
    with pytest.raises(SchemaError, match="twice"):
        schema_from_ddl("CREATE TABLE R (a INT); CREATE TABLE r (b INT)")


def test_violations_certificate() -> None:
    sigma = Sigma.of([Dependency("R", 0, 1, 2)])
    assert satisfies({"R": [(1, 1), (1, 2)]}, sigma)
    assert violations({"R": [(1, 1), (1, 2), (1, 3)]}, sigma) == [(Dependency("R", 0, 1, 2), 1, 3)]


def test_constraints_file_errors_carry_the_column(tmp_path: Path) -> None:
    from cqsens.frontend.parse_cq import parse_dependencies

    with pytest.raises(DependencyError) as info:
        parse_dependencies(["# keys", "   PatDoc[pat->nope]"], schema=SCHEMA, source="c.txt")
    assert str(info.value).startswith("c.txt:2:16: PatDoc has no column 'nope'")
