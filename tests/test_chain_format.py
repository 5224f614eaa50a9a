"""The chain format (adprof/chain/) and the standard chains (probes/chains.py) on the numpy shim."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from adprof.chain import (
    DEFAULT_DEPTHS,
    Chain,
    ChainError,
    ChainFileNotFoundError,
    ChainImportError,
    ChainNotFoundError,
    ChainSignatureError,
    ChainSyntaxError,
    NoChainsError,
    NotAPythonFileError,
    TargetSyntaxError,
    chain,
    load_chains,
    parse_target,
)
from probes import chains as std

try:
    import numpy_xp as xp
except ImportError:  # tests/ is a package in some layouts
    from tests import numpy_xp as xp

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- decorator


def test_decorator_metadata() -> None:
    @chain(input_shape=(2, 4), reuse=2, depths=[4, 2, 8], modes=("traced",))
    def f(xp, x, depth):
        """First line.

        More text.
        """
        return xp.sum(x) * depth

    assert isinstance(f, Chain)
    assert (f.name, f.reuse, f.depths, f.modes, f.max_depth) == ("f", 2, (2, 4, 8), ("traced",), 8)
    assert f.description == "First line."
    assert f.dtype == "float64" and f.input_shape == (2, 4) and f.sweep == {} and f.params == {}
    assert f.fn.__adprof_chain__ is f
    assert f(xp, np.ones((2, 4)), 3) == 24.0  # still callable like the function
    x = f.make_input()
    assert x.shape == (2, 4) and x.dtype == np.float64
    assert np.all((x >= 0.5) & (x < 1.0))
    np.testing.assert_array_equal(x, f.make_input())  # fixed seed
    assert list(f.variants()) == [f]
    assert not f.is_swept


def test_bare_decorator_defaults() -> None:
    @chain
    def g(xp, x, depth):
        return xp.sum(x)

    assert isinstance(g, Chain) and g.name == "g"
    assert g.depths == DEFAULT_DEPTHS and g.modes == ("traced", "eager") and g.reuse is None
    assert g.description == "" and g.input_shape == (3, 3)
    x = g.make_input()
    assert x.shape == (3, 3) and x.dtype == np.float64 and np.all((x >= 0.5) & (x < 1.0))
    assert g(xp, x, 1) == pytest.approx(x.sum())


def test_options() -> None:
    def h(xp, x, depth):
        return xp.sum(x)

    assert chain(max_depth=5)(h).depths == (1, 2, 3, 4, 5)
    assert chain(name="other", description="d")(h).name == "other"
    scalar = chain(input=0.3)(h).make_input()
    assert scalar.shape == () and scalar.dtype == np.float64 and float(scalar) == 0.3
    assert chain(input=lambda: np.arange(3.0))(h).make_input().tolist() == [0.0, 1.0, 2.0]
    assert chain(input=np.ones(2), dtype="float32")(h).make_input().dtype == np.float32
    assert chain(seed=5)(h).make_input()[0, 0] != chain(seed=6)(h).make_input()[0, 0]


@pytest.mark.parametrize(
    "opts, match",
    [
        (dict(depths=(1, 2), max_depth=3), "not both"),
        (dict(depths=()), "positive ints"),
        (dict(depths=(0, 1)), "positive ints"),
        (dict(max_depth=0), "positive int"),
        (dict(modes=("traced", "jit")), "unknown mode"),
        (dict(input_shape=(2,), input=0.3), "not both"),
        (dict(input="x"), "input must be"),
        (dict(reuse=-1), "reuse"),
        (dict(reuse="k"), "names no sweep"),
        (dict(dtype="nonsense"), "dtype"),
        (dict(sweep={"k": [1]}), "signature"),
        (dict(sweep={"depth": [1]}), "sweep parameter"),
        (dict(sweep={"k": []}), "no values"),
    ],
)
def test_bad_options(opts: dict, match: str) -> None:
    def h(xp, x, depth):
        return xp.sum(x)

    with pytest.raises(ChainError, match=match):
        chain(**opts)(h)


@pytest.mark.parametrize(
    "src",
    [
        "def f(xp, x): pass",
        "def f(xp, x, depth, extra): pass",
        "def f(): pass",
        "def f(xp, *, x, depth): pass",
    ],
)
def test_bad_signature(src: str) -> None:
    ns: dict = {}
    exec(src, ns)
    with pytest.raises(ChainSignatureError, match=r"must accept \(xp, x, depth"):
        chain(ns["f"])


def test_flexible_signatures_accepted() -> None:
    ns: dict = {}
    exec("def f(xp, x, depth, scale=1.0): pass\ndef g(*args): pass\ndef h(xp, x, depth, **kw): pass", ns)
    for name in "fgh":
        assert chain(ns[name]).name == name
    assert chain(sweep={"k": [1, 2]})(ns["h"]).is_swept


# --------------------------------------------------------------------------- sweeps


def test_sweep_variants() -> None:
    @chain(sweep={"k": [1, 2, 3, 4]}, reuse="k", max_depth=4)
    def reuse(xp, x, depth, k):
        """k uses."""
        y = x
        for _ in range(depth):
            p = y
            for _ in range(k - 1):
                p = p * y
            y = p * 0.5
        return xp.sum(y)

    vs = list(reuse.variants())
    assert [v.name for v in vs] == ["reuse[k=1]", "reuse[k=2]", "reuse[k=3]", "reuse[k=4]"]
    v2 = vs[1]
    assert v2.params == {"k": 2} and v2.reuse == 2 and v2.base == "reuse" and v2.sweep == {}
    assert v2.depths == (1, 2, 3, 4) and v2.description == "k uses."
    assert list(v2.variants()) == [v2]
    x = np.full((3, 3), 0.8)
    assert v2(xp, x, 2) == pytest.approx(reuse(xp, x, 2, k=2)) == pytest.approx(9 * ((0.8**2 / 2) ** 2 / 2))
    assert v2.fn(xp, x, 2) == v2(xp, x, 2)  # the variant's function takes (xp, x, depth)
    meta = v2.metadata()
    assert meta["name"] == "reuse[k=2]" and meta["params"] == {"k": 2} and meta["input_shape"] == [3, 3]
    assert json.loads(json.dumps(meta)) == meta
    assert reuse.variant(k=7).name == "reuse[k=7]"
    with pytest.raises(ChainError, match="sweep parameters"):
        reuse.variant(j=1)


def test_sweep_product_order() -> None:
    @chain(sweep={"a": [1, 2], "b": ["x", "y"]})
    def f(xp, x, depth, a, b):
        return a

    assert [v.name for v in f.variants()] == ["f[a=1,b=x]", "f[a=1,b=y]", "f[a=2,b=x]", "f[a=2,b=y]"]
    assert [v.params for v in f.variants()][1] == {"a": 1, "b": "y"}


# --------------------------------------------------------------------------- load_chains


def _write(tmp_path: Path, name: str, body: str) -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


GOOD = """
    from adprof.chain import chain
    from helper_mod import SCALE


    @chain(reuse=2)
    def zeta(xp, x, depth):
        return xp.sum(x) * SCALE


    def plain(xp, x, depth):
        \"\"\"An undecorated chain.\"\"\"
        return xp.sum(x)


    def bad(xp):
        return 0


    NOT_A_FUNCTION = 3


    @chain(sweep={"k": [1, 2]})
    def alpha(xp, x, depth, k):
        return xp.sum(x) * k
