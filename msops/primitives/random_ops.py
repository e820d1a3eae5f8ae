"""Random primitives: UniformReal, StandardNormal, UniformInt (`Op(seed, seed2)(shape, ...)`).

Every draw is counter-based (msops.common.counter_rng): element i of the output (its flat
index in the whole tensor) depends only on the key, the call's counter and i. The key mixes
the global seed (`set_seed`, 0 until set) with the op's (seed, seed2); the counter
(`next_draw`) advances once per call and restarts at `set_seed`. So a call gives the same
values eagerly and compiled, and a rank holding a slice of the output (a strategy on the
shape's dims, as MindSpore's UniformReal takes) draws exactly the serial values there.
MindSpore instead offsets each rank's seed, so its sharded draw differs from the serial one.

The shape is input 0, a const tuple; there is no gradient (the outputs do not depend on
any differentiable input). The functional forms' ops (internal, not exported) are the same
ops with a `dtype` attribute (`UniformRealOf`, ...) and `RandpermDraw` (ops.randperm).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.counter_rng import splitmix64, uniform_at
from msops.common.initializer import get_seed, next_draw
from msops.common.tensor import contiguous
from msops.primitives.array_ops import check_int_sequence
from msops.primitives.elementwise_ops import no_gradient_bprop
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import per_element
from msops.primitives.rules import batch_rule, bprop, expansion_rule, sharding_rule
from msops.primitives.sharding import DimSpec, ShardedCall, dims

__all__ = ["UniformReal", "StandardNormal", "UniformInt"]

#: significand bits (with the implicit one) of each float dtype: a uniform draw is rounded
#: down to that many bits, so it is exact in the dtype and never rounds up to 1.0
_BITS = {"Float16": 11, "BFloat16": 8, "Float32": 24, "Float64": 53}


def random_key(seed: int, seed2: int) -> int:
    """One 64-bit key from the global seed and the op's (seed, seed2)."""
    words = np.array([get_seed(), seed, seed2], np.uint64)
    key = np.uint64(0)
    with np.errstate(over="ignore"):
        for w in words:
            key = splitmix64(np.array([key ^ w], np.uint64))[0]
    return int(key)


def flat_index(shape: tuple, window: tuple | None) -> np.ndarray:
    """The global flat indices of the block `window` = (global shape, starts) of that
    shape's tensor (the whole tensor when None), laid out as the block."""
    if window is None:
        return np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    whole, starts = window
    grids = np.ix_(*[np.arange(b, b + n) for b, n in zip(starts, shape)])
    return np.ravel_multi_index(grids, whole) if shape else np.zeros((), np.int64)


class _RandomOp(PrimitiveWithInfer):
    """The family base: (seed, seed2) attributes, the shape input and per-element draws.

    `window` (None, or (global shape, starts)) is set only on the local op of a sharded
    call: its kernel draws the values of that block of the global output."""

    draws_random = True
    const_inputs = (0,)
    #: input 0 is the output shape; a strategy's first entry splits it like a tensor of it
    shape_input = True
    window: tuple | None = None

    @prim_attr_register
    def __init__(self, seed: int = 0, seed2: int = 0) -> None:
        validator.check_non_negative_int(seed, "seed", self.name)
        validator.check_non_negative_int(seed2, "seed2", self.name)

    def _shape(self, shape: Any) -> list:
        shp = check_int_sequence(self.name, "shape", shape)
        if any(n <= 0 for n in shp):
            raise ValueError(f"For '{self.name}', the 'shape' should have positive elements, "
                             f"but got {tuple(shape)}.")
        return shp

    def uniform(self, shape: Any, bits: int = 53, window: tuple | None = None) -> np.ndarray:
        """This call's uniform [0, 1) float64 draws, multiples of 2**-bits, one per element
        of `shape` (the block `window` of a global tensor; this op's own when None);
        advances the counter."""
        index = flat_index(tuple(shape), self.window if window is None else window)
        u = uniform_at(random_key(self.seed, self.seed2), next_draw(), index)
        return np.floor(u * 2.0 ** bits) * 2.0 ** -bits

    def local(self, whole: tuple, starts: tuple) -> "_RandomOp":
        """This op drawing only the block of the global output `whole` at `starts`."""
        part = type(self)(**self.init_attrs)
        part.window = (tuple(whole), tuple(starts))
        return part


