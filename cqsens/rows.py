"""The rows of ``cqsens report``: one typed value per query file or log record.

A :class:`Row` is frozen: a later step (a log record's name, its own lower bound)
makes a new row with :func:`dataclasses.replace`.  :meth:`Row.to_dict` is the JSON
object of ``cqsens/schemas/report.schema.json`` (and what the renderers of
:mod:`cqsens.report` read); a log record's row has the four keys of :class:`LogPart`
too.  Nothing is rendered here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, TypedDict

from cqsens.explain import jsonable
from cqsens.ir.exact import exact

__all__ = ["Inputs", "LogPart", "Row", "no_inputs", "summarise"]

#: The row keys every row has, in the order of the JSON object.
_KEYS = ("file", "status", "error", "query", "inputs", "aggregate", "upper", "lower", "tight",
         "reason", "suggestion", "noise", "analysis")


class Inputs(TypedDict):
    """The schema and constraints a query was analysed with, as the report names them."""

    schema: str | None
    constraints: str | None
    dependencies: list[str]


def no_inputs() -> Inputs:
    """No schema, no constraints, no dependencies."""
    return {"schema": None, "constraints": None, "dependencies": []}


@dataclass(frozen=True, slots=True)
class LogPart:
    """What a row of a query log adds: the record's ``id``, its key's first 16 hex
    digits (``shape``), whether the row came from the cache, and where its lower bound
    came from (``"searched"``, ``"reused"`` or None)."""

    id: str
    shape: str | None = None
    cached: bool = False
    proof: str | None = None


@dataclass(frozen=True, slots=True)
class Row:
    """One report row (see the module docstring); ``analysis`` is the analysis's JSON
    object (:meth:`cqsens.pipeline.Analysis.to_dict`), None for an error; a row that is
    not ``full`` has no ``analysis`` key (a log's JSON Lines row, made without it)."""

    file: str
    status: str
    error: str | None
    query: str | None
    inputs: Inputs
    aggregate: Any
    upper: Any
    lower: Any
    tight: bool
    reason: str | None
    suggestion: Any
    noise: Any
    analysis: dict[str, Any] | None
    log: LogPart | None = None
    full: bool = True

    @classmethod
    def failed(cls, file: str, status: str, message: str, query: str | None,
               inputs: Inputs | None = None, log: LogPart | None = None) -> Row:
        """The row of a query that failed (``status`` ``"error"`` or ``"timeout"``)."""
        return cls(file, status, message, query, dict(inputs or no_inputs()),  # type: ignore[arg-type]
                   None, None, None, False, message, None, None, None, log)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Row:
        """A row from its JSON object (a log row when it has an ``id``)."""
        log = None
        if "id" in data:
            log = LogPart(data["id"], data.get("shape"), bool(data.get("cached")),
                          data.get("proof"))
        fields: dict[str, Any] = {k: data.get(k) for k in _KEYS}
        fields["tight"] = bool(fields["tight"])
        return cls(**fields, log=log, full="analysis" in data)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the row: ``id`` first and ``proof``, ``shape``, ``cached``
        last for a log record."""
        out: dict[str, Any] = {k: getattr(self, k) for k in _KEYS}
        out["inputs"] = dict(self.inputs)
        if not self.full:
            del out["analysis"]
        if self.log is None:
            return out
        return {"id": self.log.id, **out, "proof": self.log.proof, "shape": self.log.shape,
                "cached": self.log.cached}

    def with_lower(self, lower: Any, note: str | None, proof: str | None) -> Row:
        """This row with its lower bound (``lower`` as :func:`cqsens.explain.jsonable` gives
        it, or an exact value), ``tight``, the analysis's ``lower_note`` and where the lower
        bound came from (``proof``; the row must be a log row)."""
        assert self.log is not None
        shown = lower if lower is None or isinstance(lower, str) else jsonable(lower)
        if isinstance(lower, float) and math.isinf(lower):
            shown = "inf"
        tight = shown is not None and shown == self.upper
        analysis = self.analysis
        if analysis is not None:
            sensitivity = dict(analysis["sensitivity"], lower=shown, tight=tight)
            analysis = dict(analysis, sensitivity=sensitivity, lower_note=note or None)
        return replace(self, lower=shown, tight=tight, analysis=analysis,
                       log=replace(self.log, proof=proof))


def _bucket(upper: Any) -> str:
    if upper == "inf" or upper == float("inf"):
        return "inf"
    value = exact(upper)  # a number, or its exact JSON string ("0.1", "20/3")
    if value <= 0:
        return "0"
    if value <= 1:
        return "1"
    if value <= 10:
        return "2-10"
    if value <= 1000:
        return "11-1000"
    return ">1000"


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts and the distribution of upper bounds."""
    ok = [r for r in rows if r["status"] == "ok" and r.get("upper") is not None]
    bounds = {k: 0 for k in ("0", "1", "2-10", "11-1000", ">1000", "inf")}
    for r in ok:
        bounds[_bucket(r["upper"])] += 1
    return {
        "total": len(rows),
        "bounded": sum(1 for r in ok if _bucket(r["upper"]) != "inf"),
        "unbounded": sum(1 for r in ok if _bucket(r["upper"]) == "inf"),
        "errors": sum(1 for r in rows if r["status"] == "error"),
        "timed_out": sum(1 for r in rows if r["status"] == "timeout"),
        "tight": sum(1 for r in ok if r["tight"]),
        "bounds": bounds,
    }
