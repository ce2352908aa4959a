"""The analysis pipeline: source text in, an :class:`Analysis` out.

``analyze`` parses SQL or CQ text, gathers Σ (schema keys, ``fds``, ``cds``, a
constraints file), then runs the stages of :data:`PIPELINE` — chase with the
FDs, core preserving the free variables, cqsens's sound upper bound, the
paper's literal values — and writes the explanation.  Every stage is a pure
function of the previous state and can be tested on its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cqsens.engine.chase import chase
from cqsens.engine.core import core, core_result, in_cq_core
from cqsens.engine.gaifman import is_connected
from cqsens.engine.paper import PaperValue, cd_upper_paper, delta_str_paper, fd_bounds_paper
from cqsens.engine.paths import Weight
from cqsens.engine.suggest import suggest
from cqsens.engine.upper import UpperBound, upper_bound
from cqsens.errors import DependencyError, InputError, SchemaError, read_text
from cqsens.frontend.ddl import load_schema
from cqsens.frontend.parse_cq import parse_cq, parse_dependencies, parse_dependency
from cqsens.frontend.parse_sql import parse_sql
from cqsens.ir.expr import And, Compare, Predicate, Slot, literal_of
from cqsens.ir.cq import CQ, AggregateQuery, Const, Var, format_term
from cqsens.ir.dependencies import Dependency, Sigma
from cqsens.ir.schema import Schema
from cqsens.release.aggregates import AggregateBound
from cqsens.release.noise import calibrate
from cqsens.release.values import (
    VALUE_KINDS,
    aggregate_bound,
    combine,
    parse_value_bounds,
    value_bound,
)
from cqsens.witness.witness import Witness, find_witness

__all__ = ["Analysis", "analyze", "load_query", "resolve_sigma", "PIPELINE", "jsonable"]

NEIGHBORS = ("add-remove", "substitute")
CORE_BUDGET = 200_000


def jsonable(value: Weight | None) -> int | float | str | None:
    """∞ as the string ``"inf"``; integral floats as ints."""
    if value is None:
        return None
    if value == math.inf:
        return "inf"
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@dataclass
class State:
    """What the pipeline stages pass along."""

    query: AggregateQuery
    sigma: Sigma
    chased: CQ | None = None
    core: CQ | None = None
    core_minimal: bool = True
    bound: UpperBound | None = None
    delta_str: UpperBound | None = None
    paper: dict[str, PaperValue] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def stage_chase(state: State) -> State:
    """Chase with the k = 1 part of Σ (valid on C_Σ for CDs too)."""
    state.chased = chase(state.query.cq, state.sigma.fds())
    return state


def stage_core(state: State) -> State:
    """Core of the chased query preserving its free variables."""
    assert state.chased is not None
    result = core_result(state.chased, budget=CORE_BUDGET)
    state.core, state.core_minimal = result.cq, result.minimal
    if not result.minimal:
        state.notes.append(
            "the core search hit its budget: the core shown may not be minimal "
            "(bounds stay sound, possibly less tight)"
        )
    return state


def stage_bounds(state: State) -> State:
    """cqsens's upper bound with Σ, and without constraints (``delta_str``)."""
    assert state.core is not None
    state.bound = upper_bound(state.core, state.sigma)
    plain = core(state.query.cq, budget=CORE_BUDGET) if state.sigma.fds() else state.core
    if plain is not state.core and state.core.satisfiable:
        # the chase only uses dependencies C_Σ satisfies, so both bounds are sound: keep the smaller
        unchased = upper_bound(plain, state.sigma)
        if unchased.value < state.bound.value:
            state.bound = unchased
    state.delta_str = upper_bound(plain, Sigma.of())
    return state


