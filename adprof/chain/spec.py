"""The chain format: a user function ``f(xp, x, depth)`` plus the metadata adprof needs to probe it.

A *chain* builds a computation whose length grows with ``depth`` and returns a scalar::

    import adprof

    @adprof.chain(input_shape=(3, 3), reuse=2)
    def mul(xp, x, depth):
        "y <- (y*y)*0.5: the previous value is used twice per layer."
        y = x
        for _ in range(depth):
            y = (y * y) * 0.5
        return xp.sum(y)

``xp`` is the array namespace of the backend being probed (``engine.numpy``, later ``jax.numpy``
or an array-API torch namespace), ``x`` the input tensor built from :meth:`Chain.make_input`.
Constants come from ``xp.asarray(numpy_array)``; Python scalars mix with tensors in arithmetic.

The decorator returns a :class:`Chain`. It is callable exactly like the decorated function
(``mul(xp, x, 3)``), and the function also gets ``fn.__adprof_chain__`` pointing at it.

Chains can be swept over extra keyword parameters::

    @adprof.chain(sweep={"k": [1, 2, 3, 4]}, reuse="k")
    def reuse(xp, x, depth, k): ...

``reuse.variants()`` yields ``reuse[k=1]`` ... ``reuse[k=4]``, each a plain ``(xp, x, depth)``
chain with ``params={"k": ...}``.

A chain can say what its depth counts (``axis="order"``: the derivative order, ``"unroll"``, ``"seq_len"``;
default ``"layer"``; every report then reads "x2.15 per order"), which backends and modes it is for
(``modes={"jax": ("traced",), "torch": ("eager",)}``), and measure exactly its declared depths
(``adaptive=False``) with its own per-phase cap (``cap=60``) where the adaptive schedule would waste the
budget (compiles of seconds per point). Derivative-order chains nest ``xp.grad`` (the backend's own
grad: ``jax.grad``, ``torch.autograd.grad(create_graph=True)``, ``autograd.grad``)::

    @adprof.chain(input_shape=(), axis="order", modes={"jax": ("traced",), "torch": ("eager",)})
    def sin_exp(xp, x, depth):
        g = lambda x: xp.sum(xp.sin(x) * xp.exp(x))
        for _ in range(depth - 1):
            g = (lambda h: lambda x: xp.sum(xp.grad(h)(x)))(g)
        return g(x)  # the measured transform takes the depth-th derivative

Loading chain files lives in :mod:`adprof.chain.loader`. Every user-facing error is a
:class:`ChainError` (a ``ValueError``) with a one-line message. This module imports only numpy and
the standard library.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from adprof import options

__all__ = [
    "COMMON_AXES",
    "DEFAULT_AXIS",
    "DEFAULT_DEPTHS",
    "DEFAULT_INPUT_SHAPE",
    "DEFAULT_MODES",
    "DEFAULT_SEED",
    "KNOWN_MODES",
    "Chain",
    "ChainError",
    "ChainSignatureError",
    "as_chain",
    "chain",
]

#: Modes a chain can ask to be probed in (``compile`` only on backends that have it).
KNOWN_MODES: tuple[str, ...] = ("traced", "eager", "compile")
DEFAULT_MODES: tuple[str, ...] = ("traced", "eager")
#: What a depth counts, when the chain does not say (reports read "x2.00 per layer").
DEFAULT_AXIS = "layer"
#: Axes the docs name; any lowercase word works (``"step"``, ``"history"``).
COMMON_AXES: tuple[str, ...] = ("layer", "order", "unroll", "seq_len")
#: Default input: a 3x3 float64 matrix, uniform in [0.5, 1.0), from ``numpy.random.default_rng(0)``.
#: Entries below 1 keep power chains such as ``y <- (y*y)*0.5`` from overflowing (they decay to 0).
DEFAULT_INPUT_SHAPE: tuple[int, ...] = (3, 3)
DEFAULT_INPUT_LOW, DEFAULT_INPUT_HIGH = 0.5, 1.0
DEFAULT_SEED = 0
#: Default depths: consecutive 1..8, enough to fit a per-layer cost ratio.
DEFAULT_DEPTHS: tuple[int, ...] = tuple(range(1, 9))

_CHAIN_ATTR = "__adprof_chain__"
_CHAIN_ARGS = ("xp", "x", "depth")


# --------------------------------------------------------------------------- errors


class ChainError(ValueError):
    """A chain definition or chain file is unusable; the message is one line meant for the user."""


class ChainSignatureError(ChainError):
    """The function cannot be called as ``f(xp, x, depth[, sweep params])``."""


# --------------------------------------------------------------------------- the Chain record


def _where(fn: Callable[..., Any]) -> str:
    code = getattr(fn, "__code__", None)
    if code is None:
        return getattr(fn, "__qualname__", repr(fn))
    return f"{code.co_filename}:{code.co_firstlineno}"


def _first_doc_line(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    for line in doc.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _check_signature(fn: Callable[..., Any], name: str, sweep_names: Sequence[str]) -> None:
    """Raise ChainSignatureError unless ``fn(xp, x, depth, **{sweep names})`` binds."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ChainSignatureError(f"chain {name!r}: cannot inspect its signature ({exc})") from None
    try:
        sig.bind(*([None] * len(_CHAIN_ARGS)), **{k: None for k in sweep_names})
    except TypeError:
        extra = f", {', '.join(sweep_names)}" if sweep_names else "[, sweep params]"
        raise ChainSignatureError(
            f"chain {name!r} at {_where(fn)} has signature {name}{sig}; a chain must accept (xp, x, depth{extra})"
        ) from None


