"""Per-query analysis time of TPC-H under its standard privacy configuration.

    python bench/tpch_times.py [--repeats 3] [--config examples/tpch/standard/cqsens.toml] [-o FILE]

Each query of ``examples/tpch/queries`` is analysed in-process with
:func:`cqsens.analyze_with` and the settings of the metadata file (lower bounds and
witnesses on, the product's defaults), ``--repeats`` times; out comes a Markdown table of
the median wall time (``time.perf_counter``) and the median CPU time
(``time.process_time``, which a shared machine disturbs less), with the bounds found and
the load average at the start and the end; beside them the first analysis's CPU time,
before the caches of that query are warm (a command-line run analyses once).  One
warm-up analysis (q02) runs first, so that import and first-use costs are not charged
to q01.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cqsens.ir.exact import text  # noqa: E402
from cqsens.pipeline import analyze_with  # noqa: E402
from cqsens.settings import Settings  # noqa: E402

QUERIES = ROOT / "examples" / "tpch" / "queries"
CONFIG = ROOT / "examples" / "tpch" / "standard" / "cqsens.toml"


def measure(path: Path, settings: Settings, repeats: int) -> tuple[float, float, float, str, str]:
    """Median wall and CPU seconds of ``repeats`` analyses, the first analysis's CPU
    seconds (before this query's own caches are warm), and the bounds found."""
    walls: list[float] = []
    cpus: list[float] = []
    upper = lower = ""
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        a = analyze_with(path, settings)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
        upper, lower = text(a.upper), ("" if a.lower is None else text(a.lower))
    return statistics.median(walls), statistics.median(cpus), cpus[0], upper, lower


def main(argv: list[str] | None = None) -> int:
    """Command line: print (or write with ``-o``) the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--queries", type=Path, default=QUERIES)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=None, help="query names, e.g. q01 q21")
    parser.add_argument("-o", "--output", type=Path)
    args = parser.parse_args(argv)
    settings = Settings.from_toml(args.config)
    paths = [p for p in sorted(args.queries.glob("q*.sql"))
             if args.only is None or p.stem in args.only]
    analyze_with(args.queries / "q02.sql", settings)  # warm-up: imports, first-use caches
    load0 = os.getloadavg()[0]
    lines = ["| query | upper | lower | wall (s) | CPU (s) | first CPU (s) |",
             "|---|---:|---:|---:|---:|---:|"]
    total_cpu = 0.0
    for path in paths:
        wall, cpu, first, upper, lower = measure(path, settings, args.repeats)
        total_cpu += cpu
        lines.append(f"| {path.stem} | {upper} | {lower} | {wall:.2f} | {cpu:.2f} | {first:.2f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    load1 = os.getloadavg()[0]
    lines += ["", f"Median of {args.repeats}; total CPU {total_cpu:.2f} s; "
              f"load average {load0:.2f} at the start, {load1:.2f} at the end.", ""]
    report = "\n".join(lines)
    if args.output:
        args.output.write_text(report)
    else:
        sys.stdout.write(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
