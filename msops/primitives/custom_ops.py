"""Custom: a user's numpy function as a primitive, without writing a Primitive class.

msops has one backend, numpy, so `func_type="pyfunc"` is the only kind of kernel it runs:
`func` takes the inputs as numpy arrays and returns the output array(s). The outputs'
shapes and dtypes come from `out_shape` / `out_dtype` (values, or functions of the
inputs' shapes / dtypes), so a traced graph knows them before anything runs; each call
checks the function's result against them. The gradient is the user's `bprop` (inputs...,
out, dout) -> input gradients, itself built of msops ops (traced into a compiled graph).
The kernel is opaque, so in a parallel graph the op runs on whole tensors (gathered in
front), unless the user declares a batch dim with `shard(...)` (see `custom_spec`).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import contiguous
from msops.primitives.primitive import PrimitiveWithInfer, _abstract_op, _dtype_of, _shape_of
from msops.primitives.rules import bprop, sharding_rule
from msops.primitives.sharding import DimSpec, dims

__all__ = ["Custom", "CustomRegOp", "DataType"]

#: MindSpore's other kinds of kernel (compiled for Ascend/GPU or other languages)
OTHER_FUNC_TYPES = ("hybrid", "akg", "tbe", "aot", "aicpu", "julia")
_BATCH = "b"


def _is_fn(value: Any) -> bool:
    """A user's inference function (a dtype or a numpy type is callable, but not one)."""
    return callable(value) and not isinstance(value, (type, mstype.Type))


def _is_shape(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in value)


