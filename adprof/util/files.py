"""Input and output files: one reader of every file a user names, one check of an output path for every
command, and writes that never leave a file half written.

:func:`read_input` (and :func:`read_json`, through it) reads every file a user names (a saved report, a
baseline, a shard; a chain file is checked by :func:`check_input_file`): a regular file only (a FIFO, a
device such as ``/dev/zero`` or a directory is one line, never a hang nor a MemoryError), at most
:data:`MAX_INPUT_BYTES`, then, for JSON, a schema check; every failure is :class:`InputFileError` (one line).

:func:`check_output_path` runs before anything is measured (bad input is one line and exit 2, never a
lost run): the path must name a regular file in a writable directory, of a known type where the
option has types, that is no file any argument names (:func:`named_paths`: a chain file, a report, a
baseline, every path in a ``--cmd`` program's words, links followed), no other output of the same run,
and no file of the form a run's own directory holds (:class:`OwnedDir`: hunt's findings).
:func:`write_atomic` writes a temporary file in the same directory and renames it over the path: a
reader, or a second run writing the same file at the same time, sees the old file or the new one, whole,
never an empty or partial one; a run killed while writing leaves the old file as it was. Text leaves
adprof through :func:`encode_text` (files) and :func:`write_stream` (streams): what an encoding cannot
hold, a lone surrogate included, is escaped, never an error.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

T = TypeVar("T")

#: The largest file adprof reads as input (a saved report, a baseline, a shard, a chain file): 256 MiB.
MAX_INPUT_BYTES = 256 * 2**20


class InputFileError(ValueError):
    """An input file that cannot be read as asked (``message``: one line naming the path and why)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _mib(n: int) -> str:
    """A size in words: ``300 MiB``, ``4096 bytes``."""
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n} bytes"


def _open_regular(path: str | Path, max_bytes: int) -> int:
    """A read-only descriptor of ``path``, a regular file of at most ``max_bytes``; raises InputFileError.
    Opened without blocking: a FIFO without a writer is refused at once, never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        with contextlib.suppress(OSError):  # a socket cannot be opened: say what it is
            mode = os.stat(path).st_mode
            if not stat.S_ISREG(mode):
                raise InputFileError(f"{path}: {_kind(mode)}, not a regular file: give a file") from None
        raise InputFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputFileError(f"{path}: {_kind(st.st_mode)}, not a regular file: give a file")
        if st.st_size > max_bytes:
            raise InputFileError(f"{path}: {_mib(st.st_size)}, more than the {_mib(max_bytes)} adprof reads")
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_input_file(path: str | Path, max_bytes: int | None = None) -> None:
    """Raise :class:`InputFileError` unless ``path`` is a regular file of at most ``max_bytes`` (default
    :data:`MAX_INPUT_BYTES`): a chain file before a worker imports it (a FIFO, ``/dev/zero`` or a directory is
    one line)."""
    os.close(_open_regular(path, MAX_INPUT_BYTES if max_bytes is None else max_bytes))


def read_input(path: str | Path, max_bytes: int | None = None) -> bytes:
    """The bytes of ``path``, a regular file of at most ``max_bytes`` (default :data:`MAX_INPUT_BYTES`; a file
    growing while it is read is cut at the cap, and refused); raises :class:`InputFileError` (one line)."""
    max_bytes = MAX_INPUT_BYTES if max_bytes is None else max_bytes
    fd = _open_regular(path, max_bytes)
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= max_bytes:
            chunk = os.read(fd, min(2**20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if size > max_bytes:
        raise InputFileError(f"{path}: more than the {_mib(max_bytes)} adprof reads (it grew while read)")
    return b"".join(chunks)


def read_json(path: str | Path, schema: Callable[[Any], T], max_bytes: int | None = None) -> T:
    """``schema`` of the JSON in ``path`` (read by :func:`read_input`); ``schema`` raises ValueError (one
    line) for data that does not fit it. Raises :class:`InputFileError`: ``PATH: why``."""
    data = read_input(path, max_bytes)
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark (an editor's) is not part of the JSON
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{path}: not a JSON report (not UTF-8: byte {exc.start})") from None
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise InputFileError(f"{path}: not a JSON report ({exc})") from None
    except RecursionError:  # nested deeper than Python's parser goes: no report is
        raise InputFileError(f"{path}: not a JSON report (nested too deeply)") from None
    try:
        return schema(parsed)
    except InputFileError:
        raise
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise InputFileError(f"{path}: {exc}") from None


class OutputPathError(ValueError):
    """An output path that cannot be written (``message``: one line naming the option and the path)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file: the same path once symbolic links are resolved, or a hard link."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except (OSError, RuntimeError):  # RuntimeError: a symbolic link loop (Python 3.11's resolve)
        return False


@dataclass(frozen=True)
class OwnedDir:
    """A directory a run writes files of its own into (``hunt --out``: ``NNNN_<engine>_<mode>.py``): no other
    output may be such a file there (it would replace one, or be replaced)."""

    option: str
    path: str
    names: re.Pattern[str]
    what: str


#: The name of a hunt's finding file, ``NNNN_<engine>_<mode>.py`` (its number of any width: ``10000_...``).
FINDING_FILE = re.compile(r"([0-9]+)_.*\.py")

#: How deep :func:`named_paths` reads shell commands inside arguments (``sh -c '... sh -c "..."'``).
_SHELL_DEPTH = 4


#: What may stand around a path inside an argument: quotes, brackets, separators (``open("in.json")``,
#: ``--data=x.json``, ``PYTHONPATH=a:b``, ``f(x.json,y.json)``).
_AROUND_PATHS = re.compile(r"""[^\s'"`()\[\]{},;=:<>|&]+""")


