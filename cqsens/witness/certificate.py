"""Check a witness from scratch: its certificate."""

from __future__ import annotations

from cqsens.ir.cq import CQ, AggregateQuery
from cqsens.ir.dependencies import Sigma, satisfies
from cqsens.witness.evaluate import count_answers
from cqsens.witness.model import Witness

__all__ = ["is_witness"]


def is_witness(query: AggregateQuery | CQ, sigma: Sigma, witness: Witness) -> bool:
    """Certificate check: re-evaluate the witness from scratch.

    Both databases satisfy Σ, they are one row apart (t is not in A), and the
    counts are the ones claimed.
    """
    a = witness.database
    if witness.row in a.rows.get(witness.relation, frozenset()):
        return False
    full = a.with_row(witness.relation, witness.row)
    if not satisfies(a.rows, sigma) or not satisfies(full.rows, sigma):
        return False
    return (
        count_answers(query, a) == witness.count_without
        and count_answers(query, full) == witness.count_with
    )
