"""Witnesses: lower bounds proven by two concrete databases evaluated in SQLite."""

from __future__ import annotations

from cqsens.witness.certificate import is_witness
from cqsens.witness.model import Witness
from cqsens.witness.search import find_witness
from cqsens.witness.writers import to_sql_script, write_witness

__all__ = ["Witness", "find_witness", "is_witness", "to_sql_script", "write_witness"]
