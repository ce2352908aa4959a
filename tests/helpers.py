"""Loaders for the case tables and golden files under tests/fixtures."""

from __future__ import annotations

import functools
import math
import tomllib
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


def load_cases(name: str) -> list[dict[str, Any]]:
    """The ``[[case]]`` entries of ``fixtures/<name>``."""
    with open(FIXTURES / name, "rb") as fh:
        return list(tomllib.load(fh)["case"])


def expected(value: Any) -> Any:
    """``"inf"`` → ∞; other values unchanged."""
    return math.inf if value == "inf" else value


def load_golden_pairs(name: str) -> list[tuple[dict[str, str], str, str]]:
    """``(meta, input, expected)`` triples of a golden file.

    A golden file holds ``# key: value`` meta lines, the input, a line ``;``,
    the expected output and a line ``;`` (sqlglot's fixture shape).
    """
    triples: list[tuple[dict[str, str], str, str]] = []
    meta: dict[str, str] = {}
    chunks: list[str] = []
    current: list[str] = []
    for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
        if line.strip() == ";":
            chunks.append("\n".join(current).strip())
            current = []
            if len(chunks) == 2:
                triples.append((meta, chunks[0], chunks[1]))
                meta, chunks = {}, []
            continue
        if line.startswith("# ") and ":" in line and not current:
            key, value = line[2:].split(":", 1)
            meta[key.strip()] = value.strip()
            continue
        current.append(line)
    return triples


def load_invalid(name: str) -> list[str]:
    """One bad input per non-empty, non-comment line."""
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def write_db(path: Path, conn: Any) -> None:
    """Copy the SQLite database ``conn`` (committed first) to the file ``path``."""
    import sqlite3

    conn.commit()
    target = sqlite3.connect(path)
    conn.backup(target)
    target.close()


def release_json(tmp: Path, schema: str, args: list[str]) -> dict[str, Any]:
    """``cqsens release`` on ``tmp/d.db`` with the schema text ``schema`` (written to
    ``tmp/schema.sql``), ε = 1 and ``args``: its JSON document, checked against the
    release schema (the command must succeed)."""
    import json

    from click.testing import CliRunner
    from jsonschema import Draft202012Validator

    from cqsens.cli.main import cli
    from cqsens.schemas import load_schema

    (tmp / "schema.sql").write_text(schema)
    result = CliRunner().invoke(cli, ["release", "--schema", str(tmp / "schema.sql"), "--db",
                                      f"sqlite:///{tmp / 'd.db'}", "--epsilon", "1",
                                      "--format", "json", *args])
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    Draft202012Validator(load_schema("release")).validate(document)
    return document


def released_rows(document: dict[str, Any]) -> list[tuple[object, ...]]:
    """The released values of a release document, one tuple per group."""
    out = []
    for g in document["groups"]:
        values = g["values"] if "values" in g else [g]
        out.append(tuple(v["value"] for v in values))
    return out


@functools.cache
def upper_of(sql: str, schema: str, neighbor: str, cds: tuple[str, ...] = ()) -> Any:
    """``cqsens.analyze`` without the witness search, once per process for each argument
    tuple: the fixed statement of a brute-force property, whose random databases do not
    change its analysis."""
    import cqsens

    return cqsens.analyze(sql, schema=schema, cds=list(cds), neighbor=neighbor,
                          prove_lower=False)
