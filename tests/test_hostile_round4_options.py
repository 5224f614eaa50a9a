"""Issue 39, the class "every option has one validation rule, shared by the CLI, the API, the fixture and
pyproject" (adprof/options.py), and the analysis' robustness: depths of any size, a crash in the analysis
that keeps the measurements. A property test over the table of rules (every rule refuses its out-of-range
values in every entry point that takes the option), then the listed cases (R12, R23, R24, R25, R28, R30-R32,
the hunt's --jobs and --budget, exact_base's overflow)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from params import property_twins

import adprof
from adprof.chain import ChainError
from adprof.cli import main
from adprof.guard import GuardConfigError, GuardLimits
from adprof.measure.plan import UsageError

try:
    from adprof import options

    RULES = options.RULES
except ImportError:  # fc6d0bb had no table: each test fails on its own assertion, not on this import
    options, RULES = None, {}  # type: ignore[assignment]

REPO = Path(__file__).resolve().parents[1]
HEALTHY = "    y = x\n    for _ in range(depth):\n        y = xp.sin(y)\n    return xp.sum(y)\n"


def chain_file(path: Path, name: str, decorator: str) -> Path:
    path.write_text(f"import adprof\n\n\n@adprof.chain({decorator})\ndef {name}(xp, x, depth):\n{HEALTHY}")
    return path


def f(xp, x, depth):
    """A chain function for the decorator's entry point."""
    return xp.sum(x)


def usage_error(capsys, argv: list[str]) -> str:
    """``adprof ARGV`` is refused at parsing (exit 2, nothing measured): its stderr."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    return capsys.readouterr().err


# --------------------------------------------------------------------------- the table, in every entry point

#: The command lines that take each rule's option (the parser refuses before anything is loaded).
CLI = {
    "budget": [["check", "x.py", "--budget"], ["guard", "x.py", "--budget"], ["hunt", "--budget"]],
    "cap": [["check", "x.py", "--cap"], ["guard", "x.py", "--cap"]],
    "calls": [["check", "x.py", "--calls"]],
    "jobs": [["check", "x.py", "--jobs"], ["hunt", "--jobs"]],
    "tolerance": [["guard", "x.py", "--tolerance"], ["compare", "a.json", "b.json", "--tolerance"]],
    "max_base": [["guard", "x.py", "--max-base"]],
    "max_exponent": [["guard", "x.py", "--max-exponent"]],
    "max_memory_exponent": [["guard", "x.py", "--max-memory-exponent"]],
    "max_depth": [["check", "x.py", "--max-depth"]],
    "depth": [["halve", "x.py", "--depth"]],
    "seed": [["hunt", "--seed"]],
    "tries": [["hunt", "--tries"]],
    "rate_depth": [["ratio", "x.py", "--max-depth"]],
}
#: The chain decorator's options under a rule.
DECORATOR = ("cap", "reuse", "seed", "repeats", "max_depth")
#: The fixture's (argument or marker) options, and ``[tool.adprof.guard]``'s keys.
FIXTURE = ("max_base", "max_exponent", "max_memory_exponent", "cap", "budget")
PYPROJECT = ("max_base", "max_exponent", "max_memory_exponent")
#: The API's options (checked by their rule with the command line's message, then parsed by its parser).
API = ("budget", "cap", "calls", "jobs")
API_GUARD = ("budget", "cap", "max_base", "max_exponent", "max_memory_exponent", "tolerance")
#: Rules read through another option: each dimension of input_shape, and max_leak's bytes (parse_bytes).
COMPOSITE = ("input_dim", "max_leak")


def bad_values(rule: options.Rule) -> list[Any]:
    """Out-of-range values of a rule: below, above, not finite, of the wrong type."""
    low = rule.low if rule.low_open else (rule.low - 1 if rule.type is int else rule.low / 2 if rule.low else -1.0)
    out: list[Any] = [low, rule.high * 10 if rule.type is float else int(rule.high) + 1, math.nan, math.inf, True]
    if rule.type is int:
        out.append(2.5)
    return out


def bad_texts(rule: options.Rule) -> list[str]:
    """Out-of-range command-line strings (ASCII only: ``١٢`` is not 12 for a shell user)."""
    texts = [str(v) for v in bad_values(rule) if not isinstance(v, bool)] + ["", "1_0", "١٢"]
    return texts


def test_every_rule_has_an_entry_point():
    """A rule nobody reads is a rule a new option forgot: each is wired somewhere."""
    wired = set(CLI) | set(DECORATOR) | set(FIXTURE) | set(PYPROJECT) | set(API) | set(API_GUARD) | set(COMPOSITE)
    assert set(RULES) <= wired, sorted(set(RULES) - wired)


@pytest.mark.parametrize("name", sorted(CLI))
def test_r30_cli_refuses_every_out_of_range_value(name, capsys):
    """--jobs 1000, --tolerance 1e308, --seed ١٢, --cap 1e-9 ...: one line, exit 2, naming the option."""
    for argv in CLI[name]:
        for text in bad_texts(RULES[name]):
            err = usage_error(capsys, [*argv, text])
            assert f"argument {argv[-1]}" in err and "Traceback" not in err, (argv, text, err)


@pytest.mark.parametrize("name", DECORATOR)
def test_r24_decorator_refuses_every_out_of_range_value(name):
    """reuse=nan, reuse=inf, seed=-1, repeats=0, max_depth=10**9: one line naming the chain and the option."""
    for value in bad_values(RULES[name]):
        with pytest.raises(ChainError) as info:
            adprof.chain(f, **{name: value})
        text = str(info.value)
        assert text.startswith("chain 'f': ") and f"{name}:" in text and "\n" not in text, (value, text)


class _Config:
    """What the fixture reads of pytest's config: the root (for pyproject.toml) and the --adprof-* options."""

    def __init__(self, root: Path, **given: Any) -> None:
        self.rootpath = root
        self.given = given

    def getoption(self, name: str) -> Any:
        return self.given.get(name)


