"""A throwaway PostgreSQL cluster for the live-database tests.

``tests/conftest.py`` turns :func:`cluster` (or :func:`start` and :func:`stop`, shared by
the xdist workers) into the session fixture ``pg_server`` (one cluster per test run) and
:func:`hospital_databases` into ``pg_urls``.  The cluster is created with
``initdb`` and started with ``pg_ctl`` on a free loopback port (as the
``postgres`` user when the tests run as root), with a password and SCRAM
authentication on 127.0.0.1.  Without the server binaries or psycopg the tests
that use it skip, unless ``CQSENS_REQUIRE_POSTGRES=1`` (CI), which makes them fail.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cqsens.db import load_sql_file

HOSPITAL = Path(__file__).resolve().parents[1] / "examples" / "hospital"
SCHEMA_SQL = HOSPITAL / "schema.sql"
DATA_SQL = HOSPITAL / "data.sql"
BAD_SQL = HOSPITAL / "data_violating.sql"

PG_USER = "cqsens"


@dataclass(frozen=True)
class PgServer:
    """A throwaway PostgreSQL cluster on 127.0.0.1."""

    port: int
    password: str

    def url(self, dbname: str = "postgres", *, password: str | None = None,
            scheme: str = "postgresql") -> str:
        pw = self.password if password is None else password
        return f"{scheme}://{PG_USER}:{pw}@127.0.0.1:{self.port}/{dbname}"


def _unavailable(reason: str) -> None:
    if os.environ.get("CQSENS_REQUIRE_POSTGRES", "") not in ("", "0"):
        pytest.fail(f"PostgreSQL required (CQSENS_REQUIRE_POSTGRES) but {reason}")
    pytest.skip(reason)


def _pg_bindir() -> Path | None:
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                        key=lambda p: [int(x) for x in re.findall(r"\d+", p.parent.parent.name)],
                        reverse=True)
    for initdb in candidates:
        if (initdb.parent / "pg_ctl").exists():
            return initdb.parent
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Running:
    """A started cluster: its server and what :func:`stop` needs (JSON-ready)."""

    server: PgServer
    bindir: str
    folder: str  # the temporary folder holding the data directory and the log
    prefix: tuple[str, ...]  # runuser -u postgres -- when the tests run as root

    def to_json(self) -> str:
        return json.dumps({"port": self.server.port, "password": self.server.password,
                           "bindir": self.bindir, "folder": self.folder,
                           "prefix": list(self.prefix)})

    @staticmethod
    def from_json(text: str) -> Running:
        d = json.loads(text)
        return Running(PgServer(d["port"], d["password"]), d["bindir"], d["folder"],
                       tuple(d["prefix"]))


def cluster() -> Iterator[PgServer]:
    """Start a cluster, yield it, stop it (the session fixture ``pg_server`` in conftest.py
    when the tests run in one process)."""
    running = start()
    try:
        yield running.server
    finally:
        stop(running)


def start() -> Running:
    """Start a throwaway cluster (skips or fails the test when that cannot be done)."""
    bindir = _pg_bindir()
    if bindir is None:
        _unavailable("PostgreSQL server binaries (initdb, pg_ctl) not found: "
                     "apt-get install -y postgresql")
    assert bindir is not None
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg 3 is not installed: pip install 'psycopg[binary]'")
    prefix: list[str] = []
    owner: pwd.struct_passwd | None = None
    if os.geteuid() == 0:  # initdb refuses root: run the cluster as 'postgres'
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            _unavailable("running as root and there is no 'postgres' user to run the server")
        runuser = shutil.which("runuser")
        if runuser is None:
            _unavailable("running as root and runuser is missing")
        prefix = [str(runuser), "-u", "postgres", "--"]
    tmp = Path(tempfile.mkdtemp(prefix="cqsens-pg-"))
    password = "pw-" + secrets.token_hex(8)
    pwfile = tmp / "pwfile"
    pwfile.write_text(password + "\n")
    if owner is not None:
        for path in (tmp, pwfile):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    data = tmp / "data"
    port = free_port()
    try:
        init = subprocess.run(
            [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", PG_USER,
             f"--pwfile={pwfile}", "--auth-local=trust", "--auth-host=scram-sha-256",
             "-E", "UTF8", "--locale=C", "--no-sync"],
            capture_output=True, text=True, timeout=120, check=False)
        pwfile.unlink()
        if init.returncode != 0:
            pytest.fail(f"initdb failed: {init.stderr or init.stdout}")
        options = (f"-p {port} -k {tmp} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c full_page_writes=off -c synchronous_commit=off")
        started = subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(tmp / "log"),
             "-w", "-t", "60", "-o", options, "start"],
            capture_output=True, text=True, timeout=120, check=False)
        log = (tmp / "log").read_text() if (tmp / "log").exists() else ""
        if started.returncode != 0:
            pytest.fail(f"pg_ctl start failed: {started.stderr or started.stdout}\n{log}")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Running(PgServer(port, password), str(bindir), str(tmp), tuple(prefix))


def stop(running: Running) -> None:
    """Stop a cluster of :func:`start` and remove its files."""
    data = Path(running.folder) / "data"
    subprocess.run([*running.prefix, str(Path(running.bindir) / "pg_ctl"), "-D", str(data),
                    "-m", "immediate", "-w", "stop"], capture_output=True, timeout=60,
                   check=False)
    shutil.rmtree(running.folder, ignore_errors=True)


def hospital_databases(pg_server: PgServer) -> tuple[str, str]:
    """Databases ``hospital`` (examples/hospital/data.sql) and ``hospital_bad``
    (data_violating.sql) on the cluster: their URLs (the fixture ``pg_urls``)."""
    import sqlalchemy as sa

    engine = sa.create_engine(pg_server.url(scheme="postgresql+psycopg"),
                              isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        for name in ("hospital", "hospital_bad"):
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    clean, bad = pg_server.url("hospital"), pg_server.url("hospital_bad")
    load_sql_file(clean, SCHEMA_SQL, DATA_SQL)
    load_sql_file(bad, SCHEMA_SQL, BAD_SQL)
    return clean, bad
