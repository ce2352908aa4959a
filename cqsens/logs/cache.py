"""The canonical-shape cache: a SQLite file of shape plans and row templates.

Two tables: ``plans`` maps a shape (the options' fingerprint, the template of
tokens and which literals are equal) to the literals that may be abstract;
``results`` maps a cache key (:func:`cqsens.logs.shape.shape_key`) to the row
template of its first record (:mod:`cqsens.logs.template`) and that record's
literals.  The fingerprint holds cqsens's version, so a new version never
reads an old result.  Only the process that runs the log writes the file; a
cluster gives each worker its own file (README, "Query logs").
"""

from __future__ import annotations

import json
import sqlite3
from collections import OrderedDict
from pathlib import Path
from typing import Any

from cqsens.errors import InputError
from cqsens.logs.plan import Plan

__all__ = ["ShapeCache"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS plans (shape TEXT PRIMARY KEY, abstract TEXT NOT NULL,
                                  ordered TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, row TEXT NOT NULL,
                                    literals TEXT NOT NULL, ordered TEXT NOT NULL);
"""
_COMMIT_EVERY = 500
#: Plans and results kept in memory as well (each), the most recently used first.
MEMORY = 4096


class ShapeCache:
    """Plans and row templates in SQLite (``":memory:"`` for one run only).

    Parameters
    ----------
    path : str or Path
        The cache file (created when missing).

    Raises
    ------
    InputError
        The file is not a cqsens cache or cannot be opened.
    """

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        self.hits = 0
        self.misses = 0
        self._pending = 0
        self._plans: OrderedDict[str, Plan | None] = OrderedDict()
        self._results: OrderedDict[str, tuple[str, list[str], frozenset[int]] | None] = \
            OrderedDict()
        try:
            self._db = sqlite3.connect(self.path)
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as err:
            raise InputError(f"cannot use {self.path} as a cache ({err})", source=self.path,
                             construct="--cache") from None

    def plan(self, shape: str) -> Plan | None:
        """The plan of a shape, if one was stored."""
        if shape in self._plans:
            self._plans.move_to_end(shape)
            return self._plans[shape]
        got = self._db.execute("SELECT abstract, ordered FROM plans WHERE shape = ?",
                               (shape,)).fetchone()
        plan = None if got is None else Plan(frozenset(json.loads(got[0])),
                                             frozenset(json.loads(got[1])))
        if plan is not None:
            _remember(self._plans, shape, plan)
        return plan

    def result(self, key: str) -> tuple[str, list[str], frozenset[int]] | None:
        """The row template, the first record's literals and the literals compared by order."""
        if key in self._results:
            self._results.move_to_end(key)
            return self._results[key]
        got = self._db.execute("SELECT row, literals, ordered FROM results WHERE key = ?",
                               (key,)).fetchone()
        if got is None:
            return None
        found = (got[0], json.loads(got[1]), frozenset(json.loads(got[2])))
        _remember(self._results, key, found)
        return found

    def store(self, shape: str, plan: Plan, key: str, row: str, literals: list[str]) -> None:
        """Remember a shape's plan and a key's row template."""
        self._db.execute("INSERT OR REPLACE INTO plans VALUES (?, ?, ?)",
                         (shape, json.dumps(sorted(plan.abstract)),
                          json.dumps(sorted(plan.ordered))))
        self._db.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)",
                         (key, row, json.dumps(literals), json.dumps(sorted(plan.ordered))))
        _remember(self._plans, shape, plan)
        _remember(self._results, key, (row, list(literals), plan.ordered))
        self._pending += 1
        if self._pending >= _COMMIT_EVERY:
            self._db.commit()
            self._pending = 0

    def stats(self) -> dict[str, Any]:
        """Hits, misses and the number of stored results."""
        (count,) = self._db.execute("SELECT COUNT(*) FROM results").fetchone()
        return {"hits": self.hits, "misses": self.misses, "stored": count}

    def close(self) -> None:
        """Commit and close."""
        self._db.commit()
        self._db.close()


def _remember(memory: OrderedDict[str, Any], key: str, value: Any) -> None:
    memory[key] = value
    memory.move_to_end(key)
    if len(memory) > MEMORY:
        memory.popitem(last=False)
