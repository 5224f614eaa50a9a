"""The Python API (adprof.check, adprof.guard, adprof.load, adprof.compare) and shipping chains that live in no
file (adprof.chain.ship): the API's report is the command's (JSON against JSON, times masked), a notebook's
function reaches the workers as source or with cloudpickle, an unshippable one is one line, and nothing (no
process, no temporary file) outlives a call, Ctrl-C included."""

from __future__ import annotations

import glob
import json
import linecache
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import adprof
from adprof.chain import load_chains
from adprof.chain.ship import ShipError, Shipment, file_target, pickled_file, source_file
from tests.extras import require
from tests.fault_helpers import TAG_VAR, kill_tagged, leftovers, scaled_budget

REPO = Path(__file__).resolve().parents[1]

CHAIN_FILE = '''\
import adprof


@adprof.chain(input_shape=(3, 3), reuse=2, max_depth=8)
def square(xp, x, depth):
    """y <- (y*y)*0.5"""
    y = x
    for _ in range(depth):
        y = (y * y) * 0.5
    return xp.sum(y)
'''

#: A notebook's cell: globals of every kind a chain may use (a module, a constant, a helper, a closure).
CELL = '''\
import math

import numpy as np

import adprof

SCALE = 0.5


def halve(y):
    return y * SCALE


def make(k):
    def inner(xp, x, depth):
        y = x
        for _ in range(depth):
            y = halve(y * y) + 0.0 * k
        return xp.sum(y) * math.cos(0.0)
    return inner


@adprof.chain(input_shape=(3, 3), reuse=2, max_depth=8)
def square(xp, x, depth):
    """y <- (y*y)*0.5, through a helper"""
    y = x
    for _ in range(depth):
        y = halve(y * y)
    return xp.sum(y) * np.float64(1.0)


closure = make(3)
'''


def notebook(source: str = CELL, name: str = "<cell 1>") -> dict:
    """Run ``source`` as a notebook runs a cell: module ``__main__``, its lines in linecache (as IPython keeps them)."""
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    ns: dict = {"__name__": "__main__"}
    exec(compile(source, name, "exec"), ns)
    return ns


def numpy_value(ch, depth=3):
    from tests import numpy_xp as xp

    return float(ch.fn(xp, ch.make_input(), depth, **ch.params))


@pytest.fixture(autouse=True)
def _private_tempdir(tmp_path, monkeypatch):
    """Shipped chains land in this test's own temporary directory: another test running at the same time (the
    suite runs on two workers) ships and removes its own, which must not read as this test's leftovers."""
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    monkeypatch.setenv("TMPDIR", str(private))


def shipped_dirs() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "adprof-shipped-*")))


def children() -> list[str]:
    """This process's live children, but the guardian (adprof's watchdog) and the resource tracker."""
    me, out = str(os.getpid()), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        # the guardian and multiprocessing's resource tracker (started by another test in this process, e.g. a
        # peer library's pool) live as long as the test process: not a run's leftovers
        if stat[1] == me and stat[0] != "Z" and "guardian.py" not in cmd and "resource_tracker" not in cmd:
            out.append(f"{pid}: {cmd[:100]}")
    return out


# --------------------------------------------------------------------------- shipping (no measuring)


@pytest.mark.parametrize("method", ["source", "cloudpickle"])
def test_a_notebook_chain_ships_and_computes_the_same(tmp_path, method):
    if method == "cloudpickle":
        require("cloudpickle")
    ns = notebook()
    text = (source_file if method == "source" else pickled_file)(ns["square"])
    path = tmp_path / "shipped.py"
    path.write_text(text)
    (loaded,) = load_chains(path)  # found as the file's own chain, as the worker lists it
    assert loaded.name == "square" and loaded.reuse == 2 and loaded.depths == tuple(range(1, 9))
    assert loaded.description == "y <- (y*y)*0.5, through a helper"
    assert numpy_value(loaded) == pytest.approx(numpy_value(ns["square"]), rel=1e-15)
    if method == "source":  # what the file holds: the helper's source, the constant, the import; no decorator
        assert "def halve(y):" in text and "SCALE = 0.5" in text and "import numpy as np" in text
        assert "@adprof.chain" not in text