@pytest.mark.parametrize("name", FIXTURE)
def test_r25_fixture_refuses_every_out_of_range_value(name, tmp_path):
    """fixture cap=1e-9 was accepted: every limit, cap and budget is refused before anything is measured."""
    from adprof.pytest_plugin import ScalingGuard

    guard = ScalingGuard(_Config(tmp_path), {})
    for value in bad_values(RULES[name]):
        with pytest.raises(pytest.fail.Exception) as info:
            guard.check("nothing.py::c", **{name: value})
        assert f"adprof guard: {name}:" in str(info.value), (value, str(info.value))


@pytest.mark.parametrize("name", PYPROJECT)
def test_r25_pyproject_refuses_every_out_of_range_value(name, tmp_path):
    for value in bad_values(RULES[name]):
        text = {math.nan: "nan", math.inf: "inf", True: "true"}.get(value, repr(value))
        (tmp_path / "pyproject.toml").write_text(f"[tool.adprof.guard]\n{name} = {text}\n")
        with pytest.raises(GuardConfigError) as info:
            GuardLimits.from_pyproject(tmp_path)
        assert f"[tool.adprof.guard] {name}:" in str(info.value), (value, str(info.value))


@pytest.mark.parametrize("name", API)
def test_api_refuses_every_out_of_range_value(name):
    for value in [*bad_values(RULES[name]), 10**5000]:  # an int Python refuses to write as a string
        with pytest.raises(UsageError, match=f"argument --{name}"):
            adprof.check("nothing.py", **{name: value})


@pytest.mark.parametrize("name", API_GUARD)
def test_api_guard_refuses_every_out_of_range_value(name):
    for value in bad_values(RULES[name]):
        with pytest.raises(UsageError, match=f"argument --{name.replace('_', '-')}"):
            adprof.guard("nothing.py", **{name: value})


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    name=st.sampled_from(sorted(set(RULES) - {"max_leak"})),
    value=st.floats(allow_nan=True, allow_subnormal=False) | st.integers(),
)
def test_every_rule_is_one_rule(name, value):
    """One rule in every entry point: the command line's string and the Python value are accepted alike."""
    rule = RULES[name]
    try:
        checked = rule.check(value)
    except options.OptionError:
        checked = None
    try:
        parsed = rule.parse(repr(value))
    except options.OptionError:
        parsed = None
    assert (checked is None) == (parsed is None) and checked == parsed


