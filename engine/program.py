"""Flat SSA programs: what compile produces, what AD transforms, what the runtime prepares.

A :class:`Program` is a list of equations over numbered variables, with positional inputs,
bound constants (``bindings``) and outputs. :class:`ProgramBuilder` emits equations; its
variables (:class:`Var`) are tensors, so the AD rules in ``ops`` emit derivative equations by
calling the same op functions as user code.
"""

from __future__ import annotations

import hashlib
from operator import attrgetter

import numpy as np

from .counters import COUNTERS
from .errors import ShapeError
from .ops import IMPL_RULES, SHAPE_RULES, Aval, Primitive
from .tensor import Tensor

_aval_of = attrgetter("aval")
_idx_of = attrgetter("idx")


class Var(Tensor):
    """A program variable while a program is being built."""

    __slots__ = ("idx", "aval", "builder")

    def __init__(self, idx: int, aval: Aval, builder: ProgramBuilder) -> None:
        self.idx = idx
        self.aval = aval
        self.builder = builder

    def _bind(self, prim: Primitive, args, params):
        return self.builder.bind(prim, args, params)

    def _constant(self, array: np.ndarray):
        return self.builder.add_binding(array)

    def __repr__(self) -> str:
        return f"v{self.idx}:{self.aval}"


class Eqn:
    """``outs = prim(*ins, **params)`` over variable indices."""

    __slots__ = ("prim", "params", "ins", "outs")

    def __init__(self, prim: Primitive, params: dict, ins: tuple, outs: tuple) -> None:
        self.prim = prim
        self.params = params
        self.ins = ins
        self.outs = outs


class Program:
    """A frozen flat program. ``prepare()`` returns a fast callable ``f(*inputs) -> [outputs]``."""

    def __init__(self, avals, inputs, bindings, eqns, outputs) -> None:
        self.avals: list[Aval] = avals
        self.inputs: list[int] = inputs
        self.bindings: list[tuple[int, np.ndarray]] = bindings
        self.eqns: list[Eqn] = eqns
        self.outputs: list[int] = outputs
        self._fingerprint: bytes | None = None
        self.tags: list | None = None  # per variable: what it stands for (e.g. the traced tensor)
        self.live_eqns: int | None = None  # equations the outputs need, when known (see live_eqn_count)

    @property
    def op_count(self) -> int:
        return len(self.eqns)

    @property
    def input_avals(self) -> list[Aval]:
        return [self.avals[i] for i in self.inputs]

    @property
    def output_avals(self) -> list[Aval]:
        return [self.avals[i] for i in self.outputs]

    @property
    def fingerprint(self) -> bytes:
        """Semantic fingerprint: a canonical positional encoding (ops, params, shapes), hashed."""
        if self._fingerprint is None:
            self._fingerprint = semantic_fingerprint(self)
        return self._fingerprint

    def prepare(self) -> Prepared:
        """Bind kernels once; the result runs many times with little per-op overhead."""
        return Prepared(self)

    def __call__(self, *arrays):
        return self.prepare()(*arrays)

    def __str__(self) -> str:
        return format_program(self)

    def __repr__(self) -> str:
        return (
            f"Program(inputs={len(self.inputs)}, bindings={len(self.bindings)}, ops={len(self.eqns)}, "
            f"outputs={len(self.outputs)}, fingerprint={self.fingerprint.hex()[:16]})"
        )


def semantic_fingerprint(program: Program) -> bytes:
    """Hash of a canonical positional encoding: every variable's abstract value, the inputs, the bound
    variables, each equation's primitive, sorted parameters, operands and results, and the outputs.

    Built as one tuple whose ``repr`` is hashed (each distinct abstract value spelled once), not as a
    line of text per equation: the same information at a fraction of the cost.
    """
    aval_codes: dict[Aval, int] = {}
    codes = [aval_codes.setdefault(a, len(aval_codes)) for a in program.avals]
    eqns = [(e.prim.name, tuple(sorted(e.params.items())) if e.params else (), e.ins, e.outs) for e in program.eqns]
    bound = [v for v, _ in program.bindings]
    encoding = ([str(a) for a in aval_codes], codes, program.inputs, bound, eqns, program.outputs)
    return hashlib.blake2b(repr(encoding).encode(), digest_size=16).digest()