class UniformReal(_RandomOp):
    """`UniformReal(seed=0, seed2=0)(shape)`: float32 values uniform in [0, 1).

    >>> UniformReal(seed=2)((2, 3)).shape
    (2, 3)
    """

    def infer_shape(self, shape: Any) -> list:
        return self._shape(shape)

    def infer_dtype(self, shape: Any) -> mstype.Type:
        return self.out_dtype()

    def kernel(self, shape: Any) -> np.ndarray:
        t = self.out_dtype()
        return contiguous(self.uniform(shape, _BITS[t.name]).astype(t.np_dtype))

    def out_dtype(self) -> mstype.Type:
        return mstype.float32


class StandardNormal(_RandomOp):
    """`StandardNormal(seed=0, seed2=0)(shape)`: float32 values of the standard normal
    distribution (element i: Box-Muller of the uniform draws at 2i and 2i + 1)."""

    def infer_shape(self, shape: Any) -> list:
        return self._shape(shape)

    def infer_dtype(self, shape: Any) -> mstype.Type:
        return self.out_dtype()

    def kernel(self, shape: Any) -> np.ndarray:
        return contiguous(normal_draws(self, shape).astype(self.out_dtype().np_dtype))

    def out_dtype(self) -> mstype.Type:
        return mstype.float32


def normal_draws(op: _RandomOp, shape: Any) -> np.ndarray:
    """Standard normal float64 draws of `op`'s call, Box-Muller of one uniform pair per
    element: element i's pair sits at 2i, 2i + 1 of the tensor with its last dim doubled,
    so a block's pairs are that tensor's block with its last start and size doubled."""
    shape = tuple(shape)
    if not shape:
        return normal_draws(op, (1,)).reshape(())
    whole, starts = op.window or (shape, (0,) * len(shape))
    double = (whole[:-1] + (2 * whole[-1],), starts[:-1] + (2 * starts[-1],))
    u = op.uniform(shape[:-1] + (2 * shape[-1],), window=double)
    return np.sqrt(-2.0 * np.log1p(-u[..., 0::2])) * np.cos(2.0 * np.pi * u[..., 1::2])


class UniformInt(_RandomOp):
    """`UniformInt(seed=0, seed2=0)(shape, minval, maxval)`: int32 values uniform in
    [minval, maxval) (minval, maxval: 0-d int32 Tensors, minval < maxval)."""

    bound_types: tuple = (mstype.int32,)

    def infer_shape(self, shape: Any, minval: list, maxval: list) -> list:
        for arg, s in (("minval", minval), ("maxval", maxval)):
            if list(s):
                raise ValueError(f"For '{self.name}', the '{arg}' should be a 0-d Tensor, but "
                                 f"got shape {list(s)}.")
        return self._shape(shape)

    def infer_dtype(self, shape: Any, minval: mstype.Type, maxval: mstype.Type) -> mstype.Type:
        validator.check_tensor_dtype_valid("minval", minval, self.bound_types, self.name)
        validator.check_tensor_dtype_valid("maxval", maxval, self.bound_types, self.name)
        return self.out_dtype()

    def kernel(self, shape: Any, minval: np.ndarray, maxval: np.ndarray) -> np.ndarray:
        low, high = int(minval), int(maxval)
        if low >= high:
            raise ValueError(f"For '{self.name}', the 'minval' should be < 'maxval', but got "
                             f"minval {low} and maxval {high}.")
        steps = np.floor(self.uniform(shape) * (high - low)).astype(np.int64)
        # (high - low) beyond 2**53 is not exact in float64: never step past the last value
        out = low + np.minimum(steps, high - low - 1)
        return contiguous(out.astype(self.out_dtype().np_dtype))

    def out_dtype(self) -> mstype.Type:
        return mstype.int32


class _OfDtype:
    """A functional form's draw in its `dtype` (MindSpore's primitives give float32 or
    int32 only): the family's op with a dtype attribute. Internal; not exported."""

    valid_dtypes: tuple = ()

    @prim_attr_register
    def __init__(self, seed: int = 0, seed2: int = 0, dtype: mstype.Type = None) -> None:
        _RandomOp.__init__(self, seed, seed2)
        validator.check_type_name("dtype", dtype, self.valid_dtypes, self.name)

    def out_dtype(self) -> mstype.Type:
        return self.dtype


