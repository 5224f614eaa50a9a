"""Scaling guards: the fixed engine holds them on every standard chain, v08 fails them."""

from __future__ import annotations

import pytest
from params import representatives

from adprof.guard import GuardLimits, check_result, guard_targets
from adprof.model import Fit, Result, Series, Verdict
from adprof.render.guard import limit_text, measured_text
from probes import chains

VARIANTS = [v for c in chains.STANDARD for v in c.variants()]
IDS = [v.name for v in VARIANTS]


@pytest.mark.parametrize("mode", ["traced", "eager"])
@pytest.mark.parametrize("chain", representatives(VARIANTS, {"mul", "sin", "svd3", "matmul"}, IDS))
def test_fixed_engine_holds_the_guard(adprof_guard, chain, mode):
    adprof_guard.scaling(chain, mode=mode, profile="fixed")


@pytest.mark.parametrize("mode", ["traced", "eager"])
@pytest.mark.parametrize(
    "chain",
    representatives(
        [v for v in VARIANTS if v.name != "reuse[k=1]"], {"mul", "sin"}, [i for i in IDS if i != "reuse[k=1]"]
    ),
)
def test_v08_engine_fails_the_same_guard(adprof_guard, chain, mode):
    # shorter schedules than the chains' own: v08 is the slow engine
    if chain.reuse == 1:
        depths = (8, 16, 32, 64)
    else:
        depths = tuple(range(1, 7 if chain.reuse == 4 else 9 if chain.reuse == 3 else 11))
    report = adprof_guard.check(chain, mode=mode, profile="v08", depths=depths)
    assert not report.ok, report.text()
    (check,) = report.checks
    verdict = check.result.verdict
    if chain.reuse in (2, 3, 4):  # exponential: the measured base tends to the reuse count
        assert verdict.kind.startswith("exponential")
        assert verdict.base == pytest.approx(chain.reuse, abs=0.3)
    else:  # one use per layer: each rebuilt key still compares down the chain, O(depth^2)
        assert verdict.kind.startswith("superlinear")
    assert "FAIL" in report.text() and "limit" in report.text()


def test_v08_reuse_one_is_superlinear_not_exponential(adprof_guard):
    report = adprof_guard.check(chains.reuse.variant(k=1), mode="traced", profile="v08", depths=(8, 16, 32, 64))
    assert not report.ok
    verdict = report.checks[0].result.verdict
    assert verdict.kind == "superlinear-transform"
    assert 1.5 < verdict.exponent < 2.3


def test_guard_from_a_file_target_and_marker(tmp_path, adprof_guard):
    path = tmp_path / "chains.py"
    path.write_text(
        "import adprof\n\n@adprof.chain(input_shape=(2,), depths=(4, 8, 16, 32))\n"
        "def c(xp, x, depth):\n    y = x\n    for _ in range(depth):\n"
        "        y = xp.sin(y) * 0.5\n    return xp.sum(y)\n"
    )
    assert adprof_guard.check(f"{path}::c", mode="traced").ok
    assert adprof_guard.check(f"{path}", mode="eager", profile="v08", max_exponent=1.3).ok is False


def _result(kind, base=None, exponent=None):
    reading = "exponential" if base is not None else "linear" if kind == "linear" else "superlinear"
    fit = Fit(metric="m", kind=reading, base=base, exponent=exponent, depths=[1, 2, 3], values=[1.0, 2.0, 4.0])
    return Result(Series("c", "engine", "fixed", "traced"), Verdict(kind, fit=fit, counter_fit=fit))


def test_check_result_compares_with_the_limits():
    limits = GuardLimits(max_base=1.1, max_exponent=1.3)
    assert check_result(_result("linear", exponent=1.0), limits).ok
    assert not check_result(_result("superlinear-backward", exponent=1.9), limits).ok
    assert not check_result(_result("exponential-transform", base=2.0), limits).ok
    assert check_result(_result("exponential-transform", base=1.05), limits).ok
    assert not check_result(_result("inconclusive"), limits).ok
    failing = check_result(_result("superlinear-transform", exponent=1.4), limits)
    assert "1.40" in measured_text(failing) and "1.30" in limit_text(failing)
    # wall-time tolerance widens the limits
    assert check_result(_result("superlinear-transform", exponent=1.4), limits, tolerance=0.15).ok


def test_guard_report_text_shows_limit_and_measured():
    report, _ = guard_targets([chains.mul], GuardLimits(), mode="traced", profile="v08", depths=tuple(range(1, 13)))
    text = report.text()
    assert not report.ok
    assert "- limit    max base 1.10" in text and "+ measured base 2.00 per layer" in text
    assert "depth  cost" in text


def test_plugin_fails_a_test_with_the_evidence_table(pytester):
    pytester.makepyfile(
        """
        import pytest
        from probes import chains

        def test_ok(adprof_guard):
            adprof_guard.scaling(chains.mul, mode="traced", depths=(1, 2, 3, 4, 5, 6))

        @pytest.mark.adprof_guard(profile="v08", depths=(1, 2, 3, 4, 5, 6, 7))
        def test_blowup(adprof_guard):
            adprof_guard.scaling(chains.mul, mode="traced")

        @pytest.mark.adprof_guard(max_base=2.5, profile="v08", depths=(1, 2, 3, 4, 5, 6, 7))
        def test_loose_limit(adprof_guard):
            adprof_guard.scaling(chains.mul, mode="traced")
        """
    )
    pytester.makefile(".toml", pyproject="[tool.adprof.guard]\nmax_base = 1.1\nmax_exponent = 1.3\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_blowup*",
            "*FAIL mul [[]engine/v08, traced[]]: base*per layer*",
            "*- limit    max base 1.10*",
            "*remedy:*",
        ]
    )


def test_pyproject_limits_are_read(pytester):
    pytester.makefile(".toml", pyproject="[tool.adprof.guard]\nmax_base = 2.5\n")
    pytester.makepyfile(
        """
        from probes import chains

        def test_uses_pyproject(adprof_guard):
            r = adprof_guard.scaling(chains.mul, mode="traced", profile="v08", depths=(1, 2, 3, 4, 5, 6, 7))
            assert r.checks[0].limits.max_base == 2.5
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
