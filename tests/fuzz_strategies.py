"""Hypothesis strategies that mutate valid cqsens inputs into hostile ones.

Every strategy starts from a valid input (a bundled example query, schema or
constraints file, a generated conjunctive query, a dependency string, an option
value) and applies a few token-level mutations: delete, duplicate or swap a
token, insert a hostile character or string, replace a number by a huge,
negative or non-finite one, truncate, wrap in deeply nested parentheses, or
repeat ``AND`` / ``NOT`` many times.  Sizes stay small enough for each example
to run in well under a second on a valid input.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import strategies as st

from tests.strategies import cqs, dependencies_for

__all__ = [
    "EXAMPLES",
    "HOSPITAL_DEPENDENCIES",
    "HOSTILE_NUMBERS",
    "HOSTILE_SNIPPETS",
    "constraints_texts",
    "cq_texts",
    "ddl_texts",
    "dependency_texts",
    "example_queries",
    "mutated",
    "option_values",
    "sql_texts",
]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

_TOKEN = re.compile(r"\d+|\w+|\s+|[^\w\s]")
_NUMBER = re.compile(r"\d+")

#: Numbers that replace a valid one: huge, negative, beyond 64 bits, non-finite.
HOSTILE_NUMBERS: tuple[str, ...] = (
    "0", "-1", "-0", "2147483648", "9223372036854775808", "18446744073709551616",
    "99999999999999999999999", "9007199254740993", "1e309", "1e-9", "1e300", "-1e300",
    "NaN", "nan", "inf", "-inf", "Infinity", "0x10", "1_000", "٣", "9" * 400,
)

#: Characters and short strings inserted anywhere.
HOSTILE_SNIPPETS: tuple[str, ...] = (
    "\x00", "'", '"', "`", "(", ")", "((", "))", ",", ",,", ";", ":", ":-", "%", "#", "--",
    "/*", "*/", "\\", "\n", "\r\n", "\t", "[", "]", "->", "<=", ".", "..", "*", "=",
    "é", "ß", "\u202e", "\ufeff", "\u00a0", "𝔘", "漢字", "\ud7ff",
    "NULL", "SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "COUNT(*)", "INTO x",
    "GROUP BY", "UNION", "JOIN", "CHECK", "PRIMARY KEY", " .cq", ".sql",
    "1" * 60, "9" * 400,
)

_REPEATS = (2, 3, 10, 60, 300)
_DEPTHS = (1, 2, 8, 30, 70)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def example_queries(suffix: str) -> list[tuple[str, str]]:
    """(query text, schema text) of every bundled example with that suffix."""
    out = []
    for path in sorted(EXAMPLES.glob(f"*/*{suffix}")):
        if path.name in ("schema.sql", "data.sql", "data_violating.sql"):
            continue
        schema = path.parent / "schema.sql"
        out.append((_read(path), _read(schema) if schema.exists() else ""))
    return out


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


#: The strategies a mutation draws from, built once (hypothesis validates each strategy
#: object on its first draw: building them per draw cost a tenth of test_fuzz.py).
_KINDS = st.sampled_from(
    ("delete", "duplicate", "swap", "insert", "number", "truncate", "nest", "repeat"))
_SNIPPETS = st.sampled_from(HOSTILE_SNIPPETS)
_INSERTED = st.one_of(_SNIPPETS, st.text(max_size=4))
_NUMBERS = st.sampled_from(HOSTILE_NUMBERS)
_NESTING = st.sampled_from(_DEPTHS)
_WORDS = st.sampled_from((" AND ", " NOT ", " AND NOT ", ", ", " OR "))
_TIMES = st.sampled_from(_REPEATS)


@st.composite
def _mutate_once(draw: st.DrawFn, tokens: list[str]) -> list[str]:
    """One mutation of a token list (never longer than a few thousand characters)."""
    kind = draw(_KINDS)
    toks = list(tokens)
    n = len(toks)
    if n == 0:
        return [draw(_SNIPPETS)]
    i = draw(st.integers(0, n - 1))
    if kind == "delete":
        del toks[i]
    elif kind == "duplicate":
        toks.insert(i, toks[i])
    elif kind == "swap":
        j = draw(st.integers(0, n - 1))
        toks[i], toks[j] = toks[j], toks[i]
    elif kind == "insert":
        snippet = draw(_INSERTED)
        toks.insert(i, snippet)
    elif kind == "number":
        places = [k for k, t in enumerate(toks) if _NUMBER.fullmatch(t)] or [i]
        toks[draw(st.sampled_from(places))] = draw(_NUMBERS)
    elif kind == "truncate":
        toks = toks[:i]
    elif kind == "nest":
        depth = draw(_NESTING)
        j = draw(st.integers(i, n))
        toks = toks[:i] + ["("] * depth + toks[i:j] + [")"] * depth + toks[j:]
    else:
        word = draw(_WORDS)
        toks.insert(i, word * draw(_TIMES))
    return toks


@st.composite
def mutated(draw: st.DrawFn, base: str, *, max_mutations: int = 3) -> str:
    """``base`` after one to ``max_mutations`` random mutations."""
    toks = _tokens(base)
    for _ in range(draw(st.integers(1, max_mutations))):
        toks = draw(_mutate_once(toks))
    return "".join(toks)


def _maybe_mutated(bases: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """A valid base most of the time left as is (one in five), else mutated."""
    return bases.flatmap(
        lambda b: st.one_of(st.just(b), mutated(b), mutated(b), mutated(b), mutated(b)))


def _generated_cq_text() -> st.SearchStrategy[str]:
    return cqs().map(str)


def cq_texts() -> st.SearchStrategy[str]:
    """Mutated conjunctive queries: bundled .cq examples and generated CQs."""
    bundled = [q for q, _ in example_queries(".cq")]
    return _maybe_mutated(st.one_of(st.sampled_from(bundled), _generated_cq_text()))


def sql_texts() -> st.SearchStrategy[tuple[str, str]]:
    """(mutated SQL query, its example's schema DDL)."""
    return st.sampled_from(example_queries(".sql")).flatmap(
        lambda qs: _maybe_mutated(st.just(qs[0])).map(lambda q: (q, qs[1])))


def ddl_texts(example: str = "*") -> st.SearchStrategy[str]:
    """Mutated DDL: bundled schema.sql files (``example``: a folder or *) and small tables."""
    bundled = [_read(p) for p in sorted(EXAMPLES.glob(f"{example}/schema.sql"))]
    small = st.builds(
        lambda cols, check: "CREATE TABLE Pat (" + ", ".join(
            f"{c} INTEGER" for c in cols) + (f", CHECK ({cols[0]} BETWEEN 0 AND {check})"
                                             if check is not None else "") + ");",
        st.lists(st.sampled_from(("id", "sex", "hos", "age", "x")), min_size=1, max_size=4,
                 unique=True),
        st.one_of(st.none(), st.integers(0, 10**30)))
    return _maybe_mutated(st.one_of(st.sampled_from(bundled), small))


HOSPITAL_DEPENDENCIES = ("PatDoc[pat->doc]<=3", "PatDoc[1->2]", "Pat[id->age]", "Doc[hos->id]<=5",
                         "Pat[hos->sex]", "Hos[loc->id]<=2")
_DEPENDENCY_BASES = HOSPITAL_DEPENDENCIES + (
    "R[1->2]", "S[2->1]", "U[1->3]<=2", "PatDoc[pat->doc]<=3", "PatDoc[1->2]",
    "Pat[id->age]", "Doc[hos->id]<=5", "follows[src->dst]<=20",
)


def dependency_texts(bases: tuple[str, ...] = _DEPENDENCY_BASES) -> st.SearchStrategy[str]:
    """Mutated dependency strings, from ``bases`` and from generated FDs/CDs."""
    generated = cqs(max_atoms=2).flatmap(dependencies_for).map(
        lambda sigma: [str(d) for d in sigma] or ["R[1->2]"]).flatmap(st.sampled_from)
    return _maybe_mutated(st.one_of(st.sampled_from(bases), st.sampled_from(bases), generated))


def constraints_texts(example: str = "*") -> st.SearchStrategy[str]:
    """Mutated constraints files of the bundled examples (``example``: a folder name or *)."""
    bundled = [_read(p) for p in sorted(EXAMPLES.glob(f"{example}/constraints*.txt"))]
    return _maybe_mutated(st.sampled_from(bundled))


def _first(pair: tuple[str, str]) -> str:
    return pair[0]


_OPTION_BASES: dict[str, tuple[str, ...]] = {
    "--bounds": ("Pat.age=0:120", "Pat.age=-5:5", "Pat.hos=1:2"),
    "--contributions": ("1", "3"),
    "--rows": ("1", "10"),
    "--epsilon": ("1", "0.5"),
    "--delta": ("1e-5", "0.1"),
    "--dialect": ("postgres", "sqlite", "mysql"),
    "--neighbor": ("add-remove", "substitute"),
    "--witness-time": ("0.05", "0.1"),
    "--timeout": ("5", "1"),
}


def option_values(names: tuple[str, ...] = tuple(_OPTION_BASES)) -> st.SearchStrategy[
        list[tuple[str, str]]]:
    """A few (option, value) pairs, values valid, mutated, or a hostile number."""

    def one(name: str) -> st.SearchStrategy[tuple[str, str]]:
        bases = st.sampled_from(_OPTION_BASES[name])
        value = st.one_of(bases, bases.flatmap(lambda b: mutated(b, max_mutations=2)),
                          st.sampled_from(HOSTILE_NUMBERS))
        return value.map(lambda v: (name, v))

    return st.lists(st.sampled_from(names).flatmap(one), max_size=3,
                    unique_by=_first)


