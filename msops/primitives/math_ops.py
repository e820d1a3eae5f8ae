"""Math primitives: matrix products, element-wise arithmetic, reductions, AddN and Cast.

Binary element-wise ops broadcast like numpy and need both inputs of one dtype (a
Python scalar beside a Tensor already arrives with the Tensor's dtype). Every op here
writes its output (`writes_output`): its `lower` is its kernel, specialised to one
signature, writing exactly the inferred shape and dtype into `out` (a new C-contiguous
array when out is None); float16 and bfloat16 accumulate in float32
(`Type.reduce_np_dtype`) and are rounded once into out.
The module also fills the Tensor operator table (`x + y`, `x @ w`, `-x` …).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import _OPERATORS, Tensor
from msops.primitives import primitive as _primitive
from msops.primitives.lowering import out_spec, run_lowered, ufunc_kernel
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import (align_front, broadcast_front, elementwise_batch,
                                      same_dim_batch, to_front)
from msops.primitives.rules import batch_rule, bprop, out_strategy_rule, sharding_rule
from msops.primitives.sharding import DimSpec, broadcast_letters, dims

__all__ = ["MatMul", "BatchMatMul", "Add", "Sub", "Mul", "RealDiv", "Neg", "Square",
           "Exp", "Log", "Equal", "ReduceSum", "ReduceMean", "ReduceMax", "AddN", "Cast"]
__all__ += ["Conj"]

#: dtypes of the arithmetic ops (no bool, no string)
arith_types = mstype.int_type + mstype.uint_type + mstype.float_type + mstype.complex_type
#: dtypes of ops that need a true division (means, quotients)
real_div_types = mstype.float_type + mstype.complex_type


# -- helpers shared by every compute-primitive family ----------------------------------
def compute_dtype(np_dtype: Any) -> np.dtype:
    """The numpy dtype arithmetic on `np_dtype` runs in: float16/bfloat16 -> float32."""
    return mstype.from_numpy(np_dtype).reduce_np_dtype


def broadcast_shape(prim_name: str, x_shape: Sequence[int], y_shape: Sequence[int],
                    x_name: str = "x", y_name: str = "y") -> list:
    """The numpy broadcast of two shapes (ValueError naming both when they do not broadcast)."""
    out = []
    for i in range(1, max(len(x_shape), len(y_shape)) + 1):
        a = x_shape[-i] if i <= len(x_shape) else 1
        b = y_shape[-i] if i <= len(y_shape) else 1
        if a != b and a != 1 and b != 1:
            raise ValueError(f"For '{prim_name}', the '{x_name} shape' and '{y_name} shape' should "
                             f"be broadcastable, but got {list(x_shape)} and {list(y_shape)} "
                             f"(dim {-i}: {a} vs {b}).")
        out.append(b if a == 1 else a)
    return out[::-1]


def check_same_dtype(prim_name: str, dtypes: dict, valid: Sequence[mstype.Type]) -> mstype.Type:
    """Check each named dtype is in `valid` and all equal the first; return that dtype."""
    names = list(dtypes)
    for name in names:
        validator.check_tensor_dtype_valid(name, dtypes[name], valid, prim_name)
    first = dtypes[names[0]]
    for name in names[1:]:
        if dtypes[name] != first:
            raise TypeError(f"For '{prim_name}', the '{name}' should have the same dtype as "
                            f"'{names[0]}': {first}, but got {dtypes[name]}.")
    return first


def check_rank(prim_name: str, arg: str, shape: Sequence[int], low: int,
               high: int | None = None) -> None:
    """ValueError unless `low <= len(shape) <= high` (high=None: no upper bound)."""
    rank = len(shape)
    if rank < low or (high is not None and rank > high):
        want = f"{low}" if high == low else f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"For '{prim_name}', the rank of '{arg}' should be {want}, "
                         f"but got shape {list(shape)} of rank {rank}.")


def check_tensor_list(prim_name: str, arg: str, items: Any) -> list:
    """A tuple input (AddN, Concat) arrives as a list of shapes/dtypes: check it is one."""
    if not isinstance(items, (list, tuple)) or not items or \
            any(not isinstance(v, (list, tuple, mstype.Type)) for v in items):
        raise TypeError(f"For '{prim_name}', the '{arg}' should be a non-empty tuple or list of "
                        f"Tensors, but got {items!r}.")
    return list(items)


def check_tensor_list_dtype(prim_name: str, arg: str, dtypes: Any,
                            valid: Sequence[mstype.Type]) -> mstype.Type:
    """The one dtype of a tuple input's tensors (AddN, Concat, Stack), each in `valid`."""
    items = check_tensor_list(prim_name, arg, dtypes)
    return check_same_dtype(prim_name, {f"{arg}[{i}]": d for i, d in enumerate(items)}, valid)


