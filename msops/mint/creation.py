"""`mindspore.mint`'s tensor creation and random draws with PyTorch's arguments over
msops.ops' creation and random functional forms. Random draws come from msops's seeded
counter RNG (ms.set_seed), so they are the same eagerly, compiled and sharded."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops import ops
from msops.common import dtype as mstype
from msops.common.tensor import Tensor
from msops.mint._args import check_no_generator
from msops.ops import arange, eye, full, full_like  # noqa: F401  (mint's signatures already)

__all__ = ["zeros", "ones", "full", "arange", "linspace", "eye", "zeros_like", "ones_like",
           "full_like", "empty", "rand", "randn", "randint", "randperm", "normal"]


def _size(size: tuple) -> Any:
    """`f(2, 3)` and `f((2, 3))` name the same shape."""
    return size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size


def zeros(*size: Any, dtype: mstype.Type | None = None) -> Tensor:
    """Zeros of shape `size` (ints or one tuple), float32 unless `dtype` (`ops.zeros`)."""
    return ops.zeros(tuple(_size(size)), dtype)


def ones(*size: Any, dtype: mstype.Type | None = None) -> Tensor:
    """Ones of shape `size`, float32 unless `dtype` (`ops.ones`)."""
    return ops.ones(tuple(_size(size)), dtype)


def empty(*size: Any, dtype: mstype.Type | None = None, device: Any = None) -> Tensor:
    """A Tensor of shape `size` whose values are not to be relied on: msops has no
    uninitialised memory to hand out, so they are zeros. `device` is accepted and ignored."""
    return zeros(*size, dtype=dtype)


def linspace(start: Any, end: Any, steps: int, *, dtype: mstype.Type | None = None) -> Tensor:
    """`steps` values evenly spaced over [start, end] (`ops.linspace`), cast to `dtype`."""
    out = ops.linspace(start, end, steps)
    return out if dtype is None else ops.cast(out, dtype)


def zeros_like(input: Any, *, dtype: mstype.Type | None = None) -> Any:
    """Zeros of input's shape, of its dtype unless `dtype` (`ops.zeros_like`)."""
    return ops.zeros_like(input, dtype)


def ones_like(input: Any, *, dtype: mstype.Type | None = None) -> Any:
    """Ones of input's shape, of its dtype unless `dtype` (`ops.ones_like`)."""
    return ops.ones_like(input, dtype)


def rand(*size: Any, generator: Any = None, dtype: mstype.Type | None = None) -> Tensor:
    """Values uniform in [0, 1) of shape `size` (`ops.rand`)."""
    check_no_generator("rand", generator)
    return ops.rand(*size, dtype=dtype)


def randn(*size: Any, generator: Any = None, dtype: mstype.Type | None = None) -> Tensor:
    """Standard normal values of shape `size` (`ops.randn`)."""
    check_no_generator("randn", generator)
    return ops.randn(*size, dtype=dtype)


def randint(*args: Any, generator: Any = None, dtype: mstype.Type | None = None) -> Tensor:
    """`randint(high, size)` or `randint(low, high, size)`: integers uniform in [low, high)
    (low 0 by default), int64 unless `dtype` (`ops.randint`)."""
    check_no_generator("randint", generator)
    if len(args) not in (2, 3):
        raise TypeError(f"For 'mint.randint', the arguments should be (high, size) or (low, "
                        f"high, size), but got {len(args)} positional arguments.")
    low, high, size = (0,) + args if len(args) == 2 else args
    return ops.randint(low, high, tuple(size) if isinstance(size, list) else size, dtype=dtype)


def randperm(n: int, *, generator: Any = None, dtype: mstype.Type = mstype.int64) -> Tensor:
    """A random permutation of 0 .. n - 1 (`ops.randperm`)."""
    check_no_generator("randperm", generator)
    return ops.randperm(n, dtype=dtype)


def normal(mean: Any = 0.0, std: Any = 1.0, size: Any = None, generator: Any = None) -> Tensor:
    """mean + std * N(0, 1) draws: of shape `size` when given, else of the broadcast shape of
    mean and std (Tensors or numbers)."""
    check_no_generator("normal", generator)
    if size is None:
        shapes = [tuple(v.shape) for v in (mean, std) if isinstance(v, Tensor)]
        if not shapes:
            raise TypeError("For 'mint.normal', the 'size' should be given when 'mean' and "
                            "'std' are both numbers, but got None.")
        try:
            size = np.broadcast_shapes(*shapes)
        except ValueError:
            raise ValueError(f"For 'mint.normal', the shapes of 'mean' and 'std' should "
                             f"broadcast, but got {shapes[0]} and {shapes[1]}.") from None
    draw = ops.randn(*tuple(size))
    return ops.add(ops.mul(draw, std), mean)
