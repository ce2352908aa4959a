"""``cqsens profile``: check declared dependencies against a live database, measure fan-outs.

The command connects to a SQLite or PostgreSQL database (``--db URL``), takes
its schema from ``--schema FILE`` or reflects it from the database, and

* checks every declared dependency — the FDs of the schema's single-column
  keys, ``--fd``, ``--cd`` and ``--constraints FILE`` — with SQL run in the
  database, listing the offending values of each violation;
* measures the fan-out of every ordered pair of columns of every table and
  proposes cardinality dependencies for the undeclared pairs, which are
  *observed in this data, not guaranteed*; ``-o FILE`` writes them as a
  constraints file that ``--constraints`` reads (with ``--schema``).

Exit codes: 0 when the profile ran (violations found or not; ``--strict`` makes
violations exit 1), 1 on bad input (URL, unreachable server, wrong password,
missing table or column, bad dependency), 2 on bad usage.  Passwords in the URL
are masked in every message.  The lead registers the command with
``cli.add_command(profile)``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from cqsens.db.database import (
    OBSERVED_NOTE,
    Profile,
    dependency_label,
    mask_url,
    profile_database,
    proposals_text,
    reflect_schema,
)
from cqsens.errors import DependencyError, InputError, read_text
from cqsens.frontend.ddl import load_schema
from cqsens.frontend.parse_cq import parse_dependency
from cqsens.ir.dependencies import Dependency
from cqsens.ir.schema import Schema

__all__ = ["EXIT_INPUT", "EXIT_OK", "declared_dependencies", "profile", "render_text"]

EXIT_OK = 0
EXIT_INPUT = 1


def declared_dependencies(
    schema: Schema,
    *,
    fds: tuple[str, ...] = (),
    cds: tuple[str, ...] = (),
    constraints: str | None = None,
) -> tuple[list[Dependency], dict[Dependency, str]]:
    """The dependencies of ``--fd``, ``--cd`` and ``--constraints``, with their origins.

    Parameters
    ----------
    schema : Schema
        Resolves names (case-insensitively) and checks positions.
    fds, cds : tuple of str
        ``R[i->j]`` and ``R[i->j]<=k`` texts.
    constraints : str, optional
        A constraints file, one dependency per line, ``#`` comments.

    Returns
    -------
    (list of Dependency, dict)
        The dependencies in order, and where each was declared (``--fd``,
        ``--cd``, ``file:line``).

    Raises
    ------
    DependencyError
        A malformed dependency, an unknown table or column, an unreadable file.

    Examples
    --------
    >>> from cqsens.frontend.ddl import schema_from_ddl
    >>> s = schema_from_ddl("CREATE TABLE PatDoc (pat INT, doc INT)")
    >>> deps, where = declared_dependencies(s, cds=("patdoc[pat->doc]<=3",))
    >>> [str(d) for d in deps], list(where.values())
    (['PatDoc[1->2]<=3'], ['--cd'])
    """
    deps: list[Dependency] = []
    origins: dict[Dependency, str] = {}

    def add(dep: Dependency, origin: str) -> None:
        if dep not in origins:
            deps.append(dep)
            origins[dep] = origin

    for kind, items in (("fd", fds), ("cd", cds)):
        for text in items:
            add(parse_dependency(text, schema=schema, kind=kind, source=f"--{kind}"), f"--{kind}")
    if constraints is not None:
        path = Path(constraints)
        lines = read_text(path, error=DependencyError, what="constraints file").splitlines()
        for number, raw in enumerate(lines, start=1):  # as parse_dependencies reads them
            text = raw.split("#", 1)[0].strip()
            if text:
                add(parse_dependency(text, schema=schema, source=str(path), line=number),
                    f"{path}:{number}")
    return deps, origins


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


def _value(value: object) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
            for r in rows]


def render_text(report: Profile) -> str:
    """The profile for people: checks with offending values, then the fan-out table.

    Parameters
    ----------
    report : Profile
        As :func:`cqsens.db.database.profile_database` returns it.

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
            ci, cj = c.columns
            out.append(f"  {c.label} is violated by {_plural(c.violating, ci + ' value')}"
                       + (", for example:" if c.offenders else "."))
            for o in c.offenders:
                shown = ", ".join(_value(v) for v in o.sample)
                more = ", ..." if len(o.sample) < o.count else ""
                out.append(f"    {ci} = {_value(o.value)}: {o.count} distinct {cj} "
                           f"({shown}{more})")
    else:
        out.append("  (none: declare some with --constraints, --fd, --cd or schema keys)")
    bad = len(report.violations)
    out.append(f"  {_plural(len(checks), 'dependency', 'dependencies')} checked, "
               f"{bad} violated.")
    out.append("")
    out.append(f"Fan-outs ({OBSERVED_NOTE}): the most distinct <to> values seen "
               "with one <from> value")
    if report.fanouts:
        rows = [["table", "from -> to", "max", "from values", "declared", "proposal"]]
        for f in report.fanouts:
            proposal = f.proposal
            declared = "-" if f.declared is None else f"<={f.declared}"
            if f.declared is not None and f.max_count > f.declared:
                declared += " VIOLATED"
            if proposal is None:
                text = "-"
            else:
                text = dependency_label(proposal, report.schema, always_bound=True)
                if f.weak:
                    text += "  (weak: every value occurs once)"
            rows.append([f.relation, f"{f.columns[0]} -> {f.columns[1]}", str(f.max_count),
                         str(f.groups), declared, text])
        out += _table(rows)
    else:
        out.append("  (no table has two columns)")
    n = len(report.proposals)
    proposed = _plural(n, "proposed cardinality dependency", "proposed cardinality dependencies")
    out.append(f"  {proposed}: {OBSERVED_NOTE}; write them with -o FILE and keep only the "
               "real rules.")
    return "\n".join(out)


