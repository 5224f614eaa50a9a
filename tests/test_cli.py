"""The adprof command line, run as a subprocess (``python -m adprof``) like a user would."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fault_helpers import scaled_budget

ROOT = Path(__file__).resolve().parent.parent
BAD = "tests/chains_bad"
FIELDS = (
    "chain",
    "backend",
    "profile",
    "mode",
    "verdict",
    "base",
    "exponent",
    "halving_ratio",
    "predicted_base",
    "stopped",
    "cause",
    "remedies",
    "points",
)


def adprof(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "adprof", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def rows(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    return json.loads(proc.stdout)["results"]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (f"{BAD}/missing.py", "no such file"),
        (f"{BAD}/no_chains.py", "no @adprof.chain functions"),
        (f"{BAD}/mixed.py::nope", "no chain or function named 'nope'"),
        ("README.md", "not a Python file"),
    ],
)
def test_bad_target_exits_2_with_one_line(target, message):
    _check_bad(adprof("check", target), message)


def test_syntax_error_exits_2(tmp_path):
    bad = tmp_path / "syntax_error.py"  # written here: an invalid .py in the repo would break ruff
    bad.write_text("import adprof\n\n\n@adprof.chain\ndef broken(xp, x, depth)\n    return xp.sum(x)\n")
    _check_bad(adprof("check", str(bad)), "syntax error in")


def _check_bad(p: subprocess.CompletedProcess[str], message: str) -> None:
    assert p.returncode == 2, p.stderr
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("adprof: error: ") and message in lines[0]
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (("--backend", "nosuch"), "unknown backend 'nosuch'; known backends: engine"),
        (("--profile", "v09"), "unknown profile 'v09'"),
        (("--mode", "compile"), "unknown mode 'compile'"),
    ],
)
def test_bad_option_exits_2(option, message):
    p = adprof("check", "probes/chains.py", *option)
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr


def test_failing_chains_are_rows_and_the_good_one_is_still_reported():
    p = adprof("check", f"{BAD}/mixed.py", "--profile", "fixed", "--cap", "0.25", "--budget", "20", "--json", "-")
    assert p.returncode == 1, p.stderr
    by = {(r["chain"], r["mode"]): r for r in rows(p)}
    assert by[("good", "traced")]["verdict"] == "linear"
    assert by[("good", "eager")]["verdict"] == "linear"
    for mode in ("traced", "eager"):
        r = by[("raises", mode)]
        assert r["verdict"] == "error"
        assert r["error"].startswith("depth 3") and "ValueError: boom at depth 3 (mixed.py line" in r["error"]
        assert [pt["depth"] for pt in r["points"]] == [1, 2]
        assert by[("nonscalar", mode)]["verdict"] == "error"
        assert "not a scalar (shape (3,))" in by[("nonscalar", mode)]["error"]
        assert "output is nan" in by[("nan_output", mode)]["error"]
    err = [line for line in p.stderr.splitlines() if line.startswith("adprof:")]  # the table is there too
    assert len(err) == 3 and all(line.startswith("adprof: chain ") for line in err)
    assert "Traceback" not in p.stderr


def test_hanging_chain_is_killed_and_the_other_reported():
    """The hang is killed by its own phase timeout (4 x cap = 1 s), not by the budget's end (20 s): the message says
    which killed it, whatever the load (a wall-time bound would also count the interpreter's start-up)."""
    p = adprof(
        "check",
        f"{BAD}/hang.py",
        "--profile",
        "fixed",
        "--mode",
        "traced",
        "--cap",
        "0.25",
        "--budget",
        "20",
        "--json",
        "-",
    )
    assert p.returncode == 1
    by = {r["chain"]: r for r in rows(p)}
    assert by["good"]["verdict"] == "linear"
    hang = by["hangs"]["error"]
    assert by["hangs"]["verdict"] == "error" and re.search(r"did not finish within [\d.]+ s \(killed\)", hang), hang
    assert "budget ran out" not in hang  # the phase timeout killed it, not the budget's deadline
    assert "adprof: chain hangs:" in p.stderr and "Traceback" not in p.stderr


def test_mul_end_to_end_v08_exponential_fixed_linear_and_json_fields():
    p = adprof("check", "probes/chains.py::mul", "--mode", "traced", "--cap", "0.3", "--budget", "30", "--json", "-")
    assert p.returncode == 1, p.stderr
    data = json.loads(p.stdout)
    assert data["budget_seconds"] == 30 and data["elapsed_seconds"] < 30
    by = {r["profile"]: r for r in data["results"]}
    for r in by.values():
        assert all(f in r for f in FIELDS)
        assert r["chain"] == "mul" and r["backend"] == "engine" and r["mode"] == "traced"
        assert r["predicted_base"] == pytest.approx(2.0)
        assert set(r["points"][0]["times"]) == {"record", "transform", "compile", "run", "drop"}
    v08, fixed = by["v08"], by["fixed"]
    assert v08["verdict"] == "exponential-transform"
    assert v08["base"] == pytest.approx(2.0, abs=0.15)
    assert v08["remedies"] and v08["cause"]
    assert fixed["verdict"] == "linear"
    assert "summary" in p.stderr  # the table went to stderr


def test_explicit_depths_and_outputs(tmp_path):
    out = tmp_path / "r.json"
    html = tmp_path / "r.html"
    p = adprof(
        "check",
        "probes/chains.py::sin",
        "--profile",
        "fixed",
        "--depths",
        "4,8,16,32",
        "--json",
        str(out),
        "--html",
        str(html),
        "--no-color",
    )
    assert p.returncode == 0, p.stderr
    assert "adprof summary" in p.stdout and "linear" in p.stdout
    data = json.loads(out.read_text())
    assert {tuple(pt["depth"] for pt in r["points"]) for r in data["results"]} == {(4, 8, 16, 32)}
    assert html.read_text().lstrip().lower().startswith("<!doctype html")


def test_ratio_table():
    # the cap stops the exponential after a few depths; scaled by the machine's slowdown, so a loaded machine measures
    # as many depths (at 0.02 s, a load of 19 measured one: not classified)
    p = adprof("ratio", "probes/chains.py::mul", "--cap", f"{scaled_budget(0.02):.3f}")
    assert p.returncode == 1, p.stderr
    assert "per-layer ratios" in p.stdout and "derivative ops" in p.stdout
    assert "stopped after depth" in p.stdout and "exponential-transform" in p.stdout


def test_halve_reads_seed_000():
    p = adprof("halve", "probes/chains.py::sin", "--depth", "400", "--calls", "3")
    assert p.returncode == 1, p.stderr
    assert "below 1/3 when halved: superlinear cost of graph size, not arithmetic" in p.stdout
    assert "superlinear-backward" in p.stdout
    p = adprof("halve", f"{BAD}/mixed.py", "--depth", "8")
    assert p.returncode == 2 and "takes one chain" in p.stderr


@pytest.mark.slow  # tests/test_faults.py::test_budget_bounds_a_hanging_structure_probe is the default representative
def test_whole_check_respects_a_small_budget():
    t0 = time.monotonic()
    p = adprof("check", "probes/chains.py", "--budget", "6", "--json", "-")
    wall = time.monotonic() - t0
    assert p.returncode == 1, p.stderr
    data = json.loads(p.stdout)
    assert data["elapsed_seconds"] <= 6
    assert wall < 6 + scaled_budget(4)  # interpreter start-up and imports come on top (slower under load)
    assert len(data["results"]) == 52  # 13 chain variants x 2 profiles x 2 modes, all reported
    assert any("budget" in n for n in data["notes"]) or any(
        r["stopped"] and "budget" in r["stopped"] for r in data["results"]
    )
