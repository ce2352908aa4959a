"""The README and the documentation pages tell the truth: their commands run, and their JSON
examples are what cqsens prints.

Every line of a fenced ``bash`` block of README.md or of a page of docs/ that runs
``cqsens`` (alone or after ``&&``) or ``python -m cqsens`` is executed from the
repository's root, with the files it writes redirected to a temporary folder; it
must exit 0 unless its comment says ``exit N``.  Placeholder folders of the README (``queries/``,
``db.sql``, ``rules.txt``) stand for a bundled example folder.  Every fenced
``json`` block is the output of the last ``cqsens`` command in an inline code span
of the paragraph just before it; the keys and values it shows must be the real
ones, ``"..."`` standing for anything (first or last in a list: any further items;
``"text ..."``: any text that starts with ``text``).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import cqsens.batch
from cqsens.batch import BatchResult
from cqsens.cli.main import cli
from cqsens.settings import Settings
from tests.conftest import EXAMPLES

ROOT = Path(__file__).resolve().parents[1]
#: README.md and the documentation's pages (docs/tutorial.md and docs/howto/ run in test_docs.py).
PAGES = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8")
         for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
         if "_build" not in p.parts}

#: README placeholders and the bundled files that stand for them: a folder of queries is the
#: hospital example (its schema and rules; examples/tpch is analysed by test_batch.py and
#: test_workload.py), a log is the TPC-H one (and then ``db.sql`` its schema).
PLACEHOLDERS = {
    "queries/": "examples/hospital/",
    "db.sql": "examples/hospital/schema.sql",
    "rules.txt": "examples/hospital/constraints.txt",
    "log.jsonl": "examples/logs/tpch.jsonl",
    "queries.csv": "examples/logs/queries.csv",
}
LOG_PLACEHOLDERS = {**PLACEHOLDERS, "db.sql": "examples/tpch/schema.sql"}
#: The command whose analysis is the session's one batch of examples/ (tests/conftest.py).
EXAMPLES_REPORT = "cqsens report examples/ -o report.html"

#: Commands that cannot run here, with the reason.
SKIPPED = {
    "cqsens witness ... -o w.sqlite": "'...' stands for the arguments of the line above",
}


def _blocks(language: str) -> list[tuple[str, int, str]]:
    """(page, line number, text) of each fenced block of the pages in ``language``."""
    found = []
    for page, text in PAGES.items():
        for match in re.finditer(rf"^```{language}\n(.*?)^```", text, re.S | re.M):
            found.append((page, text.count("\n", 0, match.start()) + 1, match.group(1)))
    return found


def _commands() -> list[tuple[str, str]]:
    """(command, comment) for each cqsens command of the pages' bash blocks."""
    out = []
    for _, _, block in _blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            code, _, comment = line.partition("  #")
            for part in code.split("&&"):
                part = " ".join(part.split())
                if part.startswith(("cqsens ", "python -m cqsens ")):
                    out.append((part, comment.strip()))
    return out


COMMANDS = _commands()


def _argv(command: str, tmp_path: Path) -> list[str]:
    """The command's arguments, placeholders replaced and outputs sent to ``tmp_path``."""
    words = shlex.split(command)
    words = words[3:] if words[0] == "python" else words[1:]
    names = LOG_PLACEHOLDERS if {"log.jsonl", "queries.csv"} & set(words) else PLACEHOLDERS
    argv = [names.get(w, w) for w in words]
    for i, word in enumerate(argv[:-1]):
        if word in ("-o", "--output", "--cache", "--ledger"):
            argv[i + 1] = str(tmp_path / Path(argv[i + 1]).name)
    return argv


def _expected_exit(comment: str) -> int:
    said = re.search(r"\bexit (\d)\b", comment)
    return int(said.group(1)) if said else 0


def test_readme_has_commands_to_check() -> None:
    assert len(COMMANDS) >= 12
    assert any(c.startswith("python -m cqsens") for c, _ in COMMANDS)
    assert {c.split()[1] for c, _ in COMMANDS if c.startswith("cqsens")} >= {
        "analyze", "witness", "report"}


def _shared_batch(batch: BatchResult) -> Callable[..., BatchResult]:
    """``analyze_paths`` for :data:`EXAMPLES_REPORT`: the session's batch of examples/ (its
    own time limit and witness budget, tests/conftest.py), once the command asked for
    examples/ with the default settings; the command renders and writes it."""
    def analyze_paths(inputs: tuple[str, ...], *, command: str, settings: Settings,
                      **_: object) -> BatchResult:
        assert [Path(i).resolve() for i in inputs] == [EXAMPLES]
        assert replace(settings, timeout=None) == replace(Settings(), timeout=None)
        return replace(batch, command=command)
    return analyze_paths


