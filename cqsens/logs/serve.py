"""One record of a query log served: analysed afresh (a new shape), instantiated from its
key's row template with its lower bound checked or replayed, or written straight as a JSON
line; in a worker process or in the process of :mod:`cqsens.logs.run`, which schedules
them and streams the rows in input order.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import lru_cache
from typing import Any

from cqsens.batch import analysed_row
from cqsens.errors import InputError
from cqsens.frontend.ddl import load_schema
from cqsens.ir.cq import AggregateQuery
from cqsens.ir.schema import Schema
from cqsens.logs.cache import ShapeCache, Verdict
from cqsens.logs.fingerprint import fingerprint, record_settings
from cqsens.logs.lines import Line, LineTemplate, compile_line, render_line
from cqsens.logs.plan import Plan, abstract_literals
from cqsens.logs.proofs import Proof, check, instances, own_query
from cqsens.logs.records import Record
from cqsens.logs.shape import Lexed, lex, literal_value, record_key, shape_key
from cqsens.logs.template import (
    SOURCE,
    Compiled,
    Template,
    compile_template,
    derive_template,
    instantiate,
)
from cqsens.logs.transpiled import record_sqlite
from cqsens.pipeline import Analysis, analyze_with
from cqsens.release.values import parse_value_bounds
from cqsens.rows import Inputs, LogPart, Row
from cqsens.runner import failure, limited
from cqsens.settings import Settings
from cqsens.witness.model import Witness
from cqsens.witness.schema_checks import column_checks
from cqsens.witness.search import first_proof

__all__ = ["HITS_BATCH", "SEARCHES"]

#: Fresh witness searches a key's later records may take when its witnesses do not carry
#: over to their constants (a search costs up to --witness-time; a check, milliseconds);
#: past them, such a record reports no lower bound.
SEARCHES = 3


@lru_cache(maxsize=64)
def _schema(value: str, dialect: str | None) -> Schema:
    loaded = load_schema(value, dialect=dialect)
    assert loaded is not None
    return loaded


def _parsed_schema(settings: Settings) -> Schema | None:
    value = settings.schema
    if value is None or isinstance(value, Schema):
        return value
    return _schema(str(value), settings.dialect)


def _inputs(settings: Settings) -> Inputs:
    schema = settings.schema
    shown = schema.source if isinstance(schema, Schema) else schema
    if isinstance(shown, str) and "\n" in shown:
        shown = "(inline text)"
    declared = [*settings.fds, *settings.cds]
    constraints = settings.constraints
    return {"schema": None if shown is None else str(shown),
            "constraints": None if constraints is None else str(constraints),
            "dependencies": [str(d) for d in declared]}


def _error_row(record: Record, status: str, message: str,
               inputs: Inputs | None = None) -> Row:
    return Row.failed(record.where, status, message, record.sql or None, inputs,
                      LogPart(record.id))


def _analyse(sql: str, settings: Settings, timeout: float | None) -> tuple[Row, Analysis]:
    """The row of one query text, analysed under the name :data:`SOURCE`, and its analysis."""
    # the schema is parsed once per run, not once per record
    own = replace(settings, schema=_parsed_schema(settings), timeout=timeout)
    with first_proof():  # one search serves the shape's later records: spend it once
        analysis = limited(lambda: analyze_with(sql, own, kind="sql", name=SOURCE), timeout,
                           slack=1.2, floor=1e-3)
    return analysed_row(SOURCE, analysis, _inputs(settings)), analysis


@dataclass(frozen=True, slots=True)
class _Task:
    """A record of a new shape (``share``: make its shape's template), or a record to
    analyse on its own."""

    record: Record
    settings: Settings
    timeout: float | None
    fingerprint: str
    plan: Plan | None
    share: bool


@dataclass(frozen=True, slots=True)
class _Check:
    """A record whose key is stored: its row from the template, its lower bound from the
    key's witnesses, checked (in a worker, which reads the cache file itself)."""

    record: Record
    settings: Settings
    timeout: float | None
    fingerprint: str
    key: str
    plan: Plan
    full: bool
    search: bool
    cache_path: str
    seen: Verdict | None = None  # the verdict on this very record's lower bound, before


@dataclass
class _Done:
    row: Row
    shape: str = ""
    plan: Plan | None = None
    key: str = ""
    template: Template | None = None
    literals: list[str] = field(default_factory=list)
    proof: Proof | None = None
    found: tuple[tuple[int | Fraction | str, ...], Witness] | None = None
    searched: bool = False
    checked: Verdict | None = None  # what the cache keeps of this record's lower bound


def _literal_key(lexed: Lexed) -> str:
    """A record's literals as written (and its table aliases, when it has some), the key of
    its proven lower bound in the cache."""
    texts = [lit.text for lit in lexed.literals]
    return json.dumps([texts, list(lexed.aliases)] if lexed.aliases else texts)


def _verdict(row: Row, lexed: Lexed, note: str | None) -> Verdict | None:
    """What the cache keeps of the lower bound of a record's row (``note``: the note beside
    it): the bound a checked witness proved, or none proven; None for a row that is not
    an analysed one."""
    if row.status != "ok" or row.log is None:
        return None
    return Verdict(_literal_key(lexed), json.dumps(row.lower), note or None, row.log.proof)


_SHAPE_IDS: dict[tuple[str, str, tuple[int, ...], tuple[str, ...]], str] = {}


def _shape_id(fp: str, lexed: Lexed) -> str:
    normal = [str(literal_value(lit)).strip().lower() for lit in lexed.literals]
    classes: dict[str, int] = {}
    pattern = [classes.setdefault(n, len(classes)) for n in normal]
    kinds = [lit.kind for lit in lexed.literals]
    slot = (fp, lexed.template, tuple(pattern), tuple(kinds))
    found = _SHAPE_IDS.get(slot)
    if found is None:  # the digest of a shape's first record, the same for the others
        blob = json.dumps([fp, lexed.template, pattern, kinds])
        found = hashlib.sha256(blob.encode("utf-8")).hexdigest()
        if len(_SHAPE_IDS) >= 4096:
            _SHAPE_IDS.clear()
        _SHAPE_IDS[slot] = found
    return found


def _finish(row: Row, record: Record, key: str, cached: bool) -> Row:
    """``row`` as the record's own: its id, name and text, its key and whether it was
    served from the cache."""
    analysis = row.analysis
    if analysis is not None:
        analysis = dict(analysis, query=record.sql.strip(), source=record.where)
    proof = row.log.proof if row.log is not None else None
    return replace(row, file=record.where, query=record.sql, analysis=analysis,
                   log=LogPart(record.id, key[:16], cached, proof))


def _fresh(record: Record, opts: Settings, timeout: float | None
           ) -> tuple[Row, Analysis | None]:
    """The row of one record analysed on its own (an error row when it fails)."""
    try:
        first, analysis = _analyse(record.sql, opts, timeout)
    except Exception as exc:  # noqa: BLE001 - a bug must not stop the run; it is shown
        status, text = failure(exc, record.where, timeout)
        if isinstance(exc, InputError):
            text = text.replace(SOURCE, record.where)
            if not text.startswith(record.where):
                text = f"{record.where}: {text}"
        return _error_row(record, status, text, _inputs(opts)), None
    searched = analysis.lower is not None and analysis.witness is not None
    return replace(first, log=LogPart(record.id, proof="searched" if searched else None)), \
        analysis


def _named(row: Row, record: Record) -> Row:
    """A row analysed under :data:`SOURCE`, with the record's own name."""
    return Row.from_dict(json.loads(json.dumps(row.to_dict()).replace(
        json.dumps(SOURCE)[1:-1], json.dumps(record.where)[1:-1])))


def _stored(row: Row) -> dict[str, Any]:
    """A row analysed under :data:`SOURCE` as a row template stores it (no id, no key)."""
    return {**replace(row, log=None).to_dict(),
            "proof": row.log.proof if row.log is not None else None}


def _values(lexed: Lexed) -> tuple[int | Fraction | str, ...]:
    return tuple(literal_value(lit) for lit in lexed.literals)


def _proof_of(analysis: Analysis, lexed: Lexed) -> Proof:
    """What a shape's first record proved about its lower bound."""
    query = analysis.query_obj
    witness = analysis.witness
    reusable = isinstance(query, AggregateQuery) and not analysis.summary
    if witness is not None and analysis.lower is not None and reusable:
        return Proof(query, analysis.sigma, ((_values(lexed), witness),))
    return Proof(query, analysis.sigma, (), analysis.lower, analysis.lower_note,
                 reusable and (analysis.lower is None or analysis.lower == 0))


def _work(task: _Task) -> _Done:
    """Analyse a record of a new shape and make its shape's row template."""
    record = task.record
    opts = record_settings(task.settings, record)
    first, analysis = _fresh(record, opts, task.timeout)
    if analysis is None:
        return _Done(first)
    if not task.share:
        return _Done(_finish(_named(first, record), record, "", False))
    lexed = lex(record.sql)
    shape = _shape_id(task.fingerprint, lexed)
    plan = task.plan
    if plan is None:
        schema = _parsed_schema(opts)
        checked = column_checks(schema, value_bounds=parse_value_bounds(opts.bounds),
                                columns=analysis.query_obj.columns)
        plan = replace(abstract_literals(analysis.query_obj, lexed, checked),
                       aliases=bool(lexed.aliases))  # kept only if the template shows them
    without = replace(opts, prove_lower=False)

    def rerun(sql: str) -> dict[str, Any] | None:
        try:
            return _analyse(sql, without, task.timeout)[0].to_dict()
        except Exception:  # noqa: BLE001 - any failure only keeps the constants in the key
            return None

    template = derive_template(_stored(first), sql=record.sql, lexed=lexed,
                               fingerprint=task.fingerprint, plan=plan, rerun=rerun)
    plan = template.plan
    key = shape_key(task.fingerprint, lexed, plan.abstract, plan.groups,
                    aliases=plan.aliases)
    row = _finish(_named(first, record), record, key, False)
    return _Done(row, shape, plan, key, template, [lit.text for lit in lexed.literals],
                 _proof_of(analysis, lexed), searched=True,
                 checked=_verdict(row, lexed, analysis.lower_note))


@lru_cache(maxsize=4096)
def _compiled(template: str, compact: bool) -> Compiled:
    return compile_template(template, compact=compact)


@lru_cache(maxsize=4096)
def _line_template(template: str) -> LineTemplate | None:
    return compile_line(template)


_NOT_CHECKED = ("not proven for this record: its shape's witness did not carry over to its "
                "constants and {why}")


_MODES: dict[tuple[str, tuple[int | Fraction | str, ...]], str] = {}


def _reuse(proof: Proof, key: str, lexed: Lexed, record: Record,
           opts: Settings, plan: Plan) -> Witness | None:
    """An instance of one of the key's witnesses for this record, checked with is_witness
    against the record's own query; None when none checks."""
    schema = _parsed_schema(opts)
    dialect = opts.dialect
    own_sql = record_sqlite(key, record.sql, lexed, dialect)
    if own_sql is None:
        return None
    bounds = parse_value_bounds(opts.bounds)
    new = _values(lexed)
    for values, witness in proof.witnesses:
        if len(values) != len(new):
            continue
        old = {i: values[i] for i in plan.abstract}
        fresh = {i: new[i] for i in plan.abstract}
        query = own_query(proof.query, witness, record.sql, schema=schema, dialect=dialect)
        if query is None:
            return None
        last = (key, values)
        for mode, instance in instances(witness, old, fresh, own_sql, _MODES.get(last, "")):
            if check(query, proof.sigma, instance, schema=schema, value_bounds=bounds):
                if len(_MODES) > 4096:
                    _MODES.clear()
                _MODES[last] = mode  # the next record of the key tries it first
                return instance
    return None


def _serve(cache: ShapeCache, task: _Check, lexed: Lexed | None = None) -> _Done:
    """The row of a record whose key is stored (see :class:`_Check`); ``lexed``: the
    record's text, lexed already."""
    record = task.record
    opts = record_settings(task.settings, record)
    lexed = lexed or lex(record.sql)
    got = cache.result(task.key)
    if got is None:  # not visible here (it cannot happen: the writer commits first)
        first, _ = _fresh(record, opts, task.timeout)
        return _Done(_finish(_named(first, record), record, task.key, False))
    row = _finish(Row.from_dict(instantiate(_compiled(got.row, not task.full), lexed,
                                            source=record.where)), record, task.key, True)
    if not opts.prove_lower:
        return _Done(row.with_lower(None, "not searched (--no-lower)", None), key=task.key)
    seen = task.seen
    if seen is not None:  # this very record was served before (the log is run again)
        return _Done(row.with_lower(json.loads(seen.lower), seen.note, seen.proof), key=task.key)
    proof = cache.proof(task.key)
    known = _reused(proof, task, lexed, row, opts)
    if known is not None:
        return known
    if not task.search:
        past = task.timeout is not None and task.timeout <= 0
        why = ("the run's --total-timeout has passed" if past else
               f"its shape's {SEARCHES} fresh searches are spent"
               + (f" (its first record: {proof.note})" if proof is not None and proof.note
                  and not proof.witnesses else ""))
        note = _NOT_CHECKED.format(why=why)
        done = row.with_lower(None, note, None)
        # past the run's total time the verdict is this run's alone: not kept
        return _Done(done, key=task.key, checked=None if past else _verdict(done, lexed, note))
    return _search(row, task, lexed, opts)


def _reused(proof: Proof | None, task: _Check, lexed: Lexed, row: Row,
            opts: Settings) -> _Done | None:
    """The row with a lower bound its key's proof gives this record without a search: 0
    for a key whose upper bound is 0, or a witness of the key that checks for it; None
    when there is none."""
    if proof is not None and not proof.witnesses and proof.reusable and proof.lower == 0:
        # nothing changes the released value: upper 0
        return _Done(row.with_lower(0, None, "reused"), key=task.key)
    if proof is not None and proof.witnesses:
        try:
            instance = _reuse(proof, task.key, lexed, task.record, opts, task.plan)
        except Exception:  # noqa: BLE001 - a failed check only means a fresh search
            instance = None
        if instance is not None:
            done = row.with_lower(instance.lower, None, "reused")
            return _Done(done, key=task.key, checked=_verdict(done, lexed, None))
    return None


def _search(row: Row, task: _Check, lexed: Lexed, opts: Settings) -> _Done:
    """The row of a stored key's record with the lower bound of a fresh analysis (the fresh
    row itself when its upper bound differs, or it fails)."""
    record = task.record
    fresh, analysis = _fresh(record, opts, task.timeout)
    found = None
    if analysis is not None and analysis.witness is not None and analysis.lower is not None:
        found = (_values(lexed), analysis.witness)
    if analysis is None or fresh.upper != row.upper:
        # a fresh analysis is the record's own: it stands (and a timeout is reported)
        return _Done(_finish(_named(fresh, record), record, task.key, False), key=task.key,
                     found=found, searched=True)
    note = (fresh.analysis or {}).get("lower_note")
    done = row.with_lower(fresh.lower, note, fresh.log.proof if fresh.log else None)
    return _Done(done, key=task.key, found=found, searched=True,
                 checked=_verdict(done, lexed, note))


_READERS: dict[str, ShapeCache] = {}


def _reader(path: str) -> ShapeCache:
    """The cache file, opened once per worker process for reading."""
    cache = _READERS.get(path)
    if cache is None:
        cache = _READERS[path] = ShapeCache(path, readonly=True)
    return cache


def _check_in_worker(task: _Check) -> _Done:
    """:func:`_serve` in a worker process, reading the cache file (opened once)."""
    return _serve(_reader(task.cache_path), task)


def _checks_in_worker(tasks: tuple[_Check, ...]) -> list[_Done]:
    """:func:`_check_in_worker` of each of a batch of records."""
    return [_check_in_worker(task) for task in tasks]


#: A record as plain values (id, where, sql, dialect, schema, error) and a line as plain
#: values (text, status, upper, tight, proof, error): what goes to and from a worker in
#: batches (plain tuples pickle about ten times faster than frozen dataclasses).
_PlainRecord = tuple[str, str, str, str | None, str | None, str | None]
_PlainLine = tuple[str, str, Any, bool, str | None, str | None]


@dataclass(frozen=True, slots=True)
class _Hits:
    """Records for a worker to write as the JSON lines of decided hits (see
    :func:`_hit_lines`)."""

    records: tuple[_PlainRecord, ...]
    settings: Settings
    cache_path: str


_FINGERPRINTS: dict[tuple[Settings, str | None, str | None], str] = {}


def _hit_lines(task: _Hits) -> list[_PlainLine | None]:
    """In a worker: the JSON line of each record that is a hit whose lower bound is decided
    in the cache file as committed (its verdict kept, or ``--no-lower``); None for any other
    record, which the run then serves itself (:meth:`_LogRun.start`).  The verdicts of the
    batch are read together."""
    cache = _reader(task.cache_path)
    lower = task.settings.prove_lower
    hits: list[tuple[Record, Lexed, str, str, str] | None] = []
    for plain in task.records:
        try:
            hits.append(_hit(cache, task.settings, Record(*plain)))
        except Exception:  # noqa: BLE001 - the run serves it the long way, errors included
            hits.append(None)
    seen = cache.checked_many([(h[2], h[4]) for h in hits if h is not None]) if lower else {}
    lines: list[_PlainLine | None] = []
    for hit in hits:
        line = None
        if hit is not None and (not lower or (hit[2], hit[4]) in seen):
            record, lexed, key, row, text = hit
            try:
                line = _decided(row, record, key, lexed, seen.get((key, text)))
            except Exception:  # noqa: BLE001 - the run serves it the long way
                line = None
        lines.append(None if line is None else (line.text, line.status, line.upper,
                                                line.tight, line.proof, line.error))
    return lines


def _hit(cache: ShapeCache, options: Settings, record: Record
         ) -> tuple[Record, Lexed, str, str, str] | None:
    """A record whose key is stored: it, its lexing, its key, the key's row template and
    the record's literal key (:func:`_literal_key`); None for any other record."""
    if record.error is not None:
        return None
    slot = (options, record.dialect, record.schema)
    fp = _FINGERPRINTS.get(slot)
    if fp is None:
        fp = _FINGERPRINTS[slot] = fingerprint(options, record)
    lexed = lex(record.sql)
    plan = cache.plan(_shape_id(fp, lexed))
    if plan is None:
        return None
    key = record_key(fp, lexed, plan.abstract, plan.groups, aliases=plan.aliases)
    got = cache.result(key)
    if got is None:
        return None
    return record, lexed, key, got.row, _literal_key(lexed)


def _decided(row: str, record: Record, key: str, lexed: Lexed, seen: Verdict | None
             ) -> Line | None:
    """The JSON line of a hit whose lower bound is decided: the verdict kept for its text,
    or none (``--no-lower``); None when its template cannot make it."""
    template = _line_template(row)
    if template is None:
        return None
    lower, proof = (None, None) if seen is None else (json.loads(seen.lower), seen.proof)
    return render_line(template, lexed, ident=record.id, where=record.where, sql=record.sql,
                       lower=lower, proof=proof, key=key)


#: Records per task of decided hits sent to a worker (:func:`_hit_lines`).
HITS_BATCH = 32