@click.command("profile")
@click.option("--db", "db", required=True, metavar="URL",
              help="sqlite:///path.db or postgresql://user:password@host:port/dbname.")
@click.option("--schema", "schema_file", type=click.Path(dir_okay=False), default=None,
              help="SQL DDL file (CREATE TABLE ...); reflected from the database when absent.")
@click.option("--dialect", default=None, metavar="NAME",
              help="sqlglot dialect of the --schema DDL.")
@click.option("--constraints", type=click.Path(dir_okay=False), default=None,
              help="File of dependencies to check, one per line ('#' comments).")
@click.option("--fd", "fds", multiple=True, metavar="'R[i->j]'",
              help="Functional dependency to check (positions 1-based or column names).")
@click.option("--cd", "cds", multiple=True, metavar="'R[i->j]<=k'",
              help="Cardinality dependency to check.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the proposed CDs (observed, not guaranteed) as a constraints file.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
@click.option("--samples", type=click.IntRange(min=0), default=3, show_default=True,
              help="Offending values shown per violated dependency.")
@click.option("--strict", is_flag=True,
              help="Exit 1 when a declared dependency is violated (default: exit 0).")
def profile(
    db: str,
    schema_file: str | None,
    dialect: str | None,
    constraints: str | None,
    fds: tuple[str, ...],
    cds: tuple[str, ...],
    output: str | None,
    fmt: str,
    samples: int,
    strict: bool,
) -> None:
    """Check declared dependencies against a live database and measure fan-outs.

    Every declared dependency (schema keys, --fd, --cd, --constraints) is
    checked with SQL run in the database; violations are listed with offending
    values.  The fan-out of every pair of columns is measured and undeclared
    pairs get a proposed cardinality dependency: OBSERVED IN THIS DATA, NOT
    GUARANTEED.  Exit code 0 when the profile ran (1 with --strict if a
    dependency is violated), 1 on bad input, 2 on bad usage.

    \b
    Examples:
      cqsens profile --db sqlite:///hospital.db --constraints examples/hospital/constraints.txt
      cqsens profile --db postgresql://me@localhost/hospital -o observed.txt
    """
    try:
        loaded = load_schema(Path(schema_file), dialect=dialect) if schema_file else None
        schema = loaded if loaded is not None else reflect_schema(db)
        deps, origins = declared_dependencies(schema, fds=fds, cds=cds, constraints=constraints)
        report = profile_database(db, schema=schema, deps=deps, origins=origins,
                                  samples=samples)
    except InputError as err:
        click.echo(str(err), err=True)
        sys.exit(EXIT_INPUT)
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(render_text(report))
    if output is not None:
        try:
            Path(output).write_text(proposals_text(report.fanouts, report.schema,
                                                   database=mask_url(db)), encoding="utf-8")
        except OSError as exc:
            click.echo(f"error: {output}: cannot write: {exc.strerror}", err=True)
            sys.exit(EXIT_INPUT)
        click.echo(f"{output}: {len(report.proposals)} proposed dependencies written "
                   f"({OBSERVED_NOTE})", err=True)
    if strict and report.violations:
        click.echo(f"error: {len(report.violations)} declared "
                   f"{'dependency is' if len(report.violations) == 1 else 'dependencies are'} "
                   "violated in the database", err=True)
        sys.exit(EXIT_INPUT)
    sys.exit(EXIT_OK)
