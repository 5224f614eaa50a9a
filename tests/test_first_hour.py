"""The first hour of a new user (issue 38, section 2): the docs' notebook cells, piped tables that cut nothing,
one install extra per engine, messages that point the right way, and the smaller things seen on the way."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

import adprof
from adprof import words
from tests.extras import requires
from tests.fault_helpers import scaled_budget

ROOT = Path(adprof.__file__).resolve().parents[1]  # the checkout under test (its docs and config)


# --------------------------------------------------------------------------- 1. the notebook example


@requires("IPython")
def test_notebook_load_ext_binds_adprof_for_the_docs_cells():
    """``%load_ext adprof`` binds ``adprof`` in the user's namespace (the docs' ``%%adprof`` cell uses
    ``@adprof.chain`` without an import); a name ``adprof`` the notebook already has is kept."""
    from IPython.core.interactiveshell import InteractiveShell

    import adprof
    from adprof.notebook import load_ipython_extension

    shell = InteractiveShell.instance()
    try:
        shell.user_ns.pop("adprof", None)
        load_ipython_extension(shell)
        assert shell.user_ns["adprof"] is adprof
        shell.run_cell("@adprof.chain(max_depth=3)\ndef f(xp, x, depth):\n    return xp.sum(x)\n")
        assert adprof.chain is not None and "f" in shell.user_ns
        shell.user_ns["adprof"] = "mine"
        load_ipython_extension(shell)
        assert shell.user_ns["adprof"] == "mine"
    finally:
        InteractiveShell.clear_instance()


# --------------------------------------------------------------------------- 3. one extra per engine


def _extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_extras_one_per_engine_with_ranges_and_peers_is_all_of_them():
    extras = _extras()
    for engine, packages in (
        ("jax", {"jax", "jaxlib"}),
        ("torch", {"torch", "array-api-compat"}),
        ("autograd", {"autograd"}),
        ("tinygrad", {"tinygrad"}),
    ):
        reqs = extras[engine]
        names = {re.split(r"[<>=!~ \[;]", r, maxsplit=1)[0] for r in reqs}
        assert names == packages, (engine, reqs)
        assert all("==" not in r for r in reqs), f"{engine}: a range, not a pin (pins live in .ci/constraints.txt)"
        assert all(">=" in r for r in reqs), reqs
    torch = next(r for r in extras["torch"] if r.startswith("torch"))
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(torch[len("torch") :])
    assert "2.13.0" in spec and "2.4.0" in spec and "3.0" not in spec  # the CPU build on disk, not any future torch
    assert extras["peers"] == ["adprof[jax,torch,autograd,tinygrad]"]


def test_extras_ci_installs_through_its_constraints_and_the_readme_shows_each_install_line():
    constraints = (ROOT / ".ci" / "constraints.txt").read_text().split()
    assert "torch==2.13.0" in constraints
    run = (ROOT / ".ci" / "run").read_text()
    installs = [line for line in run.splitlines() if "pip install" in line and "-e" in line]
    assert installs and all("constraints" in line for line in installs), installs
    assert "-c .ci/constraints.txt" in run
    readme = (ROOT / "README.md").read_text()
    for engine in ("jax", "torch", "autograd", "tinygrad"):
        assert f"pip install -e '.[{engine}]'" in readme, engine


def test_extras_a_missing_engine_names_its_own_extra(monkeypatch):
    import sys

    from adprof import backends

    monkeypatch.setitem(sys.modules, "tinygrad", None)
    with pytest.raises(backends.BackendNotInstalledError, match=r"pip install 'adprof\[tinygrad\]'"):
        backends.check_backend("tinygrad")


# --------------------------------------------------------------------------- 2. piped output cuts nothing

BORDERS = "│┃"


def _table_rows(text: str, top: str = "┏", bottom: str = "└") -> list[list[str]]:
    """The cells of each row of the first boxed table of ``text``; every line of the box must be as wide as its top
    border and end with a border (the right border is never lost)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(top))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(bottom))
    box = lines[start : end + 1]
    assert {len(line) for line in box} == {len(box[0])}, "\n".join(box)
    assert all(line[-1] in "┓┃┫┩│┘" for line in box), "\n".join(box)
    rows = [line for line in box if line[0] in BORDERS]
    return [[c.strip() for c in re.split(f"[{BORDERS}]", line)[1:-1]] for line in rows]


