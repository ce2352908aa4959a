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
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from cqsens.batch import NO_LIMIT_SECONDS, row_for
from cqsens.errors import InputError, TimeLimitError
from cqsens.frontend.ddl import load_schema
from cqsens.ir.cq import AggregateQuery
from cqsens.ir.schema import Schema
from cqsens.logs.cache import ShapeCache
from cqsens.logs.plan import Plan, abstract_literals
from cqsens.logs.proofs import Proof, check, fill_lower, instances, own_query
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
from cqsens.logs.transpiled import record_sqlite
from cqsens.pipeline import Analysis, analyze_with
from cqsens.release.values import parse_value_bounds
from cqsens.settings import Settings
from cqsens.witness.model import Witness
from cqsens.witness.schema_checks import column_checks

__all__ = ["analyse_log", "fingerprint"]



def _version() -> str:
    try:
        return version("cqsens")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


def _content(value: object) -> str:
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


def fingerprint(settings: Settings, record: Record) -> str:
    """Everything but the query text an analysis depends on, as one digest: cqsens's
    version, the settings that differ from the defaults (files by content), the
    record's dialect and schema."""
    own = _record_settings(settings, record)
    parts = {k: (_content(v) if k in ("schema", "constraints") else v)
             for k, v in sorted(own.analysis_changed().items())}
    blob = json.dumps([_version(), parts], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _record_settings(settings: Settings, record: Record) -> Settings:
    """The settings of one record: its own dialect and schema, when it names them."""
    if record.dialect is not None:
        settings = replace(settings, dialect=record.dialect)
    if record.schema is not None:
        settings = replace(settings, schema=record.schema)
    return settings


@lru_cache(maxsize=64)
def _schema(value: str, dialect: str | None) -> Schema:
    loaded = load_schema(value, dialect=dialect)
    assert loaded is not None
    return loaded


def _parsed_schema(settings: Settings) -> Schema | None:
    value = settings.schema
    if value is None or isinstance(value, Schema):
        return value
    return _schema(str(value), settings.dialect)


def _inputs(settings: Settings) -> dict[str, Any]:
    schema = settings.schema
    shown = schema.source if isinstance(schema, Schema) else schema
    if isinstance(shown, str) and "\n" in shown:
        shown = "(inline text)"
    declared = [*settings.fds, *settings.cds]
    constraints = settings.constraints
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
            "suggestion": None, "noise": None, "analysis": None, "shape": None, "cached": False,
            "proof": None}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _analyse_row(sql: str, settings: Settings, timeout: float | None) -> dict[str, Any]:
    """The report row of one query text, analysed under the name :data:`SOURCE`."""
    # the schema is parsed once per run, not once per record
    own = replace(settings, schema=_parsed_schema(settings), timeout=timeout)
    analysis = _limited(lambda: analyze_with(sql, own, kind="sql", name=SOURCE), timeout)
    return row_for(Path(SOURCE), analysis, _inputs(settings)) | {"_analysis": analysis}


@dataclass(frozen=True, slots=True)
class _Task:
    """A record of a new shape (``share``: make its shape's template), or a record to
    analyse on its own."""

    record: Record
    settings: Settings
    timeout: float | None
    fingerprint: str
    plan: Plan | None
    share: bool


@dataclass(frozen=True, slots=True)
class _Check:
    """A record whose key is stored: its row from the template, its lower bound from the
    key's witnesses, checked (in a worker, which reads the cache file itself)."""

    record: Record
    settings: Settings
    timeout: float | None
    fingerprint: str
    key: str
    plan: Plan
    full: bool
    search: bool
    cache_path: str


@dataclass
class _Done:
    row: dict[str, Any]
    shape: str = ""
    plan: Plan | None = None
    key: str = ""
    template: Template | None = None
    literals: list[str] = field(default_factory=list)
    proof: Proof | None = None
    found: tuple[tuple[int | Fraction | str, ...], Witness] | None = None
    searched: bool = False
    checked: tuple[str, str] | None = None  # (the record's literals, its lower bound) as JSON


