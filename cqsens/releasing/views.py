"""Run a release with released views (docs/rules.md, rule released-view).

Each view is released first, with its share of ε, as a grouped release over its public
domain: the keys are read from public tables only (the view's ``domain_sql``) and every
key gets a noisy value, zeros included, so no partition selection and no δ.  Its noisy
rows, and only those, then take the view's place in the rest of the statement
(:func:`cqsens.frontend.released_views.fill_views`): a statement over public tables is
run as it is, read-only, and spends nothing; a statement over private tables is released
with the last share of ε (its SQL texts pass through the same filling).  The true rows
of a view never leave :func:`cqsens.releasing.run.release`.
"""

from __future__ import annotations

import csv
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cqsens.analysis import Analysis
from cqsens.db.connect import connect
from cqsens.frontend.public_statement import public_statement
from cqsens.frontend.release_sql import release_plan
from cqsens.frontend.released_views import (
    ROWS_LABEL,
    VALUE_LABEL,
    View,
    Views,
    fill_scalars,
    fill_views,
    split_views,
)
from cqsens.ir.schema import Schema
from cqsens.release.keys import key_label, key_text
from cqsens.releasing.options import ReleaseOptions
from cqsens.releasing.public import PublicAnswer, run_public
from cqsens.releasing.results import Release
from cqsens.releasing.run import _public_release, release_with
from cqsens.releasing.stages import StagedRelease
from cqsens.views import releases

__all__ = ["release_views", "views_of"]

Row = tuple[object, ...]


def views_of(analysis: Analysis, public: Sequence[str], schema: Schema | None
             ) -> Views | None:
    """The released views of the statement ``analysis`` analysed, or None."""
    if not analysis.stages:
        return None
    names = frozenset(n.strip().lower() for item in public for n in item.split(",")
                      if n.strip())
    return split_views(analysis.query, analysis.query_obj.dialect, public=names,
                       schema=schema, source=analysis.source)


def _target(url: str) -> str:
    with connect(url) as conn:
        name = str(conn.dialect.name)
    return "postgres" if name == "postgresql" else name


def _domain(url: str, view: View, dialect: str | None, public: frozenset[str],
            source: str) -> list[Row]:
    """The view's public keys, read from public tables only."""
    if public_statement(view.domain_sql, dialect=dialect, public=public, source=source) is None:
        raise AssertionError("a view's domain must read public tables only")
    return run_public(url, view.domain_sql, dialect, source)[1]


def _keys_file(folder: Path, names: Sequence[str], domain: Sequence[Row]) -> str:
    """A ``--keys`` CSV of the domain (header: the released key names)."""
    path = folder / "keys.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        for row in domain:
            writer.writerow(["" if v is None else key_label(key_text([v]))[0] for v in row])
    return str(path)


def _view_rows(view: View, result: Release, domain: Sequence[Row]) -> list[Row]:
    """The rows that take the view's place: each key, then its noisy value (a scalar view:
    every key, NULL where its noisy row count is below 1/2 when it has one; a WITH table:
    the keys whose noisy row count is at least 1/2)."""
    typed = {key_label(key_text(row)): row for row in domain}
    out: list[Row] = []
    for group in result.groups:
        values = {v.label: v.value for v in group.values}
        value = values.get(VALUE_LABEL)
        rows = values.get(ROWS_LABEL) if view.counted else value
        present = isinstance(rows, (int, float)) and rows >= 0.5
        key = typed.get(group.key)
        if key is None:
            continue
        if view.scalar:  # without a row count the value stands as released
            out.append((*key, value if present or not view.counted else None))
        elif present:
            out.append((*key, value))
    return out


def release_views(analysis: Analysis, found: Views, options: ReleaseOptions
                  ) -> StagedRelease:
    """Release the views of ``analysis``, then the rest of its statement on their noisy rows.

    ``options`` are those of :func:`cqsens.releasing.stages.release_stages`; each
    release gets ε/n and δ/n (n releases: the views, and the rest of the statement when
    it reads private tables); ``keys_file`` and ``epsilon_parts`` apply to the rest.

    Returns
    -------
    StagedRelease
        Every stage's release in order (the rest of the statement last); ``values`` is
        empty (a view releases rows, not one value).
    """
    count = releases(found)
    stage_options = options.stage(count)
    options.before_stages(analysis)
    dialect = analysis.query_obj.dialect
    names = frozenset(n.strip().lower() for item in options.public for n in item.split(",")
                      if n.strip())
    url = options.url
    done: list[Release] = []
    rows: dict[int, list[Row]] = {}
    for view, stage in zip(found.views, analysis.stages, strict=False):
        domain = _domain(url, view, dialect, names, analysis.source)
        keys = release_plan(stage.query, dialect, source=analysis.source).keys
        with tempfile.TemporaryDirectory() as folder:
            result = release_with(stage, replace(
                stage_options, keys_file=_keys_file(Path(folder), keys, domain)))
        rows[view.number] = _view_rows(view, result, domain)
        done.append(replace(result, key_mode=(
            f"public keys: the {len(domain)} rows of {view.domain_sql} (public tables "
            "only): every key released, zeros included"), notes=(
            *result.notes, f"stage {len(done) + 1}: the released view {view.written}; its "
            f"noisy rows take its place in the rest of the statement")))
    outer = analysis.stages[-1]
    if found.public_outer:
        sql = fill_views(outer.query, dialect, _target(url), rows, source=analysis.source)
        labels, answer = run_public(url, sql, None, analysis.source)
        tables = str(outer.count_derivation.get("tables") or "")
        last = _public_release(outer, PublicAnswer(
            labels, tuple(tuple(_cell(v) for v in r) for r in answer), tables), url)
        done.append(replace(
            last, split="nothing spent: computed from the released views' noisy rows and "
            "public tables only, post-processing (docs/rules.md, rule released-view)",
            key_mode=f"every row of the answer, computed from the released views' noisy rows "
            f"and public tables only ({tables})", notes=(
                "the released views' noisy rows take their place; the rest reads public "
                "tables only, so it spends no ε or δ (the ledger records nothing for it)",)))
        return StagedRelease(tuple(done), ())

    def rewrite(text: str) -> str:
        return fill_scalars(text, rows)

    result = release_with(outer, replace(
        stage_options, keys_file=options.keys_file, epsilon_parts=options.epsilon_parts,
        rewrite=rewrite))
    done.append(replace(result, notes=(
        *result.notes, "ran with the released views' noisy values in place of the "
        "subqueries (docs/rules.md, rule released-view)")))
    return StagedRelease(tuple(done), ())


def _cell(value: Any) -> int | float | str | None:
    """A database value as the release shows it."""
    if value is None or isinstance(value, (int, float, str)):
        return value
    return str(value)
