"""Profiles of live databases: observed fan-outs and proposed cardinality dependencies.

:func:`measure_fanouts` measures, for every ordered pair of columns of every
table, the largest number of distinct ``j`` values seen with one ``i`` value,
and :func:`proposals` turns the undeclared pairs into cardinality
dependencies ``R[i->j]<=k``.  Those are **observed in this data, not
guaranteed**: the next insert may break them.  :func:`profile_database` puts
the fan-outs together with the checks of the declared dependencies
(:func:`cqsens.db.check.check_constraints`: single-column, composite and
rows-per-value), of the schema's foreign keys
(:func:`cqsens.db.check.check_foreign_keys`) and the rows per person along the
ownership keys (:func:`cqsens.db.persons.measure_persons`) into one :class:`Profile`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from cqsens.db.catalogue import BoundTable, Catalogue, count_distinct
from cqsens.db.check import (
    PLAIN_NAME,
    ConstraintCheck,
    ForeignKeyCheck,
    check_constraints,
    check_foreign_keys,
    dependency_label,
)
from cqsens.db.connect import connect
from cqsens.db.persons import PersonView, measure_persons
from cqsens.db.reflect import reflect_schema
from cqsens.errors import DependencyError, read_text
from cqsens.frontend.parse_cq import ROWS, parse_dependency
from cqsens.ir.dependencies import AnyDependency, Dependency
from cqsens.ir.schema import Schema
from cqsens.passwords import mask_url

__all__ = [
    "OBSERVED_NOTE",
    "FanOut",
    "Profile",
    "declared_dependencies",
    "measure_fanouts",
    "profile_database",
    "proposals",
    "proposals_text",
]

#: The caveat every proposal carries.
OBSERVED_NOTE = "observed in this data, not guaranteed"


@dataclass(frozen=True, slots=True)
class FanOut:
    """The observed fan-out of one ordered pair of columns of one table.

    Attributes
    ----------
    relation : str
        The schema's name of the table.
    i, j : int
        0-based positions (``i != j``).
    columns : tuple of str
        The names of the columns at ``i`` and ``j``.
    max_count : int
        The largest number of distinct non-NULL values at ``j`` seen with one
        non-NULL value at ``i`` (0 for an empty table).
    groups : int
        Distinct non-NULL values at ``i``.
    declared : int or None
        The least ``k`` declared for ``R[i->j]`` (keys included), or None.
    rows : int or None
        Rows with a non-NULL value at ``i`` (None when unknown).
    """

    relation: str
    i: int
    j: int
    columns: tuple[str, str]
    max_count: int
    groups: int
    declared: int | None = None
    rows: int | None = None

    @property
    def weak(self) -> bool:
        """True when every value at ``i`` occurs in one row only.

        The fan-out is then 1 whatever the columns mean: the data gives no
        evidence for the proposal.
        """
        return self.rows is not None and self.groups > 0 and self.rows == self.groups

    @property
    def proposal(self) -> Dependency | None:
        """``R[i->j]<=max_count`` — *observed in this data, not guaranteed*.

        None when a bound is declared for the pair (the declaration, checked
        separately, is the better source) or when the table has no value at
        ``i``.  The proposed ``k`` is at least 1.
        """
        if self.declared is not None or self.groups == 0:
            return None
        return Dependency(self.relation, self.i, self.j, max(self.max_count, 1))

    def to_dict(self, schema: Schema | None = None) -> dict[str, Any]:
        """JSON-ready form."""
        proposal = self.proposal
        return {
            "relation": self.relation,
            "i": self.i + 1,
            "j": self.j + 1,
            "columns": list(self.columns),
            "max_count": self.max_count,
            "groups": self.groups,
            "declared": self.declared,
            "rows": self.rows,
            "weak": self.weak,
            "proposal": None if proposal is None else dependency_label(proposal, schema),
        }


def _least_declared(deps: Iterable[AnyDependency]) -> dict[tuple[str, int, int], int]:
    out: dict[tuple[str, int, int], int] = {}
    for d in deps:
        if not isinstance(d, Dependency) or d.j == ROWS:
            continue  # bounds a set of columns or the rows: not a pair's fan-out
        key = (d.relation.lower(), d.i, d.j)
        if key not in out or d.k < out[key]:
            out[key] = d.k
    return out


def measure_fanouts(
    url: str,
    schema: Schema | None = None,
    *,
    declared: Iterable[AnyDependency] = (),
    tables: Iterable[str] | None = None,
) -> list[FanOut]:
    """The observed fan-out of every ordered pair of columns of every table.

    For each table and each position ``i`` the database runs one query:
    ``SELECT MAX(n_j), ... FROM (SELECT i, COUNT(DISTINCT j) AS n_j, ... FROM R
    WHERE i IS NOT NULL GROUP BY i)``.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` or ``postgresql://...``.
    schema : Schema, optional
        The tables and columns to measure; reflected from the database when None.
    declared : iterable of Dependency or MultiDependency
        Declared dependencies (keys included, if wanted): the single-column
        ones fill :attr:`FanOut.declared`, and declared pairs get no proposal.
    tables : iterable of str, optional
        Measure only these tables (case-insensitive); all by default.

    Returns
    -------
    list of FanOut
        In schema order, then by ``i``, then by ``j``.  The fan-outs are
        **observed in this data, not guaranteed**.

    Raises
    ------
    DatabaseError, SchemaError
        As :func:`check_constraints`.
    """
    if schema is None:
        schema = reflect_schema(url)
    masked = mask_url(url.strip())
    least = _least_declared(declared)
    wanted = None if tables is None else {t.lower() for t in tables}
    out: list[FanOut] = []
    with connect(url) as conn:
        catalogue = Catalogue(conn, schema, masked)
        for rel in schema.relations:
            if wanted is None or rel.name.lower() in wanted:
                out += _table_fanouts(conn, catalogue.bind(rel), least)
    return out


def _table_fanouts(conn: Connection, table: BoundTable,
                   least: Mapping[tuple[str, int, int], int]) -> list[FanOut]:
    """The fan-outs of one table: one query per position ``i``."""
    rel = table.relation
    t = table.sql()
    arity = len(rel.columns)
    out: list[FanOut] = []
    for i in range(arity):
        others = [j for j in range(arity) if j != i]
        if not others:
            continue
        ci = t.c[table.db_columns[i]]
        per_value = sa.select(
            ci.label("v"),
            sa.func.count().label("r"),
            *(count_distinct(t.c[table.db_columns[j]]).label(f"n{j}") for j in others),
        ).where(ci.is_not(None)).group_by(ci).subquery("g")
        row = conn.execute(sa.select(
            sa.func.count(),
            sa.func.sum(per_value.c.r),
            *(sa.func.max(per_value.c[f"n{j}"]) for j in others),
        ).select_from(per_value)).one()
        groups, rows = int(row[0] or 0), int(row[1] or 0)
        for j, value in zip(others, row[2:], strict=True):
            out.append(FanOut(
                relation=rel.name,
                i=i,
                j=j,
                columns=(rel.columns[i], rel.columns[j]),
                max_count=int(value or 0),
                groups=groups,
                declared=least.get((rel.name.lower(), i, j)),
                rows=rows,
            ))
    return out


def proposals(fanouts: Iterable[FanOut]) -> list[Dependency]:
    """The proposed dependencies of the fan-outs, *observed in this data, not guaranteed*."""
    return [p for f in fanouts if (p := f.proposal) is not None]


def proposals_text(fanouts: Iterable[FanOut], schema: Schema | None = None, *,
                   database: str = "") -> str:
    """The proposals as a constraints file that ``--constraints`` reads.

    Parameters
    ----------
    fanouts : iterable of FanOut
        As :func:`measure_fanouts` returns them.
    schema : Schema, optional
        Gives column names (the file then needs ``--schema`` or ``--db`` to be read).
    database : str
        The database the fan-outs were measured in, for the header (masked).

    Returns
    -------
    str
        A ``#`` header saying the bounds were observed, not guaranteed, then one
        ``Table[col->col]<=k`` per line.

    Examples
    --------
    >>> f = FanOut("PatDoc", 0, 1, ("pat", "doc"), max_count=3, groups=12)
    >>> print(proposals_text([f]), end="")
    # Cardinality dependencies OBSERVED in this data, NOT GUARANTEED.
    # They held when measured; nothing stops a later insert from breaking them, and
    # a sensitivity bound that uses them is only as good as they are.
    # Review each line: keep the real business rules, delete the rest.
    PatDoc[1->2]<=3  # max over 12 pat values
    """
    lines = ["# Cardinality dependencies OBSERVED in this data, NOT GUARANTEED."]
    if database:
        lines.append(f"# Measured by cqsens profile in {mask_url(database)}.")
    lines += [
        "# They held when measured; nothing stops a later insert from breaking them, and",
        "# a sensitivity bound that uses them is only as good as they are.",
        "# Review each line: keep the real business rules, delete the rest.",
    ]
    for fanout in fanouts:
        dep = fanout.proposal
        if dep is None:
            continue
        rel = schema.find(dep.relation) if schema is not None else None
        name = rel.name if rel is not None else dep.relation
        if not PLAIN_NAME.match(name):
            lines.append(f"# {name}[{dep.i + 1}->{dep.j + 1}]<={dep.k}  "
                         "(table name is not a plain identifier: cannot be declared)")
            continue
        ci = fanout.columns[0]
        many = "value" if fanout.groups == 1 else "values"
        note = f"max over {fanout.groups} {ci} {many}"
        if fanout.weak:
            note += f"; weak evidence: every {ci} value occurs once"
        lines.append(f"{dependency_label(dep, schema, always_bound=True)}  # {note}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class Profile:
    """What ``cqsens profile`` reports: declared dependencies and foreign keys checked,
    fan-outs measured."""

    database: str
    schema: Schema
    checks: tuple[ConstraintCheck, ...]
    fanouts: tuple[FanOut, ...]
    note: str = field(default=OBSERVED_NOTE)
    foreign_keys: tuple[ForeignKeyCheck, ...] = ()
    persons: PersonView | None = None

    @property
    def violations(self) -> list[ConstraintCheck]:
        """The dependency checks that failed."""
        return [c for c in self.checks if not c.ok]

    @property
    def broken_foreign_keys(self) -> list[ForeignKeyCheck]:
        """The foreign keys the data breaks."""
        return [f for f in self.foreign_keys if not f.ok]

    @property
    def violated(self) -> int:
        """Violated declared constraints: dependencies and foreign keys."""
        return len(self.violations) + len(self.broken_foreign_keys)

    @property
    def proposals(self) -> list[Dependency]:
        """Proposed CDs: *observed in this data, not guaranteed*."""
        return proposals(self.fanouts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "database": self.database,
            "schema": self.schema.source,
            "tables": self.schema.relation_names(),
            "checks": [c.to_dict() for c in self.checks],
            "violations": self.violated,
            "foreign_keys": [f.to_dict() for f in self.foreign_keys],
            "foreign_key_violations": len(self.broken_foreign_keys),
            "fanouts": [f.to_dict(self.schema) for f in self.fanouts],
            "proposals": [dependency_label(p, self.schema) for p in self.proposals],
            "proposals_note": self.note,
            "rows_per_person": None if self.persons is None
            else self.persons.to_dict(self.schema),
        }


def profile_database(
    url: str,
    *,
    schema: Schema | None = None,
    deps: Iterable[AnyDependency] = (),
    origins: Mapping[AnyDependency, str] | None = None,
    include_keys: bool = True,
    foreign_keys: bool = True,
    samples: int = 3,
    unit: str | None = None,
    owner: Sequence[str] = (),
    persons: bool = True,
) -> Profile:
    """Check the declared dependencies and foreign keys, and measure every fan-out.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` or ``postgresql://...``.
    schema : Schema, optional
        Reflected from the database when None.
    deps : iterable of Dependency or MultiDependency
        Declared dependencies beyond the schema's keys: single-column,
        composite ``R[a,b->c]<=k`` and rows-per-value ``R[a->*]<=k``.
    origins : mapping, optional
        Where each of ``deps`` was declared (for the report).
    include_keys : bool
        Also check the FDs the schema's keys imply (single-column and composite).
    foreign_keys : bool
        Also check the schema's foreign keys (:attr:`Profile.foreign_keys`).
    samples : int
        Offending values reported per violated dependency or broken foreign key.
    unit : str, optional
        The privacy unit for the rows-per-person view (:attr:`Profile.persons`);
        proposed from the foreign keys when None
        (:func:`cqsens.db.persons.measure_persons`).
    owner : sequence of str
        The foreign keys that carry ownership; proposed when empty.
    persons : bool
        Measure the rows per person along the ownership keys.

    Returns
    -------
    Profile

    Raises
    ------
    DatabaseError, SchemaError, DependencyError
        As :func:`check_constraints`.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "t.db")
    >>> url = f"sqlite:///{path}"
    >>> from cqsens.db.load import load_sql_file
    >>> load_sql_file(url, text="CREATE TABLE R (a INT PRIMARY KEY, b INT);"
    ...                         "INSERT INTO R VALUES (1, 5), (2, 5), (3, 6);")
    >>> p = profile_database(url)
    >>> [c.label for c in p.checks], [c.ok for c in p.checks]
    (['R[a->b]'], [True])
    >>> [dependency_label(d, p.schema) for d in p.proposals]
    ['R[b->a]<=2']
    """
    if schema is None:
        schema = reflect_schema(url)
    declared: list[AnyDependency] = []
    where: dict[AnyDependency, str] = {}
    if include_keys:
        for rel in schema.relations:
            for d in rel.key_dependencies():
                if d not in where:
                    declared.append(d)
                    where[d] = f"key {rel.name}.{rel.columns[d.i]}"
            for m in rel.composite_key_dependencies():
                if m not in where:
                    declared.append(m)
                    where[m] = f"key {rel.name}({', '.join(rel.columns[i] for i in m.sources)})"
    for given in deps:
        found = schema.find(given.relation)
        named = replace(given, relation=found.name) if found is not None else given
        if named not in where:
            declared.append(named)
            where[named] = (origins or {}).get(given, "")
    checks = check_constraints(url, schema, declared, samples=samples, origins=where)
    keys = check_foreign_keys(url, schema, samples=samples) if foreign_keys else []
    fanouts = measure_fanouts(url, schema, declared=declared)
    view = measure_persons(url, schema, unit=unit, owner=owner) if persons else None
    return Profile(mask_url(url.strip()), schema, tuple(checks), tuple(fanouts),
                   foreign_keys=tuple(keys), persons=view)


def declared_dependencies(
    schema: Schema,
    *,
    fds: tuple[str, ...] = (),
    cds: tuple[str, ...] = (),
    constraints: str | None = None,
) -> tuple[list[AnyDependency], dict[AnyDependency, str]]:
    """The dependencies of ``--fd``, ``--cd`` and ``--constraints``, with their origins.

    Single-column ``R[i->j]<=k``, composite ``R[a,b->j]<=k`` and rows-per-value
    ``R[a->*]<=k`` dependencies are all accepted.

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
    (list of Dependency or MultiDependency, dict)
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
    >>> deps, where = declared_dependencies(s, cds=("patdoc[pat->doc]<=3",
    ...                                             "patdoc[pat,doc->*]<=2"))
    >>> [str(d) for d in deps], list(where.values())
    (['PatDoc[1->2]<=3', 'PatDoc[1,2->*]<=2'], ['--cd', '--cd'])
    """
    deps: list[AnyDependency] = []
    origins: dict[AnyDependency, str] = {}

    def add(dep: AnyDependency, origin: str) -> None:
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

