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
