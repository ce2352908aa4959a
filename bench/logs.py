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


#: Joins of the hospital schema for ``--distinct`` (tables with their aliases, the join).
JOINS = [
    ({"p"}, "Pat p"),
    ({"p", "h"}, "Pat p JOIN Hos h ON p.hos = h.id"),
    ({"p", "x"}, "Pat p JOIN PatDoc x ON p.id = x.pat"),
    ({"d", "x"}, "Doc d JOIN PatDoc x ON d.id = x.doc"),
    ({"p", "x", "d"}, "Pat p JOIN PatDoc x ON p.id = x.pat JOIN Doc d ON x.doc = d.id"),
    ({"d", "h"}, "Doc d JOIN Hos h ON d.hos = h.id"),
    ({"p", "h", "d"}, "Pat p JOIN Hos h ON p.hos = h.id JOIN Doc d ON d.hos = h.id"),
    ({"h"}, "Hos h"),
]
#: Filterable columns per alias: (column, number or text).
COLUMNS = {"p": [("p.age", "n"), ("p.sex", "t"), ("p.hos", "n"), ("p.id", "n")],
           "h": [("h.loc", "t"), ("h.id", "n")],
           "d": [("d.specialty", "t"), ("d.hos", "n"), ("d.id", "n")],
           "x": [("x.pat", "n"), ("x.doc", "n")]}
_NUMBER_FILTERS = ["{c} = {{a}}", "{c} > {{a}}", "{c} < {{age}}",
                   "{c} BETWEEN {{age}} AND {{age2}}", "{c} <> {{b}}", "{c} IN ({{a}}, {{b}})",
                   "{c} >= {{age}}"]
_TEXT_FILTERS = ["{c} = '{{s}}'", "{c} <> '{{s}}'", "{c} LIKE '{{s}}%'", "{c} IN ('{{s}}', 'Q')"]


def distinct_shapes(count: int, seed: int = 1) -> list[str]:
    """``count`` genuinely distinct shapes (``--distinct``): other tables, joins, aggregates,
    filtered columns and comparisons, not other aliases of a few queries."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    for _ in range(count * 200):
        if len(out) >= count:
            break
        aliases, join = rng.choice(JOINS)
        columns = [c for a in sorted(aliases) for c in COLUMNS[a]]
        aggregate = rng.choice(["COUNT(*)"] + [f"COUNT(DISTINCT {c})" for c, _ in columns]
                               + (["SUM(p.age)", "AVG(p.age)", "MAX(p.age)"] if "p" in aliases
                                  else []))
        chosen = rng.sample(columns, rng.randint(1, min(3, len(columns))))
        filters = [rng.choice(_NUMBER_FILTERS if kind == "n" else _TEXT_FILTERS).format(c=c)
                   for c, kind in chosen]
        text = f"SELECT {aggregate} FROM {join} WHERE " + " AND ".join(filters)
        if text not in seen:
            seen.add(text)
            out.append(text)
    if len(out) < count:
        raise SystemExit(f"--distinct: only {len(out)} distinct shapes could be made")
    return out


def shapes(count: int, ranges: bool = False, distinct: bool = False) -> list[str]:
    """``count`` shapes: the bases with a distinct alias suffix each (or a distinct count
    name, ``ranges``), or genuinely distinct ones (``distinct``)."""
    if distinct:
        return distinct_shapes(count)
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
              ranges: bool = False, distinct: bool = False) -> tuple[int, int, int]:
    """Write the log; return how many distinct texts it has, how many distinct shapes
    (texts up to constants) and how many distinct templates (up to constants and table
    aliases: what the cache keys at most, :func:`cqsens.logs.shape.lex`)."""
    from cqsens.logs.shape import lex

    rng = random.Random(seed)
    all_shapes = shapes(n_shapes, ranges, distinct)
    texts: set[str] = set()
    used: set[int] = set()
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(records):
            at = rng.randrange(n_shapes)
            used.add(at)
            a = rng.randrange(1, 10_000)
            age = rng.randrange(0, 100)
            sql = all_shapes[at].format(a=a, b=a + rng.randrange(1, 500),
                                        s=rng.choice("ABCDEFMXYZ"), age=age,
                                        age2=age + rng.randrange(1, 20))
            texts.add(sql)
            handle.write(json.dumps({"id": i, "sql": sql}) + "\n")
    templates = {lex(all_shapes[at].format(a=1, b=2, s="A", age=3, age2=4)).template
                 for at in used}
    return len(texts), len(used), len(templates)


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


def section(records: int, n_shapes: int, jobs: int, ranges: bool, lower: bool,
            distinct: bool = False) -> list[str]:
    """Two runs (empty cache, warm cache) on a generated log: a Markdown table."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        log, cache = folder / "log.jsonl", folder / "c.sqlite"
        texts, used, templates = write_log(log, records, n_shapes, ranges=ranges,
                                           distinct=distinct)
        what = ("distinct tables, joins, aggregates and filters" if distinct else
                "range and equality constants" if ranges else "equality constants") + \
            (", lower bounds on" if lower else ", --no-lower")
        how = ("genuinely distinct shapes" if distinct else
               f"{len(RANGE_BASES if ranges else BASES)} query bases under distinct "
               + ("count names" if ranges else "table aliases"))
        lines = [f"## {records} records, {n_shapes} shapes, {what}, --jobs {jobs}", "",
                 f"The log: {texts} distinct texts, {used} distinct shapes ({how}), "
                 f"{templates} distinct templates once constants and table aliases are out.",
                 "",
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
    parser.add_argument("--distinct", action="store_true",
                        help="genuinely distinct shapes (other tables, joins, aggregates, "
                             "filters), not the bases under other aliases")
    parser.add_argument("--no-lower", action="store_true", help="skip the witness search")
    parser.add_argument("--output", default=str(ROOT / "bench/results/logs.md"))
    args = parser.parse_args()
    if len(args.shapes) != len(args.records):
        parser.error("give one --shapes number per --records number")
    lines = ["# Query log bench (bench/logs.py): `cqsens report LOG -o out.jsonl --cache FILE "
             "--jobs J`", "",
             "Logs generated from the hospital schema: five query bases under distinct "
             "table aliases or count names (the cache leaves table aliases out of its key, "
             "so those shapes are five templates), or genuinely distinct shapes (--distinct). "
             "Peak RSS is the largest process of the runs so far "
             "(resource.getrusage of the children). The machine has 2 cores shared with other "
             "work: the load average before each run is shown.", ""]
    for records, n_shapes in zip(args.records, args.shapes, strict=True):
        lines.extend(section(records, n_shapes, args.jobs, args.ranges, not args.no_lower,
                             args.distinct))
    output = Path(args.output)
    notes = ""
    if output.exists():  # keep the hand-written notes that follow the tables
        old = output.read_text(encoding="utf-8")
        if NOTES in old:
            notes = old[old.index(NOTES):]
    output.write_text("\n".join(lines) + ("\n" + notes if notes else ""), encoding="utf-8")


if __name__ == "__main__":
    main()
