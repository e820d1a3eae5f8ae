"""MindSpore's Tensor methods (`x.view(b, -1)`, `x.mean(-1, True)`, `x.softmax(-1)`) as thin
adapters over the functional forms.

A traced value (SymbolicTensor) is a Tensor, so each method records the same primitives
in graph mode as it runs eagerly. They are attached to Tensor through
`register_methods` because the common layer may not import this one. Methods that need
values (tolist, numpy) stay eager-only: a traced Tensor refuses value access.
"""
from __future__ import annotations

from typing import Any

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, register_methods
from msops import ops as F        # the package namespace, complete before this module loads
from msops.ops.tensor_index import getitem, iterate, setitem


def _ints(method: str, arg: str, values: tuple) -> tuple:
    """`values` given as varargs or as one tuple/list, checked to be ints."""
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        values = tuple(values[0])
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"For 'Tensor.{method}', the '{arg}' should be ints (or one tuple "
                            f"of ints), but got {values!r}.")
    return tuple(values)


def _shape(method: str, self: Tensor, shape: tuple) -> tuple:
    shape = _ints(method, "shape", shape)
    if shape.count(-1) > 1 or [s for s in shape if s < -1]:
        raise ValueError(f"For 'Tensor.{method}', the 'shape' may hold at most one -1 and no "
                         f"other negative size, but got {shape}.")
    return shape


def _axis(method: str, arg: str, axis: Any, ndim: int) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int) or not -max(ndim, 1) <= axis < max(ndim, 1):
        raise ValueError(f"For 'Tensor.{method}', the '{arg}' should be an int in "
                         f"[{-max(ndim, 1)}, {max(ndim, 1)}), but got {axis!r}.")
    return axis % max(ndim, 1)


def _perm(method: str, self: Tensor, axes: tuple) -> tuple:
    """A permutation of the axes (none given: reversed), negatives normalised."""
    axes = _ints(method, "axes", axes)
    n = self.ndim
    if not axes:
        return tuple(range(n - 1, -1, -1))
    normal = [a % n for a in axes if -n <= a < n]
    if len(axes) != n or sorted(normal) != list(range(n)):
        raise ValueError(f"For 'Tensor.{method}', the 'axes' should be a permutation of the "
                         f"{n} axes, but got {axes}.")
    return tuple(normal)


# --- shape -------------------------------------------------------------------------------

def reshape(self: Tensor, *shape: int) -> Tensor:
    """`x.reshape(2, -1)` or `x.reshape((2, -1))`."""
    return F.reshape(self, _shape("reshape", self, shape))


def view(self: Tensor, *shape: int) -> Tensor:
    """`x.view(b, -1)`: a reshape (msops tensors are always contiguous)."""
    return F.reshape(self, _shape("view", self, shape))


def transpose(self: Tensor, *axes: int) -> Tensor:
    """numpy's permutation: `x.transpose(0, 2, 1, 3)`; no axes reverses them."""
    return F.transpose(self, _perm("transpose", self, axes))


def permute(self: Tensor, *axis: int) -> Tensor:
    """`x.permute(0, 2, 1)`: a transpose by the given permutation."""
    return F.transpose(self, _perm("permute", self, axis))


