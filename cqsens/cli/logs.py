"""``cqsens report`` on query logs: stream the rows to JSON Lines, or group them by shape."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cqsens.cli.exits import EXIT_INPUT, EXIT_OK, fail
from cqsens.cli.output import write_output
from cqsens.cli.rendering import render_batch
from cqsens.errors import InputError
from cqsens.files import write_atomically, write_text_atomically
from cqsens.settings import Settings

if TYPE_CHECKING:
    from cqsens.logs.cache import ShapeCache
    from cqsens.logs.records import Record

__all__ = ["compact", "run_log"]

#: Ids listed per shape in an HTML or Markdown report (the count is always exact).
IDS_SHOWN = 50


def compact(row: dict[str, Any]) -> dict[str, Any]:
    """A row without its full analysis object (what a JSON Lines line holds besides its
    ``schema_version``, ``cqsens/schemas/report-line.schema.json``)."""
    return {k: v for k, v in row.items() if k != "analysis"}


def run_log(inputs: tuple[str, ...], *, target: Path, chosen: str, jobs: int, timeout: float,
            command: str, settings: Settings, query_column: str | None,
            cache_file: str | None, share: bool, strict: bool, output: str,
            total_timeout: float | None = None) -> None:
    """Analyse query logs (and query files) and write the report; exits."""
    from cqsens.batch import summarise
    from cqsens.logs.run import analyse_log, log_lines

    try:
        cache, scratch = _open_cache(cache_file, share, jobs)
    except InputError as err:
        fail(err)
    counts: dict[str, int] = {"total": 0, "errors": 0, "timed_out": 0}
    proofs = {"searched": 0, "reused": 0, "skipped": 0}
    tally: list[dict[str, Any]] = []  # one small row per shape, for the summary
    failed = unbounded = False
    groups: dict[str, dict[str, Any]] = {}

    def note(row: dict[str, Any]) -> None:
        nonlocal failed, unbounded
        counts["total"] += 1
        failed = failed or row["status"] != "ok"
        if row["status"] == "ok":
            proofs[row.get("proof") or "skipped"] += 1
        unbounded = unbounded or (row["status"] == "ok" and row["upper"] == "inf")
        if row["status"] != "ok":
            click.echo(f"  {row['status']}: {row['error']}", err=True)

    records = _records(inputs, query_column)
    try:
        if chosen == "jsonl":
            lines = log_lines(records, jobs=jobs, timeout=timeout, total_timeout=total_timeout,
                              cache=cache, settings=settings)

            def write(temporary: Path) -> None:
                with open(temporary, "w", encoding="utf-8") as handle:
                    batch: list[str] = []
                    for line in lines:
                        row = {"status": line.status, "upper": line.upper,
                               "tight": line.tight, "proof": line.proof, "error": line.error}
                        note(row)
                        tally.append(row)
                        if len(tally) > 10_000:  # summarise in bounded memory
                            _fold(tally)
                        batch.append(line.text)
                        if len(batch) >= 256:
                            handle.write("\n".join(batch) + "\n")
                            batch.clear()
                    if batch:
                        handle.write("\n".join(batch) + "\n")

            write_output(output, lambda: write_atomically(target, write))
        else:
            rows = analyse_log(records, jobs=jobs, timeout=timeout, total_timeout=total_timeout,
                               cache=cache, settings=settings)
            for row in rows:
                note(row)
                tally.append({k: row[k] for k in ("status", "upper", "tight")})
                if len(tally) > 10_000:
                    _fold(tally)
                key = row.get("shape") or f"error:{row['id']}"
                group = groups.get(key)
                if group is None:
                    groups[key] = group = dict(row, records=0, ids=[])
                group["records"] += 1
                if len(group["ids"]) < IDS_SHOWN:
                    group["ids"].append(row["id"])
            shown = []
            for group in groups.values():
                if group["records"] > 1:
                    group["file"] = f"{group['id']} (+{group['records'] - 1} of its shape)"
                shown.append(group)
            summary = summarise(shown)
            summary.update(_folded(tally))
            batch = {"title": "cqsens report", "generated": "", "command": command,
                     "options": {k: str(v) if isinstance(v, Path) else v
                                 for k, v in settings.reported().items() if k != "schema"},
                     "summary": summary, "skipped": [], "rows": shown}
            text = render_batch(batch, chosen)
            write_output(output, lambda: write_text_atomically(target, text))
    except InputError as err:
        fail(err)
    finally:
        if cache is not None:
            stats = cache.stats()
            cache.close()
        if scratch is not None:
            scratch.cleanup()
    s = _folded(tally)
    hits = f"; cache: {stats['hits']} hits, {stats['misses']} misses" if cache is not None else ""
    click.echo(f"{output}: {s['total']} records: {s['bounded']} bounded, {s['unbounded']} "
               f"unbounded, {s['errors']} errors, {s['timed_out']} timed out; "
               f"{s['tight']} tight; lower bounds: {proofs['searched']} proven, "
               f"{proofs['reused']} reused, {proofs['skipped']} skipped{hits}")
    sys.exit(EXIT_INPUT if strict and (failed or unbounded) else EXIT_OK)


def _records(inputs: tuple[str, ...], query_column: str | None) -> Iterator[Record]:
    """The records of the logs among ``inputs``, and one per query file of the others."""
    from cqsens.batch import collect_files
    from cqsens.logs.records import Record, is_log, read_records

    for item in inputs:
        if is_log(item):
            yield from read_records(item, query_column=query_column)
            continue
        files, _ = collect_files([item])
        for f in files:
            text = f.read_text(encoding="utf-8", errors="replace")
            yield Record(str(f), str(f), text)


def _open_cache(cache_file: str | None, share: bool, jobs: int
                ) -> tuple[ShapeCache | None, tempfile.TemporaryDirectory[str] | None]:
    """The shape cache of a run (None with ``--no-cache``), and the folder to remove after
    it (a file cache for this run only, so that the workers read it too)."""
    from cqsens.logs.cache import ShapeCache

    if cache_file:
        return ShapeCache(cache_file), None
    if share and jobs > 1:
        scratch = tempfile.TemporaryDirectory(prefix="cqsens-shapes-")
        return ShapeCache(Path(scratch.name) / "shapes.sqlite"), scratch
    return (ShapeCache() if share else None), None


def _fold(tally: list[dict[str, Any]]) -> None:
    """Replace the rows of ``tally`` by one entry holding their counts."""
    folded = _folded(tally)
    tally.clear()
    tally.append({"status": "_folded", **folded})


def _folded(tally: list[dict[str, Any]]) -> dict[str, Any]:
    from cqsens.batch import summarise

    plain = [r for r in tally if r["status"] != "_folded"]
    out = summarise(plain)
    for r in tally:
        if r["status"] == "_folded":
            for k in ("total", "bounded", "unbounded", "errors", "timed_out", "tight"):
                out[k] += r[k]
            for k, v in r["bounds"].items():
                out["bounds"][k] += v
    return out
