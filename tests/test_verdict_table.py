"""The one table of verdict kinds (adprof.verdicts): every layer reads it, so a new kind is one row; its views agree
with the names they replaced; and the decision modules read no message text (no split/replace/prefix cut of our
own sentences)."""

from __future__ import annotations

import io

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
