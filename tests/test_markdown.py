"""``--markdown``: GitHub tables read back by a Markdown library (markdown-it-py, a dependency of rich). Any text
stays one cell that reads as written (a property test over generated text), a check's report is one row per
series, and ``adprof report --markdown`` writes it from a saved report; the versions a backend records."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adprof import model
from adprof.backends import backend_versions
from adprof.cli import main
from adprof.render.jsonout import report_text
from adprof.render.markdown import cell, report_markdown, strong, table
from tests.compare_helpers import report, result
from tests.extras import require

require("markdown_it")

import markdown_it  # noqa: E402


def cells(markdown: str) -> list[list[str]]:
    """The text of every cell of every table row (header first), as a Markdown renderer reads them."""
    tokens = markdown_it.MarkdownIt("commonmark").enable("table").parse(markdown)
    rows, row = [], None
    for i, t in enumerate(tokens):
        if t.type == "tr_open":
            row = []
        elif t.type == "tr_close":
            rows.append(row)
        elif t.type == "inline" and row is not None and tokens[i - 1].type in ("td_open", "th_open"):
            row.append("".join(c.content for c in t.children if c.type in ("text", "code_inline")))
    return rows


TEXT = st.text(alphabet=st.sampled_from(string.printable + "é→∑\u00a0\x1b\x00"), max_size=40)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(TEXT, TEXT)
def test_any_text_is_one_cell_that_reads_as_written(a, b):
    rows = cells(table(["name", "other"], [[a, strong(b)]]))
    assert len(rows) == 2 and len(rows[1]) == 2
    folded = [" ".join("".join(" " if ch in "\x1b\x00" else ch for ch in t).split()) or "-" for t in (a, b)]
    assert rows[1] == folded, (a, b)


def test_a_cell_escapes_the_markup_characters():
    assert cell("a|b") == "a\\|b" and cell("*x*") == "\\*x\\*" and cell("<b>") == "\\<b\\>"
    assert cell("one\ntwo\r\nthree") == "one two three" and cell("") == "-" and cell("  ") == "-"


def test_a_checks_report_is_one_row_per_series():
    r = report(
        result("mul", model.EXPONENTIAL_TRANSFORM, 2.0, profile="v08"),
        result("x|<y>\nz", model.LINEAR, 1.0),
        versions={"adprof": "0.1.0", "numpy": "2.4.6"},
    )
    r.elapsed_seconds = 4.2
    text = report_markdown(r)
    rows = cells(text)
    assert rows[0] == ["chain", "backend/profile", "mode", "verdict", "growth", "decided by", "depth", "note"]
    assert rows[1][:6] == ["mul", "engine/v08", "traced", "exponential-transform", "x2.00/layer", "counters"]
    assert rows[2][0] == "x|<y> z" and rows[2][3] == "linear"
    assert "**exponential-transform**" in text  # a finding in bold
    assert "2 series, 1 finding, 4.2 s" in text and "adprof 0.1.0, numpy 2.4.6" in text


def test_report_writes_markdown_from_a_saved_report(tmp_path, monkeypatch, capsys):
    saved = report(result("mul", model.EXPONENTIAL_TRANSFORM, 2.0, profile="v08"))
    (tmp_path / "r.json").write_text(report_text(saved))
    monkeypatch.chdir(tmp_path)
    assert main(["report", "r.json", "--markdown", "r.md", "--no-color"]) == 1
    assert cells((tmp_path / "r.md").read_text())[1][3] == "exponential-transform"
    capsys.readouterr()
    assert main(["report", "r.json", "--markdown", "-", "--no-color"]) == 1
    out = capsys.readouterr()
    assert out.out.startswith("### adprof check") and "adprof summary" in out.err  # the tables on stderr


def test_a_backend_records_the_versions_it_measures_with():
    import numpy as np

    assert backend_versions("engine") == {"adprof": model_version(), "numpy": np.__version__}
    assert backend_versions("cmd") == {"adprof": model_version()}
    import importlib.metadata

    try:  # the installed distribution's version, read without importing jax (as a series reads it)
        jax = importlib.metadata.version("jax")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("jax is in the peers extra")
    versions = backend_versions("jax")
    assert versions["jax"] == jax and "jaxlib" in versions and versions["numpy"] == np.__version__


def model_version() -> str:
    from adprof.constants import __version__

    return __version__