def _summary_report():
    from adprof.model import Result, Series, Stop, StopReason
    from tests.test_render import make_report

    report = make_report()
    long = Series(chain="a_chain_with_a_long_name_for_the_column", backend="engine", profile="v08", mode="eager")
    long.stop = Stop(StopReason.BUDGET_SHARE, after=12, depth=13, seconds=1.75, limit=1.13)
    report.results.append(Result(series=long, verdict=report.results[4].verdict))
    return report


def _expected_rows(report) -> list[list[str]]:
    from adprof.render.console import _decided, stopped_cells
    from adprof.report import (
        backend_label,
        chain_label,
        depth_reached,
        fmt_growth,
        memory_text,
        program_cell,
        shows_memory,
        shows_program,
        worst_time_text,
    )

    stopped, _ = stopped_cells(report)
    memory = shows_memory(report.results)
    program = shows_program(report.results)
    return [
        [
            chain_label(r.series),
            backend_label(r.series),
            r.series.mode,
            r.verdict.kind,
            fmt_growth(r),
            *([program_cell(r)] if program else []),
            *([memory_text(r)] if memory else []),
            _decided(r),
            depth_reached(r.series),
            worst_time_text(r.series),
            why,
        ]
        for r, why in zip(report.results, stopped, strict=True)
    ]


@pytest.mark.parametrize("width", [80, 150])
def test_piped_summary_table_cuts_no_cell_and_breaks_no_word(width):
    """Without a terminal the summary table is laid out whole: each row on one line, each cell exactly its text,
    the right border kept; why a row stopped is a short mark in the cell and its whole sentence under the table."""
    import io

    from adprof.render.console import SafeConsole, render_report, stopped_cells

    report = _summary_report()
    buf = io.StringIO()
    render_report(report, SafeConsole(file=buf, width=width, color_system=None))
    out = buf.getvalue()
    rows = _table_rows(out)
    assert rows[0][:3] == ["chain", "backend/profile", "mode"] and rows[0][-1] == "stopped"
    assert rows[1:] == _expected_rows(report)
    _, notes = stopped_cells(report)
    assert len(notes) == 2 and notes[1].startswith("[2] a_chain_with_a_long_name_for_the_column [engine/v08, eager]:")
    for note in notes:
        assert note in out.splitlines(), note  # each sentence whole, on its own line
    assert "ImportError: no jax" in out  # the error's line follows the table


