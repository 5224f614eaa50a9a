"""Where a constant made from plain data by ``engine.numpy.asarray`` goes:
into the innermost open eager session if there is one, else into the traced graph.

``engine.eager`` installs :data:`make_constant` when it is imported (it knows both contexts), so the
``engine.numpy`` namespace, which sits below the tensor types, reaches the active context without
importing them.
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import EngineError


def _no_context(array):
    raise EngineError("engine.numpy needs the engine's tensor types: import engine")


#: array -> a constant tensor in the active context (set by ``engine.eager``).
make_constant: Callable = _no_context
