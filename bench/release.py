"""Overhead of `cqsens release` over the query's own run time, on the bundled examples.

    python bench/release.py [--runs N]

For every query of ``examples/hospital`` (on its ``data.sql``) and ``examples/tpch``
(on a seeded TPC-H-like SQLite database that obeys ``constraints.txt``: 5 regions,
25 nations, 100 suppliers, 2,000 customers, 20,000 orders, about 80,000 lines),
the script times, in one process (median of N runs):

* the query: the SQL the release runs (``ReleasePlan.parts_sql``/``rows_sql``),
  executed with sqlite3 and fetched;
* the release: analysis without witness, plan, constraint check, query, OpenDP noise,
  rendering;
* the constraint check alone (``cqsens.db.guard``): every dependency, key, foreign
  key, NOT NULL and CHECK of the tables read, checked in the database;

and prints the difference (the target is < 100 ms).  Grouped queries use
partition selection (δ = 1e-6); unbounded queries are refused and listed.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cqsens.db import load_sql_file  # noqa: E402
from cqsens.db.connect import connect  # noqa: E402
from cqsens.db.guard import broken_constraints  # noqa: E402
from cqsens.errors import InputError  # noqa: E402
from cqsens.frontend.ddl import load_schema  # noqa: E402
from cqsens.frontend.release_sql import NOISY_KINDS, release_plan  # noqa: E402
from cqsens.pipeline import analyze  # noqa: E402
from cqsens.releasing import UnboundedRelease, release  # noqa: E402
from cqsens.report.release import render_text  # noqa: E402

SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"]
PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]


def tpch_db(path: Path, seed: int = 7) -> None:
    """A TPC-H-like database obeying examples/tpch/constraints.txt."""
    rnd = random.Random(seed)
    conn = sqlite3.connect(path)
    conn.executescript((ROOT / "examples" / "tpch" / "schema.sql").read_text())
    conn.executemany("INSERT INTO region VALUES (?, ?, '')",
                     [(r, f"R{r}" if r != 3 else "EUROPE") for r in range(5)])
    conn.executemany("INSERT INTO nation VALUES (?, ?, ?, '')",
                     [(n, f"N{n}", n // 5) for n in range(25)])
    conn.executemany("INSERT INTO supplier VALUES (?, '', '', ?, '', ?, '')",
                     [(s, rnd.randrange(25), rnd.uniform(-999, 9999)) for s in range(100)])
    conn.executemany("INSERT INTO customer VALUES (?, '', '', ?, '', ?, ?, '')",
                     [(c, rnd.randrange(25), round(rnd.uniform(-999.99, 9999.99), 2),
                       rnd.choice(SEGMENTS)) for c in range(2000)])
    orders, lines = [], []
    per_customer = dict.fromkeys(range(2000), 0)
    for o in range(20000):
        c = rnd.randrange(2000)
        while per_customer[c] >= 41:
            c = rnd.randrange(2000)
        per_customer[c] += 1
        orders.append((o, c, "O", round(rnd.uniform(0, 600000), 2),
                       f"199{rnd.randrange(2, 9)}-0{rnd.randrange(1, 10)}-1{rnd.randrange(10)}",
                       rnd.choice(PRIORITIES), "", 0, ""))
        for n in range(rnd.randrange(1, 8)):
            lines.append((o, rnd.randrange(1000), rnd.randrange(100), n + 1,
                          rnd.randrange(1, 51), rnd.uniform(900, 100000), rnd.uniform(0, 0.1),
                          rnd.uniform(0, 0.08), "N", "O", "1995-06-17"))
    conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", orders)
    conn.executemany("INSERT INTO lineitem VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", lines)
    conn.commit()
    conn.close()


def time_query(path: Path, sql_file: Path, runs: int) -> float:
    """Median seconds to run and fetch the SQL a release runs for this query."""
    plan = release_plan(sql_file.read_text(), None)
    texts = []
    if any(p.kind in NOISY_KINDS for p in plan.parts):
        texts.append(plan.parts_sql("sqlite"))
    texts += [plan.rows_sql(i, "sqlite") for i, p in enumerate(plan.parts)
              if p.kind not in NOISY_KINDS]
    if plan.keys and not any(p.kind == "count" for p in plan.parts):
        texts.append(plan.count_sql("sqlite"))
    samples = []
    for _ in range(runs):
        conn = sqlite3.connect(path)
        start = time.perf_counter()
        for text in texts:
            conn.execute(text).fetchall()
        samples.append(time.perf_counter() - start)
        conn.close()
    return statistics.median(samples)


def time_release(url: str, sql_file: Path, schema: Path, constraints: Path,
                 runs: int) -> float:
    """Median seconds of a whole release (analysis, plan, query, noise, rendering)."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        parsed = load_schema(schema)

        def run(source: str | Path, kind: str | None = None) -> object:
            return analyze(source, schema=parsed, constraints=constraints, kind=kind,
                           prove_lower=False)

        a = run(sql_file)
        r = release(a, url=url, epsilon=1.0, delta=1e-6, schema=parsed,  # type: ignore[arg-type]
                    reanalyse=lambda text: run(text, "sql"))  # type: ignore[arg-type,return-value]
        render_text(r)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def time_guard(url: str, sql_file: Path, schema: Path, constraints: Path, runs: int) -> float:
    """Median seconds of the constraint check a release runs before its query
    (:func:`cqsens.db.guard.broken_constraints`), in a connection of its own."""
    parsed = load_schema(schema)
    assert parsed is not None
    a = analyze(sql_file, schema=parsed, constraints=constraints, prove_lower=False)
    plan = release_plan(a.query, None)
    deps = sorted(set(a.sigma), key=str)
    samples = []
    for _ in range(runs):
        with connect(url) as conn:
            start = time.perf_counter()
            broken = broken_constraints(conn, parsed, tables=plan.tables, deps=deps,
                                        value_bounds={}, masked=url)
            samples.append(time.perf_counter() - start)
        assert not broken, broken
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    hospital, tpch = tmp / "hospital.db", tmp / "tpch.db"
    load_sql_file(f"sqlite:///{hospital}", ROOT / "examples/hospital/schema.sql",
                  ROOT / "examples/hospital/data.sql")
    tpch_db(tpch)
    print("| query | query (ms) | release (ms) | overhead (ms) | check (ms) | check / query |")
    print("|---|---|---|---|---|---|")
    overheads, ratios, refused = [], [], []
    for folder, db in (("hospital", hospital), ("tpch", tpch)):
        base = ROOT / "examples" / folder
        for sql_file in sorted(base.glob("*.sql")):
            if sql_file.name in ("schema.sql", "data.sql", "data_violating.sql"):
                continue
            name = f"{folder}/{sql_file.name}"
            try:
                total = time_release(f"sqlite:///{db}", sql_file, base / "schema.sql",
                                     base / "constraints.txt", args.runs)
            except UnboundedRelease:
                refused.append(name)
                continue
            except InputError as err:
                refused.append(f"{name} ({err})")
                continue
            query = time_query(db, sql_file, args.runs)
            guard = time_guard(f"sqlite:///{db}", sql_file, base / "schema.sql",
                               base / "constraints.txt", args.runs)
            overheads.append(total - query)
            if folder == "tpch":
                ratios.append(guard / query)
            print(f"| {name} | {1000 * query:.1f} | {1000 * total:.1f} | "
                  f"{1000 * (total - query):.1f} | {1000 * guard:.1f} | "
                  f"{guard / query:.2f} |")
    print()
    print(f"overhead: median {1000 * statistics.median(overheads):.1f} ms, "
          f"max {1000 * max(overheads):.1f} ms over {len(overheads)} queries "
          f"(target < 100 ms)")
    print(f"constraint check on TPC-H: median {statistics.median(ratios):.2f}×, "
          f"max {max(ratios):.2f}× the query's own time (target < 2×; included in release)")
    print(f"refused: {', '.join(refused) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