def stage_paper(state: State) -> State:
    """The paper's literal Δ_STR, Thm 13 and Thm 17 values."""
    cq = state.query.cq
    state.paper["delta_str"] = delta_str_paper(cq)
    fds = state.sigma.fds()
    if fds:
        assert state.core is not None
        upper, lower = fd_bounds_paper(state.core, fds, in_cq_core=in_cq_core(cq))
        state.paper["fd_upper"], state.paper["fd_lower"] = upper, lower
    else:
        reason = "no functional dependency given"
        state.paper["fd_upper"] = state.paper["fd_lower"] = PaperValue(None, reason)
    if state.sigma:
        state.paper["cd_upper"] = cd_upper_paper(core(cq, budget=CORE_BUDGET), state.sigma)
    else:
        state.paper["cd_upper"] = PaperValue(None, "no dependency given")
    return state


PIPELINE: tuple[Callable[[State], State], ...] = (stage_chase, stage_core, stage_bounds, stage_paper)


@dataclass
class Analysis:
    """The result of analysing one query; ``to_dict()`` is the SPEC §7 JSON object."""

    query: str
    source: str
    query_obj: AggregateQuery
    sigma: Sigma
    cq: CQ
    core: CQ
    connected: bool
    satisfiable: bool
    delta_str: Weight
    paper: dict[str, PaperValue]
    upper: Weight
    lower: Weight | None
    neighbor: str
    l1: Weight
    l2: Weight
    explanation: list[str]
    bound: UpperBound
    notes: list[str] = field(default_factory=list)
    core_minimal: bool = True
    suggestion: list[str] = field(default_factory=list)
    witness: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def free(self) -> tuple[str, ...]:
        """Names of the core's free variables."""
        return tuple(v.name for v in self.core.free)

    @property
    def aggregate(self) -> str:
        """Kind of the (first) aggregate."""
        return self.query_obj.aggregate

    @property
    def tight(self) -> bool:
        """True when the verified lower bound meets the upper bound."""
        return self.lower is not None and self.lower == self.upper

    @property
    def bounded(self) -> bool:
        """True when the upper bound is finite."""
        return self.upper != math.inf

    def reason(self) -> str:
        """The one-line reason for the bound (the relation that gives it)."""
        if not self.satisfiable:
            return "unsatisfiable: the count is always 0"
        if self.core.is_boolean:
            return "a Boolean query: its count is 0 or 1"
        worst = max(self.bound.relations, key=lambda r: r.total, default=None)
        if worst is None:
            return "no relation atom"
        if worst.total == math.inf:
            for ab in worst.atoms:
                if ab.value == math.inf:
                    missing = ", ".join(v.name for v in ab.unreachable) or "a free variable"
                    return (f"one added {worst.relation} row can create unboundedly many answers: "
                            f"no bounded route from {ab.atom} to {missing}")
        parts = []
        counted = [ab for ab in worst.atoms if ab.counted]
        for ab in counted[:2]:
            if ab.pattern is not None:
                parts.append(f"{ab.atom} holds every counted column (1)")
            else:
                steps = ab.tree_steps if ab.method == "joint tree of steps" else tuple(
                    st for _, r in ab.routes if r is not None for st in r.steps)
                route = "; ".join(str(st) for st in dict.fromkeys(steps))
                parts.append(f"{ab.atom}: {_fmt(ab.value)} via {route}")
        more = f"; and {len(counted) - 2} more {worst.relation} atoms" if len(counted) > 2 else ""
        return (f"one {worst.relation} row changes the count by at most {_fmt(worst.total)}: "
                + "; ".join(parts) + more)

    def structure(self) -> dict[str, Any]:
        """The core's canonical structure and the routes behind the bound, for drawings.

        ``elements``: name and kind (``free``, ``constant``, ``existential``);
        ``atoms``: relation, element names, whether a filter, its bound;
        ``steps``: the steps (from, to, relation, weight, atom) behind finite atom
        bounds; ``unbounded``: per unbounded atom, the free variables it cannot reach.
        """
        free = set(self.core.free)
        elements = []
        for term in sorted(self.core.elements(), key=lambda t: (isinstance(t, Var), str(t))):
            kind = "constant" if isinstance(term, Const) else "free" if term in free else "existential"
            elements.append({"name": format_term(term), "kind": kind})
        bounds = {ab.atom: ab for rel in self.bound.relations for ab in rel.atoms}
        atoms = []
        for atom in self.core.sorted_atoms():
            ab = bounds.get(atom)
            atoms.append({
                "relation": atom.template if atom.is_filter else atom.relation,
                "text": str(atom),
                "terms": [format_term(t) for t in atom.terms],
                "filter": atom.is_filter,
                "bound": jsonable(ab.value) if ab is not None else None,
                "counted": ab.counted if ab is not None else None,
            })
        steps: list[dict[str, Any]] = []
        unbounded: list[dict[str, Any]] = []
        for ab in bounds.values():
            if ab.value == math.inf:
                unbounded.append({"atom": str(ab.atom), "missing": [v.name for v in ab.unreachable]})
                continue
            chosen = ab.tree_steps if ab.method == "joint tree of steps" else tuple(
                step for _, route in ab.routes if route is not None for step in route.steps)
            for step in dict.fromkeys(chosen):
                steps.append({"atom": str(ab.atom), "relation": step.relation,
                              "from": format_term(step.source), "to": format_term(step.target),
                              "weight": jsonable(step.weight)})
        return {"elements": elements, "atoms": atoms, "steps": steps, "unbounded": unbounded}

    def to_dict(self, *, witness: bool = False) -> dict[str, Any]:
        """The JSON object of SPEC §7 (∞ as ``"inf"``); ``witness`` adds the databases."""
        out: dict[str, Any] = {
            "query": self.query,
            "source": self.source,
            "cq": str(self.cq),
            "core": str(self.core),
            "free": list(self.free),
            "aggregate": self.aggregate,
            "connected": self.connected,
            "satisfiable": self.satisfiable,
            "delta_str": jsonable(self.delta_str),
            "paper": {k: jsonable(v.value) for k, v in self.paper.items()},
            "paper_notes": {k: v.reason for k, v in self.paper.items() if v.value is None},
            "sensitivity": {
                "upper": jsonable(self.upper),
                "lower": jsonable(self.lower),
                "tight": self.tight,
                "neighbor": self.neighbor,
                "l1": jsonable(self.l1),
                "l2": jsonable(self.l2),
            },
            "dependencies": [str(d) for d in self.sigma],
            "core_minimal": self.core_minimal,
            "explanation": list(self.explanation),
            "notes": list(self.notes),
            "suggestion": list(self.suggestion),
        }
        out["structure"] = self.structure()
        if witness and self.witness is not None:
            out["witness"] = self.witness.to_dict()
        out.update(self.extra)
        return out


