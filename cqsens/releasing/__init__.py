"""``cqsens release``: run a query on a database and release its answer with differential
privacy.

This package orchestrates a release over the mechanisms of :mod:`cqsens.release`
(noise, ledger, value bounds, group keys).  :func:`release` takes the analysis of
the user's query (whose sensitivity calibrates the noise) and

1. refuses an unbounded query, with the analysis's advice;
2. splits the SELECT list into the aggregates it releases
   (:func:`cqsens.frontend.release_sql.release_plan`): each is noised on its
   own, and the arithmetic of the SELECT list (``AVG`` = SUM/COUNT included)
   is recomputed from the noisy parts;
3. runs the parts in one read-only transaction (PostgreSQL's read-only
   transactions, SQLite's ``query_only``);
4. picks the released groups: every key of a public domain (zeros included),
   or the keys that pass OpenDP's Laplace threshold mechanism (partition
   selection, which needs δ);
5. adds OpenDP's noise (:mod:`cqsens.release.noise`) calibrated to each part's
   sensitivity: discrete noise for counts, float noise for sums, the
   exponential mechanism for MEDIAN, MIN and MAX.

**Budget split.**  The release is a composition of ``m`` measurements: one per
released part, plus the partition selection when it is not the release of a
COUNT of the query.  Unless ε is given per part, every measurement gets
``ε/m`` (basic composition, Dwork and Roth 2014, Thm 3.16); δ is split evenly
among the measurements that use it (the Gaussian parts and the selection).

The true answer stays in memory: it is not returned, logged or stored, and no
error message shows it.
"""

from __future__ import annotations

from cqsens.releasing.results import (
    BrokenConstraint,
    PartRelease,
    Release,
    ReleasedGroup,
    ReleasedValue,
    UnboundedRelease,
)
from cqsens.releasing.run import release

__all__ = ["BrokenConstraint", "PartRelease", "Release", "ReleasedGroup", "ReleasedValue",
           "UnboundedRelease", "release"]
