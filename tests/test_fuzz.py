"""Fuzzing the CLI and the Python API with mutated valid inputs (issue 18, item 7).

Every run must exit 0, 1 or 2, print no traceback, let no exception escape,
finish within the hang limit, and, on exit 0 with JSON output, give bounds that
are numbers >= 0, "inf" or null.  Each test bounds its own number of examples
so that the whole file runs in about a minute under ``HYPOTHESIS_PROFILE=ci``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cqsens
from cqsens.errors import CqsensError
from cqsens.report.text import to_json
from tests.fuzz_helpers import (
    EXAMPLES,
    build_sqlite,
    check_json,
    check_run,
    run_cli,
)
from tests.fuzz_strategies import (
    HOSPITAL_DEPENDENCIES,
    constraints_texts,
    cq_texts,
    ddl_texts,
    dependency_texts,
    option_values,
    sql_texts,
)

HOSPITAL = EXAMPLES / "hospital"
SCHEMA = str(HOSPITAL / "schema.sql")


#: Examples per test are multiplied by this (the ci profile runs the numbers as written).
SCALE = {"deep": 10}.get(os.getenv("HYPOTHESIS_PROFILE", "dev"), 1)


def fuzz(examples: int) -> settings:
    """Per-test settings: a fixed number of examples; tmp_path is shared by all of them."""
    return settings(max_examples=examples * SCALE, suppress_health_check=[
        HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large,
        HealthCheck.filter_too_much])


def fresh_dir(tmp_path: Path) -> Path:
    """A new folder under tmp_path for one example."""
    return Path(tempfile.mkdtemp(dir=tmp_path))


def _write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return str(path)


_LOWER = st.sampled_from((["--no-lower"], ["--no-lower"], ["--witness-time", "0.05"]))


@fuzz(250)
@given(text=cq_texts(), deps=st.lists(dependency_texts(), max_size=2), lower=_LOWER)
def test_analyze_cq_text(text: str, deps: list[str], lower: list[str]) -> None:
    args = ["analyze", "--cq", text, "--format", "json", *lower]
    for d in deps:
        args += ["--cd" if "<=" in d else "--fd", d]
    check_run(run_cli(args), json_out=True)


@pytest.mark.slow
@fuzz(200)
@given(case=sql_texts(), lower=_LOWER)
def test_analyze_sql_text(case: tuple[str, str], lower: list[str], tmp_path: Path) -> None:
    sql, ddl = case
    folder = fresh_dir(tmp_path)
    args = ["analyze", "--sql", sql, "--format", "json", *lower]
    if ddl:
        args += ["--schema", _write(folder, "schema.sql", ddl)]
    check_run(run_cli(args), json_out=True)


@fuzz(150)
@given(cq=cq_texts(), sql=sql_texts())
def test_analyze_files(cq: str, sql: tuple[str, str], tmp_path: Path) -> None:
    folder = fresh_dir(tmp_path)
    args = ["analyze", _write(folder, "q.cq", cq), _write(folder, "q.sql", sql[0]),
            "--format", "json", "--no-lower"]
    if sql[1]:
        args += ["--schema", _write(folder, "schema.sql", sql[1])]
    check_run(run_cli(args), json_out=True)


@fuzz(150)
@given(ddl=ddl_texts(), query=st.sampled_from((
    "SELECT COUNT(*) FROM Pat", "SELECT SUM(age) FROM Pat GROUP BY sex",
    "SELECT COUNT(*) FROM Pat, PatDoc WHERE Pat.id = PatDoc.pat")))
def test_analyze_mutated_ddl(ddl: str, query: str, tmp_path: Path) -> None:
    folder = fresh_dir(tmp_path)
    args = ["analyze", "--sql", query, "--schema", _write(folder, "schema.sql", ddl),
            "--format", "json", "--no-lower", "--bounds", "Pat.age=0:120"]
    check_run(run_cli(args), json_out=True)


@fuzz(150)
@given(constraints=constraints_texts(), deps=st.lists(dependency_texts(), max_size=3))
def test_analyze_mutated_dependencies(constraints: str, deps: list[str], tmp_path: Path) -> None:
    folder = fresh_dir(tmp_path)
    args = ["analyze", str(HOSPITAL / "oncology.sql"), "--schema", SCHEMA, "--format", "json",
            "--no-lower", "--constraints", _write(folder, "constraints.txt", constraints)]
    for d in deps:
        args += ["--cd" if "<=" in d else "--fd", d]
    check_run(run_cli(args), json_out=True)


@fuzz(200)
@given(options=option_values(), query=st.sampled_from((
    "SELECT SUM(age) FROM Pat GROUP BY sex", "SELECT COUNT(*) FROM Pat WHERE age < 30",
    "SELECT AVG(age) FROM Pat", "SELECT COUNT(DISTINCT hos) FROM Pat")))
def test_analyze_mutated_options(options: list[tuple[str, str]], query: str) -> None:
    args = ["analyze", "--sql", query, "--schema", SCHEMA, "--format", "json", "--no-lower"]
    for name, value in options:
        args += [name, value]
    check_run(run_cli(args), json_out=True)


@fuzz(120)
@given(text=cq_texts(), suffix=st.sampled_from((".sql", ".db")),
       deps=st.lists(dependency_texts(), max_size=2),
       options=option_values(("--witness-time", "--dialect", "--neighbor", "--timeout")))
def test_witness(text: str, suffix: str, deps: list[str], options: list[tuple[str, str]],
                 tmp_path: Path) -> None:
    folder = fresh_dir(tmp_path)
    args = ["witness", "--cq", text, "-o", str(folder / f"w{suffix}")]
    if not any(name == "--witness-time" for name, _ in options):
        args += ["--witness-time", "0.05"]
    for d in deps:
        args += ["--cd" if "<=" in d else "--fd", d]
    for name, value in options:
        args += [name, value]
    check_run(run_cli(args))


@fuzz(60)
@given(cq=cq_texts(), sql=sql_texts(), constraints=constraints_texts(),
       fmt=st.sampled_from(("json", "md", "html")),
       options=option_values(("--epsilon", "--delta", "--bounds", "--timeout", "--dialect")))
def test_report(cq: str, sql: tuple[str, str], constraints: str, fmt: str,
                options: list[tuple[str, str]], tmp_path: Path) -> None:
    folder = fresh_dir(tmp_path)
    inputs = folder / "queries"
    inputs.mkdir()
    _write(inputs, "a.cq", cq)
    _write(inputs, "b.sql", sql[0])
    _write(inputs, "schema.sql", sql[1])
    _write(inputs, "constraints.txt", constraints)
    out = folder / f"report.{fmt}"
    args = ["report", str(inputs), "-o", str(out), "--no-lower"]
    for name, value in options:
        args += [name, value]
    run = run_cli(args)
    check_run(run)
    if run.code == 0 and fmt == "json":
        check_json(out.read_text(encoding="utf-8"), str(out))


@pytest.fixture(scope="module")
def hospital_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """sqlite:/// URL of the hospital example database (schema.sql + data.sql)."""
    return build_sqlite(tmp_path_factory.mktemp("db") / "hospital.db")


