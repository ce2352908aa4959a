"""How often the witness meets the upper bound, on a seeded random corpus.

    python bench/witness_tightness.py [N] [--time SECONDS]

Prints the share of (query, Σ) pairs with lower == upper, the gaps where the
lower bound stays below, and the median time per witness search.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import corpus  # noqa: E402

from cqsens.pipeline import analyze  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else 500
    budget = float(sys.argv[sys.argv.index("--time") + 1]) if "--time" in sys.argv else 0.5
    tight = below = unbounded_proven = 0
    gaps: list[tuple[str, object, object]] = []
    times: list[float] = []
    for cq, sigma in corpus(n):
        fds = [d for d in sigma if d.k == 1]
        cds = [d for d in sigma if d.k > 1]
        start = time.perf_counter()
        a = analyze(str(cq), fds=fds, cds=cds, witness_time=budget)
        times.append(time.perf_counter() - start)
        if a.tight:
            tight += 1
            unbounded_proven += a.upper == math.inf
        else:
            below += 1
            gaps.append((str(a.core), a.lower, a.upper))
    print(f"corpus: {n} random (query, Σ) pairs, seed 2016, local search {budget}s")
    print(f"tight (lower == upper): {tight} ({100 * tight / n:.1f} %), "
          f"of which unbounded with a proven growing family: {unbounded_proven}")
    print(f"lower below upper: {below} ({100 * below / n:.1f} %)")
    finite = [(lo, up) for _, lo, up in gaps if up != math.inf and lo is not None]
    if finite:
        ratios = sorted(up / lo for lo, up in finite)
        print(f"  finite upper: {len(finite)}, upper/lower ratio median {statistics.median(ratios):.2f}, "
              f"max {max(ratios):.2f}")
    inf_gaps = [(lo, up) for _, lo, up in gaps if up == math.inf]
    if inf_gaps:
        print(f"  unbounded but no proof for every N: {len(inf_gaps)} "
              f"(largest verified differences: {sorted(lo for lo, _ in inf_gaps)[-5:]})")
    print(f"time per analysis with witness: median {statistics.median(times) * 1000:.1f} ms, "
          f"max {max(times) * 1000:.0f} ms")
    for core, lo, up in gaps[:15]:
        print(f"    {core}   lower {lo}  upper {up}")


if __name__ == "__main__":
    main()
