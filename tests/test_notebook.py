"""The notebook magic in a real notebook: nbclient executes docs/api.md's three cells, taken from the page
(``%load_ext adprof``, a ``%%adprof`` cell that defines a chain, the last report's verdict) in a fresh
ipykernel; the output is the report's HTML with its verdict table and a text/plain fallback, and that HTML
renders its verdicts in Chromium (as tests/test_html_browser.py checks the page). Needs the dev extra
(nbclient, nbformat, ipykernel)."""

from __future__ import annotations

import re
import subprocess
from html import escape
from pathlib import Path

import pytest

from tests.extras import require

require("nbformat", "nbclient", "ipykernel")

import nbclient  # noqa: E402
import nbformat  # noqa: E402

from tests.test_html_browser import CHROMIUM, FLAGS  # noqa: E402

DOCS = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def docs_cells() -> list[str]:
    """The notebook cells of docs/api.md, as the page shows them: every code block of its section
    "The notebook magic", in order (the test runs what a reader copies)."""
    text = DOCS.read_text()
    start = text.index("## The notebook magic")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    return [c if c.endswith("\n") else c + "\n" for c in re.findall(r"```python\n(.*?)```", section, flags=re.S)]


CELLS = docs_cells()


def run_notebook(tmp_path: Path, *cells: str, timeout: int = 240) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    client = nbclient.NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    nbformat.write(nb, tmp_path / "checked.ipynb")  # what a user would open
    return nb


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("notebook")
    assert len(CELLS) == 3 and CELLS[0].strip() == "%load_ext adprof", CELLS
    assert "import adprof" not in CELLS[1]  # %load_ext binds it: the page's cell runs as written
    return tmp_path, run_notebook(tmp_path, *CELLS)


def _display(nb: nbformat.NotebookNode) -> dict:
    outputs = nb.cells[1].outputs
    errors = [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"]
    assert not errors, errors
    (shown,) = [o for o in outputs if o.output_type == "display_data"]
    return shown.data


def test_the_cell_shows_the_report_inline_with_a_text_fallback(executed):
    _, nb = executed
    assert nb.cells[0].outputs == []  # %load_ext: silent
    data = _display(nb)
    html, text = data["text/html"], data["text/plain"]
    verdicts = re.findall(r'class="verdict verdict-[^"]+">([^<]+)<', html)
    assert verdicts[:2] == ["exponential-transform", "linear"]  # the summary table: v08, then fixed
    assert '<table class="summary">' in html and "<script" not in html
    assert "square" in html and "engine/v08" in html
    assert "adprof summary" in text and "exponential-transform" in text and "engine/fixed" in text
    # the report stays in the notebook for the next cell
    assert nb.cells[2].outputs[0].data["text/plain"] == "'exponential-transform'"


def test_the_inline_report_renders_its_verdicts_in_chromium(executed, tmp_path):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium)")
    _, nb = executed
    html = _display(nb)["text/html"]
    page = tmp_path / "output.html"  # the output as a notebook front end inserts it: into its own page
    probe = (  # the computed borders of a cell of the notebook's own table and of the report's summary
        "<script>const s = e => getComputedStyle(document.querySelector(e)).borderTopStyle;"
        "document.title = s('#outside td') + '|' + s('.adprof-report table.summary td');</script>"
    )
    page.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>notebook</title></head><body>'
        f'<div class="jp-OutputArea-output">{html}</div><pre>{escape("other output")}</pre>'
        f'<table id="outside"><tr><td>the notebook</td></tr></table>{probe}</body></html>'
    )
    out = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    dom = out.stdout
    summary = dom[dom.index('<table class="summary">') : dom.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", summary, flags=re.S)
    cells = [re.findall(r"<td>(?:<[^>]+>)*([^<]*)", row) for row in rows[1:]]
    assert [(c[0], c[1], c[3]) for c in cells] == [
        ("square", "engine/v08", "exponential-transform"),
        ("square", "engine/fixed", "linear"),
    ]
    # its styles apply inside the report only: the page around it keeps its own
    assert "<title>none|solid</title>" in dom


def test_bad_options_and_a_cell_without_chains_are_one_line(tmp_path):
    nb = run_notebook(
        tmp_path,
        "%load_ext adprof",
        "%%adprof --mode sideways\nimport adprof\n\n@adprof.chain\ndef f(xp, x, depth):\n    return xp.sum(x)\n",
        "%%adprof\nx = 1\n",
        timeout=120,
    )
    (bad,) = nb.cells[1].outputs
    assert bad.name == "stderr" and bad.text.strip().startswith("adprof: error: unknown mode 'sideways'")
    assert len(bad.text.strip().splitlines()) == 1
    (none,) = nb.cells[2].outputs
    assert none.text.strip() == "adprof: this cell defines no @adprof.chain: nothing to check"


SLOW_CELL = """\
%%adprof --mode traced --profile fixed --cap 30 --budget 120
import time
import adprof


@adprof.chain(max_depth=40)
def slow(xp, x, depth):
    time.sleep(0.2 * depth)
    return xp.sum(x * 1.0)
"""


@pytest.mark.slow
def test_the_kernels_interrupt_stops_the_workers_and_shows_the_partial_report(tmp_path):
    """The stop button (SIGINT to the kernel) during a %%adprof cell: the workers die, the cell shows what was
    measured and one line, and the kernel lives on."""
    import os
    import time

    from jupyter_client.manager import start_new_kernel

    from tests.fault_helpers import TAG_VAR, kill_tagged, tagged_pids

    tag = f"nb-{os.getpid()}-{time.monotonic_ns()}"
    km, kc = start_new_kernel(kernel_name="python3", env={**os.environ, TAG_VAR: tag}, cwd=str(tmp_path))
    try:
        kc.execute_interactive("%load_ext adprof", timeout=60)
        kernel = tagged_pids(tag)
        msg_id = kc.execute(SLOW_CELL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(tagged_pids(tag) - kernel) < 2:  # the guardian and a worker
            time.sleep(0.2)
        time.sleep(1.5)
        km.interrupt_kernel()
        outputs = []
        while True:
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
            outputs.append(msg)
        texts = [m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream"]
        shown = [m["content"]["data"] for m in outputs if m["msg_type"] == "display_data"]
        assert any("adprof: interrupted by SIGINT: the workers are stopped (partial report)" in t for t in texts), texts
        assert shown and "slow" in shown[0]["text/html"]
        left = tagged_pids(tag) - kernel
        assert all("guardian.py" in Path(f"/proc/{p}/cmdline").read_text() for p in left), left  # no worker
        reply = kc.execute_interactive("print(len(_adprof_report.results))", timeout=30)
        assert reply["content"]["status"] == "ok"  # the kernel lives on, with the partial report
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        kill_tagged(tag)
