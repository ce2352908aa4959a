"""Text, JSON and CSV renderings of a :class:`~cqsens.release.execute.Release`.

Only noisy values are rendered (the release holds no other); the ledger line
says what the budget has left.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from cqsens.release.execute import Release
from cqsens.release.ledger import Entry, Spent
from cqsens.report.common import json_default

__all__ = ["ledger_text", "render_csv", "render_json", "render_text", "spent_line"]


def _num(value: Any, digits: int = 6) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}g}"


def spent_line(ledger: str, spent: Spent, budget: float | None) -> str:
    """``ledger: FILE: ε X spent by N releases (of budget B: L left)``."""
    many = "release" if spent.releases == 1 else "releases"
    text = (f"ledger: {ledger}: ε {spent.epsilon:.6g}, δ {spent.delta:.3g} spent by "
            f"{spent.releases} {many} ({spent.rule})")
    if budget is not None:
        text += f"; budget ε {budget:g}, {max(0.0, budget - spent.epsilon):.6g} left"
    return text


def render_text(release: Release, ledger: str | None = None) -> str:
    """The release for people: how it was made, then one line per group."""
    lines = [f"release of {release.source} from {release.database}",
             f"  privacy    ε = {release.epsilon:g}, δ = {release.delta:g}; neighbours: "
             f"{release.privacy_unit}",
             f"  keys       {release.key_mode}",
             f"  budget     {release.split}"]
    for p in release.parts:
        half = f", 95 % within ±{_num(p.halfwidth_95, 4)}" if p.halfwidth_95 is not None else ""
        lines.append(f"  {p.label}: {p.mechanism}, ε {p.epsilon:.6g}"
                     + (f", δ {p.delta:.3g}" if p.delta else "")
                     + f", scale {_num(p.scale, 6)}{half} (sensitivity {p.sensitivity})")
    header = [*release.key_names] + [v.label for v in
                                     (release.groups[0].values if release.groups else ())]
    rows = []
    for g in release.groups:
        cells = ["NULL" if k is None else k for k in g.key]
        for v in g.values:
            cell = _num(v.value)
            if v.halfwidth_95 is not None:
                cell += f" ±{_num(v.halfwidth_95, 4)}"
            cells.append(cell)
        rows.append(cells)
    if header:
        widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
        lines.append("")
        lines.append("  " + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
                     .rstrip())
        for r in rows:
            lines.append("  " + "  ".join(str(c).ljust(w) for c, w in
                                          zip(r, widths, strict=True)).rstrip())
    if not release.groups:
        lines.append("  (no group released)")
    lines.append("")
    lines.append("  (noisy values; ± is the 95 % error half-width of the noise)")
    if ledger:
        lines.append(f"  {ledger}")
    for note in release.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines)


def render_json(release: Release, ledger: dict[str, Any] | None = None) -> str:
    """The release as one JSON object (``groups``: one object per group, ``value``)."""
    out = release.to_dict()
    if ledger is not None:
        out["ledger"] = ledger
    return json.dumps(out, indent=2, ensure_ascii=False, default=json_default)


def render_csv(release: Release) -> str:
    """One CSV row per group and released item: keys, label, value, halfwidth_95."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*release.key_names, "label", "value", "halfwidth_95"])
    for g in release.groups:
        for v in g.values:
            writer.writerow([*("" if k is None else k for k in g.key), v.label,
                             "" if v.value is None else v.value,
                             "" if v.halfwidth_95 is None else v.halfwidth_95])
    return buffer.getvalue().rstrip("\n")


def ledger_text(entries: Sequence[Entry], spent: Spent, path: str,
                budget: float | None) -> str:
    """``cqsens budget``: one line per release, then the total."""
    lines = [f"ledger {path}: {len(entries)} release{'s' if len(entries) != 1 else ''}"]
    table = [["time", "ε", "δ", "mechanism", "privacy unit", "query (SHA-256)"]]
    table += [[e.time, f"{e.epsilon:.6g}", f"{e.delta:.3g}", e.mechanism, e.privacy_unit,
               e.query_sha256[:16]] for e in entries]
    if entries:
        widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                  for r in table]
    lines.append("  " + spent_line(path, spent, budget).removeprefix(f"ledger: {path}: "))
    return "\n".join(lines)
