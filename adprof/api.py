"""The Python API: :func:`check`, :func:`guard`, :func:`compare` and :func:`load`, for a notebook, a REPL or a test.

They run the library's one run path (:func:`adprof.pipeline.run`), as the command line does: the planning,
the supervised workers, the budget, the caps and the timeouts are the command's (its defaults, its option rules
and its messages), and so is the report (the JSON of ``adprof.check(fn)`` is the JSON of ``adprof check`` on the
same chain: the equivalent command is recorded as its ``argv``). A chain that lives in no file is
shipped to the workers (:mod:`adprof.chain.ship`); every process and temporary file is gone when the call
returns, also after Ctrl-C (:class:`Interrupted` carries the partial report).

::

    import adprof

    @adprof.chain(reuse=2, max_depth=10)
    def square(xp, x, depth):
        y = x
        for _ in range(depth):
            y = (y * y) * 0.5
        return xp.sum(y)

    report = adprof.check(square, profile="v08", mode="traced")
    report.results[0].verdict.kind          # 'exponential-transform'
    report                                  # in a notebook: the HTML report (text/plain: the table)
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import math
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from rich.console import Console

from adprof import model
from adprof.analysis.classify import TRUST_CHOICES
from adprof.backends import UnknownBackendError
from adprof.chain import ChainError, as_chain, chain
from adprof.chain.ship import Shipment, file_target
from adprof.comparison import DEFAULT_TOLERANCE, compare_reports
from adprof.comparison import Comparison as _Comparison
from adprof.guard import (
    GUARD_BUDGET,
    GUARD_CAP,
    GUARD_COUNTER_BUDGET,
    GuardConfigError,
    GuardLimits,
    choose_limits,
    guard_checks,
    guard_depths,
    parse_bytes,
    plan_guard,
    settle_noisy,
)
from adprof.measure import DEFAULT_BUDGET, DEFAULT_CALLS, DEFAULT_CAP, LoadError, MeasureConfig
from adprof.measure.client import handing_over
from adprof.measure.plan import UsageError
from adprof.options import RULES, OptionError
from adprof.pipeline import (
    Interrupted,
    check_names,
    default_jobs,
    parse_backends,
    plan_check,
    run_shown,
)
from adprof.render.guard import RenderedGuardReport as GuardReport
from adprof.render.jsonout import load_report
from adprof.util import procs
from adprof.util.files import InputFileError, read_json

#: Errors of bad input, raised as :class:`UsageError` with their one line.
_BAD_INPUT = (UsageError, ChainError, LoadError, UnknownBackendError, GuardConfigError, OptionError, InputFileError)
TEXT_WIDTH = 150


def _console_text(render: Any, width: int = TEXT_WIDTH) -> str:
    """What ``render(console)`` prints, as plain text (no colors, ``width`` columns)."""
    from adprof.render.console import SafeConsole

    console = SafeConsole(
        record=True,
        width=width,
        no_color=True,
        color_system=None,
        force_jupyter=False,  # text, not rich's own notebook outputs
        file=open(os.devnull, "w"),
    )
    try:
        render(console)
        return console.export_text()
    finally:
        console.file.close()


def _write(path: str | os.PathLike[str] | None, text: str) -> str:
    if path is not None:
        from adprof.util.files import write_atomic

        write_atomic(path, text)
    return text


class _Files:
    """``to_json``, ``to_html`` and ``to_markdown`` of a report or a comparison: the text of the command's
    ``--json``/``--html``/``--markdown`` (written to ``path`` when given), each read off :attr:`_RENDERERS`."""

    #: Each file's renderer: a function of ``adprof.render.<module>`` (imported when called).
    _RENDERERS: dict[str, tuple[str, str]] = {}

    def _file(self, kind: str, path: str | os.PathLike[str] | None) -> str:
        module, name = self._RENDERERS[kind]
        return _write(path, getattr(importlib.import_module(f"adprof.render.{module}"), name)(self))

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """The text of ``--json`` (written to ``path`` when given)."""
        return self._file("json", path)

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """The self-contained HTML page of ``--html`` (written to ``path`` when given)."""
        return self._file("html", path)

    def to_markdown(self, path: str | os.PathLike[str] | None = None) -> str:
        """The GitHub table of ``--markdown`` (written to ``path`` when given)."""
        return self._file("markdown", path)


class Report(_Files, model.Report):
    """A report of :func:`check` or :func:`load`: the model's :class:`adprof.model.Report` (``.results``, one
    :class:`~adprof.model.Result` per series, typed) with its renderings. In a notebook it shows as the HTML
    report, with the terminal table as its ``text/plain``; ``print(report)`` prints the table."""

    _RENDERERS = {
        "json": ("jsonout", "report_text"),
        "html": ("html", "render_html"),
        "markdown": ("markdown", "report_markdown"),
    }

    @classmethod
    def of(cls, report: model.Report) -> Report:
        return cls(**{f.name: getattr(report, f.name) for f in dataclasses.fields(model.Report)})

    @property
    def findings(self) -> list[model.Result]:
        """The results that are findings (a pathology, an error, a runaway): what makes ``adprof check`` exit 1."""
        return [r for r in self.results if r.verdict.is_finding]

    @property
    def ok(self) -> bool:
        """No finding."""
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        """The JSON report as a dict (docs/json.md)."""
        from adprof.render.jsonout import json_safe, report_to_json

        return json_safe(report_to_json(self))

    def plot(self, path: str | os.PathLike[str] | None = None) -> Any:
        """Cost against depth, one panel per chain (a ``matplotlib.figure.Figure``; saved to ``path`` when
        given, its type from the extension). Needs matplotlib (the ``plot`` extra)."""
        from adprof.render.plot import plot_report, report_figure

        if path is not None:
            plot_report(self, path)
        return report_figure(self)

    def text(self, width: int = TEXT_WIDTH, verbose: bool = False) -> str:
        """The terminal report (the summary table, the findings' paragraphs), as plain text."""
        from adprof.render.console import render_report

        return _console_text(lambda c: render_report(self, c, verbose=verbose), width)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        n, f = len(self.results), len(self.findings)
        return f"<adprof Report: {n} series, {f} finding{'s' if f != 1 else ''}; print() it for the table>"

    def _repr_html_(self) -> str:
        from adprof.render.html import render_html_fragment

        return render_html_fragment(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """HTML (the report, inline), with the terminal table as ``text/plain``."""
        return {"text/html": self._repr_html_(), "text/plain": self.text()}


class Comparison(_Files, _Comparison):
    """A comparison of :func:`compare` (:class:`adprof.comparison.Comparison`: ``.changes``, one per series) with
    its renderings; in a notebook it shows as its HTML table."""

    _RENDERERS = {
        "json": ("jsonout", "comparison_text"),
        "html": ("html", "comparison_html"),
        "markdown": ("markdown", "comparison_markdown"),
    }

    @classmethod
    def of(cls, comparison: _Comparison) -> Comparison:
        return cls(**{f.name: getattr(comparison, f.name) for f in dataclasses.fields(_Comparison)})

    def text(self, width: int = TEXT_WIDTH) -> str:
        from adprof.render.console import render_comparison

        return _console_text(lambda c: render_comparison(self, c), width)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"<adprof Comparison: {self.summary()}>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/html": self.to_html(), "text/plain": self.text()}


# --------------------------------------------------------------------------- targets


def _listed(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


def _csv(option: str, value: str | Sequence[str] | None) -> str | None:
    """A name or a list of names as the command's comma-separated value; anything else is a UsageError."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    raise UsageError(f"{option}: expected a name or a list of names, got {value!r}")


#: The options ``@adprof.chain`` takes (a plain function's keyword arguments to check and guard).
_CHAIN_OPTIONS = frozenset(
    name for name, p in inspect.signature(chain).parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY
)


def _target(obj: Any, options: dict[str, Any], shipment: Shipment) -> str:
    """The ``FILE[::CHAIN]`` the workers load for ``obj`` (shipping it when it lives in no file)."""
    if isinstance(obj, str | os.PathLike):
        if options:
            raise UsageError(f"chain options ({', '.join(sorted(options))}) apply to a function, not to {str(obj)!r}")
        return str(obj)
    ch = as_chain(obj)
    if ch is None and not callable(obj):
        raise UsageError(f"not a chain, a function f(xp, x, depth) or 'FILE::CHAIN': {type(obj).__name__}")
    if not options:
        found = file_target(obj)
        if found is not None:
            return found
    if ch is None:
        ch = chain(obj, **options)
    elif options:
        if ch.params:
            raise UsageError(f"chain {ch.name!r} is a sweep variant: give the options to its swept chain")
        ch = chain(ch.fn, **{**ch.decorator_options(), **options})
    return shipment.add(ch).target


@contextlib.contextmanager
def _shipped_targets(
    target: Any, options: dict[str, Any], ship: str, deadline: float | None = None
) -> Iterator[tuple[list[str], Shipment]]:
    """The targets' strings, with the chains that live in no file shipped by ``deadline`` (the run's end: the
    budget covers shipping); the files removed on exit."""
    unknown = sorted(set(options) - _CHAIN_OPTIONS)
    if unknown:
        raise UsageError(
            f"unknown option(s) {', '.join(unknown)}; a chain's options: {', '.join(sorted(_CHAIN_OPTIONS))}"
        )
    with Shipment(ship, deadline=deadline) as shipment:
        targets = [_target(t, options, shipment) for t in _listed(target)]
        if not targets:
            raise UsageError("no target: give a chain, a function f(xp, x, depth) or 'FILE::CHAIN'")
        yield targets, shipment


def _rename_shipped(report: model.Report, shipment: Shipment) -> None:
    """The report names a shipped chain's own file (a notebook cell, ``<stdin>``), not its temporary one."""
    origins = shipment.origins()
    if not origins:
        return

    def fix(text: str) -> str:
        for s in shipment.shipped:
            text = text.replace(s.target, f"{s.origin}::{s.chain}").replace(s.file, s.origin)
        return text

    for r in report.results:
        s = r.series
        if s.file in origins:
            s.file = origins[s.file]
        if s.error:
            s.error = fix(s.error)
    report.notes = [fix(n) for n in report.notes]
    argv = report.environment.get("argv")
    if isinstance(argv, list):
        report.environment["argv"] = [fix(str(a)) for a in argv]


def _ends(started: float, budget: float | None, default: float) -> float:
    """The run's end (``time.monotonic()``) for shipping: ``budget`` seconds after ``started`` (the command's
    ``default`` when None or not a positive number: the command itself rejects a bad one, in one line)."""
    try:
        seconds = float(budget) if isinstance(budget, int | float) and not isinstance(budget, bool) else default
    except OverflowError:  # an int past any float: the command refuses it by its rule
        seconds = default
    return started + (seconds if 0 < seconds < math.inf else default)


def _options_argv(**options: Any) -> list[str]:
    """``--name value`` for every option given (None: the command's default); True: a flag. An option with a rule
    (:data:`adprof.options.RULES`) is checked by it first, with the command line's message (``argument --cap: ...``):
    a value is refused as the command refuses its string, before it is written out."""
    argv: list[str] = []
    for name, value in options.items():
        if value is None or value is False and name not in RULES:
            continue
        flag = "--" + name.replace("_", "-")
        rule = RULES.get(name)
        if rule is not None and not isinstance(value, str) and rule.problem(value) is not None:  # text: the command's
            raise UsageError(f"argument {flag}: {rule.refusal(value, rule.problem(value) or '')}")
        if value is True:
            argv.append(flag)
        elif isinstance(value, list | tuple | range):
            argv += [flag, ",".join(str(v) for v in value)]
        else:
            argv += [flag, str(value)]
    return argv


def _series_options(
    backend: Any, profile: Any, mode: Any, depths: Sequence[int] | None, budget: Any, cap: Any
) -> dict[str, Any]:
    """The options check and guard share, as :func:`_options_argv` takes them (depths under their rule before they
    are written out: ``range(10**9)`` is refused, not listed)."""
    return {
        "backend": _csv("backend", backend),
        "profile": _csv("profile", profile),
        "mode": _csv("mode", mode),
        "depths": guard_depths(depths),
        "budget": budget,
        "cap": cap,
    }


def _memory_option(memory: bool | None) -> dict[str, bool]:
    """``memory=`` as the command's flag: True ``--memory``, False ``--no-memory``, None neither."""
    if memory is None:
        return {}
    return {"memory": True} if memory else {"no_memory": True}


def _err_console() -> Console:
    """stderr: rich's transient progress when it is a terminal (a REPL), nothing in a notebook (whose kernel sets
    ``FORCE_COLOR``, which rich would take for a terminal)."""
    from adprof.render.console import SafeConsole

    return SafeConsole(stderr=True, highlight=False, force_jupyter=False, force_terminal=_isatty(sys.stderr))


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


@contextlib.contextmanager
def _run() -> Iterator[None]:
    """Bad input as :class:`UsageError` (one line); nothing this call started outlives it, even on Ctrl-C."""
    try:
        with handing_over():  # the worker that loads the targets measures the first lane
            yield
    except _BAD_INPUT as exc:
        raise UsageError(str(getattr(exc, "message", None) or exc)) from None
    except Interrupted:
        raise
    except KeyboardInterrupt as exc:  # before the measuring (loading the targets, starting a worker)
        raise Interrupted(str(getattr(exc, "signal_name", "SIGINT")), None) from None
    finally:
        procs.sweep()


def _typed(name: str, value: Any) -> Any:
    """An option's value under its rule (:data:`adprof.options.RULES`), as the command reads its string: a number
    of the rule's type (None stays None: the default). A number was checked by :func:`_options_argv`; a string is
    parsed as the command parses it, with its message (``argument --cap: ...``)."""
    if value is None:
        return None
    rule = RULES[name]
    if not isinstance(value, str):
        return rule.check(value)
    try:
        return rule.parse(value)
    except OptionError as exc:
        raise UsageError(f"argument --{name.replace('_', '-')}: {exc}") from None


def _leak(value: Any) -> float | None:
    """``max_leak``: bytes as ``4096`` or ``"1 MB"`` (None: not limited)."""
    if value is None:
        return None
    try:
        return parse_bytes(value)
    except ValueError as exc:
        raise UsageError(f"argument --max-leak: {exc}") from None


def _trust(value: Any) -> str | None:
    """``trust``: one of :data:`adprof.analysis.classify.TRUST_CHOICES` (None: neither)."""
    if value is None or value in TRUST_CHOICES:
        return value
    choices = ", ".join(repr(c) for c in TRUST_CHOICES)
    raise UsageError(f"argument --trust: invalid choice: {str(value)!r} (choose from {choices})")


def _series_settings(backend: Any, profile: Any, mode: Any, depths: Any) -> dict[str, Any]:
    """The backends (``backend``: as the command's ``--backend`` text, default engine), profiles, modes and depths,
    as the command reads its options."""
    values = {"backend": _csv("backend", backend), "profile": _csv("profile", profile), "mode": _csv("mode", mode)}
    check_names(values)
    return {
        "backend": values["backend"] or "engine",
        "profile": values["profile"],
        "mode": values["mode"],
        "depths": guard_depths(depths),
    }


def _config(
    started: float,
    cap: Any,
    budget: Any,
    default_cap: float,
    default_budget: float,
    calls: Any,
    jobs: Any,
    memory: bool | None,
    depths: Sequence[int] | None,
) -> MeasureConfig:
    """The measuring config of a call, with the command's defaults (``cap``: given, it wins over a chain's own)."""
    return MeasureConfig(
        cap=_typed("cap", cap) if cap is not None else default_cap,
        budget=_typed("budget", budget) if budget is not None else default_budget,
        calls=_typed("calls", calls) if calls is not None else DEFAULT_CALLS,
        jobs=_typed("jobs", jobs) if jobs is not None else default_jobs(),
        started=started,
        cap_given=cap is not None,
        memory=memory,
        depths=depths,
    )


def _baseline(baseline: str | os.PathLike[str] | model.Report | None) -> tuple[model.Report | None, str]:
    """The baseline's report (a saved one read from its path, or the object itself) and its name in the checks."""
    if baseline is None:
        return None, "the baseline"
    if isinstance(baseline, model.Report):
        return baseline, "the baseline report"
    return read_json(str(baseline), load_report), f"the baseline {baseline}"


def _measured(
    specs: Sequence[Any],
    cfg: MeasureConfig,
    argv: Sequence[str],
    *,
    trust: str | None = None,
    unmeasured: Sequence[model.Series] = (),
    notes: Sequence[str] = (),
) -> tuple[model.Report, str | None]:
    """:func:`adprof.pipeline.run` with rich's transient progress on stderr when it is a terminal: the report and
    the signal that interrupted the measuring (None: it ran to the end)."""
    from adprof.render.progress import SeriesProgress

    err = _err_console()
    progress = SeriesProgress(err, len(specs), max(1, min(cfg.jobs, len(specs))), err.is_terminal)
    return run_shown(specs, cfg, progress, argv, unmeasured=unmeasured, notes=notes, trust=trust)


# --------------------------------------------------------------------------- the calls


def check(
    target: Any,
    *,
    backend: str | Sequence[str] | None = None,
    profile: str | Sequence[str] | None = None,
    mode: str | Sequence[str] | None = None,
    depths: Sequence[int] | None = None,
    budget: float | None = None,
    cap: float | None = None,
    calls: int | None = None,
    jobs: int | None = None,
    trust: str | None = None,
    structure: bool = True,
    memory: bool | None = None,
    ship: str = "auto",
    **chain_options: Any,
) -> Report:
    """Probe, fit and classify ``target`` as ``adprof check`` does; the :class:`Report`.

    ``target``: a chain (``@adprof.chain``), a plain function ``f(xp, x, depth)`` (``chain_options``: the
    decorator's options, ``reuse=2``, ``max_depth=12``, ...), a ``"FILE[::CHAIN]"`` string, or a list of them.
    ``backend``, ``profile``, ``mode``: a name or several (default: engine; both profiles; the chain's modes);
    ``depths``: explicit depths (default: the adaptive schedule); ``budget`` and ``cap``: seconds for the run
    and per phase (default: the command's, 60 and 1.5); ``memory``: measure memory too (``--memory``; False:
    ``--no-memory``; None: each backend's default, docs/memory.md); ``ship``: how a chain that lives in no file
    reaches the workers (``auto``, ``cloudpickle``, ``source``). Bad input raises :class:`UsageError` (one line); Ctrl-C
    raises :class:`Interrupted` with the partial report, after every worker is gone.
    """
    started = time.monotonic()  # the budget counts from the call: shipping a chain is part of the run
    with _run():
        options = _options_argv(  # checked before shipping: a bad budget is one line at once, not after a pickle
            **_series_options(backend, profile, mode, depths, budget, cap),
            calls=calls,
            jobs=jobs,
            trust=trust,
            no_structure=not structure,
            **_memory_option(memory),
        )
        series = _series_settings(backend, profile, mode, depths)
        cfg = _config(started, cap, budget, DEFAULT_CAP, DEFAULT_BUDGET, calls, jobs, memory, depths=series["depths"])
        cfg.structure = structure
        trusted = _trust(trust)
    with (
        _run(),
        _shipped_targets(target, chain_options, ship, _ends(started, budget, DEFAULT_BUDGET)) as (
            targets,
            shipment,
        ),
    ):
        argv = ["check", *targets, *options]
        notes: list[str] = []
        backends = parse_backends(series["backend"])
        specs = plan_check(targets, backends, series["profile"], series["mode"], cfg, notes)
        report, interrupted = _measured(specs, cfg, argv, trust=trusted, notes=notes)
        _rename_shipped(report, shipment)
        result = Report.of(report)
        if interrupted is not None:
            raise Interrupted(interrupted, result)
        return result


def guard(
    target: Any,
    *,
    max_base: float | None = None,
    max_exponent: float | None = None,
    max_memory_exponent: float | None = None,
    max_leak: float | str | None = None,
    absolute: bool = False,
    baseline: str | os.PathLike[str] | model.Report | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    backend: str | Sequence[str] | None = None,
    profile: str | Sequence[str] | None = None,
    mode: str | Sequence[str] | None = None,
    depths: Sequence[int] | None = None,
    budget: float | None = None,
    cap: float | None = None,
    memory: bool | None = None,
    ship: str = "auto",
    **chain_options: Any,
) -> GuardReport:
    """Guard ``target``'s scaling as ``adprof guard`` does; the outcome as data (:class:`adprof.guard.GuardReport`:
    ``.ok``, ``.checks`` with the limit and the measured figure of each series, ``.report``).

    Limits: ``max_base`` and ``max_exponent`` (default: ``[tool.adprof.guard]`` in ``pyproject.toml``, else 1.1
    and 1.3), or ``baseline`` (a saved report, or a :class:`Report`): its own figures per series, with
    ``tolerance``; ``max_memory_exponent`` and ``max_leak`` (bytes per eager call: ``4096`` or ``"1 MB"``) limit
    memory (docs/memory.md). The limits hold a cost's excess over its program where the program grows
    superlinearly; ``absolute=True`` holds the raw growth.
    The other arguments are :func:`check`'s (default profile ``fixed``, fixed depths),
    ``memory`` included.
    """
    started = time.monotonic()  # the budget counts from the call: shipping a chain is part of the run
    with _run():  # the options checked before shipping: a bad budget is one line at once, not after a pickle
        options = _options_argv(
            max_base=max_base,
            max_exponent=max_exponent,
            max_memory_exponent=max_memory_exponent,
            max_leak=max_leak,
            absolute=absolute or None,
            tolerance=tolerance,
            **_series_options(backend, profile, mode, depths, budget, cap),
            **_memory_option(memory),
        )
        series = _series_settings(backend, profile, mode, depths)
        given = {"max_base": max_base, "max_exponent": max_exponent, "max_memory_exponent": max_memory_exponent}
        limits = GuardLimits(
            **choose_limits(
                {
                    **{k: _typed(k, v) for k, v in given.items()},
                    "max_leak": _leak(max_leak),
                    "absolute": absolute or None,
                }
            )
        )
        slack = _typed("tolerance", tolerance)
        if limits.checks_memory and memory is None:  # a memory limit measures memory (memory=False: it fails)
            memory = True
        base, where = _baseline(baseline)  # a bad file: one line, before measuring
        cfg = _config(started, cap, budget, GUARD_CAP, GUARD_BUDGET, None, None, memory, depths=None)
        cfg.structure, cfg.counter_budget = False, GUARD_COUNTER_BUDGET
    with _run(), contextlib.ExitStack() as stack:
        deadline = _ends(started, budget, GUARD_BUDGET)
        targets, shipment = stack.enter_context(_shipped_targets(target, chain_options, ship, deadline))
        named = _options_argv(baseline=baseline) if not isinstance(baseline, model.Report) else []
        argv = ["guard", *targets, *options, *named]
        notes: list[str] = []
        specs, unguarded = plan_guard(
            targets, series["backend"], series["profile"], series["mode"], series["depths"], cfg, notes
        )
        report, interrupted = _measured(specs, cfg, argv, unmeasured=unguarded, notes=notes)
        remeasured: dict[
            tuple[Any, ...], int
        ] = {}  # undecided35: a noisy time reading is re-measured with more repeats first
        if interrupted is None and base is None:
            remeasured = settle_noisy(report, specs, cfg, limits, lambda todo, config: _measured(todo, config, argv)[0])
        _rename_shipped(report, shipment)
        shown = Report.of(report)
        if interrupted is not None:
            raise Interrupted(interrupted, shown)
        outcome = guard_checks(shown, limits, base, slack, where, remeasured)
        return GuardReport.of(outcome)


def load(path: str | os.PathLike[str]) -> Report:
    """A saved ``--json`` report (raises :class:`UsageError`, one line, for a file that is not one)."""
    with _run():
        return Report.of(read_json(str(path), load_report))


def compare(
    base: str | os.PathLike[str] | model.Report,
    new: str | os.PathLike[str] | model.Report,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    exact: bool = False,
) -> Comparison:
    """Two reports (paths or :class:`Report` objects) compared series by series, as ``adprof compare``."""
    names = tuple(str(x) if not isinstance(x, model.Report) else "" for x in (base, new))
    b = base if isinstance(base, model.Report) else load(base)
    n = new if isinstance(new, model.Report) else load(new)
    return Comparison.of(compare_reports(b, n, tolerance, exact=exact, names=names))  # type: ignore[arg-type]


__all__ = ["Comparison", "GuardReport", "Interrupted", "Report", "UsageError", "check", "compare", "guard", "load"]
