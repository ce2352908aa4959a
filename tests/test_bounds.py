"""The paper's examples and the corrections of docs/rules.md as case tables."""

from __future__ import annotations

from typing import Any

import pytest

from cqsens.pipeline import analyze
from tests.helpers import FIXTURES, expected, load_cases

FILES = ("paper.toml", "paper_corrections.toml", "arborescence.toml")
CASES = [(f, c) for f in FILES for c in load_cases(f"bounds/{f}")]


@pytest.mark.parametrize("case", [c for _, c in CASES], ids=[c["id"] for _, c in CASES])
def test_case(case: dict[str, Any]) -> None:
    source = case.get("cq") or case["sql"]
    schema = (FIXTURES / "bounds" / case["schema"]).resolve() if "schema" in case else None
    a = analyze(source, schema=schema, fds=case.get("fds", []), cds=case.get("cds", []),
                kind="cq" if "cq" in case else "sql", prove_lower="lower" in case["expect"])
    want = case["expect"]
    got = {
        "upper": a.upper,
        "lower": a.lower,
        "delta_str": a.delta_str,
        "connected": a.connected,
        "satisfiable": a.satisfiable,
        **{f"paper_{k}": v.value for k, v in a.paper.items()},
    }
    for key, value in want.items():
        assert got[key] == expected(value), f"{key}: got {got[key]}, want {value}"
    # the answer is never above the paper's sound Thm 13 / Thm 17 upper bounds
    for key in ("paper_fd_upper", "paper_cd_upper"):
        if got.get(key) is not None:
            assert a.upper <= got[key]