@dataclass(eq=False)
class Chain:
    """A probe-able chain: the function and its metadata. Calling it calls ``fn``.

    Attributes:
        name: display name; variants are named ``base[k=2,m=3]``.
        fn: ``fn(xp, x, depth, **sweep_params) -> scalar``.
        input_shape: shape of the default random input (ignored when ``input`` is given).
        input: callable returning a numpy array, a numpy array, or a Python float (a 0-d input,
            e.g. TRG's beta). ``None`` means a random array of ``input_shape``.
        dtype: numpy dtype name of the input.
        reuse: expected uses of the previous layer's value per layer (the asymptotic per-layer
            cost ratio of a tree-walking transform); ``None`` if unknown. On a swept chain it may
            be the name of a sweep parameter; each variant then carries that parameter's value.
        depths: default depths to probe, ascending.
        modes: modes to probe, a subset of :data:`KNOWN_MODES`.
        description: one line; defaults to the first docstring line.
        sweep: parameter name -> values; empty for an unswept chain or a variant.
        params: the bound sweep values of a variant (empty otherwise).
        seed: seed of the default random input.
        base: for a variant, the name of the swept chain it came from.
        source: the file the chain was loaded from, if :func:`load_chains` loaded it.
        axis: what the depth counts (``layer``, ``order``, ``unroll``, ``seq_len``, ...).
        backend_modes: backend -> the modes to probe on it; empty: every backend, in ``modes``.
        adaptive: False: measure exactly ``depths`` (else they bound the adaptive schedule).
        cap: seconds per phase for this chain's series when ``--cap`` is not given (None: the default).
        cost_phases: the phases whose cost is classified (empty: the mode's, e.g. ``backward`` in eager).
        repeats: exact repeats of each timed phase (None: the repeat policy, one run past half a second).
    """

    name: str
    fn: Callable[..., Any]
    input_shape: tuple[int, ...] = DEFAULT_INPUT_SHAPE
    input: Callable[[], Any] | np.ndarray | float | None = None
    dtype: str = "float64"
    reuse: float | str | None = None
    depths: Sequence[int] = DEFAULT_DEPTHS  # a tuple, or a range of more than MAX_DEPTH_COUNT (max_depth=)
    modes: tuple[str, ...] = DEFAULT_MODES
    description: str = ""
    sweep: dict[str, list[Any]] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = DEFAULT_SEED
    base: str | None = None
    source: str | None = None
    axis: str = DEFAULT_AXIS
    backend_modes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    adaptive: bool = True
    cap: float | None = None
    cost_phases: tuple[str, ...] = ()
    repeats: int | None = None
    #: The chain gave ``depths`` or ``max_depth`` (else :data:`DEFAULT_DEPTHS`, and where time decides the
    #: schedule chooses how deep to go).
    declared_depths: bool = False
    #: The chain gave ``max_depth``: a maximum, no series measures past it (``depths`` may be extended by one
    #: doubling where time decides on a peer).
    bounded: bool = False

    def __call__(self, xp: Any, x: Any, depth: int, *args: Any, **kwargs: Any) -> Any:
        """Run the chain: ``fn(xp, x, depth, ...)`` (a variant's ``fn`` already binds its params)."""
        return self.fn(xp, x, depth, *args, **kwargs)

    @property
    def max_depth(self) -> int:
        """The largest default depth (the depths are ascending)."""
        return self.depths[-1]

    @property
    def is_swept(self) -> bool:
        """True if :meth:`variants` yields more than the chain itself."""
        return bool(self.sweep)

    @property
    def is_scalar_input(self) -> bool:
        """True if the input is a 0-d array (e.g. TRG's beta)."""
        return self.make_input().ndim == 0

    def metadata(self) -> dict[str, Any]:
        """Plain JSON-able metadata (no function, no input data)."""
        return {
            "name": self.name,
            "base": self.base,
            "params": dict(self.params),
            "sweep": {k: list(v) for k, v in self.sweep.items()},
            "reuse": self.reuse,
            "depths": listed_depths(self.depths),
            "modes": list(self.modes),
            "description": self.description,
            "input_shape": list(self.make_input().shape),
            "dtype": self.dtype,
            "seed": self.seed,
            "source": self.source,
            "axis": self.axis,
            "backend_modes": {b: list(m) for b, m in self.backend_modes.items()},
            "adaptive": self.adaptive,
            "cap": self.cap,
            "cost_phases": list(self.cost_phases),
            "repeats": self.repeats,
            "declared_depths": self.declared_depths,
            "bounded": self.bounded,
        }

    def decorator_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`chain` that make this chain again from its function (a swept chain's,
        not a variant's: a variant is its swept chain's ``variant(**params)``)."""
        opts: dict[str, Any] = {
            "name": self.name,
            "dtype": self.dtype,
            "reuse": self.reuse,
            **(
                {"max_depth": max(self.depths)}
                if self.bounded
                else {"depths": self.depths if isinstance(self.depths, range) else tuple(self.depths)}
            ),
            "modes": {b: tuple(m) for b, m in self.backend_modes.items()} or tuple(self.modes),
            "description": self.description,
            "sweep": {k: list(v) for k, v in self.sweep.items()} or None,
            "seed": self.seed,
            "axis": self.axis,
            "adaptive": self.adaptive,
            "cap": self.cap,
            "cost_phases": tuple(self.cost_phases) or None,
            "repeats": self.repeats,
        }
        if self.input is None:
            opts["input_shape"] = tuple(self.input_shape)
        else:
            opts["input"] = self.input
        return opts

    def modes_on(self, backend: str) -> tuple[str, ...]:
        """The modes to probe on ``backend`` (empty when the chain is not for it)."""
        if not self.backend_modes:
            return self.modes
        return self.backend_modes.get(backend, ())

    def make_input(self) -> np.ndarray:
        """A fresh numpy input: ``input`` if given, else uniform [0.5, 1.0) of ``input_shape``.

        The random input is reproducible: ``numpy.random.default_rng(seed)``.
        """
        dtype = np.dtype(self.dtype)
        src = self.input
        if src is None:
            rng = np.random.default_rng(self.seed)
            return rng.uniform(DEFAULT_INPUT_LOW, DEFAULT_INPUT_HIGH, size=self.input_shape).astype(dtype)
        if callable(src):
            try:
                src = src()
            except Exception as exc:  # the user's input function: name the chain and its file
                where = f" in {self.source}" if self.source else ""
                msg = str(exc).splitlines()[0] if str(exc) else ""
                raise ChainError(
                    f"chain {self.name!r}{where}: its input() raised {type(exc).__name__}: {msg}".rstrip(": ")
                ) from None
        try:
            return np.array(src, dtype=dtype)  # a copy: callers may mutate it
        except (TypeError, ValueError) as exc:
            where = f" in {self.source}" if self.source else ""
            raise ChainError(f"chain {self.name!r}{where}: its input is not an array of {dtype.name}: {exc}") from None

    def variants(self) -> Iterator[Chain]:
        """One concrete ``(xp, x, depth)`` chain per combination of sweep values (or just self)."""
        if not self.sweep:
            yield self
            return
        keys = list(self.sweep)
        for values in itertools.product(*(self.sweep[k] for k in keys)):
            params = dict(zip(keys, values, strict=True))
            yield self.variant(**params)

    def variant(self, **params: Any) -> Chain:
        """The variant binding ``params`` (each must be a sweep parameter; values need not be listed)."""
        if set(params) != set(self.sweep):
            raise ChainError(
                f"chain {self.name!r}: variant needs exactly the sweep parameters "
                f"{sorted(self.sweep)}, got {sorted(params)}"
            )
        params = {k: params[k] for k in self.sweep}  # sweep order
        label = ",".join(f"{k}={v}" for k, v in params.items())
        reuse = self.reuse
        if isinstance(reuse, str):
            reuse = params[reuse]
        return _make_variant(self, params, label, reuse)

    def __repr__(self) -> str:
        extra = f", params={self.params}" if self.params else ""
        sweep = f", sweep={self.sweep}" if self.sweep else ""
        return f"Chain({self.name!r}, reuse={self.reuse!r}, depths={self.depths}{sweep}{extra})"


#: Depths listed one by one in a chain's metadata before a long ``max_depth`` range is thinned to doublings.
LISTED_UNIT_DEPTHS = 64


def listed_depths(depths: Sequence[int]) -> list[int]:
    """The depths as a list for the metadata: all of them, except a long ``max_depth=N`` range (more than
    :data:`adprof.options.MAX_DEPTH_COUNT`), which is 1..64 then doublings, and N (its bounds, which the schedule
    reads, are kept; ten million ints are not sent)."""
    if not isinstance(depths, range) or len(depths) <= options.MAX_DEPTH_COUNT:
        return list(depths)
    out, d = list(depths[:LISTED_UNIT_DEPTHS]), depths[LISTED_UNIT_DEPTHS - 1] * 2
    while d < depths[-1]:
        out.append(d)
        d *= 2
    return [*out, depths[-1]]


def _bind(fn: Callable[..., Any], params: Mapping[str, Any]) -> Callable[..., Any]:
    def bound(xp: Any, x: Any, depth: int) -> Any:
        return fn(xp, x, depth, **params)

    bound.__name__ = getattr(fn, "__name__", "chain")
    bound.__qualname__ = getattr(fn, "__qualname__", bound.__name__)
    bound.__wrapped__ = fn  # type: ignore[attr-defined]  # where it is defined (inspect.unwrap)
    bound.__doc__ = fn.__doc__
    bound.__module__ = getattr(fn, "__module__", None)
    bound.__wrapped__ = fn  # type: ignore[attr-defined]
    return bound


def _make_variant(parent: Chain, params: dict[str, Any], label: str, reuse: Any) -> Chain:
    return replace(
        parent,
        name=f"{parent.name}[{label}]",
        fn=_bind(parent.fn, params),
        reuse=reuse,
        sweep={},
        params=dict(params),
        base=parent.name,
    )


def _normalize_depths(depths: Sequence[int] | range | None, max_depth: int | None, name: str) -> Sequence[int]:
    """The chain's depths under the options' rules: ``max_depth=N`` is ``range(1, N + 1)``, never materialised
    past :data:`adprof.options.MAX_DEPTH_COUNT` depths (``max_depth=10**9`` is refused, not a tuple filling the
    memory while the file loads)."""
    if depths is not None and max_depth is not None:
        raise ChainError(f"chain {name!r}: give depths= or max_depth=, not both")
    who = f"chain {name!r}: "
    try:
        if max_depth is not None:
            return options.check_depths(range(1, options.check("max_depth", max_depth, who) + 1), who)
        if depths is None:
            return DEFAULT_DEPTHS
        if isinstance(depths, Iterable) and not isinstance(depths, Sequence | range | str | bytes):
            depths = tuple(itertools.islice(depths, options.MAX_DEPTH_COUNT + 1))  # a generator: bounded
        return options.check_depths(depths, who)
    except options.OptionError as exc:
        raise ChainError(str(exc)) from None


def _sweep_of(sweep_in: Any, name: str) -> dict[str, list[Any]]:
    if not isinstance(sweep_in, Mapping):
        raise ChainError(f"chain {name!r}: sweep must be a dict name -> list of values")
    sweep: dict[str, list[Any]] = {}
    for key, values in sweep_in.items():
        if not isinstance(key, str) or not key.isidentifier() or key in _CHAIN_ARGS:
            raise ChainError(f"chain {name!r}: bad sweep parameter name {key!r}")
        if not isinstance(values, str | bytes) and not isinstance(values, Iterable):
            raise ChainError(f"chain {name!r}: sweep parameter {key!r} must be a list of values, got {values!r}")
        vals = [values] if isinstance(values, str | bytes) else list(values)
        if not vals:
            raise ChainError(f"chain {name!r}: sweep parameter {key!r} has no values")
        sweep[key] = vals
    return sweep


def _modes_of(modes: Any, name: str) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """``(modes, backend -> modes)``: a mode name, a tuple of them, or a dict backend -> those."""
    if isinstance(modes, Mapping):
        if not modes:
            raise ChainError(f"chain {name!r}: modes must name at least one backend")
        per: dict[str, tuple[str, ...]] = {}
        for backend, ms in modes.items():
            if not isinstance(backend, str) or not backend:
                raise ChainError(f"chain {name!r}: modes: bad backend name {backend!r}")
            per[backend] = _mode_names(ms, name)
        return tuple(dict.fromkeys(m for ms in per.values() for m in ms)), per
    return _mode_names(modes, name), {}


def _mode_names(modes: Any, name: str) -> tuple[str, ...]:
    modes = modes or DEFAULT_MODES
    if not isinstance(modes, str | Sequence):
        raise ChainError(f"chain {name!r}: modes must be a mode name or a tuple of them, got {modes!r}")
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    bad = [m for m in modes if m not in KNOWN_MODES]
    if bad or not modes:
        raise ChainError(f"chain {name!r}: unknown mode(s) {bad}; known modes: {', '.join(KNOWN_MODES)}")
    return modes


def _input_of(input_shape: Any, inp: Any, name: str) -> tuple[int, ...]:
    """The checked input shape (``inp`` is checked and kept as given)."""
    if input_shape is not None and inp is not None:
        raise ChainError(f"chain {name!r}: give input_shape= or input=, not both")
    if input_shape is None:
        input_shape = DEFAULT_INPUT_SHAPE
    try:
        input_shape = options.check_input_shape(input_shape, f"chain {name!r}: ")
    except options.OptionError as exc:
        raise ChainError(str(exc)) from None
    if inp is not None and not (callable(inp) or isinstance(inp, int | float | np.ndarray | np.number)):
        raise ChainError(f"chain {name!r}: input must be a callable, a numpy array or a float, got {inp!r}")
    if isinstance(inp, bool):
        raise ChainError(f"chain {name!r}: input must not be a bool")
    return input_shape


def _axis_of(axis: Any, name: str) -> str:
    if not isinstance(axis, str) or not axis.isidentifier() or axis != axis.lower() or len(axis) > 24:
        raise ChainError(
            f"chain {name!r}: axis must be a short lowercase word ({', '.join(COMMON_AXES)}, ...), got {axis!r}"
        )
    return axis


def _option(option: str, value: Any, name: str) -> Any:
    """``value`` under the rule of ``option`` (:data:`adprof.options.RULES`); None stays None."""
    if value is None:
        return None
    try:
        return options.check(option, value, f"chain {name!r}: ")
    except options.OptionError as exc:
        raise ChainError(str(exc)) from None


def _phases_of(phases: Any, name: str) -> tuple[str, ...]:
    if phases is None:
        return ()
    phases = (phases,) if isinstance(phases, str) else phases
    if not isinstance(phases, Sequence) or not all(isinstance(p, str) and p for p in phases):
        raise ChainError(f"chain {name!r}: cost_phases must be phase names, got {phases!r}")
    return tuple(phases)


def _dtype_of(dtype: Any, name: str) -> str:
    """A floating numpy dtype's name: the input is what the gradient is taken with respect to."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        raise ChainError(f"chain {name!r}: unknown dtype {dtype!r}") from None
    if dt.kind != "f":
        raise ChainError(
            f"chain {name!r}: dtype {dt.name} is not a floating-point type (the gradient is taken with respect "
            "to the input: use float64 or float32)"
        )
    return dt.name


