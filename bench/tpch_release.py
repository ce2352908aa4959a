"""TPC-H as published, under its standard privacy configuration: analysed, proven, released.

    python bench/tpch_release.py [--customers N] [-o bench/results/tpch_release.md]

For each of the 22 queries of ``examples/tpch/queries``, with
``examples/tpch/standard/cqsens.toml`` (one person is a customer with their orders
and lines; nation, region, part, supplier and partsupp are public), the script

* analyses the query with the product's defaults (lower bound and witness on) and
  records the upper bound, the proven lower bound and the time, wall and CPU (after one
  warm-up analysis, so that the process's one-time set-up is not charged to q01);
* releases it with ``cqsens release`` (ε = 1, δ = 1e-6, no ledger) from a TPC-H
  database written by ``examples/tpch/standard/generate.py`` (300 customers by
  default), and records whether an answer came back, how many rows, and the time.

The table goes to the output file (Markdown) and to standard output.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "tpch" / "standard"))

from generate import generate  # noqa: E402

from cqsens.errors import InputError  # noqa: E402
from cqsens.ir.exact import text  # noqa: E402
from cqsens.pipeline import analyze_with  # noqa: E402
from cqsens.settings import Settings  # noqa: E402

QUERIES = ROOT / "examples" / "tpch" / "queries"
CONFIG = ROOT / "examples" / "tpch" / "standard" / "cqsens.toml"


@dataclass
class Row:
    """One query's outcome."""

    name: str
    analysed: str = ""
    upper: str = ""
    lower: str = ""
    tight: bool = False
    analyse_s: float = 0.0
    analyse_cpu: float = 0.0
    released: str = ""
    release_s: float = 0.0


def _analyse(row: Row, path: Path, settings: Settings) -> None:
    start, cpu = time.perf_counter(), time.process_time()
    try:
        a = analyze_with(path, settings)
    except InputError as err:
        row.analysed = f"refused: {str(err).splitlines()[0][:90]}"
    else:
        row.analysed = "analysed" if a.bounded else "unbounded"
        row.upper = text(a.upper) if a.bounded else "∞"
        row.lower = text(a.lower) if a.lower is not None else ""
        row.tight = a.lower is not None and a.bounded and a.lower == a.upper
    row.analyse_s = time.perf_counter() - start
    row.analyse_cpu = time.process_time() - cpu


def _release(row: Row, path: Path, url: str) -> None:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "cqsens", "release", str(path), "--config", str(CONFIG),
         "--db", url, "--epsilon", "1", "--delta", "1e-6", "--format", "json"],
        capture_output=True, text=True, check=False, timeout=600)
    row.release_s = time.perf_counter() - start
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()
        row.released = f"exit {proc.returncode}: {lines[0][:90]}"
        return
    out = json.loads(proc.stdout)
    groups = out.get("groups")
    row.released = f"{len(groups)} rows" if isinstance(groups, list) else "1 row"


def _table(rows: list[Row], customers: int) -> str:
    lines = ["| query | analysis | upper | lower | tight | analyse (s) | analyse CPU (s) | release "
             "| release (s) |",
             "|---|---|---:|---:|---|---:|---:|---|---:|"]
    for r in rows:
        lines.append(f"| {r.name} | {r.analysed} | {r.upper} | {r.lower} | "
                     f"{'yes' if r.tight else ''} | {r.analyse_s:.2f} | {r.analyse_cpu:.2f} | "
                     f"{r.released} | "
                     f"{r.release_s:.2f} |")
    analysed = sum(r.analysed == "analysed" for r in rows)
    proven = sum(bool(r.lower) for r in rows)
    tight = sum(r.tight for r in rows)
    released = sum(not r.released.startswith("exit") for r in rows)
    lines += ["", f"**{analysed} of {len(rows)} analysed and bounded; {proven} with a proven "
              f"lower bound ({tight} tight); {released} released** from a generated database of "
              f"{customers} customers (examples/tpch/standard/generate.py), ε = 1, δ = 1e-6."]
    return "\n".join(lines) + "\n"


#: Sections of the output file written by hand (or by another script) below the table:
#: kept when the table is written again.
KEPT = "\n## "


def _kept_sections(output: Path) -> str:
    """The sections below the table in ``output`` (from its first ``## `` heading), or ""."""
    if not output.is_file():
        return ""
    old = output.read_text()
    at = old.find(KEPT)
    return "" if at < 0 else old[at:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--customers", type=int, default=300)
    parser.add_argument("-o", "--output", type=Path,
                        default=ROOT / "bench" / "results" / "tpch_release.md")
    args = parser.parse_args(argv)
    settings = Settings.from_toml(CONFIG)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "tpch.db"
        generate(db, customers=args.customers)
        analyze_with(QUERIES / "q02.sql", settings)  # warm-up: the process's one-time set-up
        for path in sorted(QUERIES.glob("q*.sql")):
            row = Row(path.stem)
            _analyse(row, path, settings)
            _release(row, path, f"sqlite:///{db}")
            rows.append(row)
            print(f"{row.name}: {row.analysed} {row.upper} {row.lower} | {row.released}",
                  flush=True)
    text = ("# TPC-H under its standard privacy configuration (bench/tpch_release.py)\n\n"
            + _table(rows, args.customers))
    args.output.write_text(text + _kept_sections(args.output))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