class Custom(PrimitiveWithInfer):
    """`Custom(func, out_shape=None, out_dtype=None, func_type="pyfunc", bprop=None,
    reg_info=None)(*inputs)`: `func(*arrays)` as an op, as `mindspore.ops.Custom`.

    * `out_shape`: the output's shape (a tuple of shapes for several outputs), or a function
      of the inputs' shapes returning it; None: the first input's shape.
    * `out_dtype`: an msops dtype (a tuple for several outputs), or a function of the
      inputs' dtypes; None: the first input's dtype.
    * `bprop(*inputs, out, dout)`: the inputs' gradients (a tuple, one per input), made of
      msops ops; without it the op cannot be differentiated.
    * `reg_info` is accepted and ignored (it describes kernels for other backends).

    >>> square = Custom(lambda x: x * x, out_shape=lambda s: s, out_dtype=lambda d: d)
    >>> square(Tensor(np.array([1.0, 3.0], np.float32))).asnumpy()
    array([1., 9.], dtype=float32)
    """

    def __init__(self, func: Callable | str, out_shape: Any = None, out_dtype: Any = None,
                 func_type: str = "pyfunc", bprop: Callable | None = None,
                 reg_info: Any = None) -> None:
        super().__init__("Custom")
        if not isinstance(func_type, str):
            raise TypeError(f"For '{self.name}', the 'func_type' should be a str, but got "
                            f"{type(func_type).__name__}.")
        if func_type != "pyfunc":
            known = "one of MindSpore's" if func_type in OTHER_FUNC_TYPES else "not a"
            raise ValueError(f"For '{self.name}', the 'func_type' should be 'pyfunc' (msops "
                             f"runs Python functions of numpy arrays only), but got "
                             f"{func_type!r} ({known} func_type for compiled kernels).")
        if not callable(func):
            raise TypeError(f"For '{self.name}', the 'func' should be a Python function of "
                            f"numpy arrays for func_type 'pyfunc', but got {func!r}.")
        if bprop is not None and not callable(bprop):
            raise TypeError(f"For '{self.name}', the 'bprop' should be a function (inputs..., "
                            f"out, dout) -> gradients, or None, but got {bprop!r}.")
        self._check_out("out_shape", out_shape, _is_shape, "a shape, a tuple of shapes")
        self._check_out("out_dtype", out_dtype, lambda d: isinstance(d, mstype.Type),
                        "an msops dtype, a tuple of dtypes")
        # the functions are plain attributes; attrs describe the program, alike on all ranks
        self.func, self.out_shape, self.out_dtype = func, out_shape, out_dtype
        self.bprop, self.reg_info = bprop, reg_info
        self.add_prim_attr("func_type", func_type)
        self.add_prim_attr("func_name", getattr(func, "__name__", type(func).__name__))

    def _check_out(self, arg: str, value: Any, one: Callable[[Any], bool], what: str) -> None:
        if value is None or _is_fn(value) or \
                one(value) or (isinstance(value, tuple) and value and all(one(v) for v in value)):
            return
        raise TypeError(f"For '{self.name}', the '{arg}' should be {what}, a function of the "
                        f"inputs' {arg[4:]}s, or None, but got {value!r}.")

    # -- inference ---------------------------------------------------------------------------
    def _declared(self, arg: str, value: Any, ins: Sequence[Any], one: Callable[[Any], bool]
                  ) -> Any:
        if value is None:
            if not ins:
                raise ValueError(f"For '{self.name}', the '{arg}' should be given for an op "
                                 f"without inputs, but got None.")
            value = ins[0]
        elif _is_fn(value):
            value = value(*ins)
            if isinstance(value, list) and value and not one(value) and all(one(v) for v in value):
                value = tuple(value)
        if one(value):
            return value
        if isinstance(value, tuple) and value and all(one(v) for v in value):
            return value
        raise TypeError(f"For '{self.name}', the '{arg}' should give the output's {arg[4:]} "
                        f"(or a tuple of them), but got {value!r}.")

    def infer_shape(self, *shapes: Any) -> Any:
        got = self._declared("out_shape", self.out_shape, shapes, _is_shape)
        if _is_shape(got):
            return [int(d) for d in got]
        return tuple([int(d) for d in s] for s in got)

    def infer_dtype(self, *dtypes: Any) -> Any:
        return self._declared("out_dtype", self.out_dtype, dtypes,
                              lambda d: isinstance(d, mstype.Type))

    # -- kernel --------------------------------------------------------------------------
    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        multi = isinstance(out_abstract.dtype, tuple)
        shapes = out_abstract.shape if multi else (out_abstract.shape,)
        types = out_abstract.dtype if multi else (out_abstract.dtype,)
        specs = [(tuple(s), t) for s, t in zip(shapes, types)]

        def custom(*arrays: np.ndarray) -> Any:
            got = self.func(*arrays)
            outs = tuple(got) if multi and isinstance(got, (tuple, list)) else (got,)
            if len(outs) != len(specs):
                raise ValueError(f"For '{self.name}', the 'func' {self.func_name} should return "
                                 f"{len(specs)} array(s) (out_shape), but got {len(outs)}.")
            return tuple(self._checked(o, k, s, t) for k, (o, (s, t)) in
                         enumerate(zip(outs, specs))) if multi else \
                self._checked(outs[0], 0, *specs[0])
        return custom

    def kernel(self, *arrays: np.ndarray) -> Any:
        """Uncached call (the eager path of an unhashable signature): infer, then run."""
        shapes = [_shape_of(a) for a in arrays]
        dtypes = [_dtype_of(a) for a in arrays]
        out = _abstract_op(self.infer_shape(*shapes), self.infer_dtype(*dtypes))
        return self.lower([], out)(*arrays)

    def _checked(self, value: Any, k: int, shape: tuple, dtype: mstype.Type) -> np.ndarray:
        """Output k of func as declared: its shape exactly; its dtype converted as numpy's
        same-kind casting allows (float64 from np.sin to a declared float32)."""
        arr = np.asarray(value)
        if arr.shape != shape:
            raise ValueError(f"For '{self.name}', the output {k} of 'func' "
                             f"{self.func_name} should have the declared shape {list(shape)}, "
                             f"but got {list(arr.shape)}.")
        if arr.dtype != dtype.np_dtype:
            if not np.can_cast(arr.dtype, dtype.np_dtype, casting="same_kind"):
                raise TypeError(f"For '{self.name}', the output {k} of 'func' "
                                f"{self.func_name} should have the declared dtype {dtype} "
                                f"(or one of its kind), but got {arr.dtype}.")
            arr = arr.astype(dtype.np_dtype)
        return contiguous(arr)