"""


def test_load_chains(tmp_path: Path) -> None:
    _write(tmp_path, "helper_mod.py", "SCALE = 2.0\n")
    p = _write(tmp_path, "good.py", GOOD)
    modules, path = set(sys.modules), list(sys.path)
    chains = load_chains(p)
    assert [c.name for c in chains] == ["zeta", "alpha"]  # definition order, not alphabetical
    assert all(c.source == str(p.resolve()) for c in chains)
    assert chains[0](xp, np.ones((2, 2)), 1) == 8.0  # the sibling module was importable
    assert sys.path == path
    assert not [m for m in set(sys.modules) - modules if m.startswith("_adprof_chains")]
    # names: in the given order; an undecorated function gets default options
    named = load_chains(str(p), ["plain", "zeta", "alpha[k=2]"])
    assert [c.name for c in named] == ["plain", "zeta", "alpha[k=2]"]
    assert named[0].reuse is None and named[0].description == "An undecorated chain."
    assert named[2].params == {"k": 2} and named[2](xp, np.ones(1), 1) == 2.0
    # each load is a fresh module
    assert load_chains(p)[0].fn is not chains[0].fn


def test_load_chains_skips_imported_chains(tmp_path: Path) -> None:
    p = _write(tmp_path, "reexport.py", "from probes.chains import mul\n")
    with pytest.raises(NoChainsError):
        load_chains(p)
    assert load_chains(p, ["mul"])[0].name == "mul"


def _one_line_error(exc_type: type, path: Path, names: list[str] | None = None) -> str:
    with pytest.raises(exc_type) as info:
        load_chains(path, names)
    msg = str(info.value)
    assert isinstance(info.value, ChainError) and isinstance(info.value, ValueError)
    assert "\n" not in msg and msg
    return msg


def test_load_errors(tmp_path: Path) -> None:
    msg = _one_line_error(ChainFileNotFoundError, tmp_path / "missing.py")
    assert "no such file" in msg and "missing.py" in msg

    txt = _write(tmp_path, "chains.txt", "x = 1\n")
    assert "not a Python file" in _one_line_error(NotAPythonFileError, txt)
    assert "not a Python file" in _one_line_error(NotAPythonFileError, tmp_path)

    syn = _write(tmp_path, "syn.py", "x = 1\n\ndef f(:\n    pass\n")
    msg = _one_line_error(ChainSyntaxError, syn)
    assert "syntax error" in msg and "line 3" in msg and "syn.py" in msg

    boom = _write(tmp_path, "boom.py", "x = 1\nraise RuntimeError('kaput')\n")
    msg = _one_line_error(ChainImportError, boom)
    assert "RuntimeError: kaput" in msg and "line 2" in msg and "boom.py" in msg

    missing_mod = _write(tmp_path, "nomod.py", "import no_such_module_adprof\n")
    assert "ModuleNotFoundError" in _one_line_error(ChainImportError, missing_mod)

    empty = _write(tmp_path, "empty.py", "def helper(a):\n    return a\n")
    msg = _one_line_error(NoChainsError, empty)
    assert msg == f"no @adprof.chain functions in {empty}; name one with {empty}::FUNC"

    _write(tmp_path, "helper_mod.py", "SCALE = 2.0\n")
    good = _write(tmp_path, "good.py", GOOD)
    msg = _one_line_error(ChainNotFoundError, good, ["nope"])
    assert "'nope'" in msg and "zeta, alpha" in msg
    assert "variants: alpha[k=1], alpha[k=2]" in _one_line_error(ChainNotFoundError, good, ["alpha[k=9]"])
    msg = _one_line_error(ChainSignatureError, good, ["bad"])
    assert "must accept (xp, x, depth" in msg and "bad(xp)" in msg
    assert "not a function" in _one_line_error(ChainSignatureError, good, ["NOT_A_FUNCTION"])

    bad_deco = _write(tmp_path, "baddeco.py", "from adprof.chain import chain\n@chain\ndef f(xp, x):\n    return 0\n")
    msg = _one_line_error(ChainSignatureError, bad_deco)
    assert "baddeco.py" in msg and "must accept" in msg


def test_parse_target() -> None:
    assert parse_target("probes/chains.py") == (Path("probes/chains.py"), None)
    assert parse_target("probes/chains.py::mul") == (Path("probes/chains.py"), "mul")
    assert parse_target("a b/c.py::reuse[k=2]") == (Path("a b/c.py"), "reuse[k=2]")
    for bad in ("", "::mul", "f.py::", "f.py::1x", "f.py::a::b", "f.py::r[k=2"):
        with pytest.raises(TargetSyntaxError):
            parse_target(bad)


# --------------------------------------------------------------------------- standard chains


def test_standard_chains_load_in_order() -> None:
    names = [c.name for c in load_chains(ROOT / "probes" / "chains.py")]
    assert names == ["mul", "cube", "svd1", "svd2", "svd3", "qr2", "sin", "reuse", "linear", "matmul"]
    assert [c.name for c in std.STANDARD] == names
    assert [c.name for c in load_chains(ROOT / "probes" / "trg.py")] == ["trg"]


EXPECTED_REUSE = {"mul": 2, "cube": 3, "svd1": 2, "svd2": 2, "svd3": 3, "qr2": 2, "sin": 1, "linear": 1}


@pytest.mark.parametrize("ch", [v for c in std.STANDARD for v in c.variants()], ids=lambda v: v.name)
def test_standard_chain_finite(ch: Chain) -> None:
    assert ch.description and ch.depths and ch.modes == ("traced", "eager")
    if ch.name in EXPECTED_REUSE:
        assert ch.reuse == EXPECTED_REUSE[ch.name]
    if ch.base == "reuse":
        assert ch.reuse == ch.params["k"]
    x = ch.make_input()
    for depth in (1, 2, 5, ch.max_depth, 400):
        value = np.asarray(ch(xp, x, depth))
        assert value.shape == () and np.isfinite(value), (ch.name, depth)


def test_mul_hand_computed() -> None:
    x = np.array([[0.5, 1.0], [2.0, 4.0]])
    # depth 2: ((x^2/2)^2)/2 = x^4/8
    assert std.mul(xp, x, 2) == pytest.approx((0.5**4 + 1 + 2**4 + 4**4) / 8, rel=1e-15)
    assert std.mul(xp, x, 0) == 7.5
    assert std.cube(xp, x, 1) == pytest.approx((0.125 + 1 + 8 + 64) / 2)
    assert std.sin(xp, np.array([0.3]), 2) == pytest.approx(np.sin(np.sin(0.3)))
    assert std.sin.make_input().shape == (10,)


def test_svd_chains_use_reduced_svd() -> None:
    x = std.svd3.make_input()
    u, s, vt = np.linalg.svd(x)
    assert std.svd3(xp, x, 1) == pytest.approx(np.sum(u * s[None, :] + vt))
    assert std.svd2(xp, x, 1) == pytest.approx(np.sum(np.tanh(u * s[None, :])))
    q, r = np.linalg.qr(x)
    assert std.qr2(xp, x, 1) == pytest.approx(np.sum(q + r))


def test_example_file() -> None:
    import adprof

    assert adprof.chain is chain  # the file's `@adprof.chain(...)` is the decorator, not the subpackage
    chains = load_chains(ROOT / "examples" / "my_chain.py")
    assert [c.name for c in chains] == ["square", "damped", "powers"]
    for c in chains:
        for v in c.variants():
            assert np.isfinite(v(xp, v.make_input(), v.max_depth))


@pytest.mark.parametrize("ch", [std.svd1, std.svd2, std.svd3, std.qr2], ids=lambda c: c.name)
def test_decomposition_chains_are_smooth(ch: Chain) -> None:
    """Central differences at two step sizes agree: no LAPACK sign flip near the default input."""
    x = ch.make_input()

    def diff(h: float) -> np.ndarray:
        out = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            e = np.zeros_like(x)
            e[i] = h
            out[i] = (ch(xp, x + e, 4) - ch(xp, x - e, 4)) / (2 * h)
        return out

    np.testing.assert_allclose(diff(1e-5), diff(1e-7), rtol=1e-5, atol=1e-6)