# --------------------------------------------------------------------------- the listed cases


def test_r24_reuse_nan_inf_and_empty_input_shape_are_refused():
    for kw in ({"reuse": math.nan}, {"reuse": math.inf}, {"input_shape": (0,)}, {"input_shape": (3, 0)}):
        with pytest.raises(ChainError, match="chain 'f': (reuse|input_shape):"):
            adprof.chain(f, **kw)
    assert adprof.chain(f, input_shape=()).make_input().shape == ()  # a scalar input is fine

    def swept(xp, x, depth, k):
        return xp.sum(x)

    with pytest.raises(ChainError, match="chain 'swept': reuse:"):  # a variant's reuse, through a sweep
        adprof.chain(swept, sweep={"k": [1, math.nan]}, reuse="k")


def test_r28_seed_and_huge_input_shape_name_the_chain_and_the_option():
    with pytest.raises(ChainError, match=r"^chain 'f': seed: expected a non-negative integer, got -1"):
        adprof.chain(f, seed=-1)
    with pytest.raises(ChainError, match=r"^chain 'f': input_shape: .* elements"):
        adprof.chain(f, input_shape=(10**6, 10**6))


def test_r24_cost_phases_nobody_measures_is_bad_input(tmp_path, capsys):
    """cost_phases=('nonexistent',) read inconclusive with exit 0: one line naming the chain, exit 2."""
    path = chain_file(tmp_path / "c.py", "nophase", "depths=(1, 2, 3), cost_phases=('nonexistent',)")
    code = main(["check", str(path), "--profile", "fixed", "--mode", "traced", "--no-color", "--budget", "30"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "chain 'nophase': cost_phases: 'nonexistent' is not a phase of engine traced" in err


def test_r25_fixture_max_base_zero_is_refused_not_the_default(pytester):
    """--adprof-max-base 0 silently became 1.1: it is a usage error now."""
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("--adprof-max-base", "0")  # the plugin: its entry point
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "expected a positive number, got '0'" in result.stderr.str()


def test_r25_fixture_measures_an_eager_only_chain(tmp_path):
    """The fixture refused an eager-only chain that the CLI measures: it guards the chain's own modes."""
    from adprof.pytest_plugin import ScalingGuard

    path = chain_file(tmp_path / "eager.py", "only_eager", "input_shape=(3,), depths=(1, 2, 3, 4), modes=('eager',)")
    guard = ScalingGuard(_Config(tmp_path), {})
    report = guard.check(f"{path}::only_eager", profile="fixed", budget=60, cap=5)
    assert [c.result.series.mode for c in report.checks] == ["eager"]


def test_r31_instructions_schedule_honours_max_depth():
    from adprof.cli.check import _deepest
    from adprof.cli.instructions import doubling_depths

    assert max(doubling_depths(range(1, 17), None, 16)) == 16  # max_depth=16: not 32
    assert max(doubling_depths([1, 2, 3, 4], [8, 64], 4)) == 4  # the backend's 8..128 does not apply past 4
    assert len(doubling_depths([1, 2, 3, 4], [8, 64], 4)) >= 3
    assert _deepest({"depths": [1, 2, 3], "declared_depths": True}, None) == 3
    assert _deepest({"depths": [1, 2, 3], "declared_depths": False}, None) is None
    assert _deepest({"depths": [1, 2, 3], "declared_depths": True}, 40) == 40  # --max-depth wins


@pytest.mark.parametrize("text", ["1/99999999999999999999", "1/١٢", "0/4", "5/4", "1/", "1/4/2", "1/-4"])
def test_r32_shard_strings_are_bounded(text, capsys):
    err = usage_error(capsys, ["check", "x.py", "--shard", text])
    assert "argument --shard: expected K/N" in err


@pytest.mark.parametrize("text", ["1,,2", ",1", "1,", "1,x", "1,10000001", "١,2"])
def test_r32_depths_lists_are_strict(text, capsys):
    for command in ("check", "guard"):
        err = usage_error(capsys, [command, "x.py", "--depths", text])
        assert "argument --depths: expected positive ints" in err


def test_r32_jobs_tolerance_and_non_ascii_seed(capsys):
    assert "at most 256" in usage_error(capsys, ["check", "x.py", "--jobs", "1000"])
    assert "at most 10" in usage_error(capsys, ["guard", "x.py", "--tolerance", "1e308"])
    assert "not an integer" in usage_error(capsys, ["hunt", "--seed", "١٢"])


#: The address space of a process that must not fill the memory (on fc6d0bb ``max_depth=10**9`` did: a MemoryError
#: under this limit, not the machine's memory).
ADDRESS_SPACE = 3 << 30


def _limited() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _run_limited(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(adprof.__file__).resolve().parents[1])}
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=120, cwd=cwd, env=env, preexec_fn=_limited, check=False
    )


