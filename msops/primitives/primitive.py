"""Primitive: an op's attributes, shape/dtype inference, kernel and sharding strategy.

A primitive subclass declares
  * `__init__` decorated with `prim_attr_register` (its arguments become attrs),
  * `infer_shape(*shapes)` / `infer_dtype(*dtypes)` — pure; tensor inputs arrive as a
    shape list / msops Type, inputs listed in `const_inputs` arrive as Python values,
  * `kernel(*values)` — numpy arrays in, numpy array(s) out (comm kernels call MPI),
  * optionally `lower(in_abstracts, out_abstract)` returning a kernel specialised for
    one signature (precomputed counts, buffers): the compiled executor calls that.

Calling a primitive runs it eagerly (infer, then kernel) or, while a graph is being
traced, records it: the tracer installs a hook, so this layer never imports it.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor

__all__ = ["Primitive", "PrimitiveWithInfer", "prim_attr_register", "set_trace_hook",
           "signature_of"]

# Set by msops.graph.tracer while a construct is traced: hook(prim, args) -> outputs.
_trace_hook: Callable | None = None


def set_trace_hook(hook: Callable | None) -> Callable | None:
    """Install the tracer's call hook (None to remove); returns the previous one."""
    global _trace_hook
    prev, _trace_hook = _trace_hook, hook
    return prev


def prim_attr_register(fn: Callable) -> Callable:
    """Decorate a primitive's `__init__`: record every argument (defaults too) as an attr.

    A subclass's decorated `__init__` may call its parent's: the base is set up once,
    so the attrs the subclass recorded are kept.
    """
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        bound = sig.bind(self, *args, **kwargs)
        bound.apply_defaults()
        if "attrs" not in self.__dict__:
            Primitive.__init__(self, type(self).__name__)
        for name, value in list(bound.arguments.items())[1:]:
            if sig.parameters[name].kind in (inspect.Parameter.VAR_POSITIONAL,
                                             inspect.Parameter.VAR_KEYWORD):
                continue
            self.add_prim_attr(name, value)
            self.init_attrs[name] = value
        fn(self, *args, **kwargs)
    return wrapper


def _check_strategy(strategy: Any, arg: str, name: str) -> tuple | None:
    if strategy is None:
        return None
    if not isinstance(strategy, tuple):
        raise TypeError(f"For '{name}', the '{arg}' should be a tuple of tuples of ints, "
                        f"but got {type(strategy).__name__}: {strategy!r}.")
    for i, s in enumerate(strategy):
        if not isinstance(s, tuple):
            raise TypeError(f"For '{name}', the '{arg}[{i}]' should be a tuple of ints, "
                            f"but got {type(s).__name__}: {s!r}.")
        for v in s:
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"For '{name}', every value of '{arg}[{i}]' should be an int, "
                                f"but got {type(v).__name__}: {v!r} in {s}.")
    return strategy


def signature_of(value: Any) -> Any:
    """Hashable key of one call argument: (shape, dtype) for arrays, the value otherwise."""
    if isinstance(value, np.ndarray):
        return (value.shape, value.dtype)
    if isinstance(value, list):
        return tuple(signature_of(v) for v in value)
    return value


