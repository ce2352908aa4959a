"""Run the ``cqsens`` CLI on hostile input and check the outcome contract.

The contract (issue 18, item 7): the exit code is 0, 1 or 2 (3 is an internal
error, a bug); no traceback is printed and no exception escapes; no run takes
longer than :data:`HANG_LIMIT` seconds; on exit 0 with JSON output, every
``upper``, ``lower``, ``l1`` and ``l2`` is a number >= 0, ``"inf"`` or null.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import click
from click.testing import CliRunner

from cqsens.cli import cli

__all__ = [
    "ALLOWED_EXITS",
    "EXAMPLES",
    "HANG_LIMIT",
    "Run",
    "build_sqlite",
    "check_bounds",
    "check_json",
    "check_run",
    "describe",
    "has_option",
    "run_cli",
    "run_subprocess",
    "with_limits",
]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ALLOWED_EXITS = frozenset({0, 1, 2})
#: A run slower than this is a hang.
HANG_LIMIT = 20.0
#: The --timeout passed to commands that take one.
RUN_TIMEOUT = "5"
BOUND_KEYS = frozenset({"upper", "lower", "l1", "l2"})


@dataclass(frozen=True)
class Run:
    """The outcome of one CLI run (``code`` is None when the run was killed as hung)."""

    args: tuple[str, ...]
    code: int | None
    out: str
    err: str
    elapsed: float
    exception: BaseException | None = None


def has_option(command: str, option: str) -> bool:
    """Whether ``cqsens COMMAND`` takes ``option`` (e.g. ``--timeout``)."""
    cmd = cli.get_command(click.Context(cli), command)
    return cmd is not None and any(option in p.opts for p in cmd.params
                                   if isinstance(p, click.Option))


def with_limits(args: list[str]) -> list[str]:
    """``args`` plus ``--timeout 5`` when the command takes it and it is not given."""
    if args and has_option(args[0], "--timeout") \
            and "--timeout" not in args:
        return [*args, "--timeout", RUN_TIMEOUT]
    return args


def run_cli(args: list[str], *, limits: bool = True) -> Run:
    """Run ``cqsens ARGS`` in-process with click's CliRunner, timed."""
    argv = with_limits(args) if limits else args
    start = time.monotonic()
    try:
        result = CliRunner().invoke(cli, argv, catch_exceptions=True)
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - a BaseException that is not SystemExit is a bug
        return Run(tuple(argv), 3, "", "", time.monotonic() - start, err)
    elapsed = time.monotonic() - start
    exc = result.exception
    if isinstance(exc, SystemExit):
        exc = None
    return Run(tuple(argv), result.exit_code, result.stdout, result.stderr, elapsed, exc)


def run_subprocess(args: list[str], *, cwd: Path, limits: bool = True,
                   memory: int | None = 2 * 1024**3) -> Run:
    """Run ``cqsens ARGS`` as a process of its own, killed after HANG_LIMIT seconds.

    The process is forked from this one, so cqsens is already imported (a new
    interpreter would spend a second or more importing and compiling it); it then
    does what ``python -m cqsens ARGS`` does: :func:`cqsens.cli.main.main` with
    standard input at the null device and standard output and error on files of
    their own, its exit code the process's.  ``memory`` caps how far the child's
    address space may grow (bytes) so that a runaway read cannot take the machine
    down with it.
    """
    import signal
    import tempfile

    argv = with_limits(args) if limits else args
    with tempfile.TemporaryDirectory(prefix="cqsens-run-") as tmp:
        out_path, err_path = Path(tmp) / "out", Path(tmp) / "err"
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            _child(argv, cwd, out_path, err_path, memory)
        code: int | None = None
        while time.monotonic() - start < HANG_LIMIT:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.01)
        else:  # the child and any worker processes it started
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        elapsed = time.monotonic() - start
        out = out_path.read_text(encoding="utf-8", errors="replace")
        err = err_path.read_text(encoding="utf-8", errors="replace")
    if code is None:
        return Run(tuple(argv), None, out, "", elapsed)
    return Run(tuple(argv), code, out, err, elapsed)


