"""The ``--cmd`` point runner (adprof/backends/cmd.py): bad commands, the protocol, and the native probe.

Bad commands run tests/cmds/fake.py; every process a test starts carries a unique marker in its argv,
and the test checks the process table for it afterwards (and kills, by pid, only what it started).
Scaling facts are asserted on the native probe's deterministic counters and on callgrind instruction
counts, never on wall time.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adprof.backends import cmd
from adprof.backends.cmd import CommandFailure, run_command_point
from adprof.model import Point

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "tests" / "cmds" / "fake.py"
PROBE = Path(os.environ.get("ADPROF_NATIVE_PROBE", ROOT / "examples/native/target/release/adprof-native-probe"))
needs_probe = pytest.mark.skipif(
    not PROBE.is_file(),
    reason=f"native probe not built ({PROBE}): run examples/native/build.sh "
    "(needs cargo and ../shared/vendor/computegraph-0.1.0)",
)
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
TRACED_PHASES = {"transform": "*phase_transform*", "drop": "*phase_drop*"}
EAGER_PHASES = {"forward": "*phase_forward*", "backward": "*phase_backward*"}


# ---------------------------------------------------------------------------------------------------
# process-table helpers


def _pids_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(marker.encode() in a for a in argv):
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def unique_marker():
    """A unique token for the processes of one test; afterwards none may be left (the runner reaps
    them), and anything that is left is killed by pid so the suite leaves nothing behind."""
    token = f"adprof-test-{uuid.uuid4().hex}"
    assert _pids_with(token) == []
    yield token
    left = []
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        left = _pids_with(token)
        if not left:
            break
        time.sleep(0.05)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"processes left behind: {left}"


marker = pytest.fixture(name="marker")(unique_marker)


def fake(behaviour: str, marker: str) -> str:
    return f"{sys.executable} {FAKE} {behaviour} {{depth}} {marker}"


def _fails(template: str, kind: str, *, timeout: float = 10.0, **kw) -> str:
    with pytest.raises(CommandFailure) as info:
        run_command_point(template, 3, kw.pop("mode", "traced"), timeout=timeout, **kw)
    assert info.value.kind == kind
    msg = info.value.message
    assert "\n" not in msg and msg == str(info.value)
    return msg


# ---------------------------------------------------------------------------------------------------
# bad commands: one line each, nothing left behind


def test_missing_program(marker):
    msg = _fails(f"/nonexistent/{marker} {{depth}}", "missing")
    assert msg == f"command not found: /nonexistent/{marker}"
    msg = _fails(f"no-such-program-{marker} {{depth}}", "missing")
    assert msg == f"command not found on PATH: no-such-program-{marker}"


def test_not_executable(marker):
    path = ROOT / "tests" / "cmds" / "not_executable"
    assert not os.access(path, os.X_OK)
    assert _fails(f"{path} {{depth}} {marker}", "not-executable") == f"command is not executable: {path}"


def test_template_without_depth():
    msg = _fails(f"{sys.executable} {FAKE} ok 3", "template")
    assert "no {depth} placeholder" in msg


def test_nonzero_exit_reports_stderr_tail(marker):
    msg = _fails(fake("fail", marker), "exit")
    assert msg == f"{sys.executable} exited with status 3: something went wrong | panicked at depth 3"


def test_no_json_where_phases_expected(marker):
    msg = _fails(fake("plain", marker), "no-json", require_json=True)
    assert msg == f"{sys.executable} printed no JSON object on stdout (phases were expected)"


def test_no_json_costs_the_process_wall_time(marker):
    pt = run_command_point(fake("plain", marker), 3, "traced", timeout=10)
    assert set(pt.times) == {"process"}
    assert pt.times["process"] == pt.extra["process_seconds"] > 0
    assert "wall time" in pt.extra["counted"]


def test_malformed_value(marker):
    assert _fails(fake("malformed", marker), "malformed") == 'transform_seconds is "fast", not a number'


def test_broken_json_line(marker):
    msg = _fails(fake("broken", marker), "malformed")
    assert msg.startswith("the last JSON line of stdout does not parse")


def test_negative_value(marker):
    assert _fails(fake("negative", marker), "negative") == "drop_seconds is negative (-0.5)"


def test_hang_is_killed_at_the_timeout(marker):
    t0 = time.monotonic()
    msg = _fails(fake("hang", marker), "timeout", timeout=1.0)
    assert time.monotonic() - t0 < 5
    assert msg.startswith(f"{sys.executable} did not finish within 1 s (killed with its process group after 1.")


def test_flood_is_stopped_at_the_limit(marker):
    t0 = time.monotonic()
    msg = _fails(fake("flood", marker), "flood", output_limit=1 << 16)
    assert time.monotonic() - t0 < 5
    assert (
        msg == f"{sys.executable} wrote more than 65,536 bytes to stdout (output limit); stopped reading and killed it"
    )


def test_children_die_when_the_program_exits(marker, tmp_path):
    pids = tmp_path / "pids"
    pt = run_command_point(fake("forks", marker), 3, "traced", timeout=10, env={"FAKE_PIDS": str(pids)})
    assert pt.times == {"transform": 0.001}
    children = [int(p) for p in pids.read_text().split()]
    assert len(children) == 2
    deadline = time.monotonic() + 3
    while any(_alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in children)


def test_children_die_with_a_hanging_program(marker, tmp_path):
    pids = tmp_path / "pids"
    _fails(fake("forks-hang", marker), "timeout", timeout=1.5, env={"FAKE_PIDS": str(pids)})
    children = [int(p) for p in pids.read_text().split()]
    assert len(children) == 2
    deadline = time.monotonic() + 3
    while any(_alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in children)


def test_child_dies_with_adprof(marker, tmp_path):
    """PR_SET_PDEATHSIG: a command outlives neither the adprof process that started it."""
    script = (
        "import sys, time; from adprof.backends import cmd; "
        f"cmd.run_command_point({fake('hang', marker)!r}, 3, 'traced', timeout=60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", script, marker], env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 10
        while len(_pids_with(marker)) < 2 and time.monotonic() < deadline:  # the parent and its command
            time.sleep(0.05)
        assert len(_pids_with(marker)) == 2
    finally:
        parent.kill()  # SIGKILL: no cleanup code of adprof runs
        parent.wait()
    # the marker fixture asserts that the command died too


# ---------------------------------------------------------------------------------------------------
# the protocol


def test_traced_protocol_mapping(marker):
    pt = run_command_point(fake("ok", marker), 4, "traced", timeout=10)
    assert pt.times == {"transform": 1e-6 * 16, "drop": 1e-6}
    assert pt.counters == {"transform": {"key_comparisons": 16.0}}
    assert pt.extra["process_seconds"] > 0


def test_eager_protocol_mapping(marker):
    pt = run_command_point(fake("eager", marker), 4, "eager", timeout=10)
    assert pt.times == {"forward0": 0.1, "forward": 0.25, "backward0": 5.0, "backward": 2.0}
    assert pt.extra["backward_calls"] == [5.0, 1.0, 3.0, 2.0]
    assert pt.extra["forward_calls"] == [0.1, 0.2, 0.3]


def test_phases_need_the_instructions_metric():
    _fails(fake("ok", "x"), "template", phases=TRACED_PHASES)


def test_keys_map_to_engine_phases():
    obj = {k: 1.0 for k in cmd.PROTOCOL_KEYS}
    traced, eager = Point(depth=1), Point(depth=1)
    assert cmd.apply_protocol(traced, obj, "traced") and cmd.apply_protocol(eager, obj, "eager")
    assert set(traced.times) == {"transform", "drop", "compile", "lower", "record", "run"}
    assert set(eager.times) == {"transform", "drop", "compile", "lower", "forward", "backward"}
    assert not cmd.apply_protocol(Point(depth=1), {"other": 1}, "traced")


def test_nested_per_call_counters():
    calls = [{"key_comparisons": 9}, {"key_comparisons": 4}, {"key_comparisons": 6}, {"key_comparisons": 5}]
    pt = Point(depth=1)
    cmd.apply_protocol(pt, {"counters": {"backward": calls, "forward": {"nodes_visited": 3}}}, "eager")
    assert pt.counters["backward0"] == {"key_comparisons": 9.0}
    assert pt.counters["backward"] == {"key_comparisons": 5.0}  # the median of calls 1..
    assert pt.counters["forward"] == {"nodes_visited": 3.0}
    assert len(pt.extra["backward_call_counters"]) == 4


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_subnormal=False), min_size=2, max_size=30))
def test_eager_backward_is_call0_and_median_of_the_rest(calls):
    pt = Point(depth=1)
    cmd.apply_protocol(pt, {"backward_seconds": calls}, "eager")
    assert pt.times["backward0"] == calls[0]
    assert pt.times["backward"] == statistics.median(calls[1:])
    assert pt.extra["backward_calls"] == calls


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(sorted(cmd.PROTOCOL_KEYS)),
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=False),
            st.text(max_size=3),
            st.booleans(),
            st.none(),
        ),
        min_size=1,
    )
)
def test_bad_values_fail_with_one_line(obj):
    bad = {
        k for k, v in obj.items() if isinstance(v, bool) or not isinstance(v, float) or not math.isfinite(v) or v < 0
    }
    try:
        cmd.apply_protocol(Point(depth=1), obj, "traced")
    except CommandFailure as exc:
        assert bad and exc.kind in ("malformed", "negative") and "\n" not in exc.message
    else:
        assert not bad


# ---------------------------------------------------------------------------------------------------
# callgrind output parsing (no valgrind needed)

CALLGRIND_SAMPLE = """\
events: Ir
fn=(1) main
1 10
cfn=(2) outer
calls=1 0
1 100
fn=(2)
1 5
cfn=(3) eq
calls=2 0
1 95
fn=(3)
1 40
cfn=(4) eq'2
calls=3 0
1 55
fn=(4)
1 55
totals: 110
"""


def test_profile_counts_recursion_once():
    prof = cmd.profile_from_callgrind(CALLGRIND_SAMPLE)
    rows = {name: (inc, self_) for name, inc, self_ in prof}
    assert rows["main"] == (110, 10)
    assert rows["outer"] == (100, 5)
    assert rows["eq"] == (95, 95)  # eq and eq'2 are one function; its inclusive cost is counted once
    assert prof.total == 110
    assert prof.share(r"^eq$") == pytest.approx(95 / 110)


# ---------------------------------------------------------------------------------------------------
# the native probe: deterministic counters


def probe(kind: str, *args: str) -> str:
    return " ".join([str(PROBE), kind, "{depth}", *args])


def _counter_cost(pt: Point, phases: tuple[str, ...]) -> float:
    return sum(pt.counters[p]["key_comparisons"] + pt.counters[p]["metadata_lookups"] for p in phases)


def _marginal_ratios(values: list[float]) -> list[float]:
    diffs = [b - a for a, b in zip(values, values[1:], strict=False)]
    return [b / a for a, b in zip(diffs, diffs[1:], strict=False)]


@needs_probe
@pytest.mark.parametrize(("kind", "base", "depths"), [("mul", 2.0, range(8, 15)), ("svd3", 3.0, range(5, 10))])
def test_probe_counters_grow_per_layer(kind, base, depths):
    costs = []
    for d in depths:
        pt = run_command_point(probe(kind), d, "traced", timeout=30)
        assert set(pt.times) >= {"transform", "drop", "record"}
        costs.append(_counter_cost(pt, ("transform", "drop")))
    for r in _marginal_ratios(costs)[-3:]:
        assert r == pytest.approx(base, abs=0.02)


@needs_probe
def test_probe_fixed_is_linear():
    costs = [
        _counter_cost(run_command_point(probe("fixed"), d, "traced", timeout=30), ("transform", "drop"))
        for d in (10, 20, 40, 80)
    ]
    diffs = [b - a for a, b in zip(costs, costs[1:], strict=False)]
    per_layer = [diff / n for diff, n in zip(diffs, (10, 20, 40), strict=False)]
    # the same cost per added layer at every depth (up to the hash tables' probe lengths), not doubling
    assert max(per_layer) < 1.05 * min(per_layer)


@needs_probe
def test_probe_eager_sin_is_superlinear_per_call():
    steady = {}
    for d in (50, 100, 200):
        pt = run_command_point(probe("sin", "--calls", "4"), d, "eager", timeout=30)
        assert len(pt.extra["backward_calls"]) == 4 and "backward0" in pt.times
        calls = [c["key_comparisons"] for c in pt.extra["backward_call_counters"]]
        assert calls[1:] == [calls[1]] * 3  # every warm call pays the same rebuild
        steady[d] = pt.counters["backward"]["key_comparisons"]
    # each of the d replayed keys walks its own depth, on registration and on release: quadratic
    assert steady[100] / steady[50] == pytest.approx(4.0, rel=0.05)
    assert steady[200] / steady[100] == pytest.approx(4.0, rel=0.05)
    fixed = [
        _counter_cost(run_command_point(probe("fixed-sin"), d, "eager", timeout=30), ("backward",)) for d in (100, 200)
    ]
    assert fixed[1] / fixed[0] == pytest.approx(2.0, rel=0.05)  # interned: linear


@needs_probe
@pytest.mark.parametrize(
    ("kind", "depths", "mode", "verdict", "base"),
    [
        ("mul", range(4, 17, 2), "traced", "exponential-transform", 2.0),
        ("svd3", range(3, 11), "traced", "exponential-transform", 3.0),
        ("fixed", (10, 20, 40, 80, 160), "traced", "linear", None),
        ("sin", (50, 100, 200, 400, 800), "eager", "superlinear-backward", None),
        ("fixed-sin", (50, 100, 200, 400, 800), "eager", "linear", None),
    ],
)
def test_probe_points_decide_like_the_engine(kind, depths, mode, verdict, base):
    """The points' counters go to the phases the classifier reads, so they decide as the engine's do."""
    from adprof.analysis import classify
    from adprof.model import Series

    series = Series(chain=kind, backend="cmd", profile=None, mode=mode)
    series.points = [run_command_point(probe(kind), d, mode, timeout=30) for d in depths]
    v = classify.decide(series)
    assert v.kind == verdict and v.metric.startswith("counters")
    if base is not None:
        assert v.base == pytest.approx(base, abs=0.1)


@needs_probe
@pytest.mark.parametrize(("kind", "depth"), [("mul", 3), ("svd3", 3), ("sin", 6), ("fixed", 3)])
@pytest.mark.parametrize("x", [0.7, -1.3])
def test_probe_gradient_matches_finite_differences(kind, depth, x):
    def run(at: float) -> dict:
        out = subprocess.run(
            [str(PROBE), kind, str(depth), "--x", repr(at), "--mode", "traced"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
        return json.loads(out.stdout.splitlines()[-1])

    h = 1e-6
    fd = (run(x + h)["value"] - run(x - h)["value"]) / (2 * h)
    assert run(x)["gradient"] == pytest.approx(fd, rel=1e-5, abs=1e-8)


@needs_probe
def test_probe_bad_arguments_exit_2():
    out = subprocess.run([str(PROBE), "nope", "3"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 2 and "unknown kind" in out.stderr
    msg = _fails(probe("nope"), "exit")
    assert msg.startswith(f"{PROBE} exited with status 2: adprof-native-probe: unknown kind")


# ---------------------------------------------------------------------------------------------------
# the native probe: instruction counts under callgrind


def _instructions(pt: Point, phases: tuple[str, ...]) -> int:
    return sum(int(pt.metrics[p]["instructions"]) for p in phases)


@needs_probe
@needs_valgrind
@pytest.mark.slow  # tests/test_cmd_cli.py's instruction run (verdict + identical counts) is the default representative
def test_probe_instructions_x2_and_identical_runs():
    counts = []
    for d in (10, 11, 12):
        pt = run_command_point(probe("mul"), d, "traced", metric="instructions", phases=TRACED_PHASES, timeout=120)
        assert "--toggle-collect" in pt.extra["counted"] and "*phase_transform*" in pt.extra["counted"]
        counts.append(pt.metrics["transform"]["instructions"] + pt.metrics["drop"]["instructions"])
    assert _marginal_ratios(counts)[-1] == pytest.approx(2.0, abs=0.1)
    transform_only = {"transform": TRACED_PHASES["transform"]}
    again = run_command_point(probe("mul"), 12, "traced", metric="instructions", phases=transform_only, timeout=120)
    assert again.metrics["transform"] == pt.metrics["transform"]  # identical, not close


@needs_probe
@needs_valgrind
def test_probe_profile_share_in_value_key_eq():
    prof = cmd.callgrind_profile(probe("mul"), 14, pattern="*phase_transform*", timeout=120)
    names = [name for name, _, _ in prof]
    assert any("phase_transform" in n for n in names)
    assert prof.total > 0 and all(0 <= self_ <= inc or inc == 0 for _, inc, self_ in prof)
    assert prof.share(cmd.VALUE_KEY_EQ) > 0.9


@needs_probe
@needs_valgrind
@pytest.mark.slow
def test_probe_instructions_svd3_x3_and_fixed_linear():
    svd = [
        _instructions(
            run_command_point(probe("svd3"), d, "traced", metric="instructions", phases=TRACED_PHASES, timeout=120),
            ("transform", "drop"),
        )
        for d in (6, 7, 8, 9)
    ]
    assert _marginal_ratios(svd)[-1] == pytest.approx(3.0, abs=0.1)
    fixed = [
        _instructions(
            run_command_point(probe("fixed"), d, "traced", metric="instructions", phases=TRACED_PHASES, timeout=120),
            ("transform", "drop"),
        )
        for d in (20, 40, 80)
    ]
    assert fixed[2] / fixed[1] == pytest.approx(2.0, rel=0.1) and fixed[1] / fixed[0] == pytest.approx(2.0, rel=0.15)


@needs_probe
@needs_valgrind
@pytest.mark.slow
def test_probe_instructions_eager_sin_per_call():
    def steady(kind: str, depth: int) -> tuple[float, list[int]]:
        pt = run_command_point(
            probe(kind, "--calls", "4"), depth, "eager", metric="instructions", phases=EAGER_PHASES, timeout=300
        )
        assert "backward0" in pt.metrics and "forward0" in pt.metrics
        return pt.metrics["backward"]["instructions"], pt.extra["backward_call_instructions"]

    depths = (100, 200, 400)
    sin = {d: steady("sin", d) for d in depths}
    fixed = {d: steady("fixed-sin", d)[0] for d in depths}
    assert len(sin[100][1]) == 4 and steady("sin", 100)[1] == sin[100][1]  # per call, identical runs
    sin_ratio = _marginal_ratios([sin[d][0] for d in depths])[0]
    fixed_ratio = _marginal_ratios([fixed[d] for d in depths])[0]
    assert fixed_ratio == pytest.approx(2.0, abs=0.1)  # linear: the marginal cost doubles with the interval
    assert sin_ratio > 2.8  # superlinear; the part above the interned chain is quadratic:
    extra = [sin[d][0] - fixed[d] for d in depths]
    assert extra[2] / extra[1] == pytest.approx(4.0, rel=0.1)


@needs_probe
@needs_valgrind
@pytest.mark.slow
def test_probe_instructions_baseline_mode_identical():
    template = probe("mul")
    first = run_command_point(template, 12, "traced", metric="instructions", timeout=120)
    second = run_command_point(template, 12, "traced", metric="instructions", timeout=120)
    assert first.metrics["process"]["instructions"] == second.metrics["process"]["instructions"] > 0
    assert "minus the same command at depth 0" in first.extra["counted"]
    deeper = run_command_point(template, 13, "traced", metric="instructions", timeout=120)
    assert deeper.metrics["process"]["instructions"] / first.metrics["process"]["instructions"] == pytest.approx(
        2.0, abs=0.15
    )
