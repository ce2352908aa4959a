"""Post-processing of the noisy values: the arithmetic of the SELECT list recomputed from the
noisy parts, and HAVING, window functions, ORDER BY and LIMIT run in SQLite in memory on the
noisy values only (they cost no privacy)."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Mapping, Sequence

from cqsens.errors import InputError
from cqsens.frontend.release_sql import Formula, PostPlan, ReleasePlan
from cqsens.ir.exact import Exact
from cqsens.release.keys import key_label
from cqsens.releasing.results import Number, PartRelease, ReleasedGroup, ReleasedValue


def _evaluate(formula: Formula, parts: Sequence[Number | None],
              ranges: Mapping[int, tuple[Exact, Exact]] | None = None) -> Number | None:
    op, args = formula.op, formula.args
    if op == "part":
        return parts[int(formula.value or 0)]
    if op == "num":
        return formula.value
    if op == "null":
        return None
    values = [_evaluate(a, parts, ranges) for a in args]
    if any(v is None for v in values):
        return None
    x = values[0]
    assert x is not None
    if op == "clamp":  # post-processing: an average lies in its values' range
        low, high = (ranges or {}).get(int(formula.value or 0), (-math.inf, math.inf))
        return min(max(x, float(low)), float(high)) if low <= high else x
    if op == "neg":
        return -x
    if op == "abs":
        return abs(x)
    if op == "sqrt":  # post-processing: a variance is not negative
        return math.sqrt(max(x, 0))
    if op == "round":
        return round(x, int(formula.value or 0))
    y = values[1]
    assert y is not None
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if y == 0:
        return None  # SQL gives NULL (or an error) on a division by zero
    return x / y


def _post_process(post: PostPlan, domain: Sequence[str],
                  released: Mapping[int, Mapping[str, Number | None]],
                  part_releases: Mapping[int, PartRelease],
                  ranges: Mapping[int, tuple[Exact, Exact]], parts: int, width: int
                  ) -> list[ReleasedGroup]:
    """Run the statement's post-processing on the noisy values only: one row per released
    group in an in-memory SQLite table ``released(k0…, a0…)``, then ``post.sql``."""
    conn = sqlite3.connect(":memory:")
    try:
        columns = [f"k{n}" for n in range(width)] + [f"a{n}" for n in range(len(post.inputs))]
        conn.execute(f"CREATE TABLE released ({', '.join(columns) or 'unused'})")
        shown: dict[tuple[object, ...], tuple[str | None, ...]] = {}
        for k in domain:
            noisy = [released[i].get(k) for i in range(parts)]
            row = [_key_value(v) for v in key_label(k)]
            shown[tuple(row)] = key_label(k)
            row += [_evaluate(f, noisy, ranges) for f in post.inputs]
            if row:
                conn.execute(f"INSERT INTO released VALUES ({', '.join('?' * len(row))})", row)
        try:
            result = conn.execute(post.sql).fetchall()
        except sqlite3.Error as exc:
            raise InputError(f"the post-processing of the noisy values failed in SQLite: {exc}",
                             construct="post-processing") from None
    finally:
        conn.close()
    out: list[ReleasedGroup] = []
    for row in result:
        key = shown.get(tuple(row[:width]),
                        tuple(None if v is None else str(v) for v in row[:width]))
        values = []
        for label, part, value in zip(post.labels, post.parts, row[width:], strict=True):
            half = part_releases[part].halfwidth_95 if part is not None else None
            values.append(ReleasedValue(label, value, half))
        out.append(ReleasedGroup(key, tuple(values)))
    return out


def _key_value(text: str | None) -> object:
    """A released key's value for the post-processing table: a number when it reads as one
    (so that ORDER BY a numeric key sorts numbers), else the text."""
    if text is None:
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _released_groups(plan: ReleasePlan, domain: Sequence[str],
                     released: Mapping[int, Mapping[str, Number | None]],
                     part_releases: Mapping[int, PartRelease],
                     ranges: Mapping[int, tuple[Exact, Exact]], notes: list[str]
                     ) -> list[ReleasedGroup]:
    """The released groups: the statement's items computed from the noisy parts of each
    released key, or its post-processing (the notes that say so appended to ``notes``)."""
    out_groups: list[ReleasedGroup] = []
    if plan.post is not None:
        out_groups = _post_process(plan.post, domain, released, part_releases, ranges,
                                   len(plan.parts), len(plan.keys))
        notes.append("HAVING, window functions, ORDER BY and LIMIT are computed on the noisy "
                     "values (post-processing, in SQLite in memory): they cost no privacy")
    for k in domain if plan.post is None else ():
        parts = [released[i].get(k) for i in range(len(plan.parts))]
        items: list[ReleasedValue] = []
        for item in plan.items:
            f = item.formula
            half = part_releases[int(f.value or 0)].halfwidth_95 if f.op == "part" else None
            items.append(ReleasedValue(item.label, _evaluate(f, parts, ranges), half))
        out_groups.append(ReleasedGroup(key_label(k), tuple(items)))
    if any(i.formula.op != "part" for i in plan.items):
        notes.append("items that combine aggregates are computed from the noisy parts "
                     "(post-processing): no half-width is given for them")
    return out_groups
