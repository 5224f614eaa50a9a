"""pytest plugin (entry point ``pytest11``): guard a chain's scaling from a test.

::

    def test_mul_scales_linearly(adprof_guard):
        adprof_guard.scaling(probes.chains.mul, mode="traced", max_base=1.1)

    @pytest.mark.adprof_guard(max_exponent=1.2, profile="fixed")
    def test_sin(adprof_guard):
        adprof_guard.scaling("probes/chains.py::sin", mode="eager")

    @pytest.mark.adprof_guard(max_memory_exponent=1.2, max_leak="1 MB")
    def test_tanh_keeps_nothing(adprof_guard):
        adprof_guard.scaling("probes/wild.py::create_graph_tanh", mode="eager", backend="torch")

On failure the test fails with the guard's evidence table (limit vs measured, cost per depth,
cause, remedies). A time-decided reading too noisy to decide within the budget, after the guard re-measured it
(the ``undecided`` outcome, exit 4 of ``adprof guard``), skips the test with the one line of its noise and the
budget that would decide; a clear pathology beside it still fails the test.

Limits: arguments > marker > ``--adprof-max-base/--adprof-max-exponent`` (and
``--adprof-max-memory-exponent/--adprof-max-leak``) > ``[tool.adprof.guard]`` in pyproject.toml > defaults
(max_base 1.1, max_exponent 1.3; no memory limit).

The fixture measures exactly as ``adprof guard`` does (:func:`adprof.guard.guard_targets`): each chain in a
supervised worker process, under the guard's cap, timeouts, counter budget and run budget, so a chain that
hangs fails the test instead of hanging it. A chain object or function must therefore be defined at module
level in a file (the worker loads it from there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from adprof import options
from adprof.backends import UnknownBackendError
from adprof.chain import ChainError
from adprof.guard import (
    GUARD_BUDGET,
    GUARD_CAP,
    LIMIT_KEYS,
    GuardConfigError,
    GuardLimits,
    choose_limits,
    guard_config,
    guard_targets,
    parse_bytes,
)
from adprof.measure.client import LoadError
from adprof.measure.plan import UsageError
from adprof.options import arg as option_arg
from adprof.render.guard import RenderedGuardReport, undecided_text
from adprof.util.text import terminal_safe

MARKER = "adprof_guard"
_MARKER_KEYS = {
    "max_base",
    "max_exponent",
    "max_memory_exponent",
    "max_leak",
    "absolute",
    "mode",
    "profile",
    "depths",
    "backend",
    "cap",
    "budget",
}


#: The fixture's default limits a pytest option sets: ``--adprof-max-base`` and its kin (the limit, what it limits).
_LIMIT_OPTIONS = (
    ("max_base", "per-layer growth limit"),
    ("max_exponent", "power-law exponent limit"),
    ("max_memory_exponent", "limit on the memory's power-law exponent in depth"),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("adprof", "adprof scaling guards")
    for key, what in _LIMIT_OPTIONS:
        group.addoption(
            f"--adprof-{key.replace('_', '-')}",
            type=option_arg(key),
            default=None,
            help=f"default {what} for the adprof_guard fixture",
        )
    group.addoption(
        "--adprof-absolute",
        action="store_true",
        default=None,
        help="the adprof_guard fixture's limits hold the raw growth, not the excess over a superlinear program",
    )
    group.addoption(
        "--adprof-max-leak",
        default=None,
        help="default limit on the bytes an eager call leaves held (4096, '1 MB') for the adprof_guard fixture",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(max_base=None, max_exponent=None, max_memory_exponent=None, max_leak=None, absolute=None, "
        "mode=None, profile=None, depths=None, backend=None, cap=None, budget=None): "
        "scaling limits and settings for the adprof_guard fixture",
    )


def _usage(message: str) -> None:
    """A bad setting of the guard: the test fails with one line (as the CLI's exit 2), no traceback."""
    pytest.fail(f"adprof guard: {terminal_safe(message)}", pytrace=False)


def _positive(name: str, value: Any) -> float:
    """A limit, cap or budget under its rule (:data:`adprof.options.RULES`, as the command line's): a bad one
    (``max_base="abc"``, ``cap=1e-9``) is a usage error, not a ValueError."""
    try:
        return float(options.check(name, value))
    except options.OptionError as exc:
        _usage(str(exc))
        raise  # pytest.fail raised already


def _bytes(name: str, value: Any) -> float:
    """A byte limit: ``4096`` or ``"1 MB"`` (a bad one is a usage error)."""
    try:
        return parse_bytes(value)
    except ValueError as exc:
        _usage(f"{name}: {exc}")
        raise  # pytest.fail raised already


class ScalingGuard:
    """The ``adprof_guard`` fixture: ``scaling(chain, ...)`` measures, checks, and fails the test."""

    def __init__(self, config: pytest.Config, marker_kwargs: dict[str, Any]) -> None:
        unknown = set(marker_kwargs) - _MARKER_KEYS
        if unknown:
            raise pytest.UsageError(
                f"{MARKER} marker: unknown arguments {sorted(unknown)}; expected some of {sorted(_MARKER_KEYS)}"
            )
        self._marker = marker_kwargs
        self._root = config.rootpath
        try:
            GuardLimits.from_pyproject(self._root)  # validates the table: one line, not a traceback
        except GuardConfigError as exc:
            raise pytest.UsageError(f"adprof: {exc}") from None
        #: The command line's limits (an option given, even 0, which its rule refuses, wins over the table).
        self._options = {key: config.getoption(f"adprof_{key}") for key in LIMIT_KEYS}
        self.reports: list[RenderedGuardReport] = []

    def _pick(self, name: str, explicit: Any, fallback: Any) -> Any:
        if explicit is not None:
            return explicit
        if self._marker.get(name) is not None:
            return self._marker[name]
        return fallback

    def _limits(self, given: dict[str, Any]) -> GuardLimits:
        """The limits by precedence (:func:`adprof.guard.choose_limits`): arguments > marker > command-line options
        > ``[tool.adprof.guard]`` > defaults, each under its rule (a bad one fails the test with one line)."""
        marker = {key: self._marker.get(key) for key in LIMIT_KEYS}
        try:
            chosen = choose_limits(given, marker, self._options, start=self._root)
        except GuardConfigError as exc:
            _usage(str(exc))
        memory_exponent, leak = chosen["max_memory_exponent"], chosen["max_leak"]
        return GuardLimits(
            max_base=_positive("max_base", chosen["max_base"]),
            max_exponent=_positive("max_exponent", chosen["max_exponent"]),
            max_memory_exponent=None if memory_exponent is None else _positive("max_memory_exponent", memory_exponent),
            max_leak=None if leak is None else _bytes("max_leak", leak),
            absolute=bool(chosen["absolute"]),  # the raw growth, not the excess over a superlinear program
        )

    def check(
        self,
        chain: Any,
        mode: str | None = None,
        *,
        max_base: float | None = None,
        max_exponent: float | None = None,
        max_memory_exponent: float | None = None,
        max_leak: float | str | None = None,
        absolute: bool | None = None,
        profile: str | None = None,
        depths: Sequence[int] | None = None,
        backend: str | None = None,
        cap: float | None = None,
        budget: float | None = None,
    ) -> RenderedGuardReport:
        """Measure and check without failing the test; returns the report. ``cap`` and ``budget`` (seconds)
        default to ``adprof guard``'s (a phase running 4x the cap is killed: a hang fails the test).
        ``max_memory_exponent`` and ``max_leak`` (bytes per eager call: ``4096``, ``"1 MB"``) measure memory and
        limit it, in pytest-memray's spirit ("limited to ... but ...")."""
        limits = self._limits(
            {
                "max_base": max_base,
                "max_exponent": max_exponent,
                "max_memory_exponent": max_memory_exponent,
                "max_leak": max_leak,
                "absolute": absolute,
            }
        )
        try:
            report, _ = guard_targets(
                [chain],
                limits,
                mode=self._pick("mode", mode, None),  # None: the chain's own modes, as adprof guard
                profile=self._pick("profile", profile, None),
                depths=self._pick("depths", depths, None),
                backend=self._pick("backend", backend, "engine"),
                cfg=guard_config(
                    cap=_positive("cap", self._pick("cap", cap, GUARD_CAP)),
                    budget=_positive("budget", self._pick("budget", budget, GUARD_BUDGET)),
                ),
            )
        except (UsageError, ChainError, LoadError, UnknownBackendError) as exc:
            _usage(str(getattr(exc, "message", None) or exc))
        shown = RenderedGuardReport.of(report)
        self.reports.append(shown)
        return shown

    def scaling(self, chain: Any, mode: str | None = None, **kwargs: Any) -> RenderedGuardReport:
        """Like :meth:`check`, but fail the test with the evidence table when a limit is exceeded."""
        report = self.check(chain, mode, **kwargs)
        if report.pathologies:
            pytest.fail("adprof guard: scaling limit exceeded\n" + terminal_safe(report.text()), pytrace=False)
        if report.undecided:  # too noisy to decide in the budget (after re-measuring): skipped with the reason
            lines = "; ".join(f"{c.label}: {undecided_text(c)}" for c in report.undecided)
            pytest.skip(f"adprof guard: undecided: {terminal_safe(lines)}")
        return report


@pytest.fixture
def adprof_guard(request: pytest.FixtureRequest) -> ScalingGuard:
    """Guard chains' scaling: ``adprof_guard.scaling(chain, mode="traced", max_base=1.1)``."""
    marker = request.node.get_closest_marker(MARKER)
    return ScalingGuard(request.config, dict(marker.kwargs) if marker else {})
