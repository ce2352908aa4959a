"""Typed derivations: which rule of docs/rules.md gave a bound, from which inputs.

A :class:`Derivation` is the value every sensitivity rule returns beside its
number: the rule (a member of :class:`Rule`, one per heading of docs/rules.md,
its value the heading's anchor), the bound, the neighbourhood it holds for and
the inputs and premises it was computed from.  Sentences are rendered from
derivations by :mod:`cqsens.report.words`, in the person's or the row's words as
the neighbourhood says; nothing in the engine or the release rules builds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum

from cqsens.engine.neighbourhood import Neighbourhood, Unit
from cqsens.ir.exact import Exact

__all__ = ["ADD_REMOVE", "Derivation", "Input", "Neighbourhood", "Rule", "SUBSTITUTE", "for_unit"]

ADD_REMOVE = "add-remove"
SUBSTITUTE = "substitute"


class Rule(Enum):
    """The rules of docs/rules.md, one member per heading; the value is the heading's anchor.

    Examples
    --------
    >>> Rule.SUM_SUBSTITUTION.value, Rule("avg").anchor
    ('sum-substitution', 'docs/rules.md#avg')
    """

    SETTING = "setting"
    UNSATISFIABLE_QUERY = "unsatisfiable-query"
    BOOLEAN_QUERY = "boolean-query"
    NEW_ANSWERS = "new-answers"
    DELTA_STR_SELF_JOIN = "delta-str-self-join"
    ORDERED_SELF_JOIN = "ordered-self-join"
    FD_CHASE = "fd-chase"
    FD_BOUND = "fd-bound"
    WALKS_FROM_CONSTANTS = "walks-from-constants"
    CD_BOUND = "cd-bound"
    JOINT_ASSIGNMENT_TREE = "joint-assignment-tree"
    CHEAPEST_DERIVATION = "cheapest-derivation"
    COUNT_SUBSTITUTION = "count-substitution"
    COUNT_DISTINCT = "count-distinct"
    COUNT_COLUMN = "count-column"
    FINITE_DOMAINS = "finite-domains"
    FINITE_TABLES = "finite-tables"
    ROWS_PER_VALUE = "rows-per-value"
    CONTRIBUTIONS = "contributions"
    GROUP_BY_HISTOGRAM = "group-by-histogram"
    SUM = "sum"
    GROUP_BY_EXPRESSION = "group-by-expression"
    COMPOSITE_DEPENDENCIES = "composite-dependencies"
    PUBLIC_TABLES = "public-tables"
    FOREIGN_KEYS = "foreign-keys"
    FOREIGN_KEY_JOINS = "foreign-key-joins"
    PRIVACY_UNIT = "privacy-unit"
    OWNERSHIP = "ownership"
    OWNERLESS_ROWS = "ownerless-rows"
    RELEASE_GUARD = "release-guard"
    POST_PROCESSING = "post-processing"
    PUBLIC_SUBQUERIES = "public-subqueries"
    PUBLIC_STATEMENT = "public-statement"
    PERSON_LOCAL = "person-local"
    PERSON_GROUPS = "person-groups"
    TWO_STAGE = "two-stage"
    RELEASED_VIEW = "released-view"
    RELEASED_SUBQUERY = "released-subquery"
    BAGS = "bags"
    NULLS = "nulls"
    SUM_SUBSTITUTION = "sum-substitution"
    AVG = "avg"
    MIN_MAX = "min-max"
    MEDIAN = "median"
    MEDIAN_PARITY_ROWS = "median-parity-rows"
    GROUPED_VALUE_AGGREGATES = "grouped-value-aggregates"
    SEVERAL_AGGREGATES = "several-aggregates"
    EXCLUSIVE_CASES = "exclusive-cases"
    VALUE_BOUNDS = "value-bounds"
    EMPTY_VALUE_RANGE = "empty-value-range"
    LAPLACE = "laplace"
    PARTITION_SELECTION = "partition-selection"
    ANALYTIC_GAUSSIAN = "analytic-gaussian"
    AGGREGATE_WITNESS = "aggregate-witness"
    LOWER_BOUND_WITNESS = "lower-bound-witness"
    SHAPE_CACHE = "shape-cache"
    WITNESS_REUSE = "witness-reuse"
    PAPER_VALUES = "paper-values"
    SET_OPERATIONS = "set-operations"
    GROUPING_SETS = "grouping-sets"
    OUTER_JOINS = "outer-joins"
    SEMI_JOIN_FLIPS = "semi-join-flips"

    @property
    def anchor(self) -> str:
        """Where the rule is stated and proved: ``docs/rules.md#<id>``."""
        return f"docs/rules.md#{self.value}"


Input = Exact | str
"""An input of a rule: a number (exact, or ∞) or a name (an aggregate, a column, a relation)."""


def _frozen(inputs: Mapping[str, Input]) -> Mapping[str, Input]:
    """A private copy (a plain dict, so that a derivation pickles for the log workers)."""
    return dict(inputs)


@dataclass(frozen=True, slots=True)
class Derivation:
    """One application of a rule: ``rule`` gives ``value`` under ``neighbourhood``.

    Parameters
    ----------
    rule : Rule
        The rule of docs/rules.md applied.
    value : int, Fraction or float
        The bound it gives (exact; ``math.inf`` when unbounded).
    neighbourhood : Neighbourhood
        The neighbour relation the bound holds for.
    inputs : mapping of str to a number or a name
        What the rule was applied to (``delta``, ``low``, ``high``, ``aggregate``, ...).
    premises : tuple of Derivation
        The derivations this one builds on (the scalar bound of a grouped one, the
        aggregates released together).

    Examples
    --------
    >>> d = Derivation(Rule.SUM, 10, Neighbourhood(), {"delta": 1, "low": 0, "high": 10})
    >>> d.rule is Rule.SUM, d.value, d["high"]
    (True, 10, 10)
    """

    rule: Rule
    value: Exact
    neighbourhood: Neighbourhood
    inputs: Mapping[str, Input] = field(default_factory=dict, hash=False)
    premises: tuple[Derivation, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", _frozen(self.inputs))

    def __getitem__(self, key: str) -> Input:
        """The input named ``key``."""
        return self.inputs[key]

    def get(self, key: str) -> Input | None:
        """The input named ``key``, None when absent."""
        return self.inputs.get(key)

    def number(self, key: str) -> Exact:
        """The numeric input named ``key`` (a name there is a bug)."""
        value = self.inputs[key]
        assert not isinstance(value, str), key
        return value

    def rules(self) -> tuple[Rule, ...]:
        """This rule and those of every premise, depth first, without repetition."""
        out = [self.rule]
        for premise in self.premises:
            out.extend(premise.rules())
        return tuple(dict.fromkeys(out))


def for_unit(derivation: Derivation, unit: Unit | None) -> Derivation:
    """``derivation`` and its premises with the privacy unit ``unit`` (their models and
    rows per individual kept): the rules for one row hold for one person when the count
    bound they use is the person's (docs/rules.md, rule privacy-unit).

    >>> row = Neighbourhood()
    >>> d = Derivation(Rule.AVG, 5, row, {}, (Derivation(Rule.SUM, 1, row),))
    >>> for_unit(d, Unit("users", (0,), "users(id)")).premises[0].neighbourhood.person
    True
    """
    return replace(derivation,
                   neighbourhood=replace(derivation.neighbourhood, unit=unit),
                   premises=tuple(for_unit(p, unit) for p in derivation.premises))