def _literal_key(lexed: Lexed) -> str:
    """A record's literals as written, the key of its proven lower bound in the cache."""
    return json.dumps([lit.text for lit in lexed.literals])


def _proven(row: dict[str, Any], lexed: Lexed) -> tuple[str, str] | None:
    """What the cache keeps of a row whose lower bound a checked witness proved."""
    if row.get("proof") not in ("searched", "reused") or row.get("lower") is None:
        return None
    return _literal_key(lexed), json.dumps(row["lower"])


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
    row.setdefault("proof", None)
    return {"id": row.pop("id"), **row}


def _fresh(record: Record, opts: Settings, timeout: float | None
           ) -> tuple[dict[str, Any], Analysis | None]:
    """The row of one record analysed on its own (an error row when it fails)."""
    try:
        first = _analyse_row(record.sql, opts, timeout)
    except TimeLimitError:
        limit = "its limit" if timeout is None else f"{timeout:g} s"
        return _error_row(record, "timeout", f"{record.where}: timed out after {limit}",
                          _inputs(opts)), None
    except InputError as err:
        text = _one_line(str(err)).replace(SOURCE, record.where)
        if not text.startswith(record.where):
            text = f"{record.where}: {text}"
        return _error_row(record, "error", text, _inputs(opts)), None
    except RecursionError:
        return _error_row(record, "error", f"{record.where}: the query is too deeply "
                                           "nested to analyse", _inputs(opts)), None
    except Exception as exc:  # noqa: BLE001 - a bug must not stop the run; it is shown
        return _error_row(record, "error", f"{record.where}: internal error "
                                           f"({type(exc).__name__}: {exc}); please report it",
                          _inputs(opts)), None
    analysis: Analysis = first.pop("_analysis")
    first["proof"] = "searched" if analysis.lower is not None and analysis.witness is not None \
        else None
    return first, analysis


def _named(row: dict[str, Any], record: Record) -> dict[str, Any]:
    """A row analysed under :data:`SOURCE`, with the record's own name."""
    loaded: dict[str, Any] = json.loads(json.dumps(row).replace(
        json.dumps(SOURCE)[1:-1], json.dumps(record.where)[1:-1]))
    return loaded


def _values(lexed: Lexed) -> tuple[int | Fraction | str, ...]:
    return tuple(literal_value(lit) for lit in lexed.literals)


def _proof_of(analysis: Analysis, lexed: Lexed) -> Proof:
    """What a shape's first record proved about its lower bound."""
    query = analysis.query_obj
    witness = analysis.witness
    reusable = isinstance(query, AggregateQuery) and not analysis.summary
    if witness is not None and analysis.lower is not None and reusable:
        return Proof(query, analysis.sigma, ((_values(lexed), witness),))
    return Proof(query, analysis.sigma, (), analysis.lower, analysis.lower_note,
                 reusable and (analysis.lower is None or analysis.lower == 0))


def _work(task: _Task) -> _Done:
    """Analyse a record of a new shape and make its shape's row template."""
    record = task.record
    opts = _record_settings(task.settings, record)
    first, analysis = _fresh(record, opts, task.timeout)
    if analysis is None:
        return _Done(first)
    if not task.share:
        return _Done(_finish(_named(first, record), record, "", False))
    lexed = lex(record.sql)
    shape = _shape_id(task.fingerprint, lexed)
    plan = task.plan
    if plan is None:
        schema = _parsed_schema(opts)
        checked = column_checks(schema, value_bounds=parse_value_bounds(opts.bounds),
                                columns=analysis.query_obj.columns)
        plan = abstract_literals(analysis.query_obj, lexed, checked)
    without = replace(opts, prove_lower=False)

    def rerun(sql: str) -> dict[str, Any] | None:
        try:
            other = _analyse_row(sql, without, task.timeout)
        except Exception:  # noqa: BLE001 - any failure only keeps the constants in the key
            return None
        other.pop("_analysis")
        return other

    template = derive_template(first, sql=record.sql, lexed=lexed,
                               fingerprint=task.fingerprint, plan=plan, rerun=rerun)
    plan = template.plan
    key = shape_key(task.fingerprint, lexed, plan.abstract, plan.groups)
    row = _finish(_named(first, record), record, key, False)
    return _Done(row, shape, plan, key, template, [lit.text for lit in lexed.literals],
                 _proof_of(analysis, lexed), searched=True, checked=_proven(row, lexed))


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


