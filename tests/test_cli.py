"""The command line: exit codes, messages with positions, every example file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens.cli.exits import EXIT_INPUT, EXIT_OK, EXIT_USAGE
from cqsens.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
HOSPITAL = EXAMPLES / "hospital"
SCHEMA = str(HOSPITAL / "schema.sql")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_json_for_the_unbounded_join() -> None:
    code, out, _ = run("analyze", "--cq", "Q(x) :- R(x,y), S(y,z)", "--format", "json")
    assert code == EXIT_OK
    data = json.loads(out)
    assert data["delta_str"] == "inf"
    assert data["sensitivity"]["upper"] == "inf"
    for key in ("query", "cq", "core", "free", "aggregate", "connected", "satisfiable",
                "paper", "sensitivity", "explanation"):
        assert key in data


def test_example_2_names_atom_and_variable() -> None:
    code, out, _ = run("analyze", str(HOSPITAL / "oncology.sql"), "--schema", SCHEMA)
    assert code == EXIT_OK
    assert "UNBOUNDED" in out
    assert "Pat(Pat_id, 'F', Pat_hos, Pat_age)" in out and "to Doc_id" in out


def test_example_15_and_18() -> None:
    code, out, _ = run("analyze", str(HOSPITAL / "oncology.sql"), "--schema", SCHEMA,
                       "--fd", "PatDoc[1->2]", "--format", "json")
    assert code == EXIT_OK and json.loads(out)["sensitivity"]["upper"] == 1
    code, out, _ = run("analyze", str(HOSPITAL / "oncology.sql"), "--schema", SCHEMA,
                       "--cd", "PatDoc[1->2]<=3", "--format", "json")
    data = json.loads(out)
    assert data["sensitivity"]["upper"] == 3 and data["paper"]["cd_upper"] == 3


def test_malformed_cq_exits_1_with_position(tmp_path: Path) -> None:
    bad = tmp_path / "bad.cq"
    bad.write_text("Q(x) :- R(x,\n  y")
    code, _, err = run("analyze", str(bad))
    assert code == EXIT_INPUT
    assert f"{bad}:2:" in err and "Traceback" not in err


def test_malformed_sql_exits_1_with_position(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sql"
    bad.write_text("SELECT COUNT(*)\nFROM Pat LEFT JOIN Doc ON Pat.hos = Doc.hos WHERE ABS(Doc.id) < 2")
    code, _, err = run("analyze", str(bad), "--schema", SCHEMA)
    assert code == EXIT_INPUT
    assert f"{bad}:2:" in err and "LEFT JOIN" in err


def test_bad_dependency_exits_1() -> None:
    code, _, err = run("analyze", "--cq", "Q(x) :- R(x,y)", "--fd", "R[1->5]")
    assert code == EXIT_INPUT and "out of range" in err


def test_usage_errors_exit_2() -> None:
    assert run("analyze")[0] == EXIT_USAGE
    assert run("analyze", "--format", "xml", "--cq", "Q(x) :- R(x)")[0] == EXIT_USAGE
    assert run("nosuchcommand")[0] == EXIT_USAGE


def test_missing_file_is_input_error() -> None:
    code, _, err = run("analyze", "missing.sql")
    assert code == EXIT_INPUT and "missing.sql" in err


@pytest.mark.parametrize(
    "path", sorted(p for p in EXAMPLES.rglob("*")
                   if p.suffix in (".sql", ".cq") and p.name != "schema.sql"
                   and p.parent.joinpath("schema.sql") != p and "data" not in p.stem
                   and p.parent.name != "queries"),  # TPC-H as published: test_workload.py
    ids=lambda p: str(p.relative_to(EXAMPLES)),
)
def test_every_example_runs(path: Path) -> None:
    args = ["analyze", str(path)]
    schema = path.parent / "schema.sql"
    if schema.exists():
        args += ["--schema", str(schema)]
    if (path.parent / "constraints.txt").exists():
        args += ["--constraints", str(path.parent / "constraints.txt")]
    code, out, err = run(*args)
    assert code == EXIT_OK, err
    assert "sensitivity upper" in out


def test_python_dash_m() -> None:
    proc = subprocess.run([sys.executable, "-m", "cqsens", "analyze", "--cq", "Q() :- R(x), S(y)"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "upper 1" in proc.stdout


def test_api_quickstart_runs() -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLES / "api_quickstart.py")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "upper 3, lower 3, tight True" in proc.stdout


@pytest.mark.parametrize(("args", "missing"), [
    (["report", str(EXAMPLES / "hospital")], "'-o' / '--output'"),
    (["witness", str(EXAMPLES / "hospital" / "avg_age_by_sex.sql")],
     "'-o' / '--output'"),
    (["release", "--sql", "SELECT COUNT(*) FROM Pat", "--epsilon", "1"], "'--db'"),
    (["profile"], "'--db'"),
    (["init"], "'--db'"),
])
def test_a_missing_required_option_is_a_usage_error(args: list[str], missing: str) -> None:
    """Every required option is reported missing (exit 2), never an internal error: click 8.3
    and later take an explicit ``default=None`` as a default and stop checking the option
    (``cqsens report FOLDER`` without ``-o`` crashed with a TypeError)."""
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == EXIT_USAGE, result.output
    assert f"Missing option {missing}" in result.output
