"""Memory of a long log: stream N records (default 1,000,000, from 5,000 shapes) through
`cqsens report LOG -o out.jsonl --cache FILE --jobs 2 --no-lower`, sampling every 10 s the
RSS of the command's whole process tree and of its largest process.

    python bench/logs_rss.py [N] [--lower] [--seconds S]

``--lower``: with lower bounds on (no ``--no-lower``); ``--seconds S``: stop the command
after S seconds (the samples so far, and how many rows it wrote).

The numbers of a run are pasted into bench/results/logs.md by hand.
"""

from __future__ import annotations

import argparse
import os
import signal
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
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("records", type=int, nargs="?", default=1_000_000)
    parser.add_argument("--lower", action="store_true", help="lower bounds on")
    parser.add_argument("--seconds", type=float, default=None, help="stop after S seconds")
    args = parser.parse_args()
    records = args.records
    folder = Path(tempfile.mkdtemp())
    log = folder / "log.jsonl"
    bench_logs.write_log(log, records, 5000)
    start = time.monotonic()
    # rows are written to a temporary file next to out.jsonl, renamed at the end
    proc = subprocess.Popen(
        [sys.executable, "-m", "cqsens", "report", str(log), "--schema", str(bench_logs.SCHEMA),
         "-o", str(folder / "out.jsonl"), "--cache", str(folder / "cache.sqlite"),
         "--jobs", "2", *([] if args.lower else ["--no-lower"])], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True)  # its group: see below
    print("| seconds | RSS of the process tree (MB) | largest process (MB) | rows written |")
    print("|---:|---:|---:|---:|")
    while proc.poll() is None:
        time.sleep(10)
        if proc.poll() is None:
            total, largest = tree_rss(proc.pid)
            print(f"| {time.monotonic() - start:.0f} | {total} | {largest} | "
                  f"{written(folder)} |", flush=True)
            if args.seconds is not None and time.monotonic() - start > args.seconds:
                os.killpg(proc.pid, signal.SIGTERM)  # the command and its worker processes
                proc.wait()
                print(f"\nstopped after {time.monotonic() - start:.0f} s: "
                      f"{written(folder)} of {records} rows written")
                return
    output = proc.stdout.read() if proc.stdout else ""
    print(f"\n{records} records in {time.monotonic() - start:.1f} s: {output.strip()[-300:]}")


_COUNTED: dict[str, tuple[int, int]] = {}  # file -> (bytes read, newlines in them)


def written(folder: Path) -> int:
    """Rows written so far (the lines of the output's temporary file, or of the output),
    reading only what was added since the last call."""
    count = 0
    for path in folder.iterdir():
        if path.name.startswith(("out", ".out")):
            offset, lines = _COUNTED.get(path.name, (0, 0))
            with open(path, "rb") as handle:
                handle.seek(offset)
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    lines += chunk.count(b"\n")
                    offset += len(chunk)
            _COUNTED[path.name] = (offset, lines)
            count = max(count, lines)
    return count

if __name__ == "__main__":
    main()
