"""Workload coverage: analyse every query of a folder of SQL and tabulate what happens.

    python bench/workload.py examples/tpch/queries [--schema FILE] [--constraints FILE]
                             [--config cqsens.toml] [--dialect NAME] [-o FILE]

Each ``*.sql`` file of the folder is analysed with the folder's schema and
constraints (``schema.sql`` and ``constraints.txt`` in the folder or its
parent, unless given; ``--config`` takes the schema, constraints, privacy unit,
ownership keys and public tables of a metadata file).  Out comes a Markdown table, one row per query: analysed
(with the upper and lower bound) or the rejection reason (the construct cqsens
names), and the wall time; then the counts of analysed queries and of each
rejection reason.  A Python traceback (an error cqsens does not raise on
purpose) is counted as such and never hidden.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import cqsens  # noqa: E402
from cqsens.settings import Settings  # noqa: E402
from cqsens.errors import CqsensError, InputError  # noqa: E402
from cqsens.ir.exact import text  # noqa: E402

__all__ = ["Outcome", "coverage_table", "run_workload"]


@dataclass(frozen=True)
class Outcome:
    """What one query gave: ``reason`` is empty when it was analysed."""

    query: str
    reason: str
    upper: str
    lower: str
    seconds: float
    message: str = ""

    @property
    def analysed(self) -> bool:
        """True when cqsens gave a bound."""
        return not self.reason


def _find(folder: Path, name: str) -> Path | None:
    for candidate in (folder / name, folder.parent / name):
        if candidate.is_file():
            return candidate
    return None


def _one(path: Path, schema: Path | None, constraints: Path | None,
         dialect: str | None, settings: dict[str, object] | None = None) -> Outcome:
    start = time.perf_counter()
    try:
        a = cqsens.analyze(path, schema=schema, constraints=constraints, dialect=dialect,
                           **(settings or {}))  # type: ignore[arg-type]
    except CqsensError as exc:
        elapsed = time.perf_counter() - start
        construct = exc.construct if isinstance(exc, InputError) and exc.construct else ""
        reason = construct or type(exc).__name__
        message = exc.message if isinstance(exc, InputError) else str(exc)
        return Outcome(path.name, reason, "", "", elapsed, message)
    except Exception as exc:  # noqa: BLE001 - a bug: counted, never hidden
        elapsed = time.perf_counter() - start
        return Outcome(path.name, f"traceback: {type(exc).__name__}", "", "", elapsed, str(exc))
    elapsed = time.perf_counter() - start
    lower = "" if a.lower is None else text(a.lower)
    return Outcome(path.name, "", text(a.upper), lower, elapsed)


def run_workload(folder: Path, *, schema: Path | None = None, constraints: Path | None = None,
                 dialect: str | None = None, config: Path | None = None) -> list[Outcome]:
    """Analyse every ``*.sql`` of ``folder`` (sorted by name), except ``schema.sql``."""
    settings: dict[str, object] = {}
    if config is not None:
        values = Settings.from_toml(config)
        schema = schema or (Path(str(values.schema)) if values.schema is not None else None)
        constraints = constraints or (Path(str(values.constraints))
                                      if values.constraints is not None else None)
        settings = {k: getattr(values, k) for k in ("unit", "owner", "public", "cds", "fds")
                    if getattr(values, k)}
    schema = schema or _find(folder, "schema.sql")
    constraints = constraints or _find(folder, "constraints.txt")
    return [_one(p, schema, constraints, dialect, settings)
            for p in sorted(folder.glob("*.sql")) if p.name != "schema.sql"]


def _short(reason: str, width: int = 60) -> str:
    shown = reason if len(reason) <= width else reason[: width - 1] + "…"
    return shown.replace("|", "\\|")


def coverage_table(outcomes: list[Outcome]) -> str:
    """The Markdown report: one row per query, then the counts."""
    lines = ["| query | analysed or reason | upper | lower | time (s) |",
             "|---|---|---|---|---|"]
    for o in outcomes:
        what = "analysed" if o.analysed else _short(o.reason)
        lines.append(f"| {o.query} | {what} | {o.upper} | {o.lower} | {o.seconds:.3f} |")
    analysed = sum(o.analysed for o in outcomes)
    lines += ["", f"**{analysed} of {len(outcomes)} analysed.**", ""]
    reasons = Counter(o.reason for o in outcomes if not o.analysed)
    if reasons:
        lines += ["| rejection reason | queries |", "|---|---|"]
        lines += [f"| {_short(r)} | {n} |" for r, n in reasons.most_common()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line: print (or write with ``-o``) the coverage table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--schema", type=Path)
    parser.add_argument("--constraints", type=Path)
    parser.add_argument("--config", type=Path, help="a cqsens.toml (unit, owner, public, ...)")
    parser.add_argument("--dialect")
    parser.add_argument("-o", "--output", type=Path)
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also list each rejection's full message")
    args = parser.parse_args(argv)
    outcomes = run_workload(args.folder, schema=args.schema, constraints=args.constraints,
                            dialect=args.dialect, config=args.config)
    report = coverage_table(outcomes)
    if args.verbose:
        report += "\n" + "\n".join(f"- {o.query}: {o.message}" for o in outcomes if o.message)
        report += "\n"
    if args.output:
        args.output.write_text(report)
    else:
        sys.stdout.write(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
