"""The JSON contract: a versioned JSON Schema (draft 2020-12) for each JSON output.

``cqsens analyze``, ``report``, ``witness``, ``release`` and ``budget`` write
JSON documents that carry ``schema_version`` (:data:`SCHEMA_VERSION`); the
schemas they follow are shipped in this package as ``<kind>.schema.json``
(docs/json.md, section JSON contract).  A breaking change (a key removed, renamed or
retyped) bumps the major version; a new key bumps the minor one, so a document
of any ``1.x`` validates against the version 1 schemas.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["KINDS", "SCHEMA_VERSION", "load_schema", "versioned"]

#: The version every JSON document carries under ``schema_version``: MAJOR.MINOR.
SCHEMA_VERSION = "1.2"

#: The commands whose JSON output has a schema.
KINDS = ("analyze", "report", "report-line", "witness", "release", "budget")


def load_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of one command's JSON output.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.

    Returns
    -------
    dict
        The schema (draft 2020-12), as shipped in ``cqsens/schemas/<kind>.schema.json``.

    Raises
    ------
    ValueError
        An unknown kind.

    Examples
    --------
    >>> load_schema("budget")["$schema"]
    'https://json-schema.org/draft/2020-12/schema'
    """
    if kind not in KINDS:
        raise ValueError(f"no JSON schema for {kind!r} (schemas: {', '.join(KINDS)})")
    text = resources.files(__name__).joinpath(f"{kind}.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def versioned(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with ``schema_version`` as its first key.

    >>> versioned({"a": 1}) == {"schema_version": SCHEMA_VERSION, "a": 1}
    True
    >>> list(versioned({"a": 1}))
    ['schema_version', 'a']
    """
    return {"schema_version": SCHEMA_VERSION, **document}
