"""Text and JSON renderings of a live-database profile (``cqsens profile``).

The text rendering lists the declared dependencies checked in the database,
with the offending values of each violation, then the foreign keys checked
(when the schema has some) with their missing values, then the table of observed
fan-outs and the cardinality dependencies they suggest, which are *observed in
this data, not guaranteed*.  Renderers return strings; only the command line
prints them.
"""

from __future__ import annotations

import json
from itertools import groupby

from cqsens.db.check import ConstraintCheck, dependency_label
from cqsens.db.persons import PersonView
from cqsens.db.profile import OBSERVED_NOTE, FanOut, Profile
from cqsens.ir.schema import Schema

__all__ = ["render_json", "render_text"]


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


def _value(value: object) -> str:
    if isinstance(value, tuple):  # a composite value, or a sample row
        return "(" + ", ".join(_value(v) for v in value) + ")"
    return repr(value) if isinstance(value, str) else str(value)


def _grouped(values: tuple[object, ...]) -> str:
    """The values, each run of equal ones said once with its count: ``(1, 2) ×71, (3, 4)``."""
    out = []
    for value, run in groupby(values):
        n = len(list(run))
        out.append(_value(value) + (f" ×{n}" if n > 1 else ""))
    return ", ".join(out)


def _violation(c: ConstraintCheck) -> list[str]:
    """The violated dependency with its offending values, for example."""
    src = c.source
    out = [f"  {c.label} is violated by {_plural(c.violating, src + ' value')}"
           + (", for example:" if c.offenders else ".")]
    for o in c.offenders:
        shown = _grouped(o.sample)
        more = ", ..." if len(o.sample) < o.count else ""
        what = _plural(o.count, "row") if c.kind == "rows" else f"{o.count} distinct {c.target}"
        out.append(f"    {src} = {_value(o.value)}: {what} ({shown}{more})")
    return out


def _foreign_keys(report: Profile) -> list[str]:
    """The foreign keys checked, with the missing values of each broken one."""
    keys = report.foreign_keys
    out = [f"Foreign keys, checked in the database ({len(keys)}):"]
    rows = [["", "foreign key", "result"]]
    rows += [["ok" if f.ok else "FAIL", f.label, f.summary()] for f in keys]
    out += _table(rows)
    broken = report.broken_foreign_keys
    for f in broken:
        out.append(f"  {f.label} is broken by {_plural(f.missing, 'row')}"
                   + (", for example:" if f.offenders else "."))
        names = f.columns[0] if len(f.columns) == 1 else f"({', '.join(f.columns)})"
        for o in f.offenders:
            out.append(f"    {names} = {_value(o.value)}: {_plural(o.count, 'row')}, "
                       f"no such {f.target} row")
    out.append(f"  {_plural(len(keys), 'foreign key')} checked, {len(broken)} broken.")
    return out


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
            for r in rows]


def render_text(report: Profile) -> str:
    """The profile for people: checks with offending values, then the fan-out table.

    Parameters
    ----------
    report : Profile
        As :func:`cqsens.db.profile.profile_database` returns it.

    Returns
    -------
    str
        Plain text, no trailing newline.
    """
    out = [f"database: {report.database}",
           f"schema:   {report.schema.source} ({_plural(len(report.schema.relations), 'table')})",
           ""]
    checks = report.checks
    out.append(f"Declared dependencies, checked in the database ({len(checks)}):")
    if checks:
        rows = [["", "dependency", "declared by", "result"]]
        for c in checks:
            rows.append(["ok" if c.ok else "FAIL", c.label, c.origin or "-", c.summary()])
        out += _table(rows)
        for c in report.violations:
            out += _violation(c)
    else:
        out.append("  (none: declare some with --constraints, --fd, --cd or schema keys)")
    bad = len(report.violations)
    out.append(f"  {_plural(len(checks), 'dependency', 'dependencies')} checked, "
               f"{bad} violated.")
    out.append("")
    if report.foreign_keys:
        out += _foreign_keys(report)
        out.append("")
    if report.persons is not None:
        out += _persons(report.persons, report.schema)
        out.append("")
    out.append(f"Fan-outs ({OBSERVED_NOTE}): the most distinct <to> values seen "
               "with one <from> value; pairs with the same result share a row")
    if report.fanouts:
        rows = [["table", "from -> to", "max", "from values", "declared", "proposal"]]
        rows += [_fanout_row(group, report) for group in _fanout_groups(report.fanouts)]
        out += _table(rows)
    else:
        out.append("  (no table has two columns)")
    n = len(report.proposals)
    proposed = _plural(n, "proposed cardinality dependency", "proposed cardinality dependencies")
    out.append(f"  {proposed}: {OBSERVED_NOTE}; write them with -o FILE and keep only the "
               "real rules.")
    return "\n".join(out)