_SQL_START = re.compile(r"^\s*(--[^\n]*\n\s*|/\*.*?\*/\s*)*(select|with|\()", re.I | re.S)


def load_query(
    source: str | Path,
    *,
    schema: Schema | None = None,
    dialect: str | None = None,
    kind: str | None = None,
    name: str | None = None,
) -> AggregateQuery:
    """Read SQL or CQ text (or a ``.sql``/``.cq`` file) into an AggregateQuery."""
    text = str(source)
    origin = name
    path: Path | None = None
    if isinstance(source, Path):
        path = source
    elif "\n" not in text and len(text) < 4096 and text.endswith((".sql", ".cq")):
        path = Path(text)
    if path is not None:
        text = read_text(path, what="query file")
        origin = origin or str(path)
        if kind is None:
            kind = "cq" if path.suffix == ".cq" else "sql"
    if kind is None:
        kind = "sql" if _SQL_START.match(text) else "cq"
    if kind == "cq":
        cq = parse_cq(text, source=origin or "<cq>")
        if schema is not None:
            _check_cq_against_schema(cq, schema, origin or "<cq>")
        return AggregateQuery(cq=cq, source=origin or "<cq>", heads=(cq.head,), body=cq, text=text)
    query = parse_sql(text, schema=schema, dialect=dialect, source=origin or "<sql>")
    return replace(query, text=text)


