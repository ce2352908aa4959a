"""The result of an analysis: a frozen, fully typed value with its JSON form.

``Analysis.to_dict()`` is the JSON object the CLI, the batch report and the API
all print (docs/json.md, "Output").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cqsens.engine.count import count_derivation
from cqsens.engine.neighbourhood import Neighbourhood
from cqsens.engine.paper import PaperValue
from cqsens.engine.paths import Weight
from cqsens.engine.rules import Derivation
from cqsens.engine.upper import UpperBound
from cqsens.explain import jsonable, structure
from cqsens.ir.cq import CQ, AggregateQuery
from cqsens.ir.dependencies import Sigma
from cqsens.ir.exact import Exact
from cqsens.release.noise import NoiseCalibration
from cqsens.witness.model import Witness

__all__ = ["AggregateRecord", "Analysis", "Renderers", "noise_dict", "register_renderers",
           "renderers"]


@dataclass(frozen=True, slots=True)
class Renderers:
    """How an analysis is put in words (rendering is :mod:`cqsens.report`'s, which
    registers its renderers with :func:`register_renderers` when it is imported, as
    ``import cqsens`` does): the sentence of a derivation, the one-line reason of an
    analysis, and the HTML card of a report row."""

    rule: Callable[[Derivation], str]
    reason: Callable[[Analysis], str]
    card: Callable[[dict[str, Any]], str]


_REGISTERED: list[Renderers] = []


def register_renderers(found: Renderers) -> None:
    """Make ``found`` the renderers of :class:`Analysis` and :class:`AggregateRecord`."""
    _REGISTERED[:] = [found]


def renderers() -> Renderers:
    """The registered renderers (:mod:`cqsens.report`'s)."""
    if not _REGISTERED:  # cqsens/__init__.py imports cqsens.report, which registers them
        raise RuntimeError("no renderers registered: import cqsens.report first")
    return _REGISTERED[0]


@dataclass(frozen=True, slots=True)
class AggregateRecord:
    """One released aggregate: its count bound, ℓ1/ℓ2 sensitivity, derivation and value range.

    ``derivation`` is the rule of docs/rules.md that gives ``l1`` with its inputs;
    :attr:`rule` is its sentence (:func:`cqsens.report.words.render`).
    """

    label: str
    kind: str
    count_bound: Weight
    l1: Exact
    l2: Exact
    derivation: Derivation
    values: str | None

    @property
    def rule(self) -> str:
        """The sentence of the rule applied, in the neighbourhood's words."""
        return renderers().rule(self.derivation)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of one aggregate (``rule_id``: the anchor in docs/rules.md)."""
        return {"label": self.label, "kind": self.kind, "count_bound": jsonable(self.count_bound),
                "l1": jsonable(self.l1), "l2": jsonable(self.l2), "rule": self.rule,
                "rule_id": self.derivation.rule.value, "values": self.values}


def noise_dict(noise: NoiseCalibration) -> dict[str, Any]:
    """The JSON object of a noise calibration (∞ as ``"inf"``)."""
    return {
        "epsilon": noise.epsilon,
        "delta": noise.delta,
        "laplace_scale": jsonable(noise.laplace_scale),
        "laplace_halfwidth_95": jsonable(noise.laplace_halfwidth_95),
        "gaussian_sigma": jsonable(noise.gaussian_sigma),
        "gaussian_method": noise.gaussian_method,
        "gaussian_classical_sigma": jsonable(noise.gaussian_classical_sigma),
        "gaussian_halfwidth_95": jsonable(noise.gaussian_halfwidth_95),
    }


@dataclass(frozen=True, slots=True)
class Analysis:
    """The result of analysing one query."""

    query: str
    source: str
    query_obj: AggregateQuery
    sigma: Sigma
    cq: CQ
    core: CQ
    connected: bool
    satisfiable: bool
    delta_str: Weight
    paper: Mapping[str, PaperValue]
    upper: Exact
    lower: Weight | None
    neighbor: str
    l1: Exact
    l2: Exact
    explanation: tuple[str, ...]
    bound: UpperBound
    notes: tuple[str, ...] = ()
    core_minimal: bool = True
    suggestion: tuple[str, ...] = ()
    witness: Witness | None = None
    lower_note: str = ""
    aggregates: tuple[AggregateRecord, ...] = ()
    contributions: int = 1
    noise: NoiseCalibration | None = None
    unit: str | None = None  # the privacy unit, users(id); None: one row
    dependency_names: tuple[str, ...] = ()  # Σ by column names, in Σ's order
    # the count bound's (one row, or one person); a set operation's combines its parts'
    derivation: Derivation | None = None
    nb: Neighbourhood = Neighbourhood()  # the neighbour relation as a whole
    # DDL of the per-person table the statement was analysed over (rule person-groups)
    derived_ddl: str = ""
    # a two-stage release (docs/rules.md, rule two-stage): each stage's own analysis, the
    # released subqueries first, the outer statement last; () for one release
    stages: tuple[Analysis, ...] = ()
    # each stage's (role, share of ε) when they are not a two-stage release's (threshold
    # stages, then the outer one, equal shares): docs/rules.md, rule released-view
    stage_shares: tuple[tuple[str, str], ...] = ()

    @property
    def free(self) -> tuple[str, ...]:
        """Names of the core's free variables."""
        return tuple(v.name for v in self.core.free)

    @property
    def aggregate(self) -> str:
        """Kind of the (first) aggregate."""
        return self.query_obj.aggregate

    @property
    def tight(self) -> bool:
        """True when the verified lower bound meets the upper bound."""
        return self.lower is not None and self.lower == self.upper

    @property
    def bounded(self) -> bool:
        """True when the upper bound is finite."""
        return self.upper != math.inf

    @property
    def neighbourhood(self) -> Neighbourhood:
        """The neighbour relation of the analysis (unit, model, rows per individual)."""
        return self.nb

    @property
    def count_derivation(self) -> Derivation:
        """The derivation of the count bound: one person's with a unit, else one row's."""
        if self.derivation is not None:
            return self.derivation
        return count_derivation(self.core, self.bound, self.neighbourhood)

    @property
    def combined(self) -> bool:
        """True for a statement combined from parts (set operations, grouping sets, outer
        joins; docs/rules.md, rule set-operations)."""
        return self.derivation is not None and "combination" in self.derivation.inputs

    @property
    def summary(self) -> str:
        """The reason of a combined statement, from its parts ("" for one query)."""
        return self.reason() if self.combined else ""

    def reason(self) -> str:
        """The one-line reason for the bound, in terms of the released statistic
        (:func:`cqsens.report.words.reason`)."""
        return renderers().reason(self)

    def structure(self) -> dict[str, Any]:
        """The core's canonical structure and the steps behind the bound, for drawings."""
        return structure(self.core, self.bound)

    def report_row(self) -> dict[str, Any]:
        """The row of ``cqsens report`` for this analysis (status ``ok``; the JSON rows'
        keys, see docs/guide/reports.md), named by :attr:`source`."""
        d = self.to_dict()
        s = d["sensitivity"]
        return {"file": self.source, "status": "ok", "error": None, "query": self.query,
                "aggregate": d["aggregate"], "upper": s["upper"], "lower": s["lower"],
                "tight": s["tight"], "reason": self.reason(),
                "suggestion": d["suggestion"][0] if d["suggestion"] else None,
                "noise": d.get("noise"), "analysis": d}

    def _repr_html_(self) -> str:
        """The card of this query in the HTML report, for Jupyter
        (:func:`cqsens.report.html.card_html`)."""
        return renderers().card(self.report_row())

    def to_dict(self, *, witness: bool = False) -> dict[str, Any]:
        """The JSON object of the analysis (∞ as ``"inf"``); ``witness`` adds the databases."""
        out: dict[str, Any] = {
            "query": self.query,
            "source": self.source,
            "cq": str(self.cq),
            "core": str(self.core),
            "free": list(self.free),
            "aggregate": self.aggregate,
            "connected": self.connected,
            "satisfiable": self.satisfiable,
            "delta_str": jsonable(self.delta_str),
            "paper": {k: jsonable(v.value) for k, v in self.paper.items()},
            "paper_notes": {k: v.reason for k, v in self.paper.items() if v.value is None},
            "sensitivity": {
                "upper": jsonable(self.upper),
                "lower": jsonable(self.lower),
                "tight": self.tight,
                "neighbor": self.neighbor,
                "l1": jsonable(self.l1),
                "l2": jsonable(self.l2),
            },
            "lower_note": self.lower_note or None,
            "dependencies": list(self.dependency_names) or [str(d) for d in self.sigma],
            "core_minimal": self.core_minimal,
            "count_rule_id": self.count_derivation.rule.value,
            "explanation": list(self.explanation),
            "notes": list(self.notes),
            "suggestion": list(self.suggestion),
            "structure": self.structure(),
        }
        if witness and self.witness is not None:
            out["witness"] = self.witness.to_dict()
        out["aggregates"] = [a.to_dict() for a in self.aggregates]
        out["contributions"] = self.contributions
        out["unit"] = self.unit
        if self.noise is not None:
            out["noise"] = noise_dict(self.noise)
        if self.stages:
            shares = self.stage_shares or tuple(
                ("outer" if i == len(self.stages) else "threshold", f"1/{len(self.stages)}")
                for i in range(1, len(self.stages) + 1))
            out["stages"] = [_stage_dict(i, a, share)
                             for (i, a), share in zip(enumerate(self.stages, start=1), shares,
                                                      strict=True)]
        return out


def _stage_dict(number: int, stage: Analysis, share: tuple[str, str]) -> dict[str, Any]:
    """One stage of a two-stage release, as JSON (docs/rules.md, rule two-stage)."""
    s = stage.to_dict()["sensitivity"]
    return {"stage": number, "query": stage.query, "aggregate": stage.aggregate,
            "upper": s["upper"], "lower": s["lower"], "l1": s["l1"], "l2": s["l2"],
            "rule_id": stage.count_derivation.rule.value,
            "epsilon_share": share[1], "role": share[0]}
