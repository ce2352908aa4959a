"""Every golden statement still gives its recorded plan (``tests/golden_plans.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.golden_plans import cases, golden_text


def test_enough_golden_plans() -> None:
    names = [p.stem for p in cases()]
    assert len(names) >= 25
    assert all(p.with_suffix(".plan").exists() for p in cases())


@pytest.mark.parametrize("path", cases(), ids=lambda p: p.stem)
def test_golden_plan(path: Path) -> None:
    expected = path.with_suffix(".plan").read_text(encoding="utf-8")
    assert golden_text(path.read_text(encoding="utf-8")) == expected
