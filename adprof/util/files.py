"""Output files: one check of an output path for every command, and writes that never leave a file half
written.

:func:`check_output_path` runs before anything is measured (bad input is one line and exit 2, never a
lost run): the path must name a regular file in a writable directory, of a known type where the
option has types, that is none of the run's inputs (a chain file, a program) and no other output of
the same run. :func:`write_atomic` writes a temporary file in the same directory and renames it over
the path: a reader, or a second run writing the same file at the same time, sees the old file or the
new one, whole, never an empty or partial one; a run killed while writing leaves the old file as it was.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path


class OutputPathError(ValueError):
    """An output path that cannot be written (``message``: one line naming the option and the path)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except (OSError, RuntimeError):  # RuntimeError: a symbolic link loop (Python 3.11's resolve)
        return False


def check_output_path(
    option: str,
    path: str | None,
    suffixes: Sequence[str] | None = None,
    *,
    inputs: Iterable[str | Path] = (),
    others: Iterable[tuple[str, str | None]] = (),
    stdout_ok: bool = False,
) -> None:
    """Raise :class:`OutputPathError` unless ``path`` can be written as the output of ``option``.

    ``suffixes``: the file types the option writes (``.html``, ...); ``inputs``: files the run reads,
    never to be overwritten; ``others``: ``(option, path)`` of the run's other outputs, which must be
    other files; ``stdout_ok``: ``-`` means stdout."""
    if path is None or (path == "-" and stdout_ok):
        return
    if not path:
        raise OutputPathError(f"{option}: empty path")
    p = Path(path)
    if suffixes is not None and p.suffix.lower() not in suffixes:
        raise OutputPathError(f"{option} {path}: unknown file type {p.suffix or '(none)'!r}; use {', '.join(suffixes)}")
    if p.is_dir():
        raise OutputPathError(f"{option} {path}: is a directory (give a file name)")
    if p.exists() and not p.is_file():
        raise OutputPathError(f"{option} {path}: not a regular file (cannot write a report there)")
    try:
        parent = p.resolve().parent
    except RuntimeError:  # a symbolic link loop
        raise OutputPathError(f"{option} {path}: cannot write there (a symbolic link loop)") from None
    if not parent.is_dir():
        raise OutputPathError(f"{option} {path}: cannot write there (no such directory {p.parent})")
    if parent.is_relative_to("/proc") or parent.is_relative_to("/sys") or parent.is_relative_to("/dev"):
        raise OutputPathError(f"{option} {path}: cannot write there (a kernel file system)")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise OutputPathError(f"{option} {path}: cannot write there (permission denied)")
    for given in inputs:
        if given and _same_file(p, Path(given)):
            raise OutputPathError(f"{option} {path}: is an input of this run ({given}); it would be overwritten")
    for other_option, other in others:
        if other and other != "-" and other_option != option and _same_file(p, Path(other)):
            raise OutputPathError(f"{option} {path}: the same file as {other_option} {other}")


def write_atomic(path: str | Path, data: str | bytes, encoding: str = "utf-8") -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory, renamed over it.

    The file gets the mode a plain ``open(path, "w")`` would give (an existing file keeps its own);
    a symbolic link is followed (its target is replaced). Raises OSError (the temporary file removed)."""
    target = Path(path)
    if target.is_symlink():
        target = target.resolve()
    payload = data.encode(encoding) if isinstance(data, str) else data
    try:
        mode = target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