def swapaxes(self: Tensor, axis0: int, axis1: int) -> Tensor:
    """The two axes exchanged."""
    perm = list(range(self.ndim))
    a, b = _axis("swapaxes", "axis0", axis0, self.ndim), _axis("swapaxes", "axis1", axis1, self.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return F.transpose(self, tuple(perm))


def moveaxis(self: Tensor, source: Any, destination: Any) -> Tensor:
    return F.moveaxis(self, source, destination)


def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return F.diagonal(self, offset, dim1, dim2)


def tensor_split(self: Tensor, indices_or_sections: Any, axis: int = 0) -> tuple:
    return F.tensor_split(self, indices_or_sections, axis)


def _T(self: Tensor) -> Tensor:
    return F.transpose(self, tuple(range(self.ndim - 1, -1, -1)))


def expand_dims(self: Tensor, axis: int) -> Tensor:
    return F.expand_dims(self, axis)


def unsqueeze(self: Tensor, dim: int) -> Tensor:
    return F.unsqueeze(self, dim)


def squeeze(self: Tensor, axis: int | tuple | None = None) -> Tensor:
    return F.squeeze(self, axis)


def flatten(self: Tensor, order: str = "C", *, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """All of `start_dim..end_dim` in one axis (by default: a 1-D tensor)."""
    return F.flatten(self, order, start_dim=start_dim, end_dim=end_dim)


def broadcast_to(self: Tensor, shape: tuple) -> Tensor:
    return F.broadcast_to(self, shape)


def expand_as(self: Tensor, other: Tensor) -> Tensor:
    """Broadcast to `other`'s shape."""
    return F.broadcast_to(self, tuple(other.shape))


def narrow(self: Tensor, axis: int, start: int, length: int) -> Tensor:
    return F.narrow(self, axis, start, length)


def flip(self: Tensor, dims: Any) -> Tensor:
    return F.flip(self, dims)


def tile(self: Tensor, reps: tuple) -> Tensor:
    return F.tile(self, tuple(reps))


def repeat(self: Tensor, repeats: Any, axis: int | None = None) -> Tensor:
    """numpy's repeat (each element `repeats` times along `axis`; None: flattened)."""
    if axis is None:
        return F.repeat_interleave(F.reshape(self, (-1,)), repeats, 0)
    return F.repeat_interleave(self, repeats, axis)


def split(self: Tensor, split_size_or_sections: Any, axis: int = 0) -> tuple:
    return F.split(self, split_size_or_sections, axis)


def chunk(self: Tensor, chunks: int, axis: int = 0) -> tuple:
    return F.chunk(self, chunks, axis)


def tril(self: Tensor, diagonal: int = 0) -> Tensor:
    return F.tril(self, diagonal)


def triu(self: Tensor, diagonal: int = 0) -> Tensor:
    return F.triu(self, diagonal)


# --- reductions ----------------------------------------------------------------------------

def mean(self: Tensor, axis: Any = None, keep_dims: bool = False) -> Tensor:
    return F.mean(self, axis, keep_dims)


def sum(self: Tensor, axis: Any = None, dtype: mstype.Type | None = None, keepdims: bool = False,
        initial: Any = None) -> Tensor:
    """The sum over `axis` (None: all), in `dtype` if given, plus `initial` if given."""
    out = F.sum(self, axis, keepdims, dtype=dtype)
    return out if initial is None else out + initial


def prod(self: Tensor, axis: Any = None, keep_dims: bool = False,
         dtype: mstype.Type | None = None) -> Tensor:
    return F.prod(self, axis, keep_dims, dtype)


def _extreme(name: str, values: Any, with_index: Any):
    def method(self: Tensor, axis: Any = None, keepdims: bool = False, *, initial: Any = None,
               where: Any = True, return_indices: bool = False) -> Any:
        where = None if where is True else where
        if return_indices:
            if isinstance(axis, (tuple, list)):
                raise ValueError(f"For 'Tensor.{name}', 'return_indices' needs one int 'axis', "
                                 f"but got {axis!r}.")
            return with_index(self, axis, keepdims, initial=initial, where=where)
        return values(self, axis, keepdims, initial=initial, where=where)
    method.__name__ = name
    method.__doc__ = (f"The {name}imum over `axis` (None: all); with `return_indices` "
                      f"(value, index) along one axis.")
    return method


def argmax(self: Tensor, axis: int | None = None, keepdims: bool = False) -> Tensor:
    return F.argmax(self, axis, keepdims)


def argmin(self: Tensor, axis: int | None = None, keepdims: bool = False) -> Tensor:
    return F.argmin(self, axis, keepdims)


def all(self: Tensor, axis: Any = None, keep_dims: bool = False) -> Tensor:
    """True where every element over `axis` (None: all) is nonzero (`ops.all`)."""
    return F.all(self, axis, keep_dims)


def any(self: Tensor, axis: Any = None, keep_dims: bool = False) -> Tensor:
    """True where some element over `axis` (None: all) is nonzero (`ops.any`)."""
    return F.any(self, axis, keep_dims)


def var(self: Tensor, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Tensor:
    """`ops.var`: sum((x - mean(x))**2) / (N - ddof) over `axis` (None: all)."""
    return F.var(self, axis, ddof, keepdims)


def std(self: Tensor, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Tensor:
    """`ops.std`: the square root of `var`."""
    return F.std(self, axis, ddof, keepdims)


def logsumexp(self: Tensor, axis: Any, keepdims: bool = False) -> Tensor:
    return F.logsumexp(self, axis, keepdims)


def count_nonzero(self: Tensor, axis: Any = (), keep_dims: bool = False,
                  dtype: mstype.Type = mstype.int32) -> Tensor:
    return F.count_nonzero(self, axis, keep_dims, dtype)


def cumprod(self: Tensor, dim: int, dtype: mstype.Type | None = None) -> Tensor:
    return F.cumprod(self, dim, dtype)


def nansum(self: Tensor, axis: Any = None, keepdims: bool = False,
           dtype: mstype.Type | None = None) -> Tensor:
    return F.nansum(self, axis, keepdims, dtype=dtype)


def nanmean(self: Tensor, axis: Any = None, keepdims: bool = False, *,
            dtype: mstype.Type | None = None) -> Tensor:
    return F.nanmean(self, axis, keepdims, dtype=dtype)


def norm(self: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
         dtype: mstype.Type | None = None) -> Tensor:
    return F.norm(self, ord, dim, keepdim, dtype=dtype)


def cumsum(self: Tensor, axis: int | None = None, dtype: mstype.Type | None = None) -> Tensor:
    """Running sum along `axis` (None: of the flattened tensor)."""
    if axis is None:
        return F.cumsum(F.reshape(self, (-1,)), 0, dtype)
    return F.cumsum(self, axis, dtype)


def sort(self: Tensor, axis: int = -1, descending: bool = False) -> tuple:
    return F.sort(self, axis, descending)


def topk(self: Tensor, k: int, dim: int | None = None, largest: bool = True,
         sorted: bool = True) -> tuple:
    return F.topk(self, k, dim, largest, sorted)


# --- element-wise ----------------------------------------------------------------------------

def _unary(name: str):
    def method(self: Tensor) -> Tensor:
        return getattr(F, name)(self)
    method.__name__ = name
    method.__doc__ = f"`ops.{name}(x)`."
    return method


def _binary(name: str, arg: str):
    def method(self: Tensor, other: Any) -> Tensor:
        return getattr(F, name)(self, other)
    method.__name__ = name
    method.__doc__ = f"`ops.{name}(x, {arg})`."
    return method


def div(self: Tensor, value: Any, *, rounding_mode: str | None = None) -> Tensor:
    return F.div(self, value, rounding_mode=rounding_mode)


def softmax(self: Tensor, axis: int, dtype: mstype.Type | None = None) -> Tensor:
    return F.softmax(self, axis, dtype=dtype)


def clip(self: Tensor, xmin: Any, xmax: Any, dtype: mstype.Type | None = None) -> Tensor:
    """Values limited to [xmin, xmax], cast to `dtype` if given."""
    out = F.clip(self, xmin, xmax)
    return out if dtype is None else F.cast(out, dtype)


def lerp(self: Tensor, end: Any, weight: Any) -> Tensor:
    return F.lerp(self, end, weight)


def nan_to_num(self: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    return F.nan_to_num(self, nan, posinf, neginf)


def logit(self: Tensor, eps: float | None = None) -> Tensor:
    return F.logit(self, eps)


def masked_fill(self: Tensor, mask: Any, value: Any) -> Tensor:
    return F.masked_fill(self, mask, value)


def gather(self: Tensor, input_indices: Any, axis: int, batch_dims: int = 0) -> Tensor:
    return F.gather(self, input_indices, axis, batch_dims)


def index_select(self: Tensor, axis: int, index: Any) -> Tensor:
    return F.index_select(self, axis, index)


# --- dtype and values ---------------------------------------------------------------------------

def _cast_to(name: str, dtype: mstype.Type):
    def method(self: Tensor) -> Tensor:
        return F.cast(self, dtype)
    method.__name__ = name
    method.__doc__ = f"This tensor as {dtype}."
    return method


def to(self: Tensor, dtype: mstype.Type) -> Tensor:
    """This tensor as `dtype` (a differentiable cast)."""
    return F.cast(self, dtype)


def nonzero(self: Tensor, *, as_tuple: bool = False) -> Any:
    """`ops.nonzero(self, as_tuple=as_tuple)` (values known: eager, or a constant)."""
    return F.nonzero(self, as_tuple=as_tuple)


def masked_select(self: Tensor, mask: Tensor) -> Tensor:
    """`ops.masked_select(self, mask)`: the elements where `mask` (known values) is True."""
    return F.masked_select(self, mask)


def unique_consecutive(self: Tensor, return_idx: bool = False, return_counts: bool = False,
                       axis: int | None = None) -> Any:
    """`ops.unique_consecutive(self, ...)` (values known: eager, or a constant)."""
    return F.unique_consecutive(self, return_idx, return_counts, axis)


def tolist(self: Tensor) -> Any:
    """The values as nested Python lists (eager only)."""
    return self.asnumpy().tolist()


def numpy(self: Tensor) -> Any:
    """The values as a numpy array (`asnumpy`; eager only)."""
    return self.asnumpy()


METHODS: dict[str, Any] = {
    "reshape": reshape, "view": view, "transpose": transpose, "permute": permute,
    "swapaxes": swapaxes, "T": property(_T), "expand_dims": expand_dims, "unsqueeze": unsqueeze,
    "squeeze": squeeze, "flatten": flatten, "broadcast_to": broadcast_to, "expand_as": expand_as,
    "narrow": narrow, "flip": flip, "tile": tile, "repeat": repeat, "split": split,
    "chunk": chunk, "tril": tril, "triu": triu, "moveaxis": moveaxis, "movedim": moveaxis,
    "swapdims": F.swapdims, "ravel": F.ravel,
    "t": F.t, "diagonal": diagonal, "tensor_split": tensor_split,
    "hsplit": F.hsplit, "vsplit": F.vsplit, "dsplit": F.dsplit,
    "mean": mean, "sum": sum, "prod": prod, "argmax": argmax, "argmin": argmin,
    "max": _extreme("max", F.amax, F.max), "min": _extreme("min", F.amin, F.min),
    "all": all, "any": any, "var": var, "std": std, "norm": norm, "cumsum": cumsum,
    "logsumexp": logsumexp, "count_nonzero": count_nonzero, "cumprod": cumprod,
    "nansum": nansum, "nanmean": nanmean,
    "sort": sort, "topk": topk,
    "div": div, "softmax": softmax, "clip": clip, "masked_fill": masked_fill,
    "lerp": lerp, "nan_to_num": nan_to_num, "logit": logit,
    "gather": gather, "index_select": index_select,
    "to": to, "tolist": tolist, "numpy": numpy, "nonzero": nonzero,
    "masked_select": masked_select, "unique_consecutive": unique_consecutive,
    "argwhere": lambda self: F.argwhere(self),
    "__getitem__": getitem, "__setitem__": setitem, "__iter__": iterate,
}
METHODS.update({n: _unary(n) for n in (
    "abs", "exp", "log", "sqrt", "square", "neg", "sign", "erf", "sigmoid", "tanh", "relu",
    "round", "floor", "ceil", "isnan", "trunc", "frac", "sinc", "deg2rad", "rad2deg", "log2",
    "log10", "exp2", "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh")})
METHODS.update({n: _unary(n) for n in ("real", "imag", "conj")})
METHODS.update({n: _binary(n, a) for n, a in (
    ("pow", "exponent"), ("matmul", "tensor2"), ("add", "other"), ("sub", "y"), ("mul", "value"),
    ("equal", "other"), ("ne", "other"), ("gt", "other"), ("ge", "other"), ("lt", "other"),
    ("le", "other"), ("hypot", "other"), ("xlogy", "other"), ("xdivy", "y"),
    ("logaddexp", "other"), ("logaddexp2", "other"), ("float_power", "exponent"),
    ("copysign", "other"), ("heaviside", "values"), ("fmax", "other"), ("fmin", "other"))})
# linear algebra: the functional forms, self as their first argument
METHODS.update({n: _unary(n) for n in ("inverse", "det", "slogdet", "logdet", "matrix_exp")})
METHODS.update({n: _binary(n, a) for n, a in (("kron", "other"), ("inner", "other"),
                                              ("mv", "vec"))})
METHODS.update({
    "matrix_power": lambda self, n: F.matrix_power(self, n),
    "cholesky": lambda self, upper=False: F.cholesky(self, upper),
    "cholesky_solve": lambda self, input2, upper=False: F.cholesky_solve(self, input2, upper),
    "cholesky_inverse": lambda self, upper=False: F.cholesky_inverse(self, upper),
    "svd": lambda self, full_matrices=False, compute_uv=True: F.svd(self, full_matrices,
                                                                    compute_uv),
    "cross": lambda self, other, dim=None: F.cross(self, other, dim),
    "addmm": lambda self, mat1, mat2, *, beta=1, alpha=1: F.addmm(self, mat1, mat2, beta=beta,
                                                                  alpha=alpha),
    "addmv": lambda self, mat, vec, *, beta=1, alpha=1: F.addmv(self, mat, vec, beta=beta,
                                                                alpha=alpha),
    "addbmm": lambda self, b1, b2, *, beta=1, alpha=1: F.addbmm(self, b1, b2, beta=beta,
                                                                alpha=alpha),
    "baddbmm": lambda self, b1, b2, beta=1, alpha=1: F.baddbmm(self, b1, b2, beta, alpha),
    "addr": lambda self, vec1, vec2, *, beta=1, alpha=1: F.addr(self, vec1, vec2, beta=beta,
                                                                alpha=alpha),
})
METHODS.update({n: _cast_to(n, t) for n, t in (
    ("float", mstype.float32), ("half", mstype.float16), ("double", mstype.float64),
    ("int", mstype.int32), ("long", mstype.int64), ("bool", mstype.bool_))})

# array functions of view_func / diag_func: self as their first argument
METHODS.update({
    "type_as": lambda self, other: F.type_as(self, other),
    "view_as": lambda self, other: F.view_as(self, other),
    "aminmax": lambda self, *, axis=0, keepdims=False: F.aminmax(self, axis=axis,
                                                                 keepdims=keepdims),
    "index_fill": lambda self, axis, index, value: F.index_fill(self, axis, index, value),
    "unique_with_pad": lambda self, pad_num: F.unique_with_pad(self, pad_num),
    "diagflat": lambda self, offset=0: F.diagflat(self, offset),
    "slice_scatter": lambda self, src, axis=0, start=None, end=None, step=1: F.slice_scatter(
        self, src, axis, start, end, step),
    "select_scatter": lambda self, src, axis, index: F.select_scatter(self, src, axis, index),
    "diagonal_scatter": lambda self, src, offset=0, dim1=0, dim2=1: F.diagonal_scatter(
        self, src, offset, dim1, dim2),
})

register_methods(METHODS)
