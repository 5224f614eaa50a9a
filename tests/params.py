"""Parametrization helpers shared by the test files."""

from __future__ import annotations

import pytest


def representatives(values, keep, ids):
    """pytest params over ``values`` (named by ``ids``): those named in ``keep`` run by default, the others
    only under ``-m slow`` (each study keeps a representative in the default run, the suite its 3 minutes)."""
    return [
        pytest.param(v, id=i, marks=() if i in keep else pytest.mark.slow) for v, i in zip(values, ids, strict=True)
    ]