@pytest.mark.parametrize("width", ["80", "150"])
def test_piped_report_and_check_through_the_cli_cut_no_cell(width, tmp_path):
    """The real command piped (``adprof report saved.json | cat``; ``adprof check FILE | cat`` on a small chain
    stopped by its cap): every row whole at 80 and at 150 columns."""
    import os
    import subprocess
    import sys

    from adprof.render import load_report, report_to_json

    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(report_to_json(_summary_report())))
    env = {**os.environ, "COLUMNS": width, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "adprof", "report", str(saved), "--no-color"],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr
    assert _table_rows(run.stdout)[1:] == _expected_rows(load_report(json.loads(saved.read_text())))
    if width != "80":
        return
    chain = tmp_path / "grows.py"
    chain.write_text(
        "import adprof\n\n\n@adprof.chain(input_shape=(3, 3), reuse=2, depths=tuple(range(1, 40)))\n"
        "def square_with_a_long_name(xp, x, depth):\n    y = x\n    for _ in range(depth):\n"
        "        y = (y * y) * 0.5\n    return xp.sum(y)\n"
    )
    cap = f"{scaled_budget(0.05):.3f}"  # stops it after a few depths, as many on a loaded machine
    args = ["check", str(chain), "--profile", "v08", "--mode", "traced", "--cap", cap, "--budget", "30"]
    run = subprocess.run(
        [sys.executable, "-m", "adprof", *args, "--no-color", "--json", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    report = load_report(json.loads((tmp_path / "r.json").read_text()))
    assert report.results[0].series.stop is not None  # the cap stopped it: its row has a mark
    assert _table_rows(run.stdout)[1:] == _expected_rows(report)
    assert (
        f"[1] {report.results[0].series.label}: {words.stopped_text(report.results[0].series)}"
        in run.stdout.splitlines()
    )


def _hunt_report():
    from adprof.hunt.model import Finding, HuntReport, Row, Shrunk

    def row(profile, verdict, note=""):
        return Row(f"engine/{profile} traced", "engine", profile, "traced", verdict, "d^1.97", "counters", note)

    error = "depth 3 killed after the 6.0 s timeout; no depth finished (the chain hangs or is far too slow)"
    finding = Finding(
        id=1, file="found/0001_v08_traced.py", chain="finding_0001", target="engine/v08 traced", backend="engine",
        profile="v08", mode="traced", verdict="superlinear-transform", figure="d^1.97", decided_by="counters",
        axis="layer", summary="a = xp.sin(y); y = (a * a) * 0.5 + xp.tanh(y)", generator={}, uses=2,
        predicted_base=1.0, component="counters:transform+drop", search_figure="d^1.99",
        reproduce="adprof check found/0001_v08_traced.py::finding_0001 --backend engine --profile v08 --mode traced",
        attribution="engine-specific", attribution_text="grows on v08 (traced); linear on fixed (traced)",
        table=[row("v08", "superlinear-transform"), row("fixed", "linear"), row("other", "error", error)],
        shrunk=Shrunk(3, 1, 2, 9, True, "a = y * y; y = xp.sin(a)"),
    )  # fmt: skip
    return HuntReport(seed=1, budget_seconds=60, findings=[finding]), error


@pytest.mark.parametrize("width", ["80", "150"])
def test_piped_hunt_table_keeps_names_and_paths_whole(width, tmp_path, monkeypatch, capsys):
    """``adprof hunt ... | cat`` (the command in-process, its search replaced by a finished report): the findings
    table has each cell whole (``superlinear-transform``, ``found/0001_v08_traced.py``), the engines table too,
    a long note goes under it whole, and the reproduce line is one line."""
    from adprof.cli import hunt as hunt_cli
    from adprof.cli import main

    report, error = _hunt_report()

    class Finished:
        def __init__(self, *args, **kwargs):
            pass

        def run(self):
            return report

    monkeypatch.setattr(hunt_cli, "Hunt", Finished)
    monkeypatch.setenv("COLUMNS", width)
    code = main(["hunt", "--backend", "engine", "--budget", "5", "--out", str(tmp_path / "found"), "--no-color"])
    out = capsys.readouterr().out
    assert code == 1, out
    f = report.findings[0]
    cells = ["0001", f.target, f.verdict, f.figure, f.decided_by, f.summary, f.attribution, f.file]
    assert _table_rows(out)[1:] == [cells]
    lines = out.splitlines()
    for r, note in zip(f.table, ["", "", "[1]"], strict=True):
        pattern = r"\s+".join(
            re.escape(c) for c in (f"{r.backend}/{r.profile}", r.mode, r.verdict, r.figure, r.decided_by, note) if c
        )
        assert any(re.fullmatch(r"\s*" + pattern + r"\s*", line) for line in lines), (pattern, out)
    assert f"  [1] {error}" in lines
    assert f"  reproduce: {f.reproduce}" in lines


# --------------------------------------------------------------------------- 4. messages that point the right way

TORCH_ONLY = """\
import adprof


@adprof.chain(input_shape=(3,), modes={"torch": ("eager",)})
def nested(xp, x, depth):
    y = x
    for _ in range(depth):
        y = xp.tanh(y)
    return xp.sum(y)
"""


@pytest.mark.parametrize("command", ["check", "guard"])
def test_messages_a_chain_for_another_backend_names_it_and_the_flag(command, tmp_path, capsys):
    from adprof.cli import main

    path = tmp_path / "only_torch.py"
    path.write_text(TORCH_ONLY)
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "chain 'nested' runs on torch only" in err and "select it with --backend torch" in err, err
    assert "no chain supports the selected modes" not in err


def test_messages_a_chain_without_the_asked_mode_names_its_modes(tmp_path, capsys):
    from adprof.cli import main

    path = tmp_path / "eager_only.py"
    path.write_text(TORCH_ONLY.replace('modes={"torch": ("eager",)}', 'modes=("eager",)'))
    assert main(["check", str(path), "--mode", "traced"]) == 2
    err = capsys.readouterr().err.strip()
    assert "chain 'nested' declares modes eager, not traced: select them with --mode eager" in err, err


@pytest.mark.parametrize("backend", ["jax", "torch", "autograd", "tinygrad"])
@pytest.mark.parametrize("mode", ["traced", "eager", "compile"])
def test_messages_max_depth_is_a_maximum_on_time_only_backends(backend, mode):
    """``max_depth=12`` (docs/chains.md: depths 1..max_depth): no series is planned past 12, on any backend and
    mode (it ran to 20 on JAX and torch: the time range went one doubling beyond)."""
    from adprof.backends import BACKEND_MODES
    from adprof.chain import chain
    from adprof.measure.config import MeasureConfig
    from adprof.measure.plan import plan_series
    from adprof.measure.series import _time_range, time_schedule

    if mode not in BACKEND_MODES.get(backend, ()):
        pytest.skip(f"{backend} has no {mode} mode")

    @chain(input_shape=(3,), max_depth=12, modes=(mode,))
    def layered(xp, x, depth):
        return xp.sum(x)

    assert chain(layered.fn, **layered.decorator_options()).bounded  # a shipped chain keeps its maximum
    meta = {**layered.metadata(), "file": __file__, "name": "layered"}
    (spec,) = plan_series([meta], [backend], None, mode, [])
    cfg = MeasureConfig()
    if spec.depths is not None:
        assert max(spec.depths) <= 12, spec.depths
    else:
        assert _time_range(spec, cfg)[1] <= 12 and time_schedule(spec, cfg).limit <= 12


# --------------------------------------------------------------------------- 5. smaller things


def _side(profile: str, verdict: str, growth: str, memory: str = "linear d^1.00"):
    from adprof.comparison import Side

    rate_kind, rate = ("base", 2.0) if growth.startswith("x") else ("exponent", 1.0)
    return Side(
        file="chains.py", chain="mul", backend="engine", profile=profile, mode="traced", verdict=verdict,
        rate_kind=rate_kind, rate=rate, interval=[rate, rate], growth=growth, decided_by="counters",
        memory="linear", memory_rate_kind="exponent", memory_rate=1.0, memory_interval=[1.0, 1.0],
        memory_text=memory,
    )  # fmt: skip


def test_compare_rows_take_one_line_as_docs_compare_shows():
    """docs/compare.md's rows at 150 columns: one line each. A memory reading that did not change is neither in the
    cells nor in the why (it made each row three lines); one that changed is in both."""
    import io

    from rich.console import Console

    from adprof.comparison import Change, Comparison, SeriesKey, State, classify, describe_side, memory_changed
    from adprof.render.console import comparison_table

    fixed, v08 = _side("fixed", "linear", "d^1.00"), _side("v08", "exponential-transform", "x2.00/layer")
    state, reason = classify(fixed, v08)
    assert (state, reason) == (State.REGRESSED, "worse verdict")
    key = SeriesKey("chains.py", "mul", "engine", "v08", "traced")
    changes = [Change(state, key, fixed, v08, reason)] * 3
    buf = io.StringIO()
    Console(file=buf, width=150, color_system=None).print(comparison_table(Comparison(changes=changes)))
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in buf.getvalue().splitlines() if line[0] == "│"]
    expected = ["regressed", "mul", "engine/fixed -> engine/v08", "traced", "linear d^1.00"]
    assert rows == [[*expected, "exponential-transform x2.00/layer", "worse verdict"]] * 3, buf.getvalue()

    grown = _side("v08", "exponential-transform", "x2.00/layer", memory="superlinear-memory d^2.00")
    grown.memory, grown.memory_rate = "superlinear-memory", 2.0
    state, reason = classify(fixed, grown)
    assert state is State.REGRESSED and "memory: worse memory verdict" in reason, reason
    change = Change(state, key, fixed, grown, reason)
    assert memory_changed(change)
    assert describe_side(grown, memory_changed(change)).endswith("; memory superlinear-memory d^2.00")


@requires("matplotlib")
@pytest.mark.parametrize("figure", ["report", "chain"])
def test_plot_legends_are_readable_and_cover_no_curve(figure):
    """The legends were 6 pt (about 7 px) inside the axes, over the curves: now >= 9 pt (12 px at 100 dpi), under
    their axes, inside the figure, overlapping no axes (of any panel)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from adprof.render.plot import _draw_panel, report_figure
    from tests.test_render import make_report

    report = make_report()
    if figure == "report":
        fig = report_figure(report)
    else:  # chain_svg's figure, drawn the same way
        from matplotlib.figure import Figure

        from adprof.render.plot import _rows_layout

        fig = Figure()
        _rows_layout(fig, 1, len(report.results[:2]), 6.4, left=0.12, right=0.98)
        _draw_panel(fig.add_subplot(1, 1, 1), "reuse", report.results[:2])
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    page = fig.bbox
    axes = [ax for ax in fig.axes if ax.get_visible()]
    for ax in axes:
        legend = ax.get_legend()
        assert legend is not None
        assert all(t.get_fontsize() >= 9 for t in legend.get_texts())
        box = legend.get_window_extent(renderer)
        assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1 and page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1
        for other in axes:
            assert not box.overlaps(other.get_window_extent(renderer)), (ax.get_title(), other.get_title())


def test_html_environment_is_a_table_without_reprs_or_none():
    """The HTML report's environment: versions as a table of their own, the command as its words, no ``None``
    (a field without a value is left out), no Python dict or list repr."""
    from adprof.render import render_html
    from tests.test_render import make_report

    report = make_report()
    report.environment = {
        "python": "3.11.7",
        "argv": ["adprof", "check", "probes/chains.py", "--json", "r.json"],
        "depths": None,
        "memory": None,
        "versions": {"adprof": "0.1.0", "numpy": "2.4.6"},
    }
    page = render_html(report)
    env = page[page.index("<h2>Environment</h2>") :]
    env = env[: env.index("</table></td></tr></table>") + len("</table></td></tr></table>")]
    assert "None" not in env and "{" not in env and "[" not in env and "&#x27;" not in env, env
    assert "<td>adprof check probes/chains.py --json r.json</td>" in env
    assert "<th>versions</th><td><table><tr><th>adprof</th><td>0.1.0</td></tr><tr><th>numpy</th><td>2.4.6</td>" in env
    assert "depths" not in env and "memory" not in env


def test_text_ranges_and_phase_names_read_as_a_person_writes_them():
    """``calls 2..2`` is ``call 2``; a stop in the first eager call names ``backward (call 1)``, never the internal
    ``backward0``; a shrink that kept the size says so instead of "from size 1 to 1"."""
    import io

    from adprof.analysis.eager import amortization
    from adprof.hunt.render import render_hunt
    from adprof.model import Point, Series, Stop, StopReason
    from adprof.render.console import SafeConsole
    from adprof.util.text import range_text

    assert range_text("call", "calls", 2, 2) == "call 2" and range_text("call", "calls", 2, 5) == "calls 2..5"
    points = [
        Point(
            depth=d,
            times={"backward0": 3e-6 * d, "backward": 1e-6 * d},
            counters={"backward0": {"metadata_lookups": 3.0 * d}, "backward": {"metadata_lookups": 1.0 * d}},
            extra={"backward_call_counters": [{"metadata_lookups": c * d} for c in (3.0, 1.0, 1.0)]},
        )
        for d in (1, 2, 3, 4)
    ]
    _, _, lines = amortization(Series("c", "engine", "v08", "eager", points=points))
    assert lines[0].startswith("call 2 cost") and "2..2" not in lines[0], lines

    stop = Stop(StopReason.PREDICTED_CAP, after=8, depth=9, phase="backward0", seconds=3.11, limit=1.5)
    assert (
        words.stop_text(stop)
        == "stopped after depth 8: next point (depth 9) predicted backward (call 1) 3.11 s > 1.5 s cap"
    )
    killed = Stop(StopReason.BUDGET, after=3, depth=4, phase="forward0+backward0", seconds=2.0, call=0)
    assert "backward0" not in words.stop_text(killed) and "forward (call 1)+backward (call 1)" in words.stop_text(
        killed
    )

    report, _ = _hunt_report()
    report.findings[0].shrunk.from_size = report.findings[0].shrunk.to_size = 1
    buf = io.StringIO()
    render_hunt(report, SafeConsole(file=buf, width=120, color_system=None))
    assert "from size 1 to 1" not in buf.getvalue()
    assert "  shrunk size 1 kept, simplified (1-minimal): a = y * y; y = xp.sin(a)" in buf.getvalue()


def test_structure_probe_runs_only_on_chains_that_run_on_the_engine():
    """A chain declared for torch only is never recorded on the engine (every verdict carried "no predicted base
    (depth 1: TypeError: 'TracedTensor' object is not subscriptable)"); a chain for every backend, or for the
    engine among others, is."""
    from adprof.chain import chain
    from adprof.measure import pool as pool_mod
    from adprof.measure.budget import Budget
    from adprof.measure.config import MeasureConfig
    from adprof.measure.plan import plan_series

    def body(xp, x, depth):
        return xp.sum(x)

    metas = [
        {**chain(body, name="torch_only", modes={"torch": ("eager",)}).metadata(), "file": "t.py"},
        {**chain(body, name="anywhere").metadata(), "file": "t.py"},
        {
            **chain(body, name="engine_too", modes={"torch": ("eager",), "engine": ("eager",)}).metadata(),
            "file": "t.py",
        },
    ]
    specs = plan_series(metas, ["torch", "engine"], None, "eager", [])
    assert {s.chain: s.on_engine for s in specs} == {"torch_only": False, "anywhere": True, "engine_too": True}

    class Recorded:
        def run(self, tasks, poll=None, status=None):
            self.chains = [t.args[1] for t in tasks]
            return [{"chain": name} for name in self.chains]

    pool = Recorded()
    cfg = MeasureConfig()
    recorded = pool_mod._probe_structures(specs, cfg, Budget(cfg.budget, 1), pool, lambda lane, text: None, None)
    assert sorted(pool.chains) == ["anywhere", "engine_too"]
    assert sorted(name for _, name in recorded) == ["anywhere", "engine_too"]


def test_structure_note_says_which_engine_the_prediction_is_for():
    from adprof.model import Point, Series
    from adprof.report import build_report

    points = [Point(depth=d, times={"transform": 1e-3 * d, "run": 1e-4}) for d in range(1, 9)]
    series = [Series(chain="sq", backend="jax", profile=None, mode="traced", file="f.py", points=points)]
    recording = {"chain": "sq", "depths": [1, 2, 3, 4], "value_ops": [2, 4, 6, 8], "tree_sizes": [3, 7, 15, 31]}
    report = build_report(series, {("f.py", "sq"): recording})
    (note,) = [n for n in report.notes if n.startswith("structure")]
    assert "a prediction for the engine's v08 profile" in note and "sq (2.00)" in note, note
    assert note.endswith("; not a prediction for jax"), note


def test_readme_documentation_list_names_each_page_once():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Documentation") :]
    pages = re.findall(r"^- \[(docs/[^\]]+)\]", section, flags=re.M)
    assert pages and len(pages) == len(set(pages)), [p for p in pages if pages.count(p) > 1]
