"""Shared test set-up: hypothesis profiles, the PostgreSQL cluster, the examples' batch.

Hypothesis profiles: ``dev`` (default, deeper), ``ci`` (bounded, derandomized) and
``deep``.  Choose with ``HYPOTHESIS_PROFILE=ci`` (what ``.ci/run`` uses) or
``=deep`` for a long local run.  Every hypothesis test takes its example count
from the loaded profile: :func:`scaled_examples` or :func:`soundness_examples`.

Session fixtures (once per test run, or once per xdist worker that needs them):
``pg_server`` / ``pg_urls`` (one throwaway PostgreSQL cluster per test run, shared by
the xdist workers, tests/postgres.py)
and ``examples_batch`` (one batch analysis of every file under ``examples/`` per test
run, shared by the xdist workers through a file of the run's temporary folder).
"""

from __future__ import annotations

import fcntl
import json
import os
import pickle
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from cqsens.batch import BatchResult
from cqsens.release import noise
from tests import postgres

_COMMON = {"deadline": None,
           "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
#: The ci profile's example count: :func:`scaled_examples` is relative to it.
CI_EXAMPLES = 60
settings.register_profile("ci", max_examples=CI_EXAMPLES, derandomize=True, **_COMMON)
settings.register_profile("dev", max_examples=150, **_COMMON)
settings.register_profile("deep", max_examples=2000, **_COMMON)
settings.load_profile(os.getenv("HYPOTHESIS_PROFILE", "dev"))

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def soundness_examples() -> int:
    """Examples per brute-force soundness property: CI runs 1,600 random databases in
    tests/test_soundness.py (three properties at 400, two at 200), each checked against
    every single-row move (the dev profile: 300 each, deep: 3,000)."""
    return {"ci": 400, "dev": 300, "deep": 3000}.get(os.getenv("HYPOTHESIS_PROFILE", "dev"), 300)


def scaled_examples(ci: int) -> int:
    """A test's example count under the loaded profile.

    Parameters
    ----------
    ci : int
        The count under the ``ci`` profile (an expensive test runs fewer than
        the profile's default).

    Returns
    -------
    int
        ``ci`` scaled by the loaded profile's ``max_examples`` over ci's
        (dev: 2.5 times, deep: 33 times), at least 1.
    """
    return max(1, ci * settings.default.max_examples // CI_EXAMPLES)


@pytest.fixture
def noiseless(monkeypatch: pytest.MonkeyPatch) -> None:
    """Noise switched off inside the test: every sampler returns the true values (a release
    then gives the statement's own answer)."""
    def laplace(values: Sequence[float], **_: object) -> tuple[list[float], float]:
        return list(values), 1.0

    def gaussian(values: Sequence[float], **_: object) -> tuple[list[float], float, float]:
        return list(values), 1.0, 0.0

    monkeypatch.setattr(noise, "sample_laplace", laplace)
    monkeypatch.setattr(noise, "sample_gaussian", gaussian)


#: A RAM disk for the run's temporary files, where the machine has one (see pytest_configure).
RAM_DISK = Path("/dev/shm")


def pytest_configure(config: pytest.Config) -> None:
    """Temporary files (``tmp_path``, ``tempfile``, the PostgreSQL cluster) on the RAM disk
    ``/dev/shm`` when ``TMPDIR`` is not set: every SQLite commit a test makes (ledgers,
    databases, caches) waits for the disk otherwise (about 30 ms each on the shared test
    machine, 0.5 ms there).  Not on a RAM disk with less than 1 GiB free (a run writes
    about 100 MB there, the cluster's files included).  The xdist workers and child
    processes inherit ``TMPDIR``."""
    if "TMPDIR" in os.environ or not (RAM_DISK.is_dir() and os.access(RAM_DISK, os.W_OK)):
        return
    free = os.statvfs(RAM_DISK)
    if free.f_bavail * free.f_frsize < 2**30:  # a small one (a container's 64 MiB): the disk
        return
    folder = RAM_DISK / f"cqsens-tests-{os.geteuid()}"
    folder.mkdir(mode=0o755, exist_ok=True)
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again


#: Files of the one PostgreSQL cluster in the run's temporary folder, shared by the workers.
_PG_CLUSTER, _PG_HOSPITAL = "pg_cluster.json", "pg_hospital.json"


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[postgres.PgServer]:
    """The one PostgreSQL cluster of this test run (skips or fails as tests/postgres.py
    says): under xdist the first worker that needs it starts it and writes where it
    listens into the run's temporary folder (under a file lock), the others connect to
    it, and the controller stops it when the run ends (:func:`pytest_sessionfinish`)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:  # one process (-n 0)
        yield from postgres.cluster()
        return
    shared = tmp_path_factory.getbasetemp().parent
    with _locked(shared / "pg.lock"):
        found = shared / _PG_CLUSTER
        if not found.exists():
            found.write_text(postgres.start().to_json())
        server = postgres.Running.from_json(found.read_text()).server
    yield server


@pytest.fixture(scope="session")
def pg_urls(pg_server: postgres.PgServer,
            tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """URLs of the databases ``hospital`` and ``hospital_bad`` on ``pg_server`` (created
    once per cluster)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return postgres.hospital_databases(pg_server)
    shared = tmp_path_factory.getbasetemp().parent
    with _locked(shared / "pg.lock"):
        found = shared / _PG_HOSPITAL
        if not found.exists():
            found.write_text(json.dumps(postgres.hospital_databases(pg_server)))
        clean, bad = json.loads(found.read_text())
        return clean, bad


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The xdist controller stops the cluster its workers shared (``pg_server``)."""
    if hasattr(session.config, "workerinput") or "PYTEST_XDIST_WORKER" in os.environ:
        return
    factory = getattr(session.config, "_tmp_path_factory", None)  # as pytest-xdist reads it
    if factory is None:
        return
    found = factory.getbasetemp() / _PG_CLUSTER
    if found.exists():
        postgres.stop(postgres.Running.from_json(found.read_text()))
        found.unlink()


#: The options of the one batch analysis of ``examples/`` (see ``examples_batch``): a witness
#: budget of 0.1 s of work (cqsens.budget.work_units; the default 0.5 s costs 9 CPU s more
#: here and proves lower bounds for the same 53 files; its tests check the report, not the
#: witnesses), so the same with one worker or two, on a busy machine as on an idle one; a
#: generous time limit per query.
EXAMPLES_BATCH_OPTIONS: dict[str, float] = {"timeout": 60, "witness_time": 0.1}


@pytest.fixture(scope="session")
def examples_batch(tmp_path_factory: pytest.TempPathFactory) -> BatchResult:
    """Every file under ``examples/`` analysed once per test run (two worker processes),
    shared by the tests that check whole-folder reports: under xdist the first worker that
    needs it analyses and pickles it into the run's temporary folder (under a file lock),
    the others read that file."""
    if "PYTEST_XDIST_WORKER" not in os.environ:  # one process (-n 0): nothing to share
        return _analyse_examples()
    shared = tmp_path_factory.getbasetemp().parent  # this run's folder, common to its workers
    with _locked(shared / "examples_batch.lock"):
        cached = shared / "examples_batch.pickle"
        if cached.exists():
            result: BatchResult = pickle.loads(cached.read_bytes())
            return result
        result = _analyse_examples()
        cached.write_bytes(pickle.dumps(result))
        return result


def _analyse_examples() -> BatchResult:
    from cqsens.batch import analyze_paths

    with work_only():
        return analyze_paths([EXAMPLES], jobs=2, **EXAMPLES_BATCH_OPTIONS)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created) for the block: one xdist worker at a time."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def work_only() -> Iterator[None]:
    """Witness searches ended by their work budget alone: the clock's safety stop moved
    far out (a loaded test machine may run many times slower than a typical core), so
    that two runs compare equal; the per-query timeout still holds."""
    import cqsens.budget

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cqsens.budget, "HARD_STOP", 100)
        patch.setattr(cqsens.budget, "HARD_STOP_MARGIN", 50.0)
        yield


#: Fixture → marker: a test that uses the fixture gets the marker (``-m "not db"``).
_FIXTURE_MARKS = {"pg_server": "db", "chromium": "browser"}

#: Seconds (wall, one process, ci profile, its subprocesses included) of the costliest test
#: files, measured with ``--durations=0``: the xdist workers take the files in this order,
#: costliest first, then the others in collection order (``--no-loadscope-reorder`` in
#: pyproject.toml; xdist alone orders files by their number of tests, which leaves the few
#: long tests of small files to the end, one worker running them while the other waits).
#: Out-of-date figures cost only balance.
COSTLIEST_FILES = {
    "tests/test_fuzz.py": 19, "tests/test_batch.py": 19, "tests/test_aggregates.py": 17,
    "tests/test_person_oracle.py": 14, "tests/test_outer_joins.py": 14,
    "tests/test_soundness.py": 13, "tests/test_witness_history.py": 13,
    "tests/test_hostile.py": 13, "tests/test_ordered_self_join.py": 13,
    "tests/test_report_html.py": 13, "tests/test_release_cmd.py": 12,
    "tests/test_released_subqueries.py": 12, "tests/test_advice_works.py": 11,
    "tests/test_release_numerics.py": 11, "tests/test_nested_plans.py": 10,
    "tests/test_profile_checks.py": 10, "tests/test_two_stage.py": 9,
    "tests/test_readme_truth.py": 9, "tests/test_semijoin_flips.py": 9,
    "tests/test_released_views.py": 8, "tests/test_dask_example.py": 8, "tests/test_cli.py": 8,
    "tests/test_limits.py": 7, "tests/test_scalar_parts.py": 7, "tests/test_cache.py": 7,
    "tests/test_init.py": 7, "tests/test_person_witness_tpch.py": 7,
    "tests/test_noiseless.py": 7, "tests/test_tightness.py": 6, "tests/test_workload.py": 6,
    "tests/test_filter_clause.py": 5, "tests/test_speed_equivalence.py": 5,
    "tests/test_check_domains.py": 5, "tests/test_person_witness_brute.py": 5,
    "tests/test_outer_join_bounds.py": 5, "tests/test_stars.py": 4,
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The costliest files first (:data:`COSTLIEST_FILES`; a stable sort keeps each file's
    tests together and in order); mark the tests that use the PostgreSQL cluster or
    Chromium."""
    items.sort(key=lambda item: -COSTLIEST_FILES.get(item.nodeid.split("::")[0], 0))
    for item in items:
        names = getattr(item, "fixturenames", ())
        for fixture, marker in _FIXTURE_MARKS.items():
            if fixture in names:
                item.add_marker(marker)