_NOT_CHECKED = ("not proven for this record: its shape's witness did not carry over to its "
                "constants and {why}")


_MODES: dict[tuple[str, tuple[int | Fraction | str, ...]], str] = {}


def _reuse(proof: Proof, key: str, lexed: Lexed, record: Record,
           opts: Settings, plan: Plan) -> Witness | None:
    """An instance of one of the key's witnesses for this record, checked with is_witness
    against the record's own query; None when none checks."""
    schema = _parsed_schema(opts)
    dialect = opts.dialect
    own_sql = record_sqlite(key, record.sql, lexed, dialect)
    if own_sql is None:
        return None
    bounds = parse_value_bounds(opts.bounds)
    new = _values(lexed)
    for values, witness in proof.witnesses:
        if len(values) != len(new):
            continue
        old = {i: values[i] for i in plan.abstract}
        fresh = {i: new[i] for i in plan.abstract}
        query = own_query(proof.query, witness, record.sql, schema=schema, dialect=dialect)
        if query is None:
            return None
        last = (key, values)
        for mode, instance in instances(witness, old, fresh, own_sql, _MODES.get(last, "")):
            if check(query, proof.sigma, instance, schema=schema, value_bounds=bounds):
                if len(_MODES) > 4096:
                    _MODES.clear()
                _MODES[last] = mode  # the next record of the key tries it first
                return instance
    return None


def _serve(cache: ShapeCache, task: _Check, lexed: Lexed | None = None) -> _Done:
    """The row of a record whose key is stored (see :class:`_Check`); ``lexed``: the
    record's text, lexed already."""
    record = task.record
    opts = _record_settings(task.settings, record)
    lexed = lexed or lex(record.sql)
    got = cache.result(task.key)
    if got is None:  # not visible here (it cannot happen: the writer commits first)
        first, analysis = _fresh(record, opts, task.timeout)
        return _Done(_finish(_named(first, record), record, task.key, False))
    row = _finish(instantiate(_compiled(got.row, not task.full), lexed, source=record.where),
                  record, task.key, True)
    if not opts.prove_lower:
        fill_lower(row, None, "not searched (--no-lower)", None)
        return _Done(row, key=task.key)
    seen = cache.checked(task.key, _literal_key(lexed))
    if seen is not None:  # this very record was proven before (the log is run again)
        fill_lower(row, json.loads(seen), None, "reused")
        return _Done(row, key=task.key)
    proof = cache.proof(task.key)
    if proof is not None and not proof.witnesses and proof.reusable and proof.lower == 0:
        fill_lower(row, 0, None, "reused")  # nothing changes the released value: upper 0
        return _Done(row, key=task.key)
    if proof is not None and proof.witnesses:
        try:
            instance = _reuse(proof, task.key, lexed, record, opts, task.plan)
        except Exception:  # noqa: BLE001 - a failed check only means a fresh search
            instance = None
        if instance is not None:
            fill_lower(row, instance.lower, None, "reused")
            return _Done(row, key=task.key, checked=_proven(row, lexed))
    if not task.search:
        why = ("the run's --total-timeout has passed" if task.timeout is not None
               and task.timeout <= 0 else
               f"its shape's {SEARCHES} fresh searches are spent"
               + (f" (its first record: {proof.note})" if proof is not None and proof.note
                  and not proof.witnesses else ""))
        fill_lower(row, None, _NOT_CHECKED.format(why=why), None)
        return _Done(row, key=task.key)
    fresh, analysis = _fresh(record, opts, task.timeout)
    found = None
    if analysis is not None and analysis.witness is not None and analysis.lower is not None:
        found = (_values(lexed), analysis.witness)
    if analysis is None or fresh["upper"] != row["upper"]:
        # a fresh analysis is the record's own: it stands (and a timeout is reported)
        return _Done(_finish(_named(fresh, record), record, task.key, False), key=task.key,
                     found=found, searched=True)
    fill_lower(row, fresh["lower"], (fresh["analysis"] or {}).get("lower_note"),
               fresh.get("proof"))
    return _Done(row, key=task.key, found=found, searched=True, checked=_proven(row, lexed))


