"""cqsens benchmark: stage times per query family and size, baselines, targets.

    python bench/run.py            # the full run (a few minutes)
    python bench/run.py --quick    # small sizes only

Families (sizes = number of atoms): chains, stars, cycles, cliques of
self-joins, TPC-H-like snowflake joins, random CQs with constants; each with
and without dependencies.  For every (family, size) the median time of each
stage — parse, chase, core, bounds (cqsens's bound and the paper's values),
witness — and the peak memory of the run.  Baselines run in the same process:
(a) sqlglot parse + qualify of the same SQL text, (b) the exhaustive
simple-path enumerator against the shortest-walk bounds, (c) a naive core
(try every endomorphism) against the CSP core.  Targets are checked at the end.
Results go to bench/results/results.md (and stages.png if matplotlib is there).
"""

from __future__ import annotations

import argparse
import itertools
import platform
import random
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import sqlglot
from sqlglot.optimizer.qualify import qualify

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import random_cq  # noqa: E402

from cqsens.batch import analyze_paths  # noqa: E402
from cqsens.engine.core import core  # noqa: E402
from cqsens.engine.homomorphism import is_homomorphism  # noqa: E402
from cqsens.engine.paths import least_cardinalities, step_graph  # noqa: E402
from cqsens.frontend.ddl import schema_from_ddl  # noqa: E402
from cqsens.frontend.parse_cq import parse_cq  # noqa: E402
from cqsens.ir.cq import CQ  # noqa: E402
from cqsens.engine.chase import chase  # noqa: E402
from cqsens.engine.core import core_result  # noqa: E402
from cqsens.engine.count import CORE_BUDGET  # noqa: E402
from cqsens.pipeline import (  # noqa: E402
    State,
    load_query,
    resolve_sigma,
    stage_bound,
    stage_paper,
)
from cqsens.witness import find_witness  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
EDGE_DDL = "CREATE TABLE E (src INTEGER, dst INTEGER, PRIMARY KEY (src, dst));"
DEGREE = ["E[1->2]<=3", "E[2->1]<=3"]
TPCH_DDL = (Path(__file__).resolve().parents[1] / "examples/tpch/schema.sql").read_text()
TPCH_CONSTRAINTS = ["orders[o_custkey->o_orderkey]<=41", "nation[n_regionkey->n_nationkey]<=5",
                    "lineitem[l_orderkey->l_linenumber]<=7"]


# -- query families: (sql text, counted description) ------------------------------

def chain(n: int) -> str:
    joins = " ".join(f"JOIN E e{i} ON e{i}.src = e{i - 1}.dst" for i in range(1, n))
    return f"SELECT COUNT(DISTINCT e0.src, e{n - 1}.dst) FROM E e0 {joins}"


def star(n: int) -> str:
    joins = " ".join(f"JOIN E e{i} ON e{i}.src = e0.src" for i in range(1, n))
    return f"SELECT COUNT(DISTINCT e0.src) FROM E e0 {joins}"


def cycle(n: int) -> str:
    if n < 2:
        return chain(n)
    joins = " ".join(f"JOIN E e{i} ON e{i}.src = e{i - 1}.dst" for i in range(1, n))
    return f"SELECT COUNT(DISTINCT e0.src) FROM E e0 {joins} WHERE e{n - 1}.dst = e0.src"


def clique(n: int) -> str:
    k = 2
    while k * (k - 1) // 2 < n:
        k += 1
    pairs = list(itertools.combinations(range(k), 2))[:n]
    tables = ", ".join(f"E p{a}_{b}" for a, b in pairs)
    conds = []
    first: dict[int, str] = {}
    for a, b in pairs:
        for node, col in ((a, "src"), (b, "dst")):
            ref = f"p{a}_{b}.{col}"
            if node in first:
                conds.append(f"{first[node]} = {ref}")
            else:
                first[node] = ref
    where = f" WHERE {' AND '.join(conds)}" if conds else ""
    return f"SELECT COUNT(DISTINCT {first[0]}) FROM {tables}{where}"


SNOWFLAKE = [
    ("customer c", None),
    ("orders o", "o.o_custkey = c.c_custkey"),
    ("nation n", "c.c_nationkey = n.n_nationkey"),
    ("region r", "n.n_regionkey = r.r_regionkey"),
    ("lineitem l", "l.l_orderkey = o.o_orderkey"),
    ("supplier s", "l.l_suppkey = s.s_suppkey"),
    ("nation n2", "s.s_nationkey = n2.n_nationkey"),
    ("region r2", "n2.n_regionkey = r2.r_regionkey"),
]


