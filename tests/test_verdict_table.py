"""The one table of verdict kinds (adprof.verdicts): every layer reads it, so a new kind is one row; its views agree
with the names they replaced; and the decision modules read no message text (no split/replace/prefix cut of our
own sentences)."""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from adprof import comparison, model, verdicts
from adprof.comparison import Side, State, classify
from adprof.hunt import attribute, checks
from adprof.hunt.targets import Target
from adprof.render import console as console_render
from adprof.verdicts import TABLE, Family, Kind, KindInfo, Phase
from tests.compare_helpers import report, result

NEW = "quartic-transform"
NEW_ROW = KindInfo(
    kind=NEW,
    family=Family.SUPERLINEAR,
    phase=Phase.TRANSFORM,
    time=True,
    severity=2,  # ranked with the superlinear kinds: a move from linear is a regression
    finding=True,
    memory_kind=model.SUPERLINEAR_MEMORY,
    style="bold cyan",
    short="quartic",
)


@pytest.fixture
def new_kind(monkeypatch: pytest.MonkeyPatch) -> str:
    """The table extended by one row (nothing else edited)."""
    monkeypatch.setitem(TABLE, NEW, NEW_ROW)
    return NEW


# --------------------------------------------------------------------------- acceptance: a new kind is one row


def test_a_new_kind_is_a_verdict_a_pathology_and_a_finding(new_kind):
    assert new_kind in model.VERDICTS and new_kind in model.PATHOLOGIES and new_kind in model.FINDINGS
    v = model.Verdict(kind=new_kind)
    assert v.is_finding and v.presentation == "paragraph"
    assert verdicts.memory_kind(new_kind) == model.SUPERLINEAR_MEMORY


def test_a_new_kind_is_styled_by_the_console_renderer(new_kind):
    r = result(kind=new_kind, rate=4.0)
    table = console_render.summary_table(report(r))
    verdict_cells = [c for col in table.columns if col.header == "verdict" for c in col.cells]
    assert [str(c) for c in verdict_cells] == [new_kind]
    assert verdict_cells[0].style == "bold cyan"
    out = io.StringIO()
    console_render.render_report(report(r), Console(file=out, force_terminal=True, color_system="truecolor"))
    assert new_kind in out.getvalue()


def test_a_new_kind_is_ranked_by_compare(new_kind):
    linear, new = Side.of(result(kind=model.LINEAR, rate=1.0)), Side.of(result(kind=new_kind, rate=4.0))
    assert classify(linear, new)[0] is State.REGRESSED
    assert classify(new, linear)[0] is State.IMPROVED
    exp = Side.of(result(kind=model.EXPONENTIAL_TRANSFORM, rate=2.0))
    assert classify(new, exp)[0] is State.REGRESSED
    assert comparison.SEVERITY[new_kind] == 2


def test_a_new_kind_is_read_by_hunt(new_kind):
    target = Target("engine", "v08", "traced")
    row = attribute.row_of(target, result(kind=new_kind, rate=4.0))
    assert row.verdict == new_kind
    assert new_kind in attribute.GROWING
    assert checks.verdict_family(new_kind) == "superlinear"
    assert checks.confirms(result(kind=new_kind, rate=4.0), "superlinear")
    assert not checks.confirms(result(kind=new_kind, rate=4.0), "exponential")
    linear = attribute.row_of(Target("jax", None, "traced"), result(kind=model.LINEAR))
    label, _ = attribute.attribute([row, linear])
    assert label == attribute.ENGINE_SPECIFIC


# --------------------------------------------------------------------------- the views agree with the old names


