"""The canonical-shape cache: a SQLite file of shape plans, row templates and witnesses.

Four tables: ``plans`` maps a shape (the options' fingerprint, the template of
tokens and which literals are equal) to its plan (the literals that may be
abstract and the groups of literals that can meet); ``results`` maps a cache
key (:func:`cqsens.logs.shape.shape_key`) to the row template of its first
record (:mod:`cqsens.logs.template`) and that record's literals; ``proofs``
maps a key to what its records proved about the lower bound: the shape's
parsed query and witnesses, each with its record's literal values
(:mod:`cqsens.logs.proofs`); ``checked`` maps a key and one record's literals (as
written) to the verdict on exactly that record's lower bound (:class:`Verdict`: the
lower bound a checked witness proved and where it came from, or none proven, with its
note), so that a record seen before (a log run again) is served the same row without
checking its witness again.
The fingerprint holds cqsens's version, so a new
version never reads an old result.

A file cache is in SQLite's WAL mode: one process writes (the one that runs the
log) while its worker processes, or other runs, read it.  A cluster can give
each worker its own file and :meth:`ShapeCache.merge` them afterwards
(docs/guide/reports.md, "Query logs").
"""

from __future__ import annotations

import json
import sqlite3
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from cqsens.errors import InputError
from cqsens.logs.plan import Plan
from cqsens.logs.proofs import Proof, pack, unpack

_T = TypeVar("_T")

__all__ = ["FORMAT", "Result", "ShapeCache", "Verdict"]

#: The layout of the file (SQLite's user_version); a file of another layout is emptied.
FORMAT = 5
_SCHEMA = """
CREATE TABLE IF NOT EXISTS plans (shape TEXT PRIMARY KEY, plan TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, row TEXT NOT NULL,
                                    literals TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS proofs (key TEXT PRIMARY KEY, proof BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS checked (key TEXT NOT NULL, literals TEXT NOT NULL,
                                    lower TEXT NOT NULL, note TEXT, proof TEXT,
                                    PRIMARY KEY (key, literals));
"""
_TABLES = ("plans", "results", "proofs", "checked")
_COMMIT_EVERY = 500
#: Plans, results and proofs kept in memory as well (each), the most recently used first.
MEMORY = 4096
#: Witnesses kept per key (the most recent first).
WITNESSES = 6


