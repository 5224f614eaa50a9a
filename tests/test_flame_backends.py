"""adprof flame on every backend and mode (issue 38 section 1) and its options (issue 39 R27).

Real py-spy runs: each backend's flame graph holds only the measured phases (zero import frames), every sample
under its phase; ``--vs`` names the frame whose self time grows fastest. The timeline (py-spy's trace on the
worker's clock), the outputs' formats and the option rules are tested on hand-made input.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adprof import flame
from adprof.cli import main as cli_main
from adprof.flame.collapse import Frame, parse_collapsed
from adprof.flame.diff import growth, render_growth
from adprof.flame.output import render_chrometrace, render_speedscope
from adprof.flame.timeline import (
    PhasedProfile,
    Segment,
    Slice,
    clock_offset,
    phase_windows,
    phased_profile,
    refine_offset,
    stack_segments,
    stale_after,
)
from tests.extras import requires

ROOT = Path(__file__).resolve().parent.parent
CHAINS = ROOT / "probes" / "chains.py"
WILD = ROOT / "probes" / "wild.py"
IMPORT_FRAMES = ("<frozen importlib._bootstrap", "_find_and_load", "_load_unlocked", "exec_module")


def _one_line_err(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


def _flame_collapsed(tmp_path: Path, target: str, *opts: str) -> tuple[list, str]:
    out = tmp_path / "g.txt"
    rc = flame.main([target, *opts, "--seconds", "0.5", "--format", "collapsed", "-o", str(out)])
    assert rc == 0
    return parse_collapsed(out.read_text()), out.read_text()


def _assert_measured_only(stacks: list, text: str, phases: set[str]) -> None:
    assert stacks, "no samples"
    assert not any(m in text for m in IMPORT_FRAMES), [ln for ln in text.splitlines() if "_find_and_load" in ln][:3]
    roots = {frames[0].name for frames, _ in stacks}
    assert roots and all(r.startswith("phase ") for r in roots), roots
    assert {r.removeprefix("phase ") for r in roots} <= phases, roots
    # the stacks are cut to the probe: the worker's loop and everything above it are gone
    assert not any(f.name in ("probe_loop", "<module>") for frames, _ in stacks for f in frames)


# --------------------------------------------------------------------------- real runs, one per backend


@pytest.mark.slow
def test_flame_engine_eager_measured_phases_only(tmp_path) -> None:
    stacks, text = _flame_collapsed(tmp_path, f"{CHAINS}::sin", "--mode", "eager", "--depth", "8")
    _assert_measured_only(stacks, text, {"forward0", "backward0", "forward", "backward"})


@pytest.mark.slow
@requires("autograd")
def test_flame_autograd_eager(tmp_path) -> None:
    stacks, text = _flame_collapsed(tmp_path, f"{CHAINS}::sin", "--backend", "autograd", "--depth", "8")
    _assert_measured_only(stacks, text, {"forward0", "backward0", "forward", "backward"})
    assert "autograd" in text


@pytest.mark.slow
@requires("jax", "jaxlib")
def test_flame_jax_traced(tmp_path) -> None:
    stacks, text = _flame_collapsed(tmp_path, f"{CHAINS}::sin", "--backend", "jax", "--mode", "traced", "--depth", "8")
    _assert_measured_only(stacks, text, {"record", "transform", "drop"})
    assert "jax" in text


@pytest.mark.slow
@requires("torch")
def test_flame_torch_eager_native(tmp_path) -> None:
    stacks, text = _flame_collapsed(tmp_path, f"{CHAINS}::sin", "--backend", "torch", "--mode", "eager", "--depth", "8")
    _assert_measured_only(stacks, text, {"forward0", "backward0", "forward", "backward"})
    assert "torch" in text
    # --native: the autograd engine's C++ frames are in the graph (torch's default)
    assert "torch::autograd" in text or "libtorch" in text, text[:2000]


@pytest.mark.slow
@requires("tinygrad")
def test_flame_tinygrad_eager(tmp_path) -> None:
    stacks, text = _flame_collapsed(
        tmp_path, f"{CHAINS}::sin", "--backend", "tinygrad", "--mode", "eager", "--depth", "4"
    )
    _assert_measured_only(stacks, text, {"forward0", "backward0", "forward", "backward"})
    assert "tinygrad" in text


@pytest.mark.slow
def test_flame_vs_v08_mul_names_key_equality(tmp_path, capsys) -> None:
    out = tmp_path / "diff.svg"
    rc = flame.main(
        [f"{CHAINS}::mul", "--profile", "v08", "--depth", "8", "--vs", "12", "--seconds", "1", "-o", str(out)]
    )
    text = capsys.readouterr().out
    assert rc == 0
    fastest = next(ln for ln in text.splitlines() if ln.startswith("fastest-growing:"))
    assert "structural_key_eq" in fastest, text
    svg = out.read_text()
    assert "share grew" in svg and "hsl(0," in svg  # red frames: the differential colouring


@pytest.mark.slow
@requires("torch")
def test_flame_vs_torch_create_graph_names_growing_frames(tmp_path, capsys) -> None:
    target = f"{WILD}::create_graph_leak[form=tanh]"
    out = tmp_path / "diff.svg"
    rc = flame.main([target, "--backend", "torch", "--mode", "eager", "--depth", "4", "--vs", "16", "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert "fastest-growing:" in text and "self time per point, depth 4 -> 16" in text


# --------------------------------------------------------------------------- the timeline (pure)


def _ev(ph: str, name: str, ts: int, tid: int = 7) -> dict:
    return {"ph": ph, "name": name, "ts": ts, "tid": tid, "pid": 1, "args": {"filename": "f.py", "line": 1}}


def test_timeline_rebuilds_stacks_between_changes() -> None:
    events = [
        _ev("B", "a", 0),
        _ev("B", "b", 0),
        _ev("E", "b", 1000),
        _ev("B", "c", 1000),
        _ev("E", "c", 3000),
        _ev("E", "a", 3000),
        _ev("B", "x", 500, tid=9),
    ]
    segs = stack_segments(events)
    assert [(s.start, s.end, [f.name for f in s.frames]) for s in segs] == [
        (0.0, 0.001, ["a", "b"]),
        (0.001, 0.003, ["a", "c"]),
    ]


def _frames(*names: str) -> tuple[Frame, ...]:
    files = {"probe_loop": "adprof/flame/flame_worker.py", "_adprof_clock_anchor": "adprof/flame/flame_worker.py"}
    return tuple(Frame(n, files.get(n, "m.py"), None) for n in names)


def test_timeline_keeps_only_phase_windows_and_cuts_to_the_probe() -> None:
    # py-spy's clock runs 10 s ahead of the worker's; the anchor spins from 1.0 to 1.1 (worker time)
    segs = [
        Segment(10.5, 11.0, _frames("<module>", "_find_and_load", "exec_module")),  # imports: outside
        Segment(11.001, 11.1, _frames("<module>", "main", "_adprof_clock_anchor")),
        Segment(11.101, 11.201, _frames("<module>", "main", "probe_loop", "measure_point", "forward")),
        Segment(11.201, 11.301, _frames("<module>", "main", "probe_loop", "measure_point", "backward")),
        Segment(11.301, 11.32, _frames("<module>", "main", "probe_loop", "measure_point", "timed_block")),
    ]
    log = {"anchor": [1.0, 1.1], "events": [[1.1, "forward"], [1.2, "backward"], [1.33, None]], "iterations": 1}
    off, err = clock_offset(segs, (1.0, 1.1), rate=1000.0)
    assert off == pytest.approx(10.0, abs=0.002) and err < 0.06
    prof = phased_profile(segs, log, 1000.0, offset=(10.0, 0.0))
    got = {(s.phase, tuple(f.name for f in s.frames)) for s in prof.slices}
    assert got == {
        ("forward", ("measure_point", "forward")),
        ("backward", ("measure_point", "backward")),
        ("backward", ("measure_point", "timed_block")),  # not base.py's: a probe frame
    }
    assert prof.outside == pytest.approx(0.5 + 0.099, abs=1e-6) and prof.late < 1e-9  # the imports and the anchor
    assert prof.harness == 0.0  # timed_block has no harness file suffix here: it is a probe frame
    samples = dict(((p, f[-1].name), n) for p, f, n in prof.samples())
    assert samples[("forward", "forward")] == 100  # 0.1 s at 1000 Hz


def test_timeline_a_late_sample_stands_for_five_typical_gaps_at_most() -> None:
    work = _frames("main", "probe_loop", "measure_point", "work")
    segs = [Segment(i * 0.002, (i + 1) * 0.002, work) for i in range(50)]  # py-spy every 2 ms (asked: 1 ms)
    segs.append(Segment(0.1, 1.1, work))  # then one sample held for a second: py-spy fell behind
    assert stale_after(segs, 1000.0) == pytest.approx(0.010)
    log = {"anchor": [0, 0], "events": [[0.0, "run"], [2.0, None]], "iterations": 1}
    prof = phased_profile(segs, log, 1000.0, offset=(0.0, 0.0))
    assert prof.seconds == pytest.approx(0.1 + 0.010) and prof.late == pytest.approx(0.990)


def test_timeline_offset_is_refined_so_each_kind_of_stack_sits_in_one_phase() -> None:
    """Deep stacks are read later than the anchor's: py-spy's times run 3 ms late for them. The refined offset
    puts forward's stacks in forward and backward's in backward again."""
    runner = ("main", "probe_loop", "measure_point", "run", "eager", "calls")
    fwd = _frames(*runner, "forward_fn", "chain", "op", "kernel")  # deep enough to say where in a point it is
    bwd = _frames(*runner, "backward_fn", "engine", "node", "kernel")
    events, segs = [], []
    for i in range(40):  # 10 ms phases, forward then backward; one sample per ms, 3 ms late
        t = i * 0.02
        events += [[t, "forward"], [t + 0.01, "backward"]]
        segs += [Segment(t + k * 0.001 + 0.003, t + (k + 1) * 0.001 + 0.003, fwd) for k in range(10)]
        segs += [Segment(t + 0.01 + k * 0.001 + 0.003, t + 0.01 + (k + 1) * 0.001 + 0.003, bwd) for k in range(10)]
    events.append([0.8, None])
    windows = phase_windows(events)
    assert 0.002 < refine_offset(segs, windows, 0.0, 1000.0) <= 0.003 + 1e-9  # every such offset is exact here
    prof = phased_profile(segs, {"events": events, "iterations": 40}, 1000.0, offset=(0.003, 0.0))
    assert {(s.phase, s.frames[4].name) for s in prof.slices} == {
        ("forward", "forward_fn"),
        ("backward", "backward_fn"),
    }
    assert prof.agreement == 1.0
    late = phased_profile(segs, {"events": events, "iterations": 40}, 1000.0, offset=(0.0, 0.0))
    assert late.agreement < 0.8  # unrefined, 3 ms of every 10 lands in the next phase


def test_timeline_leaves_out_the_harness_frames() -> None:
    harness = Frame("timed_block", "adprof/backends/base.py", None)
    segs = [Segment(0.0, 0.004, (*_frames("main", "probe_loop", "measure_point"), harness))]
    log = {"anchor": [0, 0], "events": [[0.0, "record"], [0.01, None]], "iterations": 1}
    prof = phased_profile(segs, log, 1000.0, offset=(0.0, 0.0))
    assert not prof.slices and prof.harness == pytest.approx(0.004)


def _prof(selfs: dict[str, float], points: int, window: float) -> PhasedProfile:
    slices = [Slice(0.0, sec, "transform", _frames("measure_point", fn)) for fn, sec in selfs.items()]
    return PhasedProfile(slices=slices, rate=1000.0, iterations=points, window_seconds=window)


def test_growth_ranks_by_time_added_per_layer_not_by_a_ratio_on_a_tiny_base() -> None:
    """key equality adds most time per point per layer; a function seen once at the shallow depth, with a far
    larger ratio, is ranked below it (and a function that grew little, below both)."""
    base = _prof({"structural_key_eq": 0.60, "bind": 0.001, "other": 0.399}, points=20, window=1.0)
    new = _prof({"structural_key_eq": 0.90, "bind": 0.05, "other": 0.05}, points=2, window=1.0)
    rows = growth(base, new, depth_delta=4)
    assert [g.function for g in rows][:2] == ["structural_key_eq (m.py)", "bind (m.py)"]
    assert rows[1].ratio > rows[0].ratio  # the ratio alone would have put bind first
    text = render_growth(rows, 8, 12)
    assert "fastest-growing: structural_key_eq (m.py)" in text


# --------------------------------------------------------------------------- formats


SPEEDSCOPE_SCHEMA = {  # speedscope's published schema, written from src/lib/file-format-spec.ts (--required)
    "$ref": "#/definitions/File",
    "definitions": {
        "Frame": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "file": {"type": "string"},
                "line": {"type": "number"},
                "col": {"type": "number"},
            },
            "required": ["name"],
        },
        "Unit": {"enum": ["none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"]},
        "Sampled": {
            "type": "object",
            "properties": {
                "type": {"const": "sampled"},
                "name": {"type": "string"},
                "unit": {"$ref": "#/definitions/Unit"},
                "startValue": {"type": "number"},
                "endValue": {"type": "number"},
                "samples": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
                "weights": {"type": "array", "items": {"type": "number"}},
            },
            "required": ["type", "name", "unit", "startValue", "endValue", "samples", "weights"],
        },
        "Evented": {
            "type": "object",
            "properties": {"type": {"const": "evented"}},
            "required": ["type", "name", "unit", "startValue", "endValue", "events"],
        },
        "File": {
            "type": "object",
            "properties": {
                "$schema": {"const": "https://www.speedscope.app/file-format-schema.json"},
                "shared": {
                    "type": "object",
                    "properties": {"frames": {"type": "array", "items": {"$ref": "#/definitions/Frame"}}},
                    "required": ["frames"],
                },
                "profiles": {
                    "type": "array",
                    "items": {"anyOf": [{"$ref": "#/definitions/Evented"}, {"$ref": "#/definitions/Sampled"}]},
                },
                "name": {"type": "string"},
                "activeProfileIndex": {"type": "number"},
                "exporter": {"type": "string"},
            },
            "required": ["$schema", "shared", "profiles"],
        },
    },
}


def test_speedscope_json_validates_against_the_schema() -> None:
    stacks = [
        ("record", (Frame("measure_point", "adprof/backends/builtin.py", 40), Frame("f", "", None)), 0.02),
        ("backward", (), 0.004),
    ]
    doc = json.loads(render_speedscope(stacks, name="t"))
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, SPEEDSCOPE_SCHEMA)
    prof = doc["profiles"][0]
    frames = doc["shared"]["frames"]
    assert all(i < len(frames) for s in prof["samples"] for i in s)
    assert prof["endValue"] == pytest.approx(sum(prof["weights"]))
    assert "line" not in frames[2] and "file" not in frames[2]  # a frame without them: left out, not null


def test_chrometrace_events_nest_and_cover_the_slices() -> None:
    a, b, c = (Frame(n, "m.py", 1) for n in "abc")
    slices = [Slice(1.0, 1.1, "forward", (a, b)), Slice(1.1, 1.2, "forward", (a, c)), Slice(1.5, 1.6, "backward", (a,))]
    doc = json.loads(render_chrometrace(slices))
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    by = {(e["name"], e["ts"]): e["dur"] for e in xs}
    assert by[("phase forward", 0.0)] == pytest.approx(200000) and by[("a", 0.0)] == pytest.approx(200000)
    assert by[("b", 0.0)] == pytest.approx(100000) and by[("c", 100000.0)] == pytest.approx(100000)
    assert by[("phase backward", 500000.0)] == pytest.approx(100000)  # a gap closes every frame
    assert {e["name"] for e in doc["traceEvents"] if e["ph"] == "M"} == {"process_name", "thread_name"}


def test_phased_samples_keep_the_total() -> None:
    f = _frames("x")
    prof = PhasedProfile(
        slices=[Slice(0, 0.0014, "a", f), Slice(0, 0.0014, "b", f), Slice(0, 0.0002, "c", f)], rate=1000
    )
    assert sum(n for _, _, n in prof.samples()) == 3


# --------------------------------------------------------------------------- R27: the options


@pytest.mark.parametrize(
    ("opts", "words"),
    [
        (["-o", "x.png"], ("x.png", "svg")),
        (["--format", "raw", "-o", "x.svg"], ("x.svg", "raw")),
        (["--format", "speedscope", "-o", "x.txt"], ("x.txt", "speedscope")),
        (["--rate", "100000"], ("--rate", "1000")),
        (["--rate", "0"], ("--rate",)),
        (["--vs", "3"], ("--vs",)),
    ],
)
def test_r27_flame_option_rules(tmp_path, capsys, monkeypatch, opts, words) -> None:
    monkeypatch.chdir(tmp_path)
    rc = cli_main(["flame", f"{CHAINS}::mul", "--depth", "3", *opts])
    assert rc == 2
    line = _one_line_err(capsys)
    assert all(w in line for w in words), line
    assert not list(tmp_path.iterdir())  # nothing written


def test_r27_flame_cmd_format_follows_the_suffix(tmp_path, capsys) -> None:
    rc = cli_main(["flame", "--cmd", "true {depth}", "--depth", "3", "-o", str(tmp_path / "x.png")])
    assert rc == 2 and "x.png" in _one_line_err(capsys)


def test_r27_flame_accepts_no_color(tmp_path, capsys) -> None:
    rc = cli_main(["flame", str(tmp_path / "nope.py") + "::c", "--depth", "3", "--no-color"])
    assert rc == 2
    line = _one_line_err(capsys)
    assert "no such file" in line and "unrecognized" not in line


def test_r27_flame_cmd_names_a_function_only_when_there_is_one(tmp_path, capsys, monkeypatch) -> None:
    import adprof.cli.cmd as cmd

    class Prof(list):
        total = 1000

    def fake(template, depth, patterns=(), timeout=0.0):
        return Prof([("main", 1000, 10), ("work", 900, 900)])

    monkeypatch.setattr(cmd, "callgrind_profile", fake)
    monkeypatch.setattr(cmd, "check_program", lambda *a, **k: None, raising=False)
    svg = tmp_path / "x.svg"
    rc = cli_main(["flame", "--cmd", "true {depth}", "--depth", "3", "-o", str(svg)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "no function matches" not in out and "ValueKey::eq" not in out
    rc = cli_main(["flame", "--cmd", "true {depth}", "--depth", "3", "--focus", "^work$", "-o", str(svg)])
    out = capsys.readouterr().out
    assert rc == 0 and "90.0% of the instructions (inclusive) in ^work$: work" in out
    rc = cli_main(["flame", "--cmd", "true {depth}", "--depth", "3", "--focus", "nothere", "-o", str(svg)])
    assert "no function matches 'nothere'" in capsys.readouterr().out
