"""Noiseless privacy of counting queries under partial knowledge (``cqsens noiseless``)."""

from cqsens.noiseless.accountant import (
    exact_delta,
    exact_delta_by_record,
    exact_epsilon,
    pmf_delta,
    pmf_epsilon,
)
from cqsens.noiseless.binomial import binomial_logpmf
from cqsens.noiseless.classes import (
    class_delta,
    class_epsilon,
    histogram_class_delta,
    histogram_class_epsilon,
)
from cqsens.noiseless.closed_form import (
    PROPOSITION_27_NOTE,
    closed_form_delta,
    closed_form_epsilon,
)
from cqsens.noiseless.fair_coin import fair_coin_delta
from cqsens.noiseless.poisson_binomial import poisson_binomial_pmf
from cqsens.noiseless.validate import MAX_RECORDS, parse_probabilities

__all__ = [
    "MAX_RECORDS",
    "PROPOSITION_27_NOTE",
    "binomial_logpmf",
    "poisson_binomial_pmf",
    "pmf_delta",
    "pmf_epsilon",
    "exact_delta",
    "exact_delta_by_record",
    "exact_epsilon",
    "fair_coin_delta",
    "class_delta",
    "class_epsilon",
    "histogram_class_delta",
    "histogram_class_epsilon",
    "closed_form_epsilon",
    "closed_form_delta",
    "parse_probabilities",
]
