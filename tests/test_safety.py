"""Hostile input on the command line: no traceback, no hang, no lost file, no leaked password.

Every case is a reproducer from issue 18: each failed (a traceback, a hang, a
lost file or a printed password) before the command line was hardened.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cqsens.cli.exits import EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE
from cqsens.cli.main import cli
from cqsens.passwords import mask_url
from cqsens.errors import MAX_INPUT_BYTES, TimeLimitError
from tests.fuzz_helpers import run_subprocess

ROOT = Path(__file__).resolve().parents[1]
HOSPITAL = ROOT / "examples" / "hospital"
SCHEMA = HOSPITAL / "schema.sql"
ONCOLOGY = HOSPITAL / "oncology.sql"
CQ = "Q(x) :- R(x, y)"


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner(env=env).invoke(cli, [str(a) for a in args])


def text_of(result: Result) -> str:
    return result.output + (result.stderr or "")


def assert_clean(result: Result, code: int) -> None:
    text = text_of(result)
    assert result.exit_code == code, text
    assert "Traceback" not in text, text


@pytest.fixture()
def hospital_db(tmp_path: Path) -> Path:
    """A SQLite copy of the hospital example, with its rows."""
    db = tmp_path / "hosp.db"
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA.read_text() + (HOSPITAL / "data.sql").read_text())
    conn.commit()
    conn.close()
    return db


def pat_rows(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM Pat").fetchone()[0])
    finally:
        conn.close()


# --------------------------------------------------------------------- 1. no traceback, ever


def test_a_bug_is_one_line_and_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("something broke")

    monkeypatch.setattr("cqsens.cli.analyze.analyze_with", boom)
    result = run("analyze", "--cq", CQ)
    assert_clean(result, EXIT_INTERNAL)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("internal error: RuntimeError: something broke")
    assert "please report it at" in lines[0] and "with the command you ran" in lines[0]


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise KeyError("k")

    monkeypatch.setattr("cqsens.cli.analyze.analyze_with", boom)
    result = run("--debug", "analyze", "--cq", CQ)
    assert result.exit_code == EXIT_INTERNAL
    assert "Traceback" in result.stderr and "internal error: KeyError" in result.stderr


def test_a_bug_message_masks_the_password(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    url = "postgresql://alice:S3c?retPW9@127.0.0.1:1/db"

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"failed on {url} with S3c?retPW9")

    monkeypatch.setattr("cqsens.cli.witness.resolve_schema", boom)
    for debug in ([], ["--debug"]):
        result = run(*debug, "witness", "--cq", CQ, "--db", url, "-o", tmp_path / "w.sql")
        assert result.exit_code == EXIT_INTERNAL
        assert "internal error: RuntimeError: failed on postgresql://alice:***@" in result.stderr
        assert "PW9" not in text_of(result)


def test_time_limit_error_is_its_message_and_exit_1(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    def slow(*args: object, **kwargs: object) -> None:
        raise TimeLimitError("chase", 2.0)

    monkeypatch.setattr("cqsens.cli.witness.analyze_with", slow)
    result = run("witness", "--cq", CQ, "-o", tmp_path / "w.sql")
    assert_clean(result, EXIT_INPUT)
    assert "did not finish within 2 s (in the chase)" in result.stderr
    monkeypatch.setattr("cqsens.cli.analyze.analyze_with", slow)
    result = run("analyze", "--cq", CQ)
    assert_clean(result, EXIT_INPUT)
    assert "<cq>: the analysis did not finish within 2 s" in result.stderr


def test_recursion_is_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    def deep(*args: object, **kwargs: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("cqsens.cli.analyze.resolve_schema", deep)
    result = run("analyze", "--cq", CQ)
    assert_clean(result, EXIT_INPUT)
    assert "too deeply nested" in result.stderr


def test_installed_script_has_no_traceback(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "cqsens", "analyze", "--dialect", "nonsense",
                           "--cq", CQ], capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == EXIT_USAGE and "Traceback" not in proc.stderr


# ---------------------------------------------------------------- 2. options checked first


@pytest.mark.parametrize("args", [
    ("--epsilon", "nan"), ("--epsilon", "-1"), ("--epsilon", "0"), ("--epsilon", "inf"),
    ("--delta", "nan"), ("--delta", "-1"), ("--delta", "1"), ("--delta", "inf"),
    ("--timeout", "nan"), ("--timeout", "0"), ("--timeout", "-1"), ("--timeout", "-inf"),
    ("--timeout", "soon"),
    ("--witness-time", "nan"), ("--witness-time", "-1"), ("--witness-time", "inf"),
    ("--dialect", "nonsense"),
])
def test_meaningless_options_are_usage_errors(args: tuple[str, str]) -> None:
    result = run("analyze", "--cq", CQ, *args)
    assert_clean(result, EXIT_USAGE)
    assert args[0] in result.stderr


@pytest.mark.parametrize("args", [
    ("--timeout", "nan"), ("--timeout", "0"), ("--timeout", "-1"), ("--witness-time", "nan"),
    ("--dialect", "nonsense"),
])
def test_witness_checks_its_options(args: tuple[str, str], tmp_path: Path) -> None:
    out = tmp_path / "w.sql"
    assert_clean(run("witness", "--cq", CQ, "-o", out, *args), EXIT_USAGE)
    assert not out.exists()


def test_timeout_inf_and_a_tiny_one() -> None:
    assert_clean(run("analyze", "--cq", CQ, "--timeout", "inf"), EXIT_OK)
    assert_clean(run("analyze", "--cq", CQ, "--timeout", "1e300"), EXIT_OK)
    result = run("analyze", "--cq", "Q(a, b, c, d, e) :- E(a, b), E(b, c), E(c, d), E(d, e), "
                 "E(e, a)", "--cd", "E[1->2]<=9", "--cd", "E[2->1]<=9", "--timeout", "1e-9")
    assert_clean(result, EXIT_INPUT)
    assert "did not finish within" in result.stderr


def test_dialect_in_any_casing_and_the_list_of_valid_ones(tmp_path: Path) -> None:
    sql = "SELECT COUNT(*) FROM Pat"
    assert_clean(run("analyze", "--sql", sql, "--schema", SCHEMA, "--dialect", "Postgres"), EXIT_OK)
    result = run("analyze", "--sql", sql, "--schema", SCHEMA, "--dialect", "nonsense")
    assert_clean(result, EXIT_USAGE)
    assert "postgres" in result.stderr and "mysql" in result.stderr
    assert_clean(run("witness", "--sql", sql, "--schema", SCHEMA, "--dialect", "POSTGRES",
                     "-o", tmp_path / "w.sql"), EXIT_OK)
    result = run("profile", "--db", f"sqlite:///{tmp_path / 'none.db'}", "--dialect", "nonsense")
    assert_clean(result, EXIT_USAGE)
    assert "unknown dialect" in result.stderr


@pytest.mark.parametrize("timeout", ["inf", "1e300", "1e-9"])
def test_report_timeouts_do_not_crash(timeout: str, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = run("report", HOSPITAL / "oncology.sql", "--schema", SCHEMA, "--timeout", timeout,
                 "-o", out)
    assert_clean(result, EXIT_OK)
    batch = json.loads(out.read_text())
    status = batch["rows"][0]["status"]
    assert status == ("timeout" if timeout == "1e-9" else "ok")
    assert batch["options"]["timeout"] == ("inf" if timeout == "inf" else float(timeout))


# ------------------------------------------------------------ 3. report: shared options once


@pytest.mark.parametrize("args", [
    ("--dialect", "nonsense"),
    ("--epsilon", "nan"),
    ("--epsilon", "-1"),
    ("--bounds", "junk"),
    ("--constraints", "missing-constraints.txt"),
    ("--fd", "R[0->1]"),
    ("--cd", "R[1->2]"),
    ("--schema", "missing-schema.sql"),
])
def test_report_bad_shared_option_fails_once(args: tuple[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "q"
    folder.mkdir()
    for n in range(3):
        (folder / f"q{n}.sql").write_text("SELECT COUNT(*) FROM R WHERE R.a = 1")
    out = tmp_path / "r.json"
    result = run("report", folder, "-o", out, *args)
    assert_clean(result, EXIT_USAGE)
    assert not out.exists()
    assert result.stderr.count("Error:") == 1  # one message, not one per row
    assert "q0.sql" not in result.stderr


def test_report_named_dependency_left_to_rows_without_a_shared_schema(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = run("report", HOSPITAL / "oncology.sql", "--fd", "PatDoc[pat->doc]", "-o", out)
    assert_clean(result, EXIT_OK)
    assert json.loads(out.read_text())["rows"][0]["upper"] == 1


@pytest.mark.parametrize("suffix", ["json", "html", "md"])
def test_report_with_db_writes_every_format(suffix: str, tmp_path: Path,
                                            hospital_db: Path) -> None:
    out = tmp_path / f"r.{suffix}"
    result = run("report", HOSPITAL / "oncology.sql", "--db", f"sqlite:///{hospital_db}",
                 "-o", out)
    assert_clean(result, EXIT_OK)
    text = out.read_text()
    assert str(hospital_db) in text
    if suffix == "json":
        batch = json.loads(text)
        assert batch["options"]["schema"] == f"sqlite:///{hospital_db}"
        assert batch["rows"][0]["status"] == "ok"


# ------------------------------------------------------------------ 4. never lose a file


def test_witness_never_replaces_the_database_it_reads(tmp_path: Path, hospital_db: Path) -> None:
    before = pat_rows(hospital_db)
    assert before > 0
    for extra in ([], ["--force"]):
        result = run("witness", ONCOLOGY, "--db", f"sqlite:///{hospital_db}", "-o", hospital_db,
                     *extra)
        assert_clean(result, EXIT_USAGE)
        assert "--db database" in result.stderr and "even with --force" in result.stderr
    assert pat_rows(hospital_db) == before
    moved = tmp_path / "sub" / ".." / hospital_db.name  # another spelling of the same file
    (tmp_path / "sub").mkdir()
    assert_clean(run("witness", ONCOLOGY, "--db", f"sqlite:///{hospital_db}", "-o", moved,
                     "--force"), EXIT_USAGE)
    link = tmp_path / "link.db"
    os.link(hospital_db, link)  # the same inode under another name
    assert_clean(run("witness", ONCOLOGY, "--db", f"sqlite:///{hospital_db}", "-o", link,
                     "--force"), EXIT_USAGE)
    assert pat_rows(hospital_db) == before


@pytest.mark.parametrize("which", ["query", "schema", "constraints"])
def test_witness_never_writes_over_an_input(which: str, tmp_path: Path) -> None:
    files = {"query": tmp_path / "q.sql", "schema": tmp_path / "s.sql",
             "constraints": tmp_path / "c.txt"}
    files["query"].write_text(ONCOLOGY.read_text())
    files["schema"].write_text(SCHEMA.read_text())
    files["constraints"].write_text("PatDoc[1->2]<=3\n")
    before = {k: p.read_text() for k, p in files.items()}
    for force in ([], ["--force"]):
        result = run("witness", files["query"], "--schema", files["schema"], "--constraints",
                     files["constraints"], "-o", files[which], *force)
        assert_clean(result, EXIT_USAGE)
        assert "never writes over its inputs" in result.stderr
    assert {k: p.read_text() for k, p in files.items()} == before


def test_output_is_replaced_only_with_force(tmp_path: Path) -> None:
    out = tmp_path / "w.sql"
    out.write_text("keep me")
    result = run("witness", "--cq", CQ, "-o", out)
    assert_clean(result, EXIT_USAGE)
    assert "already exists; pass --force" in result.stderr and out.read_text() == "keep me"
    assert_clean(run("witness", "--cq", CQ, "-o", out, "--force"), EXIT_OK)
    assert out.read_text().startswith("-- cqsens witness")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.sql"]  # no temporary left


def test_report_and_profile_refuse_existing_files(tmp_path: Path, hospital_db: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text("{}")
    assert_clean(run("report", ONCOLOGY, "--schema", SCHEMA, "-o", out), EXIT_USAGE)
    assert out.read_text() == "{}"
    assert_clean(run("report", ONCOLOGY, "--schema", SCHEMA, "-o", out, "--force"), EXIT_OK)
    assert json.loads(out.read_text())["summary"]["total"] == 1
    db = f"sqlite:///{hospital_db}"
    before = hospital_db.read_bytes()
    assert_clean(run("profile", "--db", db, "-o", hospital_db, "--force"), EXIT_USAGE)
    assert hospital_db.read_bytes() == before
    other = tmp_path / "x.db"
    other.write_bytes(before)
    assert_clean(run("profile", "--db", db, "-o", other), EXIT_USAGE)
    assert other.read_bytes() == before
    assert_clean(run("profile", "--db", db, "-o", tmp_path / "observed.txt"), EXIT_OK)
    assert "# Measured by cqsens profile" in (tmp_path / "observed.txt").read_text()


def test_report_never_writes_over_a_query_it_reads(tmp_path: Path) -> None:
    folder = tmp_path / "q"
    folder.mkdir()
    query = folder / "a.sql"
    query.write_text("SELECT COUNT(*) FROM R WHERE R.a = 1")
    for force in ([], ["--force"]):
        result = run("report", folder, "--format", "json", "-o", query, *force)
        assert_clean(result, EXIT_USAGE)
        assert "never writes over its inputs" in result.stderr
    assert query.read_text() == "SELECT COUNT(*) FROM R WHERE R.a = 1"


def test_output_in_a_missing_folder_or_not_a_file(tmp_path: Path) -> None:
    result = run("witness", "--cq", CQ, "-o", tmp_path / "missing" / "dir" / "w.db")
    assert_clean(result, EXIT_USAGE)
    assert "does not exist" in result.stderr
    assert_clean(run("witness", "--cq", CQ, "-o", os.devnull, "--force"), EXIT_USAGE)


def test_a_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "w.db"
    out.write_bytes(b"old")

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("cqsens.files.os.replace", refuse)
    result = run("witness", "--cq", CQ, "-o", out, "--force")
    assert_clean(result, EXIT_INPUT)
    assert "cannot write: No space left on device" in result.stderr
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.db"]


def test_witness_sqlite_output_is_a_fresh_database(tmp_path: Path) -> None:
    out = tmp_path / "w.db"
    out.write_bytes(b"not a database at all")
    assert_clean(run("witness", "--cq", CQ, "-o", out, "--force"), EXIT_OK)
    conn = sqlite3.connect(out)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert {"R", "cqsens_witness"} <= tables and "R_with_t" not in tables
    assert (tmp_path / "w.with_t.db").exists()  # A ∪ {t} is its own file


# ----------------------------------------------------------------------- 5. input files


def test_cq_text_is_never_a_path() -> None:
    result = run("analyze", "--cq", "Q(x) :- R(x, y) % see notes.cq", "--format", "json")
    assert_clean(result, EXIT_OK)
    assert json.loads(result.output)["sensitivity"]["upper"] == 1
    result = run("analyze", "--sql", "SELECT COUNT(*) FROM R -- from old.sql")
    assert_clean(result, EXIT_OK)


def test_a_schema_file_with_parentheses_in_its_name(tmp_path: Path) -> None:
    schema = tmp_path / "my(schema).sql"
    schema.write_text(SCHEMA.read_text())
    result = run("analyze", ONCOLOGY, "--schema", schema, "--format", "json")
    assert_clean(result, EXIT_OK)
    assert json.loads(result.output)["sensitivity"]["upper"] == "inf"
    out = tmp_path / "r.json"
    assert_clean(run("report", ONCOLOGY, "--schema", schema, "-o", out), EXIT_OK)
    assert json.loads(out.read_text())["rows"][0]["status"] == "ok"


def test_a_positional_argument_is_always_a_path(tmp_path: Path) -> None:
    result = run("analyze", "SELECT COUNT(*) FROM R.sql")
    assert_clean(result, EXIT_INPUT)
    assert "cannot read query file" in result.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("option", ["query", "--schema", "--constraints"])
def test_a_fifo_is_refused_not_read(option: str, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.sql"
    os.mkfifo(fifo)
    args = [str(fifo)] if option == "query" else [str(ONCOLOGY), option, str(fifo)]
    # a child process of its own: were the FIFO opened, the run would block, and be killed
    proc = run_subprocess(["analyze", *args], cwd=tmp_path, limits=False)
    assert proc.code == EXIT_INPUT, proc.err
    assert "named pipe (FIFO)" in proc.err and "Traceback" not in proc.err


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
@pytest.mark.parametrize("option", ["query", "--schema", "--constraints"])
def test_a_device_is_refused_not_read(option: str) -> None:
    args = ["/dev/zero"] if option == "query" else [str(ONCOLOGY), option, "/dev/zero"]
    if option == "query":
        result = run("analyze", "--cq", CQ, "--constraints", "/dev/zero")
    else:
        result = run("analyze", *args)
    assert_clean(result, EXIT_INPUT)
    assert "it is a device" in result.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_report_and_noiseless_refuse_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.sql"
    os.mkfifo(fifo)
    out = tmp_path / "r.json"
    proc = run_subprocess(["report", str(fifo), "-o", str(out)], cwd=tmp_path, limits=False)
    assert proc.code == EXIT_OK and "named pipe" in json.loads(out.read_text())["rows"][0][
        "error"]
    proc = run_subprocess(["noiseless", "--p", str(fifo), "--epsilon", "1"], cwd=tmp_path,
                          limits=False)
    assert proc.code == EXIT_INPUT and "named pipe" in proc.err


def test_a_file_over_the_size_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.sql"
    with open(big, "wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)  # sparse: nothing is written
    result = run("analyze", big)
    assert_clean(result, EXIT_INPUT)
    assert "too large" in result.stderr and "10 MB" in result.stderr
    ok = tmp_path / "ok.cq"
    ok.write_text(CQ + "." + " " * 1000)
    assert_clean(run("analyze", ok), EXIT_OK)


def test_crlf_files_read_as_before(tmp_path: Path) -> None:
    query = tmp_path / "q.sql"
    query.write_bytes(b"SELECT COUNT(*)\r\nFROM R\r\nWHERE (")
    result = run("analyze", query)
    assert_clean(result, EXIT_INPUT)
    assert f"{query}:3:" in result.stderr


# ---------------------------------------------------------------------- 6. secrets


HOSTILE_URLS = [
    "postgresql://alice:S3cretPW9@127.0.0.1:1/db",
    "postgresql://alice:S3c?retPW9@127.0.0.1:1/db",
    "postgresql://alice:S3c#retPW9@127.0.0.1:1/db",
    "postgresql://alice:S3c@retPW9@127.0.0.1:1/db",
    "postgresql://alice:S3c/retPW9@127.0.0.1:1/db",
    "postgresql://alice:S3c%40retPW9@127.0.0.1:1/db",
    "postgresql+psycopg://alice:S3c?r#t@/PW9@127.0.0.1:1/db",
    "postgres://alice@127.0.0.1:1/db?password=S3cretPW9",
    "postgresql://alice@127.0.0.1:1/db?sslmode=disable&password=S3c#retPW9",
    "postgresql://alice@127.0.0.1:1/db?PASSWORD=S3c%3FretPW9",
    "host=127.0.0.1 port=1 user=alice password=S3cretPW9",
    "host=127.0.0.1 port=1 password='S3c ret PW9' dbname=db",
    "dbname=db password = S3cretPW9",
    "mysql://alice:S3cretPW9@127.0.0.1:1/db",
    "postgresql://alice:S3cretPW9@127.0.0.1:notaport/db",
    "postgresql://alice:S3cretPW9@[::1/db",
    "sqlite:///nonexistent.db?password=S3cretPW9",
    "  postgresql://alice:S3cretPW9@127.0.0.1:1/db  ",
    "postgresql://:S3cretPW9@127.0.0.1:1",
]
#: Every secret above contains this; no output may.
MARK = "PW9"


def _commands(url: str, tmp: Path) -> list[list[str]]:
    folder = tmp / "q"
    return [
        ["analyze", "--cq", CQ, "--db", url],
        ["analyze", "--cq", CQ, "--db", url, "--format", "json"],
        ["witness", "--cq", CQ, "--db", url, "-o", str(tmp / "w.sql")],
        ["witness", "--cq", CQ, "--db", url, "-o", str(tmp / "w.db")],
        ["report", str(folder), "--db", url, "-o", str(tmp / "r.json")],
        ["report", str(folder), "--db", url, "-o", str(tmp / "r.html")],
        ["report", str(folder), "--db", url, "-o", str(tmp / "r.md")],
        ["profile", "--db", url],
        ["profile", "--db", url, "--format", "json", "-o", str(tmp / "p.txt")],
        ["--debug", "profile", "--db", url, "--strict"],
    ]


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_no_command_leaks_a_password(url: str, tmp_path: Path) -> None:
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "a.sql").write_text("SELECT COUNT(*) FROM R")
    env = {"PGPASSWORD": "EnvS3cretPW9", "PGCONNECT_TIMEOUT": "5"}
    for args in _commands(url, tmp_path):
        result = run(*args, env=env)
        text = text_of(result)
        assert result.exit_code in (EXIT_INPUT, EXIT_USAGE), (args, text)
        assert "Traceback" not in text, (args, text)
        assert MARK not in text, (args, text)
        assert "S3c" not in text, (args, text)
    for written in tmp_path.rglob("*"):
        if written.is_file() and written.suffix != ".sql" or written.name == "w.sql":
            assert MARK.encode() not in written.read_bytes(), written


def test_pgpassword_is_masked(tmp_path: Path, hospital_db: Path) -> None:
    env = {"PGPASSWORD": "EnvS3cretPW9"}
    out = tmp_path / "r.html"
    result = run("report", ONCOLOGY, "--db", f"sqlite:///{hospital_db}", "-o", out,
                 "--epsilon", "1", env=env)
    assert_clean(result, EXIT_OK)
    assert MARK not in out.read_text() and MARK not in text_of(result)


def test_report_header_masks_the_command_line(tmp_path: Path, hospital_db: Path) -> None:
    from cqsens.cli.masking import masked_command

    shown = masked_command("cqsens", ["report", "q", "--db=postgresql://a:S3c?retPW9@h/d",
                                      "--db", "host=h password=S3cretPW9"])
    assert MARK not in shown and "--db=postgresql://a:***@h/d" in shown
    out = tmp_path / "r.json"
    result = run("report", ONCOLOGY, f"--db=sqlite:///{hospital_db}", "-o", out)
    assert_clean(result, EXIT_OK)
    assert json.loads(out.read_text())["command"].startswith("cqsens report ")


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://alice:S3c?ret9@host/db", "postgresql://alice:***@host/db"),
    ("postgresql://alice:S3c#ret9@host/db", "postgresql://alice:***@host/db"),
    ("postgresql://alice:a@b/c@host:5/db", "postgresql://alice:***@host:5/db"),
    ("postgresql://alice@host/db?password=x&sslmode=require",
     "postgresql://alice@host/db?password=***&sslmode=require"),
    ("host=h password=secret dbname=d", "host=h password=*** dbname=d"),
    ("host=h password='a b c' dbname=d", "host=h password=*** dbname=d"),
    ("sqlite:///a@b.db", "sqlite:///a@b.db"),
    ("postgresql://alice@host/db", "postgresql://alice@host/db"),
])
def test_mask_url(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def test_a_raw_at_in_the_password_still_parses() -> None:
    from cqsens.db.connect import _parse_url

    parsed = _parse_url("postgresql://alice:S3c@r?t/9@db.example:5432/hospital")
    assert (parsed.username, parsed.password, parsed.host, parsed.port, parsed.database) == (
        "alice", "S3c@r?t/9", "db.example", 5432, "hospital")
    assert _parse_url("postgresql://alice:S3c?ret9@h/db").password == "S3c?ret9"
