"""The interactive SVG flame graph (an icicle: the root on top, callees below), written from scratch.

One ``<g class="f">`` per frame (a ``<title>`` tooltip with samples and percent, a ``<rect>``, a ``<text>``
label), the frame's place in ``data-x``/``data-w`` (fractions of the root) and ``data-d`` (depth). A small
script: click a frame to zoom to it (its ancestors stay on top, full width, faded), "Reset zoom" (or a click
on the root) to go back, "Search" for a regular expression (matches turn magenta; the header says the share of
samples matched, nested matches counted once), "Clear" to end the search. ``?s=TERM`` in the URL searches on
load. The root sits on the first row, so the root and the hottest column (children sorted by samples, the
hottest leftmost) are on the first screen whatever the depth.

Colours: in a single graph, each phase has its hue (legend swatches with the phase's share), functions vary
its lightness; in a differential graph, red for a frame whose share of samples grew, blue for one that shrank,
white for no change (Gregg's differential flame graphs), the intensity by how much.
"""

from __future__ import annotations

import html
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from adprof.flame.collapse import Frame, Stack

#: Phase hues (degrees), in order of first appearance.
_HUES = (8, 210, 130, 38, 280, 175, 330, 95, 245, 55, 0)
ROW = 17
WIDTH = 1200
PAD = 10
HEAD = 78


@dataclass
class Node:
    """A frame of the merged tree: samples in it (``n``), in it as a leaf (``self_n``), its children."""

    frame: Frame
    phase: str
    n: float = 0.0
    self_n: float = 0.0
    kids: dict[str, Node] = field(default_factory=dict)
    base: float = 0.0  # differential: the same frame's share in the base profile (fraction of its total)


def build_tree(stacks: Sequence[tuple[str, Stack, float]]) -> Node:
    """Merge (phase, frames root first, samples) into one tree under ``all``: phase nodes, then the frames."""
    root = Node(Frame("all", "", None), "")
    for phase, frames, n in stacks:
        root.n += n
        node = root.kids.setdefault(phase, Node(Frame(f"phase {phase}", "", None), phase))
        node.n += n
        for f in frames:
            node = node.kids.setdefault(f.label, Node(f, phase))
            node.n += n
        node.self_n += n
    return root


def _walk(node: Node, path: tuple[str, ...]):
    """(path, node) of every node below ``node``, depth first."""
    for key, kid in node.kids.items():
        p = (*path, key)
        yield p, kid
        yield from _walk(kid, p)


def _shares(tree: Node) -> dict[tuple[str, ...], float]:
    """Each node's share of the tree's samples, by its path of keys (phase, then frame labels)."""
    total = tree.n or 1.0
    return {p: n.n / total for p, n in _walk(tree, ())}


def phase_colors(phases: Sequence[str]) -> dict[str, int]:
    """Phase -> hue, in the order given."""
    return {p: _HUES[i % len(_HUES)] for i, p in enumerate(phases)}


def _frame_fill(node: Node, hue: int) -> str:
    h = zlib.crc32(node.frame.function.encode())
    light = 62 + h % 16
    sat = 55 + (h >> 8) % 25
    return f"hsl({hue},{sat}%,{light}%)"


def _diff_fill(delta: float, scale: float) -> str:
    """White at no change, red (grew) or blue (shrank), saturated at ``scale``."""
    t = min(abs(delta) / scale, 1.0) if scale > 0 else 0.0
    light = 96 - 46 * t
    hue = 0 if delta > 0 else 220
    return f"hsl({hue},{80 if t > 0 else 0}%,{light:.0f}%)"


def _label(name: str, width: float) -> str:
    chars = int((width - 6) / 7)
    if chars < 3:
        return ""
    return name if len(name) <= chars else name[: chars - 2] + ".."


