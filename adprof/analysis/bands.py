"""The bands of a total exponent p (cost ~ d^p): linear, mildly superlinear, superlinear (pure)."""

from __future__ import annotations

#: Thresholds on the total exponent p (cost ~ d^p).
LINEAR_MAX = 1.15  # p below: linear
SUPERLINEAR_MIN = 1.3  # p from here: superlinear (between the two: mildly superlinear)


def band(exponent: float) -> str:
    """The reading of a total exponent: linear, mild or superlinear."""
    if exponent < LINEAR_MAX:
        return "linear"
    return "mild" if exponent < SUPERLINEAR_MIN else "superlinear"


def power_kind(p: float, lo: float, hi: float) -> tuple[str, str]:
    """Kind from an exponent and its interval; ("inconclusive", why) when the interval straddles the bands."""
    if hi < LINEAR_MAX:
        return "linear", ""
    if lo >= SUPERLINEAR_MIN:
        return "superlinear", ""
    if lo < LINEAR_MAX and hi >= SUPERLINEAR_MIN:
        return "inconclusive", (
            f"the exponent interval [{lo:.2f}, {hi:.2f}] spans linear (< {LINEAR_MAX}) and superlinear "
            f"(>= {SUPERLINEAR_MIN})"
        )
    # the interval reaches one neighbouring band only: the point estimate decides between them
    if p >= SUPERLINEAR_MIN:
        return "superlinear", ""
    return ("mild", "") if p >= LINEAR_MAX else ("linear", "")
