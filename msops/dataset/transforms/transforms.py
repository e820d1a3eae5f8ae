"""`mindspore.dataset.transforms`: general column transforms (type casts, one-hot labels,
filling, slicing, padding, duplication) and the ways to combine transforms (Compose,
RandomApply, RandomChoice, RandomOrder). Each is a callable on numpy arrays, for
`Dataset.map(operations, input_columns=...)` or eager use."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.dataset.transforms.base import RandomOperation, TensorOperation, as_array, describe

__all__ = ["TypeCast", "Compose", "OneHot", "Fill", "Duplicate", "Concatenate", "PadEnd",
           "Slice", "RandomApply", "RandomChoice", "RandomOrder"]


def to_np_dtype(data_type: Any, op: str, arg: str = "data_type") -> np.dtype:
    """An msops dtype (ms.int32) or a numpy dtype as a numpy dtype."""
    if isinstance(data_type, mstype.Type):
        if data_type.np_dtype is None:
            raise TypeError(f"For '{op}', the '{arg}' should be a numeric dtype, but got "
                            f"{data_type!r}.")
        return np.dtype(data_type.np_dtype)
    try:
        dt = np.dtype(data_type)
    except TypeError:
        dt = None
    if dt is None or data_type is None or dt.kind not in "biufc":
        raise TypeError(f"For '{op}', the '{arg}' should be an msops dtype or a numeric numpy "
                        f"dtype, but got {data_type!r}.")
    return dt


def _run(ops: Sequence[Callable], values: tuple) -> Any:
    """Apply `ops` in turn, as Dataset.map does: a tuple result is the next op's arguments."""
    for op in ops:
        out = op(*values)
        values = tuple(out) if isinstance(out, tuple) else (out,)
    return values[0] if len(values) == 1 else values


def _check_ops(transforms: Any, op: str) -> list:
    if not isinstance(transforms, (list, tuple)) or not transforms or \
            not all(callable(t) for t in transforms):
        raise TypeError(f"For '{op}', the 'transforms' should be a non-empty list of callables, "
                        f"but got {transforms!r}.")
    return list(transforms)


class TypeCast(TensorOperation):
    """Cast to `data_type` (an msops dtype such as ms.int32, or a numpy dtype); floats cast
    to ints truncate toward zero (C casts, as MindSpore)."""

    def __init__(self, data_type: Any) -> None:
        self.data_type = to_np_dtype(data_type, type(self).__name__)

    def _apply(self, array: np.ndarray) -> np.ndarray:
        if array.dtype.kind not in "biuf":
            raise TypeError(f"For '{type(self).__name__}', the input should be a numeric array, but got "
                            f"dtype {array.dtype}.")
        with np.errstate(invalid="ignore", over="ignore"):
            return array.astype(self.data_type)


class Compose:
    """Apply `transforms` in turn (one op's tuple result is the next op's arguments)."""

    def __init__(self, transforms: Sequence[Callable]) -> None:
        self.transforms = _check_ops(transforms, "Compose")

    def __call__(self, *inputs: Any) -> Any:
        return _run(self.transforms, inputs)

    def __repr__(self) -> str:
        return f"Compose(transforms={describe(self.transforms)})"


class OneHot(TensorOperation):
    """One-hot encode integer labels: a scalar gives (num_classes,), a 1-D (n,) input
    (n, num_classes) (as MindSpore, size-1 dims are squeezed), in the input's dtype.
    `smoothing_rate` s > 0 gives float32 (1 - s) * one_hot + s / num_classes."""

    def __init__(self, num_classes: int, smoothing_rate: float = 0.0) -> None:
        self.num_classes = validator.check_positive_int(num_classes, "num_classes", "OneHot")
        validator.check_value_type("smoothing_rate", smoothing_rate, (float, int), "OneHot")
        if not 0.0 <= smoothing_rate <= 1.0:
            raise ValueError(f"For 'OneHot', the 'smoothing_rate' should be in [0.0, 1.0], but "
                             f"got {smoothing_rate}.")
        self.smoothing_rate = float(smoothing_rate)

    def _apply(self, array: np.ndarray) -> np.ndarray:
        if array.dtype.kind not in "iu":
            raise TypeError(f"For 'OneHot', the input should be integer labels, but got dtype "
                            f"{array.dtype}.")
        labels = np.squeeze(array)
        if labels.ndim > 1:
            raise ValueError(f"For 'OneHot', the input should be a scalar or 1-D, but got shape "
                             f"{array.shape}.")
        flat = labels.reshape(-1).astype(np.int64)
        bad = flat[(flat < 0) | (flat >= self.num_classes)]
        if bad.size:
            raise ValueError(f"For 'OneHot', every label should be in [0, {self.num_classes}), "
                             f"but got {int(bad[0])}.")
        out = np.zeros((flat.size, self.num_classes), array.dtype)
        out[np.arange(flat.size), flat] = 1
        out = np.squeeze(out)
        if self.smoothing_rate > 0:
            s = self.smoothing_rate
            return (out.astype(np.float32) * (1 - s) + s / self.num_classes).astype(np.float32)
        return out