def test_a_closure_and_a_lambda_ship(tmp_path):
    ns = notebook()
    closure = adprof.chain(ns["closure"], name="closure")
    path = tmp_path / "c.py"
    path.write_text(source_file(closure))  # its cell: k = 3 and the helper
    assert "k = 3" in path.read_text()
    (loaded,) = load_chains(path)
    assert numpy_value(loaded) == pytest.approx(numpy_value(closure))
    lam = notebook("f = lambda xp, x, depth: xp.sum(x * depth)\n", "<cell 2>")["f"]
    path.write_text(source_file(adprof.chain(lam, name="lam")))
    (loaded,) = load_chains(path)
    assert loaded.name == "lam" and numpy_value(loaded) == pytest.approx(numpy_value(adprof.chain(lam)))


def test_a_lambda_closing_over_a_live_object_is_one_line():
    f = notebook("import threading\nlock = threading.Lock()\nf = lambda xp, x, depth: xp.sum(x) if lock else 0\n")["f"]
    with Shipment("auto") as shipment, pytest.raises(ShipError) as err:
        shipment.add(adprof.chain(f, name="locked"))
    msg = str(err.value)
    assert "\n" not in msg and "cannot send chain 'locked' to the measuring workers" in msg
    assert "source: the lambda uses 'lock', a lock" in msg  # why each method could not do it
    if "cloudpickle:" in msg:
        assert "cannot pickle '_thread.lock' object" in msg
    closure = (lambda lk: lambda xp, x, depth: xp.sum(x) if lk else 0)(threading.Lock())
    with Shipment("source") as shipment, pytest.raises(ShipError, match="holds 2 lambdas"):
        shipment.add(adprof.chain(closure, name="nested"))
    # the API says the same, one line, and leaves no temporary file
    before = shipped_dirs()
    with pytest.raises(adprof.UsageError, match="cannot send chain 'locked'"):
        adprof.check(adprof.chain(f, name="locked"))
    assert shipped_dirs() == before


def test_a_chain_in_a_file_is_loaded_from_it_not_shipped(tmp_path):
    (tmp_path / "sq.py").write_text(CHAIN_FILE)
    (ch,) = load_chains(tmp_path / "sq.py")
    assert file_target(ch) == f"{(tmp_path / 'sq.py').resolve()}::square"
    assert file_target(notebook()["square"]) is None  # __main__: shipped
    from probes import chains

    assert file_target(chains.mul) == f"{chains.__file__}::mul"


# --------------------------------------------------------------------------- the API against the command

TIME_KEYS = {
    "ratios",  # explained: the gradient/forward ratio of times, its slope and shape, a forward's timed growth
    "ratio_slope",
    "ratio_flat",
    "forward_phase",
    "forward_fit",
    "times",
    "cpu_times",
    "cpu_samples",
    "samples",
    "wall_seconds",
    "seconds",
    "elapsed_seconds",
    "machine",
    "time_fit",
    "phase_fits",
    "phase_shares",
    "growing_phase",
    "jumps",  # time jumps read against the deciding model (evidence; the counters decide)
    "peak_bytes",  # the worker's measured peak (noisy, as the times are; saved bytes are exact)
    "peak_fit",  # the memory verdict's reading of the peak
    "peak_agrees",
}


def masked(data, key=""):
    """The JSON report without what time decides (times, walls and re-measured walls, the time fits, the
    evidence lines that read them), the machine and its load, and the run's own argv."""
    if isinstance(data, dict):
        return {
            k: masked(v, k)
            for k, v in data.items()
            if k not in TIME_KEYS
            and not k.endswith("_seconds")
            and "wall" not in k
            and k not in ("argv", "file", "explained")  # program34: explained's readings (ratio, ...) read times
        }
    if isinstance(data, list):
        if key in ("evidence", "key_evidence"):
            pattern = r"\btime\b|\bwall\b|\d (ms|us|s)\b|peak bytes|grows the same way"  # times, peak, a timed forward
            return [v for v in data if not re.search(pattern, v)]
        return [masked(v) for v in data]
    return data


