"""``adprof compare`` on reports the real command wrote (the acceptance of the comparison): ``--profile v08``
against ``--profile fixed`` of the standard chains improves every pathology and regresses none; reversed, every
one regresses and the command exits 1; two runs of one profile leave every counter-decided series unchanged.
The default run does it on one chain; ``-m slow`` on the whole of probes/chains.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from extras import run_cli

from adprof import model
from adprof.cli import main

REPO = Path(__file__).resolve().parents[1]
CHAINS = str(REPO / "probes" / "chains.py")


def adprof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, timeout=600)


def _check(tmp_path: Path, target: str, profile: str, name: str, *extra: str) -> dict:
    run = adprof("check", target, "--profile", profile, "--json", name, *extra, cwd=tmp_path)
    assert run.returncode in (0, 1), run.stderr
    return json.loads((tmp_path / name).read_text())


def _compare(tmp_path: Path, base: str, new: str) -> tuple[int, dict]:
    """``adprof compare`` in this process (the command's own code; only the checks need workers)."""
    code = main(["compare", str(tmp_path / base), str(tmp_path / new), "--json", str(tmp_path / "c.json")])
    return code, json.loads((tmp_path / "c.json").read_text())


def _acceptance(tmp_path: Path, target: str, *extra: str) -> None:
    v08 = _check(tmp_path, target, "v08", "v08.json", *extra)
    fixed = _check(tmp_path, target, "fixed", "fixed.json", *extra)
    again = _check(tmp_path, target, "v08", "v08b.json", *extra)
    pathologies = [r for r in v08["results"] if r["verdict"] in model.PATHOLOGIES]
    assert pathologies and all(r["verdict"] == "linear" for r in fixed["results"])

    code, forward = _compare(tmp_path, "v08.json", "fixed.json")
    states = {s["label"]: s["state"] for s in forward["series"]}
    assert code == 0 and forward["counts"]["regressed"] == 0
    assert all(states[f"{r['chain']} [engine/fixed, {r['mode']}]"] == "improved" for r in pathologies), states

    code, back = _compare(tmp_path, "fixed.json", "v08.json")
    states = {s["label"]: s["state"] for s in back["series"]}
    assert code == 1 and back["regressed"] is True
    assert all(states[f"{r['chain']} [engine/v08, {r['mode']}]"] == "regressed" for r in pathologies), states

    code, same = _compare(tmp_path, "v08.json", "v08b.json")
    by_counters = [s for s in same["series"] if s["after"]["decided_by"] == "counters"]
    assert code == 0 and len(by_counters) == len(again["results"])
    assert {s["state"] for s in by_counters} == {"unchanged"}
    assert same["versions"]["before"] == same["versions"]["after"] and same["versions"]["after"]["numpy"]


def test_compare_v08_against_fixed_on_one_chain(tmp_path):
    _acceptance(tmp_path, f"{CHAINS}::mul", "--mode", "traced", "--depths", "1,2,3,4,5,6")


@pytest.mark.slow
def test_compare_v08_against_fixed_on_the_standard_chains(tmp_path):
    _acceptance(tmp_path, CHAINS)