class Fill(TensorOperation):
    """An array of the input's shape and dtype, every element `fill_value` (cast to it)."""

    def __init__(self, fill_value: int | float | bool | str) -> None:
        validator.check_value_type("fill_value", fill_value, (int, float, bool, str), "Fill")
        self.fill_value = fill_value

    def _apply(self, array: np.ndarray) -> np.ndarray:
        if isinstance(self.fill_value, str) != (array.dtype.kind in "US"):
            raise TypeError(f"For 'Fill', the 'fill_value' should match the input's type "
                            f"({array.dtype}), but got {self.fill_value!r}.")
        with np.errstate(invalid="ignore", over="ignore"):
            value = np.array(self.fill_value).astype(array.dtype)
        return np.full(array.shape, value, array.dtype)


class Duplicate(TensorOperation):
    """Two copies of the input: map it with two `output_columns`."""

    def _apply(self, array: np.ndarray) -> tuple:
        return array, array.copy()


class Concatenate(TensorOperation):
    """Concatenate a 1-D input with `prepend` before and `append` after it (1-D arrays cast
    to the input's dtype when that is safe)."""

    def __init__(self, axis: int = 0, prepend: Any = None, append: Any = None) -> None:
        validator.check_int("axis", axis, "Concatenate")
        if axis not in (0, -1):
            raise ValueError(f"For 'Concatenate', the 'axis' should be 0 or -1 (1-D inputs only), "
                             f"but got {axis}.")
        self.axis = axis
        self.prepend = None if prepend is None else self._one_d(prepend, "prepend")
        self.append = None if append is None else self._one_d(append, "append")

    @staticmethod
    def _one_d(value: Any, arg: str) -> np.ndarray:
        array = as_array(value, "Concatenate")
        if array.ndim != 1:
            raise ValueError(f"For 'Concatenate', the '{arg}' should be 1-D, but got shape "
                             f"{array.shape}.")
        return array

    def _apply(self, array: np.ndarray) -> np.ndarray:
        if array.ndim != 1:
            raise ValueError(f"For 'Concatenate', the input should be 1-D, but got shape "
                             f"{array.shape}.")
        parts = []
        for arg, part in (("prepend", self.prepend), ("input", array), ("append", self.append)):
            if part is None:
                continue
            if not np.can_cast(part.dtype, array.dtype, "same_kind"):
                raise TypeError(f"For 'Concatenate', the '{arg}' dtype should be castable to the "
                                f"input's {array.dtype}, but got {part.dtype}.")
            parts.append(part.astype(array.dtype))
        return np.concatenate(parts)


