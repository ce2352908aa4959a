"""A live PostgreSQL user whose password holds raw ``?``, ``#``, ``@`` and ``/``.

Every command connects with the raw URL (no percent-encoding), succeeds, and
never shows the password: not on stdout or stderr, not in profile's header,
not in any ``-o`` file.  Skips without PostgreSQL, as ``test_database.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens.cli.main import cli
from tests.postgres import PgServer

HOSPITAL = Path(__file__).resolve().parents[1] / "examples" / "hospital"
ONCOLOGY = HOSPITAL / "oncology.sql"
PASSWORD = "S3c?r#t@/PW9"
MARK = "PW9"


@pytest.fixture(scope="module")
def hostile_url(pg_server: PgServer, pg_urls: tuple[str, str]) -> str:
    import sqlalchemy as sa

    engine = sa.create_engine(pg_server.url("hospital", scheme="postgresql+psycopg"),
                              isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text("DROP ROLE IF EXISTS hostile"))
        conn.execute(sa.text(f"CREATE ROLE hostile LOGIN PASSWORD '{PASSWORD}'"))
        conn.execute(sa.text("GRANT SELECT ON ALL TABLES IN SCHEMA public TO hostile"))
    engine.dispose()
    return f"postgresql://hostile:{PASSWORD}@127.0.0.1:{pg_server.port}/hospital"


def _run(*args: object) -> tuple[int, str]:
    result = CliRunner(env={"PGPASSWORD": "Env" + PASSWORD}).invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output + (result.stderr or "")


def test_a_raw_password_connects_and_never_shows(hostile_url: str, tmp_path: Path) -> None:
    commands = [
        ("analyze", ONCOLOGY, "--db", hostile_url),
        ("analyze", ONCOLOGY, "--db", hostile_url, "--format", "json"),
        ("witness", ONCOLOGY, "--db", hostile_url, "-o", tmp_path / "w.sql"),
        ("witness", ONCOLOGY, "--db", hostile_url, "-o", tmp_path / "w.db"),
        ("report", ONCOLOGY, "--db", hostile_url, "-o", tmp_path / "r.json"),
        ("report", ONCOLOGY, "--db", hostile_url, "-o", tmp_path / "r.html"),
        ("report", ONCOLOGY, "--db", hostile_url, "-o", tmp_path / "r.md"),
        ("profile", "--db", hostile_url, "-o", tmp_path / "p.txt"),
        ("profile", "--db", hostile_url, "--format", "json"),
    ]
    for args in commands:
        code, text = _run(*args)
        assert code == 0, (args, text)
        assert MARK not in text and "S3c" not in text, (args, text)
    header = (tmp_path / "p.txt").read_text()
    assert "postgresql://hostile:***@127.0.0.1:" in header
    for written in tmp_path.iterdir():
        assert MARK.encode() not in written.read_bytes(), written


def test_a_wrong_password_is_one_line_without_it(hostile_url: str) -> None:
    wrong = hostile_url.replace(PASSWORD, "Wr0ng?#@/PW9")
    code, text = _run("profile", "--db", wrong)
    assert code == 1 and "Traceback" not in text
    assert "password authentication failed" in text
    assert MARK not in text and "Wr0ng" not in text
