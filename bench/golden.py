"""Golden comparison: the JSON of every example and of a generated corpus, before and after a change.

    python bench/golden.py record [FILE]    # write the current outputs (default: bench/results/golden.json)
    python bench/golden.py compare [FILE]   # analyse again and list every difference
    python bench/golden.py numbers [FILE]   # the same, on bounds and verdicts only (not wording)

The corpus: every query of ``examples/`` (with its folder's schema and
constraints, both neighbour models, noise at ε = 1), 300 seeded random CQs with
random FDs and CDs (witnesses on), and 250 seeded random SQL aggregate queries
over a schema with CHECK bounds (filters of every kind, COUNT/SUM/AVG/MEDIAN/
MIN/MAX, GROUP BY, both neighbour models).  A refactoring must leave every
record equal; each difference is either a bug fix (say which in the commit) or
a regression.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from corpus import corpus  # noqa: E402

import cqsens  # noqa: E402
from cqsens import budget  # noqa: E402
from cqsens.errors import CqsensError  # noqa: E402

DEFAULT = ROOT / "bench" / "results" / "golden.json"
WITNESS_TIME = 0.5  # the default of cqsens.analyze
# The witness search is a budget of work (cqsens.budget.work_units); the clock stops it only
# past HARD_STOP times its budget, which a machine several times busier than a typical core
# reaches (on 2 cores at load 10 the lower bounds of 8 of the 640 analyses changed from run to
# run).  The corpus measures the code, not the machine: the clock stops a search only past
# two minutes and an analysis has no deadline, so a seed and a budget give one record on any
# machine.
TIMEOUT = None

SCHEMA = """
CREATE TABLE emp (id INTEGER PRIMARY KEY, dept INTEGER, age INTEGER CHECK (age BETWEEN 18 AND 70),
                  salary INTEGER CHECK (salary BETWEEN 0 AND 1000), name TEXT);
CREATE TABLE dept (id INTEGER PRIMARY KEY, city TEXT, budget INTEGER CHECK (budget BETWEEN 0 AND 50));
CREATE TABLE proj (pid INTEGER, emp INTEGER, hours INTEGER CHECK (hours BETWEEN 1 AND 40),
                   PRIMARY KEY (pid, emp));
"""
_FILTERS = [
    "{e}.age > 30", "{e}.age BETWEEN 20 AND 40", "{e}.name LIKE 'A%'", "{e}.salary IN (1, 2, 3)",
    "{e}.name IS NOT NULL", "NOT ({e}.age < 25)", "({e}.age < 25 OR {e}.salary > 500)",
    "{e}.salary + {e}.age < 900", "{e}.age <> 33", "{e}.dept = 3", "{e}.name = 'Bob'",
    "ABS({e}.salary - 500) < 100", "{e}.salary * 2 >= {e}.age",
]
_AGGS = ["COUNT(*)", "COUNT(DISTINCT {e}.dept)", "SUM({e}.salary)", "AVG({e}.age)",
         "MEDIAN({e}.salary)", "MIN({e}.age)", "MAX({e}.salary)", "COUNT({e}.name)"]
_DEPS = ["proj[emp->pid]<=4", "proj[pid->emp]<=6", "emp[dept->id]<=10", "proj[pid->emp]"]


def _random_sql(rng: random.Random) -> tuple[str, list[str], str]:
    """A random aggregate query, dependencies and a neighbour model."""
    tables = ["emp e"]
    where: list[str] = []
    if rng.random() < 0.6:
        tables.append("dept d")
        where.append("e.dept = d.id")
    if rng.random() < 0.4:
        tables.append("proj p")
        where.append("p.emp = e.id")
    if rng.random() < 0.2:
        tables.append("emp e2")
        where.append("e2.dept = e.dept")
    for _ in range(rng.randint(0, 3)):
        where.append(rng.choice(_FILTERS).format(e=rng.choice(["e", "e2"] if "emp e2" in tables else ["e"])))
    if "dept d" in tables and rng.random() < 0.3:
        where.append(rng.choice(["d.city = 'NY'", "d.budget < 10", "d.city IN ('NY', 'LA')"]))
    group = ""
    select: list[str] = []
    if rng.random() < 0.3:
        key = rng.choice(["e.dept", "d.city"] if "dept d" in tables else ["e.dept", "e.name"])
        group = f" GROUP BY {key}"
        select.append(key)
    for _ in range(rng.randint(1, 2)):
        select.append(rng.choice(_AGGS).format(e="e"))
    sql = f"SELECT {', '.join(select)} FROM {', '.join(tables)}"
    if where:
        sql += " WHERE " + " AND ".join(dict.fromkeys(where))
    sql += group
    deps = [d for d in _DEPS if rng.random() < 0.4]
    return sql, deps, rng.choice(["add-remove", "substitute"])


def _split(deps: list[str]) -> dict[str, list[str]]:
    return {"fds": [d for d in deps if "<=" not in d], "cds": [d for d in deps if "<=" in d]}


def cases() -> list[tuple[str, dict[str, Any]]]:
    """(id, keyword arguments of cqsens.pipeline) for the whole corpus."""
    out: list[tuple[str, dict[str, Any]]] = []
    for folder in sorted(p for p in (ROOT / "examples").iterdir() if p.is_dir()):
        schema = folder / "schema.sql"
        constraints = folder / "constraints.txt"
        for query in sorted([*folder.glob("*.sql"), *folder.glob("*.cq")]):
            if query.name in {"schema.sql", "data.sql", "data_violating.sql"}:
                continue
            for neighbor in ("add-remove", "substitute"):
                kwargs: dict[str, Any] = {
                    "source": query.read_text(), "name": query.name, "neighbor": neighbor,
                    "kind": "cq" if query.suffix == ".cq" else "sql", "epsilon": 1.0, "delta": 1e-6,
                }
                if schema.exists():
                    kwargs["schema"] = schema.read_text()
                if constraints.exists():
                    kwargs["constraints"] = str(constraints)
                out.append((f"{folder.name}/{query.name}/{neighbor}", kwargs))
    for n, (cq, sigma) in enumerate(corpus(300, seed=13)):
        fds = [str(d) for d in sigma if d.k == 1]
        cds = [str(d) for d in sigma if d.k > 1]
        out.append((f"cq{n:03d}", {"source": str(cq), "kind": "cq", "fds": fds, "cds": cds}))
    rng = random.Random(2026)
    for n in range(250):
        sql, deps, neighbor = _random_sql(rng)
        out.append((f"sql{n:03d}", {"source": sql, "kind": "sql", "schema": SCHEMA, **_split(deps),
                                    "neighbor": neighbor, "bounds": ["dept.budget=0:20"]}))
    return out


def run_case(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The JSON object of one analysis (with its witness), or the error it raised."""
    try:
        analysis = cqsens.analyze(**kwargs, witness_time=WITNESS_TIME, timeout=TIMEOUT)
    except CqsensError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    record = analysis.to_dict(witness=True)
    if isinstance(record.get("witness"), dict):
        # the databases come from a time-bounded seeded search: keep what they prove
        record["witness"] = {k: v for k, v in record["witness"].items()
                             if k in {"count_without", "count_with", "difference", "unbounded"}}
    return json.loads(json.dumps(record, default=str))


