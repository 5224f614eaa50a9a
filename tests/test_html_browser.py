"""The one-file HTML report renders in a real browser (headless Chromium) with its verdicts."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from adprof.analysis.classify import decide
from adprof.guard import GuardLimits, guard_targets
from adprof.model import Report, Result
from adprof.render.html import render_html
from probes import chains

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def report_html(tmp_path_factory):
    results = []
    for profile in ("v08", "fixed"):
        _, measured = guard_targets([chains.mul], GuardLimits(), mode="traced", profile=profile, depths=range(1, 11))
        series = measured.results[0].series
        results.append(Result(series, decide(series, predicted_base=2.0)))
    html = render_html(Report(results=results))
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(html)
    return path, html


def test_html_is_self_contained(report_html):
    _, html = report_html
    assert not re.search(r"""(src|href)\s*=\s*["']?https?://""", html)
    assert "<script src" not in html and "<link" not in html
    assert "<svg" in html


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs Debian's chromium)")
def test_html_report_renders_the_verdicts_in_chromium(report_html, tmp_path):
    path, _ = report_html
    profile_dir = tmp_path / "profile"
    out = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile_dir}", "--dump-dom", path.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    dom = out.stdout
    verdicts = re.findall(r'class="verdict[^"]*"[^>]*>([^<]+)<', dom)
    assert "exponential-transform" in verdicts and "linear" in verdicts
    # one panel per chain, inline: mul's panel holds both profiles (two series, each with its points)
    assert dom.count("<svg") >= 1
    svg = dom[dom.index("<svg") : dom.index("</svg>")]
    assert "engine/v08 traced" in svg and "engine/fixed traced" in svg
    # the page's order: findings (the v08 pathology) before the full evidence of every series
    assert dom.index("Findings") < dom.index("All evidence")
