"""The one runner of ``cqsens report`` (cqsens/runner.py) and its typed rows (cqsens/rows.py)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cqsens.batch import analyze_paths
from cqsens.errors import InputError, TimeLimitError
from cqsens.logs import Record, ShapeCache, analyse_log
from cqsens.rows import LogPart, Row
from cqsens.runner import Clock, Ordered, executor, failure, limited

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "examples/hospital/schema.sql")


def _sleep_then(task: tuple[int, float]) -> int:
    """A task that finishes after its own delay: later inputs may finish first."""
    index, seconds = task
    time.sleep(seconds)
    return index


def _streamed(delays: list[float], jobs: int, window: int) -> tuple[list[int], int]:
    """The results of ``delays`` through :class:`Ordered`, and the most slots ever open."""
    stream: Ordered[int] = Ordered(executor(jobs), window)
    out: list[int] = []
    most = 0
    try:
        for task in enumerate(delays):
            stream.submit(stream.add(task), stream.fill, _sleep_then, task)
            most = max(most, len(stream.order))
            out.extend(stream.throttle())
        out.extend(stream.drain())
    finally:
        stream.close()
    return out, most


def test_results_stream_in_input_order_from_workers() -> None:
    delays = [0.3, 0.0, 0.2, 0.0, 0.1, 0.0, 0.25, 0.0]  # each slow task is passed by a fast one
    out, most = _streamed(delays, jobs=2, window=3)
    assert out == list(range(len(delays)))
    assert most <= 3  # the window bounds what is in flight


@given(st.lists(st.integers(min_value=0, max_value=3), max_size=12), st.integers(1, 5))
def test_inline_streaming_keeps_order_and_window(delays: list[int], window: int) -> None:
    out, most = _streamed([d / 1000 for d in delays], jobs=1, window=window)
    assert out == list(range(len(delays)))
    assert most <= max(window, 1)


def test_the_alarm_stops_a_run_that_ignores_its_deadline() -> None:
    start = time.monotonic()
    with pytest.raises(TimeLimitError):
        limited(lambda: time.sleep(5), 0.2)
    assert time.monotonic() - start < 2
    assert limited(lambda: 7, 0.2) == 7  # in time: the value, and no alarm left behind
    time.sleep(0.3)


def test_an_alarm_turned_into_another_error_is_still_a_time_limit() -> None:
    # SQLite turns an exception raised in its callbacks (the alarm's) into an OperationalError
    import sqlite3

    def slow_callback() -> None:
        conn = sqlite3.connect(":memory:")
        conn.create_function("nap", 0, lambda: time.sleep(5))
        conn.execute("SELECT nap()")

    start = time.monotonic()
    with pytest.raises(TimeLimitError):
        limited(slow_callback, 0.2)
    assert time.monotonic() - start < 2
    with pytest.raises(KeyError):  # without the alarm, the run's own error
        limited(lambda: {}["k"], 0.2)


def test_failures_become_statuses_and_messages() -> None:
    assert failure(TimeLimitError("analysis", 3.0), "q.sql", 3.0) == \
        ("timeout", "q.sql: timed out after 3 s")
    assert failure(TimeLimitError("analysis", 1.0), "q.sql", None)[1].endswith("its limit")
    assert failure(InputError("bad\n  thing", construct="x"), "q.sql", 1.0)[0] == "error"
    assert failure(RecursionError(), "q.sql", 1.0)[1] == \
        "q.sql: the query is too deeply nested to analyse"
    assert "internal error (KeyError" in failure(KeyError("k"), "q.sql", 1.0)[1]


def test_the_clock_gives_each_input_what_is_left() -> None:
    assert Clock.started(5.0).budget() == 5.0
    clock = Clock.started(5.0, total=0.05)
    assert 0 < (clock.budget() or 0) <= 0.05
    time.sleep(0.06)
    assert (clock.budget() or 0) <= 0


def test_rows_round_trip_and_lower_bounds_make_new_rows(tmp_path: Path) -> None:
    sqls = ["SELECT COUNT(*) FROM Pat WHERE age > 30", "SELECT COUNT(*) FROM Pat WHERE age > 40",
            "SELECT SUM(x) FROM Nope"]
    records = [Record(str(i), f"log:{i}", s) for i, s in enumerate(sqls)]
    rows = list(analyse_log(records, cache=ShapeCache(), schema=SCHEMA))
    (tmp_path / "q.sql").write_text(sqls[0], encoding="utf-8")
    batch = analyze_paths([tmp_path / "q.sql"], schema=SCHEMA).rows
    for row in [*rows, *batch]:
        typed = Row.from_dict(row)
        assert typed.to_dict() == row
        assert json.dumps(typed.to_dict()) == json.dumps(row)  # the same keys in the same order
    assert [r["status"] for r in rows] == ["ok", "ok", "error"]
    assert rows[1]["cached"] is True and rows[0]["shape"] == rows[1]["shape"]
    first = Row.from_dict(rows[0])
    assert first.log is not None and first.analysis is not None
    changed = first.with_lower(first.upper, "a note", "reused")
    assert changed.tight and changed.lower == first.upper
    assert changed.analysis is not None and changed.analysis["lower_note"] == "a note"
    assert changed.analysis["sensitivity"]["lower"] == first.upper
    assert changed.log == dataclasses.replace(first.log, proof="reused")
    assert Row.from_dict(rows[0]) == first  # the original is untouched
    assert first.with_lower(None, None, None).tight is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.lower = 3  # type: ignore[misc]


def test_a_failed_row_has_every_key() -> None:
    row = Row.failed("log:1", "timeout", "log:1: timed out", "SELECT 1", None, LogPart("1"))
    d = row.to_dict()
    assert list(d)[0] == "id" and d["reason"] == d["error"] == "log:1: timed out"
    assert d["inputs"] == {"schema": None, "constraints": None, "dependencies": []}
    assert (d["shape"], d["cached"], d["proof"], d["analysis"]) == (None, False, None, None)
