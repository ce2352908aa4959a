"""Hand-written hostile inputs (issue 18, "Why"): every crash, hang, wrong exit,
lost file, leaked password and rounded-down bound found there, one test each.

The cases live in ``tests/fixtures/hostile/cases.toml``; inputs too large to
write by hand are generated here (:data:`GENERATED`).  Cases that may hang run
``python -m cqsens`` in a child process that is killed after the hang limit.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz_helpers import EXAMPLES, build_sqlite, check_run, run_cli, run_subprocess

CASES_FILE = Path(__file__).parent / "fixtures" / "hostile" / "cases.toml"
CASES: list[dict[str, Any]] = tomllib.loads(CASES_FILE.read_text(encoding="utf-8"))["case"]


def _check_chain(depth: int) -> str:
    return ("CREATE TABLE t (a INTEGER CHECK (" + "(" * depth + "a > 0" + ")" * depth + "));")


GENERATED: dict[str, str] = {
    "where_parens_60": "SELECT COUNT(*) FROM Pat WHERE " + "(" * 60 + "age > 1" + ")" * 60,
    "and_chain_1000": "SELECT COUNT(*) FROM Pat WHERE "
                      + " AND ".join(f"age <> {i}" for i in range(1000)),
    "not_2000": "SELECT COUNT(*) FROM Pat WHERE " + "NOT " * 2000 + "age > 1",
    "check_3000": _check_chain(3000),
    "digits_5000": "1" * 5000,
    "cq_10000_atoms": "Q() :- " + ", ".join(f"R(x{i}, x{i + 1})" for i in range(10000)) + ".",
    "atom_5001_args": "Q(x0) :- R(" + ", ".join(f"x{i}" for i in range(5001)) + ").",
    "self_join_200": "SELECT COUNT(*) FROM " + ", ".join(f"Pat p{i}" for i in range(200))
                     + " WHERE " + " AND ".join(f"p{i}.hos = p{i + 1}.hos" for i in range(199)),
    "table_2002_columns": "CREATE TABLE wide ("
                          + ", ".join(f"c{i} INTEGER" for i in range(2002)) + ");",
}


def _fill(text: str, places: dict[str, str]) -> str:
    for key, value in places.items():
        text = text.replace("{" + key + "}", value)
    return re.sub(r"\{gen:(\w+)\}", lambda m: GENERATED[m.group(1)], text)


@pytest.fixture
def places(tmp_path: Path) -> dict[str, str]:
    """Placeholder values: a fresh folder, the hospital files and a SQLite copy of its data."""
    work = tmp_path / "work"
    work.mkdir()
    db = work / "hospital.db"
    url = build_sqlite(db)
    return {"tmp": str(work), "schema": str(EXAMPLES / "hospital" / "schema.sql"),
            "examples": str(EXAMPLES), "db": url, "dbfile": str(db)}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_hostile_case(case: dict[str, Any], places: dict[str, str]) -> None:
    work = Path(places["tmp"])
    for name, text in case.get("files", {}).items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_fill(text, places), encoding="utf-8")
    kept = {name: (work / name).read_bytes() for name in case.get("unchanged", [])}
    args = [_fill(a, places) for a in case["args"]]
    run = run_subprocess(args, cwd=work) if case.get("isolate") else run_cli(args)
    check_run(run, allowed=frozenset(case["exit"]))
    for name, before in kept.items():
        assert (work / name).read_bytes() == before, f"{name} was overwritten ({case['why']})"
    if "secret" in case:
        outputs = [run.out, run.err] + [p.read_text(errors="replace") for p in work.rglob("*")
                                       if p.is_file() and p.suffix in (".json", ".md", ".html",
                                                                       ".sql", ".txt")]
        assert not any(case["secret"] in o for o in outputs), f"secret leaked ({case['why']})"
    if "position" in case and run.code == 1:
        where = re.escape(_fill(case["position"], places))
        assert re.search(where + r":\d+:\d+", run.err), f"no file:line:col in {run.err!r}"
    if "min_upper" in case and run.code == 0:
        upper = json.loads(run.out)["sensitivity"]["upper"]
        assert upper == "inf" or upper >= int(case["min_upper"]), (
            f"upper {upper} is below the exact {case['min_upper']} ({case['why']})")


# A FIFO given as an input file blocks forever on open(); run it in a child process.
FIFO_COMMANDS = {
    "analyze-query": ["analyze", "{fifo}.sql", "--schema", "{schema}"],
    "analyze-schema": ["analyze", "--sql", "SELECT COUNT(*) FROM Pat", "--schema", "{fifo}.sql"],
    "analyze-constraints": ["analyze", "--cq", "Q(x) :- R(x, y).", "--constraints", "{fifo}.txt"],
    "witness-query": ["witness", "{fifo}.sql", "--schema", "{schema}", "-o", "{tmp}/w.sql"],
    "report-folder": ["report", "{tmp}", "-o", "{tmp}/r.json", "--no-lower"],
    "profile-constraints": ["profile", "--db", "{db}", "--constraints", "{fifo}.txt"],
}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("name", sorted(FIFO_COMMANDS))
def test_fifo_input_does_not_hang(name: str, places: dict[str, str]) -> None:
    work = Path(places["tmp"])
    for suffix in (".sql", ".txt"):
        os.mkfifo(work / f"fifo{suffix}")
    args = [_fill(a, {**places, "fifo": str(work / "fifo")}) for a in FIFO_COMMANDS[name]]
    run = run_subprocess(args, cwd=work)
    # report lists an unreadable file as a row with its error (exit 0); the others refuse it
    check_run(run, allowed=frozenset({0, 1, 2} if name == "report-folder" else {1, 2}))


def test_dev_zero_is_not_read_whole(places: dict[str, str]) -> None:
    """A character device as the query file: refused, not read until memory runs out."""
    work = Path(places["tmp"])
    link = work / "zero.sql"
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    link.symlink_to("/dev/zero")
    run = run_subprocess(["analyze", str(link), "--schema", places["schema"]], cwd=work)
    check_run(run, allowed=frozenset({1, 2}))


def test_examples_folder_untouched() -> None:
    """The runs above write only under tmp_path: no output landed beside the examples."""
    assert not any(p.suffix in (".db", ".json", ".md", ".html") for p in EXAMPLES.rglob("*"))
