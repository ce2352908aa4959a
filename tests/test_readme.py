"""The README's architecture table names exactly the modules in the tree."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _table() -> dict[str, set[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`cqsens/"):
            rows[cells[0].strip("`")] = set(re.findall(r"`([\w.]+\.py)`", cells[1]))
    return rows


def test_architecture_table_matches_the_tree() -> None:
    table = _table()
    packages = {f"{p.relative_to(ROOT).as_posix()}/" for p in (ROOT / "cqsens").rglob("*")
                if p.is_dir() and (p / "__init__.py").exists()} | {"cqsens/"}
    assert set(table) == packages
    for package, modules in table.items():
        here = {p.name for p in (ROOT / package).glob("*.py")}
        expected = here if package == "cqsens/" else here - {"__init__.py"}
        assert modules == expected, package
