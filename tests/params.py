"""Parametrization helpers shared by the test files."""

from __future__ import annotations

import pytest


def representatives(values, keep, ids):
    """pytest params over ``values`` (named by ``ids``): those named in ``keep`` run by default, the others
    only under ``-m slow`` (each study keeps a representative in the default run, the suite its 3 minutes)."""
    return [
        pytest.param(v, id=i, marks=() if i in keep else pytest.mark.slow) for v, i in zip(values, ids, strict=True)
    ]


def property_twins(body, strategies: dict, quick: int, many: int, **kw):
    """One hypothesis property as two tests: ``quick`` examples in the default run, ``many`` in its ``-m slow`` twin
    (the same body and strategies, so the slow run checks everything the default run does, on more examples)."""
    from hypothesis import given, settings

    fast = settings(max_examples=quick, **kw)(given(**strategies)(body))
    slow = pytest.mark.slow(settings(max_examples=many, **kw)(given(**strategies)(body)))
    return fast, slow
