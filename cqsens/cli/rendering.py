"""The text of a ``cqsens report``: one renderer choice for folders and query logs."""

from __future__ import annotations

from typing import Any

__all__ = ["render_batch"]


def render_batch(batch: dict[str, Any], chosen: str) -> str:
    """The report object of a batch or a log as JSON, HTML or Markdown text.

    Parameters
    ----------
    batch : dict
        The report object (:meth:`cqsens.batch.BatchResult.as_dict`, or a log's rows
        grouped by shape).
    chosen : str
        ``json``, ``html`` or ``md``.

    Returns
    -------
    str
    """
    if chosen == "json":
        import json

        from cqsens.report.common import json_default
        from cqsens.schemas import versioned

        return json.dumps(versioned(batch), indent=2, ensure_ascii=False, default=json_default)
    from cqsens.report import html as report_html

    return report_html.to_html(batch) if chosen == "html" else report_html.to_markdown(batch)