_SCRIPT = r"""
(function () {
  var svg = document.getElementById('adprof-flame');
  var W = +svg.getAttribute('data-width'), PAD = +svg.getAttribute('data-pad');
  var total = +svg.getAttribute('data-total');
  var frames = Array.prototype.slice.call(svg.querySelectorAll('g.f'));
  var matched = svg.querySelector('#matched'), zoomed = svg.querySelector('#zoomed');
  function label(g, w) {
    var t = g.querySelector('text'), n = g.getAttribute('data-n'), c = Math.floor((w - 6) / 7);
    t.textContent = c < 3 ? '' : (n.length <= c ? n : n.slice(0, c - 2) + '..');
  }
  function place(g, x, w) {
    var r = g.querySelector('rect'), t = g.querySelector('text');
    r.setAttribute('x', (PAD + x).toFixed(1)); r.setAttribute('width', Math.max(w - 0.5, 0.1).toFixed(1));
    t.setAttribute('x', (PAD + x + 3).toFixed(1)); label(g, w);
  }
  function zoom(g) {
    var zx = +g.getAttribute('data-x'), zw = +g.getAttribute('data-w'), zd = +g.getAttribute('data-d');
    var span = W - 2 * PAD, eps = 1e-9;
    frames.forEach(function (f) {
      var x = +f.getAttribute('data-x'), w = +f.getAttribute('data-w'), d = +f.getAttribute('data-d');
      var inside = x >= zx - eps && x + w <= zx + zw + eps;
      if (d < zd && x <= zx + eps && x + w >= zx + zw - eps) {
        f.style.display = ''; f.classList.add('parent'); place(f, 0, span);
      } else if (d >= zd && inside) {
        f.style.display = ''; f.classList.remove('parent'); place(f, (x - zx) / zw * span, w / zw * span);
      } else {
        f.style.display = 'none';
      }
    });
    var z = g.getAttribute('data-d') === '0';
    svg.setAttribute('data-zoom', z ? '' : g.getAttribute('data-n'));
    zoomed.textContent = z ? '' : 'zoomed to ' + g.getAttribute('data-n');
  }
  function reset() { zoom(frames[0]); }
  function search(term) {
    var re;
    try { re = new RegExp(term); } catch (e) { matched.textContent = 'bad expression: ' + term; return; }
    var spans = [];
    frames.forEach(function (f) {
      var hit = term !== '' && re.test(f.getAttribute('data-n'));
      f.classList.toggle('hit', hit);
      if (hit) spans.push([+f.getAttribute('data-x'), +f.getAttribute('data-x') + +f.getAttribute('data-w')]);
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var sum = 0, end = -1;
    spans.forEach(function (s) {
      if (s[0] >= end) { sum += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { sum += s[1] - end; end = s[1]; }
    });
    svg.setAttribute('data-search', term);
    matched.textContent = term === '' ? '' : 'Matched: ' + (100 * sum).toFixed(1) + '% of ' + total + ' samples';
  }
  frames.forEach(function (f) {
    f.addEventListener('click', function () { if (f.getAttribute('data-d') === '0') reset(); else zoom(f); });
  });
  svg.querySelector('#reset').addEventListener('click', reset);
  svg.querySelector('#search').addEventListener('click', function () {
    var t = window.prompt('Search frames (regular expression):', svg.getAttribute('data-search') || '');
    if (t !== null) search(t);
  });
  svg.querySelector('#clear').addEventListener('click', function () { search(''); });
  svg.adprofZoom = zoom; svg.adprofSearch = search; svg.adprofReset = reset;
  try {
    var s = new URLSearchParams(window.location.search).get('s');
    if (s) search(s);
  } catch (e) {}
  svg.setAttribute('data-ready', '1');
})();
"""

_STYLE = """
g.f { cursor: pointer; }
g.f text { font-size: 11px; fill: #111; pointer-events: none; }
g.f:hover rect { stroke: #222; stroke-width: 0.7; }
g.f.parent rect { opacity: 0.55; }
g.f.hit rect { fill: rgb(230, 0, 230); }
.btn { cursor: pointer; fill: #1f5aa6; text-decoration: underline; }
"""


