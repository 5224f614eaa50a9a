"""Imports go one way only: every import (module-level or inside a function) of every module under
adprof/ and engine/ is checked against a layer table (adprof's: docs/architecture.md; the engine's:
ENGINE_LAYERS below), and neither package has an import cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "adprof"
ENGINE = PACKAGE.parent / "engine"

#: Layer of a module: the first matching prefix wins (``adprof`` alone is the public package API).
LAYER_OF: tuple[tuple[str, str], ...] = (
    ("adprof.constants", "model"),
    ("adprof.model", "model"),
    ("adprof.verdicts", "model"),  # the one table of verdict kinds: model's names are its views
    ("adprof.words", "model"),  # the sentences of the model's fields: the analysis' evidence and the renderers
    ("adprof.backend_info", "model"),  # what a backend declares, as plain data the analysis reads
    ("adprof.prediction", "model"),  # the next point's cost, predicted one way (schedule, cap, hunt, advice)
    ("adprof.util", "model"),  # standard-library helpers (processes, output files, terminal text)
    ("adprof.plain", "model"),
    ("adprof.options", "model"),  # the one table of option rules: read by the decorator, CLI, API, fixture
    ("adprof.chain", "chain"),
    ("adprof.backends", "backends"),
    ("adprof.measure", "measure"),
    ("adprof.analysis", "analysis"),
    ("adprof.report", "report"),
    ("adprof.comparison", "report"),  # two reports compared: reads results as the report's labels do
    ("adprof.pipeline", "pipeline"),  # the one run path: specs measured with the analysis hooks, decided
    ("adprof.render", "render"),
    ("adprof.flame", "flame"),
    # the guard's limits and its outcome are plain data beside the report: the renderers read them
    ("adprof.guard.limits", "report"),
    ("adprof.guard.outcome", "report"),
    ("adprof.guard", "guard"),
    ("adprof.hunt", "hunt"),
    ("adprof.pytest_plugin", "guard"),
    ("adprof.cli", "cli"),
    ("adprof.__main__", "cli"),
    ("adprof.api", "api"),  # adprof.check / adprof.guard: the library's run path, as the command runs it
    ("adprof.notebook", "api"),  # %load_ext adprof, %%adprof
    ("adprof", "api"),  # the package: chain and load_chains at import, the API lazily (test_package_import_is_light)
)

#: The layers each layer may import (its own layer is always allowed, see RENDER_PEERS for render).
#: measure and analysis sit side by side: measure never imports analysis, analysis only the model.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "model": frozenset(),
    "chain": frozenset({"model"}),
    "backends": frozenset({"model", "chain"}),
    "measure": frozenset({"model", "chain", "backends"}),
    "analysis": frozenset({"model"}),
    "report": frozenset({"model", "analysis"}),
    "render": frozenset({"model", "report"}),  # renderers read the report; they never analyse
    "pipeline": frozenset({"model", "chain", "backends", "measure", "analysis", "report"}),
    "flame": frozenset({"model", "chain", "backends"}),  # the worker runs the backends' points
    "guard": frozenset({"model", "chain", "backends", "measure", "analysis", "report", "pipeline", "render"}),
    "hunt": frozenset({"model", "chain", "backends", "measure", "analysis", "report", "pipeline", "render"}),
    "cli": frozenset(
        {"model", "chain", "backends", "measure", "analysis", "report", "pipeline", "render", "flame", "guard", "hunt"}
    ),
    # the library never imports its command line: the CLI parses arguments and calls the library
    "api": frozenset({"model", "chain", "backends", "measure", "analysis", "report", "pipeline", "render", "guard"}),
}

#: Renderers do not import each other, except these (the package __init__ re-exports its modules).
RENDER_PEERS: frozenset[tuple[str, str]] = frozenset(
    {
        ("adprof.render.html", "adprof.render.plot"),  # the HTML page embeds the plot's SVG figures
        ("adprof.render.guard", "adprof.render.markdown"),  # the guard's Markdown table is a Markdown table
        ("adprof.render.guard", "adprof.render.html"),  # a guard in a notebook: its diff and the report's HTML
    }
)


def layer_of(module: str) -> str | None:
    for prefix, layer in LAYER_OF:
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return None


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str, root: Path = PACKAGE) -> bool:
    rel = Path(*name.split("."))
    base = root.parent / rel
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imported_modules(source: str, module: str, is_package: bool, root: Path = PACKAGE) -> list[tuple[int, str]]:
    """``(line, module of root's package)`` for every import in ``source``, at any depth (functions
    included)."""
    top = root.name
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names if a.name.split(".")[0] == top)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != top:
                continue
            for a in node.names:  # `from adprof import model` imports the module adprof.model
                sub = f"{target}.{a.name}"
                out.append((node.lineno, sub if is_module(sub, root) else target))
    return out


def violations(root: Path = PACKAGE) -> list[str]:
    """One line per import that goes against the layer table."""
    bad = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        layer = layer_of(module)
        if layer is None:
            bad.append(f"{module}: not in the layer table")
            continue
        is_package = path.name == "__init__.py"
        for line, target in imported_modules(path.read_text(encoding="utf-8"), module, is_package, root):
            t_layer = layer_of(target)
            if t_layer is None:
                bad.append(f"{module}:{line} imports {target}, which is not in the layer table")
            elif t_layer == layer:
                inside_render = layer == "render" and target != "adprof.render" and not is_package
                if inside_render and (module, target) not in RENDER_PEERS:
                    bad.append(f"{module}:{line} imports {target}: renderers do not import each other")
            elif t_layer not in MAY_IMPORT[layer]:
                bad.append(f"{module}:{line} ({layer}) imports {target} ({t_layer}): a layer above or beside it")
    return bad


def test_every_module_has_a_layer_and_imports_only_downward() -> None:
    bad = violations()
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------------------------- engine

#: The engine's layers, bottom first; a module imports only its own layer and the ones below. The
#: primitives (ops) sit under the xp namespace built on them, the operators on tensors (tensor) over
#: that namespace, the tensor types over the operators; ``engine.context`` lets the namespace reach the
#: active eager session or traced graph without importing them (engine.eager installs it).
ENGINE_LAYERS: tuple[tuple[str, ...], ...] = (
    ("engine.errors", "engine.counters", "engine.profiles", "engine.context"),
    ("engine.keys", "engine.metadata", "engine.checkpoint_chain"),
    ("engine.ops",),
    ("engine.numpy",),
    ("engine.tensor",),
    ("engine.program", "engine.runtime"),
    ("engine.graph",),
    ("engine.ad", "engine.compile"),
    ("engine.eager",),
    ("engine.remedies",),
    ("engine",),
)


def engine_rank(module: str) -> int | None:
    """Index in ENGINE_LAYERS of the longest listed prefix of ``module``."""
    best = None
    for rank, names in enumerate(ENGINE_LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > best[0]):
                best = (len(name), rank)
    return None if best is None else best[1]


def import_graph(root: Path) -> dict[str, list[tuple[int, str]]]:
    """module -> [(line, imported module of the same package)], every import at any depth."""
    graph = {}
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        graph[module] = imported_modules(path.read_text(encoding="utf-8"), module, path.name == "__init__.py", root)
    return graph


def engine_violations(root: Path = ENGINE) -> list[str]:
    """One line per engine import that goes up the layer table."""
    bad = []
    for module, imports in import_graph(root).items():
        rank = engine_rank(module)
        if rank is None:
            bad.append(f"{module}: not in the layer table")
            continue
        for line, target in imports:
            t_rank = engine_rank(target)
            if t_rank is None:
                bad.append(f"{module}:{line} imports {target}, which is not in the layer table")
            elif t_rank > rank:
                bad.append(f"{module}:{line} imports {target}: a layer above it")
    return bad


def import_cycles(root: Path) -> list[list[str]]:
    """Import cycles among the modules of ``root``'s package (a package's ``__init__`` importing its
    own submodules is not a cycle with them: it imports them, they never import it back)."""
    graph = {m: sorted({t for _, t in imports if t != m}) for m, imports in import_graph(root).items()}
    cycles, state, stack = [], {}, []

    def visit(start: str) -> None:  # iterative DFS: a back edge closes a cycle
        work = [(start, iter(graph.get(start, ())))]
        state[start] = 1
        stack.append(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is None:
                work.pop()
                stack.pop()
                state[node] = 2
            elif state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                state[nxt] = 1
                stack.append(nxt)
                work.append((nxt, iter(graph.get(nxt, ()))))

    for module in graph:
        if module not in state:
            visit(module)
    return cycles


def test_engine_modules_import_only_downward() -> None:
    bad = engine_violations()
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("root", [PACKAGE, ENGINE], ids=["adprof", "engine"])
def test_no_import_cycle(root: Path) -> None:
    cycles = import_cycles(root)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def _engine_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in {"__init__.py": "", "ops/__init__.py": "", "numpy.py": "", **files}.items():
        f = tmp_path / "engine" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return tmp_path / "engine"


def test_ops_importing_the_namespace_above_is_reported(tmp_path: Path) -> None:
    """The import that made the cycle (ops/operators.py: ``from .. import numpy``), even inside a function."""
    root = _engine_tree(tmp_path, {"ops/operators.py": "def f():\n    from .. import numpy as xnp\n"})
    assert engine_violations(root) == ["engine.ops.operators:2 imports engine.numpy: a layer above it"]


def test_an_import_cycle_is_found(tmp_path: Path) -> None:
    root = _engine_tree(
        tmp_path,
        {
            "ad.py": "from .compile import f\n",
            "compile.py": "def g():\n    from . import ad\n",
            "eager.py": "from . import ad\n",
        },
    )
    assert import_cycles(root) == [["engine.ad", "engine.compile", "engine.ad"]]
    assert import_cycles(_engine_tree(tmp_path / "ok", {"ad.py": "from . import compile\n", "compile.py": ""})) == []


def test_the_table_covers_every_layer() -> None:
    assert {layer for _, layer in LAYER_OF} == set(MAY_IMPORT)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in {"__init__.py": "", **files}.items():
        f = tmp_path / "adprof" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return tmp_path / "adprof"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # measure must not use analysis, not even inside a function
        (
            {
                "measure/__init__.py": "",
                "analysis/__init__.py": "",
                "measure/s.py": "def f():\n    import adprof.analysis\n",
            },
            "adprof.measure.s:2 (measure) imports adprof.analysis (analysis)",
        ),
        # `from adprof import cli` from the model layer
        ({"model.py": "from adprof import cli\n", "cli/__init__.py": ""}, "adprof.model:1 (model) imports adprof.cli"),
        # a renderer importing another renderer
        (
            {
                "render/__init__.py": "",
                "render/html.py": "from adprof.render.console import x\n",
                "render/console.py": "",
            },
            "adprof.render.html:1 imports adprof.render.console: renderers do not import each other",
        ),
    ],
    ids=["function-level", "from-import", "render-peer"],
)
def test_an_upward_import_is_reported(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    found = violations(_tree(tmp_path, files))
    assert any(line.startswith(expected) for line in found), found


def test_a_downward_import_is_not_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"model.py": "", "report.py": "from adprof import model\nimport adprof.model\n"})
    assert violations(root) == []
