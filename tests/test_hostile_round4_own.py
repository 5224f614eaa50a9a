"""Regression tests of the failures the fourth hostile round (benchmarks/hostile_round4.py) found, one per class.

Each test is named after what it covers and fails on fc6d0bb. The round's table and results:
benchmarks/hostile_round4.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adprof import model
from adprof.analysis.classify import decide
from adprof.cli import main
from adprof.model import CensorReason, Point, PointStatus, Series, Stop, StopReason

SIN = "    y = x\n    for _ in range(depth):\n        y = xp.sin(y)\n    return xp.sum(y)\n"


def _chain_file(tmp_path: Path, name: str, body: str, decorator: str = "input_shape=(3,), depths=(1, 2, 3)") -> Path:
    path = tmp_path / f"{name}.py"
    head = "import os\nimport sys\n\nimport adprof\n\n\n"
    path.write_text(f"{head}@adprof.chain({decorator})\ndef {name}(xp, x, depth):\n{body}{SIN}")
    return path


def _check(tmp_path: Path, target: Path, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "r.json"
    code = main(
        [
            "check",
            str(target),
            "--profile",
            "fixed",
            "--mode",
            "traced",
            "--no-structure",
            "--no-color",
            "--budget",
            "20",
            "--cap",
            "1",
            "--json",
            str(out),
            *extra,
        ]
    )
    return code, json.loads(out.read_text())


# ------------------------------------------------------------------ a kill right after the first depth


def _first_depth_then_killed(first_wall: float) -> Series:
    """Depth 1 measured in about a millisecond of phases (its wall ``first_wall``: the worker's start-up is in
    it), then depth 2 killed in ``record`` at its 4 s timeout."""
    times = {"record": 2e-4, "transform": 4e-4, "drop": 8e-5}
    s = Series(
        "c",
        "engine",
        "fixed",
        "traced",
        points=[
            Point(
                depth=1,
                times=times,
                counters={"transform": {"key_comparisons": 10}},
                wall_seconds=first_wall,
            ),
            Point(
                depth=2,
                times={"record": 4.0},
                wall_seconds=4.01,
                status=PointStatus.KILLED,
                censor_reason=CensorReason.TIMEOUT,
                censored_phase="record",
            ),
        ],
    )
    s.stop = Stop(StopReason.TIMEOUT, after=1, depth=2, phase="record", seconds=4.0, limit=4.0)
    return s


@pytest.mark.parametrize("first_wall", [3.06, 0.002])
def test_kill_after_one_depth_is_a_runaway_whatever_the_first_wall(first_wall):
    """A chain that hangs at depth 2 (it stopped itself, recursed for ever, waited on a lock) read
    "inconclusive", exit 0, when depth 1's wall held the worker's start-up (3 s on a loaded machine): the kill
    was compared with the wall of the depth below, scaled by a generous power law, and "predicted". The
    killed phase is compared with the same phase below it."""
    v = decide(_first_depth_then_killed(first_wall))
    assert v.kind == model.RUNAWAY and v.killed and v.is_finding, (v.kind, v.reason)
    assert "depth 2 killed" in v.reason


def test_kill_the_phase_predicts_is_still_explained():
    """The other side: a kill that the killed phase's own times predict stays what the depths predict."""
    s = _first_depth_then_killed(3.0)
    s.points[0].times["record"] = 1.5  # depth 1's record took 1.5 s: 4 s at depth 2 is no hang
    v = decide(s)
    assert v.kind != model.RUNAWAY, v.reason


# ------------------------------------------------------------------ a chain that reads its stdin


@pytest.mark.parametrize("read", ["sys.stdin.readline()", pytest.param("os.read(0, 10)", marks=pytest.mark.slow)])
def test_chain_reading_stdin_reads_end_of_file(tmp_path, read):
    """The worker's stdin was the request pipe: a chain reading its stdin waited for the next request (which
    adprof sends only after the answer), was killed, and a healthy chain read ``error: the chain hangs``."""
    path = _chain_file(tmp_path, "reads", f"    {read}\n")
    code, report = _check(tmp_path, path)
    (row,) = report["results"]
    assert row["error"] is None and row["verdict"] == "linear", row["error"]
    assert code == 0


# ------------------------------------------------------------------ chain files Python imports


