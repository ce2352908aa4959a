"""cqsens: global sensitivity of SQL counting queries over multi-table databases.

>>> import cqsens
>>> cqsens.analyze("Q(x) :- R(x, y), R(y, x)").upper
2
"""

from __future__ import annotations

from cqsens.errors import (
    CqsensError,
    DependencyError,
    InputError,
    ParseError,
    SchemaError,
    UnsupportedQueryError,
)
from cqsens.frontend.ddl import schema_from_ddl
from cqsens.frontend.parse_cq import parse_cq, parse_dependency
from cqsens.frontend.parse_sql import parse_sql
from cqsens.ir.cq import CQ, AggregateQuery, Atom, Const, Var
from cqsens.ir.dependencies import Dependency, Sigma
from cqsens.ir.schema import Schema
from cqsens.pipeline import Analysis, analyze, analyze_with
from cqsens.report import words as _words  # noqa: F401 - registers Analysis's renderers
from cqsens.settings import Settings

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
    "Settings",
    "Sigma",
    "UnsupportedQueryError",
    "Var",
    "analyze",
    "analyze_with",
    "parse_cq",
    "parse_dependency",
    "parse_sql",
    "schema_from_ddl",
]
