"""One Settings value: the same setting from cqsens.toml, the command line and analyze()'s
keywords; the options every command shares, declared once; the Neighbourhood value."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import cqsens
import cqsens.pipeline as pipeline
from cqsens.cli import cli
from cqsens.cli.config import config_option, uses_config
from cqsens.cli.options import (
    dependency_options,
    no_lower_option,
    release_options,
    schema_options,
    timeout_option,
    witness_time_option,
)
from cqsens.engine.neighbourhood import Neighbourhood
from cqsens.errors import InputError
from cqsens.prepare import references
from cqsens.settings import Settings, load_toml

ROOT = Path(__file__).resolve().parents[1]
HOSPITAL = ROOT / "examples" / "hospital"
SHOP = ROOT / "examples" / "shop"

#: Every command's options before the options were declared once (``cqsens CMD --help``
#: of the commit before, listed by click): no command may lose one.  ``--ownerless`` was
#: added later, to the commands that take ``--unit`` with the dependencies.
BEFORE: dict[str, list[str]] = {
    "analyze": ["--bounds", "--cd", "--config", "--constraints", "--contributions", "--cq",
                "--db", "--delta", "--dialect", "--epsilon", "--fd", "--format", "--neighbor",
                "--no-lower", "--owner", "--ownerless", "--public", "--query-column", "--rows", "--schema",
                "--sql", "--timeout", "--unit", "--witness", "--witness-time"],
    "budget": ["--budget", "--config", "--delta-budget", "--format", "--ledger", "--set"],
    "init": ["--db", "--force", "--output", "--owner", "--unit", "-o"],
    "noiseless": ["--categories", "--delta", "--epsilon", "--format", "--lambda", "--n", "--p"],
    "profile": ["--cd", "--config", "--constraints", "--db", "--dialect", "--fd", "--force",
                "--format", "--output", "--owner", "--samples", "--schema", "--strict", "--unit",
                "-o"],
    "release": ["--bounds", "--budget", "--cd", "--config", "--constraints", "--contributions",
                "--db", "--delta", "--delta-budget", "--dialect", "--epsilon", "--epsilon-part",
                "--fd", "--format", "--keys", "--ledger", "--mechanism", "--neighbor",
                "--owner", "--ownerless", "--public", "--rows", "--schema", "--sql", "--timeout", "--unit"],
    "report": ["--bounds", "--cache", "--cd", "--config", "--constraints", "--contributions",
               "--db", "--delta", "--dialect", "--epsilon", "--fd", "--force", "--format",
               "--jobs", "--neighbor", "--no-cache", "--no-lower", "--output", "--owner", "--ownerless",
               "--public", "--query-column", "--rows", "--schema", "--strict", "--timeout",
               "--total-timeout", "--unit", "-o"],
    "witness": ["--bounds", "--cd", "--config", "--constraints", "--contributions", "--cq",
                "--db", "--delta", "--dialect", "--epsilon", "--fd", "--force", "--format",
                "--neighbor", "--output", "--owner", "--ownerless", "--public", "--rows", "--schema", "--sql",
                "--timeout", "--unit", "--witness-time", "-o"],
}


def _flags(command: click.Command) -> list[str]:
    return sorted(f for p in command.params if isinstance(p, click.Option)
                  for f in (*p.opts, *p.secondary_opts))


def test_every_command_keeps_every_option() -> None:
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(BEFORE)
    for name in BEFORE:
        command = cli.get_command(ctx, name)
        assert command is not None and _flags(command) == BEFORE[name], name


def test_an_option_of_several_commands_is_declared_only_in_options_py() -> None:
    """No command module spells out a shared option itself (noiseless's --epsilon and
    --delta are not privacy settings of a release: they ask for δ at ε or ε at δ)."""
    shared = {f for f in {f for flags in BEFORE.values() for f in flags}
              if sum(f in flags for flags in BEFORE.values()) > 1}
    for module in sorted((ROOT / "cqsens" / "cli").glob("*.py")):
        if module.name == "options.py":
            continue
        declared = set(re.findall(r'click\.option\(\s*"(-[-\w]+)"', module.read_text()))
        allowed = {"--epsilon", "--delta"} if module.name == "noiseless.py" else set()
        assert declared & shared <= allowed, module.name


def test_help_texts_stay_informative() -> None:
    runner = CliRunner()
    for command, words in [("analyze", ["--bounds 'T.col=low:high'", "Privacy unit",
                                        "Skip the witness search"]),
                           ("release", ["reflected from --db when absent", "Rows one person may own"]),
                           ("profile", ["Functional dependency to check", "default: proposed"])]:
        text = " ".join(runner.invoke(cli, [command, "--help"]).output.split())
        for word in words:
            assert word in text, (command, word)


# -- the same settings from the three sources ---------------------------------------------

_CAPTURED: list[Settings] = []


@click.command()
@config_option
@schema_options
@dependency_options
@release_options
@no_lower_option("Skip the witness search.")
@witness_time_option(0.5)
@timeout_option(30.0, "Seconds")
@uses_config(lambda kw: None)
def _probe(db_url: str | None, settings: Settings) -> None:
    """A command with the shared options of analyze, recording the settings it gets."""
    del db_url
    _CAPTURED.append(settings)


def _from_command(args: list[str]) -> Settings:
    _CAPTURED.clear()
    result = CliRunner().invoke(_probe, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(_CAPTURED) == 1
    return _CAPTURED[0]


def _from_keywords(keywords: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The Settings that ``cqsens.analyze(**keywords)`` builds and analyses with."""
    seen: list[Settings] = []

    def capture(source: object, settings: Settings, *, kind: object, name: object,
                **_: object) -> Any:
        seen.append(settings)
        raise _Stop

    monkeypatch.setattr(pipeline, "route", capture)  # the first step after the settings
    with pytest.raises(_Stop):
        cqsens.analyze("Q(x) :- R(x)", **keywords)
    return seen[0]


