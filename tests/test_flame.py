"""adprof flame: collapsed-stack parsing, phase attribution, outputs, and real py-spy sampling.

The sampling tests need py-spy able to sample its own child here; if it cannot, they FAIL (the
message says why) instead of skipping.
"""

from __future__ import annotations

import json
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fault_helpers import scaled_budget

from adprof import flame
from adprof.flame import (
    FlameSummary,
    Frame,
    attribute,
    parse_collapsed,
    parse_frame,
    path_line,
    phase_of,
    phase_path,
    render_flame_svg,
    render_speedscope,
    render_summary,
)

ROOT = Path(__file__).resolve().parent.parent
CHAINS = ROOT / "probes" / "chains.py"
DEPTH = 10  # v08 traced mul: ~0.1 s transform + ~0.1 s drop per point on this machine

LOOP = (
    "main (adprof/flame_worker.py:101);probe_loop (adprof/flame_worker.py:80);"
    "make_iteration.<locals>.traced_iteration (adprof/flame_worker.py:55)"
)
EQ = "ValueKey.__eq__ (engine/keys.py:98);structural_key_eq (engine/keys.py:113)"
DROP = (
    f"{LOOP};MetadataScope.__del__ (engine/metadata.py:95);MetadataScope.close (engine/metadata.py:84);"
    f"deregister_metadata_batch (engine/metadata.py:67);deregister_metadata (engine/metadata.py:33);{EQ}"
)
GRAD = (
    f"{LOOP};grad (engine/ad.py:183);_reverse (engine/ad.py:197);"
    f"derivative_traces_from_program (engine/ad.py:109);MetadataScope.__init__ (engine/metadata.py:77);"
    f"register_metadata (engine/metadata.py:22);{EQ}"
)
SETUP = (
    "<module> (adprof/flame_worker.py:1);main (adprof/flame_worker.py:101);"
    "make_iteration (adprof/flame_worker.py:40);_find_and_load (<frozen importlib._bootstrap>:1165);"
    "<module> (numpy/__init__.py:1)"
)
# the seeds' sampling paragraph: 1383 samples, 915 in the drop, 468 in ad.grad
SEED_TEXT = f"{DROP} 915\n{GRAD} 400\n{GRAD.replace(':113', ':120')} 68\n{SETUP} 40\n 3\n\n"


# --------------------------------------------------------------------------- parsing


def test_parse_frame_forms() -> None:
    assert parse_frame("fib (script.py:6)") == Frame("fib", "script.py", 6)
    assert parse_frame("fib (script.py)") == Frame("fib", "script.py", None)
    assert parse_frame("_find_and_load (<frozen importlib._bootstrap>:1165)") == Frame(
        "_find_and_load", "<frozen importlib._bootstrap>", 1165
    )
    assert parse_frame("A.__del__ (w.py:3)").name == "A.__del__"
    assert parse_frame("bare") == Frame("bare", "", None)
    f = parse_frame("structural_key_eq (engine/keys.py:113)")
    assert f.label == "structural_key_eq (engine/keys.py:113)"
    assert f.function == "structural_key_eq (engine/keys.py)"


def test_parse_collapsed_counts_and_empty_stacks() -> None:
    stacks = parse_collapsed(SEED_TEXT)
    assert [c for _, c in stacks] == [915, 400, 68, 40, 3]
    assert stacks[-1] == ((), 3)  # the empty-stack line " 3"
    frames, _ = stacks[0]
    assert frames[0] == Frame("main", "adprof/flame_worker.py", 101)
    assert frames[-1].name == "structural_key_eq"
    assert len(frames) == 3 + 4 + 2
    assert parse_collapsed("") == []
    two = ((Frame("a", "x.py", 1), Frame("b", "x.py", 2)), 7)
    assert parse_collapsed("a (x.py:1);b (x.py:2) 7\r\n") == [two]


def test_parse_collapsed_rejects_a_line_without_count() -> None:
    with pytest.raises(ValueError, match="line 2"):
        parse_collapsed("a (x.py:1) 1\na (x.py:1) many\n")


# --------------------------------------------------------------------------- attribution


