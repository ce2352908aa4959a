"""Analyse a query log: rows in input order, streamed, one analysis per shape.

:func:`analyse_log` reads records lazily and yields one report row per record,
in input order, as soon as the rows before it are done.  At most ``window``
records are in flight, whatever the log's length, so memory does not grow with
it.  Each record is lexed (:func:`cqsens.logs.shape.lex`); a record whose
cache key is stored is instantiated from its row template in this process, and
only a new shape is analysed, in a worker process (``jobs`` > 1) or here.
Records of a shape already being analysed wait for that analysis instead of
repeating it.  A record that fails is an error row with its id (``file:line``);
the run goes on.  The time limits, the workers and the ordered streaming are
:mod:`cqsens.runner`'s, shared with the batch of query files; the rows are
:class:`cqsens.rows.Row` values until they are yielded as JSON objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

from cqsens.logs.cache import ShapeCache, Verdict
from cqsens.logs.fingerprint import fingerprint
from cqsens.logs.lines import Line, line_of
from cqsens.logs.plan import Plan
from cqsens.logs.proofs import Proof
from cqsens.logs.records import Record
from cqsens.logs.serve import (
    HITS_BATCH,
    SEARCHES,
    _Check,
    _checks_in_worker,
    _decided,
    _Done,
    _error_row,
    _hit_lines,
    _Hits,
    _literal_key,
    _PlainLine,
    _serve,
    _shape_id,
    _Task,
    _work,
)
from cqsens.logs.shape import Lexed, lex, record_key
from cqsens.rows import Row
from cqsens.runner import Clock, Ordered, Slot, executor
from cqsens.settings import Settings

__all__ = ["analyse_log", "fingerprint", "log_lines"]

_Slot = Slot[Row | Line]
#: Records started between two looks for finished tasks (:func:`_run`).
POLL = 16
#: Records whose witness is checked in one worker task (:meth:`_LogRun.flush_checks`).
CHECKS_BATCH = 8

class _LogRun:
    """The state of one :func:`analyse_log` run: the records in flight, the shapes being
    analysed and the records waiting for them, the fresh searches per key."""

    def __init__(self, options: Settings, cache: ShapeCache | None, clock: Clock,
                 stream: Ordered[Row | Line], *, in_workers: bool, full: bool,
                 lines: bool = False) -> None:
        self.options = options
        self.cache = cache
        self.clock = clock
        self.stream = stream
        self.in_workers = in_workers
        self.full = full
        self.lines = lines  # a hit whose lower bound is decided becomes its JSON line here
        # JSON lines with workers: records go to the workers in batches first, and come
        # back written when they are decided hits (a log run again: nearly all of them)
        self.batching = lines and in_workers
        self.batch: list[_Slot] = []
        self.direct = 0
        self.waiting: dict[str, list[_Slot]] = {}
        self.fingerprints: dict[tuple[str | None, str | None], str] = {}
        self.searches: dict[str, int] = {}  # fresh witness searches per key
        # records whose text (key and literals) is being checked in a worker: the later
        # ones wait for its verdict, so that one text gets one verdict in a run
        self.proving: dict[tuple[str, str], list[tuple[_Slot, Lexed]]] = {}
        # records to check in a worker, sent CHECKS_BATCH at a time (:meth:`flush_checks`)
        self.checks: list[tuple[_Slot, tuple[str, str], str, Plan, _Check]] = []

    def _fingerprint(self, record: Record) -> str:
        fp_key = (record.dialect, record.schema)
        fp = self.fingerprints.get(fp_key)
        if fp is None:
            fp = self.fingerprints[fp_key] = fingerprint(self.options, record)
        return fp

    def start(self, slot: _Slot) -> None:
        """Fill the slot of a record, or submit its analysis or check."""
        record: Record = slot.item
        if record.error is not None:
            self.stream.fill(slot, _error_row(record, "error", record.error))
            return
        fp = self._fingerprint(record)
        seconds = self.clock.budget()
        cache = self.cache
        if cache is None:
            if seconds is not None and seconds <= 0:
                self.stream.fill(slot, _past_total(record, self.clock.total))
                return
            task = _Task(record, self.options, seconds, fp, None, False)
            self.stream.submit(slot, self.settled, _work, task)
            return
        lexed = lex(record.sql)
        shape = _shape_id(fp, lexed)
        if shape in self.waiting:
            self.waiting[shape].append(slot)
            return
        plan = cache.plan(shape)
        if plan is not None:
            key = record_key(fp, lexed, plan.abstract, plan.groups, aliases=plan.aliases)
            if cache.result(key) is not None:
                cache.hits += 1
                self.serve(slot, fp, key, plan, seconds, lexed)
                return
        if seconds is not None and seconds <= 0:
            self.stream.fill(slot, _past_total(record, self.clock.total))
            return
        cache.misses += 1
        self.waiting[shape] = []
        self.stream.submit(slot, partial(self.shaped, shape), _work,
                           _Task(record, self.options, seconds, fp, plan, True))

    def serve(self, slot: _Slot, fp: str, key: str, plan: Plan, seconds: float | None,
              lexed: Lexed) -> None:
        """The row of a record whose key is stored: here, or in a worker when its witness
        must be checked or searched."""
        cache = self.cache
        assert cache is not None
        search = self.searches.get(key, 0) < SEARCHES and (seconds is None or seconds > 0)
        lower = self.options.prove_lower
        text = _literal_key(lexed)
        mark = (key, text)
        if mark in self.proving:
            self.proving[mark].append((slot, lexed))
            return
        seen = cache.checked(key, text) if lower else None
        if self.lines and (seen is not None or not lower):
            line = self.line(slot.item, key, lexed, seen)
            if line is not None:
                self.stream.fill(slot, line)
                return
        task = _Check(slot.item, self.options, seconds, fp, key, plan, self.full, search,
                      cache.path, seen)
        proof = cache.proof(key) if lower else None
        light = proof is None or not (proof.witnesses or search) or seen is not None
        if self.in_workers and not light:
            self.proving[mark] = []
            self.checks.append((slot, mark, fp, plan, task))
            if len(self.checks) >= CHECKS_BATCH:
                self.flush_checks()
            return
        self.settled(slot, _serve(cache, task, lexed))

    def line(self, record: Record, key: str, lexed: Lexed, seen: Verdict | None
             ) -> Line | None:
        """:func:`_decided` for a hit of this run's cache."""
        cache = self.cache
        assert cache is not None
        got = cache.result(key)
        return None if got is None else _decided(got.row, record, key, lexed, seen)

    def add(self, slot: _Slot) -> None:
        """A record of the log: batched for a worker to write if it is a decided hit
        (JSON lines, workers and a file cache), else started here."""
        if not self.batching:
            self.start(slot)
            return
        if self.direct > 0:  # the last batches were mostly not decided hits
            self.direct -= 1
            self.start(slot)
            return
        self.batch.append(slot)
        if len(self.batch) >= HITS_BATCH:
            self.flush()

    def shared_cache(self) -> ShapeCache:
        """The file cache, with what this process stored committed for the workers to
        read."""
        cache = self.cache
        assert cache is not None
        cache.commit()
        return cache

    def flush(self) -> None:
        """Send the batched records to a worker."""
        if not self.batch:
            return
        slots, self.batch = self.batch, []
        cache = self.shared_cache()
        task = _Hits(tuple((r.id, r.where, r.sql, r.dialect, r.schema, r.error)
                           for r in (slot.item for slot in slots)), self.options, cache.path)
        self.stream.submit(slots[0], partial(self.batched, slots), _hit_lines, task)

    def batched(self, slots: list[_Slot], _first: _Slot, lines: list[_PlainLine | None]
                ) -> None:
        """A worker wrote the lines of the decided hits among ``slots``: start the others."""
        cache = self.cache
        assert cache is not None
        left = 0
        for slot, line in zip(slots, lines, strict=True):
            if line is None:
                left += 1
                self.start(slot)
            else:
                cache.hits += 1
                self.stream.fill(slot, Line(*line))
        if 2 * left > len(slots):  # mostly new: the next records go the long way at once
            self.direct = 8 * HITS_BATCH
        self.flush_checks()

    def flush_checks(self) -> None:
        """Send the records whose witness is to be checked to a worker, together."""
        if not self.checks:
            return
        items, self.checks = self.checks, []
        self.shared_cache()
        self.stream.submit(items[0][0], partial(self.checked_batch, items), _checks_in_worker,
                           tuple(item[4] for item in items))

    def checked_batch(self, items: list[tuple[_Slot, tuple[str, str], str, Plan, _Check]],
                      _first: _Slot, dones: list[_Done]) -> None:
        """The records of a batch of checks are done (see :meth:`proved`)."""
        for (slot, mark, fp, plan, _), done in zip(items, dones, strict=True):
            self.proved(mark, fp, plan, slot, done)
        self.flush_checks()  # what the records waiting for them started

    def proved(self, mark: tuple[str, str], fp: str, plan: Plan, slot: _Slot,
               done: _Done) -> None:
        """A record checked in a worker is done: serve the records of the same text that
        waited for it (its verdict, now stored, is theirs)."""
        self.settled(slot, done)
        for other, lexed in self.proving.pop(mark, []):
            self.serve(other, fp, mark[0], plan, self.clock.budget(), lexed)

    def settled(self, slot: _Slot, done: _Done) -> None:
        """A record's row is known: keep what it proved."""
        self.stream.fill(slot, done.row)
        cache = self.cache
        if cache is not None and done.key and done.checked is not None:
            cache.store_checked(done.key, done.checked)
        if cache is None or not done.key or not done.searched:
            return
        self.searches[done.key] = self.searches.get(done.key, 0) + 1
        if done.found is not None:
            proof = cache.proof(done.key)
            if proof is not None and proof.reusable:
                cache.store_proof(done.key, Proof(
                    proof.query, proof.sigma, (done.found, *proof.witnesses), None, "", True))
                if self.in_workers:
                    cache.commit()

    def shaped(self, shape: str, slot: _Slot, done: _Done) -> None:
        """A new shape's first record is analysed: store its template, start the records
        that waited for it."""
        self.stream.fill(slot, done.row)
        cache = self.cache
        assert cache is not None
        if done.template is not None and done.plan is not None:
            cache.store(done.shape, done.plan, done.key, done.template.row, done.literals,
                        done.proof)
            if done.checked is not None:
                cache.store_checked(done.key, done.checked)
            self.searches[done.key] = 0
            if self.in_workers:
                cache.commit()  # the workers read the file: the key must be there first
        for other in self.waiting.pop(shape, []):
            self.start(other)
        self.flush_checks()


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
        One report row per record (:meth:`cqsens.rows.Row.to_dict`): ``id``, ``file``
        (``file:line``), ``status``, ``upper``, ``lower``, ``tight``, ``reason``, ...,
        ``shape`` (the first 16 hex digits of the cache key), ``cached`` and ``proof``
        (``"searched"``: the lower bound was found for this record; ``"reused"``: a
        witness of its key, instantiated for it and checked; null: no lower bound).
    """
    for row in _run(records, jobs, timeout, total_timeout, cache, window, full, False,
                    Settings.from_mapping(keywords, base=settings)):
        assert isinstance(row, Row)
        yield row.to_dict()


def log_lines(
    records: Iterable[Record],
    *,
    jobs: int = 1,
    timeout: float | None = 10.0,
    total_timeout: float | None = None,
    cache: ShapeCache | None = None,
    window: int | None = None,
    settings: Settings | None = None,
) -> Iterator[Line]:
    """:func:`analyse_log` (with ``full=False``) as the JSON Lines rows of ``cqsens report
    LOG -o out.jsonl``, in input order; a hit whose lower bound is decided is written
    straight from its key's template (:mod:`cqsens.logs.lines`)."""
    options = settings or Settings()
    for row in _run(records, jobs, timeout, total_timeout, cache, window, False, True, options):
        yield row if isinstance(row, Line) else line_of(row)


def _run(records: Iterable[Record], jobs: int, timeout: float | None,
         total_timeout: float | None, cache: ShapeCache | None, window: int | None,
         full: bool, lines: bool, options: Settings) -> Iterator[Row | Line]:
    stream: Ordered[Row | Line] = Ordered(executor(jobs), window or 64 * max(jobs, 1))
    run = _LogRun(options, cache, Clock.started(timeout, total_timeout), stream,
                  in_workers=jobs > 1 and cache is not None and cache.shared, full=full,
                  lines=lines)
    try:
        for count, record in enumerate(records):
            run.add(stream.add(record))
            # a record waiting in a batch has nothing to settle yet; otherwise the finished
            # tasks are looked for every POLL records (each look asks every task in flight)
            # and whenever the window is full
            if not run.batch and (count % POLL == 0 or len(stream.order) >= stream.window):
                yield from stream.throttle()
        run.flush()
        run.flush_checks()
        yield from stream.drain()
    finally:
        stream.close()
        if cache is not None:
            cache.commit()


def _past_total(record: Record, total: float | None) -> Row:
    return _error_row(record, "timeout", f"{record.where}: not analysed: the run's "
                                         f"--total-timeout ({total:g} s) had passed")