def test_the_views_are_the_names_they_replaced():
    assert tuple(model.VERDICTS) == (
        "exponential-transform",
        "superlinear-transform",
        "exponential-backward",
        "superlinear-backward",
        "linear",
        "inconclusive",
        "error",
        "mildly-superlinear-transform",
        "mildly-superlinear-backward",
        "runaway",
    )
    assert model.PATHOLOGIES == model.VERDICTS[:4]
    assert model.FINDINGS == frozenset({*model.VERDICTS[:4], model.ERROR, model.RUNAWAY})
    assert tuple(model.MEMORY_VERDICTS) == (
        "linear",
        "flat",
        "mildly-superlinear-memory",
        "superlinear-memory",
        "exponential-memory",
        "leak-per-call",
        "peak-only",  # only the noisy peak: never a finding
        "inconclusive",
    )
    assert model.MEMORY_FINDINGS == frozenset({"superlinear-memory", "exponential-memory", "leak-per-call"})
    assert dict(comparison.SEVERITY) == {
        "linear": 0,
        "mildly-superlinear-transform": 1,
        "mildly-superlinear-backward": 1,
        "superlinear-transform": 2,
        "superlinear-backward": 2,
        "exponential-transform": 3,
        "exponential-backward": 3,
        "runaway": 4,
        "error": 5,
    }
    assert dict(comparison.MEMORY_SEVERITY) == {
        "flat": 0,
        "linear": 1,
        "mildly-superlinear-memory": 2,
        "superlinear-memory": 3,
        "exponential-memory": 4,
        "leak-per-call": 5,
    }
    assert checks.MEMORY_GROWTH == frozenset({"superlinear-memory", "exponential-memory"})
    assert attribute.NOT_GROWING == frozenset({"linear", "flat"})


# --------------------------------------------------------------------------- consistency of the table

KINDS = st.sampled_from(list(TABLE))


@settings(max_examples=100, deadline=None, derandomize=True)
@given(KINDS)
def test_every_row_is_consistent(kind):
    row = TABLE[kind]
    assert row.kind == kind and (row.time or row.memory)
    # ranks exist exactly on the decision the kind belongs to; inconclusive is never ranked
    assert (row.severity is not None) == (row.time and row.family != Family.INCONCLUSIVE)
    assert (row.memory_severity is not None) == (row.memory and row.family != Family.INCONCLUSIVE)
    assert not row.finding or row.time
    assert not row.memory_finding or row.memory
    # a time pathology is a finding, and names the phase that grows
    if row.pathology:
        assert row.finding and row.phase in (Phase.TRANSFORM, Phase.BACKWARD)
    # a time reading of a law names the memory verdict of the same law
    if row.memory_kind is not None:
        assert TABLE[row.memory_kind].memory
        assert TABLE[row.memory_kind].family == row.family
    assert verdicts.style(kind)
    assert verdicts.short(kind)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(KINDS, KINDS)
def test_ranks_follow_the_steepness_of_the_law(a, b):
    ra, rb = TABLE[a], TABLE[b]
    ca, cb = verdicts.growth_class(a), verdicts.growth_class(b)
    if ra.time and rb.time and ca is not None and cb is not None and ca < cb:
        assert ra.severity < rb.severity
    if ra.memory and rb.memory and ca is not None and cb is not None and ca < cb:
        assert ra.memory_severity < rb.memory_severity
    if ra.finding and rb.time and not rb.finding and rb.severity is not None:
        assert ra.severity > rb.severity  # every time finding ranks above every ranked non-finding


@pytest.mark.parametrize("growth", ["exponential", "superlinear", "mild"])
@pytest.mark.parametrize("backward", [False, True])
def test_a_growing_reading_names_one_kind_of_its_phase(growth, backward):
    kind = verdicts.reading_kind(growth, backward)
    assert TABLE[kind].family == growth and TABLE[kind].time
    assert kind.endswith("backward" if backward else "transform")
    assert verdicts.memory_kind(kind) == verdicts.memory_reading(growth)


def test_a_law_names_one_memory_kind_and_no_law_inconclusive():
    assert verdicts.memory_reading("linear") == model.MEMORY_LINEAR
    assert verdicts.memory_reading("exponential") == model.EXPONENTIAL_MEMORY
    assert verdicts.memory_reading("inconclusive") == model.INCONCLUSIVE
    assert verdicts.memory_kind(model.RUNAWAY) == model.INCONCLUSIVE
    assert verdicts.memory_kind(model.ERROR) == model.INCONCLUSIVE


def test_every_kind_enum_member_has_a_row_and_the_enums_serialize_as_their_strings():
    assert {k.value for k in Kind} == set(TABLE)
    assert verdicts.Growth.EXPONENTIAL == "exponential" and f"{verdicts.Source.TIME}" == "time"
    assert verdicts.is_exponential(model.EXPONENTIAL_BACKWARD) and not verdicts.is_exponential(model.EXPONENTIAL_MEMORY)


