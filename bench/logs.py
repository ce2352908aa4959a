"""Query logs at scale: a generated log of N records from S shapes, through `cqsens report`.

    python bench/logs.py                       # 10,000 and 100,000 records, --jobs 2
    python bench/logs.py --records 20000 --shapes 200 --ranges --output /tmp/r.md

Each run is `cqsens report LOG -o out.jsonl --cache FILE --jobs J` (lower bounds on unless
--no-lower), timed, with the peak RSS
of the process and its workers (resource.getrusage of the children).  The warm run's rows
are compared with the first run's: they must be identical but for "cached" (a shape's
first record is analysed the first time).  Results go to
bench/results/logs.md (the "## Notes" part of that file is kept).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "examples/hospital/schema.sql"
NOTES = "## Notes"
#: Bases with range constants (``--ranges``): ages, ids and LIKE patterns drawn at random.
RANGE_BASES = [
    "SELECT COUNT(*) FROM Pat p JOIN PatDoc pd ON p.id = pd.pat WHERE p.age > {age} "
    "AND pd.pat > {a}",
    "SELECT COUNT(*) FROM Pat p JOIN Hos h ON p.hos = h.id WHERE h.loc = '{s}' "
    "AND p.age BETWEEN {age} AND {age2}",
    "SELECT COUNT(DISTINCT p.hos) FROM Pat p WHERE p.age < {age} AND p.sex = '{s}'",
    "SELECT COUNT(*) FROM Doc d, PatDoc x WHERE d.id = x.doc AND d.specialty LIKE '{s}%' "
    "AND x.pat > {a}",
    "SELECT COUNT(*) FROM Pat p, PatDoc x, Doc d WHERE p.id = x.pat AND x.doc = d.id "
    "AND d.specialty = '{s}' AND p.hos = {a} AND p.age >= {age}",
]
BASES = [
    "SELECT COUNT(*) FROM Pat p JOIN PatDoc pd ON p.id = pd.pat WHERE p.sex = '{s}' AND pd.doc = {a}",
    "SELECT COUNT(*) FROM Pat p JOIN Hos h ON p.hos = h.id WHERE h.loc = '{s}' AND p.id > {a}",
    "SELECT COUNT(DISTINCT p.hos) FROM Pat p WHERE p.id BETWEEN {a} AND {b}",
    "SELECT COUNT(*) FROM Doc d, PatDoc x WHERE d.id = x.doc AND d.hos = {a} AND x.pat = {b}",
    "SELECT COUNT(*) FROM Pat p, PatDoc x, Doc d WHERE p.id = x.pat AND x.doc = d.id "
    "AND d.specialty = '{s}' AND p.hos = {a}",
]


def shapes(count: int, ranges: bool = False) -> list[str]:
    """``count`` distinct shapes: the bases with a distinct alias suffix each."""
    bases = RANGE_BASES if ranges else BASES
    out = []
    for i in range(count):
        base = bases[i % len(bases)]
        if ranges:  # a distinct name for the count: a distinct shape for every base
            out.append(base.replace("COUNT(*)", f"COUNT(*) AS n{i}", 1)
                       .replace("COUNT(DISTINCT p.hos)", f"COUNT(DISTINCT p.hos) AS n{i}", 1))
            continue
        out.append(base.replace(" p ", f" p{i} ").replace("p.", f"p{i}.").replace(" p,", f" p{i},"))
    return out


def write_log(path: Path, records: int, n_shapes: int, seed: int = 0,
              ranges: bool = False) -> None:
    rng = random.Random(seed)
    all_shapes = shapes(n_shapes, ranges)
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(records):
            shape = all_shapes[rng.randrange(n_shapes)]
            a = rng.randrange(1, 10_000)
            age = rng.randrange(0, 100)
            sql = shape.format(a=a, b=a + rng.randrange(1, 500), s=rng.choice("ABCDEFMXYZ"),
                               age=age, age2=age + rng.randrange(1, 20))
            handle.write(json.dumps({"id": i, "sql": sql}) + "\n")


def run(log: Path, out: Path, cache: Path, jobs: int, lower: bool = True
        ) -> tuple[float, float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cqsens", "report", str(log), "--schema",
                           str(SCHEMA), "-o", str(out), "--force", "--cache", str(cache),
                           "--jobs", str(jobs), *([] if lower else ["--no-lower"])],
                          capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return elapsed, cpu, after.ru_maxrss / 1024, done.stdout.strip()


def section(records: int, n_shapes: int, jobs: int, ranges: bool, lower: bool) -> list[str]:
    """Two runs (empty cache, warm cache) on a generated log: a Markdown table."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        log, cache = folder / "log.jsonl", folder / "c.sqlite"
        write_log(log, records, n_shapes, ranges=ranges)
        what = ("range and equality constants" if ranges else "equality constants") + \
            (", lower bounds on" if lower else ", --no-lower")
        lines = [f"## {records} records, {n_shapes} shapes, {what}, --jobs {jobs}", "",
                 "| run | seconds | CPU seconds (all processes) | µs/record "
                 "| peak RSS (MB, largest process) | load average before (2 cores) | output |",
                 "|---|---:|---:|---:|---:|---:|---|"]
        outs = []
        for name in ("first (empty cache)", "second (warm cache)"):
            load = os.getloadavg()[0]
            out = folder / f"out{len(outs)}.jsonl"
            outs.append(out)
            seconds, cpu, rss, said = run(log, out, cache, jobs, lower)
            said = said.replace(str(out), "out.jsonl")
            lines.append(f"| {name} | {seconds:.1f} | {cpu:.1f} | {seconds / records * 1e6:.0f} | "
                         f"{rss:.0f} | {load:.2f} | {said} |")
            print(lines[-1], flush=True)
        lines.append(f"\nWarm rows that differ from the first run's but for \"cached\": "
                     f"{differing(*outs)} of {records}.")
    return [*lines, ""]