# -- matrix products ---------------------------------------------------------------------
def _matmul_shape(prim: PrimitiveWithInfer, x1: list, x2: list) -> list:
    """(*B1, m, k) x (*B2, k, n) -> (broadcast(B1, B2), m, n), after the transposes."""
    m, k1 = (x1[-1], x1[-2]) if prim.transpose_a else (x1[-2], x1[-1])
    k2, n = (x2[-1], x2[-2]) if prim.transpose_b else (x2[-2], x2[-1])
    if k1 != k2:
        raise ValueError(f"For '{prim.name}', the contraction dim of 'x2' should be == the "
                         f"contraction dim of 'x1': {k1}, but got {k2} (x1 shape {list(x1)}, "
                         f"transpose_a={prim.transpose_a}; x2 shape {list(x2)}, "
                         f"transpose_b={prim.transpose_b}).")
    batch = broadcast_shape(prim.name, x1[:-2], x2[:-2], "x1 batch", "x2 batch")
    return batch + [m, n]


class _MatMulBase(PrimitiveWithInfer):
    """Shared attrs, dtype rule and kernel of MatMul and BatchMatMul."""

    _min_rank = 2
    _max_rank: int | None = 2

    @prim_attr_register
    def __init__(self, transpose_a: bool = False, transpose_b: bool = False) -> None:
        validator.check_bool("transpose_a", transpose_a, self.name)
        validator.check_bool("transpose_b", transpose_b, self.name)

    def infer_shape(self, x1_shape: list, x2_shape: list) -> list:
        check_rank(self.name, "x1", x1_shape, self._min_rank, self._max_rank)
        check_rank(self.name, "x2", x2_shape, self._min_rank, self._max_rank)
        return _matmul_shape(self, x1_shape, x2_shape)

    def infer_dtype(self, x1_dtype: mstype.Type, x2_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"x1": x1_dtype, "x2": x2_dtype}, arith_types)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """x1 @ x2 into `out`; float16/bfloat16 multiply in float32, rounded once into out."""
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        ta, tb, rounded = self.transpose_a, self.transpose_b, ct != dtype

        def matmul(x1: np.ndarray, x2: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            a = x1.swapaxes(-1, -2) if ta else x1
            b = x2.swapaxes(-1, -2) if tb else x2
            if out is None:
                out = np.empty(shape, dtype)
            if not rounded:
                return np.matmul(a, b, out=out)
            np.copyto(out, np.matmul(a.astype(ct), b.astype(ct)), casting="unsafe")
            return out
        return matmul


class MatMul(_MatMulBase):
    """2-D matrix product: x1 (m, k) @ x2 (k, n) -> (m, n); `transpose_a/b` transpose first.

    >>> MatMul(transpose_b=True)(Tensor(np.ones((2, 3), np.float32)),
    ...                          Tensor(np.ones((4, 3), np.float32))).shape
    (2, 4)
    """


class BatchMatMul(_MatMulBase):
    """Batched product: x1 (*B1, m, k) @ x2 (*B2, k, n) -> (broadcast(B1, B2), m, n); ranks >= 3.

    >>> BatchMatMul()(Tensor(np.ones((5, 2, 3), np.float32)),
    ...               Tensor(np.ones((1, 3, 4), np.float32))).shape
    (5, 2, 4)
    """

    _min_rank = 3
    _max_rank = None


@sharding_rule(_MatMulBase)
def matmul_spec(prim: _MatMulBase, ins: list, outs: list, consts: dict) -> DimSpec:
    """"mk,kn->mn" after the transposes, batch dims broadcast: a split k leaves partial sums."""
    a_mk = ("k", "m") if prim.transpose_a else ("m", "k")
    b_kn = ("n", "k") if prim.transpose_b else ("k", "n")
    batch_out = outs[0][:-2]
    a_batch = broadcast_letters(ins[0][:-2], batch_out, "b")
    b_batch = broadcast_letters(ins[1][:-2], batch_out, "b")
    return DimSpec((a_batch + a_mk, b_batch + b_kn),
                   (dims(len(batch_out), 0, "b") + ("m", "n"),), reduction_name="reduction dim")


@out_strategy_rule(MatMul)
def matmul_out_strategy(prim: MatMul, strategy: tuple, out_strategy: tuple,
                        outs: list) -> tuple:
    """MatMul ((a, b), (b, c)) takes MindSpore's two out strategies: ((a, c),) keeps the rows
    as x1 splits them (the partial sums over b are AllReduced); ((a*b, c),) splits the rows
    by b too, minor to a (the partial sums are reduce-scattered along them)."""
    x1, x2 = strategy
    a, b = (x1[1], x1[0]) if prim.transpose_a else (x1[0], x1[1])
    c = x2[0] if prim.transpose_b else x2[1]
    plain, scattered = ((a, c),), ((a * b, c),)
    got = tuple(tuple(s) for s in out_strategy)
    if got == plain:
        return (("m", "n"),)
    if got == scattered:
        rows = outs[0][0]
        if rows % (a * b):
            raise ValueError(f"For '{prim.name}', the 'out_strategy' {out_strategy} splits the "
                             f"{rows} output rows {a * b} ways, which should divide them, but "
                             f"it does not.")
        return ((("m", "k"), "n"),)
    forms = f"{plain} (the partial sums AllReduced)"
    if b > 1:
        forms += f" or {scattered} (rows split by the reduction too: ReduceScatter)"
    raise ValueError(f"For '{prim.name}', the 'out_strategy' should be {forms} for the "
                     f"in_strategy {strategy}, but got {out_strategy}.")


# -- element-wise ------------------------------------------------------------------------
class NoAttrPrimitive(PrimitiveWithInfer):
    """A primitive without attributes: `Op()`."""

    @prim_attr_register
    def __init__(self) -> None:
        pass


class _Elementwise(NoAttrPrimitive):
    """An element-wise op: `_np_op` (a numpy ufunc or function) on inputs of `valid_types`."""

    valid_types: tuple = arith_types
    _np_op: Callable = None

    writes_output = True
    #: the kernel may write over one of its inputs: a ufunc reads each element before
    #: writing it (the graph executor reuses the buffer of an input that dies here)
    out_may_be_input = True
    kernel = run_lowered


class _Binary(_Elementwise):
    """x (op) y with numpy broadcasting; both inputs of one dtype, which the output keeps."""

    def infer_shape(self, x_shape: list, y_shape: list) -> list:
        return broadcast_shape(self.name, x_shape, y_shape)

    def infer_dtype(self, x_dtype: mstype.Type, y_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"x": x_dtype, "y": y_dtype}, self.valid_types)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return ufunc_kernel(type(self)._np_op, out_abstract, 2)


