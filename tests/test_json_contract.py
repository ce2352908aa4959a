"""The JSON contract: every JSON output of analyze, report, witness, release and budget
carries schema_version and validates against its shipped JSON Schema (draft 2020-12)."""

from __future__ import annotations

import functools
import json
import sqlite3
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

import cqsens
from cqsens.cli.main import cli
from cqsens.report.text import to_json
from cqsens.schemas import KINDS, SCHEMA_VERSION, load_schema

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "examples" / "shop"
HOSPITAL = ROOT / "examples" / "hospital"
GROUPS_DDL = """
CREATE TABLE T (id INTEGER PRIMARY KEY, g TEXT NOT NULL CHECK (g IN ('a', 'b')),
                v INTEGER NOT NULL CHECK (v BETWEEN 0 AND 10));
"""


@functools.cache
def _validator(kind: str) -> Draft202012Validator:
    """The schema of ``kind``, checked against the 2020-12 metaschema once per process."""
    schema = load_schema(kind)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _valid(kind: str, text: str) -> Any:
    document = json.loads(text)
    _validator(kind).validate(document)
    for one in document if isinstance(document, list) else [document]:
        assert one["schema_version"] == SCHEMA_VERSION
        _declared(load_schema(kind), one)
    return document


def _declared(schema: dict[str, Any], document: dict[str, Any]) -> None:
    """Every top-level key of the document is documented in the schema (a new key must be
    added to the schema, and so to the contract)."""
    body = schema.get("properties")
    if body is None:  # analyze: a document, or a list of them
        declared = set(schema["$defs"]["analysis"]["properties"]) | {"schema_version"}
    else:
        declared = set(body)
    assert set(document) <= declared, set(document) - declared


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_schemas_are_valid_and_share_their_definitions() -> None:
    schemas = {kind: load_schema(kind) for kind in KINDS}
    for schema in schemas.values():
        Draft202012Validator.check_schema(schema)
    analysis = schemas["analyze"]["$defs"]
    for kind in ("report", "witness"):
        for name, definition in schemas[kind]["$defs"].items():
            if name in analysis:
                assert definition == analysis[name], (kind, name)


def test_analyze_json_single_list_witness_and_noise() -> None:
    one = _valid("analyze", _run("analyze", str(HOSPITAL / "oncology.sql"), "--schema",
                                 str(HOSPITAL / "schema.sql"), "--constraints",
                                 str(HOSPITAL / "constraints.txt"), "--format", "json"))
    assert one["sensitivity"]["upper"] == 3
    many = _valid("analyze", _run("analyze", str(SHOP / "orders_per_user.sql"),
                                  str(SHOP / "revenue.sql"), "--config", str(SHOP / "cqsens.toml"),
                                  "--witness", "--epsilon", "1", "--delta", "1e-6",
                                  "--format", "json"))
    assert isinstance(many, list) and len(many) == 2
    assert all("witness" in a and "noise" in a for a in many)
    assert many[0]["unit"] == "users(id)"


@given(st.integers(1, 10**6), st.integers(0, 6))
def test_exact_bounds_validate_and_read_back_exactly(digits: int, scale: int) -> None:
    """A SUM over a column bounded by a decimal CHECK: the bound is the exact decimal, a JSON
    number only when it is exactly a double, and the document validates."""
    high = Decimal(digits).scaleb(-scale)
    ddl = f"CREATE TABLE t (id INT PRIMARY KEY, v DECIMAL NOT NULL CHECK (v BETWEEN 0 AND {high}))"
    analysis = cqsens.analyze("SELECT SUM(v) FROM t", schema=ddl, prove_lower=False)
    document = _valid("analyze", to_json([analysis]))  # what analyze --format json prints
    upper = document["sensitivity"]["upper"]
    assert Fraction(upper) == Fraction(high)
    assert isinstance(upper, str) == (Fraction(float(Fraction(high))) != Fraction(high))