def test_r23_max_depth_is_bounded_and_never_materialised(tmp_path):
    code = "import adprof\nadprof.chain(lambda xp, x, depth: x, name='f', max_depth=10**9)\n"
    done = _run_limited([sys.executable, "-c", code], tmp_path)
    assert "chain 'f': max_depth:" in done.stderr and "got 1000000000: too large" in done.stderr, done.stderr[-300:]
    assert "MemoryError" not in done.stderr
    ch = adprof.chain(f, max_depth=options.MAX_DEPTH)
    assert isinstance(ch.depths, range) and ch.max_depth == options.MAX_DEPTH  # a range, not ten million ints
    meta = ch.metadata()["depths"]
    assert len(meta) < 200 and meta[0] == 1 and meta[-1] == options.MAX_DEPTH
    assert ch.decorator_options()["max_depth"] == options.MAX_DEPTH
    assert adprof.chain(f, max_depth=5).depths == (1, 2, 3, 4, 5)  # short ones stay a tuple


def test_r23_max_depth_huge_in_a_file_is_one_line(tmp_path):
    path = chain_file(tmp_path / "deep.py", "deep", "max_depth=10**9")
    done = _run_limited([sys.executable, "-m", "adprof", "check", str(path), "--no-color", "--budget", "30"], tmp_path)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2 and len(lines) == 1 and "chain 'deep': max_depth:" in lines[0], done.stderr[-300:]


