"""pytest plugin (entry point ``pytest11``): guard a chain's scaling from a test.

::

    def test_mul_scales_linearly(adprof_guard):
        adprof_guard.scaling(probes.chains.mul, mode="traced", max_base=1.1)

    @pytest.mark.adprof_guard(max_exponent=1.2, profile="fixed")
    def test_sin(adprof_guard):
        adprof_guard.scaling("probes/chains.py::sin", mode="eager")

On failure the test fails with the guard's evidence table (limit vs measured, cost per depth,
cause, remedies). Limits: arguments > marker > ``--adprof-max-base/--adprof-max-exponent`` >
``[tool.adprof.guard]`` in pyproject.toml > defaults (max_base 1.1, max_exponent 1.3).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from adprof.backends import BACKEND_MODES, BACKEND_PROFILES, UnknownBackendError, check_backend
from adprof.guard import GuardConfigError, GuardLimits, GuardReport, guard_chain, pyproject_guard_table, resolve_chain
from adprof.util.text import terminal_safe

MARKER = "adprof_guard"
_MARKER_KEYS = {"max_base", "max_exponent", "mode", "profile", "depths", "backend"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("adprof", "adprof scaling guards")
    group.addoption(
        "--adprof-max-base",
        type=float,
        default=None,
        help="default per-layer growth limit for the adprof_guard fixture",
    )
    group.addoption(
        "--adprof-max-exponent",
        type=float,
        default=None,
        help="default power-law exponent limit for the adprof_guard fixture",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(max_base=None, max_exponent=None, mode=None, profile=None, depths=None, backend=None): "
        "scaling limits and settings for the adprof_guard fixture",
    )


def _usage(message: str) -> None:
    """A bad setting of the guard: the test fails with one line (as the CLI's exit 2), no traceback."""
    pytest.fail(f"adprof_guard: {terminal_safe(message)}", pytrace=False)


def _limit_value(name: str, value: Any) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if not ok:
        _usage(f"{name}: expected a positive number, got {value!r}")
    return float(value)


def _check_settings(mode: Any, profile: Any, backend: Any, depths: Any) -> None:
    """Backend, mode, profile and depths as the CLI checks them: a wrong value is a usage error, never
    a limit exceeded."""
    try:
        check_backend(backend)
    except UnknownBackendError as exc:
        _usage(str(exc))
    modes = BACKEND_MODES.get(backend, ("traced", "eager"))
    if mode not in modes:
        _usage(f"unknown mode {mode!r} for backend {backend}; known: {', '.join(modes)}")
    profiles = [p for p in BACKEND_PROFILES.get(backend, (None,)) if p]
    if profiles and profile is not None and profile not in profiles:
        _usage(f"unknown profile {profile!r} for backend {backend}; known: {', '.join(profiles)}")
    if depths is not None:
        ok = isinstance(depths, Sequence) and not isinstance(depths, str) and len(depths) > 0
        if not ok or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in depths):
            _usage(f"depths: expected positive integers, e.g. (1, 2, 4, 8), got {depths!r}")


class ScalingGuard:
    """The ``adprof_guard`` fixture: ``scaling(chain, ...)`` measures, checks, and fails the test."""

    def __init__(self, config: pytest.Config, marker_kwargs: dict[str, Any]) -> None:
        unknown = set(marker_kwargs) - _MARKER_KEYS
        if unknown:
            raise pytest.UsageError(
                f"{MARKER} marker: unknown arguments {sorted(unknown)}; expected some of {sorted(_MARKER_KEYS)}"
            )
        self._marker = marker_kwargs
        try:
            GuardLimits.from_pyproject(config.rootpath)  # validates the table: one line, not a traceback
            table = pyproject_guard_table(config.rootpath)
        except GuardConfigError as exc:
            raise pytest.UsageError(f"adprof: {exc}") from None
        self._defaults = {
            "max_base": config.getoption("adprof_max_base") or table.get("max_base"),
            "max_exponent": config.getoption("adprof_max_exponent") or table.get("max_exponent"),
        }
        self.reports: list[GuardReport] = []

    def _pick(self, name: str, explicit: Any, fallback: Any) -> Any:
        if explicit is not None:
            return explicit
        if self._marker.get(name) is not None:
            return self._marker[name]
        if self._defaults.get(name) is not None:
            return self._defaults[name]
        return fallback

    def check(
        self,
        chain: Any,
        mode: str | None = None,
        *,
        max_base: float | None = None,
        max_exponent: float | None = None,
        profile: str | None = None,
        depths: Sequence[int] | None = None,
        backend: str | None = None,
    ) -> GuardReport:
        """Measure and check without failing the test; returns the report."""
        limits = GuardLimits(
            max_base=_limit_value("max_base", self._pick("max_base", max_base, GuardLimits.max_base)),
            max_exponent=_limit_value(
                "max_exponent", self._pick("max_exponent", max_exponent, GuardLimits.max_exponent)
            ),
        )
        settings = {
            "mode": self._pick("mode", mode, "traced"),
            "profile": self._pick("profile", profile, "fixed"),
            "backend": self._pick("backend", backend, "engine"),
            "depths": self._pick("depths", depths, None),
        }
        _check_settings(**settings)
        report = GuardReport()
        for ch in resolve_chain(chain):
            r = guard_chain(
                ch,
                settings["mode"],
                profile=settings["profile"],
                limits=limits,
                depths=settings["depths"],
                backend=settings["backend"],
            )
            report.checks.extend(r.checks)
        self.reports.append(report)
        return report

    def scaling(self, chain: Any, mode: str | None = None, **kwargs: Any) -> GuardReport:
        """Like :meth:`check`, but fail the test with the evidence table when a limit is exceeded."""
        report = self.check(chain, mode, **kwargs)
        if not report.ok:
            pytest.fail("adprof guard: scaling limit exceeded\n" + terminal_safe(report.text()), pytrace=False)
        return report


@pytest.fixture
def adprof_guard(request: pytest.FixtureRequest) -> ScalingGuard:
    """Guard chains' scaling: ``adprof_guard.scaling(chain, mode="traced", max_base=1.1)``."""
    marker = request.node.get_closest_marker(MARKER)
    return ScalingGuard(request.config, dict(marker.kwargs) if marker else {})
