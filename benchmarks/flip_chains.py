"""The chains of the flip-rate benchmark (benchmarks/flip_rate.py) and of issue 35's memory tests: ordinary
layers that are healthy (one use of the previous value per layer), and the pathological controls.

``mlp``: y <- tanh(y @ W); ``gated``: y <- y * tanh(y @ W) (4x8, float64); ``linear_relu``: torch.nn.Linear + relu
(torch only); ``hooked``: a gradient hook per layer whose pure-Python loop grows with the layer (torch only: a
quadratic backward that only time sees); ``fib``: a Fibonacci-like unroll (each layer adds the two before it:
the traced graph is a DAG, the value count doubles in a tree-walking transform); ``square``: y <- (y*y)*0.5
(two uses per layer); ``concat_history``: each layer concatenates every earlier output (saved bytes quadratic in
depth: the memory control of torch traced's saved bytes).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import adprof

_W = np.linspace(-0.5, 0.5, 64).reshape(8, 8) / 2.0


@adprof.chain(input_shape=(4, 8), reuse=1, depths=(2, 4, 8, 16, 32, 64))
def mlp(xp: Any, x: Any, depth: int) -> Any:
    """y <- tanh(y @ W): a tanh MLP layer (healthy)."""
    w = xp.asarray(_W)
    y = x
    for _ in range(depth):
        y = xp.tanh(y @ w)
    return xp.sum(y)


@adprof.chain(input_shape=(4, 8), reuse=1, depths=(2, 4, 8, 16, 32, 64))
def gated(xp: Any, x: Any, depth: int) -> Any:
    """y <- y * tanh(y @ W): a gated layer (healthy: the previous value is used twice, once per path, no tree)."""
    w = xp.asarray(_W)
    y = x
    for _ in range(depth):
        y = y * xp.tanh(y @ w)
    return xp.sum(y)


@adprof.chain(input_shape=(4, 8), reuse=1, depths=(2, 4, 8, 16, 32, 64))
def linear_relu(xp: Any, x: Any, depth: int) -> Any:
    """torch.nn.Linear + relu (torch only: the module is torch's)."""
    import torch

    torch.manual_seed(0)
    layer = torch.nn.Linear(8, 8, dtype=x.dtype)
    y = x
    for _ in range(depth):
        y = torch.relu(layer(y))
    return y.sum()


@adprof.chain(input_shape=(4, 8), depths=(2, 4, 8, 16))
def concat_history(xp: Any, x: Any, depth: int) -> Any:
    """y_k <- the mean over blocks of tanh(concat(y_0..y_{k-1}) * c_k) (4x8, float64): each layer concatenates every
    earlier output (a naive DenseNet layer), and its tanh keeps the concatenation's 4x8k result for the backward, so
    the saved-for-backward bytes grow as 128 d(d+1) (pathological against depth; its forward's intermediates grow
    as d^2 too, so against them it is the program's own memory, docs/classification.md)."""
    history = [x]
    for k in range(depth):
        z = xp.tanh(xp.concat(history, axis=1) * (1.0 / (k + 2)))
        history.append(xp.mean(xp.reshape(z, (4, k + 1, 8)), axis=1))
    return xp.sum(history[-1])


@adprof.chain(input_shape=(3, 3), reuse=2, max_depth=14)
def square(xp: Any, x: Any, depth: int) -> Any:
    """y <- (y*y)*0.5: two uses of the previous value per layer (a tree where a transform walks it)."""
    y = x
    for _ in range(depth):
        y = (y * y) * 0.5
    return xp.sum(y)


def _busy_hook(steps: int, grad: Any) -> None:
    """A gradient hook that loops ``steps`` times in pure Python (no calls: invisible to call counts)."""
    s = 0
    for i in range(steps):
        s += i


@adprof.chain(input_shape=(4, 8), reuse=1, depths=(2, 4, 8, 16, 32, 64))
def hooked(xp: Any, x: Any, depth: int) -> Any:
    """torch only: y <- tanh(y @ W) with a gradient hook on layer k's output that loops 200*k times in pure Python:
    the backward's cost is quadratic in depth while the forward's program, the autograd graph and the Python call
    counts grow linearly (the pathological control that only time sees)."""
    w = xp.asarray(_W)
    y = x
    for k in range(1, depth + 1):
        y = xp.tanh(y @ w)
        if getattr(y, "requires_grad", False):
            y.register_hook(functools.partial(_busy_hook, 200 * k))
    return xp.sum(y)