@pytest.mark.parametrize(("command", "comment"), COMMANDS, ids=[c for c, _ in COMMANDS])
def test_readme_command_runs(command: str, comment: str, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch,
                             request: pytest.FixtureRequest) -> None:
    if command in SKIPPED:
        pytest.skip(SKIPPED[command])
    if command == EXAMPLES_REPORT:
        batch = request.getfixturevalue("examples_batch")
        monkeypatch.setattr(cqsens.batch, "analyze_paths", _shared_batch(batch))
    argv = _argv(command, tmp_path)
    expected = _expected_exit(comment)
    # ``python -m cqsens`` runs the same click group in this process (tests/test_cli.py's
    # test_python_dash_m runs the module as a process)
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == expected, (result.output, result.stderr)
    if command.startswith("python -m cqsens"):
        assert result.stdout.strip()
    outputs = [Path(argv[i + 1]) for i, w in enumerate(argv[:-1]) if w in ("-o", "--output")]
    for path in outputs:
        assert path.exists() and path.stat().st_size > 0


def _matches(shown: Any, real: Any, where: str = "$") -> list[str]:
    """Where ``real`` differs from what the README shows (``"..."``: anything)."""
    if shown == "...":
        return []
    if isinstance(shown, str) and shown.endswith(" ...") and isinstance(real, str):
        prefix = shown[: -len(" ...")]
        return [] if real.startswith(prefix) else [f"{where}: {real!r} does not start {prefix!r}"]
    if isinstance(shown, dict):
        if not isinstance(real, dict):
            return [f"{where}: {real!r} is not an object"]
        problems = [f"{where}.{k}: missing" for k in shown if k not in real]
        for k in shown:
            if k in real:
                problems += _matches(shown[k], real[k], f"{where}.{k}")
        return problems
    if isinstance(shown, list):
        if not isinstance(real, list):
            return [f"{where}: {real!r} is not a list"]
        if shown and "..." in (shown[0], shown[-1]):
            kept = shown[1:] if shown[0] == "..." else shown[:-1]
            if len(real) < len(kept):
                return [f"{where}: {len(real)} items, the README shows {len(kept)} or more"]
            real = real[len(real) - len(kept):] if shown[0] == "..." else real[: len(kept)]
            shown = kept
        if len(shown) != len(real):
            return [f"{where}: {len(real)} items, the README shows {len(shown)}"]
        return [p for i, (s, r) in enumerate(zip(shown, real, strict=True))
                for p in _matches(s, r, f"{where}[{i}]")]
    if shown != real or type(shown) is not type(real):
        return [f"{where}: README shows {shown!r}, cqsens prints {real!r}"]
    return []


def _documented_command(page: str, line: int) -> str:
    """The last ``cqsens ...`` code span in the paragraph before the block at ``page:line``."""
    before = PAGES[page].split("\n")[: line - 1]
    paragraph: list[str] = []
    for text in reversed(before):
        if not text.strip() and paragraph:
            break
        paragraph.insert(0, text)
    spans = re.findall(r"`(cqsens [^`]+)`", " ".join(" ".join(paragraph).split()))
    assert spans, f"{page}:{line}: say which command prints this JSON"
    return spans[-1]


JSON_BLOCKS = _blocks("json")


def test_readme_has_json_to_check() -> None:
    assert JSON_BLOCKS


@pytest.mark.parametrize(("page", "line", "block"), JSON_BLOCKS,
                         ids=[f"{p}:{n}" for p, n, _ in JSON_BLOCKS])
def test_readme_json_is_the_real_output(page: str, line: int, block: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    command = _documented_command(page, line)
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(cli, shlex.split(command)[1:])
    assert result.exit_code == 0, result.output
    problems = _matches(json.loads(block), json.loads(result.output))
    assert problems == [], f"{page}:{line}: {command}"


def test_matching_rules() -> None:
    assert _matches({"a": "...", "b": [1, "..."], "c": "Q(x) :- ..."},
                    {"a": [1], "b": [1, 2, 3], "c": "Q(x) :- R(x)", "d": 0}) == []
    assert _matches({"a": None}, {"a": 3}) == ["$.a: README shows None, cqsens prints 3"]
    assert _matches({"a": 1}, {}) == ["$.a: missing"]
    assert _matches(["...", 3], [1, 2, 3]) == []
    assert _matches(["...", 2], [1, 2, 3]) == ["$[0]: README shows 2, cqsens prints 3"]
    assert _matches([1, 2], [1]) == ["$: 1 items, the README shows 2"]
    assert _matches({"t": False}, {"t": 0}) == ["$.t: README shows False, cqsens prints 0"]
