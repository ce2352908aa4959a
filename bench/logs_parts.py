"""The parts of a query-log run, timed in this process (CPU seconds): new shapes, hits, warm.

    python bench/logs_parts.py                  # 2,000 + 4,000 records of 200 range shapes
    python bench/logs_parts.py --first 2000 --hits 4000 --out /tmp/parts.jsonl

The log is bench/logs.py's (``--ranges``, seed 0).  Its first ``--first`` records fill a cache
(not timed); then, each timed with ``time.process_time`` around
:func:`cqsens.logs.run.analyse_log` (``--jobs 1``, lower bounds on):

* **new shapes**: one record of each shape, into an empty cache (an analysis, a witness
  search and a template each);
* **hits**: the next ``--hits`` records, against a copy of the filled cache (each gets its
  lower bound from its key's witness, instantiated and checked for it), in two halves: the
  second half runs with every key's SQLite template already made (the steady state);
* **warm**: the same records again (each proven before: no check).

``--out`` writes the (id, upper, lower, proof) of every row, to compare two versions.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from logs import write_log

from cqsens.logs.cache import ShapeCache
from cqsens.logs.records import Record, read_records
from cqsens.logs.run import analyse_log

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "examples/hospital/schema.sql")


def _timed(records: Iterable[Record], cache: ShapeCache) -> tuple[float, list[dict[str, Any]]]:
    start = time.process_time()
    rows = list(analyse_log(iter(records), cache=cache, jobs=1, full=False, schema=SCHEMA))
    return time.process_time() - start, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--first", type=int, default=2000)
    parser.add_argument("--hits", type=int, default=4000)
    parser.add_argument("--shapes", type=int, default=200)
    parser.add_argument("--out", help="write each row's id, upper, lower and proof here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        log = folder / "log.jsonl"
        write_log(log, args.first + args.hits, args.shapes, ranges=True)
        records = list(read_records(str(log)))
        first, later = records[:args.first], records[args.first:]
        filled = ShapeCache(folder / "first.sqlite")
        _timed(first, filled)
        filled.close()
        seen: set[str] = set()
        new_shapes = []
        for record in records:
            name = re.search(r" AS (n\d+)", record.sql)
            if name and name.group(1) not in seen:
                seen.add(name.group(1))
                new_shapes.append(record)
        out: list[dict[str, Any]] = []
        seconds, rows = _timed(new_shapes, ShapeCache(":memory:"))
        out += rows
        print(f"new shapes: {len(new_shapes)} records, {seconds:.2f} CPU s, "
              f"{seconds / len(new_shapes) * 1e3:.1f} ms/record")
        shutil.copy(folder / "first.sqlite", folder / "hits.sqlite")
        cache = ShapeCache(folder / "hits.sqlite")
        half = len(later) // 2
        for name, part in (("hits, first half", later[:half]),
                           ("hits, second half (templates made)", later[half:])):
            seconds, rows = _timed(part, cache)
            out += rows
            print(f"{name}: {len(part)} records, {seconds:.2f} CPU s, "
                  f"{seconds / len(part) * 1e3:.3f} ms/record")
        seconds, rows = _timed(later, cache)
        print(f"warm: {len(later)} records, {seconds:.2f} CPU s, "
              f"{seconds / len(later) * 1e6:.0f} µs/record")
        cache.close()
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            for row in out:
                handle.write(json.dumps({k: row.get(k) for k in ("id", "upper", "lower",
                                                                 "proof")}) + "\n")


if __name__ == "__main__":
    main()