class Add(_Binary):
    """x + y, broadcast. Bool inputs give logical or.

    >>> Add()(Tensor(np.array([1, 2], np.int32)), Tensor(np.array([[10], [20]], np.int32))).shape
    (2, 2)
    """

    valid_types = (mstype.bool_,) + arith_types
    _np_op = np.add


class Sub(_Binary):
    """x - y, broadcast."""

    _np_op = np.subtract


class Mul(_Binary):
    """x * y, broadcast. Bool inputs give logical and."""

    valid_types = (mstype.bool_,) + arith_types
    _np_op = np.multiply


class RealDiv(_Binary):
    """x / y, broadcast; float and complex dtypes only (an int quotient would change dtype)."""

    valid_types = real_div_types
    _np_op = np.true_divide


class UnaryElementwise(_Elementwise):
    """f(x) element-wise: same shape and dtype."""

    def infer_shape(self, x_shape: list) -> list:
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, self.valid_types, self.name)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return ufunc_kernel(type(self)._np_op, out_abstract, 1)


class Conj(UnaryElementwise):
    """The complex conjugate element-wise (a real input: itself)."""

    _np_op = np.conjugate


def conj_of(g: Any, node: Any) -> Any:
    """`node` conjugated when complex, else itself: a holomorphic op's backward multiplies
    dout by the conjugate of its derivative (the gradient of a complex z for a real loss is
    dL/dRe(z) + i dL/dIm(z))."""
    return g.apply(Conj(), [node]) if node.dtype.kind == "complex" else node


class Neg(UnaryElementwise):
    """-x (unsigned ints are not accepted: their negation wraps)."""

    valid_types = mstype.int_type + mstype.float_type + mstype.complex_type
    _np_op = np.negative


class Square(UnaryElementwise):
    """x * x element-wise."""

    _np_op = np.square


