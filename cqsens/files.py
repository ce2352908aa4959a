"""Writing output files without ever leaving a half-written or lost file.

Every file cqsens writes (a witness script or SQLite database, a report, a
profile's proposed dependencies) is first written to a temporary file in the
target's own folder and then renamed over the target with :func:`os.replace`,
which is atomic on POSIX and Windows: a reader sees the old file or the new
one, never a mix, and a failure leaves the old file untouched.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["write_atomically", "write_text_atomically"]


def write_atomically(path: str | Path, write: Callable[[Path], None]) -> None:
    """Let ``write`` fill a fresh temporary file, then rename it onto ``path``.

    Parameters
    ----------
    path : str or Path
        The target; its folder must exist.
    write : callable
        Called with the temporary file's path (an empty file that exists);
        it writes the whole content there.

    Raises
    ------
    OSError
        The folder is missing or not writable, or ``write`` failed; the
        temporary file is removed and the target is left as it was.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    temporary = Path(name)
    try:
        write(temporary)
        with contextlib.suppress(OSError):
            os.chmod(temporary, _mode_for(target))
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def _mode_for(target: Path) -> int:
    """The permissions of the file being replaced, or those of a new file (0o666 - umask)."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_text_atomically(path: str | Path, text: str) -> None:
    """Write ``text`` as UTF-8 to ``path`` through :func:`write_atomically`.

    Parameters
    ----------
    path : str or Path
        The target; its folder must exist.
    text : str
        The whole content.
    """

    def write(temporary: Path) -> None:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())

    write_atomically(path, write)
