"""Tensor and Parameter: a dtype-tagged, C-contiguous numpy array.

A Tensor owns one contiguous numpy array (so collectives can hand it to MPI
without a copy) and its msops dtype. A Parameter is a named, trainable Tensor.
Operator sugar (`x + y`, `x @ w`) dispatches through a table that the primitive
layer fills, so this layer never imports the ones above it.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from msops.common import dtype as mstype
from msops.common.state_epoch import bump

__all__ = ["Tensor", "Parameter", "ParameterTuple", "tensor", "from_numpy", "check_tensor"]

_TYPE_OF_NP = mstype._BY_NP      # hot path of Tensor._wrap: numpy dtype -> Type

# Filled by msops.ops: maps "__add__" etc. to a callable (x, y) -> Tensor.
_OPERATORS: dict[str, Callable] = {}


def _to_array(data: Any, dtype: mstype.Type | None) -> np.ndarray:
    if isinstance(data, Tensor):
        data = data.asnumpy()
    if dtype is not None:
        np_dtype = mstype.dtype_to_nptype(dtype)
        arr = np.asarray(data, dtype=np_dtype)
    else:
        arr = np.asarray(data)
        from_python = not isinstance(data, (np.ndarray, np.generic))  # numpy scalars keep theirs
        if arr.dtype == np.float64 and from_python:
            arr = arr.astype(np.float32)      # Python floats default to float32, as in MindSpore
        elif arr.dtype.kind == "i" and from_python and arr.dtype != np.int64:
            arr = arr.astype(np.int64)        # (ints beyond int64 arrive as uint64: kept, not wrapped)
    if not arr.dtype.isnative:                # e.g. '>f4' from a file: MPI reduces native order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    try:
        mstype.from_numpy(arr.dtype)
    except TypeError:
        raise TypeError(f"For 'Tensor', the 'input_data' should be numbers or bools (an array of "
                        f"bool, int, uint, float or complex), but got an array of dtype "
                        f"{arr.dtype}.") from None
    return contiguous(arr)


def contiguous(a: Any) -> np.ndarray:
    """`a` as a C-contiguous ndarray: itself when it is one, else a C-ordered copy; a 0-d
    value stays 0-d (np.ascontiguousarray makes it 1-d)."""
    a = np.asarray(a)
    return a if a.flags.c_contiguous else a.copy(order="C")


class Tensor:
    """A tensor value: `Tensor(input_data=None, dtype=None, shape=None, init=None,
    const_arg=False, device=None)` (MindSpore's arguments: `init` an initializer drawn at
    once for `shape`; `const_arg` and `device` accepted: graphs are traced per signature and
    every kernel runs on the CPU).

    `.shape` is a tuple, `.dtype` an msops Type, `.asnumpy()` the numpy array
    (the Tensor's own storage: copy it before mutating it).
    """

    __array_priority__ = 100
    # the two fields every Tensor has as slots (quick to set when a kernel's output is
    # wrapped); anything else (a compiled output's `.layout`, a Parameter's name) in __dict__
    __slots__ = ("_data", "_dtype", "__dict__", "__weakref__")

    def __init__(self, input_data: Any = None, dtype: mstype.Type | None = None,
                 shape: Any = None, init: Any = None, const_arg: bool = False,
                 device: str | None = None) -> None:
        if init is not None:            # MindSpore's lazy initialisation, done at once here
            if input_data is not None or shape is None:
                raise ValueError("For 'Tensor', 'init' needs 'shape' (and 'dtype') and no "
                                 f"'input_data', but got input_data {type(input_data).__name__} "
                                 f"and shape {shape}.")
            from msops.common.initializer import initializer
            input_data = initializer(init, shape, dtype or mstype.float32, "init", "Tensor")
        elif input_data is None:
            if shape is None or dtype is None:
                raise ValueError("Tensor() needs 'input_data', or both 'shape' and 'dtype'.")
            dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
            if any(d is None or d in (-1, -2) for d in dims):
                # a placeholder of free dims (None or -1; [-2]: any rank) for Cell.set_inputs,
                # holding no data: its declared shape, and an empty array of the fixed dims
                self.__dict__["_declared_shape"] = tuple(-1 if d is None else d for d in dims)
                shape = tuple(0 if d is None or d < 0 else d for d in dims)
            input_data = np.zeros(shape, mstype.dtype_to_nptype(dtype))
        if device is not None and not isinstance(device, str):
            raise TypeError(f"For 'Tensor', the 'device' should be a str or None, but got "
                            f"{type(device).__name__}.")
        self._data = _to_array(input_data, dtype)
        self._dtype = mstype.from_numpy(self._data.dtype)

    @classmethod
    def _wrap(cls, array: np.ndarray) -> "Tensor":
        """A Tensor around `array` without copying (array must be contiguous)."""
        t = cls.__new__(cls)
        t._data = array if array.flags.c_contiguous else contiguous(array)
        t._dtype = _TYPE_OF_NP.get(array.dtype) or mstype.from_numpy(array.dtype)
        return t

    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def dtype(self) -> mstype.Type:
        return self._dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return self._data.size

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def asnumpy(self) -> np.ndarray:
        return self._data

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    def __array_function__(self, func, types, args, kwargs):
        # numpy functions see the values, as through __array__: without this, np.sum(t)
        # would call the MindSpore-style t.sum(axis=, out=) method and fail on `out`.
        return func(*_as_arrays(args), **_as_arrays(kwargs))

    def astype(self, dtype: mstype.Type) -> "Tensor":
        """This tensor's values as `dtype` (complex to real keeps the real part, as Cast)."""
        data, to = self._data, mstype.dtype_to_nptype(dtype)
        if np.iscomplexobj(data) and not np.issubdtype(to, np.complexfloating):
            data = data.real
        return Tensor(data.astype(to))

    def copy(self) -> "Tensor":
        return Tensor._wrap(self._data.copy())

    def item(self):
        return self._data.item()

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Tensor(shape={list(self.shape)}, dtype={self.dtype}, value=\n{self._data})"

    def __str__(self) -> str:
        return str(self._data)

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise ValueError(f"For 'Tensor.__bool__', the truth value of a Tensor should come "
                             f"from one element (use .any() or .all()), but got shape "
                             f"{list(self.shape)}.")
        return bool(self._data)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())