def test_phase_table_matches_function_and_file() -> None:
    assert phase_of(parse_frame("structural_key_eq (engine/keys.py:113)")) == "key equality"
    assert phase_of(parse_frame("ValueKey.__eq__ (engine/keys.py:98)")) == "key equality"
    assert phase_of(parse_frame("OpKey.__eq__ (/abs/path/engine/keys.py:70)")) == "key equality"
    assert phase_of(parse_frame("__eq__ (other.py:3)")) is None  # the file must match too
    assert phase_of(parse_frame("MetadataScope.close (engine/metadata.py:84)")) == "drop"
    assert phase_of(parse_frame("TracedTensor.__del__ (engine/graph.py:60)")) == "drop"
    assert phase_of(parse_frame("register_metadata (engine/metadata.py:23)")) == "metadata registration"
    assert phase_of(parse_frame("deregister_metadata (engine/metadata.py:33)")) == "metadata deregistration"
    assert phase_of(parse_frame("rebuild_source_program (engine/eager.py:334)")) == "trace rebuild"
    assert phase_of(parse_frame("freeze (engine/graph.py:216)")) == "trace rebuild"
    assert phase_of(parse_frame("derivative_traces_from_program (engine/ad.py:109)")) == "derivative traces"
    assert phase_of(parse_frame("run_program (<prepared program 1a2b3c4d>:1)")) == "kernels"
    assert phase_of(parse_frame("_kernel.<locals>.kernel (engine/program.py:131)")) == "kernels"
    assert phase_of(parse_frame("svd (numpy/linalg/_linalg.py:1700)")) == "kernels"
    assert phase_of(parse_frame("solve (scipy/linalg/_basic.py:50)")) == "kernels"
    # the engine's xp namespace is recording, not numpy
    assert phase_of(parse_frame("multiply (engine/numpy.py:80)")) == "record"


def test_phase_path_is_outer_to_inner_and_deduplicated() -> None:
    drop = parse_collapsed(f"{DROP} 1")[0][0]
    assert phase_path(drop) == ("drop", "metadata deregistration", "key equality")
    grad = parse_collapsed(f"{GRAD} 1")[0][0]
    assert phase_path(grad) == ("grad", "derivative traces", "metadata registration", "key equality")
    assert phase_path((Frame("f", "user.py", 1),)) == ("other",)
    setup = parse_collapsed(f"{SETUP} 1")[0][0]
    assert phase_path(setup) == ("setup",)  # absorbing: numpy's import is not kernel time


def test_attribute_seed_paragraph() -> None:
    s = attribute(parse_collapsed(SEED_TEXT))
    assert s.total == 1426
    assert s.excluded == {"setup": 40, "no Python frame": 3}
    assert s.probe == 1383
    assert s.phases == {"key equality": 1383}
    assert s.share("key equality") == 1.0
    assert s.inclusive["drop"] == 915 and s.inclusive["grad"] == 468
    assert s.paths[0] == (("drop", "metadata deregistration", "key equality"), 915)
    assert (
        path_line(*s.paths[0], s.probe)
        == "915 of 1383 samples (66%) in drop -> metadata deregistration -> key equality"
    )
    assert (
        path_line(*s.paths[1], s.probe)
        == "468 of 1383 samples (34%) in grad -> derivative traces -> metadata registration -> key equality"
    )
    assert s.path_share(("drop", "metadata deregistration", "key equality")) == pytest.approx(915 / 1383)
    # both stack tops are the same function; line numbers are not part of the self function
    assert s.top_self == [("structural_key_eq (engine/keys.py)", 1383)]


