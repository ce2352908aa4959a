"""Run analyses one per input, under time limits, in worker processes, in input order.

The one execution layer of ``cqsens report``, for folders (:mod:`cqsens.batch`) and
query logs (:mod:`cqsens.logs.run`):

* :func:`limited` runs one analysis under its per-query limit: the analysis's own
  deadline (``Settings.timeout``), and SIGALRM behind it in the main thread;
* :func:`failure` turns what an analysis raised into a row's status and message;
* :class:`Clock` gives each input its time: its own limit within what is left of the
  run's total;
* :func:`executor` runs tasks in this process (``jobs`` = 1) or in worker processes;
* :class:`Ordered` streams the results in input order as soon as the ones before them
  are done, with at most ``window`` inputs in flight (memory does not grow with the
  input's length).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from cqsens.errors import InputError, TimeLimitError

__all__ = ["NO_LIMIT_SECONDS", "Clock", "Ordered", "Slot", "executor", "failure", "limited"]

T = TypeVar("T")
R = TypeVar("R")

#: A per-query limit above this many seconds (about 31 years) is no limit at all.
NO_LIMIT_SECONDS = 1e9


class _Alarm(BaseException):
    """Raised by the alarm; a BaseException so no library's ``except Exception`` swallows it."""


class _Rung:
    """Whether the alarm of the current :func:`limited` call has rung."""

    rung = False


def _ring(signum: int, frame: Any) -> None:  # pragma: no cover - signal handler
    _Rung.rung = True
    raise _Alarm


def limited(run: Callable[[], T], timeout: float | None, *, slack: float = 1.0,
            floor: float = 1e-6) -> T:
    """``run()`` with SIGALRM at ``timeout * slack`` seconds behind the analysis's own deadline.

    Parameters
    ----------
    run : callable
        The analysis (it keeps its own deadline; the alarm is the backstop).
    timeout : float or None
        Seconds (None, or over :data:`NO_LIMIT_SECONDS`: no alarm).  No alarm either
        outside the main thread or without ``signal.setitimer``.
    slack, floor : float
        The alarm rings at ``max(timeout * slack, floor)`` seconds (``setitimer``
        takes a time below a microsecond as "no timer").

    Raises
    ------
    TimeLimitError
        The alarm rang, whatever ``run`` raised after it (an alarm inside a SQLite
        callback comes back as a ``sqlite3.OperationalError``).
    """
    if timeout is None or not 0 < timeout < NO_LIMIT_SECONDS or not hasattr(signal, "setitimer") \
            or threading.current_thread() is not threading.main_thread():
        return run()
    previous = signal.signal(signal.SIGALRM, _ring)
    _Rung.rung = False
    try:
        signal.setitimer(signal.ITIMER_REAL, max(timeout * slack, floor))
        try:
            return run()
        finally:  # an alarm due before this line is an _Alarm caught below
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Alarm:
        raise TimeLimitError("analysis", timeout) from None
    except Exception:
        if _Rung.rung:  # the alarm's exception was turned into another one on its way out
            raise TimeLimitError("analysis", timeout) from None
        raise
    finally:
        signal.signal(signal.SIGALRM, previous)


def one_line(text: str) -> str:
    """``text`` with its runs of white space as one space."""
    return " ".join(text.split())


def failure(exc: BaseException, where: str, timeout: float | None) -> tuple[str, str]:
    """The status (``"timeout"`` or ``"error"``) and message of a row whose analysis of
    ``where`` raised ``exc``; an InputError's message is its own text, on one line."""
    if isinstance(exc, TimeLimitError):
        limit = "its limit" if timeout is None else f"{timeout:g} s"
        return "timeout", f"{where}: timed out after {limit}"
    if isinstance(exc, InputError):
        return "error", one_line(str(exc))
    if isinstance(exc, RecursionError):
        return "error", f"{where}: the query is too deeply nested to analyse"
    return "error", (f"{where}: internal error ({type(exc).__name__}: {exc}); "
                     "please report it")


@dataclass(frozen=True, slots=True)
class Clock:
    """Each input's time: ``timeout`` seconds (None: no limit) within ``total`` seconds
    for the whole run from ``start`` (None: no limit)."""

    timeout: float | None
    total: float | None = None
    start: float = 0.0

    @classmethod
    def started(cls, timeout: float | None, total: float | None = None) -> Clock:
        """A clock whose run starts now."""
        return cls(timeout, total, time.monotonic())

    def budget(self) -> float | None:
        """The time the next input may take (0 or less: the run's total has passed)."""
        if self.total is None:
            return self.timeout
        left = self.start + self.total - time.monotonic()
        return left if self.timeout is None else min(self.timeout, left)


class _Inline(Executor):
    """Runs each task at once, in this process (``jobs`` = 1)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def executor(jobs: int) -> Executor:
    """This process for ``jobs`` <= 1, else a pool of ``jobs`` worker processes (forked
    where the platform can)."""
    if jobs <= 1:
        return _Inline()
    ctx = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)


@dataclass(eq=False)
class Slot(Generic[T]):
    """An input's place in the output order, and its result once known."""

    item: Any
    result: T | None = None


class Ordered(Generic[T]):
    """Results in input order, streamed: see the module docstring.

    Parameters
    ----------
    pool : Executor
        Where submitted tasks run (:func:`executor`).
    window : int
        Inputs in flight at most (:meth:`throttle` waits beyond it).
    """

    def __init__(self, pool: Executor, window: int) -> None:
        self.pool = pool
        self.window = window
        self.order: deque[Slot[T]] = deque()
        self.running: dict[Future[Any], tuple[Slot[T], Callable[[Slot[T], Any], None]]] = {}

    def add(self, item: Any) -> Slot[T]:
        """The next input's slot."""
        slot: Slot[T] = Slot(item)
        self.order.append(slot)
        return slot

    def submit(self, slot: Slot[T], done: Callable[[Slot[T], R], None],
               fn: Callable[[Any], R], task: Any) -> None:
        """Run ``fn(task)`` in the pool; ``done(slot, result)`` is called in this process
        (it fills the slot with :meth:`fill`, or later)."""
        self.running[self.pool.submit(fn, task)] = (slot, done)

    @staticmethod
    def fill(slot: Slot[T], result: T) -> None:
        """The slot's result."""
        slot.result = result

    def _settle(self, futures: Iterator[Future[Any]] | list[Future[Any]]) -> None:
        for future in futures:
            slot, done = self.running.pop(future)
            done(slot, future.result())

    def _ready(self) -> Iterator[T]:
        while self.order and self.order[0].result is not None:
            result = self.order.popleft().result
            assert result is not None
            yield result

    def poll(self) -> Iterator[T]:
        """Settle the finished tasks; yield the results that are next in order."""
        self._settle([f for f in self.running if f.done()])
        yield from self._ready()

    def throttle(self) -> Iterator[T]:
        """:meth:`poll`, then wait while ``window`` inputs are in flight."""
        yield from self.poll()
        while len(self.order) >= self.window and self.running:
            finished, _ = wait(list(self.running), return_when=FIRST_COMPLETED)
            self._settle(list(finished))
            yield from self._ready()

    def drain(self) -> Iterator[T]:
        """Wait for every task; yield the remaining results."""
        while self.running:
            finished, _ = wait(list(self.running), return_when=FIRST_COMPLETED)
            self._settle(list(finished))
            yield from self._ready()
        yield from self._ready()

    def close(self) -> None:
        """Stop the pool (the tasks not started are cancelled)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