def render_flame_svg(
    stacks: Sequence[tuple[str, Stack, float]],
    *,
    title: str,
    subtitle: str = "",
    phases: Sequence[str] | None = None,
    base: Sequence[tuple[str, Stack, float]] | None = None,
    width: int = WIDTH,
) -> str:
    """The SVG of ``stacks`` (phase, frames, samples); with ``base``, a differential graph: the shape of
    ``stacks``, each frame coloured by its share in ``stacks`` minus its share in ``base``."""
    root = build_tree(stacks)
    total = root.n
    order = list(dict.fromkeys([*(phases or ()), *(p for p, _, _ in stacks)]))
    hues = phase_colors(order)
    base_share = _shares(build_tree(base)) if base is not None else {}
    rows: list[str] = []
    deepest = [0]
    span = width - 2 * PAD

    def delta_of(node: Node, path: tuple[str, ...]) -> float:
        return node.n / total - base_share.get(path, 0.0) if total else 0.0

    scale = max((abs(delta_of(n, p)) for p, n in _walk(root, ())), default=0.0) if base is not None else 0.0

    def emit(node: Node, path: tuple[str, ...], x: float, depth: int) -> None:
        frac_x, frac_w = x / total if total else 0.0, node.n / total if total else 0.0
        w = frac_w * span
        if w < 0.3 and depth > 0:
            return
        deepest[0] = max(deepest[0], depth)
        y = HEAD + depth * ROW
        pct = 100.0 * frac_w
        name = node.frame.name if depth else f"all ({_count(total)} samples)"
        tip = f"{node.frame.label if depth else 'all'}\n{_count(node.n)} samples ({pct:.2f}%)"
        if node.self_n:
            tip += f", {_count(node.self_n)} self ({100.0 * node.self_n / total:.2f}%)"
        if node.phase:
            tip += f"\nphase {node.phase}"
        if base is not None and depth:
            was = 100.0 * base_share.get(path, 0.0)
            d = 100.0 * delta_of(node, path)
            tip += f"\nshare {was:.2f}% -> {pct:.2f}% ({d:+.2f} points)"
            fill = _diff_fill(delta_of(node, path), scale)
        elif depth == 0:
            fill = "hsl(0,0%,82%)"
        else:
            fill = _frame_fill(node, hues.get(node.phase, 0))
        rows.append(
            f'<g class="f" data-x="{frac_x:.9f}" data-w="{frac_w:.9f}" data-d="{depth}" '
            f'data-n="{html.escape(name, quote=True)}"><title>{html.escape(tip)}</title>'
            f'<rect x="{PAD + frac_x * span:.1f}" y="{y}" width="{max(w - 0.5, 0.1):.1f}" height="{ROW - 1}" '
            f'rx="1.5" fill="{fill}"/>'
            f'<text x="{PAD + frac_x * span + 3:.1f}" y="{y + ROW - 5}">{html.escape(_label(name, w))}</text></g>'
        )
        kids = sorted(node.kids.items(), key=lambda kv: (-kv[1].n, kv[0]))
        if depth == 0:  # phases in the order they run
            kids = sorted(node.kids.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
        cx = x
        for key, kid in kids:
            emit(kid, (*path, key), cx, depth + 1)
            cx += kid.n

    emit(root, (), 0.0, 0)
    height = HEAD + (deepest[0] + 1) * ROW + 24
    legend = _legend(root, order, hues, total, differential=base is not None)
    return "".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" id="adprof-flame" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="12" data-width="{width}" '
            f'data-pad="{PAD}" data-total="{_count(total)}" data-zoom="" data-search="">\n',
            f"<style>{_STYLE}</style>\n",
            '<rect width="100%" height="100%" fill="#fbfbf8"/>\n',
            f'<text x="{PAD}" y="18" font-size="14">{html.escape(title)}</text>\n',
            f'<text x="{PAD}" y="34" fill="#555">{html.escape(subtitle)}</text>\n' if subtitle else "",
            legend,
            f'<text id="reset" class="btn" x="{width - 250}" y="18">Reset zoom</text>\n',
            f'<text id="search" class="btn" x="{width - 150}" y="18">Search</text>\n',
            f'<text id="clear" class="btn" x="{width - 80}" y="18">Clear</text>\n',
            f'<text id="matched" x="{width - 250}" y="34" fill="#a0a"></text>\n',
            f'<text id="zoomed" x="{PAD}" y="{HEAD - 6}" fill="#555"></text>\n',
            "\n".join(rows),
            f'\n<text x="{PAD}" y="{height - 8}" fill="#666">width = share of samples; click a frame to zoom, '
            "hover for samples and percent; children sorted by samples (hottest left)</text>\n",
            f"<script>//<![CDATA[{_SCRIPT}//]]></script>\n</svg>\n",
        ]
    )


def _count(n: float) -> str:
    return f"{n:.0f}" if abs(n - round(n)) < 1e-9 else f"{n:.1f}"


def _legend(root: Node, order: Sequence[str], hues: dict[str, int], total: float, *, differential: bool) -> str:
    y = 52
    out: list[str] = []
    x = PAD
    if differential:
        items = [("hsl(0,80%,50%)", "share grew"), ("hsl(0,0%,96%)", "no change"), ("hsl(220,80%,50%)", "shrank")]
    else:
        items = []
        for p in order:
            kid = root.kids.get(p)
            if kid is None:
                continue
            share = 100.0 * kid.n / total if total else 0.0
            items.append((f"hsl({hues[p]},65%,62%)", f"{p} {share:.0f}%"))
    out.append(
        f'<g id="legend"><text x="{x}" y="{y + 10}" fill="#555">{"colour:" if differential else "phase:"}</text>'
    )
    x += 60
    for fill, text in items:
        out.append(
            f'<rect class="swatch" x="{x}" y="{y}" width="12" height="12" fill="{fill}" stroke="#888" '
            f'stroke-width="0.5"/><text x="{x + 16}" y="{y + 10}">{html.escape(text)}</text>'
        )
        x += 16 + 7.3 * len(text) + 14
    out.append("</g>\n")
    return "".join(out)


__all__ = ["Node", "build_tree", "phase_colors", "render_flame_svg"]
