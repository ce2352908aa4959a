"""Hypothesis profiles: ``dev`` (default, deeper) and ``ci`` (bounded, derandomized).

Choose with ``HYPOTHESIS_PROFILE=ci`` (what ``.ci/run`` uses) or ``=deep`` for a
long local run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
settings.register_profile("ci", max_examples=60, derandomize=True, **_COMMON)
settings.register_profile("dev", max_examples=150, **_COMMON)
settings.register_profile("deep", max_examples=2000, **_COMMON)
settings.load_profile(os.getenv("HYPOTHESIS_PROFILE", "dev"))


def soundness_examples() -> int:
    """Examples per brute-force soundness property: CI runs >= 2,000 trials in all."""
    return {"ci": 700, "dev": 300, "deep": 3000}.get(os.getenv("HYPOTHESIS_PROFILE", "dev"), 300)