def format_program(program: Program) -> str:
    def name(v):
        return f"v{v}"

    lines = [f"program ({len(program.eqns)} ops)"]
    lines += [f"  in  {name(v)}: {program.avals[v]}" for v in program.inputs]
    lines += [f"  const {name(v)}: {program.avals[v]}" for v, _ in program.bindings]
    for e in program.eqns:
        params = ", ".join(f"{k}={v}" for k, v in e.params.items())
        outs = ", ".join(f"{name(o)}: {program.avals[o]}" for o in e.outs)
        ins = ", ".join(name(i) for i in e.ins)
        lines.append(f"  {outs} = {e.prim.name}({ins}{', ' if params and ins else ''}{params})")
    lines.append(f"  out {', '.join(name(v) for v in program.outputs)}")
    return "\n".join(lines)


def _kernel(eqn: Eqn):
    impl = IMPL_RULES[eqn.prim]
    if not eqn.params:
        return impl
    params = eqn.params

    def kernel(*arrays):
        return impl(*arrays, **params)

    kernel.__name__ = f"kernel_{eqn.prim.name}"
    return kernel


def live_eqn_count(program: Program) -> int:
    """Equations the outputs need (what dead-code elimination would keep)."""
    if program.live_eqns is not None:  # known from the build that eliminated dead code
        return program.live_eqns
    live = set(program.outputs)
    count = 0
    for e in reversed(program.eqns):
        if not live.isdisjoint(e.outs):
            count += 1
            live.update(e.ins)
    return count


def prune_inputs(program: Program) -> tuple[Program, list[int]]:
    """Drop inputs no equation or output uses; returns the program and the kept input positions."""
    used = set(program.outputs)
    for e in program.eqns:
        used.update(e.ins)
    kept = [i for i, v in enumerate(program.inputs) if v in used]
    pruned = Program(program.avals, [program.inputs[i] for i in kept], program.bindings, program.eqns, program.outputs)
    pruned.tags = program.tags
    pruned.live_eqns = program.live_eqns
    return pruned, kept


#: Primitives whose operands may be swapped without changing a bit of the result.
COMMUTATIVE = frozenset({"add", "mul"})


def execution_plan(program: Program) -> tuple[list[Eqn], list[int]]:
    """The equations a prepared program runs, and its outputs, after exact simplifications.

    The program itself stays as compiled (its op count and fingerprint are the contract); only the
    execution skips work whose result is already at hand, bit for bit: a product with a broadcast
    constant one (the seed of a gradient), an equation identical to an earlier one (also with the
    operands of ``add``/``mul`` swapped, as transforms emit ``ct*y`` and ``y*ct``), and anything
    the outputs no longer need.
    """
    alias: dict[int, int] = {}
    resolve = alias.get
    ones: set[int] = set()
    for v, array in program.bindings:
        if array.size <= 16 and array.dtype.kind == "f" and np.all(array == 1):
            ones.add(v)
    seen: dict = {}
    kept: list[Eqn] = []
    avals = program.avals
    for e in program.eqns:
        ins = tuple(map(resolve, e.ins, e.ins)) if alias else e.ins
        name = e.prim.name
        if name == "broadcast_in_dim" and ins[0] in ones:
            ones.add(e.outs[0])
        if name == "mul" and (ins[0] in ones or ins[1] in ones):
            other = ins[1] if ins[0] in ones else ins[0]
            if avals[other] == avals[e.outs[0]]:
                alias[e.outs[0]] = other
                continue
        key = (e.prim, tuple(e.params.items()) if e.params else (), tuple(sorted(ins)) if name in COMMUTATIVE else ins)
        earlier = seen.get(key)
        if earlier is not None:
            for o, prev in zip(e.outs, earlier, strict=True):
                alias[o] = prev
            continue
        seen[key] = e.outs
        kept.append(e if ins == e.ins else Eqn(e.prim, e.params, ins, e.outs))
    outputs = [alias.get(o, o) for o in program.outputs]
    live = set(outputs)
    needed: list[Eqn] = []
    for e in reversed(kept):
        if not live.isdisjoint(e.outs):
            needed.append(e)
            live.update(e.ins)
    return needed[::-1], outputs


