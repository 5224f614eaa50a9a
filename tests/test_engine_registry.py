"""The rule registry: one table per transform keyed by primitive; a second registration raises."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import ops
from engine.ops.core import RuleRegistrationError


@pytest.mark.parametrize("kind", ["shape", "impl", "jvp", "vjp"])
def test_a_second_rule_for_a_primitive_raises_and_keeps_the_first(kind):
    first = ops.RULE_TABLES[kind][ops.sin_p]
    with pytest.raises(RuleRegistrationError, match="registered twice"):
        ops.register_rule(kind, ops.sin_p, lambda *a, **k: None)
    assert ops.RULE_TABLES[kind][ops.sin_p] is first


def test_a_second_primitive_of_the_same_name_raises():
    with pytest.raises(RuleRegistrationError, match="registered twice"):
        ops.defprim("sin", lambda a: (a,), np.sin)


def test_decorators_refuse_a_second_rule():
    with pytest.raises(RuleRegistrationError):
        ops.defvjp(ops.diag_p)(lambda ct, args, outs: [ops.diag(ct[0])])


def test_diag_vjp_is_diag_embed():
    x = engine.input((3, 3))
    g = engine.vjp(ops.diag(x), x, engine.constant(np.array([1.0, 2.0, 3.0])))[0]
    out = engine.compile(g, inputs=[x]).prepare()(np.zeros((3, 3)))[0]
    np.testing.assert_array_equal(out, np.diag([1.0, 2.0, 3.0]))


def test_missing_rule_is_a_clear_error():
    with pytest.raises(engine.MissingRuleError, match="VJP of primitive 'compare'"):
        ops.rule(ops.compare_p, "vjp")
