"""Query logs: JSON Lines and CSV records in, one streamed row per record out, one analysis
per shape (docs/guide/reports.md, "Query logs: JSONL, CSV, cache")."""

from cqsens.logs.cache import ShapeCache
from cqsens.logs.records import Record, is_log, read_records
from cqsens.logs.run import analyse_log

__all__ = ["Record", "ShapeCache", "analyse_log", "is_log", "read_records"]