def _check_cq_against_schema(cq: CQ, schema: Schema, source: str) -> None:
    """A CQ used with a schema must name its tables with their arities."""
    for relation, arity in sorted(cq.relations().items()):
        rel = schema.find(relation)
        if rel is None:
            raise SchemaError(f"relation {relation} is not in the schema (it has: "
                              f"{', '.join(schema.relation_names())})", source=source,
                              construct=f"relation {relation}")
        if len(rel.columns) != arity:
            raise SchemaError(f"relation {relation} has {len(rel.columns)} columns in the schema but "
                              f"{arity} arguments in the query", source=source,
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
    deps: list[Dependency] = []
    if schema is not None:
        deps.extend(schema.key_dependencies())

    def check(dep: Dependency, text: str, *, strict: bool, source: str) -> Dependency | None:
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
            dep = parse_dependency(item, schema=schema, arities=arities, kind=kind, source=f"--{kind}")
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


def _fmt(value: Weight | None) -> str:
    if value is None:
        return "unknown"
    if value == math.inf:
        return "∞"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:.6g}"
    return str(value)


def _explain(state: State, analysis_upper: Weight) -> list[str]:
    lines: list[str] = []
    q = state.query
    assert state.core is not None and state.bound is not None
    c = state.core
    if not c.satisfiable:
        lines.append(
            "The query is unsatisfiable: "
            + ("the functional dependencies force two different constants into one column"
               if q.cq.satisfiable else "it equates a column with two different constants")
            + ", so its count is 0 on every database and one row cannot change it: sensitivity 0."
        )
        return lines
    free = ", ".join(v.name for v in c.free)
    what = f"distinct ({free})" if free else "whether any match exists (a Boolean query: 0 or 1)"
    lines.append(f"The query counts {what} over {', '.join(sorted(c.relations()))}.")
    if c.is_boolean:
        lines.append(
            "A Boolean count is 0 or 1, so adding or removing one row changes it by at most 1."
        )
        return lines
    for rel in state.bound.relations:
        parts = []
        for ab in rel.atoms:
            if not ab.counted:
                parts.append(f"{ab.atom} gives the same answer as an earlier {rel.relation} atom (0 more)")
            elif ab.pattern is not None:
                parts.append(f"{ab.atom} holds every free variable: one new row gives at most 1 answer")
            elif ab.value == math.inf:
                missing = [v.name for v in ab.unreachable]
                if missing:
                    parts.append(
                        f"{ab.atom}: no bounded path of dependencies leads from this row or a constant "
                        f"to {', '.join(missing)}, so one added {rel.relation} row can match "
                        f"unboundedly many existing rows and create any number of answers (∞)"
                    )
                else:
                    parts.append(f"{ab.atom}: unbounded (∞)")
            elif ab.method == "joint tree of steps":
                steps = "; ".join(str(s) for s in ab.tree_steps) or "none"
                parts.append(
                    f"{ab.atom}: at most {_fmt(ab.value)} answers, counting joint values along "
                    f"the tree {steps} (per-variable product: {_fmt(ab.product)})"
                )
            else:
                routes = "; ".join(
                    f"{v.name} ×{_fmt(r.cardinality)} [{r.describe()}]"
                    for v, r in ab.routes if r is not None
                )
                parts.append(f"{ab.atom}: at most {_fmt(ab.value)} answers: {routes}")
        lines.append(
            f"One added or removed {rel.relation} row changes the count by at most "
            f"{_fmt(rel.total)}: " + "; ".join(parts) + "."
        )
    if analysis_upper == math.inf:
        lines.append(
            "Unbounded: no noise calibrated to a finite sensitivity makes this release "
            "differentially private unless the data obey further constraints."
        )
    return lines


def _column_name(query: AggregateQuery, schema: Schema | None, relation: str, i: int) -> str:
    if schema is not None and (rel := schema.find(relation)) is not None:
        return rel.columns[i]
    columns = query.columns.get(relation)
    return columns[i] if columns and i < len(columns) else str(i + 1)