# --------------------------------------------------------------------------- state in fields: no message text read

REPO = Path(__file__).resolve().parents[1]
#: The decision modules: what they decide reads typed fields, never the sentences they write.
DECISION_MODULES = ("adprof/analysis", "adprof/measure", "adprof/guard.py", "adprof/guard", "adprof/hunt",
                    "adprof/comparison.py", "adprof/report.py")  # fmt: skip
#: String methods that cut or rewrite text.
TEXT_SURGERY = frozenset({"split", "rsplit", "replace", "removeprefix", "removesuffix", "partition", "rpartition"})
#: The legitimate ones: (file, a fragment of the call's source) -> why it is not our own message being read.
ALLOWED: dict[tuple[str, str], str] = {
    ("adprof/measure/plan.py", 'value.split(",")'): "user input: a comma-separated option value",
    ("adprof/measure/dask_executor.py", 'value.partition(":")'): "user input: the --scheduler local:N address",
    ("adprof/measure/dask_executor.py", 'value.partition("://")'): "user input: the --scheduler address's scheme",
    ("adprof/measure/dask_executor.py", 'where.rpartition(":")'): "user input: the --scheduler address's port",
    ("adprof/measure/machine.py", 'line.partition(":")'): "the system's /proc/cpuinfo lines",
    ("adprof/measure/client.py", 'self._buf.partition(b"\\n")'): "the worker protocol's bytes, a message a line",
    ("adprof/measure/pool.py", "series.error.replace(local, spec.file)"): (
        "a shipped chain's temporary path shown as the user's file in an exception's text (display only)"
    ),
    ("adprof/hunt/gen.py", '.replace("\\\\", "\\\\\\\\")'): "escaping a docstring into generated chain source",
    ("adprof/hunt/gen.py", ".replace('\"\"\"', \"'''\")"): "escaping a docstring into generated chain source",
    ("adprof/hunt/render.py", 'kind.replace("/", "")'): "a CSS class name made from a verdict name (rendering)",
}


def _decision_files() -> list[Path]:
    files: list[Path] = []
    for name in DECISION_MODULES:
        path = REPO / name
        files += [path] if path.is_file() else sorted(path.rglob("*.py")) if path.is_dir() else []
    return files


def _text_surgery(path: Path) -> list[tuple[int, str]]:
    """``(line, source)`` of every string cut or rewrite in ``path``: the methods of :data:`TEXT_SURGERY` (not
    ``dataclasses.replace``) and slices from ``len(...)`` (a prefix cut)."""
    source = path.read_text()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TEXT_SURGERY:
            if isinstance(node.func.value, ast.Name) and node.func.value.id in ("dataclasses", "os", "shutil"):
                continue
            found.append((node.lineno, ast.get_source_segment(source, node) or ""))
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            lower = node.slice.lower
            if isinstance(lower, ast.Call) and isinstance(lower.func, ast.Name) and lower.func.id == "len":
                found.append((node.lineno, ast.get_source_segment(source, node) or ""))
    return found


def test_no_decision_module_splits_or_rewrites_message_text():
    files = _decision_files()
    assert len(files) > 40  # the walk found the modules
    used: set[tuple[str, str]] = set()
    bad = []
    for path in files:
        rel = path.relative_to(REPO).as_posix()
        for line, segment in _text_surgery(path):
            allowed = [key for key in ALLOWED if key[0] == rel and key[1] in segment]
            used.update(allowed)
            if not allowed:
                bad.append(f"{rel}:{line}: {segment}")
    assert not bad, "text read for control flow (put the state in a typed field):\n" + "\n".join(bad)
    assert used == set(ALLOWED), f"stale ALLOWED entries: {set(ALLOWED) - used}"


def test_the_grep_finds_what_it_forbids(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        'name = fit.metric.split(":", 1)[0]\n'
        "figure = text.replace(' [', '')\n"
        "rest = text[len(prefix):]\n"
        "ok = dataclasses.replace(spec, depths=())\n"
    )
    assert sorted(line for line, _ in _text_surgery(bad)) == [1, 2, 3]
