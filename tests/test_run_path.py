"""One run path below the command line (issue #37): ``adprof check``, ``adprof guard``, the pytest fixture, the API
and hunt's confirmation all measure and decide through :func:`adprof.pipeline.run`, with the analysis hooks plugged
in there once; the library never imports its command line; the guard's limits share one precedence and its
baseline rule is the comparison's."""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest
from rich.console import Console

import adprof
from adprof import model, pipeline
from adprof.analysis.classify import assess_series, predicted_growth
from adprof.analysis.costs import open_exact
from adprof.analysis.jumps import unconfirmed_jumps
from adprof.comparison import State
from adprof.guard import GuardLimits, check_against_baseline, choose_limits, guard_targets
from adprof.measure import MeasureConfig, Measured
from tests.compare_helpers import result

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "adprof"
MUL = f"{REPO / 'probes' / 'chains.py'}::mul"
DEPTHS = (1, 2, 3, 4, 5, 6)


def _cli_imports(path: Path) -> list[int]:
    """The lines of every import of ``adprof.cli`` in ``path`` (module-level or in a function, any form)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        if any(n == "adprof.cli" or n.startswith("adprof.cli.") for n in names):
            found.append(node.lineno)
    return sorted(found)


def test_the_library_never_imports_its_command_line():
    """The CLI parses arguments and calls the library, never the reverse: no module outside ``adprof/cli/`` and
    ``adprof/__main__.py`` imports ``adprof.cli``, the API first of all."""
    assert _cli_imports(PACKAGE / "api.py") == []
    outside = [
        p
        for p in PACKAGE.rglob("*.py")
        if p.relative_to(PACKAGE).parts[0] != "cli" and p.relative_to(PACKAGE) != Path("__main__.py")
    ]
    assert len(outside) > 50  # the walk saw the package
    assert [f"{p.relative_to(REPO)}:{line}" for p in outside for line in _cli_imports(p)] == []


def test_the_walk_finds_a_cli_import(tmp_path):
    """The test above can fail: an import of the CLI inside a function is found."""
    f = tmp_path / "adprof_like.py"
    f.write_text("def check():\n    from adprof.cli.check import check_report\n    from adprof import cli\n")
    f.write_text(f.read_text() + "import adprof.cli.common\n")
    assert _cli_imports(f) == [2, 3, 4]


def _fake_measure_all(captured: list[MeasureConfig], interrupted: str | None = None):
    def measure_all(specs, cfg, **kwargs):
        captured.append(cfg)
        return Measured(series=[], structures={}, notes=["measured"], elapsed=0.0, interrupted=interrupted)

    return measure_all


def test_run_plugs_in_every_analysis_hook_once_and_keeps_a_callers_own(monkeypatch):
    captured: list[MeasureConfig] = []
    monkeypatch.setattr(pipeline, "measure_all", _fake_measure_all(captured))
    report = pipeline.run([], MeasureConfig(), notes=["planned"])
    (cfg,) = captured
    assert (cfg.predictor, cfg.assess, cfg.jumps, cfg.open_exact) == (
        predicted_growth,
        assess_series,
        unconfirmed_jumps,
        open_exact,
    )
    assert report.notes == ["planned", "measured"]  # the plan's notes, then the measuring's

    def spy(series, **kwargs):
        return []

    pipeline.run([], MeasureConfig(jumps=spy))
    assert captured[1].jumps is spy and captured[1].predictor is predicted_growth


def test_an_interruption_is_a_typed_exception_with_the_partial_report(monkeypatch):
    monkeypatch.setattr(pipeline, "measure_all", _fake_measure_all([], interrupted="SIGINT"))
    with pytest.raises(pipeline.Interrupted) as info:
        pipeline.run([], MeasureConfig(), environment={"argv": ["adprof", "check"]})
    assert info.value.signal_name == "SIGINT" and isinstance(info.value, KeyboardInterrupt)
    assert info.value.report is not None and info.value.report.environment["argv"] == ["adprof", "check"]
    assert adprof.Interrupted is pipeline.Interrupted  # the API raises the pipeline's own


def test_hunts_confirmation_runs_the_jumps_hook(monkeypatch):
    """hunt's check path (``check_targets``) re-measures suspicious points as ``adprof check`` does: the jumps hook
    is called on its series (its own copy of the config used to leave it out)."""
    from adprof.hunt.checks import check_targets
    from adprof.hunt.targets import Target

    seen: list[str] = []

    def jumps(series, *args, **kwargs):
        seen.append(series.label)
        return unconfirmed_jumps(series, *args, **kwargs)

    monkeypatch.setitem(pipeline.HOOKS, "jumps", jumps)
    target = Target("engine", "fixed", "traced")
    run = check_targets(
        str(REPO / "probes" / "chains.py"),
        "mul",
        [target],
        budget=120.0,
        jobs=1,
        structure=False,
        depths={target: DEPTHS},
    )
    assert run.interrupted is None and run.results[target].verdict.kind == model.LINEAR
    assert seen and all(label.startswith("mul [engine/fixed, traced]") for label in seen)


def _reading(report: model.Report) -> tuple:
    (r,) = report.results
    fit = r.verdict.fit
    assert fit is not None
    return r.series.label, r.verdict.kind, fit.source, tuple(fit.depths), tuple(fit.values)


def test_check_the_api_and_the_fixture_decide_one_spec_alike():
    """One spec (mul on the engine's fixed profile, traced, at fixed depths), three entry points: the same verdict
    on the same deterministic counters."""
    from adprof.cli import parse_command
    from adprof.cli.check import check_report

    api = adprof.check(MUL, profile="fixed", mode="traced", depths=DEPTHS, structure=False)
    argv = ["check", MUL, "--profile", "fixed", "--mode", "traced", "--depths", "1,2,3,4,5,6", "--no-structure"]
    cli, interrupted = check_report(parse_command(argv), argv, Console(file=io.StringIO()))
    _, fixture = guard_targets([MUL], GuardLimits(), mode="traced", profile="fixed", depths=DEPTHS)
    assert interrupted is None
    assert _reading(api) == _reading(cli) == _reading(fixture)
    assert _reading(api)[1:3] == (model.LINEAR, "counters")
    assert api.environment["argv"] == cli.environment["argv"]  # the API records its equivalent command


def test_the_api_guard_takes_a_baseline_object_without_a_file(monkeypatch):
    """``adprof.guard(..., baseline=report)`` compares with the object itself: no JSON is written for it."""
    from adprof.render import jsonout

    def written(*args, **kwargs):
        raise AssertionError("the baseline was written to a file")

    base = adprof.check(MUL, profile="fixed", mode="traced", depths=DEPTHS, structure=False)
    monkeypatch.setattr(jsonout, "report_text", written)
    held = adprof.guard(MUL, profile="fixed", mode="traced", depths=DEPTHS, baseline=base)
    assert held.ok and held.checks[0].baseline.startswith("the baseline report: linear")


def test_the_limits_precedence_is_one_rule(tmp_path):
    """Arguments > marker > command-line options > ``[tool.adprof.guard]`` > defaults, for the command and the
    fixture alike."""
    (tmp_path / "pyproject.toml").write_text('[tool.adprof.guard]\nmax_base = 2.5\nmax_leak = "1 KiB"\n')
    assert choose_limits(start=tmp_path) == {
        "max_base": 2.5,
        "max_exponent": 1.3,
        "max_memory_exponent": None,
        "absolute": False,
        "max_leak": 1024.0,
    }
    chosen = choose_limits(
        {"max_exponent": 1.7}, {"max_base": 3.0, "max_exponent": 9.0}, {"max_base": 4.0}, start=tmp_path
    )
    assert (chosen["max_base"], chosen["max_exponent"], chosen["max_leak"]) == (3.0, 1.7, 1024.0)
    assert choose_limits({"max_base": 0}, start=tmp_path)["max_base"] == 0  # given, for its rule to refuse


def test_the_guards_baseline_rule_is_the_comparisons(monkeypatch):
    """``check_against_baseline`` decides through :func:`adprof.comparison.classify_time`: what it says decides."""
    from adprof.guard import checks

    base = result(kind=model.LINEAR, rate=1.0, interval=(0.99, 1.01))
    same = result(kind=model.LINEAR, rate=1.0)
    assert check_against_baseline(same, base, GuardLimits()).ok
    monkeypatch.setattr(checks, "classify_time", lambda before, after, tolerance: (State.REGRESSED, "spy"))
    assert not check_against_baseline(same, base, GuardLimits()).ok


def test_a_spec_is_planned_once_for_check_and_the_api(monkeypatch):
    """The API and ``adprof check`` plan chain files with :func:`adprof.pipeline.plan_check`."""
    from adprof.cli import parse_command
    from adprof.cli.check import check_report

    planned: list[tuple[str, ...]] = []

    def plan_check(targets, *args, **kwargs):
        planned.append(tuple(targets))
        raise pipeline.UsageError("planned")

    monkeypatch.setattr("adprof.api.plan_check", plan_check)
    monkeypatch.setattr("adprof.cli.check.plan_check", plan_check)
    with pytest.raises(adprof.UsageError, match="planned"):
        adprof.check(MUL, mode="traced")
    with pytest.raises(pipeline.UsageError, match="planned"):
        check_report(parse_command(["check", MUL, "--mode", "traced"]), ["check"], Console(file=io.StringIO()))
    assert planned == [(MUL,), (MUL,)]