def _column_checks(schema: Schema | None) -> dict[tuple[str, int], list[Predicate]]:
    """The schema's CHECK bounds as predicates over ``Slot(0)`` a witness value must meet."""
    out: dict[tuple[str, int], list[Predicate]] = {}
    for rel in schema.relations if schema is not None else ():
        for pos, low, high in rel.bounds:
            parts: list[Predicate] = []
            if low != -math.inf:
                parts.append(Compare(">=", Slot(0), literal_of(jsonable_number(low))))
            if high != math.inf:
                parts.append(Compare("<=", Slot(0), literal_of(jsonable_number(high))))
            if parts:
                out[(rel.name, pos)] = [parts[0] if len(parts) == 1 else And(tuple(parts))]
    return out


def jsonable_number(value: float) -> int | float:
    """An integral float as an int."""
    return int(value) if value.is_integer() else value


_INTEGER_TYPES = ("INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "MEDIUMINT", "SERIAL",
                  "BIGSERIAL", "BOOLEAN", "BOOL")


def _finite_columns(schema: Schema | None) -> set[tuple[str, int]]:
    """Columns with finitely many legal values: integer (or untyped) with a two-sided CHECK."""
    out: set[tuple[str, int]] = set()
    for rel in schema.relations if schema is not None else ():
        for pos, low, high in rel.bounds:
            kind = (rel.types[pos] if pos < len(rel.types) else "").upper().split("(")[0].strip()
            if low > -math.inf and high < math.inf and (not kind or kind in _INTEGER_TYPES):
                out.add((rel.name, pos))
    return out


def _bound_with(state: State, extra: Sequence[Dependency]) -> Weight:
    sigma = Sigma.of([*state.sigma, *extra])
    chased = core(chase(state.query.cq, sigma.fds()), budget=CORE_BUDGET)
    return upper_bound(chased, sigma).value


def _suggestion(state: State, schema: Schema | None) -> list[str]:
    """The fewest dependencies that bound the query, confirmed by re-analysis."""
    assert state.core is not None
    advice = suggest(state.core, state.sigma)
    if not advice.dependencies:
        return [f"No dependency helps: {advice.reason}."] if advice.reason else []

    def named(dep: Dependency, k: int | None = None) -> str:
        q = state.query
        text = (f"{dep.relation}[{_column_name(q, schema, dep.relation, dep.i)}->"
                f"{_column_name(q, schema, dep.relation, dep.j)}]")
        return text if k is None else f"{text}<={k}"

    lines: list[str] = []
    for n, option in enumerate((advice.dependencies, *advice.alternatives)):
        fd_bound = _bound_with(state, option)
        cd_bound = _bound_with(state, [Dependency(d.relation, d.i, d.j, 3) for d in option])
        if fd_bound == math.inf:
            continue  # not confirmed: never suggest what does not work
        fds = " and ".join(named(d) for d in option)
        cds = " and ".join(named(d, 3).replace("<=3", "<=k") for d in option)
        text = (f"declare {fds} (FD: the upper bound becomes {_fmt(fd_bound)}) or {cds} "
                f"(CD: with k = 3 it becomes {_fmt(cd_bound)})")
        lines.append(("To bound it, " if n == 0 else "Or instead, ") + text + ".")
    return lines


