"""The base of `mindspore.dataset.transforms` and `.vision` operations: a callable on numpy
arrays (Tensors and array-likes are converted), given to `Dataset.map` or called eagerly.

Random operations draw from a numpy Generator made when the operation is built, seeded by
the dataset seed (`msops.dataset.config.get_seed()`: `config.set_seed`'s, else
`ms.set_seed`'s) together with the operation's class and arguments, so a pipeline built
after the same seed replays the same draws, and differently configured operations draw
independent streams.
"""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from msops.common.tensor import Tensor
from msops.dataset import config

__all__ = ["TensorOperation", "RandomOperation", "as_array", "describe"]


def as_array(value: Any, op: str) -> np.ndarray:
    """`value` as a numpy array (a Tensor's data, or np.asarray of an array-like)."""
    if isinstance(value, Tensor):
        return value.asnumpy()
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"For '{op}', the input should be a numpy array or a Tensor, but got "
                        f"{type(value).__name__}.") from exc
    if array.dtype == object:
        raise TypeError(f"For '{op}', the input should be a numeric numpy array or a Tensor, "
                        f"but got {type(value).__name__} of objects.")
    return array


def describe(value: Any) -> str:
    """A repr without memory addresses (it seeds random operations): functions and objects
    whose repr shows an address by their qualified name, sequences item by item."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(describe(v) for v in value) + "]"
    text = repr(value)
    if " at 0x" in text:
        return getattr(value, "__qualname__", type(value).__qualname__)
    return text


class TensorOperation:
    """A transform of one column: `op(array)`; subclasses define `_apply(array)`."""

    def __call__(self, *inputs: Any) -> Any:
        name = type(self).__name__
        if len(inputs) != 1:
            raise TypeError(f"For '{name}', the input should be one array (one column), but "
                            f"got {len(inputs)}.")
        return self._apply(as_array(inputs[0], name))

    def _apply(self, array: np.ndarray) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        args = (f"{k}={describe(v)}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({', '.join(args)})"


class RandomOperation(TensorOperation):
    """A transform that draws from `self._rng` (see the module docstring for its seed)."""

    def _seed_rng(self) -> None:
        key = zlib.crc32(repr(self).encode())
        self._rng = np.random.default_rng([config.get_seed(), key, 0xDA7A])