class UniformRealOf(_OfDtype, UniformReal):
    """UniformReal in a float `dtype` (rand, rand_like, uniform)."""

    valid_dtypes = mstype.float_type


class StandardNormalOf(_OfDtype, StandardNormal):
    """StandardNormal in a float `dtype` (randn, randn_like)."""

    valid_dtypes = mstype.float_type


class UniformIntOf(_OfDtype, UniformInt):
    """UniformInt in an int `dtype`, its bounds of any int dtype (randint, randint_like)."""

    valid_dtypes = mstype.int_type
    bound_types = mstype.int_type


#: randperm's dtypes (MindSpore's list)
_PERM_TYPES = mstype.int_type + (mstype.uint8, mstype.float16, mstype.float32, mstype.float64)


class RandpermDraw(_RandomOp):
    """`RandpermDraw(seed=0, seed2=0, dtype=int64)(n)`: a random permutation of 0 .. n-1 (the
    order that sorts n counter-based draws, ties by index), in `dtype`: `ops.randperm`'s op
    (seed2 is its offset). Internal; not exported. A permutation needs every draw, so its
    output is never split (each rank draws the whole, alike)."""

    shape_input = False

    @prim_attr_register
    def __init__(self, seed: int = 0, seed2: int = 0, dtype: mstype.Type = mstype.int64) -> None:
        _RandomOp.__init__(self, seed, seed2)
        validator.check_type_name("dtype", dtype, _PERM_TYPES, self.name)

    def infer_shape(self, n: Any) -> list:
        validator.check_value_type("n", n, int, self.name)
        largest = (2 ** 11 if self.dtype == mstype.float16 else
                   2 ** 24 if self.dtype == mstype.float32 else
                   2 ** 53 if self.dtype == mstype.float64 else
                   int(np.iinfo(self.dtype.np_dtype).max))
        if not 0 < n <= largest + 1:
            raise ValueError(f"For '{self.name}', the 'n' should be in [1, {largest + 1}] (n - 1 "
                             f"exact in {self.dtype}), but got {n}.")
        return [n]

    def infer_dtype(self, n: Any) -> mstype.Type:
        return self.dtype

    def kernel(self, n: int) -> np.ndarray:
        order = np.argsort(self.uniform((n,)), kind="stable")
        return contiguous(order.astype(self.dtype.np_dtype))


@sharding_rule(RandpermDraw)
def randperm_spec(prim: RandpermDraw, ins: list, outs: list, consts: dict) -> DimSpec:
    """No tensor input, so no strategy splits the output: every rank holds it whole."""
    return DimSpec((), (dims(1),))


@sharding_rule(UniformReal, StandardNormal, UniformInt)
def random_spec(prim: _RandomOp, ins: list, outs: list, consts: dict) -> DimSpec:
    """The shape (input 0, split like a tensor of that shape) and the output share their
    letters; minval/maxval are 0-d. Every dim may be split: a rank draws its own block."""
    letters = dims(len(outs[0]))
    return DimSpec((letters,) + tuple((None,) * len(s) for s in ins[1:]), (letters,))


@expansion_rule(UniformReal, StandardNormal, UniformInt)
def random_split(prim: _RandomOp, call: ShardedCall) -> Any:
    """A split output: this rank's op draws the block of the global output at its slice's
    start, from a local shape (None when nothing is split: the op itself)."""
    whole, local = tuple(call.consts[0]), tuple(call.out_shapes[0])
    if whole == local:
        return None
    part = prim.local(whole, call.out_start(0))
    return call.apply(part, call.args({0: local}))


bprop(_RandomOp)(no_gradient_bprop)


@batch_rule(UniformReal, StandardNormal, UniformInt)
def random_batch(prim: _RandomOp, args: list, dims: list, size: int) -> tuple:
    """One draw of (size,) + the element's shape: every element gets its own numbers (the
    same draw mapped would repeat them). Batched bounds: per element, each a new draw."""
    if any(d is not None for d in dims[1:]):
        return per_element(prim, args, dims, size)
    return prim((size,) + tuple(args[0]), *args[1:]), 0