class PadEnd(TensorOperation):
    """Pad (or cut) each dim at its end to `pad_shape` (None in a dim: keep it), padding with
    `pad_value` (default 0). A scalar input is returned unchanged."""

    def __init__(self, pad_shape: Sequence[int | None], pad_value: Any = None) -> None:
        if not isinstance(pad_shape, (list, tuple)) or not all(
                d is None or (isinstance(d, int) and not isinstance(d, bool) and d > 0)
                for d in pad_shape):
            raise TypeError(f"For 'PadEnd', the 'pad_shape' should be a list of positive ints "
                            f"(or None), but got {pad_shape!r}.")
        if pad_value is not None:
            validator.check_value_type("pad_value", pad_value, (int, float, bool, str), "PadEnd")
        self.pad_shape, self.pad_value = list(pad_shape), pad_value

    def _apply(self, array: np.ndarray) -> np.ndarray:
        if array.ndim == 0:
            return array
        if array.ndim != len(self.pad_shape):
            raise ValueError(f"For 'PadEnd', the 'pad_shape' should have one entry per input dim "
                             f"({array.ndim}), but got {self.pad_shape}.")
        shape = tuple(s if p is None else p for s, p in zip(array.shape, self.pad_shape))
        fill = Fill(0 if self.pad_value is None else self.pad_value)(np.empty(shape, array.dtype))
        keep = tuple(slice(0, min(s, t)) for s, t in zip(array.shape, shape))
        fill[keep] = array[keep]
        return fill


class Slice(TensorOperation):
    """Slice the input, one argument per leading dim: an int (that index, the dim kept with
    size 1), a list of ints, a `slice`, None (the whole dim) or Ellipsis (the dims left)."""

    def __init__(self, *slices: Any) -> None:
        for s in slices:
            ok = s is None or s is Ellipsis or isinstance(s, slice) or (
                isinstance(s, int) and not isinstance(s, bool)) or (
                isinstance(s, list) and all(isinstance(i, int) for i in s))
            if not ok:
                raise TypeError(f"For 'Slice', every slice should be an int, a list of ints, a "
                                f"slice, None or Ellipsis, but got {s!r}.")
        if sum(s is Ellipsis for s in slices) > 1:
            raise ValueError("For 'Slice', the slices should hold at most one Ellipsis, but got "
                             f"{list(slices)}.")
        self.slices = list(slices)

    def _apply(self, array: np.ndarray) -> np.ndarray:
        slices = self.slices
        if Ellipsis in slices:
            k = slices.index(Ellipsis)
            slices = slices[:k] + [None] * (array.ndim - len(slices) + 1) + slices[k + 1:]
        if len(slices) > array.ndim:
            raise ValueError(f"For 'Slice', the number of slices should be <= the input's rank "
                             f"{array.ndim}, but got {len(slices)}.")
        out = array
        for axis, s in enumerate(slices):
            if s is None:
                continue
            if isinstance(s, slice):
                out = out[(slice(None),) * axis + (s,)]
                continue
            index = np.asarray([s] if isinstance(s, int) else s, np.int64)
            n = out.shape[axis]
            if index.size and (index.min() < -n or index.max() >= n):
                raise IndexError(f"For 'Slice', the indices of dim {axis} should be in [{-n}, "
                                 f"{n}), but got {s}.")
            out = np.take(out, index, axis=axis)
        return out


class RandomApply(RandomOperation):
    """With probability `prob`, apply `transforms` in turn; otherwise pass the input."""

    def __init__(self, transforms: Sequence[Callable], prob: float = 0.5) -> None:
        self.transforms = _check_ops(transforms, "RandomApply")
        validator.check_value_type("prob", prob, (float, int), "RandomApply")
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"For 'RandomApply', the 'prob' should be in [0.0, 1.0], but got "
                             f"{prob}.")
        self.prob = float(prob)
        self._seed_rng()

    def __call__(self, *inputs: Any) -> Any:
        if self._rng.random() < self.prob:
            return _run(self.transforms, inputs)
        return inputs[0] if len(inputs) == 1 else inputs


class RandomChoice(RandomOperation):
    """Apply one of `transforms`, chosen uniformly at random per row."""

    def __init__(self, transforms: Sequence[Callable]) -> None:
        self.transforms = _check_ops(transforms, "RandomChoice")
        self._seed_rng()

    def __call__(self, *inputs: Any) -> Any:
        return _run([self.transforms[int(self._rng.integers(len(self.transforms)))]], inputs)


class RandomOrder(RandomOperation):
    """Apply all of `transforms`, in a random order per row."""

    def __init__(self, transforms: Sequence[Callable]) -> None:
        self.transforms = _check_ops(transforms, "RandomOrder")
        self._seed_rng()

    def __call__(self, *inputs: Any) -> Any:
        order = self._rng.permutation(len(self.transforms))
        return _run([self.transforms[int(k)] for k in order], inputs)
