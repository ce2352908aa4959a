"""Share of a seeded, generated aggregate corpus where the upper bound equals the witness's
lower bound (docs/rules.md, rule aggregate-witness).

    python bench/aggregate_tightness.py [N] [SEED]
"""

from __future__ import annotations

import random
import sys

from cqsens.pipeline import analyze

SCHEMA = ("CREATE TABLE Emp(id INT PRIMARY KEY, dept INT,"
          " sal INT CHECK (sal BETWEEN {lo} AND {hi}));"
          " CREATE TABLE Dep(id INT PRIMARY KEY, city TEXT);")
KINDS = ("SUM", "AVG", "MEDIAN", "MIN", "MAX", "COUNT")


def query(rng: random.Random) -> tuple[str, list[str]]:
    """One SQL aggregate query and its CDs."""
    kind = rng.choice(KINDS)
    arg = "*" if kind == "COUNT" else "e.sal"
    join = rng.random() < 0.4
    grouped = rng.random() < 0.3
    frm = "Emp e JOIN Dep d ON e.dept = d.id" if join else "Emp e"
    where = " WHERE e.sal >= 0" if rng.random() < 0.2 else ""
    cds = [f"Emp[2->1]<={rng.randint(1, 3)}"] if join and rng.random() < 0.7 else []
    if grouped:
        return f"SELECT e.dept, {kind}({arg}) FROM {frm}{where} GROUP BY e.dept", cds
    return f"SELECT {kind}({arg}) FROM {frm}{where}", cds


def main(argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 else 100
    rng = random.Random(int(argv[2]) if len(argv) > 2 else 0)
    tight = total = 0
    for _ in range(n):
        sql, cds = query(rng)
        lo = rng.choice((0, -10, 5))
        schema = SCHEMA.format(lo=lo, hi=lo + rng.choice((10, 100)))
        for neighbor in ("add-remove", "substitute"):
            a = analyze(sql, schema=schema, cds=cds, neighbor=neighbor, witness_time=0.5)
            total += 1
            tight += a.tight
            if not a.tight:
                print(f"loose: {neighbor:10} {sql} {cds} upper {a.upper} lower {a.lower}")
    print(f"tight: {tight}/{total} = {100 * tight / total:.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