def _check_reuse(reuse: Any, sweep: Mapping[str, Any], name: str) -> None:
    if isinstance(reuse, str):
        if reuse not in sweep:
            raise ChainError(f"chain {name!r}: reuse={reuse!r} names no sweep parameter")
        for value in sweep[reuse]:  # each variant's reuse is that parameter's value: the same rule
            if value is not None:
                _option("reuse", value, name)
    else:
        _option("reuse", reuse, name)


def _make_chain(fn: Callable[..., Any], **opts: Any) -> Chain:
    if not callable(fn):
        raise ChainSignatureError(f"@adprof.chain must decorate a function, got {fn!r}")
    given = opts.pop("name", None)
    if given is not None and (not isinstance(given, str) or not given.strip()):
        label = getattr(fn, "__name__", "chain")
        raise ChainError(f"chain {label!r}: name must be a non-empty string, got {given!r}")
    name = given or getattr(fn, "__name__", None) or "chain"
    sweep = _sweep_of(opts.pop("sweep", None) or {}, name)
    _check_signature(fn, name, list(sweep))
    declared = opts.get("depths") is not None or opts.get("max_depth") is not None
    bounded = opts.get("max_depth") is not None
    depths = _normalize_depths(opts.pop("depths", None), opts.pop("max_depth", None), name)
    modes, backend_modes = _modes_of(opts.pop("modes", None), name)
    axis = _axis_of(opts.pop("axis", DEFAULT_AXIS), name)
    adaptive = opts.pop("adaptive", True)
    if not isinstance(adaptive, bool):
        raise ChainError(f"chain {name!r}: adaptive must be True or False, got {adaptive!r}")
    cap = _option("cap", opts.pop("cap", None), name)
    phases = _phases_of(opts.pop("cost_phases", None), name)
    repeats = _option("repeats", opts.pop("repeats", None), name)
    inp = opts.pop("input", None)
    input_shape = _input_of(opts.pop("input_shape", None), inp, name)
    dtype = _dtype_of(opts.pop("dtype", "float64"), name)
    reuse = opts.pop("reuse", None)
    _check_reuse(reuse, sweep, name)
    description = opts.pop("description", None)
    if description is None:
        description = _first_doc_line(fn)
    seed = _option("seed", opts.pop("seed", DEFAULT_SEED), name)
    if opts:
        raise ChainError(f"chain {name!r}: unknown option(s) {', '.join(sorted(opts))}")

    ch = Chain(
        name=name,
        fn=fn,
        input_shape=input_shape,
        input=inp,
        dtype=dtype,
        reuse=reuse,
        depths=depths,
        modes=modes,
        description=description,
        sweep=sweep,
        seed=int(seed),
        axis=axis,
        backend_modes=backend_modes,
        adaptive=adaptive,
        cap=cap,
        cost_phases=phases,
        repeats=repeats,
        declared_depths=declared,
        bounded=bounded,
    )
    try:
        setattr(fn, _CHAIN_ATTR, ch)
    except (AttributeError, TypeError):
        pass  # builtins and some callables refuse attributes; the returned Chain is enough
    return ch


