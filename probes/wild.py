"""A zoo of autodiff cost pathologies documented in the engines' own trackers, one chain per case.

Run them all on the installed versions (docs/wild.md has the table of what they read here)::

    adprof check probes/wild.py --backend jax,torch,tinygrad,autograd --budget 600

Each chain says what its depth counts (``axis``), which backends and modes it is for (``modes``), and the
cases whose points cost seconds (torch.compile: two gcc runs per point) declare their own depths
(``adaptive=False``) and cap. :data:`CASES` holds, per chain, its reference (repository and issue number),
what was reported and on which version, and the verdict the installed versions give (``expected``): the
documented growth where it is still there, ``linear`` where it was fixed. Every reference was checked against
the tracker (see docs/wild.md).

Derivative-order chains nest ``xp.grad`` (the backend's own: ``jax.grad``, ``autograd.grad``,
``torch.autograd.grad(create_graph=True)``): at depth ``n`` the chain returns the ``(n-1)``-th derivative and
the measured transform (or backward) takes the ``n``-th. Chains written for one engine import it inside the
function (the file itself stays light: adprof loads it in a worker to list the chains).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adprof.chain import chain

__all__ = [
    "CASES",
    "Case",
    "create_graph_leak",
    "create_graph_order",
    "dense_history",
    "diamond",
    "fibonacci_compile",
    "gru_seq_len",
    "maml_history",
    "nested_cond",
    "nested_grad",
    "outgrad_chain",
    "scan_loop",
    "scan_residuals",
    "sinkhorn_compile",
    "unrolled_loop",
]


@dataclass(frozen=True)
class Case:
    """One documented pathology: where it is reported, what was reported, and what adprof should read here."""

    reference: str  # repository#issue (and the fix, if any)
    reported: str  # the growth and figures as reported, with the version
    expected: dict[str, str]  # "backend/mode" -> the verdict on the installed versions
    status: str  # "open" | "fixed" | "remedied" | "partly fixed": what the installed version does
    here: str = ""  # what the installed version does, in a sentence (docs/wild.md has the figures)
    #: "backend/mode" (a sweep variant: "backend/mode[param=value]") -> the memory verdict on the installed
    #: versions (``linear``, ``flat``, ``superlinear-memory``, ``exponential-memory``, ``leak-per-call``)
    memory: dict[str, str] = field(default_factory=dict)


def _sum_grad(xp: Any, g: Any) -> Any:
    """``x -> sum(grad(g)(x))``: one more derivative order, as a scalar function again."""
    return lambda x: xp.sum(xp.grad(g)(x))


# --------------------------------------------------------------------------- derivative order


@chain(
    input=0.7,
    axis="order",
    depths=tuple(range(1, 9)),
    adaptive=False,
    modes={"jax": ("traced",), "autograd": ("eager",)},
    cap=10,
)
def nested_grad(xp: Any, x: Any, depth: int) -> Any:
    """The depth-th derivative of sin(x)*exp(x) by nested grad (jax#520: exponential in the order)."""
    g = lambda x: xp.sum(xp.sin(x) * xp.exp(x))  # noqa: E731
    for _ in range(depth - 1):
        g = _sum_grad(xp, g)
    return g(x)


@chain(input=0.7, axis="order", depths=tuple(range(1, 10)), adaptive=False, modes={"torch": ("eager",)}, cap=10)
def create_graph_order(xp: Any, x: Any, depth: int) -> Any:
    """The depth-th derivative of sin(x)*exp(x), torch.autograd.grad(create_graph=True) nested (pytorch#111563)."""
    g = lambda x: xp.sum(xp.sin(x) * xp.exp(x))  # noqa: E731
    for _ in range(depth - 1):
        g = _sum_grad(xp, g)
    return g(x)


# --------------------------------------------------------------------------- torch.compile


@chain(
    input_shape=(2,),
    axis="unroll",
    depths=(1, 2, 3, 4, 5, 6),
    adaptive=False,
    modes={"torch": ("compile",)},
    cap=120,
)
def fibonacci_compile(xp: Any, x: Any, depth: int) -> Any:
    """c = l[-1] + l[-2]; d = l[-1] * l[-2] appended depth times, then grad (pytorch#148073, torch.compile)."""
    seq = [x[0], x[1]]
    for _ in range(depth):
        c = seq[-1] + seq[-2]
        d = seq[-1] * seq[-2]
        seq.append(c)
        seq.append(d)
    return seq[-2] + seq[-1]


@chain(
    input_shape=(4, 4),
    axis="unroll",
    depths=(1, 2, 3, 4),
    adaptive=False,
    modes={"torch": ("compile",)},
    cap=120,
)
def sinkhorn_compile(xp: Any, x: Any, depth: int) -> Any:
    """Sinkhorn's logsumexp iterations unrolled depth times, then grad (pytorch#146663, torch.compile)."""
    import torch

    u = xp.zeros(x.shape[0], dtype=x.dtype)
    v = xp.zeros(x.shape[1], dtype=x.dtype)
    for _ in range(depth):
        v = torch.logsumexp(x + u.unsqueeze(1), 0)
        u = torch.logsumexp(x + v.unsqueeze(0), 1)
    return xp.sum(u) + xp.sum(v)


_HIDDEN = 4
#: The GRU cell's weights (hidden to gates): module constants, built once outside the compiled function.
_GRU = dict(zip(("z", "r", "n"), np.random.default_rng(3).uniform(-0.5, 0.5, size=(3, _HIDDEN, _HIDDEN)), strict=True))


@chain(
    input_shape=(_HIDDEN,),
    axis="seq_len",
    depths=(2, 4, 6, 8),  # even lengths: Inductor fuses odd and even lengths differently (±15% ops per step)
    adaptive=False,
    modes={"torch": ("compile",)},
    cap=120,
)
def gru_seq_len(xp: Any, x: Any, depth: int) -> Any:
    """A GRU cell unrolled over seq_len steps, then grad (pytorch#154652: inductor fusion O(seq_len^2))."""
    w = {k: xp.asarray(v) for k, v in _GRU.items()}

    def sigmoid(a: Any) -> Any:
        return 1.0 / (1.0 + xp.exp(-a))

    h = x
    for t in range(depth):
        u = xp.sin(x * (t + 1))  # the step's input, added to each gate
        z = sigmoid(u + xp.matmul(w["z"], h))
        r = sigmoid(u + xp.matmul(w["r"], h))
        n = xp.tanh(u + r * xp.matmul(w["n"], h))
        h = (1.0 - z) * n + z * h
    return xp.sum(h)


# --------------------------------------------------------------------------- XLA compile


def _gate_step(xp: Any, ra: Any, rb: Any) -> tuple[Any, Any]:
    """jax#2777's loop body (its random gate replaced by a deterministic one of the state)."""
    gate = 0.5 + 0.25 * xp.sin(ra + 2.0 * rb)
    new_ra = 0.5 * (ra + gate * ra + (1.0 - gate) * rb)
    new_rb = 0.5 * (rb + gate * ra + (1.0 - gate) * rb)
    return new_ra, new_rb


@chain(input_shape=(8, 2), axis="unroll", modes={"jax": ("compile",)}, depths=(8, 128), cap=8, repeats=3)
def unrolled_loop(xp: Any, x: Any, depth: int) -> Any:
    """jax#2777's gated recurrence unrolled depth times in Python: XLA compiles depth copies (superlinear)."""
    ra, rb = x, 1.0 - x
    for _ in range(depth):
        ra, rb = _gate_step(xp, ra, rb)
    return xp.sum(ra)


@chain(input_shape=(8, 2), axis="unroll", modes={"jax": ("compile",)}, depths=(8, 128), cap=8, repeats=3)
def scan_loop(xp: Any, x: Any, depth: int) -> Any:
    """The same recurrence as lax.scan (jax#2777's remedy): XLA compiles one body whatever the depth."""
    import jax

    def body(carry: Any, _: Any) -> tuple[Any, None]:
        return _gate_step(xp, *carry), None

    (ra, _rb), _ = jax.lax.scan(body, (x, 1.0 - x), None, length=depth)
    return xp.sum(ra)


# --------------------------------------------------------------------------- JAX transforms


def _nested(xp: Any, x: Any, pred: Any, depth: int) -> Any:
    import jax

    if depth == 1:
        return xp.sin(x)
    return jax.lax.cond(pred, lambda y: _nested(xp, y, pred, depth - 1), lambda y: y, x)


@chain(input_shape=(3,), axis="layer", depths=(2, 4, 6, 8, 10, 12, 14, 16), adaptive=False, modes={"jax": ("traced",)})
def nested_cond(xp: Any, x: Any, depth: int) -> Any:
    """lax.cond nested depth deep, then grad (jax#8193: linearize took 2^depth; fixed by jaxpr caching)."""
    return xp.sum(_nested(xp, x, xp.sum(x) > 0, depth))


# --------------------------------------------------------------------------- eager engines


@chain(input_shape=(3, 3), depths=(8, 128), modes={"tinygrad": ("eager",)})
def diamond(xp: Any, x: Any, depth: int) -> Any:
    """p = p*0.5 + p*0.5 (tinygrad#2259: diamonds made the backward graph walk exponential)."""
    p = x
    for _ in range(depth):
        p = p * 0.5 + p * 0.5
    return xp.sum(p)


@chain(input_shape=(4,), axis="step", depths=(8, 512), modes={"torch": ("eager",)}, cost_phases=("forward",))
def maml_history(xp: Any, x: Any, depth: int) -> Any:
    """An unrolled inner loop: each step takes grad(create_graph=True) over the history so far (pytorch#12635)."""
    w = x
    for _ in range(depth):
        loss = xp.sum(xp.sin(w) * w)
        w = w - 0.1 * xp.grad(lambda v, loss=loss: loss)(w)
    return xp.sum(w * w)


# --------------------------------------------------------------------------- memory


@chain(
    input_shape=(16, 16),
    axis="step",
    depths=(4, 8, 16, 32, 64),
    modes={"jax": ("traced", "eager", "compile")},
    sweep={"remat": ["none", "body", "loop"]},
)
def scan_residuals(xp: Any, x: Any, depth: int, remat: str) -> Any:
    """grad of a lax.scan keeps one residual per step (jax#3186); jax.checkpoint on the body keeps only the carry
    per step, on the whole loop only its input (the backward recomputes the loop)."""
    import jax

    def body(c: Any, _: Any) -> tuple[Any, None]:
        return xp.tanh(xp.sin(c) * 0.9 + 0.1), None

    step = jax.checkpoint(body) if remat == "body" else body

    def loop(c: Any) -> Any:
        out, _ = jax.lax.scan(step, c, None, length=depth)
        return out

    return xp.sum((jax.checkpoint(loop) if remat == "loop" else loop)(x))


@chain(
    input_shape=(256,),
    axis="layer",
    depths=(2, 4, 8, 16),
    modes={"torch": ("eager",)},
    sweep={"form": ["tanh", "add", "grad"]},
)
def create_graph_leak(xp: Any, x: Any, depth: int, form: str) -> Any:
    """A gradient taken with create_graph=True inside each call (pytorch#7343): ``backward(create_graph=True)``
    through tanh stores in x.grad a graph that holds x (the cycle x -> x.grad -> grad_fn -> x, in C++: gc cannot
    break it); through ``x + 1`` the gradient is a constant with no graph; ``torch.autograd.grad`` returns the
    gradient instead of storing it on x. The loss is returned as well, and adprof's backward runs again."""
    y = x
    for _ in range(depth):
        y = y + 1.0 if form == "add" else xp.tanh(y)
    loss = xp.sum(y)
    if form == "grad":
        import torch

        torch.autograd.grad(loss, x, create_graph=True)
    else:
        loss.backward(create_graph=True)
    return loss


@chain(
    input_shape=(64,),
    axis="layer",
    depths=(4, 8, 16, 32),
    modes={"engine": ("traced", "eager"), "torch": ("eager",), "jax": ("traced",)},
)
def dense_history(xp: Any, x: Any, depth: int) -> Any:
    """Every layer reads every earlier layer's output, each through an op of its own (dense connectivity, as
    DenseNet's concatenations): y_k = tanh(mean_j sin(y_j * c_k)), so the backward keeps one array per pair of
    layers, d(d+1)/2 of them: memory quadratic in depth."""
    history = [x]
    for k in range(depth):
        c = 1.0 / (k + 2)
        acc = xp.sin(history[0] * c)
        for h in history[1:]:
            acc = acc + xp.sin(h * c)
        history.append(xp.tanh(acc * (1.0 / len(history))))
    return xp.sum(history[-1])


@chain(input_shape=(64, 64), axis="layer", depths=(4, 8, 16, 32), modes={"autograd": ("eager",)})
def outgrad_chain(xp: Any, x: Any, depth: int) -> Any:
    """y <- sin(y) * 0.9 on 64x64 arrays (HIPS/autograd#219: the backward kept the out-gradient of every node it
    had processed)."""
    y = x
    for _ in range(depth):
        y = xp.sin(y) * 0.9
    return xp.sum(y)


# --------------------------------------------------------------------------- the cases

CASES: dict[str, Case] = {
    "nested_grad": Case(
        reference="jax-ml/jax#520 (Taylor mode, jax.experimental.jet, is the remedy)",
        reported="time exponential in the order of nested jvp (2019-04)",
        expected={"jax/traced": "exponential-transform", "autograd/eager": "exponential-backward"},
        status="open",
        here="still exponential: x2.15 per order in JAX's and autograd's call counts (and JAX's jaxpr size)",
    ),
    "create_graph_order": Case(
        reference="pytorch/pytorch#111563 (open)",
        reported="order 1..9: 0.0037 s ... 0.63, 2.16, 11.0 s, x3-5 per order (2023-10)",
        expected={"torch/eager": "exponential-backward"},
        status="open",
        here="still exponential: the autograd graph of the order-n derivative grows x2.16 per order",
    ),
    "fibonacci_compile": Case(
        reference="pytorch/pytorch#148073 (open)",
        reported="compile + first backward exponential in the unroll count, n = 1..13; a model ~1 min -> ~20 min "
        "(2025-02)",
        expected={"torch/compile": "exponential-transform"},
        status="open",
        here="still exponential: Inductor's loop-body ops grow x3.7 per unroll (toward 4: the backward inlines "
        "both operands of every product), its codegen is the growing phase; the issue's own repro compiles in "
        "4.5 / 8.1 / 59.7 s at n = 4 / 6 / 8 here (x1.9 per step with gcc's constant part in the total)",
    ),
    "sinkhorn_compile": Case(
        reference="pytorch/pytorch#146663 (closed; fixed by PR #145082)",
        reported="compile time exponential in num_iters with grad enabled (torch 2.6.0, 2025-02)",
        expected={"torch/compile": "mildly-superlinear-transform"},
        status="partly fixed",
        here="the exponential is gone; a quadratic term remains in Inductor's scheduler (fusion scoring: "
        "dep_size_hint calls x4.1 from 4 to 8 iterations): unroll^1.17 over 1..4, unroll^1.33 over 1..8",
    ),
    "gru_seq_len": Case(
        reference="pytorch/pytorch#154652 (closed; fusion window, PR #154688)",
        reported="inductor fusion O(seq_len^2): seq_len 1500, ~1 h forward fusion, ~4 h backward (2025-05)",
        expected={"torch/compile": "linear"},
        status="fixed",
        here="linear over seq_len 2..8 (Inductor's call counts; the fusion window bounds the pairs it scores)",
    ),
    "unrolled_loop": Case(
        reference="jax-ml/jax#2777 (closed; lax.scan is the remedy), jax-ml/jax#1223",
        reported="compile exponential in the unrolled loop length (2020-04); 15 unrolled steps ~6 min and 192 > 1 h "
        "on CPU (#1223, 2019-08)",
        expected={"jax/compile": "superlinear-transform"},
        status="remedied",
        here="superlinear, not exponential: XLA's backend compile is the growing phase (decided by time)",
    ),
    "scan_loop": Case(
        reference="jax-ml/jax#2777 (the lax.scan form)",
        reported="compile time flat in the loop length",
        expected={"jax/compile": "linear"},
        status="remedied",
        here="flat: the same jaxpr (50 equations), the same HLO (317 instructions) at every trip count",
    ),
    "nested_cond": Case(
        reference="jax-ml/jax#8193 (closed; jaxpr transform caching, PRs #9196, #9228, #9786)",
        reported="linearize of depth-nested lax.cond 2^depth: depth 7..12 0.37 ... 7.56 s (2021-10)",
        expected={"jax/traced": "superlinear-transform"},
        status="partly fixed",
        here="2^depth is gone; quadratic remains: each level of the linearized cond forwards the residuals of "
        "all deeper levels (jaxpr equations and call counts grow as d^1.9)",
    ),
    "diamond": Case(
        reference="tinygrad/tinygrad#2259 (PR, closed unmerged; exponential DAG walks fixed in PRs #2890, #7008)",
        reported="backward of p = p*0.5 + p*0.5 'potentially exponential', N = 10..25 (2023-11)",
        expected={"tinygrad/eager": "linear"},
        status="fixed",
        here="linear (time; the backward's call count grows by a constant per diamond)",
    ),
    "maml_history": Case(
        reference="pytorch/pytorch#12635 (closed; fixed by PR #52180)",
        reported="per-call autograd.grad time rising with the history of an unrolled loop (2018-10)",
        expected={"torch/eager": "linear"},
        status="fixed",
        here="linear: a grad call costs the same at history 64 and 4096 (time; the discovery runs in C++, which "
        "no call count sees: instruction counts would decide)",
    ),
    "scan_residuals": Case(
        reference="jax-ml/jax#3186 (closed; answer: jax.checkpoint)",
        reported="grad of a lax.scan over 3000x3000 float64: 557 MB at n = 5, 908 MB at n = 10 steps (ru_maxrss), "
        "the forward about 203 MB: one residual per step (2020-05)",
        expected={},
        status="remedied",
        here="linear: 3 residuals of 2,048 bytes per step (saved_residuals, the vjp function's arrays and XLA's "
        "temp buffers agree); checkpointed body: 1 per step; checkpointed loop: flat (its input), though XLA's "
        "temp buffers stay linear (the backward recomputes the loop)",
        memory={
            "jax/traced[remat=none]": "linear",
            "jax/eager[remat=none]": "linear",
            "jax/compile[remat=none]": "linear",
            "jax/traced[remat=body]": "linear",
            "jax/traced[remat=loop]": "flat",
            "jax/eager[remat=loop]": "flat",
        },
    ),
    "create_graph_leak": Case(
        reference="pytorch/pytorch#7343 (open; the warning of pytorch/pytorch#4661 names autograd.grad)",
        reported="backward(create_graph=True) leaks: memory_allocated 865280 -> 867328 B after del, for tanh, not "
        "for x + 1 (2018-05)",
        expected={},
        status="open",
        here="still leaks through tanh: every call leaves its leaf, gradient and saved tensors alive (the cycle "
        "through x.grad); x + 1 and torch.autograd.grad leave nothing",
        memory={
            "torch/eager[form=tanh]": "leak-per-call",
            "torch/eager[form=add]": "flat",  # x + 1 saves no tensor: 0 saved bytes at every depth
            "torch/eager[form=grad]": "linear",
        },
    ),
    "dense_history": Case(
        reference="Pleiss et al., Memory-Efficient Implementation of DenseNets (arXiv:1707.06990); "
        "pytorch/vision#691 (closed; memory_efficient=True by pytorch/vision#1003)",
        reported="naive dense connectivity allocates a new concatenation per layer: memory quadratic in depth",
        expected={},
        status="remedied",
        here="quadratic: the engine and torch save d(d+3)/2 arrays of 512 bytes (a product per pair of layers, "
        "d(d+1)/2, and each layer's tanh); JAX traced and the engine's eager tape quadratic too. The program's own "
        "memory: its intermediates grow as d^2 too (every layer computes one array per earlier layer), and read "
        "against them the saved bytes are linear (docs/classification.md: the three layers); the remedies "
        "(recompute the concatenation in backward, checkpoint) stay as advice",
        memory={  # against the intermediates (the raw growth, d^1.9, is JSON explained.memory_raw_kind)
            "engine/traced": "linear",
            "engine/eager": "linear",
            "torch/eager": "linear",
            "jax/traced": "linear",
        },
    ),
    "outgrad_chain": Case(
        reference="HIPS/autograd#219 (branch inplace-grad-accumulation)",
        reported="the backward pass keeps the out-gradient of every processed node, so memory is not freed during "
        "the pass (2017)",
        expected={},
        status="fixed",
        here="does not reproduce on autograd 1.9.1: backward_pass pops each node's out-gradient once processed "
        "(outgrads.pop(node)); the backward's own peak above the tape stays flat in depth (tracemalloc)",
        memory={"autograd/eager": "linear"},
    ),
}