def _fanout_key(f: FanOut) -> tuple[object, ...]:
    violated = f.declared is not None and f.max_count > f.declared
    return (f.relation, f.i, f.max_count, f.groups, f.declared, violated, f.weak,
            f.proposal is None)


def _fanout_groups(fanouts: tuple[FanOut, ...]) -> list[list[FanOut]]:
    """The fan-outs from the same column with the same result, together (first seen first)."""
    groups: dict[tuple[object, ...], list[FanOut]] = {}
    for f in fanouts:
        groups.setdefault(_fanout_key(f), []).append(f)
    return list(groups.values())


def _fanout_row(group: list[FanOut], report: Profile) -> list[str]:
    """One row of the fan-out table for fan-outs that differ only in their target."""
    f = group[0]
    declared = "-" if f.declared is None else f"<={f.declared}"
    if f.declared is not None and f.max_count > f.declared:
        declared += " VIOLATED"
    proposal = f.proposal
    if proposal is None:
        text = "-"
    elif len(group) == 1:
        text = dependency_label(proposal, report.schema, always_bound=True)
    else:
        text = f"{len(group)} CDs, each <={proposal.k}"
    if proposal is not None and f.weak:
        text += "  (weak: every value occurs once)"
    targets = ", ".join(g.columns[1] for g in group)
    return [f.relation, f"{f.columns[0]} -> {targets}", str(f.max_count), str(f.groups),
            declared, text]


def _persons(view: PersonView, schema: Schema) -> list[str]:
    """Rows per referenced row along each ownership key, and per person along each chain."""
    o = view.ownership
    how = ("proposed: the table the most others reference; choose with --unit"
           if view.proposed else "given")
    owners = "proposed; choose with --owner" if view.owners_proposed else "given"
    public = ("proposed: no ownership key leads from them to the unit" if view.owners_proposed
              else "no ownership key leads from them to the unit")
    out = [f"Rows per person ({OBSERVED_NOTE}): unit {view.unit_text} ({how})",
           f"  ownership keys ({owners}): {', '.join(o.owner_names(schema)) or 'none'}",
           f"  public ({public}): {', '.join(o.public) or 'none'}"]
    out += [f"  note: {note}" for note in o.notes]
    for table, column in o.nullable:
        out.append(f"  note: {table} reaches {o.unit} only through the nullable column "
                   f"{column}: a query that reads its NULL rows is refused")
    if view.links:
        rows = [["key", "max", "p99", "over", "proposal"]]
        rows += [[c.text, str(c.max_count), str(c.p99), f"{c.persons} {c.target}",
                  "-" if c.proposal is None
                  else dependency_label(c.proposal, schema, always_bound=True)]
                 for c in view.links]
        out.append("  Rows per referenced row, along each ownership key:")
        out += _table(rows, indent="    ")
    if view.chains:
        rows = [["table", "through", "max", "p99", "persons"]]
        rows += [[c.table, c.text, str(c.max_count), str(c.p99), str(c.persons)]
                 for c in view.chains]
        out.append("  Rows per person, along each chain:")
        out += _table(rows, indent="    ")
    return out


def render_json(report: Profile) -> str:
    """The profile (as for :func:`render_text`) as indented JSON text
    (:meth:`Profile.to_dict`), non-ASCII kept as is, no trailing newline."""
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False)