class _Stop(Exception):
    pass


#: (setting, its value, the TOML text, the command-line arguments, the analyze() keyword)
_Case = tuple[str, object, str, list[str], object]
_CASES: dict[str, Callable[[Path], _Case]] = {
    "fds": lambda d: ("fds", ("R[1->2]", "S[a->b]"), 'fd = ["R[1->2]", "S[a->b]"]',
                      ["--fd", "R[1->2]", "--fd", "S[a->b]"], ["R[1->2]", "S[a->b]"]),
    "cds": lambda d: ("cds", ("R[1->2]<=3",), 'cd = ["R[1->2]<=3"]', ["--cd", "R[1->2]<=3"],
                      ["R[1->2]<=3"]),
    "bounds": lambda d: ("bounds", ("Pat.age=0:120",), 'bounds = ["Pat.age=0:120"]',
                         ["--bounds", "Pat.age=0:120"], ["Pat.age=0:120"]),
    "public": lambda d: ("public", ("Hos", "Doc"), 'public = ["Hos", "Doc"]',
                         ["--public", "Hos", "--public", "Doc"], ["Hos", "Doc"]),
    "unit": lambda d: ("unit", "users.id", 'unit = "users.id"', ["--unit", "users.id"],
                       "users.id"),
    "owner": lambda d: ("owner", ("orders.uid",), 'owner = ["orders.uid"]',
                        ["--owner", "orders.uid"], ["orders.uid"]),
    "neighbor": lambda d: ("neighbor", "substitute", 'neighbor = "substitute"',
                           ["--neighbor", "substitute"], "substitute"),
    "contributions": lambda d: ("contributions", 4, "contributions = 4",
                                ["--contributions", "4"], 4),
    "rows": lambda d: ("rows", 11, "rows = 11", ["--rows", "11"], 11),
    "epsilon": lambda d: ("epsilon", 0.25, "epsilon = 0.25", ["--epsilon", "0.25"], 0.25),
    "delta": lambda d: ("delta", 1e-6, "delta = 1e-6", ["--delta", "1e-6"], 1e-6),
    "dialect": lambda d: ("dialect", "postgres", 'dialect = "postgres"',
                          ["--dialect", "postgres"], "postgres"),
    "witness_time": lambda d: ("witness_time", 2.5, "witness_time = 2.5",
                               ["--witness-time", "2.5"], 2.5),
    "timeout": lambda d: ("timeout", 7.0, "timeout = 7.0", ["--timeout", "7"], 7.0),
    "schema": lambda d: ("schema", str(d / "s.sql"), f'schema = {json.dumps(str(d / "s.sql"))}',
                         ["--schema", str(d / "s.sql")], str(d / "s.sql")),
    "constraints": lambda d: ("constraints", str(d / "c.txt"),
                              f'constraints = {json.dumps(str(d / "c.txt"))}',
                              ["--constraints", str(d / "c.txt")], str(d / "c.txt")),
}


@given(st.sets(st.sampled_from(sorted(_CASES)), min_size=1))
def test_toml_command_line_and_keywords_give_the_same_settings(chosen: set[str]) -> None:
    if "owner" in chosen:  # analyze() refuses an owner without a unit
        chosen.add("unit")
    if "unit" in chosen:  # and contributions > 1 with a unit
        chosen.discard("contributions")
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        d = Path(folder)
        cases = [_CASES[name](d) for name in sorted(chosen)]
        toml = d / "cqsens.toml"
        toml.write_text("\n".join(c[2] for c in cases) + "\n")
        expected = {c[0]: c[1] for c in cases}
        from_file = Settings.from_toml(toml)
        from_line = _from_command([a for c in cases for a in c[3]])
        from_file_via_command = _from_command(["--config", str(toml)])
        from_keywords = _from_keywords({c[0]: c[4] for c in cases}, patch)
        for settings in (from_file, from_line, from_file_via_command, from_keywords):
            assert {name: getattr(settings, name) for name in expected} == expected
        # the rest stays at the defaults (the command's own defaults for the command)
        assert from_file == Settings.from_mapping(expected)
        assert from_line == from_file_via_command
        assert from_keywords == Settings.from_mapping({**expected, "timeout":
                                                       expected.get("timeout", 30.0)})


