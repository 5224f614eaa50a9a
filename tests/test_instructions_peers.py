"""``adprof check FILE --metric instructions``: the peers' C++ phases counted under callgrind, end to end.

One valgrind'd worker per series counts each depth once (adprof/backends/instructions.py). Scaling facts
are asserted on the counts, and their determinism by equality between two runs. torch eager and JAX
compile run under ``-m slow`` (importing torch or jax under valgrind takes 30-60 s); the default run's
representative is autograd eager (pure Python, a few seconds), which drives the same mechanism.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from extras import require, requires

from adprof.backends.instructions import ClientRequests, CountingUnavailable, counter, fill_counts
from adprof.cli import main
from adprof.constants import NOMINAL_INSTRUCTION_RATE

ROOT = Path(__file__).resolve().parents[1]
CHAINS = ROOT / "probes" / "chains.py"
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")


def needs(module: str) -> pytest.MarkDecorator:
    return requires(module)


def _check(tmp_path: Path, *argv: str) -> tuple[int, dict]:
    out_json = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.json"
    rc = main(["check", *argv, "--metric", "instructions", "--no-color", "--json", str(out_json)])
    return rc, json.loads(out_json.read_text())


def _counts(result: dict) -> dict[int, dict]:
    return {p["depth"]: p["metrics"] for p in result["points"]}


def _decided_by_instructions(r: dict, phase: str) -> None:
    assert not r["error"], r["error"]
    assert r["required_metric"] == "instructions" and r["fit"]["source"] == "metric"
    assert r["metric"] == f"instructions: {phase}"
    assert all(p["metrics"][phase.split("+")[0]]["instructions"] > 0 for p in r["points"])
    assert r["clock"].startswith("nominal")  # times are the counts at a nominal speed, no clock read


# ---------------------------------------------------------------------------------------------------
# the client requests and the parent's reading of the dumps (no valgrind needed)


def test_client_requests_are_no_ops_outside_valgrind():
    req = ClientRequests()
    assert req.running_on_valgrind() is False
    req.zero_stats()  # the magic sequence runs natively as a no-op (a wrong stub would crash here)
    req.dump_stats_at("nothing")
    assert req.request(0x1001, default=7) == 7  # natively the default comes back


def test_no_silent_fallback_outside_callgrind(monkeypatch):
    monkeypatch.delenv("ADPROF_COUNTING", raising=False)
    with pytest.raises(CountingUnavailable, match="does not run under callgrind"):
        counter()
    require("autograd")  # the peer that shows it (the peers extra)
    from adprof.backends.autograd_backend import measure_point
    from adprof.backends.base import PointFailure
    from adprof.chain import load_chains

    sin = load_chains(str(CHAINS), ["sin"])[0]
    with pytest.raises(PointFailure) as info:
        measure_point(sin, "eager", 8, metric="instructions")
    assert info.value.kind == "metric" and "\n" not in info.value.message


def test_counting_workers_read_the_bytecode_the_command_compiled_and_write_none(monkeypatch):
    """compile_bytecode writes under this process's ``sys.pycache_prefix``: the counting worker reads there, and
    never writes a cache that another counting worker would then read."""
    from adprof.measure.client import counting_env

    monkeypatch.setattr(sys, "pycache_prefix", "/somewhere/pycache")
    env = counting_env({"PATH": "/bin", "PYTHONPYCACHEPREFIX": "/elsewhere", "PYTHONDONTWRITEBYTECODE": ""})
    assert env["PYTHONPYCACHEPREFIX"] == "/somewhere/pycache" and env["PYTHONDONTWRITEBYTECODE"] == "1"
    monkeypatch.setattr(sys, "pycache_prefix", None)
    env = counting_env({"PATH": "/bin", "PYTHONPYCACHEPREFIX": "/elsewhere"})
    assert "PYTHONPYCACHEPREFIX" not in env and env["PYTHONDONTWRITEBYTECODE"] == "1"  # next to the sources


def test_fill_counts_reads_each_dump_once_and_checks_its_label(tmp_path):
    out = tmp_path / "callgrind.out"
    (tmp_path / "callgrind.out.1").write_text(
        "# callgrind format\ndesc: Trigger: Client Request: backward depth 8\nsummary: 999\n\nfn=f\n1 5\ntotals: 1234\n"
    )
    point = {
        "depth": 8,
        "times": {},
        "metrics": {},
        "extra": {"callgrind_dumps": {"backward": [1, "backward depth 8"]}},
    }
    fill_counts(point, str(out))
    assert point["metrics"] == {"backward": {"instructions": 1234}}  # totals, not the header's summary
    assert point["times"]["backward"] == pytest.approx(1234 / NOMINAL_INSTRUCTION_RATE)
    assert "callgrind_dumps" not in point["extra"] and not (tmp_path / "callgrind.out.1").exists()
    (tmp_path / "callgrind.out.2").write_text("desc: Trigger: Client Request: forward depth 9\ntotals: 5\n")
    wrong = {"depth": 8, "extra": {"callgrind_dumps": {"backward": [2, "backward depth 8"]}}}
    with pytest.raises(CountingUnavailable, match="is not that of backward depth 8"):
        fill_counts(wrong, str(out))


# ---------------------------------------------------------------------------------------------------
# bad input: one line, exit 2


def _usage_error(capsys, *argv: str) -> str:
    rc = main(list(argv))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("adprof: error: "), err
    return err[0]


def test_backend_that_cannot_count_is_exit_2(capsys):
    line = _usage_error(capsys, "check", f"{CHAINS}::sin", "--backend", "engine", "--metric", "instructions")
    assert "cannot count engine traced, eager (it counts: no mode)" in line


def test_other_commands_on_a_chain_file_are_exit_2(capsys):
    line = _usage_error(capsys, "ratio", f"{CHAINS}::sin", "--metric", "instructions")
    assert (
        line
        == "adprof: error: --metric instructions on a chain file: use adprof check (ratio counts --cmd programs only)"
    )


@needs("autograd")
def test_no_valgrind_is_exit_2(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    line = _usage_error(capsys, "check", f"{CHAINS}::sin", "--backend", "autograd", "--metric", "instructions")
    assert line == "adprof: error: --metric instructions needs valgrind (not found on PATH)"


# ---------------------------------------------------------------------------------------------------
# the default run's representative: autograd eager (pure Python), two series counted side by side


@needs_valgrind
@needs("autograd")
def test_autograd_counts_identical_in_two_workers(tmp_path, monkeypatch):
    """The same chain in two files of equal path length, counted by two valgrind'd workers at once (one
    per lane): linear, decided by instructions, and the counts equal depth by depth. Under a bytecode cache of
    its own (``PYTHONPYCACHEPREFIX``), cold: the workers used to look for adprof's bytecode next to its sources,
    compiled what they did not find there, and wrote it while the other read it (counts ~0.1% apart)."""
    prefix = str(tmp_path / "pycache")
    monkeypatch.setattr(sys, "pycache_prefix", prefix)  # where this process (the command) compiles adprof
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", prefix)
    src = CHAINS.read_text()
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "chains.py").write_text(src)
    targets = [f"{tmp_path / d / 'chains.py'}::sin" for d in ("a", "b")]
    rc, report = _check(tmp_path, *targets, "--backend", "autograd", "--depths", "8,16,32,64", "--jobs", "2")
    first, second = report["results"]
    for r in (first, second):
        assert r["verdict"] == "linear", r["evidence"]
        _decided_by_instructions(r, "backward")
        assert [p["depth"] for p in r["points"]] == [8, 16, 32, 64]
    assert _counts(first) == _counts(second)  # equality, not closeness
    counts = sorted((d, m["backward"]["instructions"]) for d, m in _counts(first).items())
    marginal = [(c2 - c1) / (d2 - d1) for (d1, c1), (d2, c2) in zip(counts, counts[1:], strict=False)]
    assert max(marginal) / min(marginal) < 1.1  # linear: the same instructions per added layer
    assert rc == 0


# ---------------------------------------------------------------------------------------------------
# the acceptance runs (slow): torch eager's C++ backward, XLA's compile


@needs_valgrind
@needs("torch")
@pytest.mark.slow
def test_torch_eager_sin_linear_identical_in_two_runs(tmp_path):
    """``adprof check probes/chains.py::sin --backend torch --mode eager --metric instructions``, twice."""
    runs = [_check(tmp_path, f"{CHAINS}::sin", "--backend", "torch", "--mode", "eager")[1]["results"][0] for _ in "ab"]
    for r in runs:
        assert r["verdict"] == "linear", r["evidence"]
        _decided_by_instructions(r, "backward")
        assert [p["depth"] for p in r["points"]][:5] == [25, 50, 100, 200, 400]
    assert _counts(runs[0]) == _counts(runs[1])


@needs_valgrind
@needs("jax")
@pytest.mark.slow
def test_jax_compile_sin_superlinear(tmp_path):
    """``adprof check probes/chains.py::sin --backend jax --mode compile --metric instructions``: XLA's compile
    grows superlinearly, exponent in [1.3, 2.2] (time reads about d^1.7; call counts see none of it)."""
    _, report = _check(tmp_path, f"{CHAINS}::sin", "--backend", "jax", "--mode", "compile")
    r = report["results"][0]
    assert r["verdict"] == "superlinear-transform", r["evidence"]
    _decided_by_instructions(r, "transform+lower+compile+drop")
    assert 1.3 <= r["exponent"] <= 2.2
    compile_counts = [p["metrics"]["compile"]["instructions"] for p in r["points"]]
    assert compile_counts == sorted(compile_counts) and len(compile_counts) >= 4


@needs_valgrind
@needs("autograd")
def test_counting_worker_dies_with_adprof():
    """The valgrind'd worker's watchdog sleeps in poll() on its request pipe (no wake-ups that would be
    counted): when adprof is SIGKILLed while the worker is busy in a chain, the pipe hangs up and the
    worker kills its group."""
    import contextlib
    import os
    import signal
    import subprocess
    import sys
    import time

    hang = ROOT / "tests" / "chains_bad" / "hang.py"
    request = {"op": "point", "file": str(hang), "chain": "hangs", "backend": "autograd", "profile": None}
    request.update({"mode": "eager", "depth": 1, "calls": 2, "metric": "instructions"})
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import json, sys\n"
            "from adprof.measure.client import Worker\n"
            "w = Worker(); w.count_instructions(True)\n"
            "def seen(ev):\n"
            "    print(ev.get('event'), w.proc.pid, flush=True)\n"
            f"w.request(json.loads({json.dumps(json.dumps(request))}), 600, seen)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    event, pid = parent.stdout.readline().split()  # the chain is loaded: the worker is about to spin in it
    worker = int(pid)
    argv = Path(f"/proc/{worker}/cmdline").read_bytes().decode().split("\0")
    out_dir = Path(next(a for a in argv if a.startswith("--callgrind-out-file=")).split("=", 1)[1]).parent
    time.sleep(1.0)
    parent.kill()
    parent.wait()

    def running() -> bool:  # a zombie is dead (this process may be the subreaper it was re-parented to)
        try:
            state = Path(f"/proc/{worker}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state not in (b"Z", b"X")

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and running():
        time.sleep(0.2)
    alive = running()
    if alive:
        os.kill(worker, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(worker, 0)  # reap it if it was re-parented to us
    shutil.rmtree(out_dir, ignore_errors=True)  # a SIGKILLed adprof cannot remove its temporary directory
    assert event == "loaded" and not alive, "the counting worker outlived adprof"
