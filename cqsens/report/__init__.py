"""Renderers: text, JSON, HTML and Markdown reports, SVG drawings of the canonical structure."""

from __future__ import annotations

from typing import Any

from cqsens.analysis import Renderers, register_renderers
from cqsens.report import words


def _card(row: dict[str, Any]) -> str:
    """The HTML card of a report row (:func:`cqsens.report.html.card_html`), its module
    loaded on first use."""
    from cqsens.report.html import card_html

    return card_html(row)


register_renderers(Renderers(rule=words.render, reason=words.reason, card=_card))
