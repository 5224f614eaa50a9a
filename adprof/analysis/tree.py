"""Few exact points read through the structure's tree sizes (the key DAG unfolded as a tree) (pure)."""

from __future__ import annotations

from typing import Any

from adprof.analysis.evidence import fmt_depths
from adprof.analysis.growth import fit_growth
from adprof.model import Fit

TREE_PROPORTION = 0.10  # counters follow the tree size when C(d)/T(d) varies by less than this


def follows_tree(counter_fit: Fit, structure: Any) -> Fit | None:
    """Few exact points (the cap stopped the series after 2-3 depths): when the counters are proportional to
    the structure's tree sizes (the key DAG unfolded as a tree, counted at more depths without any
    transform), the tree's growth is the counters' growth. Two independent measurements must agree in
    shape; the tree sizes then decide the form (returns that decision, or None)."""
    if structure is None or counter_fit.kind != "inconclusive" or len(counter_fit.depths) < 2:
        return None
    get = structure.get if isinstance(structure, dict) else lambda k: getattr(structure, k, None)
    tree = dict(zip(get("depths") or [], get("tree_sizes") or [], strict=False))
    common = [(d, c, tree[d]) for d, c in zip(counter_fit.depths, counter_fit.values, strict=True) if tree.get(d)]
    if len(common) < 2 or len(tree) < 4:
        return None
    if any(c <= 0 or t <= 0 for _, c, t in common):
        return None
    props = [c / t for _, c, t in common]
    if max(props) > (1 + TREE_PROPORTION) * min(props):
        return None
    tree_fit = fit_growth(list(tree), list(tree.values()), exact=True, source="counters", metric="structure: tree size")
    if tree_fit.kind != "exponential":
        return None
    d, c = counter_fit.depths, counter_fit.values
    fit = counter_fit
    fit.kind, fit.model, fit.base = "exponential", "a + c*b^d", float((c[-1] / c[-2]) ** (1 / (d[-1] - d[-2])))
    fit.interval = sorted([fit.base, tree_fit.base or fit.base])
    fit.interval_method = "counter ratio and the tree-size base (exact values)"
    fit.overhead, fit.scale, fit.reason = 0.0, float(c[-1]), ""
    fit.notes.append(
        f"only {len(d)} depths before the cap; the counters are proportional to the structure's tree size "
        f"(counters/tree {min(props):.3g}..{max(props):.3g} at depths {fmt_depths(d)}), whose exact growth over "
        f"depths {fmt_depths(tree_fit.depths)} is exponential x{tree_fit.base:.2f} per {fit.axis or 'layer'}"
    )
    return fit
