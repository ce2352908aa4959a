"""Renderers: text, JSON, HTML and Markdown reports, SVG drawings of the canonical structure."""
