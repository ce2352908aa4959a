"""The tutorial and the how-to guides run: every block of theirs is executed here.

Each page runs in its own temporary copy of ``examples/``, block after block, so a
later block sees the files an earlier one wrote:

* a ```` ```console ```` block holds ``$ cqsens ...`` lines, each followed by the
  output it prints (standard output and error).  The shown lines must be the real
  lines, in order; a line ``...`` stands for any lines (none included), and a
  line ending in `` ...`` for any line that starts with the text before it.  A
  command must exit 0 unless its line ends with ``# exit N``;
* a ```` ```python ```` block is executed;
* a ```` ```toml ```` or ```` ```sql ```` block is preceded by a MyST comment
  ``% file: PATH`` and is written to PATH, for the commands after it to read;
* a block that cannot run here (a live PostgreSQL server, a CI service) is a
  ```` ```{code-block} ```` with ``:class: no-test``, preceded by a comment
  ``% no-test: REASON``.  There are few of them, and the test counts them.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: The pages whose every block runs (README.md: its console and python blocks; its bash
#: blocks are the set-up commands, whose cqsens commands test_readme_truth.py runs).
PAGES = sorted([DOCS / "tutorial.md", *(DOCS / "howto").glob("*.md")])
README = ROOT / "README.md"
#: At most this many blocks of those pages may be left unrun (each with its reason).
MAX_NO_TEST = 4

FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    """A fenced block of a page: its language, text, line and the comment above it."""

    language: str
    text: str
    line: int
    comment: str


def _blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        comment = before[1:].strip() if before.startswith("%") else ""
        found.append(Block(match.group(1), match.group(2), text.count("\n", 0, match.start()) + 1,
                           comment))
    return found


def _is_no_test(block: Block) -> bool:
    return block.language.startswith("{") and ":class: no-test" in block.text


def _matches(shown: list[str], real: list[str]) -> bool:
    """Whether ``real`` lines are what ``shown`` shows (``...`` lines elide)."""
    if not shown:
        return not real
    head, rest = shown[0], shown[1:]
    if head.strip() == "...":
        return any(_matches(rest, real[i:]) for i in range(len(real) + 1))
    if not real:
        return False
    if head.endswith(" ...") and real[0].startswith(head[: -len(" ...")]):
        return _matches(rest, real[1:])
    return head == real[0] and _matches(rest, real[1:])


def _commands(block: Block) -> list[tuple[str, int, list[str]]]:
    """(command, expected exit code, shown output lines) of a console block."""
    out: list[tuple[str, int, list[str]]] = []
    for line in block.text.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            command, _, comment = line[2:].partition("  # ")
            said = re.fullmatch(r"exit (\d)", comment.strip())
            out.append((command.strip(), int(said.group(1)) if said else 0, []))
        else:
            assert out, f"line {block.line}: output before any command"
            out[-1][2].append(line.rstrip())
    return out


def _run_console(block: Block, where: str) -> None:
    for command, expected, shown in _commands(block):
        words = shlex.split(command)
        assert words[0] == "cqsens", f"{where}: only cqsens commands run here: {command}"
        result = CliRunner().invoke(cli, words[1:])
        real = [line.rstrip() for line in result.output.rstrip("\n").split("\n")]
        assert result.exit_code == expected, f"{where}: {command}\n{result.output}"
        assert _matches(shown, real), (f"{where}: {command} prints\n" + "\n".join(real)
                                       + "\n\nthe page shows\n" + "\n".join(shown))


def _run(block: Block, where: str, folder: Path) -> None:
    if block.language == "console":
        _run_console(block, where)
    elif block.language == "python":
        exec(compile(block.text, where, "exec"), {"__name__": "__docs__"})
    elif block.language in ("toml", "sql"):
        target = re.fullmatch(r"file: (\S+)", block.comment)
        assert target, f"{where}: say which file this block is (% file: PATH)"
        path = folder / target.group(1)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.text, encoding="utf-8")
    else:
        raise AssertionError(f"{where}: a ```{block.language} block cannot be run")


@pytest.mark.parametrize("page", [*PAGES, README],
                         ids=[p.relative_to(ROOT).as_posix() for p in [*PAGES, README]])
def test_every_block_of_the_page_runs(page: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    blocks = _blocks(page)
    if page == README:
        blocks = [b for b in blocks if b.language in ("console", "python")]
    assert any(b.language == "console" for b in blocks), f"{page.name}: no command to run"
    for block in blocks:
        where = f"{page.relative_to(ROOT)}:{block.line}"
        if _is_no_test(block):
            assert block.comment.startswith("no-test: ") and len(block.comment) > 20, \
                f"{where}: a block left unrun needs its reason (% no-test: REASON)"
            continue
        _run(block, where, tmp_path)


def test_the_pages_exist_and_few_blocks_are_left_unrun() -> None:
    names = {p.relative_to(DOCS).as_posix() for p in PAGES}
    assert names == {"tutorial.md", "howto/privacy-unit.md", "howto/unbounded.md", "howto/ci.md",
                     "howto/query-logs.md", "howto/postgresql.md"}
    unrun = [b for p in PAGES for b in _blocks(p) if _is_no_test(b)]
    assert len(unrun) <= MAX_NO_TEST


def test_the_readme_is_a_front_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert text.count("\n") < 250
    assert "&& HYPOTHESIS_PROFILE=ci python -m pytest\n" in text
    links = re.findall(r"\]\((docs/[^)#]+)", text)
    assert {"docs/tutorial.md", "docs/rules.md", "docs/api.md", "docs/cli.md"} <= set(links)
    assert all((ROOT / link).is_file() for link in links), links


def test_output_matching_rules() -> None:
    assert _matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert _matches(["a", "...", "b"], ["a", "b"])
    assert _matches(["x 1 ..."], ["x 1 and more"])
    assert not _matches(["x 1 ..."], ["x 2 and more"])
    assert not _matches(["a", "d"], ["a", "b", "d"])
    assert not _matches(["upper 20"], ["upper 21"])
    assert not _matches(["a"], ["a", "b"])