def test_the_command_line_wins_over_the_file(tmp_path: Path) -> None:
    toml = tmp_path / "cqsens.toml"
    toml.write_text('cd = ["R[1->2]<=3"]\nepsilon = 1.0\nneighbor = "substitute"\n')
    got = _from_command(["--config", str(toml), "--cd", "R[1->2]<=5", "--neighbor",
                         "add-remove"])
    # given on the command line (even at its default value): the command line's
    assert got.cds == ("R[1->2]<=5",) and got.neighbor == "add-remove"
    assert got.epsilon == 1.0  # left out on the command line: the file's


def test_unknown_and_bad_toml_keys_name_file_and_line(tmp_path: Path) -> None:
    toml = tmp_path / "cqsens.toml"
    toml.write_text('epsilon = 1.0\n\nvalue_bound = ["Pat.age=0:1"]\n')
    with pytest.raises(InputError) as info:
        Settings.from_toml(toml)
    assert str(info.value).startswith(f"{toml}:3:") and info.value.construct == "value_bound"
    result = CliRunner().invoke(cli, ["analyze", "--cq", "Q(x) :- R(x)", "--config", str(toml)])
    assert result.exit_code == 1 and f"{toml}:3:" in result.output
    toml.write_text('fd = ["R[1->2]"]\nfds = ["S[1->2]"]\n')
    with pytest.raises(InputError, match="repeats setting fds") as repeated:
        load_toml(toml)
    assert repeated.value.line == 2
    toml.write_text('neighbor = "neighbour"\n')
    with pytest.raises(InputError, match="add-remove, substitute"):
        load_toml(toml)
    toml.write_text('epsilon = 1.0\ncontributions = 0\n')
    with pytest.raises(InputError, match="at least 1") as low:
        load_toml(toml)
    assert low.value.line == 2 and low.value.construct == "contributions"


def test_the_canonical_names_and_the_aliases_read_alike(tmp_path: Path) -> None:
    one, two = tmp_path / "a.toml", tmp_path / "b.toml"
    one.write_text('fd = ["R[1->2]"]\ncd = ["R[2->1]<=2"]\n')
    two.write_text('fds = ["R[1->2]"]\ncds = ["R[2->1]<=2"]\n')
    assert Settings.from_toml(one) == Settings.from_toml(two) == Settings(
        fds=("R[1->2]",), cds=("R[2->1]<=2",))
    with pytest.raises(TypeError, match="unknown setting 'neighbour'"):
        Settings.from_mapping({"neighbour": "substitute"})


def test_the_defaults_are_safe() -> None:
    s = Settings()
    assert (s.public, s.fds, s.cds, s.constraints, s.bounds, s.unit) == ((), (), (), None, (),
                                                                         None)
    assert (s.neighbor, s.contributions, s.prove_lower) == ("add-remove", 1, True)


# -- the same numbers by keyword and by Settings --------------------------------------------

def test_analyze_keywords_and_settings_give_the_same_analysis() -> None:
    sql = ("SELECT SUM(p.age) FROM Pat p, PatDoc pd WHERE p.id = pd.pat "
           "AND p.sex = 'F'")
    keywords: dict[str, Any] = {
        "schema": HOSPITAL / "schema.sql", "cds": ["PatDoc[pat->doc]<=3"],
        "bounds": ["Pat.age=0:120"], "neighbor": "substitute", "witness_time": 0.2}
    by_keyword = cqsens.analyze(sql, **keywords)
    by_settings = pipeline.analyze_with(sql, Settings.from_mapping(keywords))
    assert by_keyword.upper == by_settings.upper and by_keyword.lower == by_settings.lower
    assert by_keyword.to_dict()["aggregates"] == by_settings.to_dict()["aggregates"]
    # the upper bound is met by a witness (two databases SQLite evaluates)
    assert by_keyword.lower == by_keyword.upper and by_keyword.witness is not None


# -- the neighbourhood ----------------------------------------------------------------------

def test_the_neighbourhood_keeps_foreign_keys_only_for_one_added_row() -> None:
    schema = cqsens.schema_from_ddl((SHOP / "schema.sql").read_text())
    refs = references(schema)
    assert refs  # the shop's orders reference its users
    assert Neighbourhood(references=refs).kept_references == refs
    assert Neighbourhood("substitute", references=refs).kept_references == ()
    assert Neighbourhood(contributions=2, references=refs).kept_references == ()
    row = Neighbourhood()
    assert (row.per_person, row.add_remove, row.who) == (False, True, "tuple")


def test_a_unit_makes_the_neighbourhood_one_person() -> None:
    query = "SELECT COUNT(*) FROM orders"
    person = cqsens.analyze(query, schema=SHOP / "schema.sql", unit="users",
                            witness_time=0.2)
    row = cqsens.analyze(query, schema=SHOP / "schema.sql", witness_time=0.2)
    assert row.upper == 1 and row.lower == 1 and row.unit is None
    # a witness proves that one user (with their orders) changes the count by more than 1
    assert person.unit is not None and person.lower is not None and person.lower > row.upper
    assert person.witness is not None
