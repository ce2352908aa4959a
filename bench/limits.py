"""Large inputs within their time targets (issue: hostile input).

    python bench/limits.py

Times, with the witness search on and the default time limit:
- a 200-atom chain CQ (target < 2 s);
- a 200-way SQL self-join (target < 5 s);
- COUNT(*) over a 2,000-column table (target < 2 s).
"""

from __future__ import annotations

import time

import cqsens


def chain_cq(n: int) -> str:
    return "Q(x0) :- " + ", ".join(f"R(x{i}, x{i + 1})" for i in range(n))


def self_join_sql(n: int) -> str:
    tables = ", ".join(f"E e{i}" for i in range(n))
    where = " AND ".join(f"e{i}.dst = e{i + 1}.src" for i in range(n - 1))
    return f"SELECT COUNT(*) FROM {tables} WHERE {where}"


def wide_table(n: int) -> tuple[str, str]:
    columns = ", ".join(f"c{i} INTEGER" for i in range(n))
    return f"CREATE TABLE W (id INTEGER PRIMARY KEY, {columns});", "SELECT COUNT(*) FROM W w"


def timed(label: str, target: float, **kwargs: object) -> tuple[str, float, float, str]:
    start = time.perf_counter()
    try:
        a = cqsens.analyze(**kwargs)  # type: ignore[arg-type]
        outcome = f"upper {a.upper}, lower {a.lower}"
    except cqsens.CqsensError as exc:
        outcome = f"{type(exc).__name__}: {exc}"
    return label, time.perf_counter() - start, target, outcome


def main() -> None:
    ddl, sql = wide_table(2000)
    rows = [
        timed("200-atom chain CQ", 2.0, source=chain_cq(200), kind="cq"),
        timed("200-way SQL self-join", 5.0, source=self_join_sql(200),
              schema="CREATE TABLE E (src INTEGER, dst INTEGER);"),
        timed("COUNT(*) over 2,000 columns", 2.0, source=sql, schema=ddl),
    ]
    print("| input | seconds | target | met | result |")
    print("|---|---|---|---|---|")
    for label, seconds, target, outcome in rows:
        print(f"| {label} | {seconds:.2f} | < {target:g} s | {'yes' if seconds < target else 'no'} "
              f"| {outcome[:80]} |")


if __name__ == "__main__":
    main()
