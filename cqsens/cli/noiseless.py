"""``cqsens noiseless``: privacy of a noiseless count under partial knowledge.

The command compares, for ``n`` independent records whose probabilities of
being counted all lie in ``[lambda, 1 - lambda]``, the exact class bound of
:mod:`cqsens.noiseless.noiseless` with the thesis's closed form, either at a given
``epsilon`` (which ``delta``?) or at a given ``delta`` (which ``epsilon``?).
With ``--p FILE`` the probabilities are known and the exact accountant is added;
with ``--categories K`` the release is a ``K``-category histogram.

Exit codes: 0 on success, 1 for an unreadable or malformed ``--p`` file, 2 for
bad options (click's usage errors).  The lead registers the command with
``cli.add_command(noiseless)``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click
import numpy as np

from cqsens.errors import InputError
from cqsens.noiseless import (
    MAX_RECORDS,
    PROPOSITION_27_NOTE,
    class_delta,
    class_epsilon,
    closed_form_delta,
    closed_form_epsilon,
    exact_delta_by_record,
    exact_epsilon,
    parse_probabilities,
)

__all__ = ["noiseless", "noiseless_report", "render_text"]

EXIT_INPUT = 1


def _finite_or_none(value: float | None) -> float | None:
    if value is None or math.isinf(value) or math.isnan(value):
        return None
    return value


def _ratio(top: float | None, bottom: float | None) -> float | None:
    """``top / bottom`` when both are finite and positive (``inf`` if only ``bottom`` is 0)."""
    if top is None or bottom is None or math.isinf(top) or math.isinf(bottom) or top <= 0:
        return None
    if bottom == 0.0:
        return math.inf
    return top / bottom


def noiseless_report(
    *,
    n: int,
    lam: float,
    epsilon: float | None = None,
    delta: float | None = None,
    ps: list[float] | None = None,
    categories: int | None = None,
) -> dict[str, Any]:
    """Compute everything ``cqsens noiseless`` prints, as a JSON-ready dict.

    Parameters
    ----------
    n : int
        Number of records (already validated, ``>= 2``).
    lam : float
        ``lambda`` (already validated).
    epsilon, delta : float, optional
        Compute ``delta`` at ``epsilon`` and/or ``epsilon`` at ``delta``.
    ps : list of float, optional
        Known probabilities (exact accountant), all in ``[lam, 1 - lam]``.
    categories : int, optional
        Number of histogram categories (``None`` for a plain count).

    Returns
    -------
    dict
        Keys ``query``, ``n``, ``lambda``, ``categories``, ``at_epsilon``,
        ``at_delta``, ``proposition_27`` and ``notes``; infinite ``epsilon``
        values are ``None`` with a note.

    Notes
    -----
    The histogram class bound equals the binary one with the same ``lambda``
    (see :func:`cqsens.noiseless.noiseless.histogram_class_delta`), so both use
    :func:`cqsens.noiseless.noiseless.class_delta`; the closed form is the same too.

    Examples
    --------
    >>> r = noiseless_report(n=10_000, lam=0.05, epsilon=0.3)
    >>> r["at_epsilon"]["delta_gain"] > 1e5
    True

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1.
    """
    notes: list[str] = []
    report: dict[str, Any] = {
        "query": "histogram" if categories else "count",
        "n": n,
        "lambda": lam,
        "categories": categories,
        "at_epsilon": None,
        "at_delta": None,
        "proposition_27": {"computed": False, "note": PROPOSITION_27_NOTE},
        "notes": notes,
    }
    floor = (1.0 - lam) ** (n - 1)
    if epsilon is not None:
        d_class = class_delta(n, lam, epsilon)
        d_cf = closed_form_delta(n, lam, epsilon)
        at: dict[str, Any] = {
            "epsilon": epsilon,
            "delta_class_bound": d_class,
            "delta_closed_form": d_cf,
            "delta_gain": _ratio(d_cf, d_class),
            "epsilon_closed_form_at_closed_form_delta": None,
            "epsilon_class_bound_at_closed_form_delta": None,
            "epsilon_gain": None,
        }
        if d_cf is not None and not 0.0 < d_cf < 1.0:
            notes.append(f"the closed form's delta at epsilon = {epsilon:g} underflows to "
                         f"{d_cf:g}: no epsilon comparison at that delta")
        elif d_cf is None:
            notes.append(f"the closed form gives no delta < 1 at epsilon = {epsilon:g} "
                         f"(it needs 27/(lambda (n-1)) <= epsilon and is stated for epsilon <= 1)")
        else:
            e_cf = closed_form_epsilon(n, lam, d_cf)
            e_class = class_epsilon(n, lam, d_cf)
            at["epsilon_closed_form_at_closed_form_delta"] = e_cf
            at["epsilon_class_bound_at_closed_form_delta"] = _finite_or_none(e_class)
            at["epsilon_gain"] = _ratio(e_cf, e_class)
        if ps is not None:
            per_record = exact_delta_by_record(ps, epsilon)
            worst = int(np.argmax(per_record))
            at["delta_exact"] = float(per_record[worst])
            at["worst_record"] = worst + 1
        report["at_epsilon"] = at
    if delta is not None:
        e_class = class_epsilon(n, lam, delta)
        e_cf = closed_form_epsilon(n, lam, delta)
        at = {
            "delta": delta,
            "epsilon_class_bound": _finite_or_none(e_class),
            "epsilon_closed_form": e_cf,
            "epsilon_gain": _ratio(e_cf, e_class),
        }
        if math.isinf(e_class):
            notes.append(f"no finite epsilon reaches delta = {delta:g} for the class: with "
                         f"probability (1 - lambda)^(n-1) = {floor:.4g} every other record "
                         "may be 0, and then the count reveals the record")
        if e_cf is None:
            notes.append(f"the closed form gives no epsilon <= 1 at delta = {delta:g}")
        if ps is not None:
            e_exact = exact_epsilon(ps, delta)
            at["epsilon_exact"] = _finite_or_none(e_exact)
            if math.isinf(e_exact):
                notes.append(f"no finite epsilon reaches delta = {delta:g} for the given p_j")
        report["at_delta"] = at
    return report


def _fmt_delta(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4e}"


def _fmt_eps(value: float | None, infinite: str = "n/a") -> str:
    return infinite if value is None else f"{value:.6g}"


def _fmt_gain(value: float | None) -> str:
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "unbounded (epsilon = 0 suffices)"
    return f"{value:.4g}x" if value < 1e4 else f"{value:.3e}x"


def render_text(report: dict[str, Any]) -> str:
    """Render :func:`noiseless_report` output for a terminal.

    Parameters
    ----------
    report : dict
        As returned by :func:`noiseless_report`.

    Returns
    -------
    str
        Several aligned lines, ending with a newline.

    Notes
    -----
    "n/a" marks a value that does not exist (the closed form outside its
    validity range); an infinite class-bound ``epsilon`` is written "inf".

    Examples
    --------
    >>> text = render_text(noiseless_report(n=1000, lam=0.1, delta=1e-3))
    >>> "epsilon, class bound" in text
    True

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1.
    """
    lam = report["lambda"]
    lines: list[str] = []
    if report["query"] == "histogram":
        lines.append(f"noiseless histogram: {report['categories']} categories, "
                     f"n = {report['n']} records, every category probability >= {lam:g}")
    else:
        lines.append(f"noiseless count: n = {report['n']} records, "
                     f"every p_j in [{lam:g}, {1 - lam:g}]")
    width = 52

    def row(label: str, value: str) -> None:
        lines.append(f"  {label:<{width}} {value}")

    at = report["at_epsilon"]
    if at is not None:
        lines.append(f"at epsilon = {at['epsilon']:g}:")
        if "delta_exact" in at:
            row(f"delta, exact for the given p_j (worst record {at['worst_record']})",
                _fmt_delta(at["delta_exact"]))
        row("delta, class bound (exact mixture bound)", _fmt_delta(at["delta_class_bound"]))
        row("delta, thesis closed form", _fmt_delta(at["delta_closed_form"]))
        row("gain (closed-form delta / class-bound delta)", _fmt_gain(at["delta_gain"]))
        if at["delta_closed_form"] is not None:
            same = f"epsilon at delta = {at['delta_closed_form']:.4e}"
            row(f"{same}, class bound",
                _fmt_eps(at["epsilon_class_bound_at_closed_form_delta"], "inf"))
            row(f"{same}, thesis closed form",
                _fmt_eps(at["epsilon_closed_form_at_closed_form_delta"]))
            row("gain (closed-form epsilon / class-bound epsilon)", _fmt_gain(at["epsilon_gain"]))
    at = report["at_delta"]
    if at is not None:
        lines.append(f"at delta = {at['delta']:g}:")
        if "epsilon_exact" in at:
            row("epsilon, exact for the given p_j", _fmt_eps(at["epsilon_exact"], "inf"))
        row("epsilon, class bound (exact mixture bound)",
            _fmt_eps(at["epsilon_class_bound"], "inf"))
        row("epsilon, thesis closed form", _fmt_eps(at["epsilon_closed_form"]))
        row("gain (closed-form epsilon / class-bound epsilon)", _fmt_gain(at["epsilon_gain"]))
    lines.append(report["proposition_27"]["note"])
    for note in report["notes"]:
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def _read_probabilities(path: str) -> list[float]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the file: {exc}", source=path, construct="p") from None
    return parse_probabilities(text, source=path)


@click.command("noiseless")
@click.option("--n", "n", type=int, default=None, metavar="N",
              help="Number of records (at least 2; implied by --p).")
@click.option("--lambda", "lam", type=float, default=None, metavar="LAMBDA",
              help="Every record is counted with a probability in [LAMBDA, 1-LAMBDA], "
                   "0 < LAMBDA <= 1/2 (1/K with --categories). Implied by --p.")
@click.option("--epsilon", type=float, default=None, metavar="EPS",
              help="Compute delta at this epsilon (>= 0).")
@click.option("--delta", type=float, default=None, metavar="DELTA",
              help="Compute the smallest epsilon for this delta, in (0, 1).")
@click.option("--p", "p_file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Known probabilities p_j, one per line ('#' comments): adds the exact "
                   "accountant.")
@click.option("--categories", type=int, default=None, metavar="K",
              help="The release is a K-category histogram; every category probability "
                   "is at least LAMBDA.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
@click.pass_context
def noiseless(
    ctx: click.Context,
    n: int | None,
    lam: float | None,
    epsilon: float | None,
    delta: float | None,
    p_file: str | None,
    categories: int | None,
    fmt: str,
) -> None:
    """Privacy of a noiseless count when the attacker does not know the records.

    n independent records, each counted with a probability in [LAMBDA,
    1-LAMBDA]; the exact count is released.  Prints delta from the exact class
    bound, the thesis's closed-form reference and the gain factor (at
    --epsilon), and/or the smallest epsilon of both (at --delta).

    \b
    Examples:
      cqsens noiseless --n 10000 --lambda 0.05 --epsilon 0.3
      cqsens noiseless --n 1000 --lambda 0.1 --delta 1e-6 --format json
      cqsens noiseless --p probabilities.txt --delta 1e-6
      cqsens noiseless --n 5000 --lambda 0.1 --categories 4 --epsilon 0.5
    """
    if epsilon is None and delta is None:
        raise click.UsageError("give --epsilon, --delta or both")
    if epsilon is not None and not (math.isfinite(epsilon) and epsilon >= 0):
        raise click.UsageError(f"--epsilon must be a finite number >= 0, got {epsilon}")
    if delta is not None and not (0.0 < delta < 1.0):
        raise click.UsageError(f"--delta must be in (0, 1), got {delta}")
    if categories is not None and categories < 2:
        raise click.UsageError(f"--categories must be at least 2, got {categories}")
    if categories is not None and p_file is not None:
        raise click.UsageError("--p describes a binary count; it cannot be used with "
                               "--categories")
    ps: list[float] | None = None
    if p_file is not None:
        try:
            ps = _read_probabilities(p_file)
        except InputError as err:
            click.echo(str(err), err=True)
            ctx.exit(EXIT_INPUT)
        assert ps is not None
        if len(ps) < 2:
            click.echo(f"error: {p_file}: need at least 2 probabilities, found {len(ps)}",
                       err=True)
            ctx.exit(EXIT_INPUT)
        if n is not None and n != len(ps):
            raise click.UsageError(f"--n {n} does not match the {len(ps)} probabilities "
                                   f"in {p_file}")
        n = len(ps)
        tightest = min(min(ps), 1.0 - max(ps))
        if lam is None:
            lam = tightest
            if lam <= 0.0:
                raise click.UsageError(
                    f"{p_file} has a probability 0 or 1, so no class [lambda, 1-lambda] with "
                    "lambda > 0 contains it; the class bound needs --lambda > 0 and "
                    "probabilities inside it")
        elif tightest < lam:
            raise click.UsageError(f"a probability in {p_file} lies outside "
                                   f"[{lam:g}, {1 - lam:g}] (--lambda)")
    if n is None:
        raise click.UsageError("give --n (or --p FILE)")
    if lam is None:
        raise click.UsageError("give --lambda (or --p FILE)")
    if n < 2:
        raise click.UsageError(f"--n must be at least 2, got {n}")
    if n > MAX_RECORDS:
        raise click.UsageError(f"--n must be at most {MAX_RECORDS}, got {n}")
    upper = 0.5 if categories is None else 1.0 / categories
    if not (0.0 < lam <= upper):
        what = "1/2" if categories is None else f"1/K = {upper:.6g}"
        raise click.UsageError(f"--lambda must be in (0, {what}], got {lam}")
    try:
        report = noiseless_report(n=n, lam=lam, epsilon=epsilon, delta=delta, ps=ps,
                                  categories=categories)
    except InputError as err:
        click.echo(str(err), err=True)
        ctx.exit(EXIT_INPUT)
    if fmt == "json":
        click.echo(json.dumps(_json_safe(report), indent=2))
    else:
        click.echo(render_text(report), nl=False)