def analyze(
    source: str | Path,
    *,
    schema: str | Path | Schema | None = None,
    fds: Sequence[str | Dependency] = (),
    cds: Sequence[str | Dependency] = (),
    constraints: str | Path | None = None,
    dialect: str | None = None,
    neighbor: str = "add-remove",
    kind: str | None = None,
    name: str | None = None,
    prove_lower: bool = True,
    witness_time: float = 0.25,
    seed: int = 0,
    bounds: Sequence[str] = (),
    contributions: int = 1,
    rows: int | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
) -> Analysis:
    """Analyse one counting query: sensitivity bounds, the paper's values and why.

    Parameters
    ----------
    source : str or Path
        SQL text, CQ text, or a path to a ``.sql``/``.cq`` file.
    schema : str, Path or Schema, optional
        DDL text, a DDL file, or a parsed schema.
    fds, cds : sequences
        ``"PatDoc[1->2]"`` / ``"PatDoc[1->2]<=3"`` strings or Dependency values.
    constraints : path, optional
        A file with one dependency per line (``#`` comments).
    dialect : str, optional
        sqlglot dialect of the SQL.
    neighbor : {"add-remove", "substitute"}
        The neighbour model.
    kind : {"sql", "cq"}, optional
        Force the input language (otherwise guessed).
    name : str, optional
        Source name used in messages.
    prove_lower : bool
        Search for a witness (two databases) proving a lower bound; without
        one ``lower`` is None.
    witness_time : float
        Seconds of local search when the constructions do not reach the upper bound.
    seed : int
        Seed of that search (results are reproducible).
    bounds : sequence of str
        Value bounds ``"Table.column=low:high"`` for SUM/AVG/MEDIAN/MIN/MAX.
    contributions : int
        Tuples one individual may own (a neighbour relation of order k
        multiplies the sensitivity by k, Observation 1).
    rows : int, optional
        Number of rows, for the parity rule of a single-table MEDIAN.
    epsilon, delta : float, optional
        Privacy parameters: the output then gives the Laplace scale and the
        analytic Gaussian σ.

    Returns
    -------
    Analysis

    Raises
    ------
    InputError
        Any bad input (query, schema, dependency), with file, position and construct.

    Examples
    --------
    >>> a = analyze("Q(x) :- R(x, y), S(y, z)")
    >>> a.to_dict()["delta_str"], a.upper
    ('inf', inf)
    >>> analyze("Q(x) :- R(x, y), S(y, z)", fds=["S[1->2]", "R[2->1]"]).upper
    1
    """
    if neighbor not in NEIGHBORS:
        raise InputError(f"unknown neighbour model {neighbor!r} (choose add-remove or substitute)",
                         construct="--neighbor")
    if contributions < 1:
        raise InputError(f"--contributions must be at least 1, got {contributions}",
                         construct="--contributions")
    cli_bounds = parse_value_bounds(bounds)
    parsed_schema = load_schema(schema, dialect=dialect)
    query = load_query(source, schema=parsed_schema, dialect=dialect, kind=kind, name=name)
    sigma, notes = resolve_sigma(query, schema=parsed_schema, fds=fds, cds=cds, constraints=constraints)
    state = State(query, sigma, notes=list(query.notes) + notes)
    for stage in PIPELINE:
        state = stage(state)
    assert state.core is not None and state.bound is not None and state.delta_str is not None
    upper = state.bound.value
    explanation = _explain(state, upper)
    suggestion = _suggestion(state, parsed_schema) if upper == math.inf else []
    release, records = _release(state, parsed_schema, cli_bounds, neighbor, contributions, rows)
    counts_only = all(a.kind in ("count", "count_distinct") for a in query.aggregates)
    witness: Witness | None = None
    if prove_lower and counts_only and len(query.aggregates) == 1:
        witness = find_witness(query, sigma, state.core, upper=upper, columns=query.columns,
                               time_budget=witness_time, seed=seed,
                               column_checks=_column_checks(parsed_schema), bound=state.bound,
                               finite_columns=_finite_columns(parsed_schema),
                               column_types={r.name: r.types for r in parsed_schema.relations}
                               if parsed_schema is not None else None)
    lower: Weight | None = witness.lower if witness is not None else None
    if lower is not None and lower > upper:  # a real pair of databases beats the bound: a bug
        raise AssertionError(
            f"internal error: witness difference {lower} exceeds the upper bound {upper} "
            f"for {query.cq}; please report it"
        )
    if neighbor != "add-remove" and lower is not None:
        state.notes.append("the witness is an add/remove pair; under substitution no lower bound "
                           "is claimed")
        lower = None
    extra: dict[str, Any] = {"aggregates": records, "contributions": contributions}
    if len(records) > 1 or records[0]["kind"] not in ("count", "count_distinct") or contributions > 1 \
            or query.group_by:
        explanation.append(f"Released statistic: {release.rule.rstrip('.')}.")
    if epsilon is not None:
        extra["noise"] = _noise(release.l1, release.l2, epsilon, delta)
    return Analysis(
        query=query.text.strip(),
        source=query.source,
        query_obj=query,
        sigma=sigma,
        cq=query.cq,
        core=state.core,
        connected=is_connected(state.core),
        satisfiable=state.core.satisfiable,
        delta_str=state.delta_str.value,
        paper=state.paper,
        upper=release.l1,
        lower=lower,
        neighbor=neighbor,
        l1=release.l1,
        l2=release.l2,
        explanation=explanation,
        bound=state.bound,
        notes=state.notes,
        core_minimal=state.core_minimal,
        suggestion=suggestion,
        witness=witness if lower is not None else None,
        extra=extra,
    )