class Exp(UnaryElementwise):
    """e**x element-wise; float and complex dtypes."""

    valid_types = real_div_types
    _np_op = np.exp


class Log(UnaryElementwise):
    """Natural logarithm element-wise; float and complex dtypes."""

    valid_types = real_div_types
    _np_op = np.log


class Equal(_Binary):
    """x == y element-wise, broadcast; a bool output (the mask of ReduceMax's and ReLU's
    backward rules).

    >>> Equal()(Tensor(np.array([1, 2], np.int32)), Tensor(np.array([1, 3], np.int32))).asnumpy()
    array([ True, False])
    """

    valid_types = mstype.all_types
    _np_op = np.equal

    def infer_dtype(self, x_dtype: mstype.Type, y_dtype: mstype.Type) -> mstype.Type:
        check_same_dtype(self.name, {"x": x_dtype, "y": y_dtype}, self.valid_types)
        return mstype.bool_


@sharding_rule(_Elementwise)
def elementwise_spec(prim: PrimitiveWithInfer, ins: list, outs: list, consts: dict) -> DimSpec:
    """Every input aligned to the output from the right (numpy broadcasting); nothing reduced."""
    out = outs[0]
    return DimSpec(tuple(broadcast_letters(s, out) for s in ins), (dims(len(out)),))


# -- reductions --------------------------------------------------------------------------
def reduce_axes(prim_name: str, ndim: int, axis: Any) -> tuple:
    """Normalise a reduction `axis` (int, tuple or list; () = every axis) to sorted axes."""
    validator.check_value_type("axis", axis, (int, tuple, list), prim_name)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if ndim == 0:                   # a scalar reduces to itself, whatever axis names
        axes = tuple(validator.check_axis_in_range(a, 0, "axis", prim_name) for a in axes)
        return ()
    if not axes:
        return tuple(range(ndim))
    norm = [validator.check_axis_in_range(a, ndim, "axis", prim_name) for a in axes]
    if len(set(norm)) != len(norm):
        raise ValueError(f"For '{prim_name}', the 'axis' should not repeat an axis, "
                         f"but got {axis} for a rank-{ndim} input.")
    return tuple(sorted(norm))


