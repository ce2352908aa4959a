"""Loading SQL scripts (DDL and inserts) into a live database, for tests and docs."""

from __future__ import annotations

from pathlib import Path

from cqsens.db.connect import DB_CONSTRUCT, DatabaseError, driver_message, open_connection
from cqsens.errors import read_text

__all__ = ["load_sql_file"]


def load_sql_file(url: str, *paths: str | Path, text: str | None = None) -> None:
    """Run SQL scripts (DDL and inserts) in a database, in one transaction each.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` (the file is created when missing) or
        ``postgresql://...`` (the database must exist).
    *paths : str or Path
        Script files, run in order.
    text : str, optional
        A script given inline, run after the files.

    Raises
    ------
    InputError
        A file cannot be read.
    DatabaseError
        Bad URL, unreachable server, or a statement the database refuses.
    """
    scripts: list[tuple[str, str]] = []
    for p in paths:
        path = Path(p)
        scripts.append((str(path), read_text(path, what="SQL file")))
    if text is not None:
        scripts.append(("<sql>", text))
    engine, raw, masked, secrets = open_connection(url, must_exist=False, raw=True)
    try:
        dbapi_error = engine.dialect.loaded_dbapi.Error
        try:
            for name, script in scripts:
                try:
                    if engine.dialect.name == "sqlite":
                        raw.driver_connection.executescript(script)
                    else:
                        cursor = raw.cursor()
                        cursor.execute(script)  # no parameters: several statements run
                        cursor.close()
                    raw.commit()
                except dbapi_error as exc:
                    raw.rollback()
                    raise DatabaseError(f"{name}: the database refused the script: "
                                        f"{driver_message(exc, secrets)}",
                                        source=masked, construct=DB_CONSTRUCT) from None
        finally:
            raw.close()
    finally:
        engine.dispose()
