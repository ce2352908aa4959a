"""Tightness over the bundled corpora: upper bound, proven lower bound, FLEX's elastic sensitivity.

    python bench/tightness.py [-o bench/results/tightness.md] [--time SECONDS] [--retry SECONDS]

The corpus (row level, add-remove neighbours):

* every query of ``examples/{hospital,shop,social,tpch}`` with its folder's
  ``schema.sql`` and ``constraints.txt``;
* the 22 TPC-H queries of ``examples/tpch/queries`` with ``constraints.txt``;
* the three composite-key joins of issue #25 (pairs of lines of one order,
  q12-shaped, q3-shaped) with ``constraints_flex.txt`` (every fan-out stated
  once per column, as FLEX's max-frequency metrics give them);

and, apart, the 22 TPC-H queries under their standard configuration
(``examples/tpch/standard/cqsens.toml``: the customer as the person).

**Exact value.**  The true global sensitivity is known for an entry when a
witness — two neighbouring databases that satisfy every declared constraint,
checked by ``is_witness`` — changes the answer by the upper bound (``lower ==
upper``; for ∞, a proven growing family).  Each entry is analysed with the
default search (``--time``, 0.5 s); an entry left open is searched again with
``--retry`` seconds.  The entries still open are listed with the rule that gives
their upper bound and the best lower bound: their exact value lies between the
two and is not known.

**FLEX.**  The elastic sensitivity of Johnson, Near and Song ("Towards
Practical Differential Privacy for SQL Queries", VLDB 2018, Definition 6) at
distance 0, with each max-frequency ``mf(a, T)`` taken as the most rows of ``T``
that the declared constraints allow to share a value of ``a`` (1 for a key,
``k`` for ``T[a->*]<=k`` or for ``T[a->b]<=k`` when ``{a, b}`` is a key, products
along declared fan-outs).  It is a bound over every database that satisfies the
constraints, for one added or removed row.  The join tree is the most
favourable to FLEX: the least value over every left-deep order of the atoms and
every choice of join column.  It is defined (as in FLEX) for a single COUNT or
COUNT(DISTINCT) (counted as COUNT) without GROUP BY over inner equi-joins;
elsewhere the column says ``–``.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import cqsens  # noqa: E402
from cqsens import budget  # noqa: E402
from cqsens.analysis import Analysis  # noqa: E402
from cqsens.errors import CqsensError  # noqa: E402
from cqsens.frontend.ddl import load_schema  # noqa: E402
from cqsens.ir.cq import CQ, AggregateQuery, Atom, Var  # noqa: E402
from cqsens.ir.dependencies import Sigma  # noqa: E402
from cqsens.ir.exact import text  # noqa: E402
from cqsens.ir.schema import Relation, Schema  # noqa: E402
from cqsens.pipeline import analyze_with  # noqa: E402
from cqsens.settings import Settings  # noqa: E402

__all__ = ["Entry", "flex_sensitivity", "max_frequency", "run", "table"]

EXAMPLES = ROOT / "examples"
TPCH = EXAMPLES / "tpch" / "queries"
STANDARD = EXAMPLES / "tpch" / "standard" / "cqsens.toml"
#: the composite-key joins of issue #25 (tests/test_tightness.py: COMPOSITE_KEY_JOINS)
COMPOSITE = {
    "pairs of lines of one order":
        "SELECT COUNT(*) FROM lineitem l1 JOIN lineitem l2 ON l1.l_orderkey = l2.l_orderkey",
    "q12-shaped":
        "SELECT l_shipmode, COUNT(*) FROM orders, lineitem WHERE o_orderkey = l_orderkey"
        " AND l_shipmode IN ('MAIL', 'SHIP') GROUP BY l_shipmode",
    "q3-shaped":
        "SELECT COUNT(DISTINCT l_orderkey, o_orderdate, o_shippriority) FROM customer, orders,"
        " lineitem WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey"
        " AND l_orderkey = o_orderkey",
}
#: Exact values argued by hand where no witness reaches the upper bound: (corpus, query) →
#: (exact, the argument).  The script checks each against the analysis: the proven lower
#: bound must not exceed it (else the argument is wrong) and the upper bound must not be
#: below it (else the bound is unsound).
KNOWN: dict[tuple[str, str], tuple[Number, str]] = {
    ("hospital", "doctor_pairs_per_patient.sql"): (
        Fraction(2), "a PatDoc row (p, d) pairs with the other doctors of p, at most 2 "
        "(PatDoc[pat->doc]<=3), each pair counted once (a.doc < b.doc); the witness reaches 2"),
    ("hospital", "oncology.cq"): (
        Fraction(3), "the query of oncology.sql, whose witness reaches 3 (here the search's "
        "database breaks the CHECK on age, a column the CQ leaves free)"),
    ("hospital", "ny_patients.cq"): (
        math.inf, "as ny_patients.sql: no constraint bounds the patients of a hospital, and "
        "one Hos(h, 'NY') row brings every oncology patient of h"),
    ("hospital", "ny_patients.sql"): (
        math.inf, "no constraint bounds the patients of a hospital, and one Hos(h, 'NY') "
        "row brings every oncology patient of h"),
    ("hospital", "same_hospital_pairs.sql"): (
        math.inf, "no constraint bounds the patients of a hospital: a patient added to a "
        "hospital of n patients adds 2n pairs"),
    ("social", "same_city_pairs.sql"): (
        math.inf, "no constraint bounds the people of a city: a person added to a city of n "
        "people adds 2n pairs"),
    ("tpch/queries", "q12.sql"): (
        Fraction(7), "the two CASE conditions are complementary (at most one holds, none on "
        "NULL): an order's at most 7 lines each add 1 to one column of their group; a line "
        "adds 1; the witness reaches 7"),
    ("tpch standard", "q12.sql"): (
        Fraction(287), "as row-level q12: a customer's at most 41 orders of at most 7 lines, "
        "each line in one of the two complementary columns; the witness reaches 287"),
}
# as bench/golden.py: the witness search stops at its work budget, not by the clock, so the
# table does not depend on the machine's load
#: at most this many atoms for the search over every join order
MAX_ORDER_ATOMS = 8
Number = Fraction | float  # float only for math.inf


@dataclass(frozen=True)
class Entry:
    """One analysed query of the corpus."""

    corpus: str
    name: str
    upper: Number | None  # None: refused
    lower: Number | None
    rules: str
    flex: Number | None
    seconds: float
    retried: bool = False
    refused: str = ""
    exact: Number | None = None  # the true sensitivity, when known
    why: str = ""  # how it is known: "witness", or the argument of KNOWN

    @property
    def exact_known(self) -> bool:
        """The true sensitivity is known: a witness reaches the upper bound, or KNOWN."""
        return self.exact is not None

    @property
    def tight(self) -> bool:
        """The upper bound is the true sensitivity."""
        return self.exact is not None and self.upper == self.exact


def with_exact(entry: Entry) -> Entry:
    """``entry`` with its exact value: the upper bound when a witness reaches it, else KNOWN's
    (checked: the proven lower bound ≤ exact ≤ the upper bound)."""
    if entry.upper is None:
        return entry
    if entry.lower is not None and entry.lower == entry.upper:
        return dataclasses.replace(entry, exact=entry.upper, why="witness")
    known = KNOWN.get((entry.corpus, entry.name))
    if known is None:
        return entry
    exact, why = known
    if entry.lower is not None and entry.lower > exact:
        raise AssertionError(f"{entry.corpus}/{entry.name}: proven {entry.lower} > {exact}")
    if entry.upper < exact:
        why = f"UNSOUND: upper {_show(entry.upper)} below the exact value; {why}"
    return dataclasses.replace(entry, exact=exact, why=why)


# --- FLEX's elastic sensitivity at distance 0 --------------------------------------------


def _keys(relation: Relation | None, arity: int) -> list[tuple[int, ...]]:
    if relation is None:  # a CQ without a schema: relations are sets, every column a key
        return [tuple(range(arity))]
    keys = [(k,) for k in relation.keys] + list(relation.composite_keys)
    if relation.primary_key:
        keys.append(relation.primary_key)
    if relation.distinct_rows:
        keys.append(tuple(range(arity)))
    return keys


def max_frequency(sigma: Sigma, name: str, relation: Relation | None, arity: int,
                  i: int) -> Number:
    """The most rows of a table that can share a value at position ``i`` (0-based) under Σ:
    distinct values per value of ``i`` multiply along declared fan-outs, and the rows are at
    most the distinct values of a key (or ``R[p->*]<=k`` rows per value of ``p``)."""
    fan: dict[int, Number] = {i: Fraction(1)}
    changed = True
    while changed:  # least products along fan-outs (weights ≥ 1: a fixpoint is reached)
        changed = False
        for d in sigma.deps:
            if d.relation == name and d.i in fan and d.j >= 0:
                cost = fan[d.i] * d.k
                if cost < fan.get(d.j, math.inf):
                    fan[d.j], changed = cost, True
    best: Number = math.inf
    for key in _keys(relation, arity):
        if all(c in fan for c in key):
            best = min(best, math.prod((fan[c] for c in key), start=Fraction(1)))
    for p, cost in fan.items():
        rows = sigma.rows_weight(name, p)
        if rows != math.inf:
            best = min(best, cost * int(rows))
    return best


def _atom_frequencies(atom: Atom, sigma: Sigma, schema: Schema | None) -> dict[Var, Number]:
    relation = schema.find(atom.relation) if schema is not None else None
    out: dict[Var, Number] = {}
    for i, term in enumerate(atom.terms):
        if isinstance(term, Var):
            mf = max_frequency(sigma, atom.relation, relation, len(atom.terms), i)
            out[term] = min(out.get(term, math.inf), mf)
    return out


def _joins(order: tuple[Atom, ...], freqs: Mapping[Atom, dict[Var, Number]]) -> Iterator[Number]:
    """Ŝ of every join tree along ``order`` (one per choice of join column at each step)."""
    def step(k: int, stability: Number, mf: dict[Var, Number], seen: frozenset[str]
             ) -> Iterator[Number]:
        if k == len(order):
            yield stability
            return
        atom = order[k]
        mine = freqs[atom]
        shared = set(mf) & set(mine)
        if not shared:
            yield math.inf  # a cross product: FLEX has no max frequency for it
            return
        for x in sorted(shared, key=str):
            left, right = mf[x], mine[x]
            if atom.relation in seen:  # r1 and r2 share an ancestor table: a self-join
                new = left + right * stability + stability
            else:
                new = max(left, right * stability)
            joined = {v: f * right for v, f in mf.items()}
            for v, f in mine.items():
                joined[v] = min(joined.get(v, math.inf), f * left)
            yield from step(k + 1, new, joined, seen | {atom.relation})

    first = order[0]
    yield from step(1, Fraction(1), dict(freqs[first]), frozenset({first.relation}))


def flex_sensitivity(cq: CQ, sigma: Sigma, schema: Schema | None) -> Number:
    """FLEX's elastic sensitivity at distance 0 of COUNT over ``cq``'s join, with the
    declared max frequencies; the least over join orders (left-deep) and join columns."""
    atoms = sorted((a for a in cq.atoms if not a.is_filter), key=str)
    if not atoms:
        return Fraction(0)
    freqs = {a: _atom_frequencies(a, sigma, schema) for a in atoms}
    orders = (itertools.permutations(atoms) if len(atoms) <= MAX_ORDER_ATOMS
              else iter([tuple(atoms)]))
    best: Number = math.inf
    for order in orders:
        for value in _joins(order, freqs):
            best = min(best, value)
    return best


def _plain_count(a: Analysis) -> bool:
    query = a.query_obj
    code = [line.split("--")[0] for line in a.query.splitlines()
            if not line.lstrip().startswith(("--", "%"))]
    sql = " ".join(" ".join(code).upper().split())
    unsupported = ("LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "OUTER JOIN", "UNION", "EXCEPT",
                   "INTERSECT", "EXISTS", "(SELECT", "( SELECT", "LIMIT")
    return (isinstance(query, AggregateQuery) and not a.stages and len(query.aggregates) == 1
            and query.aggregates[0].kind in {"count", "count_distinct"} and not query.group_by
            and not query.opaque_filters and not sql.startswith("WITH")
            and not any(u in sql for u in unsupported))


# --- the corpus ----------------------------------------------------------------------------


def _number(value: object) -> Number | None:
    if value is None:
        return None
    if value == math.inf:
        return math.inf
    return Fraction(str(value)) if not isinstance(value, (int, Fraction)) else Fraction(value)


def _rules(a: Analysis) -> str:
    ids = [r.derivation.rule.value for r in a.aggregates]
    if a.derivation is not None:
        ids.append(a.derivation.rule.value)
    return ", ".join(dict.fromkeys(ids))


def _analyse(corpus: str, name: str, source: str | Path, *, schema: Path | None,
             constraints: Path | None, budget: float, retry: float,
             settings: Settings | None = None) -> Entry:
    def once(seconds: float) -> Analysis:
        if settings is not None:
            return analyze_with(Path(source), dataclasses.replace(
                settings, witness_time=seconds, timeout=None))
        return cqsens.analyze(source, schema=schema, constraints=constraints,
                              witness_time=seconds, timeout=None)

    start = time.perf_counter()
    try:
        a = once(budget)
    except CqsensError as exc:
        first = str(exc).splitlines()[0]
        return Entry(corpus, name, None, None, "", None, time.perf_counter() - start,
                     refused=first.split(": ", 1)[-1][:90])
    retried = False
    if a.lower is None or a.lower != a.upper:
        again = once(retry)
        retried = True
        if again.lower is not None and (a.lower is None or again.lower > a.lower):
            a = again
    elapsed = time.perf_counter() - start
    parsed = load_schema(schema) if schema is not None else None
    flex = flex_sensitivity(a.cq, a.sigma, parsed) if _plain_count(a) else None
    return with_exact(Entry(corpus, name, _number(a.upper), _number(a.lower), _rules(a), flex,
                            elapsed, retried))


def _examples() -> Iterator[tuple[str, str, Path, Path | None, Path | None]]:
    for folder in ("hospital", "shop", "social", "tpch"):
        base = EXAMPLES / folder
        schema, constraints = base / "schema.sql", base / "constraints.txt"
        for query in sorted([*base.glob("*.sql"), *base.glob("*.cq")]):
            if query.name in {"schema.sql", "data.sql", "data_violating.sql"}:
                continue
            yield (folder, query.name, query, schema if schema.exists() else None,
                   constraints if constraints.exists() else None)
    for query in sorted(TPCH.glob("q*.sql")):
        yield "tpch/queries", query.name, query, TPCH / "schema.sql", TPCH / "constraints.txt"


def run(budget: float = 0.5, retry: float = 5.0, *, verbose: bool = True
        ) -> tuple[list[Entry], list[Entry]]:
    """(the row-level corpus, the 22 TPC-H queries under the standard configuration)."""
    rows: list[Entry] = []
    for corpus, name, path, schema, constraints in _examples():
        rows.append(_analyse(corpus, name, path, schema=schema, constraints=constraints,
                             budget=budget, retry=retry))
        if verbose:
            print(_line(rows[-1]), flush=True)
    for name, sql in COMPOSITE.items():
        rows.append(_analyse("tpch flex-style", name, sql, schema=TPCH / "schema.sql",
                             constraints=TPCH / "constraints_flex.txt", budget=budget,
                             retry=retry))
        if verbose:
            print(_line(rows[-1]), flush=True)
    settings = Settings.from_toml(STANDARD)
    standard: list[Entry] = []
    for query in sorted(TPCH.glob("q*.sql")):
        standard.append(_analyse("tpch standard", query.name, query, schema=None,
                                 constraints=None, budget=budget, retry=retry,
                                 settings=settings))
        if verbose:
            print(_line(standard[-1]), flush=True)
    return rows, standard


# --- the page ------------------------------------------------------------------------------


def _show(value: Number | None) -> str:
    if value is None:
        return "–"
    return "∞" if value == math.inf else text(value)


def _line(e: Entry) -> str:
    if e.refused:
        return f"{e.corpus}/{e.name}: refused ({e.refused})"
    return (f"{e.corpus}/{e.name}: upper {_show(e.upper)} lower {_show(e.lower)} "
            f"flex {_show(e.flex)} [{e.rules}] {e.seconds:.2f}s")


def _pct(n: int, d: int) -> str:
    return f"{n} of {d} ({100 * n / d:.0f} %)" if d else "0 of 0"


def _reason(e: Entry) -> str:
    if e.why == "witness":
        return "a witness reaches it"
    return e.why


def table(rows: list[Entry], standard: list[Entry], *, budget: float, retry: float) -> str:
    """The Markdown page."""
    analysed = [e for e in rows if not e.refused]
    known = [e for e in analysed if e.exact_known]
    tight = [e for e in known if e.tight]
    loose = [e for e in known if not e.tight]
    open_ = [e for e in analysed if not e.exact_known]
    flexed = [e for e in analysed if e.flex is not None]
    below = [e for e in flexed if e.upper is not None and e.flex is not None
             and e.upper <= e.flex]
    strictly = [e for e in below if e.upper is not None and e.flex is not None
                and e.upper < e.flex]
    std_proven = [e for e in standard if e.why == "witness"]
    std_analysed = [e for e in standard if not e.refused]
    lines = [
        "# Tightness over the bundled corpora (bench/tightness.py)", "",
        f"Witness search {budget} s per query, {retry} s again for an entry left open; "
        "row level, add-remove neighbours (the TPC-H standard configuration: the customer "
        "as the person).  The exact value is known when a witness reaches the upper bound, "
        "or by the argument given below (bench/tightness.py, KNOWN).", "",
        "| measure | value |", "|---|---|",
        f"| entries | {len(rows)} ({len(analysed)} analysed, "
        f"{len(rows) - len(analysed)} refused) |",
        f"| exact value known | {_pct(len(known), len(analysed))}: "
        f"{sum(e.why == 'witness' for e in known)} by a witness, "
        f"{sum(e.why != 'witness' for e in known)} by an argument |",
        f"| upper == exact, where the exact value is known | {_pct(len(tight), len(known))} |",
        f"| open (lower < upper, exact value unknown) | {len(open_)} |",
        f"| FLEX defined (one COUNT, no GROUP BY, inner equi-joins) | {len(flexed)} |",
        f"| upper ≤ FLEX | {_pct(len(below), len(flexed))}, strictly below on "
        f"{len(strictly)} |",
        f"| TPC-H standard configuration: proven tight (a witness reaches the upper bound) | "
        f"{_pct(len(std_proven), len(standard))}; {len(std_analysed)} analysed |",
        "", "## Upper above the exact value", "",
        "| corpus | query | upper | exact | lower | rule of the bound | why the exact value |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for e in [*loose, *(e for e in standard if e.exact_known and not e.tight)]:
        lines.append(f"| {e.corpus} | {e.name} | {_show(e.upper)} | {_show(e.exact)} | "
                     f"{_show(e.lower)} | {e.rules} | {_reason(e)} |")
    lines += ["", "## Open entries (exact value unknown: between the lower and upper bound)",
              "", "| corpus | query | upper | lower | rule of the bound |",
              "|---|---|---:|---:|---|"]
    for e in [*open_, *(e for e in standard if not e.refused and not e.exact_known)]:
        lines.append(f"| {e.corpus} | {e.name} | {_show(e.upper)} | {_show(e.lower)} | "
                     f"{e.rules} |")
    above = [e for e in flexed if e.upper is not None and e.flex is not None
             and e.upper > e.flex]
    if above:
        lines += ["", "## Upper above FLEX", "", "| corpus | query | upper | FLEX |",
                  "|---|---|---:|---:|"]
        lines += [f"| {e.corpus} | {e.name} | {_show(e.upper)} | {_show(e.flex)} |"
                  for e in above]
    lines += ["", "## Every entry", "",
              "| corpus | query | upper | lower | exact | FLEX | rule of the bound | time (s) |",
              "|---|---|---:|---:|---:|---:|---|---:|"]
    for e in [*rows, *standard]:
        if e.refused:
            lines.append(f"| {e.corpus} | {e.name} | refused: {e.refused.replace('|', '/')} "
                         "| | | | | |")
            continue
        exact = _show(e.exact) if e.exact_known else "?"
        lines.append(f"| {e.corpus} | {e.name} | {_show(e.upper)} | {_show(e.lower)} | "
                     f"{exact} | {_show(e.flex)} | {e.rules} | {e.seconds:.2f} |")
    argued = [e for e in [*rows, *standard] if e.exact_known and e.why != "witness"]
    if argued:
        lines += ["", "## Exact values known by an argument", "",
                  "| corpus | query | exact | argument |", "|---|---|---:|---|"]
        lines += [f"| {e.corpus} | {e.name} | {_show(e.exact)} | {e.why} |" for e in argued]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    budget.HARD_STOP, budget.HARD_STOP_MARGIN = 1_000, 120.0  # set when run, not imported
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path,
                        default=ROOT / "bench" / "results" / "tightness.md")
    parser.add_argument("--time", type=float, default=0.5)
    parser.add_argument("--retry", type=float, default=5.0)
    args = parser.parse_args(argv)
    rows, standard = run(args.time, args.retry)
    page = table(rows, standard, budget=args.time, retry=args.retry)
    args.output.write_text(page)
    sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