def differences(a, b, path="") -> list[str]:
    """Where two JSON values differ (``.results[0].points[6].status: 'exact' != 'censored'``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {str(a)[:120]!r} != {str(b)[:120]!r}"]


def _cli(tmp_path, *args):
    return subprocess.run(
        [sys.executable, "-m", "adprof", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_the_api_report_is_the_commands_json_with_times_masked(tmp_path):
    """``adprof check sq.py --mode traced --json`` and ``adprof.check`` on the same chain, loaded from its file
    and shipped from a notebook's cell: the same JSON once the times are masked (the counters decide)."""
    (tmp_path / "sq.py").write_text(CHAIN_FILE)
    run = _cli(tmp_path, "check", "sq.py", "--mode", "traced", "--json", "cli.json")
    assert run.returncode == 1, run.stderr  # v08's exponential transform
    cli = json.loads((tmp_path / "cli.json").read_text())
    (ch,) = load_chains(tmp_path / "sq.py")
    from_file = adprof.check(ch, mode="traced")
    assert [r.series.file for r in from_file.results] == [str((tmp_path / "sq.py").resolve())] * 2
    assert differences(masked(from_file.to_dict()), masked(cli)) == []
    before, running = shipped_dirs(), set(children())  # another test's Dask workers may still be exiting
    shipped = adprof.check(notebook(CHAIN_FILE, "<cell 7>")["square"], mode="traced")
    assert shipped_dirs() == before and set(children()) <= running
    assert [r.series.file for r in shipped.results] == ["<cell 7>", "<cell 7>"]
    assert shipped.environment["argv"] == ["adprof", "check", "<cell 7>::square", "--mode", "traced"]
    assert differences(masked(shipped.to_dict()), masked(cli)) == []
    verdicts = [(r.series.label, r.verdict.kind) for r in shipped.results]
    assert verdicts == [
        ("square [engine/v08, traced]", "exponential-transform"),
        ("square [engine/fixed, traced]", "linear"),
    ]
    assert shipped.results[0].verdict.fit.source == "counters"
    assert shipped.environment["versions"]["numpy"] == np.__version__


def test_the_report_object(tmp_path):
    ns = notebook()
    report = adprof.check(ns["square"], mode="traced", profile="v08", ship="source")
    assert isinstance(report, adprof.Report) and isinstance(report, adprof.model.Report)
    assert [r.verdict.kind for r in report.findings] == ["exponential-transform"] and not report.ok
    assert repr(report) == "<adprof Report: 1 series, 1 finding; print() it for the table>"
    bundle = report._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    assert '<span class="verdict verdict-exponential-transform">exponential-transform</span>' in bundle["text/html"]
    assert "<html" not in bundle["text/html"] and "<script" not in bundle["text/html"]  # a fragment, inline
    assert "adprof summary" in bundle["text/plain"] and "exponential-transform" in bundle["text/plain"]
    assert str(report) == report.text()
    assert json.loads(report.to_json(tmp_path / "r.json")) == report.to_dict()
    assert report.to_html().startswith("<!DOCTYPE html>")
    assert "| square | engine/v08 | traced | **exponential-transform** |" in report.to_markdown()
    loaded = adprof.load(tmp_path / "r.json")
    assert loaded.to_dict() == report.to_dict() and isinstance(loaded, adprof.Report)
    comparison = adprof.compare(tmp_path / "r.json", report)
    assert comparison.summary().startswith("0 regressed, 0 improved, 1 unchanged")
    assert "text/html" in comparison._repr_mimebundle_()
    require("matplotlib")
    fig = report.plot(tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 1000 and len(fig.axes) >= 1


def test_the_guard_api_returns_the_outcome_as_data(tmp_path):
    ns = notebook()
    outcome = adprof.guard(ns["square"], profile="v08", mode="traced", depths=[1, 2, 3, 4, 5, 6])
    assert not outcome.ok and len(outcome.checks) == 1
    (c,) = outcome.checks
    base = c.result.verdict.base
    assert base > 1.9 and c.measured == f"base {base:.2f} per layer" and "max base 1.10" in c.limit
    assert outcome.report is not None and outcome.report.results[0].series.file == "<cell 1>"
    # its own figures as the baseline: it holds
    held = adprof.guard(ns["square"], profile="v08", mode="traced", depths=[1, 2, 3, 4, 5, 6], baseline=outcome.report)
    assert held.ok and held.checks[0].baseline.startswith("the baseline ")
    assert "text/plain" in held._repr_mimebundle_()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda f: adprof.check(42), "not a chain, a function f(xp, x, depth) or 'FILE::CHAIN': int"),
        (lambda f: adprof.check("x.py", reuse=2), "chain options (reuse) apply to a function"),
        (lambda f: adprof.check(f, backend="nope"), "unknown backend 'nope'"),
        (lambda f: adprof.check(f, cap=-1), "argument --cap: expected a positive number"),
        (lambda f: adprof.check(f, mode="sideways"), "unknown mode 'sideways'"),
        (lambda f: adprof.check("/nonexistent/x.py"), "no such file"),
        (lambda f: adprof.check(f, ship="email"), "ship='email': expected one of auto, cloudpickle, source"),
        (lambda f: adprof.check([]), "no target"),
    ],
    ids=["not-a-chain", "options-on-a-file", "backend", "cap", "mode", "missing-file", "ship", "empty"],
)
def test_bad_input_is_one_usage_error(call, message):
    f = notebook()["square"]
    with pytest.raises(adprof.UsageError) as err:
        call(f)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_import_adprof_stays_light():
    """A worker and every chain file import adprof: the API, the CLI, rich and the measuring come on first use."""
    code = "import sys, adprof; print(sorted(m for m in sys.modules if m.startswith(('adprof', 'rich'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(REPO)})
    loaded = eval(out.stdout)
    assert not [
        m for m in loaded if m.startswith(("adprof.api", "adprof.cli", "adprof.measure", "adprof.render", "rich"))
    ]
    assert callable(adprof.check) and adprof.check is adprof.api.check


