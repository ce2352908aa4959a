"""The files ``cqsens init`` writes: the reflected DDL and a commented ``cqsens.toml``.

:func:`schema_sql` writes a schema back as ``CREATE TABLE`` statements that
:func:`cqsens.frontend.ddl.schema_from_ddl` reads into the same relations (columns,
types, ``NOT NULL``, keys, foreign keys, ``CHECK``).  :func:`config_text` writes
the metadata file: the keys and foreign keys as found, the proposed unit, ownership
keys and public tables, each marked as a proposal, and the rows per person measured
in the data as commented-out ``cd`` lines, *observed in this data, not guaranteed*.
Renderers return strings; only the command line writes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from cqsens.db.check import dependency_label
from cqsens.db.persons import ChainCount, Ownership, PersonView, chain_text, owner_text
from cqsens.ir.schema import Relation, Schema

__all__ = ["config_text", "schema_sql"]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _names(relation: Relation, positions: Iterable[int]) -> str:
    return ", ".join(_quote(relation.columns[p]) for p in positions)


def _table_sql(relation: Relation, schema: Schema) -> str:
    lines = []
    for i, column in enumerate(relation.columns):
        kind = relation.types[i] if i < len(relation.types) else ""
        text = f"{_quote(column)} {kind}".rstrip()
        lines.append(text + (" NOT NULL" if i in relation.not_null else ""))
    if relation.primary_key:
        lines.append(f"PRIMARY KEY ({_names(relation, relation.primary_key)})")
    for key in relation.keys:
        if (key,) != relation.primary_key:
            lines.append(f"UNIQUE ({_quote(relation.columns[key])})")
    for composite in relation.composite_keys:
        if tuple(composite) != relation.primary_key:
            lines.append(f"UNIQUE ({_names(relation, composite)})")
    for fk in relation.foreign_keys:
        target = schema.find(fk.table)
        referenced = (_names(target, fk.referenced) if target is not None
                      else ", ".join(str(p + 1) for p in fk.referenced))
        lines.append(f"FOREIGN KEY ({_names(relation, fk.columns)}) REFERENCES "
                     f"{_quote(fk.table)} ({referenced})")
    lines += [f"CHECK ({check})" for check in relation.checks]
    body = ",\n".join(f"    {line}" for line in lines)
    return f"CREATE TABLE {_quote(relation.name)} (\n{body}\n);"


def schema_sql(schema: Schema, *, source: str = "") -> str:
    """The schema as ``CREATE TABLE`` statements, referenced tables first when possible.

    Parameters
    ----------
    schema : Schema
        As :func:`cqsens.db.reflect.reflect_schema` returns it.
    source : str
        Where it was read (a masked URL), for the header comment.

    Returns
    -------
    str
        DDL in sqlglot's default dialect, names double-quoted, one statement per
        table in the schema's order.

    Examples
    --------
    >>> from cqsens.frontend.ddl import schema_from_ddl
    >>> s = schema_from_ddl("CREATE TABLE u (id INT PRIMARY KEY, n TEXT NOT NULL)")
    >>> print(schema_sql(s), end="")
    CREATE TABLE "u" (
        "id" INT NOT NULL,
        "n" TEXT NOT NULL,
        PRIMARY KEY ("id")
    );
    """
    head = [f"-- Reflected by cqsens init from {source}." if source else ""]
    body = [_table_sql(r, schema) for r in schema.relations]
    return "\n".join([h for h in head if h] + body) + "\n"


def _toml(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value, ensure_ascii=False)


def _toml_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(_toml(v) for v in values) + "]"


def _keys_found(schema: Schema) -> list[str]:
    width = max(len(r.name) for r in schema.relations)
    out = ["# Keys and foreign keys, as found in the catalogue:"]
    for relation in schema.relations:
        parts = []
        if relation.primary_key:
            key = ", ".join(relation.columns[p] for p in relation.primary_key)
            parts.append(f"primary key ({key})")
        parts += [f"unique ({relation.columns[k]})" for k in relation.keys
                  if (k,) != relation.primary_key]
        parts += [f"unique ({', '.join(relation.columns[p] for p in k)})"
                  for k in relation.composite_keys if tuple(k) != relation.primary_key]
        for fk in relation.foreign_keys:
            nullable = any(relation.nullable(c) for c in fk.columns)
            parts.append(relation.describe_foreign_key(fk, schema.find(fk.table))
                         + (" (nullable)" if nullable else " (NOT NULL)"))
        out.append(f"#   {relation.name.ljust(width)}  {'; '.join(parts) or 'no key'}")
    return out


def _unit_lines(o: Ownership, proposed: bool) -> list[str]:
    if o.unit is None:
        return [
            "# No privacy unit proposed: no table is referenced by a foreign key, so the",
            "# catalogue does not say whose rows are whose. Neighbouring databases then differ",
            "# by one row (--neighbor, --contributions). To protect persons, declare the",
            "# foreign keys to the table of persons in schema.sql and set it here:",
            '# unit = "<table of persons>"',
        ]
    out = [
        f"# {'PROPOSAL' if proposed else 'Given with --unit'}: the privacy unit. One person "
        f"is a row of {o.unit}",
        "# and every row that references it along the ownership keys below.",
    ]
    if proposed:
        out += [
            "# It is the table the most other tables reference, directly or along chains (a",
            "# lookup table such as countries can win: if it did, set unit to the table whose",
            "# rows are persons):",
        ]
        out += [f"#   {t}: referenced by {', '.join(by)}" for t, by in o.reached_by]
    out.append(f"unit = {_toml(o.unit)}")
    return out


def _owner_lines(schema: Schema, o: Ownership, proposed: bool) -> list[str]:
    why = (f"every key into a table whose rows reach {o.unit}" if proposed
           else "as given with --owner")
    out = [
        "",
        f"# {'PROPOSAL' if proposed else 'Given'}: the foreign keys that carry ownership (a "
        "row belongs to the",
        f"# person of the row it references): {why}.",
        f"owner = {_toml_list(owner_text(schema, t, fk) for t, fk in o.owners)}",
    ]
    if o.cycles:
        out.append("# Left out of owner: each closes a cycle without leading closer to "
                   f"{o.unit} (a self-reference, say); they stay ordinary references:")
        out += [f"#   {chain_text(schema, ((t, fk),))}" for t, fk in o.cycles]
    if o.references:
        out.append("# Ordinary references into public tables, not ownership:")
        out += [f"#   {chain_text(schema, ((t, fk),))}" for t, fk in o.references]
    out += [f"# NOTE: {note}" for note in o.notes]
    for table, column in o.nullable:
        out += [
            f"# NOTE: {table} reaches {o.unit} only through the nullable column {column}:",
            "# a row whose key is NULL belongs to nobody, so a query that reads such rows is",
            f"# refused. Declare {column} NOT NULL if every row has a person.",
        ]
    return out


def _public_lines(o: Ownership) -> list[str]:
    out = [
        "",
        f"# PROPOSAL: public tables. No chain of ownership keys leads from them to {o.unit},",
        "# so their rows are taken to be the same for everybody. If a table's rows describe",
        f"# persons, declare its foreign key to {o.unit} in schema.sql and drop it from here.",
        f"public = {_toml_list(o.public)}",
    ]
    return out


def _cd_line(schema: Schema, count: ChainCount) -> str:
    assert count.proposal is not None
    label = dependency_label(count.proposal, schema, always_bound=True)
    observed = f"max {count.max_count}, p99 {count.p99}" if count.rows else "no row held"
    return (f"  # {_toml(label)},  # {count.table} rows per {count.target} row: {observed} "
            f"over the {count.persons} rows of {count.target}")


def _measured_lines(schema: Schema, view: PersonView, database: str) -> list[str]:
    out = [
        "",
        "# Rows per referenced row along each ownership key, measured in",
        f"# {database}: OBSERVED IN THIS DATA, NOT GUARANTEED.",
        "# They held when measured; nothing stops a later insert from breaking them, and a",
        "# bound that uses them is only as good as they are. Uncomment only the lines that",
        "# are real business rules, enforced by the application or the database.",
        "cd = [",
    ]
    out += [_cd_line(schema, c) for c in view.links if c.proposal is not None]
    out.append("]")
    if view.chains:
        out.append("# Rows one person holds along each chain (measured; cqsens derives its "
                   "bound from the lines above):")
        for c in view.chains:
            out.append(f"#   {c.table} through {c.text}: max {c.max_count}, p99 {c.p99}, "
                       f"over {c.persons} persons")
    return out


def config_text(schema: Schema, view: PersonView | None, *, database: str,
                schema_file: str = "schema.sql") -> str:
    """The commented metadata file ``cqsens init`` writes.

    Parameters
    ----------
    schema : Schema
        The reflected schema (its DDL is written to ``schema_file``).
    view : PersonView or None
        The proposed ownership and the rows measured along it
        (:func:`cqsens.db.persons.measure_persons`); None when no unit can be proposed.
    database : str
        The masked URL the schema and the counts come from.
    schema_file : str
        The DDL file, relative to the metadata file.

    Returns
    -------
    str
        TOML that :func:`cqsens.config.load_config` reads; every proposal is marked
        ``PROPOSAL`` and every measured count is commented out.
    """
    ownership = view.ownership if view is not None else Ownership(None, ())
    out = [
        f"# cqsens.toml, written by `cqsens init --db {database}`.",
        "# Lines marked PROPOSAL come from the catalogue's foreign keys, which say how tables",
        "# are linked, not what their rows mean: review them before relying on a bound. The",
        "# rows-per-person counts are measured in the data and commented out.",
        "",
        f"# The schema reflected from the database ({len(schema.relations)} tables): columns,",
        "# types, NOT NULL, keys, foreign keys and CHECK constraints.",
        f"schema = {_toml(schema_file)}",
        "",
        *_keys_found(schema),
        "",
        *_unit_lines(ownership, view is None or view.proposed),
    ]
    if view is not None:
        out += _owner_lines(schema, ownership, view.owners_proposed)
        out += _public_lines(ownership)
        out += _measured_lines(schema, view, database)
    return "\n".join(out) + "\n"