@fuzz(100)
@given(constraints=constraints_texts("hospital"),
       deps=st.lists(dependency_texts(HOSPITAL_DEPENDENCIES), max_size=2),
       ddl=st.one_of(st.none(), ddl_texts("hospital")), fmt=st.sampled_from(("json", "text")))
def test_profile(constraints: str, deps: list[str], ddl: str | None, fmt: str,
                 hospital_db: str, tmp_path: Path) -> None:
    folder = fresh_dir(tmp_path)
    args = ["profile", "--db", hospital_db, "--format", fmt,
            "--constraints", _write(folder, "constraints.txt", constraints),
            "-o", str(folder / "observed.txt")]
    if ddl is not None:
        args += ["--schema", _write(folder, "schema.sql", ddl)]
    for d in deps:
        args += ["--cd" if "<=" in d else "--fd", d]
    run = run_cli(args)
    check_run(run)
    if run.code == 0 and fmt == "json":
        check_json(run.out, "stdout")


@pytest.mark.slow
@fuzz(250)
@given(query=st.one_of(cq_texts().map(lambda t: ("cq", t, None)),
                       sql_texts().map(lambda c: ("sql", c[0], c[1] or None))),
       deps=st.lists(dependency_texts(), max_size=2),
       neighbor=st.sampled_from(("add-remove", "substitute")))
def test_python_api(query: tuple[str, str, str | None], deps: list[str], neighbor: str) -> None:
    """cqsens.analyze either returns well-formed bounds or raises a CqsensError."""
    kind, text, ddl = query
    try:
        result = cqsens.analyze(text, kind=kind, schema=ddl, neighbor=neighbor,
                                fds=[d for d in deps if "<=" not in d],
                                cds=[d for d in deps if "<=" in d],
                                prove_lower=False, timeout=5.0)
    except CqsensError:
        return
    check_json(to_json([result]), "cqsens.analyze(...) as JSON")
