"""The options of a release: what :func:`cqsens.releasing.run.release` takes besides the
analysis, as one value."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from cqsens.analysis import Analysis
from cqsens.ir.schema import Schema
from cqsens.release.ledger import Charge, PrivacyModel

__all__ = ["ReleaseOptions"]


@dataclass(frozen=True, slots=True)
class ReleaseOptions:
    """What a release takes besides the analysis: the keywords of
    :func:`cqsens.releasing.run.release` (their meanings are in its docstring), as one value
    that :func:`~cqsens.releasing.run.release_with`,
    :func:`~cqsens.releasing.stages.release_stages` and
    :func:`~cqsens.releasing.views.release_views` take."""

    url: str
    epsilon: float
    reanalyse: Callable[[str], Analysis]
    delta: float | None = None
    mechanism: str = "laplace"
    schema: Schema | None = None
    bounds: Sequence[str] = ()
    keys_file: str | None = None
    public: Sequence[str] = ()
    epsilon_parts: Mapping[str, float] | None = None
    before_query: Callable[[Charge, PrivacyModel], None] | None = None
    rewrite: Callable[[str], str] | None = None

    def stage(self, count: int) -> ReleaseOptions:
        """The options of one of ``count`` stages released in sequence: ε/count and
        δ/count (sequential composition), no keys file, no ε per part, no budget check
        (made once for the whole) and no rewriting."""
        return replace(self, epsilon=self.epsilon / count,
                       delta=None if self.delta is None else self.delta / count,
                       keys_file=None, epsilon_parts=None, before_query=None, rewrite=None)

    def before_stages(self, analysis: Analysis) -> None:
        """Call ``before_query`` (when given) once, with the whole ε and δ, before the
        first of the stages of ``analysis`` runs."""
        if self.before_query is not None:
            self.before_query(Charge(self.epsilon, self.delta or 0.0), PrivacyModel(
                analysis.neighbor, analysis.contributions, analysis.unit))
