"""examples/dask_log.py: a JSON Lines log on Dask's local cluster gives `cqsens report`'s rows."""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens.cli.main import cli

# CI installs the dask extra: never skip there (the example's import fails the test instead).
# Looked up, not imported: importing dask costs each xdist worker that collects this file.
if not os.environ.get("CQSENS_REQUIRE_DASK") and any(
        importlib.util.find_spec(name) is None for name in ("dask", "distributed")):
    pytest.skip("the dask extra is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "examples/hospital/schema.sql")
SQLS = [
    "SELECT COUNT(*) FROM Pat p JOIN PatDoc pd ON p.id = pd.pat WHERE p.sex = 'F' AND pd.doc = 3",
    "SELECT COUNT(*) FROM Pat p JOIN PatDoc pd ON p.id = pd.pat WHERE p.sex = 'M' AND pd.doc = 9",
    "SELECT COUNT(DISTINCT p.hos) FROM Pat p WHERE p.id BETWEEN 10 AND 20",
    "SELECT COUNT(DISTINCT p.hos) FROM Pat p WHERE p.id BETWEEN 40 AND 30",
    "SELECT COUNT(*) FROM Nope",
    "SELECT COUNT(*) FROM Doc d, PatDoc x WHERE d.id = x.doc AND d.hos = 2 AND x.pat = 5",
    "SELECT COUNT(*) FROM Doc d, PatDoc x WHERE d.id = x.doc AND d.hos = 7 AND x.pat = 7",
    "SELECT COUNT(*) FROM Pat",
]


def _example() -> object:
    spec = importlib.util.spec_from_file_location("dask_log", ROOT / "examples/dask_log.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dask_example_equals_report(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    lines = [json.dumps({"id": f"r{i % len(SQLS)}-{i}", "sql": SQLS[i % len(SQLS)]})
             for i in range(3 * len(SQLS))]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "report.jsonl"
    result = CliRunner().invoke(cli, ["report", str(log), "--schema", SCHEMA, "-o", str(out)])
    assert result.exit_code == 0, result.output
    expected = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}

    example = _example()
    counts = example.run(str(log), str(tmp_path / "rows"),  # type: ignore[attr-defined]
                         cache_dir=str(tmp_path / "caches"), workers=2, blocksize=400,
                         schema=SCHEMA)
    parts = sorted((tmp_path / "rows").glob("*.jsonl"))
    assert len(parts) > 1  # the log was split into blocks
    rows = [json.loads(line) for p in parts for line in p.read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(expected)
    assert counts["ok"] == 21 and counts["error"] == 3
    # each worker proves a shape's lower bound once and re-uses its witness, checked for the
    # record's own constants, for the shape's later records
    assert counts["proof:reused"] >= 1
    assert counts["proof:searched"] + counts["proof:reused"] == sum(
        1 for r in rows if r["lower"] is not None)
    for row in rows:
        want = expected[row["id"]]
        for key in ("status", "aggregate", "upper", "query"):
            assert row[key] == want[key], (row["id"], key)
        if row["lower"] is not None:  # each run proves its own; both are witnesses
            assert want["lower"] is not None and row["lower"] <= row["upper"]
        if row["status"] == "error":  # the place reads LOG#id here, LOG:line in the report
            assert "table Nope is not in the schema" in row["error"] and row["id"] in row["error"]
        else:
            assert row["reason"] == want["reason"]
    assert {r["upper"] for r in rows if r["status"] == "ok"} == {1}
    assert {r["lower"] for r in rows if r["status"] == "ok"} == {1, None}  # BETWEEN 40 AND 30
    assert any(r["cached"] for r in rows)  # a worker re-used a shape of its cache file
    assert list((tmp_path / "caches").glob("shapes-*.sqlite"))
    merged = str(tmp_path / "merged.sqlite")
    assert example.merge(str(tmp_path / "caches"), merged) >= 5  # type: ignore[attr-defined]
    again = CliRunner().invoke(cli, ["report", str(log), "--schema", SCHEMA, "-o",
                                     str(tmp_path / "again.jsonl"), "--cache", merged])
    assert again.exit_code == 0, again.output
    # every shape came from the workers' merged caches (a record that fails is not cached),
    # and every verdict on a lower bound too: a witness of theirs, checked for the record's
    # constants (where it came from kept: searched or reused), or none (BETWEEN 40 AND 30)
    said = re.search(r"lower bounds: (\d+) proven, (\d+) reused, (\d+) skipped", again.output)
    assert said is not None and "21 hits, 3 misses" in again.output
    proven, reused, skipped = map(int, said.groups())
    assert proven + reused == 18 and skipped == 3