def _count_upper(state: State, cq: CQ) -> Weight:
    """The engine's bound for another head over the same body."""
    if cq.head == state.query.cq.head:
        assert state.bound is not None
        return state.bound.value
    chased = core(chase(cq, state.sigma.fds()), budget=CORE_BUDGET)
    value = upper_bound(chased, state.sigma).value
    if state.sigma.fds():
        value = min(value, upper_bound(core(cq, budget=CORE_BUDGET), state.sigma).value)
    return value


def _release(
    state: State,
    schema: Schema | None,
    cli_bounds: dict[str, tuple[float, float]],
    neighbor: str,
    contributions: int,
    rows: int | None,
) -> tuple[AggregateBound, list[dict[str, Any]]]:
    """ℓ1/ℓ2 of each aggregate and of all of them together."""
    query = state.query
    # "single table, no filter": one atom, no filter atom, no constant and no repeated
    # column in it (a literal or column equality is a filter too).
    atoms = query.cq.relation_atoms()
    single = (
        len(atoms) == 1
        and not any(a.is_filter for a in query.cq.atoms)
        and all(isinstance(t, Var) for t in atoms[0].terms)
        and len(set(atoms[0].terms)) == len(atoms[0].terms)
    )
    out: list[AggregateBound] = []
    records: list[dict[str, Any]] = []
    for index, agg in enumerate(query.aggregates):
        count_delta = _count_upper(state, query.cq_for(index))
        values = None
        if agg.kind in VALUE_KINDS:
            assert agg.column_name is not None
            values = value_bound(agg.column_name, cli=cli_bounds, schema=schema, query=query,
                                 variable=agg.column.name if isinstance(agg.column, Var) else None)
        b = aggregate_bound(agg, count_delta, grouped=bool(query.group_by), neighbor=neighbor,
                            contributions=contributions, values=values,
                            single_table_unfiltered=single, rows=rows if single else None)
        out.append(b)
        records.append({
            "label": agg.label, "kind": agg.kind, "count_bound": jsonable(count_delta),
            "l1": jsonable(b.l1), "l2": jsonable(b.l2), "rule": b.rule,
            "values": values.describe() if values is not None else None,
        })
    return combine(out), records


def _noise(l1: Weight, l2: Weight, epsilon: float, delta: float | None) -> dict[str, Any]:
    cal = calibrate(l1, l2, epsilon=epsilon, delta=delta)
    return {
        "epsilon": epsilon,
        "delta": delta,
        "laplace_scale": jsonable(cal.laplace_scale),
        "laplace_halfwidth_95": jsonable(cal.laplace_halfwidth_95),
        "gaussian_sigma": jsonable(cal.gaussian_sigma),
        "gaussian_method": cal.gaussian_method,
        "gaussian_classical_sigma": jsonable(cal.gaussian_classical_sigma),
        "gaussian_halfwidth_95": jsonable(cal.gaussian_halfwidth_95),
    }
