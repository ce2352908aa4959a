"""What an analysis builds from the user's input before the stages run: the
:class:`~cqsens.state.Options` of the settings and the first :class:`~cqsens.state.State`
(the public tables as the query spells them, the schema's foreign keys for the engine, the
keys of row identities)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from cqsens.engine.finite_tables import finite_table_dependencies, finite_table_notes
from cqsens.engine.fk_joins import drop_implied_joins
from cqsens.engine.neighbourhood import Neighbourhood
from cqsens.engine.ownerless import reads_of
from cqsens.engine.person import check_ownership, resolve_unit
from cqsens.engine.upper import References
from cqsens.errors import InputError
from cqsens.frontend.ddl import load_schema
from cqsens.frontend.load import resolve_sigma
from cqsens.ir.cq import AggregateQuery
from cqsens.ir.dependencies import Dependency, Sigma
from cqsens.ir.schema import Schema
from cqsens.release.values import check_value_bounds, parse_value_bounds
from cqsens.settings import Settings
from cqsens.state import Options, State

__all__ = ["first_state", "options_for", "public_tables", "references", "row_identity_keys"]


def public_tables(names: Sequence[str], query: AggregateQuery,
                   schema: Schema | None) -> frozenset[str]:
    """The public tables, spelled as the query spells them; an unknown name is an error."""
    known = {r.lower(): r for r in query.cq.relations()}
    out: set[str] = set()
    for name in (n.strip() for item in names for n in item.split(",") if n.strip()):
        if name.lower() in known:
            out.add(known[name.lower()])
        elif schema is None or schema.find(name) is None:
            tables = ", ".join(sorted(known)) or "none"
            raise InputError(f"--public names table {name}, which the query does not use "
                             f"(it uses: {tables})", source="--public", construct="--public")
    return frozenset(out)


def references(schema: Schema | None) -> References:
    """The schema's foreign keys for the engine, each with the text it reads as."""
    if schema is None:
        return ()
    return tuple((r.name, fk, r.describe_foreign_key(fk, target))
                 for r, fk, target in schema.foreign_keys())


def row_identity_keys(query: AggregateQuery) -> list[Dependency]:
    """A row identity is a key of its row: ``R[*->c]`` for every other column c."""
    arities = query.cq.relations()
    return [Dependency(relation, row, j, 1)
            for relation, row in sorted(query.row_positions.items())
            for j in range(arities.get(relation, 0)) if j != row]


def options_for(settings: Settings) -> Options:
    """The :class:`~cqsens.state.Options` of ``settings``: the value bounds and the schema
    read and checked, the privacy unit resolved, the neighbourhood built."""
    dialect = settings.dialect
    cli_bounds = parse_value_bounds(settings.bounds)
    parsed_schema = load_schema(settings.schema, dialect=dialect)
    check_value_bounds(cli_bounds, parsed_schema)
    unit = settings.unit
    resolved = resolve_unit(unit, parsed_schema, settings.owner,
                            settings.ownerless == "person") if unit is not None else None
    nb = Neighbourhood(model=settings.neighbor, contributions=settings.contributions,
                       unit=resolved, references=references(parsed_schema))
    return Options(settings=settings, schema=parsed_schema, nb=nb, value_bounds=cli_bounds)


def first_state(query: AggregateQuery, options: Options) -> State:
    """The state the stages start from: Σ resolved (with the keys of row identities), the
    public tables as the query spells them, the ownership of the unit checked."""
    settings, parsed_schema = options.settings, options.schema
    sigma, notes = resolve_sigma(query, schema=parsed_schema, fds=settings.fds, cds=settings.cds,
                                 constraints=settings.constraints)
    sigma = Sigma.of([*sigma, *row_identity_keys(query),
                      *finite_table_dependencies(query, parsed_schema)])
    public = settings.public_tables()
    nb = replace(options.nb, public=public_tables(public, query, parsed_schema))
    options = replace(options, nb=nb)
    owned: tuple[str, ...] = ()
    if nb.unit is not None and parsed_schema is not None:
        owned = check_ownership(parsed_schema, nb.unit, query.cq, list(public),
                                reads_of(query, sigma, options.value_bounds))
    notes = [*query.notes, *notes, *owned, *finite_table_notes(query, parsed_schema)]
    read = query
    if nb.substitution and nb.unit is None:  # add/remove: rule foreign-keys already counts 0
        query, dropped = drop_implied_joins(query, nb.references, parsed_schema)
        notes += [d.describe() for d in dropped]
    return State(query, sigma, options, notes=tuple(notes),
                 read=read if query is not read else None)
