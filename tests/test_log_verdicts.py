"""A log run again on its cache gives the rows of its first run: each record's verdict on
its lower bound (proven, where from, or none) is kept per record and served again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens.cli.main import cli

SCHEMA = str(Path(__file__).resolve().parents[1] / "examples/hospital/schema.sql")
TEXTS = [
    # p.age < 0 contradicts the schema's CHECK: no witness, its records get none
    "SELECT COUNT(DISTINCT p.hos) FROM Pat p WHERE p.age < {age} AND p.sex = '{s}'",
    "SELECT COUNT(*) FROM Doc d, PatDoc x WHERE d.id = x.doc AND d.specialty LIKE '{s}%' "
    "AND x.pat > {a}",
    "SELECT COUNT(*) FROM Pat p JOIN Hos h ON p.hos = h.id WHERE h.loc = '{s}' "
    "AND p.age BETWEEN {age} AND {age2}",
]
VALUES = [(0, "A", 3), (0, "Z", 7), (40, "F", 1), (0, "B", 12), (0, "C", 9), (55, "M", 80),
          (0, "D", 5), (0, "A", 3), (17, "X", 2), (0, "E", 1)]


def _log(path: Path) -> None:
    lines = []
    for i, (age, s, a) in enumerate(VALUES * 2):
        for j, text in enumerate(TEXTS):
            sql = text.format(age=age, s=s, a=a, age2=age + a)
            lines.append(json.dumps({"id": f"{i}-{j}", "sql": sql}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_warm_run_gives_the_first_runs_rows_without_a_check_or_a_search(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int) -> None:
    import cqsens.logs.serve as run

    log, cache = tmp_path / "log.jsonl", tmp_path / "shapes.sqlite"
    _log(log)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    args = ["report", str(log), "--schema", SCHEMA, "--cache", str(cache), "--jobs", str(jobs)]
    done = CliRunner().invoke(cli, [*args, "-o", str(first)])
    assert done.exit_code == 0, done.output
    rows = _rows(first)
    # the log has records without a lower bound and records with one, searched and reused
    assert {r["proof"] for r in rows} == {None, "searched", "reused"}
    assert sum(r["lower"] is None for r in rows) >= 10

    def forbidden(*args: object) -> object:
        raise AssertionError("a warm run checked or searched a record served before")

    monkeypatch.setattr(run, "_reuse", forbidden)
    monkeypatch.setattr(run, "_fresh", forbidden)
    done = CliRunner().invoke(cli, [*args, "-o", str(second)])
    assert done.exit_code == 0, done.output
    again = _rows(second)
    # identical but for "cached": a shape's first record was analysed the first time
    assert [dict(r, cached=None) for r in again] == [dict(r, cached=None) for r in rows]
    assert all(r["cached"] for r in again)
    assert sum(not r["cached"] for r in rows) == len(TEXTS)
