"""``cqsens noiseless``: privacy of a noiseless count under partial knowledge.

The command checks its options, calls
:func:`cqsens.noiseless.report.noiseless_report` and prints it with
:mod:`cqsens.report.noiseless`.  With ``--p FILE`` the probabilities are known
and the exact accountant is added; with ``--categories K`` the release is a
``K``-category histogram.

Exit codes: 0 on success, 1 for an unreadable or malformed ``--p`` file, 2 for
bad options (click's usage errors).
"""

from __future__ import annotations

import math
from pathlib import Path

import click

from cqsens.cli.exits import fail
from cqsens.cli.options import format_option
from cqsens.errors import InputError, read_text
from cqsens.noiseless import MAX_RECORDS, parse_probabilities
from cqsens.noiseless.report import noiseless_report
from cqsens.report.noiseless import render_json, render_text

__all__ = ["noiseless"]


def _read_probabilities(path: str) -> list[float]:
    """The probabilities of a regular text file of at most 10 MB."""
    text = read_text(Path(path), what="--p file")
    return parse_probabilities(text, source=path)


def _check_release(epsilon: float | None, delta: float | None, categories: int | None,
                   p_file: str | None) -> None:
    """Usage errors in --epsilon, --delta, --categories and --p."""
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


def _from_file(p_file: str, n: int | None,
               lam: float | None) -> tuple[list[float], int, float | None]:
    """The probabilities of --p and the ``n`` and ``lambda`` they imply (exit 1: bad file)."""
    try:
        ps = _read_probabilities(p_file)
    except InputError as err:
        fail(err)
    if len(ps) < 2:
        fail(f"error: {p_file}: need at least 2 probabilities, found {len(ps)}")
    if n is not None and n != len(ps):
        raise click.UsageError(f"--n {n} does not match the {len(ps)} probabilities "
                               f"in {p_file}")
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
    return ps, len(ps), lam


def _check_class(n: int | None, lam: float | None, categories: int | None) -> tuple[int, float]:
    """Usage errors in --n and --lambda; the two values once checked."""
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
    return n, lam


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
@format_option(["text", "json"])
def noiseless(
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
    _check_release(epsilon, delta, categories, p_file)
    ps: list[float] | None = None
    if p_file is not None:
        ps, n, lam = _from_file(p_file, n, lam)
    n, lam = _check_class(n, lam, categories)
    try:
        report = noiseless_report(n=n, lam=lam, epsilon=epsilon, delta=delta, ps=ps,
                                  categories=categories)
    except InputError as err:
        fail(err)
    if fmt == "json":
        click.echo(render_json(report))
    else:
        click.echo(render_text(report), nl=False)
