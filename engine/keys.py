"""Structural value keys, as in computegraph's ``ValueKey`` / ``OperationKey``.

A value's key is either an :class:`InputKey` (a leaf: placeholder or constant) or a
:class:`ValueKey` = (operation key, output slot), where an :class:`OpKey` holds the primitive, its
parameters and its input keys. The fingerprint is computed once at construction from the inputs'
cached fingerprints, so hashing is O(1).

Equality is where the profiles differ:

* ``v08``: structural. Identical objects are equal at once; otherwise primitive, parameters, slot
  and input keys are compared, descending through the inputs with an explicit stack and **no
  memo**. A DAG whose layers use the previous value ``b`` times is walked as a tree of ``b**depth``
  nodes. Two keys only take that path when they are equal in structure but not the same objects,
  which is what a derivative trace rebuilt with fresh keys produces (see ``ad``).
* ``fixed``: keys are hash-consed at construction (a weak intern table keyed by the inputs'
  unique ids), so structurally equal keys are one object and equality ends on the identity check.
"""

from __future__ import annotations

import itertools
import weakref
from operator import attrgetter

from . import profiles
from .counters import COUNTERS, CounterBudgetExceeded

_next_uid = itertools.count(1).__next__
_interning = False
# (primitive name, params, input uids) -> weak reference to the OpKey, and (op uid, slot) -> weak
# reference to the ValueKey; weak so that dead graphs free their keys (the callback drops the entry).
_op_interner: dict = {}
_value_interner: dict = {}


_uid_of = attrgetter("uid")
_fingerprint_of = attrgetter("fingerprint")


class _InternRef(weakref.ref):
    """A weak reference to an interned key that remembers its table entry (``weakref.KeyedRef``
    without its Python-level constructor: built in C, it costs a third as much)."""

    __slots__ = ("ident",)


def _forget_op(ref: _InternRef) -> None:
    if _op_interner.get(ref.ident) is ref:
        del _op_interner[ref.ident]


def _forget_value(ref: _InternRef) -> None:
    if _value_interner.get(ref.ident) is ref:
        del _value_interner[ref.ident]


def _on_profile(name: str) -> None:
    global _interning
    _interning = name == "fixed"


profiles.on_change(_on_profile)


class InputKey:
    """Key of a leaf value (placeholder, constant, variable, checkpoint leaf)."""

    __slots__ = ("uid", "fingerprint", "__weakref__")

    def __init__(self) -> None:
        self.uid = _next_uid()
        self.fingerprint = hash(("input", self.uid))

    def __hash__(self) -> int:
        return self.fingerprint

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is InputKey and other.uid == self.uid)

    def __repr__(self) -> str:
        return f"InputKey({self.uid})"


class OpKey:
    """Key of one operation: primitive, parameters (a hashable tuple) and input keys."""

    __slots__ = ("prim", "params", "inputs", "fingerprint", "uid", "__weakref__")

    def __init__(self, prim, params: tuple, inputs: tuple) -> None:
        self.prim = prim
        self.params = params
        self.inputs = inputs
        self.uid = _next_uid()
        self.fingerprint = hash((prim.name, params, tuple(map(_fingerprint_of, inputs))))

    def __hash__(self) -> int:
        return self.fingerprint

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not OpKey:
            return False
        return structural_key_eq(ValueKey(self, 0, _bare=True), ValueKey(other, 0, _bare=True))

    def __repr__(self) -> str:
        return f"OpKey({self.prim.name}, uid={self.uid})"


class ValueKey:
    """Key of output ``slot`` of operation ``op``."""

    __slots__ = ("op", "slot", "fingerprint", "uid", "__weakref__")

    def __init__(self, op: OpKey, slot: int, _bare: bool = False) -> None:
        self.op = op
        self.slot = slot
        self.fingerprint = hash((op.fingerprint, slot))
        self.uid = 0 if _bare else _next_uid()

    def __hash__(self) -> int:
        return self.fingerprint

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not ValueKey:
            return False
        return structural_key_eq(self, other)

    def __repr__(self) -> str:
        return f"ValueKey({self.op.prim.name}#{self.slot}, uid={self.uid})"


