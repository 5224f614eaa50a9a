"""Bad input raises a clear engine error (one line, naming what is wrong)."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.numpy as xnp
from engine import DTypeError, EngineError, ShapeError, TransformError


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and text
    return text


def test_shape_mismatch_at_record_time():
    a, b = engine.input((2, 3)), engine.input((3, 2))
    with pytest.raises(ShapeError) as exc:
        _ = a + b
    assert "[2, 3]" in one_line(exc) and "[3, 2]" in one_line(exc)
    with pytest.raises(ShapeError, match="inner dimensions"):
        _ = a @ a
    with pytest.raises(ShapeError, match="cannot reshape"):
        xnp.reshape(a, (4, 2))


def test_grad_of_non_scalar():
    x = engine.input((3,))
    with pytest.raises(TransformError) as exc:
        engine.grad(xnp.sin(x), x)
    assert "scalar" in one_line(exc)


def test_wrong_dtype():
    a = engine.input((2,), dtype="float64")
    b = engine.input((2,), dtype="float32")
    with pytest.raises(DTypeError) as exc:
        _ = a * b
    assert "float64" in one_line(exc) and "float32" in one_line(exc)
    with pytest.raises(DTypeError):
        engine.input((2,), dtype="int64")
    with pytest.raises(DTypeError):
        xnp.sin(a > b.__class__ and (a > a))  # a bool tensor has no sin


def test_unbound_placeholder_in_compile():
    x, w = engine.input((2,)), engine.input((2,))
    with pytest.raises(TransformError, match="not among the inputs"):
        engine.compile(xnp.sum(x * w), inputs=[x])


def test_branching_on_a_traced_value_is_refused():
    x = engine.input(())
    with pytest.raises(TransformError, match="no value at record time"):
        if x > 0.0:
            pass


def test_prepared_program_checks_its_inputs():
    x = engine.input((2,))
    run = engine.compile(xnp.sum(x), inputs=[x]).prepare()
    with pytest.raises(ShapeError, match="expected"):
        run(np.zeros(3))
    with pytest.raises(ShapeError, match="takes 1 inputs"):
        run()


def test_unknown_profile():
    with pytest.raises(ValueError, match="unknown engine profile"):
        engine.set_profile("v09")


def test_all_engine_errors_share_a_base():
    for cls in (ShapeError, DTypeError, TransformError):
        assert issubclass(cls, EngineError)
