"""Query logs: JSON Lines / CSV / stdin records, streamed JSONL rows, error rows with ids."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cqsens.cli.main import cli
from cqsens.logs import ShapeCache, analyse_log, read_records
from cqsens.logs.shape import lex

SCHEMA = str(Path(__file__).resolve().parents[1] / "examples/hospital/schema.sql")


def _log(tmp_path: Path, lines: list[str], name: str = "log.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_records_and_bad_lines(tmp_path: Path) -> None:
    path = _log(tmp_path, [json.dumps({"id": 7, "sql": "SELECT COUNT(*) FROM Pat"}),
                           "{broken", json.dumps({"id": "x"}),
                           json.dumps({"sql": "SELECT 1", "dialect": "postgres"})])
    recs = list(read_records(str(path)))
    assert [r.id for r in recs] == ["7", f"{path}:2", "x", f"{path}:4"]
    assert recs[0].error is None and recs[0].sql == "SELECT COUNT(*) FROM Pat"
    assert recs[1].error is not None and f"{path}:2" in recs[1].error
    assert recs[2].error is not None and "no \"sql\"" in recs[2].error
    assert recs[3].dialect == "postgres"


def test_csv_query_column(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text('name,text\nq1,"SELECT COUNT(*)\nFROM Pat"\nq2,SELECT 2\n', encoding="utf-8")
    recs = list(read_records(str(path), query_column="text"))
    assert [(r.id, r.where) for r in recs] == [(f"{path}:2", f"{path}:2"),
                                               (f"{path}:4", f"{path}:4")]
    assert recs[0].sql == "SELECT COUNT(*)\nFROM Pat"


def test_rows_in_input_order_with_errors(tmp_path: Path) -> None:
    sqls = [f"SELECT COUNT(*) FROM Pat WHERE hos = {i}" for i in range(6)]
    sqls.insert(3, "SELECT COUNT(*) FROM Nope")
    path = _log(tmp_path, [json.dumps({"id": f"r{i}", "sql": s}) for i, s in enumerate(sqls)])
    for jobs in (1, 2):
        rows = list(analyse_log(read_records(str(path)), jobs=jobs, cache=ShapeCache(),
                                schema=SCHEMA, prove_lower=False))
        assert [r["id"] for r in rows] == [f"r{i}" for i in range(7)]
        assert rows[3]["status"] == "error" and f"{path}:4" in rows[3]["error"]
        assert [r["upper"] for r in rows if r["status"] == "ok"] == [1] * 6
        assert sum(r["cached"] for r in rows) == 5


def test_report_streams_jsonl_and_never_overwrites(tmp_path: Path) -> None:
    path = _log(tmp_path, [json.dumps({"id": i, "sql": f"SELECT COUNT(*) FROM Pat WHERE hos = {i}"})
                           for i in range(5)])
    out = tmp_path / "out.jsonl"
    runner = CliRunner()
    args = ["report", str(path), "--schema", SCHEMA, "-o", str(out), "--no-lower"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["0", "1", "2", "3", "4"]
    assert all(r["upper"] == 1 and "analysis" not in r for r in rows)
    before = out.read_text()
    again = runner.invoke(cli, args)
    assert again.exit_code == 2 and "already exists" in again.output
    assert out.read_text() == before
    assert runner.invoke(cli, [*args, "--force"]).exit_code == 0


def test_report_from_stdin_groups_by_shape(tmp_path: Path) -> None:
    text = "".join(json.dumps({"id": f"s{i}", "sql": f"SELECT COUNT(*) FROM Pat WHERE hos = {i}"})
                   + "\n" for i in range(4))
    out = tmp_path / "out.md"
    result = CliRunner().invoke(cli, ["report", "-", "--schema", SCHEMA, "-o", str(out),
                                      "--no-lower"], input=text)
    assert result.exit_code == 0, result.output
    md = out.read_text()
    assert "4 records of this shape" in md and "s0, s1, s2, s3" in md


def test_lex_folds_signs_and_keeps_structure() -> None:
    a, b = lex("select x from t where a > -5 and b = 'it''s'"), lex("select x from t where a>-7 and b='u'")
    assert a.template == b.template
    assert [x.text for x in a.literals] == ["-5", "'it''s'"]
    assert lex("SELECT a - 5 FROM t").literals[0].text == "5"
