"""Text, JSON and CSV renderings of a :class:`~cqsens.releasing.results.Release`.

Only noisy values are rendered (the release holds no other); the ledger line
says what the budget has left.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from cqsens.release.ledger import Ledger
from cqsens.releasing.public import is_public_release
from cqsens.releasing.results import Release
from cqsens.report.common import json_default
from cqsens.schemas import versioned

__all__ = ["ledger_json", "ledger_text", "render_csv", "render_json", "render_stages_json",
           "render_text", "spent_line"]


def _num(value: Any, digits: int = 6) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (int, str)):
        return str(value)
    return f"{value:.{digits}g}"


def _budget_text(state: Ledger) -> str:
    s = state.settings
    parts = []
    if s.epsilon_budget is not None:
        parts.append(f"budget ε {s.epsilon_budget:g}, {state.epsilon_left():.6g} left")
    if s.delta_budget is not None:
        parts.append(f"δ budget {s.delta_budget:g}, {state.delta_left():.3g} left")
    return "; ".join(parts) if parts else "no budget stored"


def spent_line(ledger: str, state: Ledger) -> str:
    """``ledger: FILE: ε X, δ Y spent by N releases (rule); budget ε B, L left``."""
    spent = state.spent
    many = "release" if spent.releases == 1 else "releases"
    return (f"ledger: {ledger}: ε {spent.epsilon:.6g}, δ {spent.delta:.3g} spent by "
            f"{spent.releases} {many} ({spent.rule}); {_budget_text(state)}")


def ledger_json(ledger: str, state: Ledger) -> dict[str, Any]:
    """The ledger's totals and stored settings, as JSON."""
    spent, s = state.spent, state.settings
    return {"file": ledger, "epsilon_spent": spent.epsilon, "delta_spent": spent.delta,
            "releases": spent.releases, "rule": spent.rule, "budget": s.epsilon_budget,
            "epsilon_left": state.epsilon_left(), "delta_budget": s.delta_budget,
            "delta_left": state.delta_left(),
            "privacy_unit": None if s.model is None else s.model.text()}


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
            if v.halfwidth_95 is not None and not is_public_release(release):
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
    released = [w for w in ("view", "subquery") if f"rule released-{w}" in release.split]
    if is_public_release(release) and released:
        what = "views'" if released[0] == "view" else "subqueries'"
        lines.append(f"  (computed from the released {what} noisy rows and public tables: no "
                     "further noise, no ε spent)")
    else:
        lines.append("  (exact values computed from public tables only: no noise, no ε spent)"
                     if is_public_release(release)
                     else "  (noisy values; ± is the 95 % error half-width of the noise)")
    if ledger:
        lines.append(f"  {ledger}")
    for note in release.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines)


def render_json(release: Release, ledger: dict[str, Any] | None = None) -> str:
    """The release as one JSON object (``groups``: one object per group, ``value``), with
    ``schema_version`` (:mod:`cqsens.schemas`)."""
    out = versioned(release.to_dict())
    if ledger is not None:
        out["ledger"] = ledger
    return json.dumps(out, indent=2, ensure_ascii=False, default=json_default)


def render_stages_json(stages: Sequence[Release], ledger: dict[str, Any] | None = None) -> str:
    """A two-stage release (docs/rules.md, rule two-stage) as one JSON object: the outer
    statement's release, with ``stages``, every stage's release in order (the outer last)."""
    out = versioned(stages[-1].to_dict())
    out["stages"] = [s.to_dict() for s in stages]
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


def _columns(table: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in table]


def ledger_text(path: str, state: Ledger) -> str:
    """``cqsens budget``: the stored settings, one line per release, the total, the changes."""
    entries, s = state.entries, state.settings
    eps = "none" if s.epsilon_budget is None else f"{s.epsilon_budget:g}"
    delta = "none" if s.delta_budget is None else f"{s.delta_budget:g}"
    unit = ("not stored yet (the first release stores it)" if s.model is None and not state.mixed
            else "; ".join(state.mixed) + " (mixed: no release can be added)" if state.mixed
            else s.model.text() if s.model is not None else "")
    lines = [f"ledger {path}: {len(entries)} release{'s' if len(entries) != 1 else ''}",
             f"  budget        ε {eps}, δ {delta}",
             f"  privacy unit  {unit}"]
    if state.old_format:
        lines.append("  (written by an earlier cqsens: its settings are added by the next "
                     "release or --set)")
    if entries:
        table = [["time", "ε", "δ", "ρ", "mechanism", "privacy unit", "query (SHA-256)"]]
        table += [[e.time, f"{e.epsilon:.6g}", f"{e.delta:.3g}",
                   "" if e.rho is None else f"{e.rho:.4g}", e.mechanism, e.privacy_unit,
                   e.query_sha256[:16]] for e in entries]
        lines += _columns(table)
    lines.append("  " + spent_line(path, state).removeprefix(f"ledger: {path}: "))
    if state.changes:
        lines.append("  changes of the stored settings:")
        table = [["time", "setting", "old", "new", "how"]]
        table += [[c.time, c.setting, c.old, c.new, c.how] for c in state.changes]
        lines += ["  " + line for line in _columns(table)]
    return "\n".join(lines)
