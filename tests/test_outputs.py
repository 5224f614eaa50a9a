"""One check of every output path, before measuring, for every command; no output overwrites an input;
every output is written to a temporary file in its directory and renamed, so that a reader or a second
run never sees it empty or partial.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from pathlib import Path

import pytest

from adprof.cli import main

REPO = Path(__file__).resolve().parents[1]
CHAINS = REPO / "probes" / "chains.py"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


VICTIM = """import adprof


@adprof.chain(input_shape=(3,), depths=(1, 2, 3))
def square(xp, x, depth):
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)
"""


@pytest.mark.parametrize(
    "option",
    [
        ["--json", "{victim}"],
        ["--json", "./{victim}"],
        ["--json", "r.html", "--html", "r.html"],
    ],
)
def test_no_output_overwrites_an_input_or_another_output(tmp_path, monkeypatch, capsys, option) -> None:
    """N16: `check victim.py::square --json victim.py` is bad input (exit 2) and the chain file is intact."""
    monkeypatch.chdir(tmp_path)
    victim = tmp_path / "victim_in.py"
    victim.write_text(VICTIM)
    before = _digest(victim)
    args = [a.format(victim=victim.name) for a in option]
    code = main(["check", f"{victim.name}::square", "--profile", "fixed", "--mode", "traced", "--no-structure", *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert _digest(victim) == before
    assert len([ln for ln in err.splitlines() if ln.startswith("adprof")]) == 1, err


def test_flame_outputs_are_checked_by_the_same_validator(tmp_path, monkeypatch, capsys) -> None:
    """flame -o, flame --cmd -o, check --json/--plot: the same check, the same kind of line, exit 2."""
    monkeypatch.chdir(tmp_path)
    chain = tmp_path / "c.py"
    chain.write_text(VICTIM)
    prog = tmp_path / "prog.sh"
    prog.write_text("#!/bin/sh\necho '{}'\n")
    prog.chmod(0o755)
    cases = [
        (["flame", "c.py::square", "--depth", "2", "-o", "c.py"], "is an input"),
        (["flame", "--cmd", "./prog.sh {depth}", "--depth", "2", "-o", "prog.sh"], "is an input"),
        (["flame", "c.py::square", "--depth", "2", "-o", str(tmp_path)], "is a directory"),
        (["flame", "--cmd", "./prog.sh {depth}", "--depth", "2", "-o", "no/such/x.svg"], "no such directory"),
        (["check", "c.py", "--plot", "/proc/x.png"], "kernel file system"),
        (["check", "c.py", "--json", "/proc/x.json"], "kernel file system"),
    ]
    before = (_digest(chain), _digest(prog))
    for argv, why in cases:
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2, (argv, err)
        assert why in err, (argv, err)
    assert (_digest(chain), _digest(prog)) == before


def test_write_atomic_never_shows_a_partial_file(tmp_path) -> None:
    """N17: two writers rewriting the same file while a reader polls it: every read is one whole version
    (main's write_text truncated in place: the reader saw it empty 711 times and partial once)."""
    from adprof.util.files import write_atomic

    target = tmp_path / "r.json"
    write_atomic(target, json.dumps({"v": -1, "pad": ""}))
    stop = threading.Event()
    bad: list[str] = []
    reads = [0]

    def reader() -> None:
        while not stop.is_set():
            try:
                text = target.read_text()
            except FileNotFoundError:
                bad.append("missing")
                continue
            reads[0] += 1
            try:
                json.loads(text)
            except ValueError:
                bad.append(text[:40])

    def writer(k: int) -> None:
        for i in range(150):
            write_atomic(target, json.dumps({"v": k * 1000 + i, "pad": "x" * 200_000}))

    threads = [threading.Thread(target=reader)] + [threading.Thread(target=writer, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads[1:]:
        t.join()
    stop.set()
    threads[0].join()
    assert reads[0] > 50 and not bad, f"{len(bad)} damaged reads of {reads[0]}: {bad[:3]}"
    assert not list(tmp_path.glob(".r.json.*")), "no temporary file is left"
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_every_writer_goes_through_write_atomic() -> None:
    """The commands write their outputs (JSON, HTML, plots, flame SVG/JSON/raw, flame --cmd SVG) only through
    adprof.util.files.write_atomic: no write_text/savefig-to-path left in the writing modules."""
    for rel in ("adprof/cli/common.py", "adprof/cli/cmd.py", "adprof/flame/command.py", "adprof/render/plot.py"):
        text = (REPO / rel).read_text()
        assert "write_atomic(" in text, rel
        assert ".write_text(" not in text and ".write_bytes(" not in text, rel
    plot = (REPO / "adprof/render/plot.py").read_text()
    assert "fig.savefig(path)" not in plot


@pytest.mark.slow
def test_concurrent_runs_never_show_a_partial_json(tmp_path) -> None:
    """N17 end to end: two adprof runs write the same --json while a reader polls it."""
    import subprocess

    from fault_helpers import base_env, command

    out = tmp_path / "r.json"
    args = ["check", f"{CHAINS}::sin", "--profile", "fixed", "--mode", "traced", "--no-structure"]
    args += ["--budget", "8", "--json", str(out)]
    procs = [
        subprocess.Popen(command(args), cwd=tmp_path, env=base_env(f"w{k}", None), stdout=subprocess.DEVNULL)
        for k in range(2)
    ]
    bad, reads = [], 0
    while any(p.poll() is None for p in procs):
        if out.exists():
            text = out.read_text()
            reads += 1
            try:
                json.loads(text)
            except ValueError:
                bad.append(text[:40])
        time.sleep(0.001)
    assert all(p.returncode in (0, 1) for p in procs), [p.returncode for p in procs]
    assert not bad, f"{len(bad)} damaged reads of {reads}"
    json.loads(out.read_text())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