class _Reduce(PrimitiveWithInfer):
    """`op(x, axis=())`: reduce x over `axis` (int, tuple, or () for all); keep_dims keeps 1s."""

    #: how partial results of a split reduced axis combine (`DimSpec.partial_op`)
    partial_op = "sum"
    const_inputs = (1,)
    valid_types: tuple = arith_types
    #: the ufunc whose `reduce` this is; `_mean`: the result is divided by the count reduced
    _np_op: np.ufunc = None
    _mean = False
    #: what the op has no value for over zero elements (None: it has one, e.g. a sum's 0)
    _empty_undefined: str | None = None

    @prim_attr_register
    def __init__(self, keep_dims: bool = False) -> None:
        validator.check_bool("keep_dims", keep_dims, self.name)

    def infer_shape(self, x_shape: list, axis: Any = ()) -> list:
        axes = reduce_axes(self.name, len(x_shape), axis)
        if self._empty_undefined and any(x_shape[a] == 0 for a in axes):
            raise ValueError(f"For '{self.name}', the reduced dims of 'x' should not be empty "
                             f"(the {self._empty_undefined} of no values is undefined), but got x "
                             f"shape {list(x_shape)} reduced over axes {sorted(axes)}.")
        if self.keep_dims:
            return [1 if i in axes else d for i, d in enumerate(x_shape)]
        return [d for i, d in enumerate(x_shape) if i not in axes]

    def infer_dtype(self, x_dtype: mstype.Type, axis: Any = ()) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, self.valid_types, self.name)

    writes_output = True
    kernel = run_lowered

    def _accumulate_dtype(self, dtype: np.dtype) -> np.dtype:
        return compute_dtype(dtype)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """The reduction over axes worked out once, into `out`. Float16/bfloat16 accumulate
        in a float32 array rounded once into out (given a float16 out, numpy would round
        the running sum chunk by chunk)."""
        shape, dtype = out_spec(out_abstract)
        x = in_abstracts[0]
        axes = reduce_axes(self.name, len(x.shape),
                           in_abstracts[1].value if len(in_abstracts) > 1 else ())
        reduce, keep = type(self)._np_op.reduce, self.keep_dims
        ct = self._accumulate_dtype(dtype)
        rounded = ct != dtype
        count = math.prod(x.shape[a] for a in axes) if self._mean else None

        def reduced(x: np.ndarray, axis: Any = (), out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            acc = np.empty(shape, ct) if rounded else out
            reduce(x, axes, ct, acc, keep)
            if count is not None:
                np.true_divide(acc, count, out=acc)
            if rounded:
                np.copyto(out, acc, casting="unsafe")
            return out
        return reduced


class ReduceSum(_Reduce):
    """Sum over `axis`: `ReduceSum(keep_dims)(x, axis)`; ints wrap in their own dtype.

    >>> ReduceSum(keep_dims=True)(Tensor(np.ones((2, 3, 4), np.float32)), (0, 2)).shape
    (1, 3, 1)
    """

    _np_op = np.add


class ReduceMean(_Reduce):
    """Mean over `axis`: `ReduceMean(keep_dims)(x, axis)`; float and complex dtypes."""

    partial_op = "mean"
    valid_types = real_div_types
    _np_op = np.add
    _mean = True
    _empty_undefined = "mean"


class ReduceMax(_Reduce):
    """Maximum over `axis`: `ReduceMax(keep_dims)(x, axis)`; real dtypes (no complex order)."""

    valid_types = mstype.int_type + mstype.uint_type + mstype.float_type
    partial_op = "max"
    _np_op = np.maximum
    _empty_undefined = "maximum"

    def _accumulate_dtype(self, dtype: np.dtype) -> np.dtype:
        return dtype                    # a maximum is exact in any dtype


@sharding_rule(_Reduce)
def reduce_spec(prim: _Reduce, ins: list, outs: list, consts: dict) -> DimSpec:
    """The reduced dims' letters leave the output (None with keep_dims): a split one leaves
    partial results, which combine by the op's `partial_op`."""
    x = ins[0]
    axes = reduce_axes(prim.name, len(x), consts.get(1, ()))
    letters = dims(len(x))
    out = tuple((None if j in axes else l) for j, l in enumerate(letters)) if prim.keep_dims \
        else tuple(l for j, l in enumerate(letters) if j not in axes)
    return DimSpec((letters,), (out,), partial_op=prim.partial_op)


# -- AddN, Cast --------------------------------------------------------------------------
class AddN(NoAttrPrimitive):
    """Sum of a tuple/list of tensors of one shape and dtype: AddN()((x1, x2, ...)) -> x1 + x2 + ...

    >>> AddN()((Tensor(np.ones(3, np.float32)), Tensor(np.ones(3, np.float32)))).asnumpy()
    array([2., 2., 2.], dtype=float32)
    """

    def infer_shape(self, x_shapes: list) -> list:
        shapes = check_tensor_list(self.name, "x", x_shapes)
        for i, s in enumerate(shapes[1:], 1):
            if list(s) != list(shapes[0]):
                raise ValueError(f"For '{self.name}', the shape of 'x[{i}]' should be == the "
                                 f"shape of 'x[0]': {list(shapes[0])}, but got {list(s)}.")
        return list(shapes[0])

    def infer_dtype(self, x_dtypes: list) -> mstype.Type:
        return check_tensor_list_dtype(self.name, "x", x_dtypes, (mstype.bool_,) + arith_types)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """The sum into `out`; float16/bfloat16 accumulate in float32, rounded once into out."""
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        rounded = ct != dtype

        def addn(xs: Sequence[np.ndarray], out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            acc = np.empty(shape, ct) if rounded else out
            if len(xs) == 1:
                np.copyto(acc, xs[0])
            else:
                np.add(xs[0], xs[1], out=acc, dtype=ct)
            for x in xs[2:]:
                np.add(acc, x, out=acc, dtype=ct)
            if rounded:
                np.copyto(out, acc, casting="unsafe")
            return out
        return addn


class Cast(NoAttrPrimitive):
    """`Cast()(x, dtype)`: x converted to msops Type `dtype` (complex to real keeps the real part).

    >>> Cast()(Tensor(np.array([1.7, -2.2], np.float32)), mstype.int32).asnumpy()
    array([ 1, -2], dtype=int32)
    """

    const_inputs = (1,)

    def infer_shape(self, x_shape: list, dtype: Any) -> list:
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, dtype: Any) -> mstype.Type:
        validator.check_tensor_dtype_valid("x", x_dtype, mstype.all_types, self.name)
        validator.check_value_type("dtype", dtype, mstype.Type, self.name)
        return validator.check_type_name("dtype", dtype, mstype.all_types, self.name)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        real_part = in_abstracts[0].dtype.kind == "complex" and \
            out_abstract.dtype.kind != "complex"

        def cast(x: np.ndarray, to: Any = None, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, x.real if real_part else x, casting="unsafe")
            return out
        return cast


sharding_rule(AddN, Cast)(elementwise_spec)


# -- Tensor operators --------------------------------------------------------------------
def tensor_operator(prim_cls: type, promote: bool = True,
                    floating: bool = False) -> Callable:
    """A Tensor operator running `prim_cls`: one shared instance eagerly, a fresh one per
    call while tracing (each graph node owns its primitive: strategies attach to it).
    `promote`: operands of different dtypes are cast to the promoted one first
    (`mstype.promote_types`, as MindSpore's operators; `int32 + 1.5` is float32);
    `floating`: an integer result dtype becomes float32 (true division)."""
    shared = prim_cls()

    def call(*args: Any) -> Any:
        prim = prim_cls() if _primitive._trace_hook is not None else shared
        return prim(*(promoted(args, floating) if promote else args))
    call.__name__ = f"operator_{prim_cls.__name__}"
    return call


_CAST = Cast()


# a Tensor's family -> the Python scalars that keep its dtype
_KEEPS = {"bool": (bool,), "int": (bool, int), "uint": (bool, int),
          "float": (bool, int, float), "complex": (bool, int, float, complex)}


def _agree(args: Sequence[Any], floating: bool) -> bool:
    """Whether two operands already compute in one dtype (the usual case, decided fast)."""
    x, y = args
    dx, dy = getattr(x, "_dtype", None), getattr(y, "_dtype", None)
    if dx is None:
        dx, y = dy, x
    elif dy is not None:
        return (dx is dy or dx == dy) and not (floating and dx.kind not in ("float", "complex"))
    return dx is not None and type(y) in _KEEPS[dx.kind] and \
        not (floating and dx.kind not in ("float", "complex"))


def promoted(args: Sequence[Any], floating: bool = False) -> Sequence[Any]:
    """`args` with each Tensor cast to the dtype the operator computes in (unchanged when
    they agree: no Cast is made)."""
    if len(args) == 2 and not hasattr(_primitive._trace_hook, "dtype_of") and \
            _agree(args, floating):
        return args
    tensors = [a for a in args if isinstance(a, Tensor)]
    if not tensors:
        return args
    # the dtype each Tensor reaches the primitive in (a to_float cell's hook casts its
    # Parameters and constants on the way)
    seen = getattr(_primitive._trace_hook, "dtype_of", None) or (lambda t: t.dtype)
    dtypes = [seen(t) for t in tensors]
    target = mstype.promote_types(dtypes, [a for a in args if not isinstance(a, Tensor)])
    if floating and target.kind in ("bool", "int", "uint"):
        target = mstype.float32
    if all(d == target for d in dtypes):
        return args
    cast = Cast() if _primitive._trace_hook is not None else _CAST
    return [cast(a, target) if isinstance(a, Tensor) and seen(a) != target else a
            for a in args]


def _matmul_operator() -> Callable:
    matmul, batch_matmul = tensor_operator(MatMul), tensor_operator(BatchMatMul)

    def call(a: Any, b: Any) -> Any:
        both_2d = len(getattr(a, "shape", ())) == 2 and len(getattr(b, "shape", ())) == 2
        return matmul(a, b) if both_2d else batch_matmul(a, b)
    return call


_OPERATORS.update({
    "__add__": tensor_operator(Add), "__sub__": tensor_operator(Sub),
    "__mul__": tensor_operator(Mul),
    "__truediv__": tensor_operator(RealDiv, floating=True), "__matmul__": _matmul_operator(),
    "__neg__": tensor_operator(Neg), "__eq__": tensor_operator(Equal),
})


# -- backward rules ----------------------------------------------------------------------
# A rule builds its gradients by applying primitives through a builder `g` (the Graph
# when autodiff runs: `apply`, `add_const`, `getitem`, `make_tuple`), so it emits nodes
# like any pass. `inputs`/`out` carry `.shape`, `.dtype` (and `.value` for constants).
def scalar(g: Any, value: float, dtype: mstype.Type) -> Any:
    """A 0-d constant of `dtype` (it broadcasts against any gradient of that dtype)."""
    return g.add_const(np.asarray(value, dtype=dtype.np_dtype))


def zeros(g: Any, shape: Sequence[int], dtype: mstype.Type) -> Any:
    """A zero constant of `shape` and `dtype` (the gradient of an output nobody used)."""
    return g.add_const(np.zeros(tuple(shape), dtype.np_dtype))


def sum_to(g: Any, dx: Any, shape: Sequence[int]) -> Any:
    """`dx` summed over the dims numpy broadcasting added to an input of `shape`: the
    leading dims it lacks, then (kept) the dims where it has 1."""
    shape, have = tuple(shape), tuple(dx.shape)
    if have == shape:
        return dx
    lead = len(have) - len(shape)
    if lead:
        dx = g.apply(ReduceSum(keep_dims=False), [dx, g.add_const(tuple(range(lead)))])
        have = have[lead:]
    axes = tuple(i for i, (a, b) in enumerate(zip(have, shape)) if a != b)
    if axes:
        dx = g.apply(ReduceSum(keep_dims=True), [dx, g.add_const(axes)])
    return dx


def broadcast_to(g: Any, v: Any, shape: Sequence[int]) -> Any:
    """`v` broadcast to `shape` (added to zeros: shape_ops' BroadcastTo sits above this
    module)."""
    if tuple(v.shape) == tuple(shape):
        return v
    return g.apply(Add(), [zeros(g, shape, v.dtype), v])


@bprop(_MatMulBase, complex_values=True)
def matmul_bprop(prim: _MatMulBase, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """d(a @ b): dout @ b^T and a^T @ dout, with the forward's transposes folded into the
    products' flags; batch dims a broadcast added are summed away."""
    a, b = conj_of(g, inputs[0]), conj_of(g, inputs[1])

    def mm(ta: bool, tb: bool, x: Any, y: Any) -> Any:
        return g.apply(type(prim)(transpose_a=ta, transpose_b=tb), [x, y])
    ta, tb = prim.transpose_a, prim.transpose_b
    if not ta and not tb:
        da, db = mm(False, True, dout, b), mm(True, False, a, dout)
    elif not ta:
        da, db = mm(False, False, dout, b), mm(True, False, dout, a)
    elif not tb:
        da, db = mm(False, True, b, dout), mm(False, False, a, dout)
    else:
        da, db = mm(True, True, b, dout), mm(True, True, dout, a)
    return sum_to(g, da, inputs[0].shape), sum_to(g, db, inputs[1].shape)


@bprop(Add, complex_values=True)
def add_bprop(prim: Add, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    x, y = inputs
    return sum_to(g, dout, x.shape), sum_to(g, dout, y.shape)


@bprop(Sub, complex_values=True)
def sub_bprop(prim: Sub, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    x, y = inputs
    return sum_to(g, dout, x.shape), sum_to(g, g.apply(Neg(), [dout]), y.shape)


@bprop(Mul, complex_values=True)
def mul_bprop(prim: Mul, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    x, y = inputs
    return (sum_to(g, g.apply(Mul(), [dout, conj_of(g, y)]), x.shape),
            sum_to(g, g.apply(Mul(), [dout, conj_of(g, x)]), y.shape))


@bprop(RealDiv, complex_values=True)
def real_div_bprop(prim: RealDiv, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """d(x / y): dout / y, and -(dout / y) * out for y."""
    x, y = inputs
    dx = g.apply(RealDiv(), [dout, conj_of(g, y)])
    dy = g.apply(Neg(), [g.apply(Mul(), [dx, conj_of(g, out)])])
    return sum_to(g, dx, x.shape), sum_to(g, dy, y.shape)


@bprop(Neg, complex_values=True)
def neg_bprop(prim: Neg, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    return (g.apply(Neg(), [dout]),)


@bprop(Square, complex_values=True)
def square_bprop(prim: Square, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    x = conj_of(g, inputs[0])
    return (g.apply(Mul(), [dout, g.apply(Mul(), [x, scalar(g, 2, x.dtype)])]),)


@bprop(Exp, complex_values=True)
def exp_bprop(prim: Exp, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    return (g.apply(Mul(), [dout, conj_of(g, out)]),)


@bprop(Log, complex_values=True)
def log_bprop(prim: Log, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    return (g.apply(RealDiv(), [dout, conj_of(g, inputs[0])]),)


@bprop(Conj, complex_values=True)
def conj_bprop(prim: Conj, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Conjugation is real-linear and its own adjoint: conj(dout)."""
    return (conj_of(g, dout),)


@bprop(Equal)
def equal_bprop(prim: Equal, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """A comparison is piecewise constant: no gradient."""
    return None, None


def kept_dims(g: Any, prim: _Reduce, inputs: list, v: Any) -> Any:
    """A reduction's output-shaped `v` with the reduced dims kept as 1s (broadcastable to x)."""
    from msops.primitives.array_ops import Reshape     # array_ops imports this module
    x = inputs[0]
    axes = reduce_axes(prim.name, len(x.shape), inputs[1].value if len(inputs) > 1 else ())
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return v if tuple(v.shape) == shape else g.apply(Reshape(), [v, g.add_const(shape)])


@bprop(ReduceSum, ReduceMean, complex_values=True)
def reduce_sum_bprop(prim: _Reduce, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Every element of x gets its output's gradient (ReduceMean: divided by the count)."""
    x = inputs[0]
    dx = broadcast_to(g, kept_dims(g, prim, inputs, dout), x.shape)
    if prim._mean:
        axes = reduce_axes(prim.name, len(x.shape), inputs[1].value if len(inputs) > 1 else ())
        count = math.prod(x.shape[a] for a in axes)      # >= 1: the forward checked it
        dx = g.apply(Mul(), [dx, scalar(g, 1.0 / count, x.dtype)])
    return (dx,) + (None,) * (len(inputs) - 1)


@bprop(ReduceMax)
def reduce_max_bprop(prim: ReduceMax, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """The gradient goes to the maxima, shared equally between ties (as MindSpore's)."""
    x = inputs[0]
    mask = g.apply(Cast(), [g.apply(Equal(), [x, kept_dims(g, prim, inputs, out)]),
                            g.add_const(x.dtype)])
    axes = inputs[1] if len(inputs) > 1 else g.add_const(())
    ties = g.apply(ReduceSum(keep_dims=True), [mask, axes])
    share = g.apply(RealDiv(), [mask, ties])
    return (g.apply(Mul(), [share, kept_dims(g, prim, inputs, dout)]),) + \
        (None,) * (len(inputs) - 1)


@bprop(AddN, complex_values=True)
def addn_bprop(prim: AddN, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Each summand gets dout: one gradient per element of the tuple input."""
    return ([dout] * len(inputs[0].shape),)


@bprop(Cast, complex_values=True)
def cast_bprop(prim: Cast, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Cast back to x's dtype (autodiff drops it when x is not a float)."""
    return g.apply(Cast(), [dout, g.add_const(inputs[0].dtype)]), None


# -- batch rules (vmap) ------------------------------------------------------------------
batch_rule(_Elementwise)(elementwise_batch)
batch_rule(Cast)(same_dim_batch)


@batch_rule(_MatMulBase)
def matmul_batch(prim: _MatMulBase, args: list, dims: list, size: int) -> tuple:
    """BatchMatMul over the batch axis: batched operands moved to axis 0 and padded to one
    rank, an unbatched MatMul operand given a leading 1 (BatchMatMul takes rank >= 3)."""
    x1, x2 = align_front(args, dims, max(len(a.shape) - (d is not None)
                                         for a, d in zip(args, dims)))
    if isinstance(prim, MatMul):
        x1, x2 = (_leading_one(x, d) for x, d in ((x1, dims[0]), (x2, dims[1])))
    return BatchMatMul(prim.transpose_a, prim.transpose_b)(x1, x2), 0


def _leading_one(x: Any, dim: Any) -> Any:
    """An unbatched matrix with a leading dim of 1; a batched one as it is."""
    from msops.primitives.shape_ops import ExpandDims
    return x if dim is not None else ExpandDims()(x, 0)


@batch_rule(_Reduce)
def reduce_batch(prim: _Reduce, args: list, dims: list, size: int) -> tuple:
    """The reduced axes shifted past the batch axis (moved to 0); () names every element
    axis, not the batch axis."""
    x = to_front(args[0], dims[0])
    ndim = len(x.shape) - 1
    if ndim == 0:                                 # a scalar reduces to itself
        return x, 0
    axes = reduce_axes(prim.name, ndim, args[1] if len(args) > 1 else ())
    return prim(x, tuple(a + 1 for a in axes)), 0


@batch_rule(AddN)
def addn_batch(prim: AddN, args: list, dims: list, size: int) -> tuple:
    """Every summand batched at axis 0 (the unbatched ones repeated: AddN takes one shape)."""
    return prim(tuple(broadcast_front(x, d, size) for x, d in zip(args[0], dims[0]))), 0