class Primitive:
    """Base of every op. `name`, `attrs`, strategies, and eager/traced dispatch."""

    #: positions of inputs that are compile-time values (shapes, axes, counts), not tensors
    const_inputs: tuple[int, ...] = ()
    #: True for ops that move data between ranks (dump/DOT draw them apart)
    is_communication: bool = False

    def __init__(self, name: str | None = None) -> None:
        self.attrs: dict[str, Any] = {}
        self.name = name or type(self).__name__
        self.init_attrs: dict[str, Any] = {}
        self.in_strategy: tuple | None = None
        self.out_strategy: tuple | None = None
        self._infer_cache: dict = {}

    # -- attributes ---------------------------------------------------------------
    def add_prim_attr(self, name: str, value: Any) -> "Primitive":
        """Set attribute `name`; readable as `prim.attrs[name]` and as `prim.<name>`."""
        self.attrs[name] = value
        return self

    def del_prim_attr(self, name: str) -> "Primitive":
        self.attrs.pop(name, None)
        return self

    def get_attr_dict(self) -> dict:
        return self.attrs

    def __getattr__(self, item: str) -> Any:
        attrs = self.__dict__.get("attrs")
        if attrs is not None and item in attrs:
            return attrs[item]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{item}'")

    # -- strategies -----------------------------------------------------------------
    def shard(self, in_strategy: tuple | None = None,
              out_strategy: tuple | None = None) -> "Primitive":
        """Set the semi-auto-parallel strategy: slices per dim of each input (and output)."""
        in_s = _check_strategy(in_strategy, "in_strategy", self.name)
        out_s = _check_strategy(out_strategy, "out_strategy", self.name)
        if out_s is not None and in_s is None:
            raise ValueError(f"For '{self.name}', the 'out_strategy' needs an 'in_strategy', "
                             f"but got in_strategy=None, out_strategy={out_s}.")
        self.in_strategy, self.out_strategy = in_s, out_s
        if in_s is not None:
            self.add_prim_attr("in_strategy", in_s)
        if out_s is not None:
            self.add_prim_attr("out_strategy", out_s)
        return self

    def set_strategy(self, strategy: tuple | None = None) -> "Primitive":
        """The older spelling of `shard(in_strategy)`."""
        return self.shard(strategy)

    # -- inference --------------------------------------------------------------------
    def infer_shape(self, *args: Any) -> Any:
        raise NotImplementedError(f"'{self.name}' does not define infer_shape.")

    def infer_dtype(self, *args: Any) -> Any:
        raise NotImplementedError(f"'{self.name}' does not define infer_dtype.")

    def infer(self, shapes: Sequence[Any], dtypes: Sequence[Any]) -> tuple[Any, Any]:
        """(out shape(s), out dtype(s)) for input shapes/dtypes (values for const inputs)."""
        return self.infer_shape(*shapes), self.infer_dtype(*dtypes)

    def kernel(self, *args: Any) -> Any:
        raise NotImplementedError(f"'{self.name}' has no kernel.")

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """The kernel for one compiled signature; override to precompute per-call work."""
        return self.kernel

    # -- calling ---------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        if _trace_hook is not None:
            return _trace_hook(self, args)
        try:                         # fast path: every input a Tensor, signature seen before
            values = [a._data for a in args]
            if self.const_inputs or \
                    tuple([(v.shape, v.dtype) for v in values]) not in self._infer_cache:
                raise AttributeError
        except AttributeError:
            values = self._eager_values(args)
            self._check_eager(values)
        out = self.kernel(*values)
        if out is None:
            return None
        if isinstance(out, tuple):
            return tuple(Tensor._wrap(o) for o in out)
        return Tensor._wrap(out)

    def _eager_values(self, args: Sequence[Any]) -> list:
        values = []
        # a Python scalar takes the dtype of the first tensor input, even one after it (2 - x)
        first = next((a._data if isinstance(a, Tensor) else a for i, a in enumerate(args)
                      if i not in self.const_inputs and isinstance(a, (Tensor, np.ndarray))), None)
        for i, a in enumerate(args):
            if i in self.const_inputs:
                values.append(a.asnumpy().tolist() if isinstance(a, Tensor) else a)
                continue
            if isinstance(a, (tuple, list)) and a and all(isinstance(t, Tensor) for t in a):
                values.append([t._data for t in a])      # a tuple input (Broadcast, AddN)
                continue
            if isinstance(a, Tensor):
                arr = a._data
            elif isinstance(a, np.ndarray):     # (np.ascontiguousarray would make 0-d 1-d)
                arr = a if a.flags.c_contiguous else np.ascontiguousarray(a)
            elif isinstance(a, (bool, int, float, complex, np.generic)):
                arr = _scalar_like(a, first)
            else:
                raise TypeError(f"For '{self.name}', the input {i} should be a Tensor, "
                                f"but got {type(a).__name__}.")
            values.append(arr)
        return values

    def _check_eager(self, values: list) -> None:
        """Run inference once per signature: argument errors surface before the kernel."""
        try:
            key = tuple([signature_of(v) for v in values])
            if key in self._infer_cache:
                return
        except TypeError:            # unhashable constant: infer every call
            key = None
        shapes = [_abstract(v, i in self.const_inputs, _shape_of) for i, v in enumerate(values)]
        dtypes = [_abstract(v, i in self.const_inputs, _dtype_of) for i, v in enumerate(values)]
        result = self.infer(shapes, dtypes)
        if key is not None:
            self._infer_cache[key] = result

    def __repr__(self) -> str:
        shown = {k: v for k, v in self.attrs.items() if k not in ("in_strategy", "out_strategy")}
        body = ", ".join(f"{k}={v!r}" for k, v in shown.items())
        return f"Prim[{self.name}]" + (f"<{body}>" if body else "")


def _shape_of(a: np.ndarray) -> list:
    return list(a.shape)


def _dtype_of(a: np.ndarray) -> mstype.Type:
    return mstype.from_numpy(a.dtype)


def _abstract(value: Any, is_const: bool, of: Callable) -> Any:
    """What infer_* receive for one input: the value if constant, else shape/dtype (list-wise)."""
    if is_const:
        return value
    if isinstance(value, list):
        return [of(v) for v in value]
    return of(value)


def _scalar_like(value: Any, like: np.ndarray | None) -> np.ndarray:
    """A Python scalar as a 0-d array, taking the dtype of the tensor beside it when it fits."""
    if like is not None:
        kind = like.dtype.kind
        if (isinstance(value, bool) and kind == "b") or \
           (isinstance(value, (int, np.integer)) and kind in "iufc") or \
           (isinstance(value, (float, np.floating)) and kind in "fc") or \
           (isinstance(value, complex) and kind == "c"):
            return np.asarray(value, dtype=like.dtype)
    arr = np.asarray(value)
    return arr.astype(np.float32) if arr.dtype == np.float64 else arr


class PrimitiveWithInfer(Primitive):
    """A Primitive whose Python `infer_shape`/`infer_dtype` define its abstract evaluation."""
