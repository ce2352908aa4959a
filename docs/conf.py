"""Sphinx configuration of the cqsens documentation site (``sphinx-build -W docs docs/_build/html``)."""

from __future__ import annotations

project = "cqsens"
author = "the cqsens authors"
copyright = "2026, the cqsens authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx_click",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
html_theme = "furo"
html_title = "cqsens"

# MyST: anchors for headings down to level 4 so that `page.md#heading` links resolve.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# numpy-style docstrings only; types come from the signatures.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
autodoc_typehints = "description"
autodoc_member_order = "bysource"