def test_hunt_jobs_are_bounded_by_the_cores(monkeypatch, tmp_path, capsys):
    """hunt --jobs 12 started 12 workers on 2 cores: it starts as many as the cores, and says so."""
    import adprof.cli.hunt as hunt_cli

    lanes: list[int] = []

    class Pool(hunt_cli.LanePool):
        def __init__(self, jobs: int, *a: Any, **kw: Any) -> None:
            lanes.append(jobs)
            super().__init__(jobs, *a, **kw)

    monkeypatch.setattr(hunt_cli, "LanePool", Pool)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    code = main(["hunt", "--backend", "engine", "--jobs", "12", "--budget", "0.001", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert lanes == [2] and "--jobs 12: this machine has 2 cores; starting 2 workers" in err
    assert code == 2


def test_hunt_budget_too_small_is_one_line_exit_2(tmp_path, capsys):
    """hunt --budget 0.001 said "no confirmed finding", exit 0, after trying nothing."""
    code = main(["hunt", "--backend", "engine", "--budget", "0.001", "--out", str(tmp_path / "o"), "--no-color"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines == [lines[0]] and "--budget 0.001 s is too small" in lines[0]


@pytest.mark.parametrize(
    "text",
    [
        "[tool]\nadprof = 3\n",
        'tool = "x"\n',
        "[tool.adprof]\nguard = [1]\n",
        b"[tool.adprof.guard]\nmax_base = 1.2 # \xff\n",
    ],
)
def test_r12_malformed_pyproject_is_one_line(text, tmp_path, monkeypatch, capsys):
    """[tool] adprof = 3, tool = "x", a non-UTF-8 byte: AttributeError / UnicodeDecodeError, exit 3 and a
    traceback in pytest; now one line, exit 2, and a clean pytest usage error."""
    from adprof.pytest_plugin import ScalingGuard

    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_bytes(text if isinstance(text, bytes) else text.encode())
    monkeypatch.chdir(tmp_path)
    code = main(["guard", str(REPO / "probes" / "chains.py"), "--no-color"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and str(pyproject) in err
    with pytest.raises(pytest.UsageError, match="pyproject.toml"):
        ScalingGuard(_Config(tmp_path), {})


# --------------------------------------------------------------------------- analysis over depths of any size


def test_exact_base_does_not_overflow_on_wide_steps():
    from adprof.analysis.marginal import exact_base

    b = exact_base(2.0, 1000.0, 2000.0)  # overflowed: hi started at 1.0 with 700/2000 < 1
    assert 1.0 < b < 1.01
    # the base whose marginals over steps of 1000 and 2000 layers have ratio 2 reproduces it
    h = lambda g: math.expm1(math.log(b) * g) / g  # noqa: E731
    assert b**1000 * h(2000) / h(1000) == pytest.approx(2.0, rel=1e-6)


def _series(depths: list[int], values: list[float]) -> Any:
    from adprof.model import Point, Series

    points = [
        Point(
            depth=d,
            times={"transform": v, "drop": v},
            counters={"transform": {"key_comparisons": v}, "drop": {"key_comparisons": 0.0}},
            memory={"saved_bytes": v},
        )
        for d, v in zip(depths, values, strict=True)
    ]
    timed = [
        Point(depth=d, times={"transform": v, "drop": v}, samples={"transform": [v, v * 1.01, v * 0.99]})
        for d, v in zip(depths, values, strict=True)
    ]
    return Series("c", "engine", "fixed", "traced", points=points), Series("c", "jax", None, "compile", points=timed)


def test_the_issue_case_large_problem_sizes_decide():
    """Depths 5,000 to 160,000 (problem sizes) with a cost growing with them: check ended in OverflowError from
    exact_base through decide_memory."""
    from adprof.analysis.classify import decide
    from adprof.analysis.memory import decide_memory

    depths = [5000, 10000, 20000, 40000, 80000, 160000]
    exact, timed = _series(depths, [3.0 * d**2 for d in depths])
    assert decide(exact).kind.startswith("superlinear")
    assert decide_memory(exact).kind == "superlinear-memory"
    linear, _ = _series(depths, [2.0 * d for d in depths])
    assert decide(linear).kind == "linear" and decide_memory(linear).kind == "linear"
    decide(timed)


def _analysis_never_raises_over_depths_of_any_size(depths, data):
    """decide() and decide_memory() over depth grids up to 1e7 and arbitrary positive costs never raise."""
    from adprof.analysis.classify import decide
    from adprof.analysis.memory import decide_memory

    costs = st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False)
    values = data.draw(st.lists(costs, min_size=len(depths), max_size=len(depths)))
    if data.draw(st.booleans()):
        values.sort()  # growing costs reach the exponential and power readings
    exact, timed = _series(depths, values)
    decide(exact)
    decide_memory(exact)
    decide(timed)


# 10 examples by default, 40 under -m slow
test_analysis_never_raises_over_depths_of_any_size, test_analysis_never_raises_many = property_twins(
    _analysis_never_raises_over_depths_of_any_size,
    {"depths": st.lists(st.integers(1, 10**7), min_size=2, max_size=10, unique=True).map(sorted), "data": st.data()},
    quick=10,
    many=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


def test_an_analysis_crash_keeps_the_measurements(tmp_path, monkeypatch, capsys):
    """A crash in the analysis cost the JSON: it is written with every point, and the run says one line."""
    import adprof.report

    def broken(*a: Any, **kw: Any) -> Any:
        raise OverflowError("math range error")

    monkeypatch.setattr(adprof.report, "decide", broken)
    path = chain_file(tmp_path / "c.py", "fine", "input_shape=(3,), depths=(1, 2, 3), adaptive=False")
    out = tmp_path / "out.json"
    argv = ["check", str(path), "--profile", "fixed", "--mode", "traced", "--no-structure", "--no-color"]
    code = main([*argv, "--json", str(out), "--budget", "60"])
    stdout, err = capsys.readouterr()
    assert code == 3
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "internal error: the analysis failed on 1 series" in lines[0]
    assert "OverflowError: math range error" in lines[0]
    data = json.loads(out.read_text())
    (result,) = data["results"]
    assert [p["depth"] for p in result["points"]] == [1, 2, 3]
    assert all(p["counters"] for p in result["points"])  # the measured values, not only the depths
    assert result["verdict"] == "inconclusive" and "internal error" in result["reason"]
    assert data["analysis_errors"] and adprof.load(out).analysis_errors == data["analysis_errors"]


#: Bytes a test may allocate while refusing a huge range: far below a list of 10**7 ints (80 MB of pointers alone).
MATERIALISED = 20 * 2**20


@contextlib.contextmanager
def _peak_allocation():
    """The peak of Python's allocations inside the block (tracemalloc), in a one-item list filled on exit."""
    peak = [0]
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak[0] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def test_a_case_nobody_listed_api_depths_and_fixture_budget(tmp_path):
    """Cases of the class that no report listed: the API's depths=[1, 10**8], the fixture's budget=inf and
    depths=range(1, 10**9), a pyproject max_exponent = inf."""
    from adprof.pytest_plugin import ScalingGuard

    with pytest.raises(UsageError, match="depths"):
        adprof.check("nothing.py", depths=[1, 10**8])
    with _peak_allocation() as peak:
        for call in (adprof.check, adprof.guard):
            with pytest.raises(UsageError, match="depths: expected positive integers"):
                call("nothing.py", depths=range(1, 10**9))  # refused, not written out as a billion numbers
    assert peak[0] < MATERIALISED  # a list of even 10**7 of them would be 80 MB
    guard = ScalingGuard(_Config(tmp_path), {})
    with pytest.raises(pytest.fail.Exception, match="budget:"):
        guard.check("nothing.py::c", budget=math.inf)
    with _peak_allocation() as peak, pytest.raises(pytest.fail.Exception, match="depths:"):
        guard.check("nothing.py::c", depths=range(1, 10**9))
    assert peak[0] < MATERIALISED  # refused, not listed
    (tmp_path / "pyproject.toml").write_text("[tool.adprof.guard]\nmax_exponent = inf\n")
    with pytest.raises(GuardConfigError, match="max_exponent:"):
        GuardLimits.from_pyproject(tmp_path)


def test_the_options_table_is_documented_in_one_place():
    """Each rule says what it means and its range (the messages read them)."""
    for rule in RULES.values():
        assert rule.meaning and math.isfinite(rule.high) and rule.low <= rule.high
        assert rule.describe().startswith(rule.meaning)


HOSTILE = ["nan", "inf", "-inf", "1e309", "-1", "", " ", "١", "²", "0x10", "1_000", "1,,2", "\x00"]
HOSTILE += ["9" * 400, "9" * 5000]


def test_own_round_every_typed_option_of_every_command():
    """Our own round (issue 39's class, 15 strings x every typed option of every command but flame's, whose
    options are another helper's): each is refused by argparse's ArgumentTypeError (one line, exit 2) or read
    as a finite value under a bound; never a ValueError from int() (5000 digits), never inf (``--max-leak 9...9``)."""
    import argparse

    from adprof.cli import build_parser

    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    tried = 0
    for command, parser in sub.choices.items():
        if command == "flame":
            continue
        for action in parser._actions:
            if not callable(action.type) or not action.option_strings:
                continue
            for text in HOSTILE:
                tried += 1
                try:
                    value = action.type(text)
                except argparse.ArgumentTypeError:
                    continue
                values = value if isinstance(value, tuple) else (value,)
                for v in values:
                    assert isinstance(v, int | float) and math.isfinite(v) and abs(v) <= 2.0**63, (command, text)
    assert tried > 300