def _search_noise(before: dict[str, Any] | None, after: dict[str, Any] | None) -> bool:
    """True when two records differ only in a non-tight lower bound found by the local search."""
    if before is None or after is None or "sensitivity" not in before or "sensitivity" not in after:
        return False
    strip = {"witness", "sensitivity"}
    if {k: v for k, v in before.items() if k not in strip} != {k: v for k, v in after.items() if k not in strip}:
        return False
    b, a = dict(before["sensitivity"]), dict(after["sensitivity"])
    if b["tight"] or a["tight"]:
        return False
    b.pop("lower"), a.pop("lower")
    return b == a


_SEMANTIC = ("aggregate", "connected", "contributions", "core_minimal", "delta_str",
             "dependencies", "free", "noise", "paper", "satisfiable", "sensitivity")


def _numbers(record: dict[str, Any]) -> dict[str, Any]:
    """The bounds and verdicts of a record, without its wording."""
    if "error" in record:
        return {"error": True}
    out = {k: record.get(k) for k in _SEMANTIC}
    out["aggregates"] = [{k: v for k, v in a.items() if k not in ("rule", "rule_id")}
                         for a in record.get("aggregates", [])]
    out["witness"] = record.get("witness")
    out["unbounded_atoms"] = len(record.get("structure", {}).get("unbounded", []))
    return out


def main(argv: list[str]) -> int:
    budget.HARD_STOP, budget.HARD_STOP_MARGIN = 1_000, 120.0  # set when run, not imported
    if argv and argv[0] == "numbers":
        path = Path(argv[1]) if len(argv) > 1 else DEFAULT
        golden = json.loads(path.read_text())
        changed = searched = 0
        for case_id, kwargs in cases():
            before, after = golden.get(case_id), run_case(kwargs)
            if before is None or _numbers(before) == _numbers(after):
                continue
            if _search_noise(_numbers(before), _numbers(after)):
                searched += 1
                continue
            changed += 1
            print(f"== {case_id}: {json.dumps(_numbers(before))[:300]}")
            print(f"   now {json.dumps(_numbers(after))[:300]}")
        print(f"{changed} analyses differ in bounds or verdicts from {path.name} "
              f"({searched} more only in a time-bounded, non-tight witness search)")
        return 1 if changed else 0
    if not argv or argv[0] not in {"record", "compare"}:
        print(__doc__)
        return 2
    path = Path(argv[1]) if len(argv) > 1 else DEFAULT
    results = {case_id: run_case(kwargs) for case_id, kwargs in cases()}
    if argv[0] == "record":
        path.write_text(json.dumps(results, indent=0, sort_keys=True) + "\n")
        print(f"recorded {len(results)} analyses in {path}")
        return 0
    golden = json.loads(path.read_text())
    changed = searched = 0
    for case_id in sorted(set(golden) | set(results)):
        before, after = golden.get(case_id), results.get(case_id)
        if before == after:
            continue
        if _search_noise(before, after):
            searched += 1
            print(f"~~ {case_id}: a time-bounded witness search proved "
                  f"{before['sensitivity']['lower']} before, {after['sensitivity']['lower']} now")
            continue
        changed += 1
        print(f"== {case_id}")
        for key in sorted(set(before or {}) | set(after or {})):
            b, a = (before or {}).get(key), (after or {}).get(key)
            if b != a:
                print(f"   {key}:\n     before {json.dumps(b)[:400]}\n     after  {json.dumps(a)[:400]}")
    print(f"{changed} of {len(results)} analyses differ from {path.name} "
          f"({searched} more differ only in a time-bounded, non-tight witness search)")
    return 1 if changed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
