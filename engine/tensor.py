"""``Tensor``: Python operators on engine tensors, spelled with ``engine.numpy`` (broadcasting,
Python scalars, numpy arrays). It sits above that namespace, which is built on the primitives of
``engine.ops``, and below the tensor types (program, traced and eager tensors) that derive from it."""

from __future__ import annotations

from . import numpy as xnp
from .ops import TensorBase, neg, transpose


class Tensor(TensorBase):
    """A tensor with operators: the base of traced, eager and program tensors."""

    __slots__ = ()
    __array_priority__ = 1000  # numpy arrays on the left defer to our operators

    def __add__(self, other):
        return xnp.add(self, other)

    def __radd__(self, other):
        return xnp.add(other, self)

    def __sub__(self, other):
        return xnp.subtract(self, other)

    def __rsub__(self, other):
        return xnp.subtract(other, self)

    def __mul__(self, other):
        return xnp.multiply(self, other)

    def __rmul__(self, other):
        return xnp.multiply(other, self)

    def __truediv__(self, other):
        return xnp.divide(self, other)

    def __rtruediv__(self, other):
        return xnp.divide(other, self)

    def __pow__(self, other):
        return xnp.pow(self, other)

    def __neg__(self):
        return neg(self)

    def __pos__(self):
        return self

    def __matmul__(self, other):
        return xnp.matmul(self, other)

    def __rmatmul__(self, other):
        return xnp.matmul(other, self)

    def __lt__(self, other):
        return xnp.less(self, other)

    def __le__(self, other):
        return xnp.less_equal(self, other)

    def __gt__(self, other):
        return xnp.greater(self, other)

    def __ge__(self, other):
        return xnp.greater_equal(self, other)

    __hash__ = object.__hash__

    @property
    def T(self):
        return transpose(self, tuple(reversed(range(self.ndim))))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], tuple | list):
            shape = tuple(shape[0])
        return xnp.reshape(self, shape)

    def sum(self, axis=None):
        return xnp.sum(self, axis=axis)
