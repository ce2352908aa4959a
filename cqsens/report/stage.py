"""The explanation stage: the count bound explained, and advice when it is unbounded."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from cqsens.explain import Advice, person_suggestion, suggestion
from cqsens.report.explanation import advice, explanation, person_explanation

if TYPE_CHECKING:
    from cqsens.state import State

__all__ = ["stage_explain"]


def stage_explain(state: State) -> State:
    """The explanation of the count bound, and advice when it is unbounded."""
    counted = state.count
    lines = tuple(explanation(state.query, counted, public=state.options.nb.public)
                  if state.person is None
                  else person_explanation(state.query, counted, state.person,
                                          public=state.options.nb.public))
    found: list[Advice] = []
    if state.person is not None:
        if state.person.value == math.inf:
            found = person_suggestion(state.person, state.sigma, counted.core,
                                      state.options.schema, state.query)
    elif counted.bound.value == math.inf:
        nb = state.options.nb
        found = suggestion(state.query, state.sigma, counted.core, state.options.schema,
                           public=nb.public, references=nb.kept_references,
                           keeps_references=nb.add_remove and nb.contributions == 1)
    return replace(state, explanation=lines, suggestion=tuple(advice(s) for s in found))
