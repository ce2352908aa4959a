"""Analyse a query log: rows in input order, streamed, one analysis per shape.

:func:`analyse_log` reads records lazily and yields one report row per record,
in input order, as soon as the rows before it are done.  At most ``window``
records are in flight, whatever the log's length, so memory does not grow with
it.  Each record is lexed (:func:`cqsens.logs.shape.lex`); a record whose
cache key is stored is instantiated from its row template in this process, and
only a new shape is analysed, in a worker process (``jobs`` > 1) or here.
Records of a shape already being analysed wait for that analysis instead of
repeating it.  A record that fails is an error row with its id (``file:line``);
the run goes on.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from cqsens.batch import NO_LIMIT_SECONDS, row_for
from cqsens.errors import InputError, TimeLimitError
from cqsens.frontend.ddl import load_schema
from cqsens.ir.schema import Schema
from cqsens.logs.cache import ShapeCache
from cqsens.logs.plan import Plan, abstract_literals
from cqsens.logs.records import Record
from cqsens.logs.shape import Lexed, lex, literal_value, shape_key
from cqsens.logs.template import (
    SOURCE,
    Compiled,
    Template,
    compile_template,
    derive_template,
    instantiate,
)
from cqsens.pipeline import Analysis, analyze
from cqsens.release.values import parse_value_bounds
from cqsens.witness.schema_checks import column_checks

__all__ = ["analyse_log", "fingerprint"]

_ANALYZE_KEYS = ("schema", "dialect", "fds", "cds", "constraints", "neighbor", "bounds",
                 "contributions", "rows", "epsilon", "delta", "prove_lower", "public", "unit",
                 "owner",
                 "witness_time")


def _version() -> str:
    try:
        return version("cqsens")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


def _content(value: Any) -> str:
    """What an option stands for: a file's content, a schema's source, or the text."""
    if value is None:
        return ""
    if isinstance(value, Schema):
        return repr(value)
    path = Path(str(value))
    try:
        if "\n" not in str(value) and path.is_file():
            return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        pass
    return str(value)


def fingerprint(options: dict[str, Any], record: Record) -> str:
    """Everything but the query text an analysis depends on, as one digest: cqsens's
    version, the options (files by content), the record's dialect and schema."""
    opts = _record_options(options, record)
    parts = {k: (_content(v) if k in ("schema", "constraints") else v)
             for k, v in sorted(opts.items()) if k in _ANALYZE_KEYS}
    blob = json.dumps([_version(), parts], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _record_options(options: dict[str, Any], record: Record) -> dict[str, Any]:
    opts = dict(options)
    if record.dialect is not None:
        opts["dialect"] = record.dialect
    if record.schema is not None:
        opts["schema"] = record.schema
    return opts


@lru_cache(maxsize=64)
def _schema(value: str, dialect: str | None) -> Schema:
    loaded = load_schema(value, dialect=dialect)
    assert loaded is not None
    return loaded


def _parsed_schema(opts: dict[str, Any]) -> Schema | None:
    value = opts.get("schema")
    if value is None or isinstance(value, Schema):
        return value
    return _schema(str(value), opts.get("dialect"))


def _inputs(opts: dict[str, Any]) -> dict[str, Any]:
    schema = opts.get("schema")
    shown = schema.source if isinstance(schema, Schema) else schema
    if isinstance(shown, str) and "\n" in shown:
        shown = "(inline text)"
    declared = [*(opts.get("fds") or []), *(opts.get("cds") or [])]
    constraints = opts.get("constraints")
    return {"schema": None if shown is None else str(shown),
            "constraints": None if constraints is None else str(constraints),
            "dependencies": [str(d) for d in declared]}


class _Timeout(BaseException):
    """Raised by the alarm; a BaseException so no library's ``except Exception`` swallows it."""


def _alarm(signum: int, frame: Any) -> None:  # pragma: no cover - signal handler
    raise _Timeout


def _limited(run: Callable[[], Analysis], timeout: float | None) -> Analysis:
    """``run()`` under the analysis's own deadline and, in the main thread, SIGALRM behind it."""
    use_alarm = (timeout is not None and 0 < timeout < NO_LIMIT_SECONDS
                 and hasattr(signal, "setitimer")
                 and threading.current_thread() is threading.main_thread())
    if not use_alarm:
        return run()
    assert timeout is not None
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, max(timeout * 1.2, 1e-3))
        try:
            return run()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Timeout:
        raise TimeLimitError("analysis", timeout) from None
    finally:
        signal.signal(signal.SIGALRM, previous)


