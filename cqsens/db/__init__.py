"""Live databases: connect with masked secrets, reflect a schema, check constraints, profile.

One module per concern: :mod:`~cqsens.db.connect` (URLs, password masking,
connections, :class:`DatabaseError`), :mod:`~cqsens.db.reflect`
(:func:`reflect_schema`), :mod:`~cqsens.db.check` (:func:`check_constraints`),
:mod:`~cqsens.db.profile` (fan-outs, proposals, :func:`profile_database`) and
:mod:`~cqsens.db.load` (:func:`load_sql_file`).  Two back ends are supported:
SQLite and PostgreSQL (psycopg 3), both through SQLAlchemy.
"""

from __future__ import annotations

from cqsens.db.check import ConstraintCheck, Offender, check_constraints, dependency_label
from cqsens.db.connect import DatabaseError
from cqsens.db.load import load_sql_file
from cqsens.db.profile import (
    OBSERVED_NOTE,
    FanOut,
    Profile,
    declared_dependencies,
    measure_fanouts,
    profile_database,
    proposals,
    proposals_text,
)
from cqsens.db.reflect import reflect_schema
from cqsens.passwords import mask_url

__all__ = [
    "OBSERVED_NOTE",
    "ConstraintCheck",
    "DatabaseError",
    "FanOut",
    "Offender",
    "Profile",
    "check_constraints",
    "declared_dependencies",
    "dependency_label",
    "load_sql_file",
    "mask_url",
    "measure_fanouts",
    "profile_database",
    "proposals",
    "proposals_text",
    "reflect_schema",
]
