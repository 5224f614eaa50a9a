"""Planning a run: the chain targets loaded (in a worker) into metadata, and the series to measure (chain x
backend x profile x mode), each a :class:`~adprof.measure.series.SeriesSpec`. Shared by every command and the
pytest guard, so that they measure the same series the same way."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from adprof import backends as backends_pkg
from adprof.backends import BACKEND_MODES, BACKEND_PROFILES
from adprof.chain import KNOWN_MODES, parse_target
from adprof.measure.client import Worker, hand_over, list_chains
from adprof.measure.series import SeriesSpec
from adprof.model import cost_phases
from adprof.util.files import InputFileError, check_input_file


class UsageError(Exception):
    """Bad input: printed as one line, exit 2 (a pytest guard: a usage error)."""


def csv_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def load_targets(targets: Sequence[str], timeout: float, hard_deadline: float | None = None) -> list[dict[str, Any]]:
    """Chain metadata for every target (loaded in a worker, each import within ``timeout`` and the
    run's ``hard_deadline``); raises LoadError/ChainError."""
    metas: list[dict[str, Any]] = []
    worker = Worker()
    try:
        for target in targets:
            path, name = parse_target(target)
            file = str(path)
            if path.suffix == ".py" and path.exists():  # a FIFO, a device or a directory named x.py: one line
                try:
                    check_input_file(path)
                except InputFileError as exc:
                    raise UsageError(exc.message) from None
            for m in list_chains(file, [name] if name else None, worker, timeout, hard_deadline):
                m["file"] = file
                metas.append(m)
    except BaseException:
        worker.close()
        raise
    hand_over(worker)  # the next lane pool's first worker, within client.handing_over()
    return metas


def select(value: str | None, known: Sequence[str], what: str, backend: str = "") -> list[str] | None:
    if value is None:
        return None
    chosen = list(dict.fromkeys(csv_list(value)))  # "traced,traced" measures traced once
    bad = [v for v in chosen if v not in known]
    if bad or not chosen:
        where = f" for backend {backend}" if backend else ""
        raise UsageError(
            f"unknown {what} {', '.join(map(repr, bad)) or repr(value)}; known {what}s{where}: {', '.join(known)}"
        )
    return chosen


def backend_modes(backend: str) -> tuple[str, ...]:
    """Modes a backend can measure (``compile`` only where the backend has it)."""
    return tuple(BACKEND_MODES.get(backend, KNOWN_MODES))


def plan_series(
    metas: list[dict[str, Any]],
    backends: list[str],
    profiles: str | None,
    modes: str | None,
    notes: list[str],
    skipped: dict[tuple[str, str], list[str]] | None = None,
) -> list[SeriesSpec]:
    """The series of ``metas`` on ``backends`` (chain x backend x profile x mode). A chain skipped on a backend
    adds a line to ``notes`` and, with ``skipped``, its reason under ``(file, name)`` (a guard fails a chain it
    measures nowhere)."""
    every = tuple(dict.fromkeys(md for b in backends for md in backend_modes(b)))
    want_modes = select(modes, every, "mode")
    with_profiles = [b for b in backends if any(p for p in BACKEND_PROFILES.get(b, (None,)))]
    if profiles is not None and not with_profiles:
        raise UsageError(f"--profile: backend {', '.join(backends)} has no profiles")
    specs: list[SeriesSpec] = []
    seen: set[tuple[str, str, str, str | None, str]] = set()  # a target given twice is measured once
    for backend in dict.fromkeys(backends):
        known_profiles = [p for p in BACKEND_PROFILES.get(backend, (None,)) if p is not None]
        chosen_profiles: list[str | None] = list(known_profiles) or [None]
        if profiles is not None and known_profiles:
            chosen_profiles = list(select(profiles, known_profiles, "profile", backend) or [])
        for m in metas:
            per_backend = m.get("backend_modes") or {}
            if per_backend and backend not in per_backend:
                why = f"skipped on {backend} (a case for {', '.join(per_backend)})"
                notes.append(f"{m['name']}: {why}")
                if skipped is not None:
                    skipped.setdefault((m["file"], m["name"]), []).append(why)
                continue
            chain_modes = list(per_backend.get(backend) or m.get("modes") or KNOWN_MODES)
            # the chain's modes; "compile" only when asked for explicitly or declared by the chain
            wanted = want_modes if want_modes is not None else chain_modes
            use = [md for md in wanted if md in backend_modes(backend) and (md in chain_modes or md == "compile")]
            if not use:
                why = f"skipped on {backend} (declares modes {', '.join(chain_modes)})"
                notes.append(f"{m['name']}: {why}")
                if skipped is not None:
                    skipped.setdefault((m["file"], m["name"]), []).append(why)
            for prof in chosen_profiles:
                for md in use:
                    key = (str(Path(m["file"]).resolve()), m["name"], backend, prof, md)
                    if key in seen:
                        continue
                    seen.add(key)
                    depths = series_depths(m, backend, md, bool(known_profiles))
                    check_cost_phases(m, backend, md)
                    specs.append(
                        SeriesSpec(
                            file=m["file"],
                            chain=m["name"],
                            backend=backend,
                            profile=prof,
                            mode=md,
                            max_depth=max(m.get("depths") or [8]),
                            declared_reuse=m.get("reuse"),
                            params=dict(m.get("params") or {}),
                            depths=depths,
                            time_range=None
                            if known_profiles or depths
                            else time_only_range(m.get("depths"), bool(m.get("bounded"))),
                            deepen=not known_profiles and not depths and not m.get("declared_depths", True),
                            on_engine=not per_backend or "engine" in per_backend,
                            axis=m.get("axis") or "layer",
                            cap=m.get("cap") or _declared(backend, "caps", md),
                            cost_phases=tuple(m.get("cost_phases") or ()),
                            repeats=m.get("repeats"),
                        )
                    )
    return specs


def check_cost_phases(meta: dict[str, Any], backend: str, mode: str) -> None:
    """A chain's ``cost_phases`` must be phases that ``backend`` measures in ``mode`` (its declared ``phases``, and
    the mode's own cost phases); else :class:`UsageError` naming the chain and the option (a phase nobody measures
    would read inconclusive, exit 0)."""
    asked = tuple(meta.get("cost_phases") or ())
    declared = _declared(backend, "phases", mode)
    if not asked or not declared:
        return
    known = tuple(dict.fromkeys((*declared, *cost_phases(mode, backend))))
    unknown = [p for p in asked if p not in known]
    if unknown:
        raise UsageError(
            f"chain {meta.get('name')!r}: cost_phases: {', '.join(map(repr, unknown))} is not a phase of {backend} "
            f"{mode} (its phases: {', '.join(known)})"
        )


def _declared(backend: str, attr: str, mode: str) -> Any:
    """A backend's per-mode declaration ``attr[mode]`` (``caps``, ``mode_depths``), or None."""
    try:
        table = getattr(backends_pkg.backend_declaration(backend), attr, None) or {}
    except backends_pkg.UnknownBackendError:
        return None
    return table.get(mode)


def declared_budget(specs: Sequence[SeriesSpec]) -> tuple[float, str] | None:
    """The budget the planned series' modes declare (each backend's ``series_budgets[mode]`` per series, summed),
    and which series ask for it ("3 torch compile series"); None when no series declares one."""
    per: dict[tuple[str, str], list[float]] = {}
    for spec in specs:
        seconds = _declared(spec.backend, "series_budgets", spec.mode)
        if seconds:
            per.setdefault((spec.backend, spec.mode), []).append(float(seconds))
    if not per:
        return None
    words = ", ".join(f"{len(v)} {b} {m} series x {v[0]:g} s" for (b, m), v in per.items())
    return sum(sum(v) for v in per.values()), words


def nothing_planned(metas: list[dict[str, Any]], backends: list[str], modes: str | None) -> str:
    """Why :func:`plan_series` planned no series, and the option that selects each chain: the backends a chain
    is declared for (``modes={"torch": ...}``: ``--backend torch``), or the modes it declares (``--mode``)."""
    if not metas:
        return "no chain to measure"
    want = csv_list(modes) if modes is not None else None
    why = []
    for m in metas:
        per_backend = {b: tuple(ms) for b, ms in (m.get("backend_modes") or {}).items()}
        if per_backend and not set(per_backend) & set(backends):
            on = ", ".join(per_backend)
            why.append(f"chain {m['name']!r} runs on {on} only (its modes= names {on}), and this run measures "
                       f"{', '.join(backends)}: select it with --backend {','.join(per_backend)}")  # fmt: skip
            continue
        declared = sorted({md for b in backends for md in per_backend.get(b, m.get("modes") or KNOWN_MODES)})
        asked = f", not {', '.join(want)}" if want else ""
        why.append(f"chain {m['name']!r} declares modes {', '.join(declared)}{asked}: select them with --mode "
                   f"{','.join(declared)}")  # fmt: skip
    return "; ".join(why)


def series_depths(meta: dict[str, Any], backend: str, mode: str, counters: bool) -> tuple[int, ...] | None:
    """The depths planned for a series (None: the adaptive schedule): the chain's own when it declares
    ``adaptive=False``; else the backend's for the mode (torch compile: small steps, compiles cost seconds), up
    to the chain's ``max_depth``; else None: the adaptive schedule (for a backend without counters, over
    :func:`time_only_range`)."""
    del counters  # planned by time_only_range
    if meta.get("adaptive", True) is False:
        return tuple(meta.get("depths") or ()) or None
    declared = _declared(backend, "mode_depths", mode)
    if declared:
        own = meta.get("depths") if meta.get("bounded") else None
        if own:  # the chain's max_depth is a maximum there too
            return tuple(d for d in declared if d <= max(own)) or tuple(own)
        start = _declared_start(meta)
        if start > 1:
            # the chain says where its axis starts (a size: 8 tokens, not 1): the mode's steps below it are spent on
            # programs the chain does not mean (torch.compile specializes them: docs/classification.md)
            kept = tuple(d for d in declared if d >= start)
            return kept if len(kept) >= 3 else tuple(sorted(set(kept) | set(meta["depths"])))
        return tuple(declared)
    return None


def _declared_start(meta: dict[str, Any]) -> int:
    """The smallest depth the chain declared itself (1 when it declared none)."""
    own = meta.get("depths") if meta.get("declared_depths") else None
    return min(own) if own else 1


#: Depths for backends measured on time only (no counters) when the chain declares no deep range: a 16x span,
#: since unit steps at small depths are mostly noise there.
TIME_ONLY_SPAN = (8, 128)


def time_only_range(depths: Sequence[int] | None, bounded: bool = False) -> tuple[int, int]:
    """The depth range of a time-only backend's series. A chain that gave ``max_depth`` (``bounded``) is measured
    within ``1..max_depth``, never past it. Else the chain's depths' range when it spans >= 8x, or
    :data:`TIME_ONLY_SPAN`, and one doubling beyond, which the cap stops when it would be too slow. A
    deterministic metric that decides gets 2^(1/3) steps over it (13 depths over a 16x range); time gets the time
    schedule (:mod:`adprof.measure.time_schedule`)."""
    if bounded and depths and min(depths) > 0:
        return min(depths), max(depths)
    lo, hi = TIME_ONLY_SPAN
    if depths and min(depths) > 0 and max(depths) / min(depths) >= 8:
        lo, hi = min(depths), max(depths)
    return lo, 2 * hi
