"""Analyse a JSON Lines query log on Dask's local cluster (README, "Query logs").

    pip install 'cqsens[dask]'
    python examples/dask_log.py examples/logs/tpch.jsonl --schema examples/tpch/schema.sql \
        --out /tmp/tpch-rows --workers 2
    python examples/dask_log.py LOG --schema DDL --out rows/ --address tcp://scheduler:8786 \
        --cache-dir /shared/caches --merge shapes.sqlite

The analysis of a record is a pure function of (record, schema, options), so a
log scales past one machine with an engine that already exists: here
``dask.bag.read_text`` splits the log into blocks of lines, and
:func:`analyse_lines` maps each block to its report rows with
:func:`cqsens.logs.analyse_log`.  Each worker process keeps its own shape cache
file (SQLite has one writer), so a worker analyses a shape once and re-uses it
for every later block, its row template (the upper bound) and its witnesses:
each later record of the shape gets the witness instantiated for its own
constants and checked with ``is_witness`` against its own query, so lower bounds
are proven per record at the cost of a check, not of a search.  A nightly re-run
with the same ``--cache-dir`` analyses only new shapes.  On a cluster
(``--address``), ``--cache-dir`` is a folder every worker can write (one file
per worker process: SQLite files are not shared over network file systems), and
``--merge FILE`` merges the workers' files into one cache afterwards
(:meth:`cqsens.logs.ShapeCache.merge`), which ``cqsens report --cache FILE``
reads.  The rows are the rows of ``cqsens report LOG -o out.jsonl``
(``file`` is ``LOG#id`` here: a block does not know its line numbers), written
as one JSON Lines part file per block.  Nothing here is a distribution layer:
Spark's ``mapPartitions`` runs the same function.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cqsens.cli.logs import compact
from cqsens.logs import Record, ShapeCache, analyse_log


def to_record(line: str, log: str) -> Record:
    """One JSON Lines record (``{"id": ..., "sql": ...}``, optional ``dialect``, ``schema``)."""
    try:
        item = json.loads(line)
    except json.JSONDecodeError as err:
        return Record(log, log, "", error=f"{log}: not a JSON object ({err.msg})")
    ident = str(item.get("id", "")) if isinstance(item, dict) else ""
    where = f"{log}#{ident}"
    sql = item.get("sql", item.get("query")) if isinstance(item, dict) else None
    if not isinstance(sql, str) or not sql.strip():
        return Record(ident or where, where, "", error=f"{where}: the record has no \"sql\" text")
    schema = item.get("schema")
    if isinstance(schema, str) and "\n" not in schema and not Path(schema).is_absolute():
        schema = str(Path(log).parent / schema)  # a DDL file, relative to the log's folder
    return Record(ident or where, where, sql, item.get("dialect"), schema)


def analyse_lines(lines: Iterable[str], *, log: str, cache_dir: str,
                  options: dict[str, Any]) -> list[dict[str, Any]]:
    """The report rows of a block of log lines, in order (a pure function of its inputs).

    The worker's shape cache is ``cache_dir/shapes-PID.sqlite``: one file per worker
    process (run the cluster with one thread per worker).
    """
    records = (to_record(line, log) for line in lines if line.strip())
    cache = ShapeCache(Path(cache_dir) / f"shapes-{os.getpid()}.sqlite")
    try:
        return [compact(row) for row in analyse_log(records, jobs=1, cache=cache, **options)]
    finally:
        cache.close()


def run(log: str, out: str, *, cache_dir: str, workers: int = 2, blocksize: str | int = "1MiB",
        address: str | None = None, **options: Any) -> Counter[str]:
    """Analyse ``log`` on a local cluster of ``workers`` processes (or on the cluster whose
    scheduler is at ``address``); write ``out/*.jsonl``.

    Returns the count of rows by status, and by ``proof`` (``proof:searched``,
    ``proof:reused``) for the rows with a lower bound.
    """
    import dask.bag as db
    from dask.distributed import Client, LocalCluster

    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    if address is not None:
        with Client(address):
            return _run(db, log, out, cache_dir, blocksize, options)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        return _run(db, log, out, cache_dir, blocksize, options)


def _run(db: Any, log: str, out: str, cache_dir: str, blocksize: str | int,
         options: dict[str, Any]) -> Counter[str]:
    rows = db.read_text(log, blocksize=blocksize).map_partitions(
        analyse_lines, log=log, cache_dir=cache_dir, options=options)
    rows.map(json.dumps).to_textfiles(str(Path(out) / "*.jsonl"))
    written = db.read_text(str(Path(out) / "*.jsonl")).map(json.loads)
    counts = Counter(dict(written.pluck("status").frequencies().compute()))
    proofs = written.filter(lambda r: r.get("proof") is not None).pluck("proof")
    counts.update({f"proof:{k}": n for k, n in proofs.frequencies().compute()})
    return counts


def merge(cache_dir: str, into: str) -> int:
    """Merge the workers' cache files of ``cache_dir`` into one cache file ``into``; the
    number of results copied."""
    cache = ShapeCache(into)
    try:
        return sum(cache.merge(part) for part in sorted(Path(cache_dir).glob("shapes-*.sqlite")))
    finally:
        cache.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", help="a JSON Lines log")
    parser.add_argument("--schema", help="DDL file of the database")
    parser.add_argument("--out", required=True, help="folder for the JSON Lines part files")
    parser.add_argument("--cache-dir", default=".cqsens-cache",
                        help="folder of the per-worker shape caches")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--address", help="the scheduler of a running Dask cluster "
                                           "(default: a local cluster of --workers processes)")
    parser.add_argument("--merge", metavar="FILE",
                        help="merge the workers' caches into this cache file afterwards")
    parser.add_argument("--no-lower", action="store_true", help="skip the witness search")
    args = parser.parse_args()
    counts = run(args.log, args.out, cache_dir=args.cache_dir, workers=args.workers,
                 address=args.address, schema=args.schema, prove_lower=not args.no_lower)
    if args.merge:
        print(f"{merge(args.cache_dir, args.merge)} shapes merged into {args.merge}")
    print(f"{sum(counts.values())} records: "
          + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
          + f"; rows in {args.out}/")


if __name__ == "__main__":
    main()
