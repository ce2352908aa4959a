"""The cache key of a query log's records: everything but the query text an analysis
depends on (cqsens's version, the settings that differ from the defaults with files by
content, the record's own dialect and schema), as one digest."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from cqsens.ir.schema import Schema
from cqsens.logs.records import Record
from cqsens.settings import Settings

__all__ = ["fingerprint", "record_settings"]


def _version() -> str:
    try:
        return version("cqsens")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


def _content(value: object) -> str:
    """What an option stands for: a file's content, a schema's source, or the text."""
    if value is None:
        return ""
    if isinstance(value, Schema):
        return repr(value)
    path = Path(str(value))
    try:
        if "\n" not in str(value) and path.is_file():
            return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        pass
    return str(value)


def fingerprint(settings: Settings, record: Record) -> str:
    """Everything but the query text an analysis depends on, as one digest: cqsens's
    version, the settings that differ from the defaults (files by content), the
    record's dialect and schema."""
    own = record_settings(settings, record)
    parts = {k: (_content(v) if k in ("schema", "constraints") else v)
             for k, v in sorted(own.analysis_changed().items())}
    blob = json.dumps([_version(), parts], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def record_settings(settings: Settings, record: Record) -> Settings:
    """The settings of one record: its own dialect and schema, when it names them."""
    if record.dialect is not None:
        settings = replace(settings, dialect=record.dialect)
    if record.schema is not None:
        settings = replace(settings, schema=record.schema)
    return settings
