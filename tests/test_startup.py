"""What a command imports before it runs: ``cqsens analyze``, ``report`` and ``witness``
load neither the database drivers (SQLAlchemy) nor NumPy when they read no database
(each command's module is imported only when the command runs, cqsens/cli/main.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click

from cqsens.cli import cli
from cqsens.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
HOSPITAL = ROOT / "examples" / "hospital"
HEAVY = ("sqlalchemy", "numpy")

_SCRIPT = """
import json, sys
from cqsens.cli import cli
for args in json.loads(sys.argv[1]):
    try:
        cli(args, standalone_mode=False)
    except SystemExit as stop:
        assert not stop.code, stop.code
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def _loaded_after(runs: list[list[str]], cwd: Path) -> list[str]:
    script = _SCRIPT.format(heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", script, json.dumps(runs)], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=True)
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_analyze_report_and_witness_load_no_database_driver_nor_numpy(tmp_path: Path) -> None:
    schema = str(HOSPITAL / "schema.sql")
    runs = [["analyze", str(HOSPITAL / "oncology.sql"), "--schema", schema],
            ["report", str(HOSPITAL), "-o", str(tmp_path / "r.md")],
            ["witness", str(HOSPITAL / "oncology.sql"), "--schema", schema,
             "-o", str(tmp_path / "w")]]
    assert _loaded_after(runs, ROOT) == []
    assert (tmp_path / "r.md").stat().st_size > 0


def test_a_command_that_reads_a_database_still_loads_the_driver() -> None:
    """The check above can fail: ``cqsens profile --help`` pulls SQLAlchemy in."""
    assert _loaded_after([["profile", "--help"]], ROOT) == ["sqlalchemy"]


def test_every_command_module_is_listed_and_loads() -> None:
    ctx = click.Context(cli)
    modules = {p.stem for p in (ROOT / "cqsens" / "cli").glob("*.py")
               if "@click.command" in p.read_text(encoding="utf-8")}
    assert {module for module, _ in COMMANDS.values()} == modules
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
    assert cli.get_command(ctx, "no-such-command") is None
