"""Read the inputs of an analysis: the query (SQL or CQ text or file) and Σ.

Σ gathers the schema's key dependencies, ``--fd``/``--cd`` flags and a
constraints file; a CQ used with a schema must match its relations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from cqsens.errors import DependencyError, SchemaError, read_text
from cqsens.frontend.parse_cq import ROWS, parse_cq, parse_dependencies, parse_dependency
from cqsens.frontend.parse_sql import parse_query, parse_sql
from cqsens.frontend.person_local import OwnerKey
from cqsens.ir.compound import CompoundQuery
from cqsens.ir.cq import CQ, AggregateQuery
from cqsens.ir.dependencies import AnyDependency, Dependency, Sigma
from cqsens.ir.schema import Schema

__all__ = ["load_query", "load_statement", "resolve_sigma", "source_text"]


_QUERY_CHARS = re.compile(r"[\s():]")
_SQL_START = re.compile(r"^\s*(--[^\n]*\n\s*|/\*.*?\*/\s*)*(select|with|\()", re.I | re.S)


def load_query(
    source: str | Path,
    *,
    schema: Schema | None = None,
    dialect: str | None = None,
    kind: str | None = None,
    name: str | None = None,
) -> AggregateQuery:
    """Read SQL or CQ text (or a ``.sql``/``.cq`` file) into an AggregateQuery.

    A set operation (several conjunctive queries) is an error here; read it
    with :func:`load_statement`.
    """
    query = load_statement(source, schema=schema, dialect=dialect, kind=kind, name=name)
    if isinstance(query, CompoundQuery):
        return parse_sql(query.text, schema=schema, dialect=dialect, source=query.source)
    return query


def load_statement(
    source: str | Path,
    *,
    schema: Schema | None = None,
    dialect: str | None = None,
    kind: str | None = None,
    name: str | None = None,
    public: frozenset[str] = frozenset(),
    owner: OwnerKey | None = None,
) -> AggregateQuery | CompoundQuery:
    """Read SQL or CQ text (or a ``.sql``/``.cq`` file) into an AggregateQuery, or a
    CompoundQuery for a set operation of aggregate queries.

    A :class:`~pathlib.Path` is always a file and a ``str`` with ``kind``
    given is always text: nothing is guessed from how the text ends.  Only a
    ``str`` without ``kind`` that names a ``.sql``/``.cq`` file (see
    :func:`_names_query_file`) is read as that file, a convenience of the
    Python API; the command line always passes a Path or a kind.  Files are
    read by :func:`cqsens.errors.read_text`: regular files of at most
    :data:`cqsens.errors.MAX_INPUT_BYTES`.
    """
    text, kind, origin = source_text(source, kind=kind, name=name)
    if kind == "cq":
        cq = parse_cq(text, source=origin or "<cq>")
        if schema is not None:
            _check_cq_against_schema(cq, schema, origin or "<cq>")
        return AggregateQuery(cq=cq, source=origin or "<cq>", heads=(cq.head,), body=cq, text=text)
    query = parse_query(text, schema=schema, dialect=dialect, source=origin or "<sql>",
                        public=public, owner=owner)
    return replace(query, text=text)


def source_text(source: str | Path, *, kind: str | None = None,
                name: str | None = None) -> tuple[str, str, str | None]:
    """The text of a query source, its kind (``sql`` or ``cq``) and its name, as
    :func:`load_statement` reads them."""
    text = str(source)
    origin = name
    path: Path | None = None
    if isinstance(source, Path):
        path = source
    elif kind is None and _names_query_file(text):
        path = Path(text)
    if path is not None:
        text = read_text(path, what="query file")
        origin = origin or str(path)
        if kind is None:
            kind = "cq" if path.suffix == ".cq" else "sql"
    if kind is None:
        kind = "sql" if _SQL_START.match(text) else "cq"
    return text, kind, origin


def _names_query_file(text: str) -> bool:
    """Whether ``text`` names a ``.sql``/``.cq`` file rather than holding a query.

    It must end in ``.sql``/``.cq`` and either name an existing file or look
    like a bare file name (no blank, parenthesis or colon, which every query
    has), so that a missing file is reported as missing.
    """
    if "\n" in text or "\0" in text or len(text) >= 4096 or not text.endswith((".sql", ".cq")):
        return False
    try:
        if Path(text).exists():
            return True
    except (OSError, ValueError):
        return False
    return _QUERY_CHARS.search(text) is None


def _check_cq_against_schema(cq: CQ, schema: Schema, source: str) -> None:
    """A CQ used with a schema must name its tables with their arities."""
    for relation, arity in sorted(cq.relations().items()):
        rel = schema.find(relation)
        if rel is None:
            raise SchemaError(f"relation {relation} is not in the schema (it has: "
                              f"{', '.join(schema.relation_names())})", source=source,
                              construct=f"relation {relation}")
        if len(rel.columns) != arity:
            raise SchemaError(f"relation {relation} has {len(rel.columns)} columns in the schema "
                              f"but {arity} arguments in the query", source=source,
                              construct=f"relation {relation}")
        if rel.name != relation:
            raise SchemaError(f"relation {relation} is spelled {rel.name} in the schema; use that "
                              "spelling in the CQ", source=source, construct=f"relation {relation}")


def resolve_sigma(
    query: AggregateQuery,
    *,
    schema: Schema | None,
    fds: Iterable[str | Dependency] = (),
    cds: Iterable[str | Dependency] = (),
    constraints: str | Path | None = None,
) -> tuple[Sigma, list[str]]:
    """Σ from the schema's keys, ``--fd``/``--cd`` flags and a constraints file."""
    notes: list[str] = []
    arities = query.cq.relations()
    deps: list[AnyDependency] = []
    if schema is not None:
        deps.extend(schema.key_dependencies())
        deps.extend(schema.composite_key_dependencies())

    def check(dep: AnyDependency, text: str, *, strict: bool,
              source: str) -> AnyDependency | None:
        if dep.j == ROWS:
            row = query.row_positions.get(dep.relation)
            if row is not None:
                dep = replace(dep, j=row)
            # else kept as R[i->*]<=k: the query counts no row of the table, but the k
            # rows that share a value hold at most k values of each other column
        if schema is None and dep.relation not in arities:
            if strict:
                raise DependencyError(
                    f"unknown relation {dep.relation} in {text!r} (the query uses: "
                    f"{', '.join(sorted(arities))}; pass --schema to declare others)",
                    source=source, construct="dependency",
                )
            notes.append(f"dependency {text} ignored: the query does not use {dep.relation}")
            return None
        return dep

    for kind, items in (("fd", fds), ("cd", cds)):
        for item in items:
            if isinstance(item, Dependency):
                deps.append(item)
                continue
            dep = parse_dependency(item, schema=schema, arities=arities, kind=kind,
                                   source=f"--{kind}")
            checked = check(dep, item, strict=True, source=f"--{kind}")
            if checked is not None:
                deps.append(checked)
    if constraints is not None:
        path = Path(constraints)
        lines = read_text(path, error=DependencyError, what="constraints file").splitlines()
        for number, dep in enumerate(
            parse_dependencies(lines, schema=schema, arities=arities, source=str(path)), start=1
        ):
            del number
            checked = check(dep, str(dep), strict=False, source=str(path))
            if checked is not None:
                deps.append(checked)
    return Sigma.of(deps), notes
