"""Structure analysis (pure): predict a chain's per-layer blowup base from its recorded graph, without a transform.

A transform (or a structural key comparison) that walks the key DAG without a memo visits every
root-to-leaf path, i.e. the DAG unfolded as a tree. ``engine.keys.tree_size(y.key)`` counts that
tree in linear time. Recording the chain at a few small consecutive depths gives tree sizes
``T(d)``; the marginal ratio ``(T(d) - T(d-1)) / (T(d-1) - T(d-2))`` tends to the number of uses of
the previous layer's value per layer (the use matrix's spectral radius): 2 for ``y*y``, 3 for
``y*y*y`` or ``u*s + vt`` of one SVD, 1 for a chain without reuse. A predicted base above
:data:`EXPONENTIAL_RATIO` flags the chain as at risk of an exponential transform before any timing.

:func:`adprof.measure.structure_probe.record_structure` records the chain (it runs user code, in the
worker process); :func:`analyze_recording` and :func:`predict_base` turn the recording into a prediction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from adprof.backend_info import BackendInfo, declared_info
from adprof.constants import EXPONENTIAL_RATIO


@dataclass
class Structure:
    """Forward-graph structure of one chain at small depths."""

    chain: str
    depths: list[int] = field(default_factory=list)
    value_ops: list[int] = field(default_factory=list)
    tree_sizes: list[int] = field(default_factory=list)  # key DAG unfolded as a tree (paths)
    ratios: list[float] = field(default_factory=list)  # marginal tree-size ratio at depths[2:]
    predicted_base: float | None = None
    uses_per_layer: float | None = None  # predicted base rounded when it is close to an integer
    ops_per_layer: float | None = None
    at_risk: bool = False
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Structure:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in names})

    def summary(self) -> str:
        """One line for the report."""
        if self.predicted_base is None:
            why = self.error or "too few depths"
            return f"structure of {self.chain}: no predicted base ({why})"
        n = self.uses_per_layer
        uses = f"{n:g} use{'' if n == 1 else 's'}" if n is not None else f"{self.predicted_base:.2f} effective uses"
        o = self.ops_per_layer
        ops = f", {o:g} op{'' if o == 1 else 's'} per layer" if o is not None else ""
        risk = (
            f": AT RISK (predicted base {self.predicted_base:.2f} > {EXPONENTIAL_RATIO})"
            if self.at_risk
            else f": no reuse blowup predicted (base {self.predicted_base:.2f})"
        )
        return (
            f"structure of {self.chain}: {uses} of the previous value per layer{ops}, "
            f"tree size {self.tree_sizes[-1]:,} at depth {self.depths[-1]}{risk}"
        )


def predict_base(depths: Sequence[int], tree_sizes: Sequence[float]) -> tuple[float | None, list[float]]:
    """Predicted per-layer base (last marginal ratio over consecutive depths) and all the ratios."""
    ratios: list[float] = []
    for i in range(2, len(depths)):
        d0, d1, d2 = depths[i - 2], depths[i - 1], depths[i]
        if d1 - d0 != 1 or d2 - d1 != 1:
            continue
        m1 = tree_sizes[i - 1] - tree_sizes[i - 2]
        m2 = tree_sizes[i] - tree_sizes[i - 1]
        if m1 > 0 and m2 > 0:
            ratios.append(m2 / m1)
    return (ratios[-1] if ratios else None), ratios


def _rounded(base: float) -> float:
    r = round(base)
    return float(r) if abs(base - r) <= 0.02 else round(base, 2)


def analyze_recording(recording: Mapping[str, Any]) -> Structure:
    """The structure of a chain from its recording (``chain``, ``depths``, ``value_ops``, ``tree_sizes``,
    ``error``; see :func:`adprof.measure.structure_probe.record_structure`): predicted base and risk."""
    st = Structure.from_dict(dict(recording))
    base, st.ratios = predict_base(st.depths, st.tree_sizes)
    if base is not None:
        st.predicted_base = float(base)
        st.uses_per_layer = _rounded(base)
        st.at_risk = base > EXPONENTIAL_RATIO
    if len(st.depths) >= 2 and st.depths[-1] - st.depths[-2] == 1:
        st.ops_per_layer = float(st.value_ops[-1] - st.value_ops[-2])
    return st


#: Relative difference between predicted and measured base still counted as agreement.
AGREEMENT_TOLERANCE = 0.05


def disagreement_reason(
    structure: Structure,
    measured_base: float | None,
    profile: str | None,
    backend: str = "engine",
    info: BackendInfo | None = None,
) -> str | None:
    """One evidence line saying why the predicted base and a measured one legitimately differ.

    ``measured_base`` is the measured per-layer ratio (None or below :data:`~adprof.constants.EXPONENTIAL_RATIO`: no
    exponential growth measured); ``profile`` and ``backend`` name what was measured. Returns
    ``None`` when they agree (both exponential within :data:`AGREEMENT_TOLERANCE`, or neither).
    """
    predicted = structure.predicted_base
    if predicted is None:
        return None
    measured_risk = measured_base is not None and measured_base > EXPONENTIAL_RATIO
    if structure.at_risk and measured_risk:
        if abs(measured_base / predicted - 1) <= AGREEMENT_TOLERANCE:
            return None
        return (
            f"measured x{measured_base:.2f} per layer vs predicted x{predicted:.2f}: lower-order work "
            "(or a depth-dependent layer) still shows at the measured depths"
        )
    if not structure.at_risk and not measured_risk:
        return None
    if structure.at_risk:  # predicted exponential, measured not
        if not (info or declared_info(backend, "traced")).structural_keys:
            return (
                f"{backend} does not compare structural keys (it prunes and deduplicates by identity): the "
                f"predicted x{predicted:.2f} per layer applies to engines that walk keys without a memo (engine v08)"
            )
        if profile == "fixed":
            return (
                f"engine fixed interns its keys (equal keys are one object): the predicted x{predicted:.2f} "
                "per layer of a memo-less key walk does not apply"
            )
        return (
            f"not explained: engine {profile} should grow x{predicted:.2f} per layer; the measurement may "
            "have stopped (budget or time cap) before the exponential term dominated"
        )
    return (
        f"the growth (x{measured_base:.2f} per layer) is not in the forward key DAG (tree size "
        f"x{predicted:.2f} per layer): look at checkpoint chains (merged without deduplication) or "
        "per-call bookkeeping"
    )


__all__ = ["AGREEMENT_TOLERANCE", "Structure", "analyze_recording", "disagreement_reason", "predict_base"]