def differing(first: Path, second: Path) -> int:
    """Rows of ``second`` that differ from ``first``'s (``cached`` left out)."""
    def rows(path: Path) -> list[dict[str, object]]:
        with open(path, encoding="utf-8") as handle:
            return [{k: v for k, v in json.loads(line).items() if k != "cached"}
                    for line in handle]
    a, b = rows(first), rows(second)
    return sum(x != y for x, y in zip(a, b, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--shapes", type=int, nargs="+", default=[500, 5_000],
                        help="shapes of each log (one number per --records)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--ranges", action="store_true",
                        help="shapes with range, equality and LIKE constants (RANGE_BASES)")
    parser.add_argument("--no-lower", action="store_true", help="skip the witness search")
    parser.add_argument("--output", default=str(ROOT / "bench/results/logs.md"))
    args = parser.parse_args()
    if len(args.shapes) != len(args.records):
        parser.error("give one --shapes number per --records number")
    lines = ["# Query log bench (bench/logs.py): `cqsens report LOG -o out.jsonl --cache FILE "
             "--jobs J`", "",
             "Logs generated from the hospital schema's five query bases (distinct aliases or "
             "count names make the shapes). Peak RSS is the largest process of the runs so far "
             "(resource.getrusage of the children). The machine has 2 cores shared with other "
             "work: the load average before each run is shown.", ""]
    for records, n_shapes in zip(args.records, args.shapes, strict=True):
        lines.extend(section(records, n_shapes, args.jobs, args.ranges, not args.no_lower))
    output = Path(args.output)
    notes = ""
    if output.exists():  # keep the hand-written notes that follow the tables
        old = output.read_text(encoding="utf-8")
        if NOTES in old:
            notes = old[old.index(NOTES):]
    output.write_text("\n".join(lines) + ("\n" + notes if notes else ""), encoding="utf-8")


if __name__ == "__main__":
    main()
