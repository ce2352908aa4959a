"""Declared dependencies and foreign keys checked against the data of a live database.

cqsens reasons about dependencies (functional ``R[i->j]`` and cardinality
``R[i->j]<=k``) that the *data* is supposed to obey.  :func:`check_constraints`
confronts them with a live database: for each one the database runs a
``GROUP BY`` on position ``i`` with ``COUNT(DISTINCT`` position ``j)``, and
only the counts and a few offending values leave it.  A composite dependency
``R[a,b->c]<=k`` groups by all of its source columns; a rows-per-value
dependency ``R[a->*]<=k`` (at most ``k`` rows share a value of ``a``,
duplicate rows included) counts rows with ``COUNT(*)``.
:func:`check_foreign_keys` counts the rows whose foreign key matches no
referenced row (SQLite enforces foreign keys only under ``PRAGMA
foreign_keys``, so its data can break them).

NULLs: rows with a NULL source value are skipped (NULL never joins), and
``COUNT(DISTINCT j)`` does not count NULLs at ``j``; a row with a NULL in its
foreign key columns references nothing (SQL's ``MATCH SIMPLE``).  Table and
column names are matched case-insensitively, so a schema read from a DDL file
can be checked against the database the DDL created.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from cqsens.db.catalogue import BoundTable, Catalogue, count_distinct
from cqsens.db.connect import connect
from cqsens.db.reflect import reflect_schema
from cqsens.errors import DependencyError
from cqsens.ir.dependencies import AnyDependency, Dependency, MultiDependency
from cqsens.ir.schema import ForeignKey, Relation, Schema
from cqsens.passwords import mask_url

__all__ = [
    "PLAIN_NAME",
    "ROWS_TARGET",
    "ConstraintCheck",
    "ForeignKeyCheck",
    "Offender",
    "check_constraints",
    "check_foreign_keys",
    "dependency_label",
]

#: The target position of a rows-per-value dependency ``R[a->*]<=k`` (the row identity).
ROWS_TARGET = -1

#: A name a dependency can spell as it is (otherwise a 1-based position is written).
PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _plain(value: object) -> object:
    """A value JSON and people can read (Decimal, dates, bytes → str or number)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):  # a composite value, or a sample row
        return [_plain(v) for v in value]
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return str(value)


def dependency_label(dep: AnyDependency, schema: Schema | None = None, *,
                     always_bound: bool = False) -> str:
    """``R[col->col]<=k`` with column names when the schema has them, else positions.

    Parameters
    ----------
    dep : Dependency or MultiDependency
        The dependency (0-based positions; target ``-1`` is ``*``, the row).
    schema : Schema, optional
        Gives the column names and the schema's spelling of the relation.
    always_bound : bool
        Write ``<=1`` for a functional dependency too.

    Returns
    -------
    str
        The FD form ``R[a->b]`` when ``k = 1`` (unless ``always_bound``), else
        ``R[a->b]<=k``; names that
        are not plain identifiers are written as 1-based positions, so the
        label always parses with :func:`cqsens.frontend.parse_cq.parse_dependency`.

    Examples
    --------
    >>> from cqsens.frontend.ddl import schema_from_ddl
    >>> s = schema_from_ddl("CREATE TABLE PatDoc (pat INT, doc INT)")
    >>> dependency_label(Dependency("patdoc", 0, 1, 3), s)
    'PatDoc[pat->doc]<=3'
    >>> dependency_label(Dependency("R", 1, 0))
    'R[2->1]'
    >>> dependency_label(MultiDependency("patdoc", (0, 1), -1, 2), s)
    'PatDoc[pat,doc->*]<=2'
    """
    rel = schema.find(dep.relation) if schema is not None else None
    name = rel.name if rel is not None else dep.relation

    def col(i: int) -> str:
        if i == ROWS_TARGET:
            return "*"
        if rel is not None and i < len(rel.columns) and PLAIN_NAME.match(rel.columns[i]):
            return rel.columns[i]
        return str(i + 1)

    sources = dep.sources if isinstance(dep, MultiDependency) else (dep.i,)
    text = f"{name}[{','.join(col(i) for i in sources)}->{col(dep.j)}]"
    return text if dep.k == 1 and not always_bound else f"{text}<={dep.k}"


@dataclass(frozen=True, slots=True)
class Offender:
    """One source value with too many values at ``j`` (or too many rows, or no referenced row).

    ``value`` is a tuple for a composite source; ``sample`` holds some of the
    values at ``j``, or some of the rows (tuples) for a rows-per-value
    dependency; ``count`` is the distinct values at ``j``, or the rows.
    """

    value: object
    count: int
    sample: tuple[object, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"value": _plain(self.value), "count": self.count,
                "sample": [_plain(v) for v in self.sample]}


