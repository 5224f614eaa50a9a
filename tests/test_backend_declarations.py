"""A backend's knowledge lives on the backend: a plugin that declares its cost phases, phase names, remedies,
unsupported ops, nesting and deciding counters gets them honoured by ``check`` (the analysis, through the
series' :class:`~adprof.backend_info.BackendInfo`) and by hunt (what runs where, which components decide), with no
other file edited; and no module of analysis or hunt keys on a backend's name."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from adprof import backends, model
from adprof.analysis import explain
from adprof.analysis.classify import decide
from adprof.backend_info import BackendInfo, declared_info, generic_cost_phases
from adprof.backends.base import Backend
from adprof.hunt.evaluate import Evaluation
from adprof.hunt.fitness import components
from adprof.hunt.gen import Generator, Node
from adprof.hunt.targets import Target, runs_on
from adprof.model import Point, Series
from adprof.plain import from_plain, to_plain

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = textwrap.dedent(
    '''
    from adprof.backends.base import Backend


    class Planted(Backend):
        """A plugin that declares everything analysis and hunt read."""

        name = "planted"
        modes = ("walk", "eager")
        phases = {"walk": ("visit", "sort", "run"), "eager": ("forward", "backward")}
        cost_phases = {"walk": ("visit", "sort")}
        phase_names = {"walk": {"visit": "the planted graph walk", "sort": "the planted sort"}}
        remedies = {"walk": ("walk each node once (a planted remedy)",)}
        checkpoint_remedy = "checkpoint the planted way"
        unsupported_ops = frozenset({"sin"})
        no_nested_grad = ("walk",)
        deciding_counters = ("steps",)


    class Silent(Backend):
        """A plugin that declares nothing beyond its modes and phases: the defaults apply."""

        name = "silent"
        modes = ("traced", "eager")
        phases = {"traced": ("transform",), "eager": ("forward", "backward")}


    class Mute(Silent):
        """Its counters are shown, never decide."""

        name = "mute"
        deciding_counters = ()
    '''
)


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """Three plugin backends installed through the ``adprof.backends`` entry point (a dist-info on sys.path)."""
    (tmp_path / "planted_backend.py").write_text(PLUGIN)
    info = tmp_path / "adprof_planted-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: adprof-planted\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[adprof.backends]\nplanted = planted_backend:Planted\nsilent = planted_backend:Silent\n"
        "mute = planted_backend:Mute\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    backends.plugin_entry_points.cache_clear()
    backends.backend_declaration.cache_clear()
    try:
        yield {name: backends.check_backend(name) for name in ("planted", "silent", "mute")}
    finally:
        backends.plugin_entry_points.cache_clear()
        backends.backend_declaration.cache_clear()


def _series(backend: str, mode: str, counters, seconds, phases=("visit", "sort")) -> Series:
    pts = []
    for d in range(1, 13):
        times = {ph: seconds(d, ph) for ph in phases}
        pts.append(
            Point(
                depth=d,
                times=times,
                samples={ph: [t] for ph, t in times.items()},
                counters={ph: counters(d, ph) for ph in phases},
            )
        )
    return Series(
        chain="c",
        backend=backend,
        profile=None,
        mode=mode,
        points=pts,
        backend_info=backends.backend_info(backend, mode),
    )


# --------------------------------------------------------------------------- the declarations


def test_a_plugin_declaring_nothing_gets_the_defaults(plugins):
    for mode in ("traced", "eager"):
        info = backends.backend_info("silent", mode)
        assert info == BackendInfo(cost_phases=generic_cost_phases(mode))
        assert info.nests_grad and info.counters_decide and not info.unsupported_ops and not info.remedies
    assert backends.backend_info("silent", "eager").cost_phases == ("backward",)


def test_the_declarations_reach_the_series_info(plugins):
    info = backends.backend_info("planted", "walk")
    assert info.cost_phases == ("visit", "sort")
    assert info.phase_name("visit") == "the planted graph walk" and info.phase_name("run") == "run"
    assert info.remedies == ("walk each node once (a planted remedy)",)
    assert info.unsupported_ops == ("sin",) and not info.nests_grad
    assert from_plain(BackendInfo, json.loads(json.dumps(to_plain(info)))) == info  # plain data
    assert backends.backend_info("planted", "eager").nests_grad
    assert info.deciding_counters == ("steps",)
    # a series built without its info (a report read from JSON) finds the registered one
    assert declared_info("planted", "walk") == info
    assert model.cost_phases("walk", "planted") == ("visit", "sort")
    assert explain.phase_name("planted", "walk", "sort") == "the planted sort"


def test_builtin_declarations_are_what_analysis_and_hunt_read():
    torch_compile = backends.backend_info("torch", "compile")
    assert torch_compile.cost_phases == ("dynamo", "aot_autograd", "inductor_codegen", "inductor_compile", "compile")
    assert explain.REGIONAL_COMPILE in torch_compile.remedies
    assert backends.backend_info("jax", "compile").remedies[0] == explain.XLA_SCAN
    assert backends.backend_info("engine", "traced").deciding_counters == model.COUNTER_KEYS
    assert not backends.backend_info("engine", "eager").nests_grad
    assert (
        not backends.backend_info("tinygrad", "compile").nests_grad
        and backends.backend_info("jax", "traced").nests_grad
    )
    assert "qr_q" in backends.backend_info("autograd", "eager").unsupported_ops
    for mode in ("traced", "eager"):
        assert model.cost_phases(mode, "engine") == generic_cost_phases(mode)


# --------------------------------------------------------------------------- check honours them


def test_check_classifies_the_declared_phases_with_the_declared_counters(plugins):
    # the deciding counter doubles per layer; an undeclared one (noise) stays linear; "run" is not a cost phase
    s = _series(
        "planted",
        "walk",
        counters=lambda d, ph: {"steps": 2.0**d if ph == "visit" else d, "noise": 1e6 * d},
        seconds=lambda d, ph: 1e-3 * d,
    )
    v = decide(s)
    assert v.counter_fit is not None and "steps" in v.counter_fit.metric and "noise" not in v.counter_fit.metric
    assert v.kind == model.EXPONENTIAL_TRANSFORM and v.fit is v.counter_fit
    assert v.remedies == ["walk each node once (a planted remedy)"]


def test_check_names_the_growing_phase_as_declared(plugins):
    s = _series(
        "planted",
        "walk",
        counters=lambda d, ph: {"other": 1},
        seconds=lambda d, ph: 1e-3 * 3.0**d if ph == "sort" else 1e-3 * d,
    )
    s.backend_info = BackendInfo(**{**backends.backend_info("planted", "walk").__dict__, "deciding_counters": ()})
    v = decide(s)
    assert v.counter_fit is None  # declared: counters never decide
    assert v.growing_phase == "sort" and "the planted sort" in v.cause


def test_counters_a_plugin_declares_nothing_about_decide_in_check(plugins):
    s = _series(
        "silent",
        "traced",
        counters=lambda d, ph: {"my_steps": 2.0**d},
        seconds=lambda d, ph: 1e-3,
        phases=("transform",),
    )
    v = decide(s)
    assert v.fit is v.counter_fit and v.kind == model.EXPONENTIAL_TRANSFORM


# --------------------------------------------------------------------------- hunt honours them


def test_hunt_sends_generators_only_where_the_backend_can_run_them(plugins):
    sin = Generator((Node("sin", (0,)),))
    mul = Generator((Node("mul", (0, 0)),))
    order = Generator((Node("mul", (0, 0)),), scale="order")
    walk, eager = Target("planted", None, "walk"), Target("planted", None, "eager")
    assert runs_on(walk, sin) == "no sin on planted"
    assert runs_on(walk, mul) is None
    assert runs_on(walk, order) is not None and runs_on(eager, order) is None
    silent = Target("silent", None, "traced")
    assert runs_on(silent, sin) is None and runs_on(silent, order) is None


def _evaluation(target: Target, phases) -> Evaluation:
    pts = [
        Point(depth=d, times={ph: 1e-3 * d for ph in phases}, counters={ph: {"steps": 2.0**d} for ph in phases})
        for d in (1, 2, 3, 4, 5, 6)
    ]
    return Evaluation(target, pts)


def test_hunt_fitness_lets_the_declared_counters_decide(plugins):
    comps = components(_evaluation(Target("planted", None, "walk"), ("visit", "sort", "run")))
    deciding = {c.name for c in comps if c.decides}
    assert deciding == {"counters:visit+sort"}  # the declared cost phases, not run; time does not decide
    assert comps[next(c for c in comps if c.name == "counters:visit+sort")][1][-1] == 2 * 2.0**6
    # a plugin that declares nothing: its counters decide as they do in check
    comps = components(_evaluation(Target("silent", None, "traced"), ("transform",)))
    assert {c.name for c in comps if c.decides} == {"counters:transform+drop"}  # the generic traced phases
    # counters declared never to decide: time does
    comps = components(_evaluation(Target("mute", None, "traced"), ("transform",)))
    assert {c.name for c in comps if c.decides} == {"time:transform+drop"}
    assert not any(c.name.startswith("counters:") for c in comps)


def test_the_engine_is_read_from_its_declarations_too():
    assert Target("engine", "v08", "traced").engine == "v08" and Target("jax", None, "traced").engine == "jax"
    assert Target("engine", "v08", "traced").decider == "counters"
    assert Target("jax", None, "traced").decider == "python_calls" and Target("jax", None, "compile").decider == "time"
    ev = _evaluation(Target("engine", "v08", "traced"), ("transform", "drop"))
    for pt in ev.points:
        pt.counters = {ph: dict.fromkeys(model.COUNTER_KEYS, 2.0**pt.depth) for ph in ("transform", "drop")}
    assert {c.name for c in components(ev) if c.decides} == {"counters:transform+drop"}


# --------------------------------------------------------------------------- no module keys on a backend's name

#: Backend names no module of analysis or hunt may compare with, look up or branch on.
NAMES = {"engine", "jax", "torch", "autograd", "tinygrad"}
#: Modules still keyed by name, and why (each one a known debt: the list only shrinks; an entry whose module keys on
#: no name any more fails the test). Hunt's depths and tiers per engine are ``Backend.hunt_plans`` now.
KEYED: dict[str, str] = {}


def _name_keys(path: Path) -> list[tuple[int, str]]:
    """``(line, name)`` of every comparison with, membership test of, or dict key that is a backend's name."""
    tree = ast.parse(path.read_text())
    out: list[tuple[int, str]] = []

    def named(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Constant) and node.value in NAMES:
            return [node.value]
        if isinstance(node, ast.Tuple | ast.Set | ast.List):
            return [n for e in node.elts for n in named(e)]
        return []

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for part in (node.left, *node.comparators):
                out.extend((node.lineno, n) for n in named(part))
        elif isinstance(node, ast.Dict):
            out.extend((node.lineno, n) for k in node.keys if k is not None for n in named(k))
    return out


@pytest.mark.parametrize("package", ["adprof/analysis", "adprof/hunt"])
def test_no_backend_name_keys_in_analysis_or_hunt(package):
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in KEYED:
            assert _name_keys(path), f"stale KEYED entry: {rel} keys on no backend name any more"
            continue
        found += [f"{rel}:{line}: {name!r}" for line, name in _name_keys(path)]
    assert not found, "backend knowledge belongs on the Backend's declarations:\n" + "\n".join(found)


def test_the_name_key_finder_finds_them(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text('if backend == "engine": pass\nx = {"jax": 1}\nif (b, m) in (("torch", "compile"),): pass\n')
    assert [n for _, n in _name_keys(path)] == ["engine", "jax", "torch"]


def test_a_new_backend_is_a_subclass_and_nothing_else():
    """Every declaration analysis and hunt read is a class attribute of Backend with a default."""
    for name in ("cost_phases", "phase_names", "remedies", "unsupported_ops", "no_nested_grad", "deciding_counters"):
        assert hasattr(Backend, name), name
    assert Backend().info("eager") == BackendInfo(cost_phases=("backward",))