@pytest.mark.parametrize(
    "encode",
    [
        pytest.param(lambda src: b"\xef\xbb\xbf" + src.encode(), id="utf8-bom"),
        pytest.param(
            lambda src: ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + src).encode("latin-1"), id="latin1-cookie"
        ),
        pytest.param(lambda src: ("# vim: set fileencoding=cp1252 :\n# \u20ac\n" + src).encode("cp1252"), id="cp1252"),
        pytest.param(lambda src: src.replace("\n", "\r\n").encode(), id="crlf"),
    ],
)
def test_chain_file_in_any_encoding_python_imports_loads(tmp_path, encode):
    """adprof read a chain file as UTF-8 text: a BOM was "syntax error ... U+FEFF" and a PEP 263 coding cookie
    "cannot read: 'utf-8' codec can't decode", exit 2, on files Python imports."""
    from adprof.chain import load_chains

    src = _chain_file(tmp_path, "enc", "").read_text()
    path = tmp_path / "encoded.py"
    path.write_bytes(encode(src))
    assert [c.name for c in load_chains(path)] == ["enc"]


@pytest.mark.parametrize("data", [b"x = 1\x00\n", "x = 1\n".encode("utf-16")])
def test_chain_file_with_null_bytes_is_one_syntax_line(tmp_path, data):
    from adprof.chain import ChainSyntaxError, load_chains

    path = tmp_path / "nul.py"
    path.write_bytes(data)
    with pytest.raises(ChainSyntaxError) as info:
        load_chains(path)
    assert "line None" not in str(info.value) and "\n" not in str(info.value)


# ------------------------------------------------------------------ chain names


@pytest.mark.parametrize("name", [3, "", "   ", b"x", ["x"]])
def test_chain_name_option_must_be_a_non_empty_string(name):
    """``name=3`` was an internal error (exit 3, a TypeError in a regex) after measuring; ``name=''`` silently
    became the function's name."""
    import adprof
    from adprof.chain import ChainError

    def f(xp, x, depth):
        return xp.sum(x)

    with pytest.raises(ChainError) as info:
        adprof.chain(f, name=name)
    assert "name" in str(info.value) and "\n" not in str(info.value)


def test_function_found_by_name_is_named_so(tmp_path):
    """``x.py::f`` where ``f = lambda xp, x, depth: ...``: the chain was named ``<lambda>``, and the worker, which
    looks chains up by name, answered "no chain or function named '<lambda>'" (exit 1 on a healthy chain)."""
    from adprof.chain import load_chains

    path = tmp_path / "lam.py"
    path.write_text(
        "f = lambda xp, x, depth: xp.sum(xp.sin(x))\n\ndef g(xp, x, depth):\n    return xp.sum(x)\n\nh = g\n"
    )
    assert [c.name for c in load_chains(path, ["f", "h"])] == ["f", "h"]
    (again,) = load_chains(path, ["f"])
    assert again.name == "f"


# ------------------------------------------------------------------ symbolic link loops


def test_symlink_loop_as_input_or_output_is_one_line(tmp_path):
    """``adprof check loop.py --json r.json`` with ``loop.py -> loop.py``: ``RuntimeError: Symlink loop``,
    an internal error (exit 3), from the check that an output is none of the inputs (Python 3.11's resolve)."""
    from adprof.util.files import OutputPathError, check_output_path

    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    check_output_path("--json", str(tmp_path / "r.json"), inputs=[tmp_path / "loop.py"])  # not the same file
    (tmp_path / "a.json").symlink_to(tmp_path / "b.json")
    (tmp_path / "b.json").symlink_to(tmp_path / "a.json")
    with pytest.raises(OutputPathError) as info:
        check_output_path("--json", str(tmp_path / "a.json"))
    assert "loop" in info.value.message
    assert main(["check", str(tmp_path / "loop.py"), "--json", str(tmp_path / "r.json")]) == 2


# ------------------------------------------------------------------ a chain that patches the array namespace


