"""Structure analysis: predicted per-layer base from the recorded forward graph (no transform)."""

from __future__ import annotations

import pytest

from adprof.analysis.structure import Structure, analyze_recording, predict_base
from adprof.chain import chain
from adprof.constants import EXPONENTIAL_RATIO
from adprof.measure.structure_probe import STRUCTURE_DEPTHS, record_structure
from probes.chains import cube, linear, mul, reuse, sin, svd3


def analyze(ch, depths=STRUCTURE_DEPTHS) -> Structure:
    """Record in this process (the worker's part), then predict (the parent's part)."""
    return analyze_recording(record_structure(ch, depths))


@pytest.mark.parametrize(
    ("ch", "base"),
    [(mul, 2.0), (cube, 3.0), (svd3, 3.0), (sin, 1.0), (linear, 1.0)],
    ids=["mul", "cube", "svd3", "sin", "linear"],
)
def test_predicted_base_of_standard_chains(ch, base):
    st = analyze(ch)
    assert st.error is None
    assert st.predicted_base == pytest.approx(base, abs=0.01)
    assert st.uses_per_layer == base
    assert st.at_risk is (base > EXPONENTIAL_RATIO)
    assert st.depths == [1, 2, 3, 4, 5, 6]
    assert st.tree_sizes == sorted(st.tree_sizes)


def test_reuse_sweep_tracks_k():
    for v in reuse.variants():
        assert analyze(v, depths=range(1, 6)).predicted_base == pytest.approx(v.params["k"], abs=0.01)


def test_predict_base_pure():
    sizes = [2**d + 3 * d for d in range(1, 8)]  # exponential plus linear work
    base, ratios = predict_base(list(range(1, 8)), sizes)
    assert base == pytest.approx(2.0, abs=0.1)
    assert len(ratios) == 5
    assert predict_base([1, 2], [3, 5]) == (None, [])
    assert predict_base([1, 2, 4], [3, 5, 9])[0] is None  # not consecutive


def test_error_is_kept_and_summary_is_one_line():
    @chain(input_shape=(2,))
    def breaks(xp, x, depth):
        if depth >= 4:
            raise RuntimeError("nope")
        y = x
        for _ in range(depth):
            y = y * y
        return xp.sum(y)

    st = analyze(breaks)
    assert st.depths == [1, 2, 3]
    assert "RuntimeError: nope" in st.error
    assert st.predicted_base == pytest.approx(2.0)
    text = st.summary()
    assert "\n" not in text and "AT RISK" in text
    assert Structure.from_dict(st.to_dict()) == st