def test_deciding_a_time_series_never_imports_scipy():
    """The time reading's F quantiles come from a table (adprof.analysis.models.F95): scipy.stats costs 0.8-2.5 s
    to import, scipy.special 0.3-0.5 s, in every ``check`` that reads a time series (a small check's report process
    took 1.9 s of CPU with scipy.stats)."""
    code = (
        "import sys\n"
        "from adprof.analysis.growth import fit_growth\n"
        "fit = fit_growth([8, 16, 32, 64, 128], [[1.0 + d / 64, 1.01 + d / 64, 1.02 + d / 64] for d in "
        "[8, 16, 32, 64, 128]], source='time')\n"
        "print(fit.kind, any(m.startswith('scipy') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(REPO)})
    assert out.stdout.split() == ["linear", "False"], out.stderr


# --------------------------------------------------------------------------- Ctrl-C

SLOW = """\
import time
import adprof


@adprof.chain(max_depth=40, modes=("traced",))
def slow(xp, x, depth):
    with open("calls.txt", "a") as f:  # the test waits for a deeper call: a point measured, whatever the load
        print(depth, file=f)
    time.sleep(0.2 * depth)
    return xp.sum(x * 1.0)
"""

SCRIPT = """\
import sys, time
import adprof

print("started", flush=True)
try:
    adprof.check("slow.py::slow", profile="fixed", cap=30, budget=120, structure=False)
except adprof.Interrupted as exc:
    print("interrupted", exc.signal_name, len(exc.report.results), flush=True)
    sys.exit(0)
print("not interrupted", flush=True)
"""


def test_ctrl_c_stops_the_workers_and_keeps_the_partial_report(tmp_path):
    (tmp_path / "slow.py").write_text(SLOW)
    (tmp_path / "script.py").write_text(SCRIPT)
    tag = f"api-{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "PYTHONPATH": str(REPO), TAG_VAR: tag}
    proc = subprocess.Popen(
        [sys.executable, "script.py"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "started"
        calls, deadline = tmp_path / "calls.txt", time.monotonic() + 120
        while time.monotonic() < deadline and not _called_deeper_than(calls, 1):  # depth 1 measured: a point
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_tagged(tag)
    assert proc.returncode == 0, err[-2000:]
    assert out.strip().splitlines()[-1] == "interrupted SIGINT 1", out
    assert leftovers(tag, grace=scaled_budget(3.0)) == set()  # workers die as fast as the machine lets them


# --------------------------------------------------------------------------- helpers of this file


def _called_deeper_than(calls: Path, depth: int) -> bool:
    """The chain has been called at a depth over ``depth`` (its calls file says so)."""
    try:
        return any(int(line) > depth for line in calls.read_text().split())
    except (OSError, ValueError):
        return False


def test_the_cell_source_is_what_a_notebook_gives(tmp_path):
    """The fixture above is faithful: inspect finds the cell's source as IPython's linecache entry gives it."""
    import inspect

    ns = notebook(textwrap.dedent(CELL), "<cell 9>")
    assert inspect.getsource(ns["halve"]).startswith("def halve(y):")
