"""The metadata file: cqsens.toml next to the queries, --config, command-line options first."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqsens.cli import cli
from cqsens.config import load_config
from cqsens.errors import InputError

HOSPITAL = Path(__file__).resolve().parents[1] / "examples" / "hospital"


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    for name in ("schema.sql", "oncology.sql", "data.sql"):
        shutil.copy(HOSPITAL / name, tmp_path / name)
    (tmp_path / "cqsens.toml").write_text(
        'schema = "schema.sql"\ncd = ["PatDoc[pat->doc]<=3"]\nepsilon = 1.0\npublic = ["Hos"]\n')
    return tmp_path


def _json(args: list[str]) -> dict[str, object]:
    result = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


def test_the_file_next_to_the_query_is_read(folder: Path) -> None:
    d = _json(["analyze", str(folder / "oncology.sql")])
    assert d["sensitivity"]["upper"] == 3 and d["noise"]["epsilon"] == 1.0  # type: ignore[index]


def test_command_line_options_win(folder: Path) -> None:
    d = _json(["analyze", str(folder / "oncology.sql"), "--cd", "PatDoc[pat->doc]<=5"])
    assert d["sensitivity"]["upper"] == 5  # type: ignore[index]


def test_explicit_config_and_report(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    other = tmp_path_factory.mktemp("elsewhere")
    shutil.copy(folder / "oncology.sql", other / "q.sql")
    d = _json(["analyze", str(other / "q.sql"), "--config", str(folder / "cqsens.toml")])
    assert d["sensitivity"]["upper"] == 3  # type: ignore[index]
    out = folder / "r.json"
    result = CliRunner().invoke(cli, ["report", str(folder), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())["rows"]
    assert [r["analysis"]["sensitivity"]["upper"] for r in rows if r["status"] == "ok"] == [3]


def test_witness_reads_it(folder: Path) -> None:
    result = CliRunner().invoke(cli, ["witness", str(folder / "oncology.sql"), "-o",
                                      str(folder / "w.sql")])
    assert result.exit_code == 0, result.output
    assert "upper bound 3, lower bound 3 (tight)" in result.output


@pytest.mark.parametrize(("text", "line", "construct"), [
    ('schema = "s.sql"\nneighbour = "add-remove"\n', 2, "neighbour"),
    ('epsilon = "one"\n', 1, "epsilon"),
    ('cd = [1, 2]\n', 1, "cd"),
    ('schema = \n', 1, "TOML"),
])
def test_bad_files_name_file_and_line(tmp_path: Path, text: str, line: int,
                                      construct: str) -> None:
    path = tmp_path / "cqsens.toml"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_config(path)
    assert info.value.line == line and info.value.construct == construct
    assert str(info.value).startswith(f"{path}:{line}:")
