"""End to end through the real command (``python -m adprof check``/``guard``): memory verdicts on the engine's
standard chains and the zoo's memory cases, the guard's memory limits failing and passing, the JSON of schema 3.
The engine's run in the default suite; the peers' (torch, JAX) are slow studies and skip without their extra."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from extras import requires, run_cli

from adprof.render.jsonout import load_report

REPO = Path(__file__).resolve().parents[1]
CHAINS = str(REPO / "probes" / "chains.py")
WILD = str(REPO / "probes" / "wild.py")


def adprof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, timeout=600)


def memory_of(path: Path) -> dict[str, dict]:
    """Each series' memory verdict from a --json report, by its label (the report loads back, schema 3)."""
    data = json.loads(path.read_text())
    assert data["schema"] == 4
    report = load_report(data)
    return {r.series.label: r.verdict.memory for r in report.results}


@pytest.mark.slow
def test_check_reads_linear_memory_on_a_standard_chain(tmp_path):
    run = adprof("check", f"{CHAINS}::sin", "--profile", "fixed", "--memory", "--json", "out.json", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    memory = memory_of(tmp_path / "out.json")
    assert set(memory) == {"sin [engine/fixed, traced]", "sin [engine/fixed, eager]"}
    for label, mv in memory.items():
        assert mv.kind == "linear" and mv.decided_by == "saved_bytes", label
        assert mv.exponent == pytest.approx(1.0, abs=0.02)
    assert memory["sin [engine/fixed, eager]"].leaking is False  # nothing held after the calls
    assert "linear d^1.00" in run.stdout  # the memory column


def test_guard_max_memory_exponent_fails_on_dense_history_and_passes_on_a_linear_chain(tmp_path):
    run = adprof(
        "guard",
        f"{CHAINS}::sin",
        f"{WILD}::dense_history",
        "--mode",
        "traced",
        "--max-exponent",
        "3",  # the time limits hold: the memory limit decides
        "--max-memory-exponent",
        "1.2",
        "--absolute",  # the raw growth: against its intermediates (d^2 too) dense_history's memory holds
        "--junit",
        "guard.xml",
        cwd=tmp_path,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    sin = next(i for i, line in enumerate(lines) if line.startswith("ok   sin [engine/fixed, traced]"))
    assert lines[sin + 1].lstrip().startswith("ok   memory: saved-for-backward bytes depth^1.00")
    dense = next(i for i, line in enumerate(lines) if "dense_history [engine/fixed, traced]" in line)
    assert lines[dense].startswith("ok   ") and "FAIL memory:" in lines[dense + 1]
    assert "saved-for-backward bytes limited to depth^1.2 but grow as depth^1.8" in run.stdout
    assert "over depths 4, 8, 16, 32" in run.stdout
    assert "1 of 2 held" in run.stdout and "max memory exponent 1.2" in run.stdout
    xml = (tmp_path / "guard.xml").read_text()
    assert "<failure" in xml and "dense_history" in xml


@pytest.mark.slow
def test_check_reads_dense_historys_quadratic_memory_as_its_programs_own_both_engine_modes(tmp_path):
    """Saved bytes d^1.9, as the forward's intermediates: the program's own memory (linear against them), the raw
    growth kept beside (explained.memory_raw_kind), the remedies kept as advice."""
    run = adprof("check", f"{WILD}::dense_history", "--profile", "fixed", "--json", "out.json", cwd=tmp_path)
    assert run.returncode == 0, run.stdout  # its program grows as d^2: no finding
    memory = memory_of(tmp_path / "out.json")
    report = load_report(json.loads((tmp_path / "out.json").read_text()))
    for r in report.results:
        mv, ex = r.verdict.memory, r.verdict.explained
        assert mv.kind == "linear" and 1.7 <= mv.exponent <= 2.05 and mv.remedies, (r.series.label, mv.exponent)
        assert ex is not None and ex.memory_superlinear and ex.memory_raw_kind == "superlinear-memory"
    assert memory


@pytest.mark.slow
@requires("torch")
def test_guard_max_leak_fails_on_7343_tanh_and_passes_on_its_autograd_grad_form(tmp_path):
    run = adprof(
        "guard",
        f"{WILD}::create_graph_leak",
        "--backend",
        "torch",
        "--max-leak",
        "1 KiB",
        "--json",
        "g.json",
        cwd=tmp_path,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    out = run.stdout
    assert "limited to 1.0 KiB leaked per call but leaked" in out
    memory = memory_of(tmp_path / "g.json")
    tanh = memory["create_graph_leak[form=tanh] [torch, eager]"]
    assert tanh.kind == "leak-per-call" and tanh.bytes_per_call > 1024
    for form in ("grad", "add"):
        mv = memory[f"create_graph_leak[form={form}] [torch, eager]"]
        assert mv.leaking is False and mv.kind != "leak-per-call", form
    grad_line = next(i for i, line in enumerate(out.splitlines()) if "create_graph_leak[form=grad]" in line)
    assert out.splitlines()[grad_line + 1].lstrip().startswith("ok   memory: no leak")


@pytest.mark.slow
@requires("torch", "jax")
def test_peers_read_linear_memory_on_the_standard_chains(tmp_path):
    run = adprof(
        "check",
        f"{CHAINS}::sin",
        f"{CHAINS}::matmul",
        "--backend",
        "jax,torch",
        "--mode",
        "traced,eager",
        "--memory",
        "--budget",
        "60",
        "--json",
        "out.json",
        cwd=tmp_path,
    )
    memory = memory_of(tmp_path / "out.json")
    assert memory, run.stderr
    for label, mv in memory.items():
        if mv.decided_by == "peak_bytes":  # only the (noisy) peak measured: never a pathology it cannot stand by
            assert mv.kind == "peak-only" and not mv.is_finding, (label, mv.kind)
            assert mv.not_measured.get("saved_bytes"), label  # and it says why the saved bytes are not
        else:
            assert mv.kind == "linear" and mv.decided_by == "saved_bytes", (label, mv.kind, mv.reason)


@pytest.mark.slow
@requires("jax")
def test_jax_scan_residuals_linear_and_flat_with_remat(tmp_path):
    run = adprof(
        "check", f"{WILD}::scan_residuals", "--backend", "jax", "--mode", "traced", "--json", "o.json", cwd=tmp_path
    )
    memory = memory_of(tmp_path / "o.json")
    assert memory, run.stderr
    kinds = {label.split(" ")[0]: mv.kind for label, mv in memory.items()}
    assert kinds["scan_residuals[remat=none]"] == "linear"
    assert kinds["scan_residuals[remat=body]"] == "linear"
    assert kinds["scan_residuals[remat=loop]"] == "flat"


def _zoo_cases() -> list[tuple[str, str, str]]:
    """(case, series, memory verdict) of every memory case of the zoo (probes/wild.py)."""
    sys.path.insert(0, str(REPO))
    from probes import wild

    return [(name, series, verdict) for name, case in wild.CASES.items() for series, verdict in case.memory.items()]


#: Where the zoo's expectation and the memory verdict differ, and why (strict: a fixed case must drop its entry).
ZOO_DISAGREES: dict[tuple[str, str], str] = {}


@pytest.mark.slow
@requires("torch", "jax", "autograd")
def test_the_zoos_memory_cases_read_their_memory_verdicts(tmp_path):
    """Every memory case of probes/wild.py through the real command: the memory verdict its Case names."""
    cases = _zoo_cases()
    read: dict[tuple[str, str], str] = {}
    for name in sorted({c for c, _, _ in cases}):
        series = [s for c, s, _ in cases if c == name]
        backends = sorted({s.split("/", 1)[0] for s in series})
        modes = sorted({s.split("/", 1)[1].split("[", 1)[0] for s in series})
        out = tmp_path / f"{name}.json"
        argv = ["check", f"{WILD}::{name}", "--backend", ",".join(backends), "--mode", ",".join(modes)]
        profile = ["--profile", "fixed"] if "engine" in backends else []
        run = adprof(*argv, *profile, "--memory", "--budget", "120", "--json", str(out), cwd=tmp_path)
        assert out.exists(), run.stderr
        for r in load_report(json.loads(out.read_text())).results:
            params = "".join(f"[{k}={v}]" for k, v in r.series.params.items())
            read[(name, f"{r.series.backend}/{r.series.mode}{params}")] = r.verdict.memory.kind
    wrong = []
    for name, series, verdict in cases:
        got = read.get((name, series))
        if (name, series) in ZOO_DISAGREES:
            assert got != verdict, f"{name} {series} now reads {got}: drop it from ZOO_DISAGREES"
            continue
        if got != verdict:
            wrong.append(f"{name} {series}: expected {verdict}, read {got}")
    assert not wrong, wrong
