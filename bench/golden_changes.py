"""Classify every difference between two golden recordings (bench/golden.py record).

    python bench/golden_changes.py OLD.json NEW.json [-o bench/results/golden_changes.md]
                                  [--check-witnesses]

Each analysis that differs falls in one or more classes: refused ↔ accepted,
upper bound decreased or increased, lower bound added, raised, lowered or
removed, another number (ℓ1, ℓ2, noise, the paper's values, per-aggregate
bounds, the core, Σ, the witness's counts), or wording only (explanations,
rule sentences, advice, messages).  Out comes a Markdown page: the count per
class, then one row per analysis with its numbers before and after and the
rule that gives the bound now (``rule_id`` and ``count_rule_id``).

With ``--check-witnesses`` every analysis whose lower bound was added or raised
is analysed again (bench/golden.py's corpus) and its witness checked from
scratch with :func:`cqsens.witness.is_witness` (keys, CHECKs, foreign keys and
``--bounds`` included); the column ``witness`` says ``is_witness`` or why not.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: the classes, most important first (a row's first class is its primary one)
CLASSES = (
    "new case", "case removed", "refused → accepted", "accepted → refused",
    "upper increased", "upper decreased", "lower removed", "lower lowered",
    "lower added", "lower raised", "other numbers", "wording only",
)
_OTHER_KEYS = ("connected", "contributions", "core", "core_minimal", "delta_str",
               "dependencies", "free", "noise", "paper", "satisfiable")


def number(value: Any) -> Fraction | float | None:
    """A recorded number: int, float, ``"inf"``, ``"20/3"`` or ``"0.1"`` (None stays None)."""
    if value is None:
        return None
    if value == "inf" or value == math.inf:
        return math.inf
    if isinstance(value, float):
        return Fraction(value)
    return Fraction(str(value))


def _show(value: Any) -> str:
    if value is None:
        return "–"
    if value == "inf":
        return "∞"
    return str(value)


def _aggregate_numbers(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in a.items() if k not in ("rule", "rule_id", "label", "values")}
            for a in record.get("aggregates", [])]


def _unbounded_atoms(record: dict[str, Any]) -> int:
    return len(record.get("structure", {}).get("unbounded", []))


def rules(record: dict[str, Any] | None) -> str:
    """The rule ids a record's bound comes from: ``count_rule_id`` and each aggregate's."""
    if not record or "error" in record:
        return ""
    ids = [a.get("rule_id", "") for a in record.get("aggregates", [])]
    count = record.get("count_rule_id")
    return ", ".join(dict.fromkeys(i for i in [*ids, count] if i))


@dataclass
class Change:
    """One analysis that differs, with its classes."""

    case: str
    classes: list[str] = field(default_factory=list)
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    others: list[str] = field(default_factory=list)
    witness: str = ""

    @property
    def primary(self) -> str:
        """The most important class of the row."""
        return min(self.classes, key=CLASSES.index)


def _sens(record: dict[str, Any]) -> dict[str, Any]:
    return dict(record.get("sensitivity") or {})


def classify(case: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> Change:
    """The classes of one difference (``before != after``)."""
    change = Change(case, before=before, after=after)
    if before is None or after is None:
        change.classes.append("new case" if before is None else "case removed")
        return change
    if ("error" in before) != ("error" in after):
        change.classes.append("refused → accepted" if "error" in before else "accepted → refused")
        return change
    if "error" in before:
        change.classes.append("wording only")  # both refused, another message
        return change
    b, a = _sens(before), _sens(after)
    ub, ua = number(b.get("upper")), number(a.get("upper"))
    if ub != ua and ub is not None and ua is not None:
        change.classes.append("upper increased" if ua > ub else "upper decreased")
    lb, la = number(b.get("lower")), number(a.get("lower"))
    if lb != la:
        if lb is None:
            change.classes.append("lower added")
        elif la is None:
            change.classes.append("lower removed")
        else:
            change.classes.append("lower raised" if la > lb else "lower lowered")
    for key in ("l1", "l2"):
        if number(b.get(key)) != number(a.get(key)) and not (key == "l1" and ub != ua):
            change.others.append(key)
    for key in _OTHER_KEYS:
        if before.get(key) != after.get(key):
            change.others.append(key)
    if _aggregate_numbers(before) != _aggregate_numbers(after):
        change.others.append("aggregates")
    wb, wa = before.get("witness"), after.get("witness")
    if wb != wa and lb == la:
        change.others.append("witness")
    if _unbounded_atoms(before) != _unbounded_atoms(after):
        change.others.append("unbounded atoms")
    if change.others:
        change.classes.append("other numbers")
    if not change.classes:
        change.classes.append("wording only")
    return change


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """Every analysis that differs, classified, in case order."""
    return [classify(case, old.get(case), new.get(case))
            for case in sorted(set(old) | set(new)) if old.get(case) != new.get(case)]


def _wording_keys(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[str]:
    if before is None or after is None:
        return []
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def check_witnesses(changes: list[Change]) -> None:
    """Analyse again each case whose lower bound was added or raised and check its witness."""
    sys.path.insert(0, str(ROOT / "bench"))
    from golden import TIMEOUT, WITNESS_TIME, cases  # noqa: PLC0415

    import cqsens  # noqa: PLC0415
    from cqsens.frontend.ddl import load_schema  # noqa: PLC0415
    from cqsens.release.values import parse_value_bounds  # noqa: PLC0415
    from cqsens.witness import is_witness  # noqa: PLC0415

    wanted = {c.case: c for c in changes if {"lower added", "lower raised"} & set(c.classes)}
    for case, kwargs in cases():
        change = wanted.get(case)
        if change is None:
            continue
        a = cqsens.analyze(**kwargs, witness_time=WITNESS_TIME, timeout=TIMEOUT)
        recorded = number(_sens(change.after or {}).get("lower"))
        if a.witness is None:
            change.witness = f"no witness this run (lower {_show(a.lower)})"
            continue
        schema = load_schema(kwargs["schema"]) if "schema" in kwargs else None
        bounds = parse_value_bounds(kwargs.get("bounds", ()))
        ok = is_witness(a.query_obj, a.sigma, a.witness, schema=schema, value_bounds=bounds)
        again = number(a.lower if a.lower is None else str(a.lower))
        note = "" if again == recorded else f" (this run: {_show(a.lower)})"
        change.witness = ("is_witness" if ok else "NOT a witness") + note


def _numbers_cell(record: dict[str, Any] | None) -> str:
    if record is None:
        return "–"
    if "error" in record:
        return "refused"
    s = _sens(record)
    return f"{_show(s.get('upper'))} / {_show(s.get('lower'))}"


def render(changes: list[Change], *, old: str, new: str, total: int) -> str:
    """The Markdown page."""
    primary = Counter(c.primary for c in changes)
    every = Counter(k for c in changes for k in c.classes)
    lines = [f"# Golden differences: {old} → {new}", "",
             f"{len(changes)} of {total} analyses differ.", "",
             "| class | analyses (primary class) | analyses (any class) |", "|---|---:|---:|"]
    lines += [f"| {k} | {primary[k]} | {every[k]} |" for k in CLASSES if every[k]]
    lines += ["", "Numbers are `upper / lower`; *rule now* is the record's `rule_id`s and"
              " `count_rule_id`; *other* lists the other numeric fields that changed;"
              " *wording* the keys whose text changed.", ""]
    for cls in CLASSES:
        rows = [c for c in changes if c.primary == cls]
        if not rows:
            continue
        lines += [f"## {cls} ({len(rows)})", "",
                  "| case | before | after | rule before | rule now | other | witness |",
                  "|---|---|---|---|---|---|---|"]
        for c in rows:
            others = ", ".join(c.others) or ("wording: " + ", ".join(
                _wording_keys(c.before, c.after)) if cls == "wording only" else "")
            lines.append(f"| {c.case} | {_numbers_cell(c.before)} | {_numbers_cell(c.after)} | "
                         f"{rules(c.before)} | {rules(c.after)} | {others} | {c.witness} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("-o", "--output", type=Path)
    parser.add_argument("--check-witnesses", action="store_true")
    args = parser.parse_args(argv)
    old, new = json.loads(args.old.read_text()), json.loads(args.new.read_text())
    changes = compare(old, new)
    if args.check_witnesses:
        check_witnesses(changes)
    page = render(changes, old=args.old.name, new=args.new.name, total=len(set(old) | set(new)))
    if args.output:
        args.output.write_text(page + "\n")
    sys.stdout.write(page + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