def snowflake(n: int) -> str:
    items = SNOWFLAKE[: max(1, min(n, len(SNOWFLAKE)))]
    sql = f"SELECT COUNT(DISTINCT c.c_custkey) FROM {items[0][0]}"
    for table, cond in items[1:]:
        sql += f" JOIN {table} ON {cond}"
    return sql + " WHERE c.c_mktsegment = 'BUILDING'"


def random_family(n: int, seed: int) -> str:
    rng = random.Random(seed * 1000 + n)
    cq = random_cq(rng, max_atoms=n, n_vars=max(3, n))
    return str(cq)



# -- timing ----------------------------------------------------------------------

def _median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def stage_times(text: str, *, schema: object, deps: list[str], repeat: int,
                witness: bool) -> dict[str, float]:
    """Median seconds of each stage for one query (caches cleared between runs)."""
    out: dict[str, list[float]] = {k: [] for k in ("parse", "chase", "core", "bounds", "paper", "witness")}
    for _ in range(repeat):
        from cqsens.engine import core as core_module

        core_module._core_cached.cache_clear()
        t0 = time.perf_counter()
        query = load_query(text, schema=schema)  # type: ignore[arg-type]
        cds = [d for d in deps if "<=" in d]
        fds = [d for d in deps if "<=" not in d]
        sigma, _ = resolve_sigma(query, schema=schema, fds=fds, cds=cds)  # type: ignore[arg-type]
        t1 = time.perf_counter()
        chased = chase(query.cq, sigma.fds())
        t2 = time.perf_counter()
        core_result(chased, budget=CORE_BUDGET)
        t3 = time.perf_counter()
        state = stage_bound(State(query, sigma))  # the cores are cached: this is the bounds
        t4 = time.perf_counter()
        stage_paper(state)
        t5 = time.perf_counter()
        if witness and not out["witness"]:  # one witness run per query: it is time-bounded
            counted = state.count
            find_witness(query, sigma, counted.core, upper=counted.bound.value,
                         columns=query.columns, time_budget=0.25, bound=counted.bound)
        t6 = time.perf_counter()
        for key, value in zip(out, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5)):
            if key != "witness" or not out["witness"]:
                out[key].append(value)
    return {k: statistics.median(v) for k, v in out.items()}


def sqlglot_baseline(sql: str, sg_schema: dict[str, dict[str, str]], repeat: int) -> float:
    def run() -> None:
        expr = sqlglot.parse_one(sql)
        qualify(expr, schema=sg_schema)

    return _median_time(run, repeat)


def naive_core(cq: CQ) -> CQ:
    """Try every endomorphism fixing the free variables; keep the smallest image."""
    atoms = cq.atoms
    free = set(cq.free)
    variables = sorted({v for a in atoms for v in a.variables()} - free, key=lambda v: v.name)
    elements = sorted({t for a in atoms for t in a.terms}, key=str)
    best = atoms
    for images in itertools.product(elements, repeat=len(variables)):
        mapping = {v: v for v in free}
        mapping.update(zip(variables, images))
        if is_homomorphism(mapping, atoms, atoms):
            image = frozenset(a.substitute(mapping) for a in atoms)
            if len(image) < len(best):
                best = image
    return cq.with_atoms(best)