def _sources(dep: AnyDependency) -> tuple[int, ...]:
    return dep.sources if isinstance(dep, MultiDependency) else (dep.i,)


@dataclass(frozen=True, slots=True)
class ConstraintCheck:
    """The check of one declared dependency against the data.

    Attributes
    ----------
    dependency : Dependency or MultiDependency
        ``R[i->j]<=k``, ``R[a,b->j]<=k`` or ``R[a->*]<=k`` (0-based positions,
        target ``-1`` for ``*``; the schema's relation name).
    label : str
        The dependency written with column names (:func:`dependency_label`).
    columns : tuple of str
        The names of the source columns, then of the target (``*`` for rows):
        ``(i, j)`` for a single-column dependency.
    groups : int
        Distinct source values (tuples) with no NULL in them.
    max_count : int
        The largest number of distinct values at ``j`` (of rows, for ``*``)
        for one source value.
    violating : int
        How many source values have more than ``k`` of them.
    offenders : tuple of Offender
        The worst few of them, with some of their ``j`` values (or rows).
    origin : str
        Where the dependency was declared (``"key R.col"``, ``"--cd"``, ``file:line``).
    """

    dependency: AnyDependency
    label: str
    columns: tuple[str, ...]
    groups: int
    max_count: int
    violating: int
    offenders: tuple[Offender, ...] = ()
    origin: str = ""

    @property
    def ok(self) -> bool:
        """True when the data satisfies the dependency."""
        return self.violating == 0

    @property
    def kind(self) -> str:
        """``"single"`` (``R[i->j]``), ``"composite"`` (``R[a,b->j]``) or ``"rows"`` (``->*``)."""
        if self.dependency.j == ROWS_TARGET:
            return "rows"
        return "composite" if isinstance(self.dependency, MultiDependency) else "single"

    @property
    def source(self) -> str:
        """The source column, or ``(a, b)`` for several."""
        names = self.columns[:-1]
        return names[0] if len(names) == 1 else f"({', '.join(names)})"

    @property
    def target(self) -> str:
        """The target column, or ``*``."""
        return self.columns[-1]

    def summary(self) -> str:
        """What the data shows, in words (without the verdict)."""
        k, src = self.dependency.k, self.source
        rows = self.kind == "rows"
        if self.ok:
            noun = "rows" if rows else self.target
            return f"at most {self.max_count} {noun} per {src} (declared {k})"
        many = "value" if self.violating == 1 else "values"
        what = "rows" if rows else f"distinct {self.target}"
        return f"{self.violating} {src} {many} with more than {k} {what} (max {self.max_count})"

    def describe(self) -> str:
        """One line for people: ``ok: ...`` or ``VIOLATED: ...``."""
        return f"{'ok' if self.ok else 'VIOLATED'}: {self.summary()}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form.

        A single-column dependency has ``i`` and ``j`` (1-based); the other
        kinds also have ``kind`` (``composite`` or ``rows``) and ``sources``
        (1-based), ``i`` is then the list of sources when there are several,
        and ``j`` is None for ``*``.
        """
        dep = self.dependency
        sources = [p + 1 for p in _sources(dep)]
        out: dict[str, Any] = {
            "dependency": self.label,
            "relation": dep.relation,
            "i": sources[0] if len(sources) == 1 else sources,
            "j": None if dep.j == ROWS_TARGET else dep.j + 1,
        }
        if self.kind != "single":
            out["kind"] = self.kind
            out["sources"] = sources
        out.update({
            "columns": list(self.columns),
            "k": dep.k,
            "origin": self.origin,
            "ok": self.ok,
            "groups": self.groups,
            "max_count": self.max_count,
            "violating": self.violating,
            "offenders": [o.to_dict() for o in self.offenders],
        })
        return out


def _matches(columns: list[sa.ColumnClause[Any]], values: tuple[object, ...]
             ) -> sa.ColumnElement[bool]:
    return sa.and_(*(c == v for c, v in zip(columns, values, strict=True)))


def _check_one(conn: Connection, table: BoundTable, dep: AnyDependency, samples: int,
               schema: Schema, origin: str) -> ConstraintCheck:
    t = table.sql()
    sources = _sources(dep)
    cs = [t.c[table.db_columns[i]] for i in sources]
    rows = dep.j == ROWS_TARGET
    cj = None if rows else t.c[table.db_columns[dep.j]]
    count = sa.func.count() if cj is None else count_distinct(cj)
    known = sa.and_(*(c.is_not(None) for c in cs))
    per_value = (sa.select(*(c.label(f"v{n}") for n, c in enumerate(cs)), count.label("n"))
                 .where(known).group_by(*cs).subquery("g"))
    summary = sa.select(
        sa.func.count(),
        sa.func.max(per_value.c.n),
        sa.func.sum(sa.case((per_value.c.n > dep.k, 1), else_=0)),
    ).select_from(per_value)
    groups, max_count, violating = conn.execute(summary).one()
    groups, max_count, violating = int(groups or 0), int(max_count or 0), int(violating or 0)
    offenders: list[Offender] = []
    if violating and samples:
        worst = (sa.select(*cs, count).where(known).group_by(*cs)
                 .having(count > dep.k).order_by(count.desc(), *cs).limit(samples))
        for *values, n in conn.execute(worst).all():
            limit = min(int(n), dep.k + 3)
            if cj is None:
                every = [t.c[c] for c in table.db_columns]
                shown = (sa.select(*every).where(_matches(cs, tuple(values)))
                         .order_by(*every).limit(limit))
                sample = tuple(tuple(row) for row in conn.execute(shown))
            else:
                shown = (sa.select(cj).distinct().where(_matches(cs, tuple(values)),
                                                        cj.is_not(None))
                         .order_by(cj).limit(limit))
                sample = tuple(row[0] for row in conn.execute(shown))
            value = values[0] if len(values) == 1 else tuple(values)
            offenders.append(Offender(value, int(n), sample))
    rel = table.relation
    target = "*" if rows else rel.columns[dep.j]
    return ConstraintCheck(
        dependency=_renamed(dep, rel.name),
        label=dependency_label(dep, schema),
        columns=(*(rel.columns[i] for i in sources), target),
        groups=groups,
        max_count=max_count,
        violating=violating,
        offenders=tuple(offenders),
        origin=origin,
    )


def _renamed(dep: AnyDependency, name: str) -> AnyDependency:
    if isinstance(dep, MultiDependency):
        return MultiDependency(name, dep.sources, dep.j, dep.k)
    return Dependency(name, dep.i, dep.j, dep.k)


def _checked_positions(dep: AnyDependency, rel: Relation, source: str) -> None:
    arity = len(rel.columns)
    sources = _sources(dep)
    for pos in (*sources, *(() if dep.j == ROWS_TARGET else (dep.j,))):
        if not 0 <= pos < arity:
            raise DependencyError(f"position {pos + 1} of {dep} is out of range: {rel.name} "
                                  f"has {arity} columns", source=source, construct="dependency")
    if not sources or dep.j in sources or len(set(sources)) != len(sources) or dep.k < 1:
        raise DependencyError(f"{dep} is not a valid dependency", source=source,
                              construct="dependency")


def check_constraints(
    url: str,
    schema: Schema | None,
    deps: Iterable[AnyDependency],
    *,
    samples: int = 3,
    origins: Mapping[AnyDependency, str] | None = None,
) -> list[ConstraintCheck]:
    """Check declared dependencies against the data, with SQL run in the database.

    For ``R[i->j]<=k`` the database runs ``SELECT i, COUNT(DISTINCT j) FROM R
    WHERE i IS NOT NULL GROUP BY i HAVING COUNT(DISTINCT j) > k`` (and a summary
    of the same grouping); nothing but the counts and a few sample values leave
    the database.  ``R[a,b->j]<=k`` groups by ``a, b`` (rows where both are
    non-NULL); ``R[a->*]<=k`` counts the rows of each group with ``COUNT(*)``,
    duplicates included.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` or ``postgresql://...``.
    schema : Schema or None
        Resolves positions to columns; reflected from the database when None.
        Names are matched case-insensitively with the database's.
    deps : iterable of Dependency or MultiDependency
        The dependencies to check (0-based positions, ``-1`` for ``*``), in
        the order to report.
    samples : int
        How many offending values to report per violated dependency (the
        worst first), each with a few of its values at ``j`` (or its rows).
    origins : mapping, optional
        Where each dependency was declared, copied to :attr:`ConstraintCheck.origin`.

    Returns
    -------
    list of ConstraintCheck
        One per dependency, in order.

    Raises
    ------
    DatabaseError
        Bad URL, unreachable server, failed authentication, failed query.
    SchemaError
        A table or column of the schema is missing from the database.
    DependencyError
        A dependency names a table the schema lacks or a position out of range.
    """
    deps = list(deps)
    if schema is None:
        schema = reflect_schema(url)
    masked = mask_url(url.strip())
    out: list[ConstraintCheck] = []
    with connect(url) as conn:
        catalogue = Catalogue(conn, schema, masked)
        for dep in deps:
            rel = catalogue.relation(dep.relation, what=f"dependency {dep}")
            _checked_positions(dep, rel, schema.source)
            table = catalogue.bind(rel)
            origin = (origins or {}).get(dep, "")
            out.append(_check_one(conn, table, dep, max(samples, 0), schema, origin))
    return out


@dataclass(frozen=True, slots=True)
class ForeignKeyCheck:
    """The check of one foreign key against the data.

    Attributes
    ----------
    relation : str
        The referencing table (the schema's name).
    key : ForeignKey
        The foreign key (positions).
    label : str
        ``orders(uid) → users(id)``.
    columns, referenced : tuple of str
        The names of the foreign key's columns, and of the referenced ones.
    target : str
        The referenced table.
    rows : int
        Rows with no NULL in the foreign key's columns.
    missing : int
        How many of them match no row of ``target``.
    offenders : tuple of Offender
        The most frequent missing values (a tuple for several columns), each
        with its number of rows.
    """

    relation: str
    key: ForeignKey
    label: str
    columns: tuple[str, ...]
    target: str
    referenced: tuple[str, ...]
    rows: int
    missing: int
    offenders: tuple[Offender, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every non-NULL foreign key value has its referenced row."""
        return self.missing == 0

    def summary(self) -> str:
        """What the data shows, in words (without the verdict)."""
        refs = "reference" if self.rows == 1 else "references"
        if self.ok:
            return f"{self.rows} non-NULL {refs}, every one found in {self.target}"
        match = "matches" if self.missing == 1 and self.rows == 1 else "match"
        return f"{self.missing} of {self.rows} non-NULL {refs} {match} no {self.target} row"

    def describe(self) -> str:
        """One line for people: ``ok: ...`` or ``VIOLATED: ...``."""
        return f"{'ok' if self.ok else 'VIOLATED'}: {self.summary()}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (positions 1-based)."""
        return {
            "foreign_key": self.label,
            "relation": self.relation,
            "columns": list(self.columns),
            "positions": [p + 1 for p in self.key.columns],
            "target": self.target,
            "referenced": list(self.referenced),
            "ok": self.ok,
            "rows": self.rows,
            "missing": self.missing,
            "offenders": [o.to_dict() for o in self.offenders],
        }


def _check_foreign_key(conn: Connection, own: BoundTable, fk: ForeignKey, target: BoundTable,
                       samples: int) -> ForeignKeyCheck:
    r = own.sql().alias("r")
    t = target.sql().alias("t")
    cs = [r.c[own.db_columns[p]] for p in fk.columns]
    ts = [t.c[target.db_columns[p]] for p in fk.referenced]
    known = sa.and_(*(c.is_not(None) for c in cs))
    absent = ~sa.exists().where(*(tc == c for tc, c in zip(ts, cs, strict=True)))
    missing_rows = sa.func.sum(sa.case((absent, 1), else_=0))
    rows, missing = conn.execute(sa.select(sa.func.count(), missing_rows)
                                 .select_from(r).where(known)).one()
    rows, missing = int(rows or 0), int(missing or 0)
    offenders: list[Offender] = []
    if missing and samples:
        n = sa.func.count()
        worst = (sa.select(*cs, n).where(known, absent).group_by(*cs)
                 .order_by(n.desc(), *cs).limit(samples))
        for *values, count in conn.execute(worst).all():
            value = values[0] if len(values) == 1 else tuple(values)
            offenders.append(Offender(value, int(count)))
    rel, ref = own.relation, target.relation
    return ForeignKeyCheck(
        relation=rel.name,
        key=fk,
        label=rel.describe_foreign_key(fk, ref),
        columns=tuple(rel.columns[p] for p in fk.columns),
        target=ref.name,
        referenced=tuple(ref.columns[p] for p in fk.referenced),
        rows=rows,
        missing=missing,
        offenders=tuple(offenders),
    )


def check_foreign_keys(url: str, schema: Schema | None, *,
                       samples: int = 3) -> list[ForeignKeyCheck]:
    """Check every foreign key of the schema against the data, with SQL run in the database.

    For ``FOREIGN KEY (a) REFERENCES T (id)`` of ``R`` the database runs
    ``SELECT COUNT(*) FROM R WHERE a IS NOT NULL AND NOT EXISTS (SELECT 1
    FROM T WHERE T.id = R.a)`` (with the count of rows with a non-NULL ``a``);
    a row with a NULL in any of the key's columns references nothing.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` or ``postgresql://...``.
    schema : Schema or None
        Its foreign keys are checked (:meth:`Schema.foreign_keys`); reflected
        from the database when None.
    samples : int
        How many missing values to report per broken foreign key, the most
        frequent first.

    Returns
    -------
    list of ForeignKeyCheck
        One per foreign key, in schema order.

    Raises
    ------
    DatabaseError, SchemaError
        As :func:`check_constraints` raises them (the database or a table of the schema).
    """
    if schema is None:
        schema = reflect_schema(url)
    keys = schema.foreign_keys()
    if not keys:
        return []
    masked = mask_url(url.strip())
    out: list[ForeignKeyCheck] = []
    with connect(url) as conn:
        catalogue = Catalogue(conn, schema, masked)
        for rel, fk, target in keys:
            out.append(_check_foreign_key(conn, catalogue.bind(rel), fk, catalogue.bind(target),
                                          max(samples, 0)))
    return out