def check_tensor(where: str, arg: str, value: Any) -> "Tensor":
    """`value` if it is a Tensor (a traced one included), else a TypeError naming `where`
    and `arg`."""
    if not isinstance(value, Tensor):
        raise TypeError(f"For '{where}', the '{arg}' should be a Tensor, but got "
                        f"{type(value).__name__}.")
    return value


def refuse_placeholder(t: "Tensor", where: str, what: str) -> None:
    """A TypeError when `t` is a shape placeholder (`Tensor(shape=[None, 3], dtype=...)`,
    for `Cell.set_inputs`): it holds no data to compute on."""
    declared = t.__dict__.get("_declared_shape")
    if declared is not None:
        shape = [None if d == -1 else d for d in declared]
        raise TypeError(f"For '{where}', the {what} is a shape placeholder (Tensor(shape="
                        f"{shape}, dtype={t.dtype}), for Cell.set_inputs), which holds no "
                        f"data; pass a Tensor of values.")


def tensor(input_data: Any = None, dtype: mstype.Type | None = None, shape: Any = None,
           init: Any = None, const_arg: bool = False, device: str | None = None) -> Tensor:
    """`mindspore.tensor(...)`: `Tensor(...)` with the same arguments."""
    return Tensor(input_data, dtype, shape, init, const_arg, device)