def test_chain_patching_xp_does_not_break_the_next_chain(tmp_path, monkeypatch):
    """``xp.sin = None`` in one chain made every chain measured after it in the same worker an ``error``
    ("'NoneType' object is not callable"): the worker restored the clock and the cwd after a request, not the
    array namespace all chains share. Two point requests to one worker, in-process."""
    import io

    import adprof.backends.engine  # noqa: F401 - as the worker imports it before its first request
    from adprof.measure import worker

    monkeypatch.setattr(worker, "_freeze", lambda: None)
    path = tmp_path / "patch.py"
    path.write_text(
        "import numpy\nimport adprof\n\n\n@adprof.chain(input_shape=(3,), depths=(1, 2))\n"
        "def a_patch(xp, x, depth):\n    xp.sin = None\n    numpy.sin = None\n    return xp.sum(x)\n\n\n"
        f"@adprof.chain(input_shape=(3,), depths=(1, 2))\ndef b_ok(xp, x, depth):\n{SIN}"
    )
    out = io.StringIO()
    w = worker._Worker(out)
    for name in ("a_patch", "b_ok"):
        w.handle(
            {"op": "point", "file": str(path), "chain": name, "backend": "engine", "profile": "fixed"}
            | {"mode": "traced", "depth": 2, "calls": 1}
        )
    answers = [json.loads(line) for line in out.getvalue().splitlines() if '"ok"' in line]
    assert [a["ok"] for a in answers] == [True, True], answers[-1]
    import numpy

    assert callable(numpy.sin)


# ------------------------------------------------------------------ the environment: streams, flags, -OO


def _empty_report(path: Path) -> Path:
    from adprof.api import Report
    from adprof.report import build_report

    Report.of(build_report([], {}, notes=["nothing measured"])).to_json(str(path))
    return path


def test_stdout_that_cannot_be_written_is_one_line_not_an_internal_error(tmp_path):
    """``adprof check ... > /dev/full``: "internal error: OSError: [Errno 28] No space left on device", exit 3."""
    import subprocess
    import sys

    saved = _empty_report(tmp_path / "r.json")
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-P", "-m", "adprof", "report", str(saved), "--no-color"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == ["adprof: error: cannot write the output: No space left on device"]


def test_no_color_is_plain_text_even_when_color_is_forced(monkeypatch):
    """``--no-color`` under ``FORCE_COLOR=1`` still wrote bold and italic escape sequences into the report."""
    import argparse
    import io

    from adprof.cli.common import consoles

    monkeypatch.setenv("FORCE_COLOR", "1")
    out, _ = consoles(argparse.Namespace(no_color=True, json=None, markdown=None))
    out.file = io.StringIO()
    out.print("[bold red]runaway[/] [italic]x[/]")
    assert "\x1b" not in out.file.getvalue()