_READERS: dict[str, ShapeCache] = {}


def _check_in_worker(task: _Check) -> _Done:
    """:func:`_serve` in a worker process, reading the cache file (opened once)."""
    cache = _READERS.get(task.cache_path)
    if cache is None:
        cache = _READERS[task.cache_path] = ShapeCache(task.cache_path, readonly=True)
    return _serve(cache, task)


#: Fresh witness searches a key's later records may take when its witnesses do not carry
#: over to their constants (a search costs up to --witness-time; a check, milliseconds);
#: past them, such a record reports no lower bound.
SEARCHES = 3


def analyse_log(
    records: Iterable[Record],
    *,
    jobs: int = 1,
    timeout: float | None = 10.0,
    total_timeout: float | None = None,
    cache: ShapeCache | None = None,
    window: int | None = None,
    full: bool = True,
    settings: Settings | None = None,
    **keywords: object,
) -> Iterator[dict[str, Any]]:
    """Analyse every record of a log; yield its rows in input order.

    Parameters
    ----------
    records : iterable of Record
        The log (:func:`cqsens.logs.records.read_records`), read lazily.
    jobs : int
        Worker processes (1: in this process).  Workers analyse new shapes and check
        the witnesses of stored ones; a file cache is read by them directly.
    timeout : float or None
        Seconds per record (None: no limit).
    total_timeout : float or None
        Seconds for the whole log (None: no limit).  Past it, a record of a stored
        key gets its row with a lower bound only from a stored witness that checks (no
        search), and any other record a ``timeout`` row.
    cache : ShapeCache, optional
        Share one analysis per shape through this cache (None: analyse every record).
    window : int, optional
        Records in flight at most (default ``64 * jobs``).
    full : bool
        Give each row its ``analysis`` object.  A row of a cache hit made with
        ``full=False`` has none (what ``-o out.jsonl`` writes), which saves
        building it.
    settings : Settings, optional
        The settings of every analysis (:func:`cqsens.analyze_with`); ``timeout``
        replaces its ``timeout``.
    **keywords
        Settings by name (the keywords of :func:`cqsens.analyze`), over ``settings``.

    Yields
    ------
    dict
        One report row per record: ``id``, ``file`` (``file:line``), ``status``,
        ``upper``, ``lower``, ``tight``, ``reason``, ..., ``shape`` (the first 16
        hex digits of the cache key), ``cached`` and ``proof`` (``"searched"``: the
        lower bound was found for this record; ``"reused"``: a witness of its key,
        instantiated for it and checked; null: no lower bound).
    """
    options = Settings.from_mapping(keywords, base=settings)
    limit = window or 64 * max(jobs, 1)
    end = None if total_timeout is None else time.monotonic() + total_timeout
    executor: Executor
    if jobs <= 1:
        executor = _Inline()
    else:
        ctx = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
        executor = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)
    in_workers = jobs > 1 and cache is not None and cache.shared
    order: deque[_Slot] = deque()
    running: dict[Future[_Done], tuple[_Slot, str]] = {}
    waiting: dict[str, list[_Slot]] = {}
    fingerprints: dict[tuple[str | None, str | None], str] = {}
    searches: dict[str, int] = {}  # fresh witness searches per key

    def budget() -> float | None:
        """The time a record may take: its own limit within what is left of the run's."""
        if end is None:
            return timeout
        left = end - time.monotonic()
        return left if timeout is None else min(timeout, left)

    def start(slot: _Slot) -> None:
        record = slot.record
        if record.error is not None:
            slot.row = _error_row(record, "error", record.error)
            return
        fp_key = (record.dialect, record.schema)
        fp = fingerprints.get(fp_key)
        if fp is None:
            fp = fingerprints[fp_key] = fingerprint(options, record)
        seconds = budget()
        if cache is None:
            if seconds is not None and seconds <= 0:
                slot.row = _past_total(record, total_timeout)
                return
            future = executor.submit(_work, _Task(record, options, seconds, fp, None, False))
            running[future] = (slot, "")
            return
        lexed = lex(record.sql)
        shape = _shape_id(fp, lexed)
        if shape in waiting:
            waiting[shape].append(slot)
            return
        plan = cache.plan(shape)
        if plan is not None:
            key = shape_key(fp, lexed, plan.abstract, plan.groups)
            if cache.result(key) is not None:
                cache.hits += 1
                serve(slot, fp, key, plan, seconds, lexed)
                return
        if seconds is not None and seconds <= 0:
            slot.row = _past_total(record, total_timeout)
            return
        cache.misses += 1
        waiting[shape] = []
        future = executor.submit(_work, _Task(record, options, seconds, fp, plan, True))
        running[future] = (slot, shape)

    def serve(slot: _Slot, fp: str, key: str, plan: Plan, seconds: float | None,
              lexed: Lexed) -> None:
        assert cache is not None
        search = searches.get(key, 0) < SEARCHES and (seconds is None or seconds > 0)
        task = _Check(slot.record, options, seconds, fp, key, plan, full, search, cache.path)
        proof = cache.proof(key) if options.prove_lower else None
        light = proof is None or not (proof.witnesses or search) \
            or cache.checked(key, _literal_key(lexed)) is not None
        if in_workers and not light:
            future = executor.submit(_check_in_worker, task)
            running[future] = (slot, "")
            return
        settled(_serve(cache, task, lexed), slot)

    def settled(done: _Done, slot: _Slot) -> None:
        slot.row = done.row
        if cache is not None and done.key and done.checked is not None:
            cache.store_checked(done.key, *done.checked)
        if cache is None or not done.key or not done.searched:
            return
        searches[done.key] = searches.get(done.key, 0) + 1
        if done.found is not None:
            proof = cache.proof(done.key)
            if proof is not None and proof.reusable:
                cache.store_proof(done.key, Proof(
                    proof.query, proof.sigma, (done.found, *proof.witnesses), None, "", True))
                if in_workers:
                    cache.commit()

    def settle(future: Future[_Done]) -> None:
        slot, shape = running.pop(future)
        done = future.result()
        if not shape:
            settled(done, slot)
            return
        slot.row = done.row
        assert cache is not None
        if done.template is not None and done.plan is not None:
            cache.store(done.shape, done.plan, done.key, done.template.row, done.literals,
                        done.proof)
            if done.checked is not None:
                cache.store_checked(done.key, *done.checked)
            searches[done.key] = 0
            if in_workers:
                cache.commit()  # the workers read the file: the key must be there first
        for other in waiting.pop(shape, []):
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
        if cache is not None:
            cache.commit()


def _past_total(record: Record, total: float | None) -> dict[str, Any]:
    return _error_row(record, "timeout", f"{record.where}: not analysed: the run's "
                                         f"--total-timeout ({total:g} s) had passed")
