"""Safe file access shared by model files, result files and the command line.

* :func:`write_atomically` — the new content goes to a temporary file in the destination's
  folder, flushed to disk, which then replaces the destination in one ``os.replace``: a
  write that fails (an unencodable name, a full disk, a file-size limit) leaves the
  previous file intact; a symbolic link is replaced rather than written through; no
  set-user-ID or set-group-ID bit is kept; ``overwrite=False`` refuses an existing file.
  Every file flexdyn writes goes through it: model files and results replace an existing
  file by default (``overwrite=True``), FMUs and the command line refuse one unless told.
* :func:`read_text` — reads a regular file of at most :data:`MAX_FILE_BYTES`; FIFOs, devices
  and folders are refused before they are opened (a FIFO would block forever).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["MAX_FILE_BYTES", "file_mode", "read_text", "write_atomically"]

#: Largest model file read (bytes).
MAX_FILE_BYTES = 256 * 2**20


def file_mode(path: Path) -> int:
    """Permissions for a new file at ``path``: those of the regular file it replaces, else
    ``0o666`` less umask; never the set-user-ID or set-group-ID bits.

    A symbolic link at ``path`` is replaced, not followed, so its target's permissions do
    not count."""
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID)
    except OSError:
        pass
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomically(path: str | os.PathLike, write: Callable[[IO[Any]], None], *,
                     binary: bool = False, overwrite: bool = True) -> None:
    """Call ``write(fh)`` on a temporary file beside ``path``, then move it onto ``path``.

    ``fh`` is a binary file for ``binary=True``, else UTF-8 text (newlines untranslated).
    The content is flushed to disk (``fsync``) before the move, which replaces the entry
    ``path`` in one step: a symbolic link there is replaced by the file (its target is left
    as it was), and the file gets :func:`file_mode`'s permissions.  On any error the
    temporary file is removed and ``path`` is left as it was.

    ``overwrite=False`` refuses an existing ``path`` (a link, even a dangling one,
    included); the check and the move are one step where the file system has hard links.

    Raises
    ------
    FileExistsError
        If ``overwrite`` is false and ``path`` exists.
    OSError
        If the folder does not exist or is not writable, or the write fails.
    """
    path = Path(path)
    if not overwrite:
        _refuse_existing(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        mode = "wb" if binary else "w"
        kwargs = {} if binary else {"encoding": "utf-8", "newline": ""}
        with os.fdopen(fd, mode, **kwargs) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, file_mode(path))
        if overwrite:
            os.replace(tmp, path)
        else:
            _move_new(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _refuse_existing(path: Path) -> None:
    if os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, f"{path}: the file exists; pass overwrite=True "
                                            "to replace it", str(path))


def _move_new(tmp: str, path: Path) -> None:
    """Move ``tmp`` to ``path`` unless ``path`` exists (a hard link fails if it does)."""
    try:
        os.link(tmp, path, follow_symlinks=False)
    except FileExistsError:
        _refuse_existing(path)
        raise
    except OSError:  # no hard links here: check, then move
        _refuse_existing(path)
        os.replace(tmp, path)
    else:
        os.unlink(tmp)


def read_text(path: str | os.PathLike, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file ``path`` (at most ``max_bytes``).

    Raises
    ------
    FileNotFoundError, IsADirectoryError, OSError
        If it is missing, a folder, or not a regular file (FIFO, device, socket).
    ValueError
        If it is larger than ``max_bytes`` or not UTF-8.
    """
    path = Path(path)
    st = path.stat()
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{path}: is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"{path}: not a regular file")
    if st.st_size > max_bytes:
        raise ValueError(f"{path}: file of {st.st_size} bytes is larger than the limit of "
                         f"{max_bytes} bytes")
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{path}: file is larger than the limit of {max_bytes} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