def test_attribute_innermost_phase_and_top_self() -> None:
    text = textwrap.dedent(f"""\
        {LOOP};grad (engine/ad.py:183);vjp_program (engine/ad.py:44);ProgramBuilder.bind (program.py:208) 6
        {LOOP};grad (engine/ad.py:183);_reverse (engine/ad.py:197);freeze (engine/graph.py:216) 3
        {LOOP};run_program (<prepared program 0a>:1);_kernel.<locals>.kernel (engine/program.py:131) 2
        {LOOP} 1
        """)
    s = attribute(parse_collapsed(text))
    assert s.probe == 12 and not s.excluded
    assert s.phases == {"derivative program": 6, "trace rebuild": 3, "kernels": 2, "other": 1}
    assert s.inclusive["grad"] == 9
    assert dict(s.paths)[("grad", "trace rebuild")] == 3
    assert s.top_self[0] == ("ProgramBuilder.bind (program.py)", 6)
    assert ("make_iteration.<locals>.traced_iteration (adprof/flame_worker.py)", 1) in s.top_self


def test_render_summary_text() -> None:
    s = attribute(parse_collapsed(SEED_TEXT))
    s.title = "mul traced"
    out = render_summary(s)
    assert out.splitlines()[0] == "mul traced"
    assert "1383 probe samples (of 1426; left out: setup 40, no Python frame 3)" in out
    assert "915 of 1383 samples (66%) in drop -> metadata deregistration -> key equality" in out
    assert "structural_key_eq (engine/keys.py)" in out
    assert "key equality" in out and "100.0%" in out
    assert render_summary(FlameSummary()).startswith("0 probe samples")


def test_svg_and_speedscope_outputs() -> None:
    stacks = [("drop", f, float(n)) for f, n in parse_collapsed(SEED_TEXT)]
    svg = render_flame_svg(stacks, title="mul <v08>")
    root = ET.fromstring(svg)  # well-formed, escaped
    assert root.tag.endswith("svg")
    assert "structural_key_eq" in svg and "1426 samples" in svg
    doc = json.loads(render_speedscope([(p, f, n / 250) for p, f, n in stacks]))
    prof = doc["profiles"][0]
    assert prof["type"] == "sampled" and len(prof["samples"]) == len(prof["weights"]) == 5
    assert prof["weights"][0] == pytest.approx(915 / 250)
    names = [doc["shared"]["frames"][i]["name"] for i in prof["samples"][0]]
    assert names[0] == "phase drop" and names[1] == "main" and names[-1] == "structural_key_eq"
    assert [doc["shared"]["frames"][i]["name"] for i in prof["samples"][-1]] == ["phase drop"]


# --------------------------------------------------------------------------- error paths


