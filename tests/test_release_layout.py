"""The layout of the release packages (issue #26): ``release/`` holds the mechanisms and
``releasing/`` the orchestration of ``cqsens release``; no module over 600 lines, no function
over 100 lines, and ``release/`` imports nothing above it, not even inside a function."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import cqsens
from tests.test_import_cycles import import_graph

PACKAGE = Path(cqsens.__file__).parent
MODULES = sorted([*PACKAGE.glob("release/*.py"), *PACKAGE.glob("releasing/*.py")])


def _functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node.name, (node.end_lineno or node.lineno) - node.lineno + 1)
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]


def test_the_layout_sees_every_module() -> None:
    names = {p.relative_to(PACKAGE).as_posix() for p in MODULES}
    assert {"release/noise.py", "release/ledger.py", "releasing/run.py"} <= names
    assert "release/execute.py" not in names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_modules_and_functions_are_small(path: Path) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 600
    assert [(name, n) for name, n in _functions(path) if n > 100] == []


def test_the_function_measure_counts_lines() -> None:
    source = PACKAGE / "releasing" / "run.py"
    lengths = dict(_functions(source))
    text = source.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(text) if line.startswith("def release("))
    end = next(i for i, line in enumerate(text) if line.startswith("def _release("))
    # the blank lines between the two definitions are not release()'s
    assert lengths["release"] == len("\n".join(text[start:end]).rstrip("\n").splitlines())


def test_release_imports_nothing_above_it() -> None:
    """Every import of ``release/``, functions included, stays below ``analysis``."""
    above = ("cqsens.analysis", "cqsens.report", "cqsens.releasing", "cqsens.pipeline",
             "cqsens.cli", "cqsens.compound", "cqsens.batch", "cqsens.logs")
    graph = import_graph()
    found = {m: sorted(e for e in edges if e.startswith(above))
             for m, edges in graph.items() if m.startswith("cqsens.release.")}
    assert found and {m: e for m, e in found.items() if e} == {}


@pytest.mark.parametrize("module, names", [
    ("cqsens.release.noise", ["DELTA_MIN", "EPSILON_MAX", "EPSILON_MIN", "MAX_FLOAT_SCALE",
                              "MAX_INTEGER_SCALE", "NoiseCalibration", "ReleaseError",
                              "calibrate", "check_privacy", "classical_gaussian_sigma",
                              "gaussian_halfwidth", "gaussian_sigma", "laplace_halfwidth",
                              "laplace_scale", "quantile_scale", "sample_gaussian",
                              "sample_laplace", "sample_quantile", "select_partitions",
                              "threshold_calibration", "threshold_tail", "zcdp_epsilon"]),
    ("cqsens.release.ledger", ["BudgetExceeded", "Change", "Charge", "Entry", "Ledger",
                               "LedgerMismatch", "Limits", "PrivacyModel", "Settings", "Spent",
                               "TamperedLedger", "agreed", "open_ledger", "precheck",
                               "query_hash", "read_ledger", "record", "set_budget", "spent",
                               "zcdp_dp_epsilon"]),
    ("cqsens.release.aggregates", ["NEIGHBORS", "AggregateBound", "count_bound",
                                   "histogram_bound", "sum_bound", "avg_bound",
                                   "min_max_bound", "median_bound", "grouped_range_bound",
                                   "vector_bound", "derived"]),
    ("cqsens.releasing", ["BrokenConstraint", "PartRelease", "Release", "ReleasedGroup",
                          "ReleasedValue", "UnboundedRelease", "release"]),
])
def test_the_public_names_stay_importable(module: str, names: list[str]) -> None:
    """The names each module exported before the split, still exported from it."""
    loaded = importlib.import_module(module)
    assert sorted(loaded.__all__) == sorted(names)
    assert all(getattr(loaded, name, None) is not None for name in names)