@dataclass(frozen=True, slots=True)
class Result:
    """A key's row template and the literals (as written) of the record it came from."""

    row: str
    literals: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one record's row said about its lower bound: ``lower`` (its JSON text,
    ``null`` when none was proven), the note beside it, and ``proof`` (``"searched"``,
    ``"reused"`` or None), for the record whose literals, as written, are ``literals``
    (a JSON list)."""

    literals: str
    lower: str
    note: str | None
    proof: str | None


def _plan_json(plan: Plan) -> str:
    return json.dumps({"abstract": sorted(plan.abstract), "ordered": sorted(plan.ordered),
                       "groups": None if plan.groups is None else [list(g) for g in plan.groups],
                       "aliases": plan.aliases})


def _plan_of(text: str) -> Plan:
    got = json.loads(text)
    groups = got["groups"]
    return Plan(frozenset(got["abstract"]), frozenset(got["ordered"]),
                None if groups is None else tuple(tuple(g) for g in groups),
                bool(got.get("aliases", False)))


class ShapeCache:
    """Plans, row templates and witnesses in SQLite (``":memory:"`` for one run only).

    Parameters
    ----------
    path : str or Path
        The cache file (created when missing).
    readonly : bool
        Open for reading only (a worker process of the run that writes it).

    Raises
    ------
    InputError
        The file is not a cqsens cache or cannot be opened.
    """

    def __init__(self, path: str | Path = ":memory:", *, readonly: bool = False) -> None:
        self.path = str(path)
        self.hits = 0
        self.misses = 0
        self._pending = 0
        self._plans: OrderedDict[str, Plan | None] = OrderedDict()
        self._results: OrderedDict[str, Result | None] = OrderedDict()
        self._proofs: OrderedDict[str, Proof | None] = OrderedDict()
        try:
            self._db = sqlite3.connect(self.path, timeout=30.0)
            if self.shared:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            if not readonly:
                self._migrate()
        except sqlite3.DatabaseError as err:
            raise InputError(f"cannot use {self.path} as a cache ({err})", source=self.path,
                             construct="--cache") from None

    @property
    def shared(self) -> bool:
        """Whether other processes can open this cache (a file, not ``:memory:``)."""
        return self.path != ":memory:" and not self.path.startswith("file::memory:")

    def _migrate(self) -> None:
        (version,) = self._db.execute("PRAGMA user_version").fetchone()
        tables = {name for (name,) in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version != FORMAT and tables - set(_TABLES):
            raise InputError(f"{self.path} is not a cqsens cache (it holds the tables "
                             f"{', '.join(sorted(tables))}); give another --cache file",
                             source=self.path, construct="--cache")
        if version != FORMAT:  # an older layout: a cache is only a cache, start afresh
            for table in _TABLES:
                self._db.execute(f"DROP TABLE IF EXISTS {table}")
            self._db.execute(f"PRAGMA user_version = {FORMAT}")
        self._db.executescript(_SCHEMA)
        self._db.commit()

    def _read(self, sql: str, *args: str) -> Any:
        try:
            # fetchall ends the statement, and with it the read transaction: a worker's
            # next read sees what the writer committed since (WAL snapshots)
            rows = self._db.execute(sql, args).fetchall()
            return rows[0] if rows else None
        except sqlite3.DatabaseError as err:
            raise InputError(f"cannot read the cache {self.path} ({err})", source=self.path,
                             construct="--cache") from None

    def _cached(self, memory: OrderedDict[str, _T], key: str, sql: str,
                read: Callable[[Any], _T]) -> _T | None:
        """The value of ``key`` in ``memory``, else read from the file by ``sql`` (``read``
        turns the row into it) and remembered; None when the file has none."""
        if key in memory:
            memory.move_to_end(key)
            return memory[key]
        got = self._read(sql, key)
        if got is None:
            return None
        found = read(got)
        _remember(memory, key, found)
        return found

    def plan(self, shape: str) -> Plan | None:
        """The plan of a shape, if one was stored."""
        return self._cached(self._plans, shape, "SELECT plan FROM plans WHERE shape = ?",
                            lambda got: _plan_of(got[0]))

    def result(self, key: str) -> Result | None:
        """The row template of a key and the literals of the record it came from."""
        return self._cached(self._results, key, "SELECT row, literals FROM results WHERE key = ?",
                            lambda got: Result(got[0], tuple(json.loads(got[1]))))

    def proof(self, key: str) -> Proof | None:
        """What the records of a key proved about its lower bound."""
        return self._cached(self._proofs, key, "SELECT proof FROM proofs WHERE key = ?",
                            lambda got: unpack(bytes(got[0]), self.path))

    def checked(self, key: str, literals: str) -> Verdict | None:
        """The verdict on the lower bound of the record of ``key`` whose literals, as
        written, are ``literals`` (a JSON list), if one was stored."""
        got = self._read("SELECT lower, note, proof FROM checked WHERE key = ? AND literals = ?",
                         key, literals)
        return None if got is None else Verdict(literals, str(got[0]), got[1], got[2])

    def checked_many(self, wanted: list[tuple[str, str]]) -> dict[tuple[str, str], Verdict]:
        """:meth:`checked` of several (key, literals) pairs at once: the verdicts stored,
        by pair (one query per key)."""
        by_key: dict[str, set[str]] = {}
        for key, literals in wanted:
            by_key.setdefault(key, set()).add(literals)
        out: dict[tuple[str, str], Verdict] = {}
        for key, texts in by_key.items():
            listed = sorted(texts)
            marks = ", ".join("?" * len(listed))
            try:
                rows = self._db.execute(
                    f"SELECT literals, lower, note, proof FROM checked WHERE key = ? "  # noqa: S608
                    f"AND literals IN ({marks})", (key, *listed)).fetchall()
            except sqlite3.DatabaseError as err:
                raise InputError(f"cannot read the cache {self.path} ({err})", source=self.path,
                                 construct="--cache") from None
            for literals, lower, note, proof in rows:
                out[(key, literals)] = Verdict(literals, str(lower), note, proof)
        return out

    def store_checked(self, key: str, verdict: Verdict) -> None:
        """Remember the verdict on one record's lower bound (see :meth:`checked`)."""
        self._db.execute("INSERT OR REPLACE INTO checked VALUES (?, ?, ?, ?, ?)",
                         (key, verdict.literals, verdict.lower, verdict.note, verdict.proof))
        self._written()

    def store(self, shape: str, plan: Plan, key: str, row: str, literals: list[str],
              proof: Proof | None) -> None:
        """Remember a shape's plan, a key's row template and its proof.

        A shape keeps the first plan stored: a later record of it whose template could
        abstract less (a narrower plan) keys its own result by that plan, and the shape's
        other records are still looked up by the first (replacing it made the records keyed
        before miss, and a warm run keyed records differently from the first run)."""
        added = self._db.execute("INSERT OR IGNORE INTO plans VALUES (?, ?)",
                                 (shape, _plan_json(plan))).rowcount
        self._db.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?)",
                         (key, row, json.dumps(literals)))
        if added:
            _remember(self._plans, shape, plan)
        _remember(self._results, key, Result(row, tuple(literals)))
        if proof is not None:
            self.store_proof(key, proof)
        self._written()

    def store_proof(self, key: str, proof: Proof) -> None:
        """Replace a key's proof (a witness found for another record of it)."""
        if len(proof.witnesses) > WITNESSES:
            proof = Proof(proof.query, proof.sigma, proof.witnesses[:WITNESSES], proof.lower,
                          proof.note, proof.reusable)
        self._db.execute("INSERT OR REPLACE INTO proofs VALUES (?, ?)", (key, pack(proof)))
        _remember(self._proofs, key, proof)
        self._written()

    def _written(self) -> None:
        self._pending += 1
        if self._pending >= _COMMIT_EVERY:
            self.commit()

    def commit(self) -> None:
        """Make what was stored visible to other processes."""
        if self._pending:
            self._db.commit()
            self._pending = 0

    def merge(self, other: str | Path) -> int:
        """Copy into this cache every plan, result and proof of another cache file that
        this one lacks (one cache per worker of a cluster, merged afterwards).

        Returns
        -------
        int
            The number of results copied.
        """
        self.commit()
        try:
            self._db.execute("ATTACH DATABASE ? AS other", (str(other),))
        except sqlite3.DatabaseError as err:
            raise InputError(f"cannot read the cache {other} ({err})", source=str(other),
                             construct="--cache") from None
        try:
            (version,) = self._db.execute("PRAGMA other.user_version").fetchone()
            if version != FORMAT:
                raise InputError(f"{other} is not a cache of this version of cqsens",
                                 source=str(other), construct="--cache")
            self._db.execute("INSERT OR IGNORE INTO plans SELECT * FROM other.plans")
            self._db.execute("INSERT OR IGNORE INTO proofs SELECT * FROM other.proofs")
            self._db.execute("INSERT OR IGNORE INTO checked SELECT * FROM other.checked")
            middle = self._db.total_changes
            self._db.execute("INSERT OR IGNORE INTO results SELECT * FROM other.results")
            copied = self._db.total_changes - middle
            self._db.commit()
        finally:
            self._db.execute("DETACH DATABASE other")
        return copied

    def stats(self) -> dict[str, Any]:
        """Hits, misses and the number of stored results."""
        (count,) = self._db.execute("SELECT COUNT(*) FROM results").fetchone()
        return {"hits": self.hits, "misses": self.misses, "stored": count}

    def close(self) -> None:
        """Commit and close."""
        try:
            self._db.commit()
        finally:
            self._db.close()


def _remember(memory: OrderedDict[str, Any], key: str, value: Any) -> None:
    memory[key] = value
    memory.move_to_end(key)
    if len(memory) > MEMORY:
        memory.popitem(last=False)
