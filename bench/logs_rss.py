"""Memory of a long log: stream N records (default 1,000,000, from 5,000 shapes) through
`cqsens report LOG -o out.jsonl --cache FILE --jobs 2 --no-lower`, sampling every 10 s the
RSS of the command's whole process tree and of its largest process.

    python bench/logs_rss.py [N]

The numbers of a run are pasted into bench/results/logs.md by hand.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import logs as bench_logs  # noqa: E402


def tree_rss(pid: int) -> tuple[int, int]:
    """(total, largest) RSS in MB of ``pid`` and its descendants."""
    listing = subprocess.run(["ps", "-o", "pid=,ppid=,rss=", "-e"], capture_output=True,
                             text=True, check=True).stdout
    rows = [tuple(map(int, line.split())) for line in listing.splitlines() if line.strip()]
    tree = {pid}
    grew = True
    while grew:
        grew = False
        for child, parent, _ in rows:
            if parent in tree and child not in tree:
                tree.add(child)
                grew = True
    sizes = [rss for child, _, rss in rows if child in tree]
    return sum(sizes) // 1024, max(sizes, default=0) // 1024


def main() -> None:
    records = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    folder = Path(tempfile.mkdtemp())
    log = folder / "log.jsonl"
    bench_logs.write_log(log, records, 5000)
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cqsens", "report", str(log), "--schema", str(bench_logs.SCHEMA),
         "-o", str(folder / "out.jsonl"), "--cache", str(folder / "cache.sqlite"),
         "--jobs", "2", "--no-lower"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    print("| seconds | RSS of the process tree (MB) | largest process (MB) |")
    print("|---:|---:|---:|")
    while proc.poll() is None:
        time.sleep(10)
        if proc.poll() is None:
            total, largest = tree_rss(proc.pid)
            print(f"| {time.monotonic() - start:.0f} | {total} | {largest} |", flush=True)
    output = proc.stdout.read() if proc.stdout else ""
    print(f"\n{records} records in {time.monotonic() - start:.1f} s: {output.strip()[-300:]}")


if __name__ == "__main__":
    main()
