"""cqsens: global sensitivity of SQL counting queries over multi-table databases.

>>> import cqsens
>>> cqsens.analyze("Q(x) :- R(x, y), R(y, x)").upper
2
"""

from __future__ import annotations

from cqsens.analyze import Analysis, analyze
from cqsens.cq import CQ, AggregateQuery, Atom, Const, Var
from cqsens.dependencies import Dependency, Sigma
from cqsens.errors import (
    CqsensError,
    DependencyError,
    InputError,
    ParseError,
    SchemaError,
    UnsupportedQueryError,
)
from cqsens.parse_cq import parse_cq, parse_dependency
from cqsens.parse_sql import parse_sql
from cqsens.schema import Schema, schema_from_ddl

__all__ = [
    "AggregateQuery",
    "Analysis",
    "Atom",
    "CQ",
    "Const",
    "CqsensError",
    "Dependency",
    "DependencyError",
    "InputError",
    "ParseError",
    "Schema",
    "SchemaError",
    "Sigma",
    "UnsupportedQueryError",
    "Var",
    "analyze",
    "parse_cq",
    "parse_dependency",
    "parse_sql",
    "schema_from_ddl",
]
