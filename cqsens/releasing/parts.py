"""Run a release with released subqueries (docs/rules.md, rule released-subquery).

Each part (an aggregating derived table or ``WITH`` table over private tables) is
released first, as a statement of its own, with its share of ε (and δ): its group keys
are released as a statement's are (public or declared keys, else partition selection).
Its noisy rows, and only those, then take its place in the rest of the statement
(:func:`cqsens.frontend.released_parts.fill_parts`), which reads public tables and those
rows only and spends nothing: it runs in an empty SQLite database in memory when it reads
the released rows only, else read-only on the database (for its public tables).  The true
rows of a part never leave :func:`cqsens.releasing.run.release`.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from cqsens.analysis import Analysis
from cqsens.db.connect import connect
from cqsens.errors import InputError
from cqsens.frontend.dates import sqlite_dates
from cqsens.frontend.released_parts import Part, Parts, fill_parts, split_parts
from cqsens.ir.schema import Schema
from cqsens.parts import is_parts
from cqsens.releasing.options import ReleaseOptions
from cqsens.releasing.public import PublicAnswer, run_public
from cqsens.releasing.results import Release
from cqsens.releasing.run import _public_release, release_with
from cqsens.releasing.stages import StagedRelease

__all__ = ["part_rows", "parts_of", "release_parts"]

Row = tuple[object, ...]
_INTEGER = re.compile(r"-?(0|[1-9]\d*)")
_DECIMAL = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")


def parts_of(analysis: Analysis, public: Sequence[str],
             schema: Schema | None = None) -> Parts | None:
    """The released subqueries of the statement ``analysis`` analysed (with the ``schema``
    it was analysed with: it tells which table an unqualified column belongs to), or None."""
    if not is_parts(analysis):
        return None
    names = frozenset(n.strip().lower() for item in public for n in item.split(",")
                      if n.strip())
    return split_parts(analysis.query, analysis.query_obj.dialect, public=names,
                       source=analysis.source, schema=schema)


def _key(text: str | None) -> object:
    """A released key as a SQL value: a number when it is written as one."""
    if text is None:
        return None
    if _INTEGER.fullmatch(text):
        return int(text)
    if _DECIMAL.fullmatch(text):
        return float(text)
    return text


def _bare(name: str) -> str:
    return name.rsplit(".", 1)[-1].strip('"`').lower()


def part_rows(part: Part, result: Release) -> list[Row]:
    """The rows that take ``part``'s place: its released groups, one row each, in the order
    of its columns (a group column from the group's key, a constant as written, every
    other column from the released values: by label, else in order)."""
    keys = {_bare(k): i for i, k in enumerate(result.key_names)}
    selected = part.keys or ("",) * len(part.columns)
    constants = part.constants or ((False, None),) * len(part.columns)
    measured = {c.lower() for c, k, (fixed, _) in zip(part.columns, selected, constants,
                                                      strict=True) if not k and not fixed}
    out: list[Row] = []
    for group in result.groups:
        labels = {v.label.lower(): v.value for v in group.values}
        rest = iter(v.value for v in group.values if v.label.lower() not in measured)
        row: list[object] = []
        for column, key, (fixed, value) in zip(part.columns, selected, constants, strict=True):
            if key and _bare(key) in keys:
                row.append(_key(group.key[keys[_bare(key)]]))
            elif fixed:
                row.append(value)
            elif column.lower() in labels:
                row.append(labels[column.lower()])
            elif column.lower() in keys:
                row.append(_key(group.key[keys[column.lower()]]))
            else:
                row.append(next(rest, None))
        out.append(tuple(row))
    return out


def _target(url: str) -> str:
    with connect(url) as conn:
        name = str(conn.dialect.name)
    return "postgres" if name == "postgresql" else name


def release_parts(analysis: Analysis, found: Parts, options: ReleaseOptions) -> StagedRelease:
    """Release the parts of ``analysis``, then the rest of its statement on their noisy rows.

    ``options`` are those of :func:`cqsens.releasing.stages.release_stages`; each part
    gets ε/n and δ/n (n parts).  Its keys file and ε per aggregate name one statement's
    keys and aggregates: they are not used here.

    Returns
    -------
    StagedRelease
        Every part's release in order, then the rest of the statement (nothing spent).
    """
    count = len(found.parts)
    stage_options = options.stage(count)
    options.before_stages(analysis)
    url = options.url
    done: list[Release] = []
    rows: dict[int, list[Row]] = {}
    for part, stage in zip(found.parts, analysis.stages, strict=True):
        result = release_with(stage, stage_options)
        rows[part.number] = part_rows(part, result)
        done.append(replace(result, notes=(
            *result.notes, f"release {part.number} of {count}: a subquery of the statement; "
            "its noisy rows take its place in the rest of the statement")))
    dialect = analysis.query_obj.dialect
    if found.tables:  # joined with public tables: read-only, from the database
        sql = fill_parts(found.outer, dialect, _target(url), rows, source=analysis.source)
        labels, answer = run_public(url, sql, None, analysis.source)
        tables = f"the released rows and the public tables {', '.join(found.tables)}"
    else:  # the released rows only: in SQLite in memory, nothing else in reach
        sql = fill_parts(found.outer, dialect, "sqlite", rows, source=analysis.source)
        labels, answer = _in_memory(sql, analysis.source)
        tables = "the released rows only, in SQLite in memory"
    last = _public_release(analysis, PublicAnswer(
        labels, tuple(tuple(_cell(v) for v in r) for r in answer), tables), url)
    done.append(replace(
        last, split="nothing spent: computed from the released subqueries' noisy rows and "
        "public tables only, post-processing (docs/rules.md, rule released-subquery)",
        key_mode=f"every row of the answer, computed from {tables}", notes=(
            "each released subquery's noisy rows take its place; the rest reads public "
            "tables only, so it spends no ε or δ (the ledger records nothing for it)",)))
    return StagedRelease(tuple(done), ())


def _in_memory(sql: str, source: str) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """Run ``sql`` (it reads ``VALUES`` lists only) in an empty SQLite database in memory."""
    conn = sqlite3.connect(":memory:")
    try:
        cursor = conn.execute(sqlite_dates(sql))
        labels = tuple(str(d[0]) for d in cursor.description or ())
        return labels, [tuple(r) for r in cursor.fetchall()]
    except sqlite3.Error as exc:
        raise InputError(f"the post-processing of the released rows failed in SQLite: {exc}",
                         source=source, construct="released-subquery") from None
    finally:
        conn.close()


def _cell(value: Any) -> int | float | str | None:
    """A database value as the release shows it."""
    if value is None or isinstance(value, (int, float, str)):
        return value
    return str(value)
