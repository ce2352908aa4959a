"""The architecture tables name exactly the packages and modules in the tree.

docs/architecture.md lists every module of every package; README.md's short table
lists every package, one line each.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _section(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    marker = "## Architecture" if path.name == "README.md" else "# Architecture"
    return text.split(marker, 1)[1].split("\n## ", 1)[0]


def _rows(path: Path, cells_per_row: int) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in _section(path).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == cells_per_row and cells[0].startswith("`cqsens/"):
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def _packages() -> set[str]:
    return {f"{p.relative_to(ROOT).as_posix()}/" for p in (ROOT / "cqsens").rglob("*")
            if p.is_dir() and (p / "__init__.py").exists()} | {"cqsens/"}


def test_architecture_page_matches_the_tree() -> None:
    table = {package: set(re.findall(r"`([\w.]+\.py)`", cells[0]))
             for package, cells in _rows(ROOT / "docs" / "architecture.md", 3).items()}
    assert set(table) == _packages()
    for package, modules in table.items():
        here = {p.name for p in (ROOT / package).glob("*.py")}
        expected = here if package == "cqsens/" else here - {"__init__.py"}
        assert modules == expected, package


def test_readme_names_every_package_once() -> None:
    rows = _rows(ROOT / "README.md", 2)
    assert set(rows) == _packages()
    assert all(cells[0] for cells in rows.values())