#: Intermediates from this size on are freed right after their last use, and a dead one may take the
#: result of an elementwise kernel in place (as numpy's temporary elision does in hand-written
#: expressions); a smaller one is freed when a later result takes its local name.
LARGE_BYTES = 1 << 16


def _fresh_elementwise(e: Eqn) -> bool:
    """Whether ``e``'s kernel is an elementwise numpy ufunc (not a generalized one such as matmul)
    called without parameters: it returns a new array and takes an ``out=`` buffer of the result's
    shape and dtype, even one of its operands."""
    impl = IMPL_RULES[e.prim]
    return not e.params and isinstance(impl, np.ufunc) and impl.signature is None


def _nbytes(aval: Aval) -> int:
    size = aval.dtype.itemsize
    for d in aval.shape:
        size *= d
    return size


class StoragePlan:
    """Where a prepared program keeps its values: local slots reused once a value is dead (rebinding
    a local frees the value it held, so no ``del`` statements are needed), ``del`` right after the
    last use of a large value, and ``out=`` buffers taken over from dead large operands.

    A buffer is written only when a ufunc made it and only ufuncs read it (so no view of it exists),
    the writing equation is a ufunc, it is the buffer's last use, shape and dtype match, and (checked
    when the program runs) every operand is C-contiguous. Program inputs, bindings and outputs are
    never written, freed or renamed.
    """

    def __init__(self, program: Program, eqns: list[Eqn], outputs: list[int]) -> None:
        avals = program.avals
        fixed = set(outputs) | set(program.inputs) | {v for v, _ in program.bindings}
        nbytes: dict[Aval, int] = {}
        for a in avals:
            if a not in nbytes:
                nbytes[a] = _nbytes(a)
        big = {a for a, b in nbytes.items() if b >= LARGE_BYTES}
        self.large = {v for v, a in enumerate(avals) if a in big} if big else set()
        last_use: dict[int, int] = {}
        for n, e in enumerate(eqns):
            for i in e.ins:
                last_use[i] = n
        dying_at: list[list[int]] = [[] for _ in eqns]  # equation -> operands read for the last time
        for v, n in last_use.items():
            if v not in fixed:
                dying_at[n].append(v)
        for n, e in enumerate(eqns):  # results never read die where they are made
            for o in e.outs:
                if o not in last_use and o not in fixed:
                    dying_at[n].append(o)
        self.slot: dict[int, int] = {}  # variable -> local slot
        for v in [*program.inputs, *(v for v, _ in program.bindings)]:
            self.slot[v] = len(self.slot)
        self.n_slots = len(self.slot)
        self.free: list[int] = []  # slots whose value is dead
        self.inplace: dict[int, int] = {}  # equation -> operand variable whose buffer takes the result
        self.dead_after: dict[int, list[int]] = {}  # equation -> large variables freed after it
        owned = self._owned(eqns) if self.large else set()
        for n, e in enumerate(eqns):
            self._assign(n, e, dying_at[n], owned, avals)

    def _owned(self, eqns: list[Eqn]) -> set[int]:
        """Large variables whose buffer a ufunc made and only ufuncs read."""
        fresh = [_fresh_elementwise(e) for e in eqns]
        made = {e.outs[0] for e, f in zip(eqns, fresh, strict=True) if f and e.outs[0] in self.large}
        for e, f in zip(eqns, fresh, strict=True):
            if not f:
                made.difference_update(e.ins)
        self.fresh = fresh
        return made

    def _assign(self, n: int, e: Eqn, dying: list[int], owned: set[int], avals: list[Aval]) -> None:
        """Give equation ``n``'s results slots: the first one an operand's that dies here (its buffer
        too, for a ufunc over a large one), the others free or new ones; free the rest that die."""
        slot, large, outs = self.slot, self.large, e.outs
        taken = None
        if owned and len(outs) == 1 and self.fresh[n]:
            out_aval = avals[outs[0]]
            for i in dying:
                if i in owned and i not in outs and avals[i] == out_aval:
                    taken = self.inplace[n] = i
                    break
        if taken is None:
            for i in dying:
                if i not in large and i not in outs:
                    taken = i
                    break
        for k, o in enumerate(outs):
            if k == 0 and taken is not None:
                slot[o] = slot[taken]
            elif self.free:
                slot[o] = self.free.pop()
            else:
                slot[o] = self.n_slots
                self.n_slots += 1
        for i in dying:
            if i != taken:
                self.free.append(slot[i])
                if i in large:
                    self.dead_after.setdefault(n, []).append(i)