@sharding_rule(Custom)
def custom_spec(prim: Custom, ins: list, outs: list, consts: dict) -> DimSpec:
    """Whole tensors (the kernel is opaque: a parallel graph gathers its inputs), unless the
    user declared a batch with `shard`: then dim 0 of every input and output is one batch
    dim "b", which `func` maps slice by slice, and only it may split."""
    declared = prim.in_strategy is not None
    ins_l = tuple(dims(len(s), prefix=f"i{k}_") for k, s in enumerate(ins))
    outs_l = tuple(dims(len(s), prefix=f"o{k}_") for k, s in enumerate(outs))
    whole = "its kernel is a user function: declare a batch dim 0 with shard(...) to split it"
    batched = declared and all(len(s) for s in list(ins) + list(outs)) and \
        len({s[0] for s in list(ins) + list(outs)}) == 1
    if declared and not batched:
        whole = ("shard(...) declares dim 0 a batch dim, but the inputs' and outputs' dim 0 "
                 f"differ ({[list(s) for s in list(ins) + list(outs)]})")
    if batched:
        ins_l = tuple((_BATCH,) + l[1:] for l in ins_l)
        outs_l = tuple((_BATCH,) + l[1:] for l in outs_l)
        whole = "a Custom op's shard(...) declares dim 0 a batch dim; only it may split"
    letters = {l for group in ins_l + outs_l for l in group} - ({_BATCH} if batched else set())
    return DimSpec(ins_l, outs_l, unsplittable=tuple((l, whole) for l in sorted(letters)),
                   batch_letter=_BATCH if batched else None)


@bprop(Custom)
def custom_bprop(prim: Custom, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """The user's bprop(*inputs, out, dout), run on the tape or traced into the graph."""
    if prim.bprop is None:
        raise NotImplementedError(
            f"For '{prim.name}', the op {prim.func_name} cannot be differentiated: it has no "
            f"'bprop' (give Custom(..., bprop=fn), fn(*inputs, out, dout) -> gradients).")
    multi = isinstance(dout, list)
    outs = [g.getitem(out, k) for k in range(len(dout))] if multi else [out]
    douts = list(dout) if multi else [dout]
    n = len(inputs)

    def run(*ts: Any) -> tuple:
        o = tuple(ts[n:n + len(outs)]) if multi else ts[n]
        d = tuple(ts[n + len(outs):]) if multi else ts[n + 1]
        got = prim.bprop(*ts[:n], o, d)
        grads = tuple(got) if isinstance(got, (tuple, list)) else (got,)
        if len(grads) != n:
            raise ValueError(f"For '{prim.name}', the 'bprop' of {prim.func_name} should return "
                             f"{n} gradient(s), one per input, but got {len(grads)}.")
        return grads
    return tuple(g.inline(run, list(inputs) + outs + douts))


class _DataType:
    """MindSpore's dtype/format pairs for `CustomRegOp` (names only: msops's kernels take
    any dtype their function does): `DataType.F32_Default == ("F32", "Default")`."""

    def __getattr__(self, name: str) -> tuple:
        if name.startswith("__"):
            raise AttributeError(name)
        return tuple(name.split("_", 1))


DataType = _DataType()


class CustomRegOp:
    """`CustomRegOp(op_name="Custom")`: MindSpore's kernel-registration builder. Its calls
    chain and `get_op_info()` returns what was recorded; msops's Custom accepts it as
    `reg_info` and ignores it (the numpy kernel needs no registration)."""

    def __init__(self, op_name: str = "Custom") -> None:
        self.op_name, self.info = op_name, []

    def __getattr__(self, name: str) -> Callable[..., "CustomRegOp"]:
        if name.startswith("_"):
            raise AttributeError(name)

        def record(*args: Any, **kwargs: Any) -> "CustomRegOp":
            self.info.append((name, args, kwargs))
            return self
        return record

    def get_op_info(self) -> dict:
        return {"op_name": self.op_name, "calls": list(self.info)}
