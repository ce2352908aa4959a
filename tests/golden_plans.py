"""Golden plans: ``tests/golden/plans/NAME.sql`` (a statement) → ``NAME.plan`` (its plan).

The plan is rendered by :func:`cqsens.frontend.plan.render` (node kinds, the pass
that made each node, each leaf's SQL); a statement that cqsens refuses records
the construct and the reason instead.  The statements read the tables of
``tests/test_union.py`` (``r``, ``s``, ``u``).  Re-record after a reviewed change:

    PYTHONPATH=$PWD python -m tests.golden_plans --record

and read ``git diff tests/golden/plans`` before committing.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cqsens.errors import CqsensError
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.parse_sql import parse_plan, parse_query
from cqsens.frontend.plan import render
from tests.test_union import DDL

FOLDER = Path(__file__).resolve().parent / "golden" / "plans"


def _refusal(error: CqsensError) -> str:
    construct = getattr(error, "construct", None) or ""
    return f"refused: {construct}: {error}\n"


def golden_text(sql: str) -> str:
    """The plan of ``sql`` as text, then ``refused: …`` if a leaf cannot be translated."""
    schema = schema_from_ddl(DDL)
    try:
        out = render(parse_plan(sql, schema=schema))
    except CqsensError as error:
        return _refusal(error)
    try:
        parse_query(sql, schema=schema)
    except CqsensError as error:
        out += _refusal(error)
    return out


def cases() -> list[Path]:
    """The statements, by name."""
    return sorted(FOLDER.glob("*.sql"))


def record() -> int:
    """Write every ``NAME.plan``; returns how many changed."""
    changed = 0
    for path in cases():
        target = path.with_suffix(".plan")
        text = golden_text(path.read_text(encoding="utf-8"))
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
            changed += 1
            print(f"recorded {target.name}")
    return changed


if __name__ == "__main__":
    if "--record" not in sys.argv[1:]:
        print(__doc__)
        raise SystemExit(2)
    print(f"{record()} of {len(cases())} plans changed")
