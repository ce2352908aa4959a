"""Option types that refuse meaningless values before any work is done.

Each is a :class:`click.ParamType`, so a bad value is a usage error (exit 2)
that names the option, raised while the command line is read.  NaN is refused
everywhere; infinity only where it means "no limit" (``--timeout inf``).
"""

from __future__ import annotations

import math
from typing import Any

import click

from cqsens.release.noise import DELTA_MIN, EPSILON_MAX, EPSILON_MIN

__all__ = ["BUDGET", "DELTA", "DIALECT", "DURATION", "EPSILON", "TIMEOUT"]


class _Number(click.ParamType[float]):
    """A float in a range; NaN is always refused, infinity only when ``allow_inf``."""

    name = "number"

    def __init__(self, *, low: float, low_open: bool, high: float = math.inf,
                 high_open: bool = True, allow_inf: bool = False, meaning: str) -> None:
        self.low, self.low_open, self.high, self.high_open = low, low_open, high, high_open
        self.allow_inf = allow_inf
        self.meaning = meaning

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        if isinstance(value, float):
            number = value
        else:
            try:
                number = float(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a number; {self.meaning}", param, ctx)
        if math.isnan(number):
            self.fail(f"nan is not a number; {self.meaning}", param, ctx)
        if math.isinf(number) and not (self.allow_inf and number > 0):
            self.fail(f"{value} is not allowed; {self.meaning}", param, ctx)
        too_low = number <= self.low if self.low_open else number < self.low
        too_high = number >= self.high if self.high_open else number > self.high
        if (too_low or too_high) and not (self.allow_inf and number == math.inf):
            self.fail(f"{value} is out of range; {self.meaning}", param, ctx)
        return number


#: ``--timeout``: seconds > 0, ``inf`` for no limit.
TIMEOUT = _Number(low=0.0, low_open=True, allow_inf=True,
                  meaning="give a number of seconds > 0, or inf for no limit")
#: ``--witness-time``: a finite number of seconds >= 0.
DURATION = _Number(low=0.0, low_open=False,
                   meaning="give a finite number of seconds >= 0")
#: ``--epsilon``: ε within cqsens's limits (:data:`cqsens.release.noise.EPSILON_MIN` and
#: ``EPSILON_MAX``, where every calibration stays finite; docs/model.md, Limits and safety).
EPSILON = _Number(low=EPSILON_MIN, low_open=False, high=EPSILON_MAX, high_open=False,
                  meaning=f"epsilon must be a number in [{EPSILON_MIN:g}, {EPSILON_MAX:g}] "
                          "(docs/model.md, Limits and safety)")
#: ``--budget``: a finite total ε > 0 (a sum over releases, never calibrated to).
BUDGET = _Number(low=0.0, low_open=True, meaning="the budget must be a finite number > 0")
#: ``--delta``: δ in [DELTA_MIN, 1).
DELTA = _Number(low=DELTA_MIN, low_open=False, high=1.0, high_open=True,
                meaning=f"delta must be a number in [{DELTA_MIN:g}, 1) "
                        "(docs/model.md, Limits and safety)")


class _Dialect(click.ParamType[str]):
    """A sqlglot dialect name in any casing, returned as sqlglot spells it."""

    name = "dialect"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        from cqsens.frontend.dialects import dialect_names, normalize_dialect

        found = normalize_dialect(str(value))
        if found is None:
            self.fail(f"unknown dialect {str(value)!r}; choose one of: "
                      f"{', '.join(dialect_names())}", param, ctx)
        return found


#: ``--dialect``: one of sqlglot's dialects.
DIALECT = _Dialect()