# -- main -------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1000, help="queries in the batch benchmark")
    parser.add_argument("--only-batch", action="store_true", help="run the batch benchmark only")
    args = parser.parse_args()
    sizes = [2, 5, 10] if args.quick else [2, 5, 10, 20, 40, 60]
    edge_schema = schema_from_ddl(EDGE_DDL)
    tpch_schema = schema_from_ddl(TPCH_DDL)
    sg_edge = {"E": {"src": "INT", "dst": "INT"}}
    sg_tpch = {r.name: {c: (t or "INT") for c, t in zip(r.columns, r.types)} for r in tpch_schema.relations}
    RESULTS.mkdir(exist_ok=True)
    tracemalloc.start()
    lines: list[str] = []
    say = lambda s: (print(s), lines.append(s))  # noqa: E731

    say(f"# cqsens benchmark\n\nmachine: {platform.processor() or platform.machine()}, "
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{sys.platform}; median of {args.repeat} runs; times in ms\n")
    say("| family | atoms | Σ | parse | chase | core | bounds | paper | witness | total (no witness) | sqlglot parse+qualify | ratio |")
    say("|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    families: list[tuple[str, Callable[[int], str], object, list[str], dict[str, dict[str, str]]]] = [
        ("chain", chain, edge_schema, DEGREE, sg_edge),
        ("star", star, edge_schema, DEGREE, sg_edge),
        ("cycle", cycle, edge_schema, DEGREE, sg_edge),
        ("clique", clique, edge_schema, DEGREE, sg_edge),
        ("snowflake", snowflake, tpch_schema, TPCH_CONSTRAINTS, sg_tpch),
        ("random", lambda n: random_family(n, 1), None, [], {}),
    ]
    for name, make, schema, deps, sg in [] if args.only_batch else families:
        for size in sizes:
            if name == "snowflake" and size > len(SNOWFLAKE):
                continue
            text = make(size)
            for use in (False, True):
                d = deps if use else []
                if name == "random" and use:
                    cq = parse_cq(text)
                    d = [f"{r}[1->2]<=2" for r, a in sorted(cq.relations().items()) if a >= 2]
                witness = size <= 10
                t = stage_times(text, schema=schema, deps=d, repeat=args.repeat, witness=witness)
                total = sum(v for k, v in t.items() if k != "witness")
                base = sqlglot_baseline(text, sg, args.repeat) if sg else float("nan")
                ratio = total / base if sg else float("nan")
                rows.append((name, size, use, t, total, base))
                ms = {k: f"{v * 1000:.1f}" for k, v in t.items()}
                say(f"| {name} | {size} | {'yes' if use else 'no'} | {ms['parse']} | {ms['chase']} | "
                    f"{ms['core']} | {ms['bounds']} | {ms['paper']} | "
                    f"{ms['witness'] if witness else '–'} | {total * 1000:.1f} | "
                    f"{base * 1000:.2f} | {ratio:.1f} |")

    # baseline (b): enumeration vs shortest walks at 15 atoms
    say("\n## Shortest walks against the exhaustive simple-path enumeration\n")
    say("| query (15 atoms) | exhaustive enumeration (ms) | shortest walks (ms) | speed-up |")
    say("|---|---|---|---|")
    speedups = []
    dense = "Q(x0, x5) :- " + ", ".join(
        f"U(x{a}, x{b}, x{(a + b) % 7})" for a, b in itertools.combinations(range(7), 2))
    dense_cq = parse_cq(dense)
    dense_atoms = sorted(dense_cq.relation_atoms(), key=str)[:15]
    dense15 = str(dense_cq.with_atoms(dense_atoms))
    for label, text, schema, deps in (
        ("chain", chain(15), edge_schema, DEGREE),
        ("cycle", cycle(15), edge_schema, DEGREE),
        ("clique of self-joins", clique(15), edge_schema, DEGREE),
        ("dense ternary self-joins", dense15, None, ["U[1->2]<=2", "U[2->3]<=2", "U[3->1]<=2"]),
    ):
        q = load_query(text, schema=schema)
        sigma, _ = resolve_sigma(q, schema=schema, fds=[], cds=deps)
        c = core(q.cq)

        from cqsens.engine import paths as paths_module

        def enumerate_literal() -> None:
            for atom in c.relation_atoms():
                for x in c.free:
                    try:
                        paths_module._enumerate(c, sigma, atom, x, 5_000_000, exhaustive=True)
                    except Exception:  # noqa: BLE001 - budget
                        pass

        def walks() -> None:
            graph = step_graph(c, sigma)
            consts = sorted(c.constants(), key=lambda k: k.sort_key())
            for atom in c.relation_atoms():
                least_cardinalities(graph, [*atom.terms, *consts])

        te = _median_time(enumerate_literal, 1)
        tw = _median_time(walks, args.repeat)
        speedups.append(te / tw)
        say(f"| {label} | {te * 1000:.1f} | {tw * 1000:.2f} | {te / tw:.0f}× |")

    # baseline (c): naive core vs CSP core
    say("\n## CSP core against trying every endomorphism\n")
    say("| query | variables | naive (ms) | CSP (ms) | speed-up |")
    say("|---|---|---|---|---|")
    for k in () if args.only_batch else (2, 3, 4):
        cq = parse_cq("Q(x0) :- " + ", ".join(f"E(x{i}, x{i + 1})" for i in range(k))
                      + ", " + ", ".join(f"E(y{i}, y{i + 1})" for i in range(2)))
        from cqsens.engine import core as core_module

        def csp() -> None:
            core_module._core_cached.cache_clear()
            core(cq)

        tn = _median_time(lambda: naive_core(cq), 1)
        tc = _median_time(csp, args.repeat)
        assert len(naive_core(cq).atoms) == len(core(cq).atoms)
        say(f"| path {k} + path 2 | {k + 3} | {tn * 1000:.1f} | {tc * 1000:.2f} | {tn / tc:.0f}× |")

    # batch (without tracemalloc: forked workers would inherit its overhead)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    say(f"\n## Batch: {args.batch} generated queries, `--jobs 2`\n")
    with tempfile.TemporaryDirectory() as tmp:
        rng = random.Random(7)
        for i in range(args.batch):
            if i % 4 == 0:
                text = snowflake(rng.randint(2, 8)) + ("" if i % 8 else " AND o.o_orderstatus = 'F'")
                folder = Path(tmp) / "tpch"
            else:
                text = str(random_cq(rng, max_atoms=rng.randint(2, 8), n_vars=6))
                folder = Path(tmp) / "cq"
            folder.mkdir(exist_ok=True)
            (folder / f"q{i:04d}.{'sql' if folder.name == 'tpch' else 'cq'}").write_text(text)
        (Path(tmp) / "tpch" / "schema.sql").write_text(TPCH_DDL)
        (Path(tmp) / "tpch" / "constraints.txt").write_text("\n".join(TPCH_CONSTRAINTS))
        start = time.perf_counter()
        result = analyze_paths([tmp], jobs=2, timeout=10)
        batch_time = time.perf_counter() - start
        s = result.summary()
        say(f"{s['total']} queries in {batch_time:.1f} s with --jobs 2 (witnesses included): "
            f"{s['bounded']} bounded, {s['unbounded']} unbounded, {s['errors']} errors, "
            f"{s['timed_out']} timed out, {s['tight']} tight")

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    rss = max(rss, workers)
    say(f"\npeak traced Python memory {traced_peak / 2**20:.0f} MB; peak RSS {rss:.0f} MB "
        f"(the benchmark process and the batch's worker processes)")

    # targets
    say("\n## Targets\n")
    tpch = [r for r in rows if r[0] == "snowflake" and r[1] <= 8]
    tpch_ratio = statistics.median(r[4] / r[5] for r in tpch) if tpch else float("nan")
    big = [r for r in rows if r[0] in ("chain", "star", "cycle") and r[1] == 40]
    big_core_bounds = max((r[3]["core"] + r[3]["bounds"] for r in big), default=float("nan"))
    checks = [
        ("TPC-H-like (≤ 8 atoms): analysis without witness ≤ 5× sqlglot parse+qualify (median)",
         f"{tpch_ratio:.1f}×", tpch_ratio <= 5),
        ("40-atom chains, stars, cycles: core + bounds < 1 s",
         f"{big_core_bounds:.2f} s" if big else "not run (--quick)", bool(big) and big_core_bounds < 1),
        ("shortest walks ≥ 100× faster than exhaustive enumeration at 15 atoms",
         f"{max(speedups, default=0):.0f}× on dense self-joins, "
         f"{min(speedups, default=0):.0f}× on the sparsest", max(speedups, default=0) >= 100),
        ("1,000-query batch < 60 s with --jobs 2", f"{batch_time:.1f} s ({args.batch} queries)",
         batch_time < 60 * args.batch / 1000),
        ("peak memory < 300 MB", f"{rss:.0f} MB RSS", rss < 300),
    ]
    say("| target | measured | met |")
    say("|---|---|---|")
    for label, value, ok in checks:
        say(f"| {label} | {value} | {'yes' if ok else 'NO'} |")
    (RESULTS / "results.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 5))
        for name in ("chain", "star", "cycle", "clique", "snowflake", "random"):
            pts = sorted((r[1], r[4] * 1000) for r in rows if r[0] == name and r[2])
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        ax.set_xlabel("atoms")
        ax.set_ylabel("analysis without witness (ms, with Σ)")
        ax.set_yscale("log")
        ax.legend()
        ax.grid(alpha=0.3)
        fig.savefig(RESULTS / "stages.png", dpi=110, bbox_inches="tight")
        print(f"plot: {RESULTS / 'stages.png'}")
    except ImportError:
        print("matplotlib not installed: no plot (pip install matplotlib)")


if __name__ == "__main__":
    main()
