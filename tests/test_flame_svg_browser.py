"""The flame graph's SVG in a real browser (headless Chromium): its script runs, a click zooms, search reports
the matched share (issue 38 section 1). Skipped where Chromium is absent."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from adprof.flame.collapse import Frame
from adprof.flame.svg import build_tree, render_flame_svg

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
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")


def _f(name: str) -> Frame:
    return Frame(name, "engine/keys.py" if name == "structural_key_eq" else "m.py", 10)


STACKS = [
    ("transform", (_f("measure_point"), _f("grad"), _f("structural_key_eq")), 60.0),
    ("transform", (_f("measure_point"), _f("grad"), _f("toposort")), 10.0),
    ("drop", (_f("measure_point"), _f("close"), _f("structural_key_eq")), 25.0),
    ("record", (_f("measure_point"), _f("chain")), 5.0),
]


def _svg() -> str:
    return render_flame_svg(STACKS, title="mul <v08> depth 12", subtitle="test")


def test_svg_structure_icicle_legend_and_tooltips() -> None:
    svg = _svg()
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    frames = [g for g in root.iter(f"{ns}g") if g.get("class") == "f"]
    # root first, on the top row; a phase row under it; every frame has a tooltip with samples and percent
    ys = [float(g.find(f"{ns}rect").get("y")) for g in frames]
    assert ys[0] == min(ys) and frames[0].get("data-d") == "0"
    assert {g.get("data-n") for g in frames if g.get("data-d") == "1"} == {
        "phase transform",
        "phase drop",
        "phase record",
    }
    key = next(g for g in frames if g.get("data-n") == "structural_key_eq" and g.get("data-w").startswith("0.6"))
    assert "60 samples (60.00%)" in key.find(f"{ns}title").text
    # the hottest child is leftmost: transform's grad -> key equality starts where transform starts
    assert float(key.get("data-x")) == 0.0
    # a legend with a swatch per phase
    swatches = [r for r in root.iter(f"{ns}rect") if r.get("class") == "swatch"]
    assert len(swatches) == 3
    assert "transform 70%" in svg and "drop 25%" in svg
    # the whole graph is on the first screen here (1280x800)
    assert float(root.get("height")) < 800


def test_differential_colours_by_share_change() -> None:
    base = [("transform", (_f("measure_point"), _f("grad"), _f("structural_key_eq")), 10.0)]
    base += [("transform", (_f("measure_point"), _f("grad"), _f("toposort")), 90.0)]
    svg = render_flame_svg(STACKS, title="d", base=base)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    fills = {}
    for g in root.iter(f"{ns}g"):
        if g.get("class") == "f":
            fills.setdefault(g.get("data-n"), g.find(f"{ns}rect").get("fill"))
    assert fills["structural_key_eq"].startswith("hsl(0,")  # grew: red
    assert fills["toposort"].startswith("hsl(220,")  # shrank: blue
    assert "share grew" in svg


def test_build_tree_counts() -> None:
    root = build_tree(STACKS)
    assert root.n == 100 and root.kids["transform"].n == 70 and root.kids["transform"].kids
    leaf = root.kids["drop"].kids[_f("measure_point").label].kids[_f("close").label]
    assert leaf.kids[_f("structural_key_eq").label].self_n == 25


def _chromium_dom(path, tmp_path) -> str:
    out = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", path.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@needs_chromium
def test_svg_zoom_and_search_in_chromium(tmp_path) -> None:
    """A page holding the SVG clicks the drop phase's frame (as a user would), then searches through the Search
    button (the prompt answered), and Chromium's DOM after the script is inspected."""
    svg = _svg()
    page = tmp_path / "page.html"
    page.write_text(
        "<!doctype html><html><body>"
        + svg.split("?>", 1)[-1]
        + """<script>
        window.prompt = function () { return 'structural_key_eq'; };
        var drop = Array.prototype.find.call(document.querySelectorAll('g.f'),
            function (g) { return g.getAttribute('data-n') === 'close'; });
        drop.dispatchEvent(new MouseEvent('click', {bubbles: true}));
        document.getElementById('search').dispatchEvent(new MouseEvent('click', {bubbles: true}));
        </script></body></html>"""
    )
    dom = _chromium_dom(page, tmp_path)
    assert 'data-ready="1"' in dom
    assert 'data-zoom="close"' in dom and "zoomed to close" in dom
    # the zoomed frame spans the whole width; frames outside its column are hidden; ancestors stay, faded
    close = re.search(
        r'<g class="f[^"]*"[^>]*data-n="close"[^>]*>.*?<rect x="([\d.]+)" y="\d+" width="([\d.]+)"', dom, re.S
    )
    assert close and float(close.group(1)) == pytest.approx(10.0) and float(close.group(2)) > 1170
    toposort = re.search(r'<g class="f[^"]*"[^>]*data-n="toposort"[^>]*style="display: none;"', dom)
    assert toposort, "a frame outside the zoomed column is hidden"
    assert re.search(r'<g class="f parent"[^>]*data-n="phase drop"', dom)
    # search: key equality is 85% of the samples (60 under transform + 25 under drop)
    assert "Matched: 85.0% of 100 samples" in dom
    assert len(re.findall(r'class="f[^"]*\bhit\b', dom)) == 2


@pytest.mark.slow
@needs_chromium
def test_standalone_svg_runs_its_script_and_searches_from_the_url(tmp_path) -> None:
    path = tmp_path / "g.svg"
    path.write_text(_svg())
    out = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", path.as_uri() + "?s=toposort"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert 'data-ready="1"' in out.stdout and "Matched: 10.0% of 100 samples" in out.stdout
