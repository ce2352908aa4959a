"""Group keys of a release: a public domain, or none (then DP partition selection).

A release never shows a group key only because it is in the data (releasing
the keys that happen to occur breaks differential privacy).  The keys come
from a public domain, where every key gets a noisy value, zeros included:

* ``--keys FILE``: a CSV file whose header names the group columns, one key per row;
* a public table (``--public`` or ``public`` in ``cqsens.toml``) that holds
  every group column: its distinct values, read from the database.

Without a public domain the keys go through partition selection
(:func:`cqsens.release.noise.select_partitions`).  Keys are compared as text:
``None`` for NULL, integers and integral numbers without a decimal point.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

from cqsens.errors import InputError, read_text

__all__ = ["key_label", "key_text", "read_keys"]


def _value_text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return str(int(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    return str(value)


def key_text(values: Iterable[object]) -> str:
    """One key as text (the same for equal keys read from a file or a database).

    >>> key_text([1, "F", None]) == key_text(["1", "F", None])
    True
    >>> key_text([2.0]) == key_text(["2"])
    True
    """
    return json.dumps([_value_text(v) for v in values], ensure_ascii=False)


def key_label(text: str) -> tuple[str | None, ...]:
    """The key's values back from :func:`key_text`."""
    return tuple(json.loads(text))


def read_keys(path: str | Path, names: Sequence[str]) -> list[str]:
    """The keys of a ``--keys`` CSV file whose header names the group columns.

    Parameters
    ----------
    path : str or Path
        The file; its first row names the columns (any order, any case).
    names : sequence of str
        The group key's column names, as the query's result names them.

    Returns
    -------
    list of str
        Each key as :func:`key_text`, in file order, without repeats.

    Raises
    ------
    InputError
        A missing column, a short row, an empty file; with ``file:line``.
    """
    source = str(path)
    text = read_text(Path(path), what="keys file")
    rows = list(csv.reader(io.StringIO(text)))
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        raise InputError("the keys file is empty: its first row names the group columns",
                         source=source, line=1, column=1, construct="--keys")
    header = [h.strip().lower() for h in rows[0]]
    positions: list[int] = []
    for name in names:
        if name.lower() not in header:
            raise InputError(f"the keys file has no column {name!r} (its header: "
                             f"{', '.join(rows[0])}; the group columns: {', '.join(names)})",
                             source=source, line=1, column=1, construct="--keys")
        positions.append(header.index(name.lower()))
    out: dict[str, None] = {}
    for number, row in enumerate(rows[1:], start=2):
        if len(row) < len(header):
            raise InputError(f"row has {len(row)} fields, the header {len(header)}",
                             source=source, line=number, column=1, construct="--keys")
        out[key_text(row[p].strip() for p in positions)] = None
    return list(out)