def chain(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    input_shape: Sequence[int] | None = None,
    input: Callable[[], Any] | np.ndarray | float | None = None,
    dtype: str = "float64",
    reuse: float | str | None = None,
    depths: Sequence[int] | None = None,
    max_depth: int | None = None,
    modes: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
    description: str | None = None,
    sweep: Mapping[str, Sequence[Any]] | None = None,
    seed: int = DEFAULT_SEED,
    axis: str = DEFAULT_AXIS,
    adaptive: bool = True,
    cap: float | None = None,
    cost_phases: Sequence[str] | None = None,
    repeats: int | None = None,
) -> Any:
    """Mark ``fn(xp, x, depth[, sweep params])`` as a chain; returns a callable :class:`Chain`.

    Usable bare (``@chain``) or with options (``@chain(reuse=2)``). ``max_depth=N`` means depths
    ``1..N``; the default depths are :data:`DEFAULT_DEPTHS`. Without ``input``/``input_shape``
    the input is a 3x3 float64 matrix, uniform in [0.5, 1.0), seed 0. ``modes``: a tuple, or a dict
    backend -> modes (the chain runs on those backends only); ``axis``: what the depth counts;
    ``adaptive=False``: measure exactly ``depths``; ``cap``: seconds per phase unless ``--cap`` is given;
    ``cost_phases``: the phases to classify instead of the mode's; ``repeats``: exact repeats of each timed
    phase where one run per point is too noisy (compiles of a second on a loaded machine).
    """
    opts = dict(
        name=name,
        input_shape=input_shape,
        input=input,
        dtype=dtype,
        reuse=reuse,
        depths=depths,
        max_depth=max_depth,
        modes=modes,
        description=description,
        sweep=sweep,
        seed=seed,
        axis=axis,
        adaptive=adaptive,
        cap=cap,
        cost_phases=cost_phases,
        repeats=repeats,
    )
    if fn is not None:
        return _make_chain(fn, **opts)

    def decorate(f: Callable[..., Any]) -> Chain:
        return _make_chain(f, **opts)

    return decorate


def as_chain(obj: Any) -> Chain | None:
    """The Chain behind ``obj`` (a Chain, or a function decorated with ``@chain``), else None."""
    if isinstance(obj, Chain):
        return obj
    ch = getattr(obj, _CHAIN_ATTR, None)
    return ch if isinstance(ch, Chain) else None