def _error_row(record: Record, status: str, message: str,
               inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": record.id, "file": record.where, "status": status, "error": message,
            "query": record.sql or None,
            "inputs": inputs or {"schema": None, "constraints": None, "dependencies": []},
            "aggregate": None, "upper": None, "lower": None, "tight": False, "reason": message,
            "suggestion": None, "noise": None, "analysis": None, "shape": None, "cached": False}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _analyse_row(sql: str, opts: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    """The report row of one query text, analysed under the name :data:`SOURCE`."""
    kwargs = {k: v for k, v in opts.items() if k in _ANALYZE_KEYS}
    kwargs["schema"] = _parsed_schema(opts)  # parsed once per run, not once per record
    analysis = _limited(lambda: analyze(sql, kind="sql", name=SOURCE, timeout=timeout,
                                        **kwargs), timeout)
    return row_for(Path(SOURCE), analysis, _inputs(opts)) | {"_analysis": analysis}


@dataclass(frozen=True, slots=True)
class _Task:
    record: Record
    options: dict[str, Any]
    timeout: float | None
    fingerprint: str
    plan: Plan | None
    share: bool


@dataclass
class _Done:
    row: dict[str, Any]
    shape: str = ""
    plan: Plan | None = None
    key: str = ""
    template: Template | None = None
    literals: list[str] = field(default_factory=list)


def _shape_id(fp: str, lexed: Lexed) -> str:
    normal = [str(literal_value(lit)).strip().lower() for lit in lexed.literals]
    classes: dict[str, int] = {}
    pattern = [classes.setdefault(n, len(classes)) for n in normal]
    blob = json.dumps([fp, lexed.template, pattern, [lit.kind for lit in lexed.literals]])
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _finish(row: dict[str, Any], record: Record, key: str, cached: bool) -> dict[str, Any]:
    row["id"] = record.id
    row["file"] = record.where
    row["query"] = record.sql
    if isinstance(row.get("analysis"), dict):
        row["analysis"]["query"] = record.sql.strip()
        row["analysis"]["source"] = record.where
    row["shape"] = key[:16]
    row["cached"] = cached
    return {"id": row.pop("id"), **row}


def _work(task: _Task) -> _Done:
    """Analyse a record of a new shape and make its shape's row template."""
    record = task.record
    opts = _record_options(task.options, record)
    lexed = lex(record.sql)
    shape = _shape_id(task.fingerprint, lexed)
    try:
        first = _analyse_row(record.sql, opts, task.timeout)
    except TimeLimitError:
        limit = "its limit" if task.timeout is None else f"{task.timeout:g} s"
        return _Done(_error_row(record, "timeout", f"{record.where}: timed out after {limit}",
                                _inputs(opts)))
    except InputError as err:
        text = _one_line(str(err)).replace(SOURCE, record.where)
        if not text.startswith(record.where):
            text = f"{record.where}: {text}"
        return _Done(_error_row(record, "error", text, _inputs(opts)))
    except RecursionError:
        return _Done(_error_row(record, "error", f"{record.where}: the query is too deeply "
                                                 "nested to analyse", _inputs(opts)))
    except Exception as exc:  # noqa: BLE001 - a bug must not stop the run; it is shown
        return _Done(_error_row(record, "error", f"{record.where}: internal error "
                                                 f"({type(exc).__name__}: {exc}); please report it",
                                _inputs(opts)))
    analysis: Analysis = first.pop("_analysis")
    if not task.share:
        row = json.loads(json.dumps(first).replace(json.dumps(SOURCE)[1:-1],
                                                   json.dumps(record.where)[1:-1]))
        return _Done(_finish(row, record, "", False))
    plan = task.plan
    if plan is None:
        schema = _parsed_schema(opts)
        checked = column_checks(schema, value_bounds=parse_value_bounds(opts.get("bounds") or ()),
                                columns=analysis.query_obj.columns)
        plan = abstract_literals(analysis.query_obj, lexed, checked)

    def rerun(sql: str) -> dict[str, Any] | None:
        try:
            other = _analyse_row(sql, opts, task.timeout)
        except Exception:  # noqa: BLE001 - any failure only keeps the constants in the key
            return None
        other.pop("_analysis")
        return other

    template = derive_template(first, sql=record.sql, lexed=lexed,
                               fingerprint=task.fingerprint, abstract=plan.abstract,
                               ordered=plan.ordered, rerun=rerun)
    plan = Plan(template.abstract, template.ordered)
    key = shape_key(task.fingerprint, lexed, plan.abstract)
    row = _finish(instantiate(template.row, lexed, source=record.where), record, key, False)
    return _Done(row, shape, plan, key, template, [lit.text for lit in lexed.literals])


class _Inline(Executor):
    """Runs each task at once, in this process (``jobs`` = 1)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


@dataclass
class _Slot:
    record: Record
    row: dict[str, Any] | None = None


@lru_cache(maxsize=4096)
def _compiled(template: str, compact: bool) -> Compiled:
    return compile_template(template, compact=compact)


def _hit(cache: ShapeCache, fp: str, lexed: Lexed, record: Record,
         plan: Plan, full: bool = True) -> dict[str, Any] | None:
    key = shape_key(fp, lexed, plan.abstract)
    got = cache.result(key)
    if got is None:
        return None
    template, literals, ordered = got
    row = _finish(instantiate(_compiled(template, not full), lexed, source=record.where),
                  record, key, True)
    if any(literals[i] != lexed.literals[i].text for i in ordered if i < len(literals)):
        # a constant compared by order changed: the representative's witness may not carry
        # over (no integer may lie between the new constants), so no lower bound is claimed
        note = ("not re-proven for this record's constants (its shape's analysis came from "
                "the cache; run without --cache for a witness)")
        row["lower"] = None
        row["tight"] = False
        if isinstance(row.get("analysis"), dict):
            row["analysis"]["sensitivity"]["lower"] = None
            row["analysis"]["sensitivity"]["tight"] = False
            row["analysis"]["lower_note"] = note
    return row


def analyse_log(
    records: Iterable[Record],
    *,
    jobs: int = 1,
    timeout: float | None = 10.0,
    cache: ShapeCache | None = None,
    window: int | None = None,
    full: bool = True,
    **options: Any,
) -> Iterator[dict[str, Any]]:
    """Analyse every record of a log; yield its rows in input order.

    Parameters
    ----------
    records : iterable of Record
        The log (:func:`cqsens.logs.records.read_records`), read lazily.
    jobs : int
        Worker processes (1: in this process).
    timeout : float or None
        Seconds per record (None: no limit).
    cache : ShapeCache, optional
        Share one analysis per shape through this cache (None: analyse every record).
    window : int, optional
        Records in flight at most (default ``64 * jobs``).
    full : bool
        Give each row its ``analysis`` object.  A row of a cache hit made with
        ``full=False`` has none (what ``-o out.jsonl`` writes), which saves
        building it.
    **options
        Passed to :func:`cqsens.pipeline.analyze` (schema, fds, cds, dialect, ...).

    Yields
    ------
    dict
        One report row per record: ``id``, ``file`` (``file:line``), ``status``,
        ``upper``, ``lower``, ``tight``, ``reason``, ..., ``shape`` (the first 16
        hex digits of the cache key) and ``cached``.
    """
    limit = window or 64 * max(jobs, 1)
    executor: Executor
    if jobs <= 1:
        executor = _Inline()
    else:
        ctx = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
        executor = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)
    order: deque[_Slot] = deque()
    running: dict[Future[_Done], tuple[_Slot, str]] = {}
    waiting: dict[str, list[tuple[_Slot, str, Lexed]]] = {}
    fingerprints: dict[tuple[str | None, str | None], str] = {}

    def start(slot: _Slot) -> None:
        record = slot.record
        if record.error is not None:
            slot.row = _error_row(record, "error", record.error)
            return
        fp_key = (record.dialect, record.schema)
        fp = fingerprints.get(fp_key)
        if fp is None:
            fp = fingerprints[fp_key] = fingerprint(options, record)
        if cache is None:
            future = executor.submit(_work, _Task(record, options, timeout, fp, None, False))
            running[future] = (slot, "")
            return
        lexed = lex(record.sql)
        shape = _shape_id(fp, lexed)
        if shape in waiting:
            waiting[shape].append((slot, fp, lexed))
            return
        plan = cache.plan(shape)
        if plan is not None:
            row = _hit(cache, fp, lexed, record, plan, full)
            if row is not None:
                cache.hits += 1
                slot.row = row
                return
        cache.misses += 1
        waiting[shape] = []
        future = executor.submit(_work, _Task(record, options, timeout, fp, plan, True))
        running[future] = (slot, shape)

    def settle(future: Future[_Done]) -> None:
        slot, shape = running.pop(future)
        done = future.result()
        slot.row = done.row
        if cache is None or not shape:
            return
        if done.template is not None and done.plan is not None:
            cache.store(done.shape, done.plan, done.key, done.template.row, done.literals)
        for other, _fp, _lexed in waiting.pop(shape, []):
            start(other)

    def ready() -> Iterator[dict[str, Any]]:
        while order and order[0].row is not None:
            row = order.popleft().row
            assert row is not None
            yield row

    try:
        for record in records:
            slot = _Slot(record)
            order.append(slot)
            start(slot)
            for future in [f for f in running if f.done()]:
                settle(future)
            yield from ready()
            while len(order) >= limit and running:
                finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in finished:
                    settle(future)
                yield from ready()
        while running:
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in finished:
                settle(future)
            yield from ready()
        yield from ready()
    finally:
        executor.shutdown(wait=False, cancel_futures=True)