def from_numpy(array: np.ndarray) -> Tensor:
    """`mindspore.from_numpy(array)`: a Tensor sharing `array`'s memory (a C-contiguous
    array of a supported dtype; anything else is a TypeError)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"For 'from_numpy', the 'array' should be a numpy.ndarray, but got "
                        f"{type(array).__name__}.")
    if not array.flags.c_contiguous:
        raise TypeError("For 'from_numpy', the 'array' should be C-contiguous (memory is "
                        "shared), but got a strided array; use Tensor(array) to copy it.")
    t = Tensor(array)
    if not np.shares_memory(t.asnumpy(), array):
        raise TypeError(f"For 'from_numpy', the 'array' dtype {array.dtype} cannot be shared "
                        f"(it needs a conversion); use Tensor(array) to convert it.")
    return t


def _as_arrays(value: Any) -> Any:
    """`value` with every Tensor inside (tuples, lists, dicts) replaced by its array."""
    if isinstance(value, Tensor):
        return np.asarray(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_as_arrays(v) for v in value)
    if isinstance(value, dict):
        return {k: _as_arrays(v) for k, v in value.items()}
    return value


def _operator(name: str, reflected: bool = False):
    def method(self, other):
        fn = _OPERATORS.get(name)
        if fn is None or other is None:     # `t == None` is False, as for any object
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)
    method.__name__ = name
    return method


def _unary(name: str):
    def method(self):
        return _OPERATORS[name](self)
    method.__name__ = name
    return method


# Python's operators run the primitives the layers above register in _OPERATORS (`x ** 2`
# is Pow, `x < y` Less, `x == y` Equal, element-wise as in MindSpore); `&`, `|`, `^`, `~`
# are logical, on bool Tensors
for _name in ("__add__", "__sub__", "__mul__", "__truediv__", "__matmul__", "__pow__",
              "__floordiv__", "__mod__", "__and__", "__or__", "__xor__"):
    setattr(Tensor, _name, _operator(_name))
    setattr(Tensor, "__r" + _name[2:], _operator(_name, reflected=True))
for _name in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
    setattr(Tensor, _name, _operator(_name))
for _name in ("__neg__", "__abs__", "__invert__"):
    setattr(Tensor, _name, _unary(_name))
Tensor.__hash__ = object.__hash__        # a Tensor is hashed by identity (`==` compares values)
Tensor.__pos__ = lambda self: self


def register_methods(methods: dict[str, Any]) -> None:
    """Attach MindSpore's Tensor methods (`x.view(...)`, `x.mean()`) that a layer above
    defines over its functional forms, so this layer never imports that one. An existing
    attribute (shape, dtype, astype, asnumpy, ...) is never replaced."""
    for name, method in methods.items():
        if name in vars(Tensor):
            raise ValueError(f"For 'register_methods', the Tensor attribute '{name}' already "
                             f"exists and is not replaced.")
        setattr(Tensor, name, method)


#: set by the tracer (a layer above) while a construct is traced against the global view:
#: a Parameter holding a slice then shows its whole shape, as on the first compile
GLOBAL_VIEW = [False]

#: filled by msops.parallel.param_store (a layer above): `relayout(param, layout)` makes
#: `param` hold this rank's slice of `layout` (None: the whole array), moving data if needed
_RELAYOUT: list = [None]


class Parameter(Tensor):
    """A named, trainable Tensor: `Parameter(tensor, name, requires_grad=True)`.

    After a parallel compile a Parameter holds only this rank's slice of the layout the
    compile stores it in (as MindSpore): `shape`, `asnumpy()` and eager use see the slice;
    `_layout` is that layout (None: the whole array is held), `_full_shape` the whole shape.
    """

    _layout: Any = None         # the layout whose slice `_data` is (None: whole)
    _slice: Any = None          # the index of that slice in the whole array

    def __init__(self, default_input: Any, name: str | None = None,
                 requires_grad: bool = True, layerwise_parallel: bool = False) -> None:
        super().__init__(default_input)
        # a Parameter owns its array: in-place writes (ops.Assign) never reach the caller's
        self._data = self._data.copy()
        self._named(name, requires_grad, layerwise_parallel)

    def _named(self, name: str | None, requires_grad: bool, layerwise_parallel: bool) -> None:
        self.name = name
        self.requires_grad = requires_grad
        self.layerwise_parallel = layerwise_parallel
        self.version = 0            # bumped by every write (set_data, Assign, a relayout)

    @classmethod
    def _adopt(cls, arr: np.ndarray, name: str) -> "Parameter":
        """A Parameter owning `arr`, an array nobody else holds (just read from a file):
        no copy."""
        param = cls.__new__(cls)
        Tensor.__init__(param, arr)
        param._named(name, True, False)
        return param

    @property
    def shape(self) -> tuple:
        """The held array's shape; while a construct is traced (the program is written for
        the whole network), the whole Parameter's, even when this rank holds a slice."""
        if self._layout is not None and GLOBAL_VIEW[0]:
            return tuple(self._layout.tensor_shape)
        return self._data.shape

    @property
    def _full_shape(self) -> tuple:
        """The whole Parameter's shape (its `shape` is the held slice's after a parallel
        compile)."""
        return tuple(self._layout.tensor_shape) if self._layout is not None else self._data.shape

    def _hold(self, data: np.ndarray, layout: Any, index: Any) -> None:
        """Hold `data`, the slice `index` of `layout` (None, None: the whole array)."""
        changed = layout != self._layout
        self._data, self._layout, self._slice = data, layout, index
        self.version += 1
        if changed:                 # compiled executors re-check their Parameters' layouts
            bump()

    def set_data(self, data: Any) -> "Parameter":
        """Replace the value (same dtype; a copy, which the Parameter owns: ops.Assign writes
        it in place); used by checkpoint loading. A Parameter holding a slice takes either
        its slice's shape or the whole shape (then keeps its own slice of it)."""
        arr = _to_array(data, self._dtype)
        if self._layout is not None and arr.shape != self._data.shape:
            if arr.shape != self._full_shape:
                raise ValueError(
                    f"For 'Parameter.set_data', the data of '{self.name}' (which holds this "
                    f"rank's slice {list(self._data.shape)} of {self._layout}) should have "
                    f"the whole shape {list(self._full_shape)} or the slice shape "
                    f"{list(self._data.shape)}, but got {list(arr.shape)}.")
            self._data = arr[self._slice].copy()        # owned (a view would share)
        else:
            self._data = arr.copy()
        self.version += 1
        return self

    def __repr__(self) -> str:
        return (f"Parameter(name={self.name}, shape={list(self.shape)}, dtype={self.dtype}, "
                f"requires_grad={self.requires_grad})")



class ParameterTuple(tuple):
    """A tuple of Parameters (the `weights` of a gradient function or an optimizer)."""

    def __new__(cls, iterable: Any) -> "ParameterTuple":
        items = tuple(iterable)
        for i, p in enumerate(items):
            if not isinstance(p, Parameter):
                raise TypeError(f"For 'ParameterTuple', every element should be a Parameter, "
                                f"but got {type(p).__name__} at index {i}.")
        return super().__new__(cls, items)
