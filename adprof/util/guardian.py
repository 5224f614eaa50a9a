"""The guardian: kills what adprof started once adprof is gone, even after a SIGKILL (standard library only).

``python -S -I guardian.py RUN_ID`` is started by :mod:`adprof.util.procs` in its own session, with the
read end of a pipe as stdin whose write end only adprof holds. adprof writes ``+PGID`` / ``-PGID`` lines
as it starts and reaps process groups. At end of file (adprof exited, however it exited) the guardian
SIGKILLs the groups still registered and every process whose environment carries ``ADPROF_RUN=RUN_ID``
(inherited by everything adprof started, detached or not), until a few scans find nothing; then it removes the
temporary directories adprof registered (``D<hex path>`` lines, ``d`` when adprof removed one itself) and exits.
It ignores the terminal's signals: a Ctrl-C or a hang-up meant for adprof must not stop it first.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time

RUN_VAR = "ADPROF_RUN"
TEMP_PREFIX = b"adprof-"


def marked(marker: bytes, me: int) -> list[int]:
    """Live processes (not zombies) whose environment holds ``marker`` (one ``NAME=value`` entry)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if marker in env.split(b"\0"):
            found.append(int(entry))
    return found


def read_groups(dirs: set[bytes] | None = None) -> set[int]:
    """Follow adprof's ``+PGID`` / ``-PGID`` lines until end of file; the groups still registered. ``D<hex path>`` /
    ``d<hex path>`` lines add a temporary directory to ``dirs`` / take it away."""
    groups: set[int] = set()
    dirs = set() if dirs is None else dirs
    buf = b""
    while True:
        try:
            chunk = os.read(0, 4096)
        except InterruptedError:  # pragma: no cover - PEP 475 retries; kept for old interpreters
            continue
        except OSError:
            break
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if line[:1] in (b"D", b"d"):
                try:
                    path = bytes.fromhex(line[1:].decode("ascii"))
                except ValueError:
                    continue
                (dirs.add if line[:1] == b"D" else dirs.discard)(path)
                continue
            try:
                pgid = int(line[1:])
            except ValueError:
                continue
            if line.startswith(b"+"):
                groups.add(pgid)
            elif line.startswith(b"-"):
                groups.discard(pgid)
    return groups


def sweep(groups: set[int], marker: bytes, rounds: int = 3, seconds: float = 3.0) -> None:
    """SIGKILL the groups (twice: a member may fork once), then the marked processes until ``rounds``
    scans in a row find none alive (a zombie's environment is empty: it is not found again)."""
    end = time.monotonic() + seconds
    quiet = 0
    me = os.getpid()
    for turn in range(1000):
        if quiet >= rounds or time.monotonic() >= end:
            return
        if turn < 2:
            for pgid in groups:
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except OSError:
                    pass
        hit = False
        for pid in marked(marker, me):
            try:
                os.kill(pid, signal.SIGKILL)
                hit = True
            except OSError:
                pass
        quiet = 0 if hit else quiet + 1
        time.sleep(0.02)


def main(argv: list[str]) -> int:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP):
        signal.signal(sig, signal.SIG_IGN)
    if len(argv) != 2:
        return 2
    dirs: set[bytes] = set()
    groups = read_groups(dirs)
    sweep(groups, f"{RUN_VAR}={argv[1]}".encode())
    remove_dirs(dirs)
    return 0


def remove_dirs(dirs: set[bytes]) -> None:
    """Remove adprof's temporary directories (only directories named ``adprof-*``, never through a symlink)."""
    for path in dirs:
        if os.path.basename(path).startswith(TEMP_PREFIX) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