#: Visits between two budget checks inside one structural comparison.
BUDGET_CHECK_EVERY = 4096


def structural_key_eq(a, b) -> bool:
    """Compare two keys structurally, walking input keys with an explicit stack and no memo.

    Every pair popped counts one ``key_comparisons`` visit. Identity ends a branch at once (the
    ``Arc::ptr_eq`` shortcut); nothing remembers pairs already compared, so shared sub-DAGs are
    compared once per path, exactly as computegraph 0.1's ``PartialEq`` does.
    """
    stack = [(a, b)]
    pop, extend = stack.pop, stack.extend
    visits = 0
    equal = True
    # the budget is checked every BUDGET_CHECK_EVERY visits inside the walk (one comparison can
    # visit b**depth nodes), so a runaway comparison stops within that many visits of the budget
    budget = COUNTERS.budget
    check_at = BUDGET_CHECK_EVERY if budget is None else min(BUDGET_CHECK_EVERY, budget - COUNTERS.key_comparisons)
    while stack:
        x, y = pop()
        visits += 1
        if visits >= check_at:
            check_at = visits + BUDGET_CHECK_EVERY
            budget = COUNTERS.budget
            if budget is not None and COUNTERS.key_comparisons + visits > budget:
                COUNTERS.key_comparisons += visits
                raise CounterBudgetExceeded(f"key comparison budget exceeded ({COUNTERS.key_comparisons} visits)")
        if x is y:
            continue
        tx = type(x)
        if tx is not type(y):
            equal = False
            break
        if tx is InputKey:
            if x.uid != y.uid:
                equal = False
                break
            continue
        if x.slot != y.slot:
            equal = False
            break
        ox, oy = x.op, y.op
        if ox is oy:
            continue
        if ox.fingerprint != oy.fingerprint or ox.prim is not oy.prim or ox.params != oy.params:
            equal = False
            break
        xi, yi = ox.inputs, oy.inputs
        if len(xi) != len(yi):
            equal = False
            break
        extend(zip(xi, yi, strict=True))
    COUNTERS.key_comparisons += visits
    if COUNTERS.budget is not None and COUNTERS.key_comparisons > COUNTERS.budget:
        raise CounterBudgetExceeded(f"key comparison budget exceeded ({COUNTERS.key_comparisons} visits)")
    return equal


def op_key(prim, params: tuple, inputs: tuple) -> OpKey:
    """Make (``v08``) or find (``fixed``: hash-consed) the key of an operation."""
    if _interning:
        ident = (prim.name, params, tuple(map(_uid_of, inputs)))
        ref = _op_interner.get(ident)
        key = None if ref is None else ref()
        if key is None:
            key = OpKey(prim, params, inputs)
            ref = _op_interner[ident] = _InternRef(key, _forget_op)
            ref.ident = ident
        return key
    return OpKey(prim, params, inputs)


def value_key(op: OpKey, slot: int) -> ValueKey:
    """Make (``v08``) or find (``fixed``) the key of output ``slot`` of ``op``."""
    if _interning:
        ident = (op.uid, slot)
        ref = _value_interner.get(ident)
        key = None if ref is None else ref()
        if key is None:
            key = ValueKey(op, slot)
            ref = _value_interner[ident] = _InternRef(key, _forget_value)
            ref.ident = ident
        return key
    return ValueKey(op, slot)


def tree_size(key) -> int:
    """Nodes of ``key``'s DAG unfolded as a tree (what a no-memo comparison visits), in linear time."""
    # Iterative post-order over the DAG, memoizing by identity: paths(k) = 1 + sum paths(inputs).
    memo: dict[int, int] = {}
    stack = [(key, False)]
    while stack:
        k, done = stack.pop()
        kid = id(k)
        if kid in memo:
            continue
        if type(k) is InputKey:
            memo[kid] = 1
            continue
        if done:
            memo[kid] = 1 + sum(memo[id(i)] for i in k.op.inputs)
            continue
        stack.append((k, True))
        stack.extend((i, False) for i in k.op.inputs if id(i) not in memo)
    return memo[id(key)]
