"""A witness search is a budget of work: the same seed and budget give the same witness on a
slow or loaded machine as on an idle one (the clock stops it only far past its budget)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import cqsens
import cqsens.witness.aggregate_search as aggregate_search
import cqsens.witness.search as search
from cqsens.budget import HARD_STOP, HARD_STOP_MARGIN, search_stop, work_units

SCHEMA = str(Path(__file__).resolve().parents[1] / "examples/hospital/schema.sql")
QUERIES = [
    # a growing family, then the local search on 64 copies
    "SELECT COUNT(*) FROM Pat p JOIN Hos h ON p.hos = h.id WHERE h.loc = 'F' AND p.id > 5",
    "SELECT SUM(p.age) FROM Pat p JOIN PatDoc pd ON p.id = pd.pat",
]


def _proof(sql: str, calls: list[int]) -> tuple[Any, ...]:
    calls.clear()
    a = cqsens.analyze(sql, schema=SCHEMA, witness_time=0.5, seed=3, timeout=None)
    w = a.witness
    assert w is not None
    return a.lower, w.to_dict(), len(calls)


@pytest.mark.parametrize("sql", QUERIES)
def test_a_slower_machine_does_the_same_work_and_proves_the_same_bound(
        sql: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    count, pair = search._evaluate, aggregate_search.released_pair
    delay = [0.0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        time.sleep(delay[0])
        return count(*args, **kwargs)

    def counted_pair(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        time.sleep(delay[0])
        return pair(*args, **kwargs)

    monkeypatch.setattr(search, "_evaluate", counted)
    monkeypatch.setattr(aggregate_search, "released_pair", counted_pair)
    idle = _proof(sql, calls)
    assert idle[2] > 10
    # each evaluation of a candidate pair of databases now takes 15 ms longer: the work no
    # longer fits in the nominal 0.5 s, as on a machine several times slower or busier
    delay[0] = 0.015
    assert _proof(sql, calls) == idle


def test_the_work_follows_the_budget_and_the_clock_stops_only_far_past_it() -> None:
    assert work_units(0.5, search.LOCAL_ROWS_PER_SECOND) == 3000
    assert work_units(2.0, aggregate_search.TRIES_PER_SECOND) == 800
    before = time.monotonic()
    stop = search_stop(0.5)
    assert HARD_STOP * 0.5 + 1.0 <= stop - before <= HARD_STOP * 0.5 + 1.0 + 0.5
    before = time.monotonic()
    assert 30 + HARD_STOP_MARGIN <= search_stop(30) - before <= 30 + HARD_STOP_MARGIN + 0.5
    with cqsens.budget.deadline(0.2):  # an analysis's own deadline still comes first
        assert search_stop(0.5) - time.monotonic() <= 0.2