def test_report_json_of_a_folder_and_of_a_log(tmp_path: Path) -> None:
    folder = _valid_report(tmp_path / "shop.json", str(SHOP))
    assert folder["summary"]["total"] == len(folder["rows"]) >= 10
    log = _valid_report(tmp_path / "log.json", str(ROOT / "examples" / "logs" / "tpch.jsonl"))
    assert {r["status"] for r in log["rows"]} >= {"ok", "error"}


def test_every_jsonl_report_line_validates(tmp_path: Path) -> None:
    out = tmp_path / "log.jsonl"
    log = str(ROOT / "examples" / "logs" / "tpch.jsonl")
    result = CliRunner().invoke(cli, ["report", log, "-o", str(out)])
    assert result.exit_code == 0, result.output
    lines = out.read_text(encoding="utf-8").splitlines()
    whole = _valid_report(tmp_path / "log.json", log)
    grouped = {row["id"]: row for row in whole["rows"]}  # one row per shape there
    assert len(lines) == sum(row["records"] for row in whole["rows"]) >= 5
    for text in lines:
        line = _valid("report-line", text)
        row = grouped.get(line["id"])
        if row is not None:  # the first record of its shape: the same row, and the version
            assert {k: v for k, v in line.items() if k != "schema_version"} == \
                {k: v for k, v in row.items() if k not in ("analysis", "records", "ids")}


def _valid_report(out: Path, *inputs: str) -> Any:
    result = CliRunner().invoke(cli, ["report", *inputs, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return _valid("report", out.read_text())


@pytest.mark.parametrize("suffix", [".sql", ".sqlite"])
def test_witness_json(tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"w{suffix}"
    document = _valid("witness", _run("witness", str(SHOP / "orders_per_user.sql"),
                                      "--config", str(SHOP / "cqsens.toml"), "-o", str(out),
                                      "--format", "json"))
    assert all(Path(f).is_file() for f in document["files"])
    assert len(document["files"]) == (1 if suffix == ".sql" else 2)
    assert document["lower"] == document["witness"]["difference"] == 20


def test_release_and_budget_json(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(GROUPS_DDL)
        conn.executemany("INSERT INTO T VALUES (?, ?, ?)",
                         [(i, "ab"[i % 2], i % 11) for i in range(200)])
    ledger = tmp_path / "ledger.sqlite"
    base = ["release", "--db", f"sqlite:///{db}", "--epsilon", "1", "--format", "json",
            "--ledger", str(ledger), "--budget", "3"]
    single = _valid("release", _run(*base, "--sql", "SELECT g, COUNT(*) FROM T GROUP BY g"))
    assert [g["group"]["g"] for g in single["groups"]] == ["a", "b"]
    assert single["ledger"]["epsilon_spent"] == 1
    several = _valid("release", _run(*base, "--sql",
                                     "SELECT g, COUNT(*), SUM(v) FROM T GROUP BY g"))
    assert all(len(g["values"]) == 2 for g in several["groups"])
    plain = _valid("release", _run("release", "--db", f"sqlite:///{db}", "--epsilon", "1",
                                   "--format", "json", "--sql", "SELECT COUNT(*) FROM T"))
    assert "ledger" not in plain
    spent = _valid("budget", _run("budget", "--ledger", str(ledger), "--format", "json"))
    assert len(spent["releases"]) == 2 and spent["epsilon_left"] == 1


def test_the_contract_catches_a_breaking_change(tmp_path: Path) -> None:
    """The report's rows renamed (as once from `queries` to `rows`), a document without
    schema_version, or a bound that is not an exact number: each fails validation."""
    report = _valid_report(tmp_path / "r.json", str(SHOP))
    renamed = {("queries" if k == "rows" else k): v for k, v in report.items()}
    unversioned = {k: v for k, v in report.items() if k != "schema_version"}
    inexact = json.loads(json.dumps(report))
    inexact["rows"][0]["upper"] = "about 20"
    future = dict(report, schema_version="2.0")
    for broken in (renamed, unversioned, inexact, future):
        with pytest.raises(ValidationError):
            _validator("report").validate(broken)
