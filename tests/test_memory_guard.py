"""The memory limits of a guard (--max-memory-exponent, --max-leak BYTES, the marker's arguments, pyproject) on
decided synthetic series: fail on superlinear memory and on a leak, pass on linear memory and no leak, never pass a
series whose memory is not measured; the failure names the depth range, the bytes and the exponent."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from adprof import model
from adprof.guard import GuardConfigError, GuardLimits, guard_checks, parse_bytes
from adprof.model import Point, Series
from adprof.render.guard import guard_markdown, guard_text, junit_xml, memory_measured_text, memory_reason_text
from adprof.report import build_report

DEPTHS = [1, 2, 3, 4, 5, 6, 7, 8, 16, 32]


def _series(name, saved=None, retained=None, mode="eager", backend="engine", notes=None):
    points = []
    for d in DEPTHS:
        keys = {"key_comparisons": 10 * d}
        phases = {"backward": keys} if mode == "eager" else {"transform": keys, "drop": keys}
        points.append(
            Point(
                depth=d,
                counters=phases,
                times={ph: 1e-4 * d for ph in phases},
                memory={"saved_bytes": float(saved(d))} if saved else {},
                retained=list(retained(d)) if retained else [],
            )
        )
    profile = "fixed" if backend == "engine" else None
    return Series(name, backend, profile, mode, points=points, memory_notes=dict(notes or {}))


def _checks(limits, *series):
    return guard_checks(build_report(list(series), {}), limits)


LINEAR = _series("linear", lambda d: 800 * d, lambda d: [0, 0, 0])
QUADRATIC = _series("concat", lambda d: 800 * d * d, lambda d: [0, 0, 0])
LEAKING = _series("tanh", lambda d: 800 * d, lambda d: [4096 * d * (i + 1) for i in range(3)], backend="torch")
GRAD = _series("tanh_grad", lambda d: 800 * d, lambda d: [0, 0, 0], backend="torch")


def test_max_memory_exponent_fails_on_superlinear_memory_and_passes_on_linear():
    guard = _checks(GuardLimits(max_memory_exponent=1.2), LINEAR, QUADRATIC)
    ok, bad = guard.checks
    assert ok.ok and ok.memory.ok and ok.memory.checked
    assert not bad.ok and bad.time_ok and not bad.memory.ok  # the time limits held: memory fails it
    why = memory_reason_text(bad)
    # pytest-memray's spirit: limited to ... but ...; the depth range, the bytes and the exponent
    assert "limited to depth^1.2 but grow as depth^2.00 over depths 1-8, 16, 32" in why
    assert "800 B at depth 1 -> 800.0 KiB at depth 32" in why
    assert not guard.ok and guard.failures == [bad]
    text = guard_text(guard)
    assert "FAIL memory:" in text and "superlinear-memory" in text and "saved_bytes" in text


def test_exponential_memory_exceeds_any_exponent():
    s = _series("exp", lambda d: 100 * 1.5**d)
    (check,) = _checks(GuardLimits(max_memory_exponent=5.0), s).checks
    assert not check.ok and check.result.verdict.memory.kind == model.EXPONENTIAL_MEMORY
    assert "per layer (exponential) over depths 1-8, 16, 32" in memory_reason_text(check)


def test_max_leak_fails_on_a_leak_and_passes_without_one():
    guard = _checks(GuardLimits(max_leak=1024.0), LEAKING, GRAD)
    leak, grad = guard.checks
    assert not leak.ok and memory_measured_text(leak) == "+128.0 KiB per call at depth 32"
    assert "limited to 1.0 KiB leaked per call but leaked 128.0 KiB per call at depth 32" in memory_reason_text(leak)
    assert "leaking at depths 1-8, 16, 32" in memory_reason_text(leak)
    assert grad.ok and "no leak" in memory_reason_text(grad)


def test_a_leak_under_the_limit_holds():
    (check,) = _checks(GuardLimits(max_leak=parse_bytes("1 MB")), LEAKING).checks
    assert check.ok and "<= 1.00 MiB" in memory_reason_text(check)


def test_memory_not_measured_never_passes_silently():
    s = _series("nomem", notes={"saved_bytes": "memory was not asked for (--memory)", "retained": "not asked"})
    (check,) = _checks(GuardLimits(max_memory_exponent=1.2, max_leak=1.0), s).checks
    assert not check.ok and not check.memory.checked
    assert "could not check max memory exponent 1.2: memory not measured (memory was not asked for" in (
        memory_reason_text(check)
    )
    assert "could not check max leak 1 B per call: retained bytes not measured" in memory_reason_text(check)


def test_a_leak_limit_on_a_traced_series_says_it_is_not_checked():
    s = _series("traced", lambda d: 800 * d, mode="traced")
    (check,) = _checks(GuardLimits(max_leak=1.0), s).checks
    assert (
        check.ok
        and not check.memory.checked
        and "not checked: retained bytes are per eager call" in (memory_reason_text(check))
    )


def test_without_memory_limits_the_guard_is_unchanged():
    (check,) = _checks(GuardLimits(), QUADRATIC).checks
    assert check.ok and check.memory is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (4096, 4096.0),
        ("4096", 4096.0),
        ("1 MB", 2**20),
        ("512 KiB", 512 * 1024),
        ("1.5GB", 1.5 * 2**30),
        ("100b", 100.0),
        ("2 k", 2048.0),
    ],
)
def test_bytes_parse_as_pytest_memray_reads_them(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "MB", "1 XB", "-1", "1e3", float("inf"), -5, True, None, "1 MB MB"])
def test_bad_bytes_are_refused(text):
    with pytest.raises(ValueError, match="bytes"):
        parse_bytes(text)


def test_pyproject_memory_limits(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.adprof.guard]\nmax_memory_exponent = 1.2\nmax_leak = "1 MB"\n')
    limits = GuardLimits.from_pyproject(tmp_path)
    assert limits.max_memory_exponent == 1.2 and limits.max_leak == 2**20 and limits.checks_memory
    (tmp_path / "pyproject.toml").write_text('[tool.adprof.guard]\nmax_leak = "lots"\n')
    with pytest.raises(GuardConfigError, match="max_leak: expected bytes"):
        GuardLimits.from_pyproject(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.adprof.guard]\nmax_memory_exponent = -1\n")
    with pytest.raises(GuardConfigError, match="max_memory_exponent: expected a positive number"):
        GuardLimits.from_pyproject(tmp_path)


def test_junit_and_markdown_show_the_memory_limits():
    guard = _checks(GuardLimits(max_memory_exponent=1.2, max_leak=1024.0), LINEAR, QUADRATIC, LEAKING)
    root = ET.fromstring(junit_xml(guard))
    failures = root.findall(".//failure")
    assert [f.get("type") for f in failures] == [model.SUPERLINEAR_MEMORY, model.LEAK_PER_CALL]
    assert "memory: saved-for-backward bytes depth^2.00" in failures[0].get("message")
    assert "limited to 1.0 KiB leaked per call" in failures[1].get("message")
    assert "memory limit" in failures[0].text
    md = guard_markdown(guard)
    assert "| memory | memory measured | memory limit |" in md
    assert "**superlinear-memory**" in md and "**leak-per-call**" in md


def test_the_pytest_marker_takes_the_memory_limits(pytester):
    pytester.makepyfile(
        """
        import pytest
        from adprof.pytest_plugin import ScalingGuard

        @pytest.mark.adprof_guard(max_memory_exponent=1.2, max_leak="1 MB")
        def test_marker(request):
            marker = request.node.get_closest_marker("adprof_guard")
            guard = ScalingGuard(request.config, dict(marker.kwargs))
            assert guard._pick("max_memory_exponent", None, None) == 1.2
            assert guard._pick("max_leak", None, None) == "1 MB"

        @pytest.mark.adprof_guard(max_leak="lots")
        def test_bad_leak(adprof_guard):
            adprof_guard.check("x.py::y")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*adprof guard: max_leak: expected bytes*"])


def test_peak_only_memory_never_fails_a_guard():
    """Only the (noisy) peak measured, growing as d^2: the memory verdict is peak-only, the limit is not checked and
    the guard holds (never exit 1 on a noisy figure alone)."""
    s = _series("mlp", mode="traced", backend="torch", notes={"saved_bytes": "not counted on torch traced"})
    for p in s.points:
        p.memory = {"peak_bytes": 1e5 + 3e3 * p.depth**2}
    guard = _checks(GuardLimits(max_memory_exponent=1.2), s)
    (check,) = guard.checks
    mv = check.result.verdict.memory
    assert mv.kind == model.PEAK_ONLY and not mv.is_finding and not check.result.verdict.is_finding
    assert check.ok and check.memory.ok and not check.memory.checked and guard.ok
    assert "not checked" in memory_reason_text(check) and memory_measured_text(check).startswith("peak only d^")