def _child(argv: list[str], cwd: Path, out_path: Path, err_path: Path,
           memory: int | None) -> None:  # pragma: no cover - runs in the forked child
    """Become ``python -m cqsens ARGV`` (see :func:`run_subprocess`); never returns."""
    import io
    import resource

    code = 1
    try:
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, out_path), (2, err_path)):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
        os.chdir(cwd)
        if memory is not None:
            used = _address_space()
            resource.setrlimit(resource.RLIMIT_AS, (used + memory, used + memory))
        sys.argv = ["cqsens", *argv]
        from cqsens.cli.main import main

        main()
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        if done.code is not None and not isinstance(done.code, int):
            print(done.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - what the interpreter would print
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001, S110 - as the interpreter's last flush
                pass
        os._exit(code)


def _address_space() -> int:
    """This process's address space in bytes (Linux: /proc/self/statm), else 0."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def describe(exc: BaseException) -> str:
    """``TypeError at cqsens/report/json.py:42 (in fn): message`` for the innermost cqsens frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "cqsens" in f.filename and "/tests/" not in f.filename]
    where = ""
    if ours or frames:
        f = (ours or frames)[-1]
        path = f.filename.split("cqsens/", 1)[-1] if "cqsens/" in f.filename else f.filename
        where = f" at cqsens/{path}:{f.lineno} (in {f.name})"
    return f"{type(exc).__name__}{where}: {str(exc)[:200]}"


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _exact_text(value: Any) -> bool:
    """A string holding a non-negative rational that is not a double (else it would be
    a JSON number)."""
    if not isinstance(value, str):
        return False
    try:
        q = Fraction(value)
    except (ValueError, ZeroDivisionError):
        return False
    return q >= 0 and q.denominator != 1 and Fraction(float(q)) != q


def check_bounds(data: Any, path: str = "$") -> None:
    """Every upper/lower/l1/l2 under ``data`` is a number >= 0, "inf", None, or an exact
    non-negative rational written as a string ("0.1", "20/3"; README, section Output)."""
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}"
            if key in BOUND_KEYS and not isinstance(value, (dict, list)):
                ok = (value is None or value == "inf"
                      or (isinstance(value, (int, float)) and not isinstance(value, bool)
                          and value == value and value >= 0 and value != float("inf"))
                      or _exact_text(value))
                assert ok, f"bad bound {where} = {value!r}"
            check_bounds(value, where)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            check_bounds(value, f"{path}[{i}]")


def check_json(text: str, what: str) -> Any:
    """Parse strict JSON (no NaN/Infinity) and check its bounds."""
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except ValueError as err:
        raise AssertionError(f"{what} is not valid JSON ({err}): {text[:300]!r}") from err
    check_bounds(data)
    return data


def _last_error(text: str) -> str:
    """The exception line and the innermost cqsens frame of a printed traceback."""
    lines = text.rstrip().splitlines()
    frames = [ln.strip() for ln in lines if ln.lstrip().startswith("File ") and "cqsens" in ln]
    return (lines[-1] if lines else "") + (f" [{frames[-1]}]" if frames else "")


def check_run(run: Run, *, json_out: bool = False,
              allowed: frozenset[int] = ALLOWED_EXITS) -> None:
    """Assert the outcome contract for one run (see the module docstring)."""
    shown = " ".join(repr(a) if len(a) < 200 else repr(a[:200]) + "…" for a in run.args)
    assert run.code is not None, f"HANG: killed after {HANG_LIMIT:.0f} s: cqsens {shown}"
    assert run.exception is None, f"CRASH {describe(run.exception)}: cqsens {shown}"
    assert "Traceback" not in run.out and "Traceback" not in run.err, (
        f"TRACEBACK (exit {run.code}) {_last_error(run.out + run.err)}: cqsens {shown}")
    assert run.elapsed <= HANG_LIMIT, f"HANG: {run.elapsed:.1f} s: cqsens {shown}"
    assert run.code in allowed, (
        f"WRONG EXIT {run.code} (expected {sorted(allowed)}): cqsens {shown}\n"
        f"stderr: {run.err[-400:]}")
    if json_out and run.code == 0:
        check_json(run.out, "stdout")


def build_sqlite(path: Path) -> str:
    """A SQLite database of the hospital example at ``path``; returns its URL."""
    import sqlite3

    hospital = EXAMPLES / "hospital"
    con = sqlite3.connect(path)
    try:  # no fsync while it is written (a test's throwaway file): the same rows, less wait
        con.execute("PRAGMA synchronous = OFF")
        con.execute("PRAGMA journal_mode = MEMORY")
        con.executescript((hospital / "schema.sql").read_text(encoding="utf-8"))
        con.executescript((hospital / "data.sql").read_text(encoding="utf-8"))
        con.commit()
    finally:
        con.close()
    return f"sqlite:///{path}"
