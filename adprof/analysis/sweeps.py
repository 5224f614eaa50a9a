"""The table of swept chains (series with params such as ``{"k": 2}``): measured against predicted base (pure)."""

from __future__ import annotations

from typing import Any

from adprof import model
from adprof.model import Result

REUSE_TOLERANCE = 0.25  # a measured base agrees with a predicted or declared one within this


def sweep_table(results: list[Result]) -> list[dict[str, Any]]:
    """Rows for swept chains (results whose series has params, e.g. {"k": 2}), grouped by chain.

    Each row: chain, backend, profile, mode, params, k (``params["k"]``, or the only param's value),
    base (measured), predicted_base, verdict, and agrees (|base - predicted| <= 0.25 when both are known;
    True for a linear k = 1; None otherwise).
    """
    rows = []
    for r in results:
        s = r.series
        if not s.params:
            continue
        k = s.params.get("k")
        if k is None and len(s.params) == 1:
            k = next(iter(s.params.values()))
        pred = r.verdict.predicted_base if r.verdict.predicted_base is not None else s.declared_reuse
        base = r.verdict.base
        agrees = None
        if pred is not None and base is not None:
            agrees = abs(base - pred) <= REUSE_TOLERANCE
        elif pred is not None and r.verdict.kind == model.LINEAR and pred <= 1 + REUSE_TOLERANCE:
            agrees = True  # k = 1 must come out linear
        # (a linear verdict where the structure predicts k > 1 is an engine that does not walk the key
        # DAG as a tree, e.g. the fixed profile: nothing to agree or disagree with, left as None)
        rows.append(
            {
                "chain": s.chain,
                "backend": s.backend,
                "profile": s.profile,
                "mode": s.mode,
                "params": dict(s.params),
                "k": k,
                "base": base,
                "predicted_base": pred,
                "verdict": r.verdict.kind,
                "agrees": agrees,
            }
        )

    def _key(row: dict[str, Any]) -> tuple:
        k = row["k"]
        return (
            row["chain"],
            row["backend"],
            str(row["profile"]),
            row["mode"],
            (0, k) if isinstance(k, int | float) else (1, str(k)),
        )

    return sorted(rows, key=_key)
