"""Declared dependencies checked against the data of a live database.

cqsens reasons about dependencies (functional ``R[i->j]`` and cardinality
``R[i->j]<=k``) that the *data* is supposed to obey.  :func:`check_constraints`
confronts them with a live database: for each one the database runs a
``GROUP BY`` on position ``i`` with ``COUNT(DISTINCT`` position ``j)``, and
only the counts and a few offending values leave it.

NULLs: rows whose value at ``i`` is NULL are skipped (NULL never joins), and
``COUNT(DISTINCT j)`` does not count NULLs at ``j``.  Table and column names
are matched case-insensitively, so a schema read from a DDL file can be
checked against the database the DDL created.
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
from cqsens.db.connect import connect, mask_url
from cqsens.db.reflect import reflect_schema
from cqsens.errors import DependencyError
from cqsens.ir.dependencies import Dependency
from cqsens.ir.schema import Relation, Schema

__all__ = [
    "PLAIN_NAME",
    "ConstraintCheck",
    "Offender",
    "check_constraints",
    "dependency_label",
]

#: A name a dependency can spell as it is (otherwise a 1-based position is written).
PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _plain(value: object) -> object:
    """A value JSON and people can read (Decimal, dates, bytes → str or number)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return str(value)


def dependency_label(dep: Dependency, schema: Schema | None = None, *,
                     always_bound: bool = False) -> str:
    """``R[col->col]<=k`` with column names when the schema has them, else positions.

    Parameters
    ----------
    dep : Dependency
        The dependency (0-based positions).
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
    """
    rel = schema.find(dep.relation) if schema is not None else None
    name = rel.name if rel is not None else dep.relation

    def col(i: int) -> str:
        if rel is not None and i < len(rel.columns) and PLAIN_NAME.match(rel.columns[i]):
            return rel.columns[i]
        return str(i + 1)

    text = f"{name}[{col(dep.i)}->{col(dep.j)}]"
    return text if dep.k == 1 and not always_bound else f"{text}<={dep.k}"


@dataclass(frozen=True, slots=True)
class Offender:
    """One value at position ``i`` with too many distinct values at ``j``."""

    value: object
    count: int
    sample: tuple[object, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"value": _plain(self.value), "count": self.count,
                "sample": [_plain(v) for v in self.sample]}


@dataclass(frozen=True, slots=True)
class ConstraintCheck:
    """The check of one declared dependency against the data.

    Attributes
    ----------
    dependency : Dependency
        ``R[i->j]<=k`` (0-based positions, the schema's relation name).
    label : str
        The dependency written with column names (:func:`dependency_label`).
    columns : tuple of str
        The names of the columns at ``i`` and ``j``.
    groups : int
        Distinct non-NULL values at ``i``.
    max_count : int
        The largest number of distinct values at ``j`` for one value at ``i``.
    violating : int
        How many values at ``i`` have more than ``k`` values at ``j``.
    offenders : tuple of Offender
        The worst few of them, with some of their ``j`` values.
    origin : str
        Where the dependency was declared (``"key R.col"``, ``"--cd"``, ``file:line``).
    """

    dependency: Dependency
    label: str
    columns: tuple[str, str]
    groups: int
    max_count: int
    violating: int
    offenders: tuple[Offender, ...] = ()
    origin: str = ""

    @property
    def ok(self) -> bool:
        """True when the data satisfies the dependency."""
        return self.violating == 0

    def summary(self) -> str:
        """What the data shows, in words (without the verdict)."""
        k = self.dependency.k
        ci, cj = self.columns
        if self.ok:
            return f"at most {self.max_count} {cj} per {ci} (declared {k})"
        many = "value" if self.violating == 1 else "values"
        return (f"{self.violating} {ci} {many} with more than {k} distinct {cj} "
                f"(max {self.max_count})")

    def describe(self) -> str:
        """One line for people: ``ok: ...`` or ``VIOLATED: ...``."""
        return f"{'ok' if self.ok else 'VIOLATED'}: {self.summary()}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "dependency": self.label,
            "relation": self.dependency.relation,
            "i": self.dependency.i + 1,
            "j": self.dependency.j + 1,
            "columns": list(self.columns),
            "k": self.dependency.k,
            "origin": self.origin,
            "ok": self.ok,
            "groups": self.groups,
            "max_count": self.max_count,
            "violating": self.violating,
            "offenders": [o.to_dict() for o in self.offenders],
        }


def _check_one(conn: Connection, table: BoundTable, dep: Dependency, samples: int,
               schema: Schema, origin: str) -> ConstraintCheck:
    t = table.sql()
    ci, cj = t.c[table.db_columns[dep.i]], t.c[table.db_columns[dep.j]]
    per_value = (sa.select(ci.label("v"), count_distinct(cj).label("n"))
                 .where(ci.is_not(None)).group_by(ci).subquery("g"))
    summary = sa.select(
        sa.func.count(),
        sa.func.max(per_value.c.n),
        sa.func.sum(sa.case((per_value.c.n > dep.k, 1), else_=0)),
    ).select_from(per_value)
    groups, max_count, violating = conn.execute(summary).one()
    groups, max_count, violating = int(groups or 0), int(max_count or 0), int(violating or 0)
    offenders: list[Offender] = []
    if violating and samples:
        count = count_distinct(cj)
        worst = (sa.select(ci, count).where(ci.is_not(None)).group_by(ci)
                 .having(count > dep.k).order_by(count.desc(), ci).limit(samples))
        for value, n in conn.execute(worst).all():
            shown = (sa.select(cj).distinct().where(ci == value, cj.is_not(None))
                     .order_by(cj).limit(min(int(n), dep.k + 3)))
            sample = tuple(row[0] for row in conn.execute(shown))
            offenders.append(Offender(value, int(n), sample))
    rel = table.relation
    return ConstraintCheck(
        dependency=Dependency(rel.name, dep.i, dep.j, dep.k),
        label=dependency_label(dep, schema),
        columns=(rel.columns[dep.i], rel.columns[dep.j]),
        groups=groups,
        max_count=max_count,
        violating=violating,
        offenders=tuple(offenders),
        origin=origin,
    )


def _checked_positions(dep: Dependency, rel: Relation, source: str) -> None:
    arity = len(rel.columns)
    for pos in (dep.i, dep.j):
        if not 0 <= pos < arity:
            raise DependencyError(f"position {pos + 1} of {dep} is out of range: {rel.name} "
                                  f"has {arity} columns", source=source, construct="dependency")
    if dep.i == dep.j or dep.k < 1:
        raise DependencyError(f"{dep} is not a valid dependency", source=source,
                              construct="dependency")


def check_constraints(
    url: str,
    schema: Schema | None,
    deps: Iterable[Dependency],
    *,
    samples: int = 3,
    origins: Mapping[Dependency, str] | None = None,
) -> list[ConstraintCheck]:
    """Check declared dependencies against the data, with SQL run in the database.

    For ``R[i->j]<=k`` the database runs ``SELECT i, COUNT(DISTINCT j) FROM R
    WHERE i IS NOT NULL GROUP BY i HAVING COUNT(DISTINCT j) > k`` (and a summary
    of the same grouping); nothing but the counts and a few sample values leave
    the database.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` or ``postgresql://...``.
    schema : Schema or None
        Resolves positions to columns; reflected from the database when None.
        Names are matched case-insensitively with the database's.
    deps : iterable of Dependency
        The dependencies to check (0-based positions), in the order to report.
    samples : int
        How many offending values to report per violated dependency (the
        worst first), each with a few of its values at ``j``.
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
