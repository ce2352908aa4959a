"""The values the analysis stages pass along: :class:`Options` (what an analysis takes
besides the query and Σ) and :class:`State` (each stage fills its own fields), and the
:class:`~cqsens.analysis.Analysis` read off the last state."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from cqsens.analysis import AggregateRecord, Analysis
from cqsens.engine.count import CORE_BUDGET, CountBound, count_derivation
from cqsens.engine.gaifman import is_connected
from cqsens.engine.neighbourhood import Neighbourhood
from cqsens.engine.paper import PaperValue
from cqsens.engine.paths import Weight
from cqsens.engine.person import PersonBound, person_derivation
from cqsens.engine.rules import Derivation
from cqsens.explain import named_dependency
from cqsens.ir.cq import AggregateQuery
from cqsens.ir.dependencies import Sigma
from cqsens.ir.exact import Exact
from cqsens.ir.schema import Schema
from cqsens.release.aggregates import AggregateBound
from cqsens.release.noise import NoiseCalibration
from cqsens.settings import Settings
from cqsens.witness.model import Witness

__all__ = ["Options", "State", "analysis_of"]


@dataclass(frozen=True, slots=True)
class Options:
    """What an analysis takes besides the query and Σ: the user's :class:`Settings`, the
    schema and value bounds they resolve to, the neighbourhood, and the core search budget."""

    settings: Settings = Settings()
    schema: Schema | None = None
    nb: Neighbourhood = Neighbourhood()
    value_bounds: Mapping[str, tuple[Exact, Exact]] = field(default_factory=dict)
    core_budget: int = CORE_BUDGET

    @property
    def rows(self) -> int | None:
        """The number of rows (``Settings.rows``)."""
        return self.settings.rows

    @property
    def prove_lower(self) -> bool:
        """Whether to search for a witness (``Settings.prove_lower``)."""
        return self.settings.prove_lower

    @property
    def witness_time(self) -> float:
        """Seconds of witness search (``Settings.witness_time``)."""
        return self.settings.witness_time

    @property
    def seed(self) -> int:
        """Seed of the witness search (``Settings.seed``)."""
        return self.settings.seed

    @property
    def epsilon(self) -> float | None:
        """ε (``Settings.epsilon``)."""
        return self.settings.epsilon

    @property
    def delta(self) -> float | None:
        """δ (``Settings.delta``)."""
        return self.settings.delta


@dataclass(frozen=True, slots=True)
class State:
    """What the stages pass along; each stage fills its own fields."""

    query: AggregateQuery
    sigma: Sigma
    options: Options = Options()
    notes: tuple[str, ...] = ()
    counted: CountBound | None = None
    delta_str: Weight = math.inf
    paper: Mapping[str, PaperValue] = field(default_factory=dict)
    explanation: tuple[str, ...] = ()
    suggestion: tuple[str, ...] = ()
    release: AggregateBound | None = None
    aggregates: tuple[AggregateRecord, ...] = ()
    witness: Witness | None = None
    lower: Weight | None = None
    lower_note: str = ""
    noise: NoiseCalibration | None = None
    person: PersonBound | None = None
    read: AggregateQuery | None = None  # as read, when ``query`` is an equivalent one

    @property
    def count(self) -> CountBound:
        """The count bound (after :func:`stage_bound`)."""
        if self.counted is None:
            raise ValueError("stage_bound has not run")
        return self.counted


def analysis_of(state: State) -> Analysis:
    """The :class:`~cqsens.analysis.Analysis` read off the state after the last stage."""
    query, counted, release = state.query, state.count, state.release
    assert release is not None
    return Analysis(
        query=query.text.strip(),
        source=query.source,
        query_obj=query,
        sigma=state.sigma,
        cq=(state.read or query).cq,
        core=counted.core,
        connected=is_connected(counted.core),
        satisfiable=counted.core.satisfiable,
        delta_str=state.delta_str,
        paper=state.paper,
        upper=release.l1,
        lower=state.lower,
        neighbor=state.options.nb.model,
        l1=release.l1,
        l2=release.l2,
        explanation=state.explanation,
        bound=counted.bound,
        notes=state.notes,
        core_minimal=counted.minimal,
        suggestion=state.suggestion,
        witness=state.witness,
        lower_note=state.lower_note,
        aggregates=state.aggregates,
        contributions=state.options.nb.contributions,
        noise=state.noise,
        unit=state.options.nb.unit.described if state.options.nb.unit is not None else None,
        dependency_names=tuple(named_dependency(d, query, state.options.schema)
                               for d in state.sigma),
        derivation=_count_derivation(state),
        nb=state.options.nb,
    )


def _count_derivation(state: State) -> Derivation:
    """The count bound's derivation: one person's with a unit, else one row's."""
    if state.person is not None:
        return person_derivation(state.person, state.options.nb)
    counted = state.count
    return count_derivation(counted.core, counted.bound, state.options.nb)