class Prepared:
    """A program compiled to straight-line Python source over bound numpy kernels."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.input_avals = program.input_avals
        eqns, outputs = execution_plan(program)
        plan = StoragePlan(program, eqns, outputs)
        local = {v: f"v{s}" for v, s in plan.slot.items()}
        ns: dict = {"np": np}
        body = []
        for v, array in program.bindings:
            ns[f"c{v}"] = array
            body.append(f"    {local[v]} = c{v}")
        kernel_names: dict[int, str] = {}  # id(kernel) -> its global: one per distinct kernel
        for n, e in enumerate(eqns):
            kernel = _kernel(e)
            name = kernel_names.get(id(kernel))
            if name is None:
                name = kernel_names[id(kernel)] = f"k{len(kernel_names)}"
                ns[name] = kernel
            args = ", ".join([local[i] for i in e.ins])
            if n in plan.inplace:
                # a fresh result of C-contiguous operands is C-contiguous: only then is the buffer's
                # layout the one numpy would pick, which later reductions' summation order depends on
                contiguous = " and ".join([f"{local[i]}.flags.c_contiguous" for i in dict.fromkeys(e.ins)])
                call = f"{name}({args}, out={local[plan.inplace[n]]}) if {contiguous} else {name}({args})"
                body.append(f"    {local[e.outs[0]]} = {call}")
            elif len(e.outs) == 1:
                body.append(f"    {local[e.outs[0]]} = {name}({args})")
            else:
                body.append(f"    {', '.join([local[o] for o in e.outs])}, = {name}({args})")
            if n in plan.dead_after:
                body.append(f"    del {', '.join([local[v] for v in plan.dead_after[n]])}")
        ins = ", ".join([local[i] for i in program.inputs])
        outs = ", ".join([local[o] for o in outputs])
        body.append(f"    return [{outs}]")
        src = f"def run_program({ins}):\n" + "\n".join(body) + "\n"
        exec(compile(src, f"<prepared program {program.fingerprint.hex()[:8]}>", "exec"), ns)
        self._run = ns.pop("run_program")  # popped: the function and its globals form no cycle
        self._nops = len(eqns)
        self.source = src

    def __call__(self, *arrays):
        if len(arrays) != len(self.input_avals):
            raise ShapeError(f"prepared program takes {len(self.input_avals)} inputs, got {len(arrays)}")
        args = []
        for a, aval in zip(arrays, self.input_avals, strict=True):
            a = np.asarray(a, dtype=aval.dtype)
            if a.shape != aval.shape:
                raise ShapeError(f"prepared program input has shape {list(a.shape)}, expected {list(aval.shape)}")
            args.append(a)
        COUNTERS.ops_executed += self._nops
        return self._run(*args)

    def run_unchecked(self, *arrays):
        """Run without input validation (callers that built the arrays themselves)."""
        COUNTERS.ops_executed += self._nops
        return self._run(*arrays)


class ProgramBuilder:
    """Emits equations; used by the AD transforms and the tracer of ``compile``."""

    def __init__(self) -> None:
        self.avals: list[Aval] = []
        self.inputs: list[int] = []
        self.bindings: list[tuple[int, np.ndarray]] = []
        self.eqns: list[Eqn] = []
        self.tags: dict[int, object] = {}  # var -> what it stands for (kept by build as Program.tags)

    def _new(self, aval: Aval) -> Var:
        self.avals.append(aval)
        return Var(len(self.avals) - 1, aval, self)

    def add_input(self, aval: Aval) -> Var:
        v = self._new(aval)
        self.inputs.append(v.idx)
        return v

    def add_binding(self, array: np.ndarray) -> Var:
        array = np.asarray(array)
        v = self._new(Aval(array.shape, array.dtype))
        self.bindings.append((v.idx, array))
        return v

    def bind(self, prim: Primitive, args, params):
        out_avals = SHAPE_RULES[prim](*map(_aval_of, args), **params)
        ins = tuple(map(_idx_of, args))
        if prim.nout == 1:
            avals = self.avals
            aval = out_avals[0]
            idx = len(avals)
            avals.append(aval)
            self.eqns.append(Eqn(prim, params, ins, (idx,)))
            return Var(idx, aval, self)
        outs = tuple([self._new(a) for a in out_avals])
        self.eqns.append(Eqn(prim, params, ins, tuple(map(_idx_of, outs))))
        return outs

    def build(self, outputs: list[Var], dce: bool = True, keep_prefix: int = 0) -> Program:
        """Freeze into a Program, dropping equations the outputs do not need, and renumbering.

        The first ``keep_prefix`` equations stay whether or not they are needed (the replayed
        forward of a ``v08`` derivative program, which upstream rebuilds in full).
        """
        eqns = self.eqns
        out_idx = [o.idx for o in outputs]
        if dce:
            live = set(out_idx)
            kept = []
            for n in range(len(eqns) - 1, -1, -1):
                e = eqns[n]
                if n < keep_prefix or not live.isdisjoint(e.outs):
                    kept.append(e)
                    live.update(e.ins)
            eqns = kept[::-1]
            bindings = [(v, a) for v, a in self.bindings if v in live]
        else:
            bindings = list(self.bindings)
        # renumber densely: inputs, bindings, then equation outputs in order
        remap: dict[int, int] = {}
        avals: list[Aval] = []
        src = self.avals
        for v in self.inputs:
            remap[v] = len(avals)
            avals.append(src[v])
        inputs = [remap[v] for v in self.inputs]
        new_bindings = []
        for v, a in bindings:
            remap[v] = len(avals)
            avals.append(src[v])
            new_bindings.append((remap[v], a))
        new_eqns = []
        renamed = remap.__getitem__
        for e in eqns:
            ins = tuple(map(renamed, e.ins))
            if len(e.outs) == 1:
                o = e.outs[0]
                outs = (len(avals),)
                remap[o] = outs[0]
                avals.append(src[o])
            else:
                outs = []
                for o in e.outs:
                    remap[o] = len(avals)
                    avals.append(src[o])
                    outs.append(remap[o])
                outs = tuple(outs)
            new_eqns.append(Eqn(e.prim, e.params, ins, outs))
        outputs_idx = [remap[v] for v in out_idx]
        program = Program(avals, inputs, new_bindings, new_eqns, outputs_idx)
        if dce and not keep_prefix:  # every equation kept is one the outputs need
            program.live_eqns = len(new_eqns)
        if self.tags:
            program.tags = [None] * len(avals)
            for v, tag in self.tags.items():
                if v in remap:
                    program.tags[remap[v]] = tag
        return program