def test_cli_under_python_OO_parses(tmp_path):
    """``PYTHONOPTIMIZE=2`` drops docstrings: building the parser read ``__doc__.split`` (AttributeError and a
    traceback, exit 1, for every command)."""
    import subprocess
    import sys

    saved = _empty_report(tmp_path / "r.json")
    proc = subprocess.run(
        [sys.executable, "-OO", "-P", "-m", "adprof", "report", str(saved), "--no-color"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------ plugin backends that lie


def _plugin_class(**declarations):
    from adprof.backends.base import Backend

    base = {
        "name": "plug",
        "modes": ("traced",),
        "phases": {"traced": ("record", "transform")},
        "metrics": {"traced": ("python_calls",)},
        "deciding_metrics": {"traced": ("python_calls",)},
    }
    return type("Plug", (Backend,), {**base, **declarations})


@pytest.mark.parametrize(
    "declarations",
    [
        {"modes": ("traced", "eager")},  # a mode without phases: it was measured at depth 8, hundreds of times
        {"deciding_metrics": {"traced": ("no_such_metric",)}},  # read linear on a metric never reported
        {"lower_bound_metrics": {"traced": ("graph_nodes",)}},
        {"modes": ()},
    ],
)
def test_plugin_declarations_that_contradict_themselves_are_one_line(declarations):
    from adprof.backends import BUILTIN_BACKENDS, declaration_problem

    assert all(declaration_problem(cls()) is None for cls in BUILTIN_BACKENDS.values())
    problem = declaration_problem(_plugin_class(**declarations)())
    assert problem is not None and "\n" not in problem


def test_plugin_module_calling_sys_exit_is_one_line(tmp_path, monkeypatch):
    """A plugin module that calls ``sys.exit(4)`` when imported ended adprof with exit status 4."""
    from importlib.metadata import EntryPoint

    from adprof import backends

    (tmp_path / "exits_plugin.py").write_text("import sys\nsys.exit(4)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = EntryPoint(name="exits", value="exits_plugin:Backend", group="adprof.backends")
    monkeypatch.setattr(backends, "plugin_entry_points", lambda: {"exits": ep})
    with pytest.raises(backends.BrokenBackendError) as info:
        backends._load_plugin("exits")
    assert "SystemExit" in str(info.value)


@pytest.mark.parametrize(
    ("times", "metrics", "says"),
    [
        ({"record": 1e-3, "transform": 1e-3}, {"transform": {"python_calls": -40}}, "python_calls = -40"),
        ({"record": 1e-3, "transform": 1e-3}, {"transform": {"python_calls": float("nan")}}, "python_calls = nan"),
        ({"record": 1e-3, "transform": 1e-3}, {"transform": {"python_calls": 10**400}}, "401-digit"),
        ({"record": 1e-3, "transform": -1.0}, {}, "-1.0 seconds"),
        ({"record": 1e-3, "transform": float("inf")}, {}, "inf seconds"),
        ({"nonsense": 1.0}, {}, "no time for any phase"),
    ],
)
def test_plugin_point_with_bad_numbers_is_an_error(times, metrics, says):
    """Negative counters read ``linear`` (exit 0), a 400-digit one was an "internal error: OverflowError", a point
    without the mode's phases was measured again and again: the worker sent whatever ``measure_point`` returned."""
    from adprof.measure.worker import point_problem

    backend = _plugin_class()()
    ok = Point(depth=2, times={"record": 1e-3, "transform": 2e-3}, metrics={"transform": {"python_calls": 40}})
    assert point_problem(ok, backend, "traced") is None
    assert "not a Point" in (point_problem(None, backend, "traced") or "")
    problem = point_problem(Point(depth=2, times=times, metrics=metrics), backend, "traced")
    assert problem is not None and says in problem and "'plug'" in problem


# ------------------------------------------------------------------ the Python API's arguments


def _api_chain():
    import adprof

    def f(xp, x, depth):
        return xp.sum(xp.sin(x))

    return adprof.chain(f, input_shape=(3,), depths=(1, 2, 3))


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"mode": 123}, "mode"),
        ({"backend": [1]}, "backend"),
        ({"profile": ("fixed", None)}, "profile"),
        ({"bogus_option": 1}, "bogus_option"),
    ],
)
def test_api_odd_arguments_are_usage_errors(kwargs, says):
    """``adprof.check(ch, mode=123)`` raised ``TypeError: can only join an iterable``, and an unknown keyword
    ``TypeError: chain() got an unexpected keyword argument``: the API promises ``adprof.UsageError``, one line."""
    import adprof

    with pytest.raises(adprof.UsageError) as info:
        adprof.check(_api_chain(), **kwargs)
    assert says in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(adprof.UsageError):
        adprof.guard(_api_chain(), **kwargs)


def test_guardian_left_running_is_no_warning_under_pythonwarnings_error():
    """``PYTHONWARNINGS=error adprof check ...`` ended with "Exception ignored in: Popen.__del__" and a traceback:
    the guardian outlives adprof by design, and its Popen warned "subprocess N is still running" at exit."""
    import os
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", "from adprof.util import procs\nprocs._start_guardian()\n"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, (
        proc.stderr
    )


def test_api_ctrl_c_while_loading_raises_interrupted(tmp_path, monkeypatch):
    """Ctrl-C while ``adprof.check`` loaded its targets (starting a worker, on a loaded machine the first seconds)
    escaped as a bare ``KeyboardInterrupt`` with adprof's traceback; the API promises ``adprof.Interrupted``."""
    import adprof
    from adprof import pipeline

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "load_targets", interrupted)  # the API's run path loads there (not the CLI's)
    path = _chain_file(tmp_path, "c", "")
    with pytest.raises(adprof.Interrupted) as info:
        adprof.check(str(path), profile="fixed", mode="traced")
    assert info.value.report is None


def test_flame_worker_under_python_OO_parses():
    """The flame worker (started by ``adprof flame`` with the user's environment) read ``__doc__.splitlines()``."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-OO", "-m", "adprof.flame.flame_worker", "--help"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