def _named(word: str, depth: int) -> Iterator[str]:
    yield word
    yield from _AROUND_PATHS.findall(word)  # --data=PATH, VAR=PATH, a:b, open("PATH") in a -c program
    if len(word) > 2 and word[0] == "-" and word[1].isalpha():  # -oPATH
        yield word[2:]
    if depth < _SHELL_DEPTH and any(c.isspace() for c in word):  # sh -c 'prog --data=x.json'
        try:
            words = shlex.split(word)
        except ValueError:
            words = word.split()
        for w in words:
            yield from _named(w, depth + 1)


def named_paths(arguments: Iterable[str]) -> list[str]:
    """Every existing file (or symbolic link) that ``arguments`` may name: an argument itself, every run of path
    characters in it (the value of ``--opt=PATH``, ``VAR=PATH``, ``a:b`` lists, ``open("PATH")`` in a ``-c``
    program), ``-oPATH``, and the words of a shell command inside one (``sh -c 'prog --data=x.json'``), read again
    the same way. Only what exists counts. No output may overwrite one of them."""
    found: dict[str, None] = {}
    for argument in arguments:
        for word in _named(argument, 0):
            if word and "\0" not in word and os.path.lexists(word):
                found.setdefault(word, None)
    return list(found)


def _writable_place(option: str, path: str, suffixes: Sequence[str] | None) -> Path:
    """``path`` resolved, when a regular file of a known type can be written there; else OutputPathError."""
    if "\0" in path:
        raise OutputPathError(f"{option} {path!r}: a path cannot hold a NUL byte")
    p = Path(path)
    if suffixes is not None and p.suffix.lower() not in suffixes:
        raise OutputPathError(f"{option} {path}: unknown file type {p.suffix or '(none)'!r}; use {', '.join(suffixes)}")
    if p.is_dir():
        raise OutputPathError(f"{option} {path}: is a directory (give a file name)")
    if p.exists() and not p.is_file():
        raise OutputPathError(f"{option} {path}: not a regular file (cannot write a report there)")
    try:
        resolved = p.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise OutputPathError(f"{option} {path}: cannot write there ({exc})") from None
    parent = resolved.parent
    if not parent.is_dir():
        raise OutputPathError(f"{option} {path}: cannot write there (no such directory {p.parent})")
    if parent.is_relative_to("/proc") or parent.is_relative_to("/sys") or parent.is_relative_to("/dev"):
        raise OutputPathError(f"{option} {path}: cannot write there (a kernel file system)")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise OutputPathError(f"{option} {path}: cannot write there (permission denied)")
    return resolved


def check_output_path(
    option: str,
    path: str | None,
    suffixes: Sequence[str] | None = None,
    *,
    inputs: Iterable[str | Path] = (),
    others: Iterable[tuple[str, str | None]] = (),
    owned: Iterable[OwnedDir] = (),
    stdout_ok: bool = False,
) -> None:
    """Raise :class:`OutputPathError` unless ``path`` can be written as the output of ``option``.

    ``suffixes``: the file types the option writes (``.html``, ...); ``inputs``: files the run reads or any
    argument names (:func:`named_paths`), never to be overwritten; ``others``: ``(option, path)`` of the run's
    other outputs, which must be other files; ``owned``: directories the run fills with files of its own;
    ``stdout_ok``: ``-`` means stdout. Symbolic links and hard links are followed: a link to an input is it."""
    if path is None or (path == "-" and stdout_ok):
        return
    if not path:
        raise OutputPathError(f"{option}: empty path")
    resolved = _writable_place(option, path, suffixes)
    p = Path(path)
    for given in inputs:
        if given and same_file(p, Path(given)):
            raise OutputPathError(f"{option} {path}: is an input of this run ({given}); it would be overwritten")
    for other_option, other in others:
        if other and other != "-" and other_option != option and same_file(p, Path(other)):
            raise OutputPathError(f"{option} {path}: the same file as {other_option} {other}")
    for d in owned:
        try:
            inside = resolved.parent == Path(d.path).resolve()
        except (OSError, RuntimeError):
            inside = False
        if inside and d.names.fullmatch(resolved.name):
            raise OutputPathError(
                f"{option} {path}: inside {d.option} {d.path}, named like its {d.what}: it would replace one, "
                f"or be replaced; give another name or directory"
            )


def encode_text(text: str, encoding: str = "utf-8") -> bytes:
    """``text`` as bytes of ``encoding``, whatever it holds: a character the encoding lacks, or a lone surrogate
    (a chain name from undecodable bytes, ``\\udcff``), is written as its ``\\x``/``\\u`` escape, never an
    error after the measuring. Every file and stream adprof writes goes through it."""
    return text.encode(encoding, errors="backslashreplace")


def encodable(text: str, encoding: str = "utf-8") -> str:
    """``text`` with what ``encoding`` cannot hold escaped (:func:`encode_text`): for libraries that take text,
    not bytes (matplotlib)."""
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return encode_text(text, encoding).decode(encoding)
    return text


def write_stream(stream: IO[str], text: str) -> None:
    """Write ``text`` to a text stream (stdout) and flush it; what the stream's encoding cannot hold is escaped
    (:func:`encode_text`)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        stream.write(text)
    except UnicodeEncodeError:
        stream.write(encodable(text, encoding))
    stream.flush()


def write_atomic(path: str | Path, data: str | bytes, encoding: str = "utf-8") -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory, renamed over it (text:
    :func:`encode_text`, never a UnicodeEncodeError).

    The file gets the mode a plain ``open(path, "w")`` would give (an existing file keeps its own);
    a symbolic link is followed (its target is replaced). Raises OSError (the temporary file removed)."""
    target = Path(path)
    if target.is_symlink():
        target = target.resolve()
    payload = encode_text(data, encoding) if isinstance(data, str) else data
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