def _one_line_err(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_missing_file_exits_2_with_one_line(tmp_path, capsys) -> None:
    rc = flame.main([str(tmp_path / "nope.py") + "::mul", "--depth", "3", "-o", str(tmp_path / "o.svg")])
    assert rc == 2
    assert "no such file" in _one_line_err(capsys)


def test_unknown_chain_exits_2(tmp_path, capsys) -> None:
    rc = flame.main([f"{CHAINS}::nosuch", "--depth", "3", "-o", str(tmp_path / "o.svg")])
    assert rc == 2
    assert "nosuch" in _one_line_err(capsys)


def test_py_spy_not_found_by_monkeypatched_lookup(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(flame.sampling, "find_py_spy", lambda: None)
    rc = flame.main([f"{CHAINS}::mul", "--depth", "3", "-o", str(tmp_path / "o.svg")])
    assert rc == 2
    line = _one_line_err(capsys)
    assert "py-spy not found" in line and "pip install py-spy" in line


def test_py_spy_not_found_by_path(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert flame.find_py_spy() is None


def _fake_py_spy(tmp_path: Path, body: str) -> str:
    script = tmp_path / "py-spy"
    script.write_text(f"#!{sys.executable}\nimport json, sys\na = sys.argv\n" + textwrap.dedent(body))
    script.chmod(0o755)
    return str(script)


def test_ptrace_refusal_is_one_line_with_the_fix(tmp_path, capsys, monkeypatch) -> None:
    fake = _fake_py_spy(
        tmp_path,
        """\
        print("Error: Failed to get process executable name. Permission Denied (os error 13)",
              file=sys.stderr)
        sys.exit(1)
        """,
    )
    monkeypatch.setattr(flame.sampling, "find_py_spy", lambda: fake)
    rc = flame.main([f"{CHAINS}::mul", "--depth", "3", "-o", str(tmp_path / "o.svg")])
    assert rc == 2
    line = _one_line_err(capsys)
    assert "Permission Denied" in line and "CAP_SYS_PTRACE" in line


def test_zero_samples_exits_2(tmp_path, capsys, monkeypatch) -> None:
    fake = _fake_py_spy(
        tmp_path,
        """\
        open(a[a.index("-o") + 1], "w").write("[]")
        status = a[a.index("--status") + 1]
        json.dump({"state": "done", "iterations": 1, "seconds": 0.5, "error": None}, open(status, "w"))
        log = {"anchor": [0.0, 0.1], "events": [[0.2, "record"], [0.3, None]], "tid": 1, "iterations": 1}
        json.dump(log, open(a[a.index("--log") + 1], "w"))
        """,
    )
    monkeypatch.setattr(flame.sampling, "find_py_spy", lambda: fake)
    rc = flame.main([f"{CHAINS}::mul", "--depth", "3", "-o", str(tmp_path / "o.svg")])
    assert rc == 2
    assert "recorded no samples" in _one_line_err(capsys)
    assert not (tmp_path / "o.svg").exists()


# --------------------------------------------------------------------------- real sampling


def _require_py_spy() -> str:
    exe = flame.find_py_spy()
    assert exe, f"py-spy is required for adprof flame and was not found: {flame.INSTALL_FIX}"
    return exe


def test_real_sampling_v08_key_equality_holds_the_majority(tmp_path, capsys) -> None:
    _require_py_spy()
    out = tmp_path / "mul.svg"
    # 1 s of a quiet machine's iterations (scaled by its slowdown: a loaded machine samples as many points)
    seconds = f"{scaled_budget(1.0, most=10.0):.1f}"
    rc = flame.main([f"{CHAINS}::mul", "--depth", str(DEPTH), "--profile", "v08", "--seconds", seconds, "-o", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert out.exists() and ET.parse(out).getroot().tag.endswith("svg")
    text = captured.out
    share = None
    for line in text.splitlines():
        if line.strip().startswith("key equality"):
            share = float(line.split()[3].rstrip("%"))
    assert share is not None and share > 50.0, text
    assert "in drop -> metadata deregistration -> key equality" in text
    assert "in grad -> derivative traces -> metadata registration -> key equality" in text


@pytest.mark.slow  # the v08 sampling test is the default representative of real py-spy runs
def test_real_sampling_fixed_has_no_key_equality(tmp_path) -> None:
    exe = _require_py_spy()
    target = f"{CHAINS.resolve()}::mul"
    run = flame.sample_probe(target, "traced", DEPTH, "fixed", seconds=1.5, rate=250, py_spy=exe)
    s = attribute([(f, n) for _, f, n in run.profile.samples()])
    assert run.status["state"] == "done" and run.status["iterations"] > 10, run.status
    assert s.probe > 100, render_summary(s)
    assert s.inclusive_share("key equality") < 0.05, render_summary(s)
    # the point runner's phases, each sample under one (a phase here lasts about a sampling period: which one a
    # sample near an edge carries is not asserted)
    assert {p for p, _, _ in run.profile.samples()} <= {"record", "transform", "compile", "run", "drop"}
    assert s.inclusive_share("grad") + s.inclusive_share("compile") > 0.3, render_summary(s)


@pytest.mark.slow  # ~15 s under load: the error paths are covered by fake py-spy runs by default
def test_real_sampling_reports_a_worker_error(tmp_path, capsys) -> None:
    _require_py_spy()
    src = tmp_path / "bad.py"
    src.write_text(
        textwrap.dedent("""\
        import time
        import adprof

        @adprof.chain
        def boom(xp, x, depth):
            time.sleep(0.6)  # let py-spy attach before the worker fails
            raise RuntimeError("chain exploded")
        """)
    )
    out = tmp_path / "bad.json"
    rc = flame.main([f"{src}::boom", "--depth", "2", "--seconds", "1", "--format", "speedscope", "-o", str(out)])
    assert rc == 1
    line = _one_line_err(capsys)
    assert "failed in the worker" in line and "RuntimeError: chain exploded" in line
