"""bench/golden_changes.py: every difference between two golden records gets its classes."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from golden_changes import classify, compare, render  # noqa: E402

GOLDEN = ROOT / "bench" / "results" / "golden.json"


def _record(case: str) -> dict[str, Any]:
    records: dict[str, Any] = json.loads(GOLDEN.read_text())
    return copy.deepcopy(records[case])


def test_upper_lower_and_verdict_changes_are_classified() -> None:
    before = _record("shop/order_pairs.sql/add-remove")
    after = copy.deepcopy(before)
    after["sensitivity"].update(upper=before["sensitivity"]["upper"] - 1, lower=None)
    assert classify("c", before, after).classes == ["upper decreased", "lower removed"]
    after = copy.deepcopy(before)
    after["sensitivity"]["upper"] = "inf"
    assert classify("c", before, after).primary == "upper increased"
    assert classify("c", {"error": "InputError: x"}, before).classes == ["refused → accepted"]
    assert classify("c", before, {"error": "InputError: x"}).classes == ["accepted → refused"]
    after = copy.deepcopy(before)
    after["sensitivity"]["lower"] = "20/3"  # exact rational strings compare as numbers
    before["sensitivity"]["lower"] = 6
    assert classify("c", before, after).classes == ["lower raised"]


def test_wording_and_other_numbers() -> None:
    before = _record("shop/order_pairs.sql/add-remove")
    after = copy.deepcopy(before)
    after["explanation"] = ["reworded"]
    assert classify("c", before, after).classes == ["wording only"]
    after["noise"] = {**after["noise"], "laplace_scale": 1}
    change = classify("c", before, after)
    assert change.classes == ["other numbers"] and change.others == ["noise"]


def test_equal_records_give_no_change_and_the_page_counts_each_class() -> None:
    old = {k: _record(k) for k in ("sql000", "sql001")}
    new = copy.deepcopy(old)
    assert compare(old, new) == []
    new["sql001"]["sensitivity"]["upper"] = 1
    changes = compare(old, new)
    assert [c.case for c in changes] == ["sql001"]
    page = render(changes, old="a", new="b", total=2)
    assert "| upper decreased | 1 | 1 |" in page
