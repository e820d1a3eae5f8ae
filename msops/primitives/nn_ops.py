"""Neural-network primitives: ReLU, Softmax, SoftmaxCrossEntropyWithLogits, OneHot, BatchNorm,
Dropout.

Float16/bfloat16 inputs are computed in float32 (exponentials, means and variances
lose too much in half precision) and rounded once to the input dtype.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.counter_rng import uniform_at
from msops.common.initializer import get_seed, next_draw
from msops.common.tensor import contiguous
from msops.common.validator import Rel
from msops.primitives.array_ops import Concat, Reshape, StridedSlice
from msops.primitives.comm_ops import AllReduce, ReduceOp
from msops.primitives.lowering import out_spec, run_lowered, ufunc_kernel
from msops.primitives.math_ops import (Add, Cast, Equal, Exp, Log, Mul, Neg, NoAttrPrimitive,
                                       RealDiv, ReduceMax, ReduceSum, Square, Sub,
                                       UnaryElementwise, check_rank, check_same_dtype,
                                       compute_dtype, reduce_axes, scalar)
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import fold_batch, per_element, to_front, with_attrs
from msops.primitives.rules import batch_rule, bprop, expansion_rule, sharding_rule
from msops.primitives.sharding import DimSpec, ShardedCall, dims
from msops.primitives.unary_ops import Rsqrt

__all__ = ["ReLU", "Softmax", "SoftmaxCrossEntropyWithLogits", "OneHot", "BatchNorm", "Dropout"]

float_types = mstype.float_type


class ReLU(UnaryElementwise):
    """max(x, 0) element-wise; same shape and dtype (signed ints and floats)."""

    valid_types = mstype.int_type + mstype.float_type
    _np_op = np.maximum

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        zero = out_abstract.dtype.np_dtype.type(0)
        return ufunc_kernel(type(self)._np_op, out_abstract, 1, zero)


def log_softmax(x: np.ndarray, axis: Any) -> np.ndarray:
    """log(softmax(x)) over `axis`, stable (the max is subtracted first)."""
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


class Softmax(PrimitiveWithInfer):
    """exp(x) / sum(exp(x)) over `axis` (an int or a tuple of ints); same shape and dtype.

    >>> Softmax()(Tensor(np.array([0.0, np.log(3.0)], np.float32))).asnumpy()
    array([0.25, 0.75], dtype=float32)
    """

    @prim_attr_register
    def __init__(self, axis: int | tuple = -1) -> None:
        validator.check_value_type("axis", axis, (int, tuple), self.name)
        if isinstance(axis, tuple):
            if not axis:
                raise ValueError(f"For '{self.name}', the 'axis' should be an int or a non-empty "
                                 f"tuple of ints, but got {axis}.")
            for a in axis:
                validator.check_value_type("axis", a, int, self.name)

    def infer_shape(self, x_shape: list) -> list:
        check_rank(self.name, "x", x_shape, 1)
        reduce_axes(self.name, len(x_shape), self.axis)
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, float_types, self.name)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """exp(x - max) / its sum over the axes worked out once, into `out`; float16 and
        bfloat16 are computed in a float32 array rounded once into out."""
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        rounded = ct != dtype
        axes = reduce_axes(self.name, len(shape), self.axis)

        def softmax(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            if not x.size:                        # nothing to normalise (max has no identity)
                return out
            e = np.empty(shape, ct) if rounded else out
            np.subtract(x, np.maximum.reduce(x, axes, keepdims=True), out=e, dtype=ct)
            np.exp(e, out=e)
            np.true_divide(e, np.add.reduce(e, axes, keepdims=True), out=e)
            if rounded:
                np.copyto(out, e, casting="unsafe")
            return out
        return softmax


@sharding_rule(Softmax)
def softmax_spec(prim: Softmax, ins: list, outs: list, consts: dict) -> DimSpec:
    """The same letters in and out; the normalised axes cannot be split (nor in MindSpore)."""
    letters = dims(len(ins[0]))
    axes = (prim.axis,) if isinstance(prim.axis, int) else tuple(prim.axis)
    bad = tuple((letters[a % len(letters)], f"Softmax normalises along axis {a}") for a in axes)
    return DimSpec((letters,), (letters,), unsplittable=bad)


class SoftmaxCrossEntropyWithLogits(NoAttrPrimitive):
    """Cross entropy of softmax(logits) against (one-hot) labels, with its gradient.

    Inputs: logits (N, C), labels (N, C) of the same float dtype.
    Outputs: (loss (N,) = -sum_c labels * log softmax(logits),
              dlogits (N, C) = softmax(logits) - labels).

    >>> loss, dlogits = SoftmaxCrossEntropyWithLogits()(
    ...     Tensor(np.zeros((1, 4), np.float32)), Tensor(np.eye(4, dtype=np.float32)[:1]))
    >>> loss.asnumpy(), loss.shape, dlogits.shape
    (array([1.3862944], dtype=float32), (1,), (1, 4))
    """

    def infer_shape(self, logits_shape: list, labels_shape: list) -> tuple:
        check_rank(self.name, "logits", logits_shape, 2, 2)
        if logits_shape[1] == 0:
            raise ValueError(f"For '{self.name}', the 'logits shape[1]' (classes) should be "
                             f"> 0, but got logits shape {list(logits_shape)}.")
        if list(labels_shape) != list(logits_shape):
            raise ValueError(f"For '{self.name}', the 'labels shape' should be == 'logits shape': "
                             f"{list(logits_shape)}, but got {list(labels_shape)}.")
        return [logits_shape[0]], list(logits_shape)

    def infer_dtype(self, logits_dtype: mstype.Type, labels_dtype: mstype.Type) -> tuple:
        t = check_same_dtype(self.name, {"logits": logits_dtype, "labels": labels_dtype},
                             float_types)
        return t, t

    def kernel(self, logits: np.ndarray, labels: np.ndarray) -> tuple:
        ct = compute_dtype(logits.dtype)
        logp = log_softmax(logits.astype(ct, copy=False), 1)
        y = labels.astype(ct, copy=False)
        loss = -(y * logp).sum(axis=1)
        return loss.astype(logits.dtype), (np.exp(logp) - y).astype(logits.dtype)


@sharding_rule(SoftmaxCrossEntropyWithLogits)
def softmax_cross_entropy_spec(prim: SoftmaxCrossEntropyWithLogits, ins: list, outs: list,
                               consts: dict) -> DimSpec:
    """(n, c), (n, c) -> (n,), (n, c): a split class dim is reduced inside the op (by its
    expansion), so "c" stays in an output and leaves no partial result."""
    return DimSpec((("n", "c"), ("n", "c")), (("n",), ("n", "c")))


@expansion_rule(SoftmaxCrossEntropyWithLogits)
def softmax_cross_entropy_split_classes(prim: SoftmaxCrossEntropyWithLogits,
                                        call: ShardedCall) -> Any:
    """With the class dim split, the row max, the sum of exponentials and the label
    dot-product are AllReduced across the class group: three (N,)-sized collectives
    instead of gathering the (N, C) logits."""
    class_axes = call.in_axes[0][1]
    if not class_axes:
        return None
    logits, labels = call.args()
    group = call.group(class_axes)
    one = call.const((1,))

    def across(t: Any, op: str) -> Any:
        return call.apply(AllReduce(op, group), [t])

    row_max = across(call.apply(ReduceMax(keep_dims=True), [logits, one]), ReduceOp.MAX)
    shifted = call.apply(Sub(), [logits, row_max])
    exp = call.apply(Exp(), [shifted])
    total = across(call.apply(ReduceSum(keep_dims=True), [exp, one]), ReduceOp.SUM)
    log_p = call.apply(Sub(), [shifted, call.apply(Log(), [total])])
    dot = call.apply(ReduceSum(keep_dims=False), [call.apply(Mul(), [labels, log_p]), one])
    loss = call.apply(Neg(), [across(dot, ReduceOp.SUM)])
    grad = call.apply(Sub(), [call.apply(RealDiv(), [exp, total]), labels])
    return call.make_tuple([loss, grad])


class OneHot(PrimitiveWithInfer):
    """`OneHot(axis)(indices, depth, on_value, off_value)`: on_value where index == position.

    indices (int) of shape S gives S with `depth` inserted at `axis` (-1 = last); on_value
    and off_value are 0-d tensors of one dtype, the output's. Indices outside [0, depth)
    give an all-off row.

    >>> OneHot()(Tensor(np.array([0, 2, 5], np.int32)), 3, 1.0, 0.0).asnumpy()
    array([[1., 0., 0.],
           [0., 0., 1.],
           [0., 0., 0.]], dtype=float32)
    """

    const_inputs = (1,)

    @prim_attr_register
    def __init__(self, axis: int = -1) -> None:
        validator.check_int("axis", axis, self.name)

    def infer_shape(self, indices_shape: list, depth: Any, on_shape: list, off_shape: list) -> list:
        validator.check_non_negative_int(depth, "depth", self.name)
        validator.check_int_range(self.axis, -1, len(indices_shape), Rel.INC_BOTH, "axis",
                                  self.name)
        for arg, shape in (("on_value", on_shape), ("off_value", off_shape)):
            check_rank(self.name, arg, shape, 0, 0)
        out = list(indices_shape)
        out.insert(len(out) if self.axis == -1 else self.axis, depth)
        return out

    def infer_dtype(self, indices_dtype: mstype.Type, depth: Any, on_dtype: mstype.Type,
                    off_dtype: mstype.Type) -> mstype.Type:
        validator.check_tensor_dtype_valid("indices", indices_dtype,
                                           mstype.int_type + mstype.uint_type, self.name)
        return check_same_dtype(self.name, {"on_value": on_dtype, "off_value": off_dtype},
                                mstype.all_types)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        depth, ndim = in_abstracts[1].value, len(shape)
        axis = ndim - 1 if self.axis == -1 else self.axis
        positions = np.arange(depth).reshape([depth if i == axis else 1 for i in range(ndim)])
        index_shape = [1 if i == axis else d for i, d in enumerate(shape)]

        def one_hot(indices: np.ndarray, depth: int, on_value: np.ndarray,
                    off_value: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, off_value)
            np.copyto(out, on_value, where=indices.reshape(index_shape) == positions)
            return out
        return one_hot


@sharding_rule(OneHot)
def onehot_spec(prim: OneHot, ins: list, outs: list, consts: dict) -> DimSpec:
    """The indices' dims carry over; the inserted depth dim and the 0-d on/off values are whole."""
    idx = dims(len(ins[0]))
    out = list(idx)
    out.insert(len(idx) if prim.axis == -1 else prim.axis, None)
    return DimSpec((idx,) + tuple(() for _ in ins[1:]), (tuple(out),))


class BatchNorm(PrimitiveWithInfer):
    """Batch normalization: y = (x - mean) / sqrt(variance + epsilon) * scale + bias, per channel.

    Inputs: x of shape (N, C) or 4-D (NCHW, or NHWC with data_format="NHWC"); scale, bias,
    mean, variance of shape (C,), one float dtype (x may differ, e.g. float16 x).
    Outputs (y, batch_mean, batch_variance, reserve_space_1, reserve_space_2): y like x,
    the rest (C,) in scale's dtype.
      * is_training: y uses the batch's mean and (biased) variance, returned as
        reserve_space_1/2; batch_mean/batch_variance are the updated moving statistics
        (1 - momentum) * mean + momentum * batch statistic (the inputs are not modified).
      * inference: y uses the given mean/variance, and all four statistics outputs
        repeat them.
    """

    fresh_outputs = True            # every output is a new array (copies, even inference's)

    @prim_attr_register
    def __init__(self, is_training: bool = False, epsilon: float = 1e-5, momentum: float = 0.1,
                 data_format: str = "NCHW") -> None:
        validator.check_bool("is_training", is_training, self.name)
        validator.check_value_type("epsilon", epsilon, float, self.name)
        validator.check_value_type("momentum", momentum, (float, int), self.name)
        if not 0 < epsilon <= 1:
            raise ValueError(f"For '{self.name}', the 'epsilon' should be in (0, 1], "
                             f"but got {epsilon}.")
        if not 0 <= momentum <= 1:
            raise ValueError(f"For '{self.name}', the 'momentum' should be in [0, 1], "
                             f"but got {momentum}.")
        validator.check_string("data_format", data_format, ("NCHW", "NHWC"), self.name)

    def channel_axis(self, ndim: int) -> int:
        """The channel dim of an input of rank `ndim` (1, or 3 for 4-D NHWC)."""
        return 3 if ndim == 4 and self.data_format == "NHWC" else 1

    def infer_shape(self, x_shape: list, scale_shape: list, bias_shape: list, mean_shape: list,
                    variance_shape: list) -> tuple:
        if len(x_shape) not in (2, 4):
            raise ValueError(f"For '{self.name}', the rank of 'x' should be 2 or 4, "
                             f"but got shape {list(x_shape)} of rank {len(x_shape)}.")
        c = x_shape[self.channel_axis(len(x_shape))]
        for arg, shape in (("scale", scale_shape), ("bias", bias_shape), ("mean", mean_shape),
                           ("variance", variance_shape)):
            if list(shape) != [c]:
                raise ValueError(f"For '{self.name}', the '{arg} shape' should be == [C] for the "
                                 f"{c} channels of x shape {list(x_shape)}: [{c}], "
                                 f"but got {list(shape)}.")
        per_channel = int(np.prod(x_shape)) // c if c > 0 else 0
        if self.is_training and per_channel == 0 and all(d >= 0 for d in x_shape):
            # the batch statistics of no values are NaN, and would poison the moving ones
            raise ValueError(f"For '{self.name}', the 'x' should hold at least one value per "
                             f"channel in training, but got x shape {list(x_shape)}.")
        return (list(x_shape),) + tuple([c] for _ in range(4))

    def infer_dtype(self, x_dtype: mstype.Type, scale_dtype: mstype.Type, bias_dtype: mstype.Type,
                    mean_dtype: mstype.Type, variance_dtype: mstype.Type) -> tuple:
        validator.check_tensor_dtype_valid("x", x_dtype, float_types, self.name)
        t = check_same_dtype(self.name, {"scale": scale_dtype, "bias": bias_dtype,
                                         "mean": mean_dtype, "variance": variance_dtype},
                             float_types)
        return (x_dtype,) + (t,) * 4

    def kernel(self, x: np.ndarray, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray,
               variance: np.ndarray) -> tuple:
        c_axis = self.channel_axis(x.ndim)
        ct = np.promote_types(compute_dtype(x.dtype), compute_dtype(scale.dtype))
        xc = x.astype(ct, copy=False)
        if self.is_training:
            others = tuple(i for i in range(x.ndim) if i != c_axis)
            used_mean, used_var = xc.mean(axis=others), xc.var(axis=others)
            m = self.momentum
            moving_mean = (1 - m) * mean.astype(ct) + m * used_mean
            moving_var = (1 - m) * variance.astype(ct) + m * used_var
        else:
            used_mean, used_var = mean.astype(ct), variance.astype(ct)
            moving_mean, moving_var = used_mean, used_var
        y = batch_norm_apply(xc, scale.astype(ct), bias.astype(ct), used_mean, used_var,
                             self.epsilon, c_axis)
        stats = (moving_mean, moving_var, used_mean, used_var)
        return (contiguous(y.astype(x.dtype, copy=False)),) + \
            tuple(s.astype(scale.dtype, copy=True) for s in stats)


def batch_norm_apply(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray,
                     variance: np.ndarray, epsilon: float, c_axis: int) -> np.ndarray:
    """(x - mean) / sqrt(variance + epsilon) * scale + bias, the (C,) vectors along `c_axis`."""
    shape = [-1 if i == c_axis else 1 for i in range(x.ndim)]
    inv = (scale / np.sqrt(variance + epsilon)).reshape(shape)
    return (x - mean.reshape(shape)) * inv + bias.reshape(shape)


@sharding_rule(BatchNorm)
def batchnorm_spec(prim: BatchNorm, ins: list, outs: list, consts: dict) -> DimSpec:
    """x's channel dim is the (C,) vectors' dim "c"; its other dims may split (training
    statistics over a split batch come from the expansion, so nothing is left partial)."""
    ndim = len(ins[0])
    x = tuple("c" if d == prim.channel_axis(ndim) else f"d{d}" for d in range(ndim))
    c = ("c",)
    return DimSpec((x, c, c, c, c), (x, c, c, c, c))


@expansion_rule(BatchNorm)
def batchnorm_global_statistics(prim: BatchNorm, call: ShardedCall) -> Any:
    """Training BatchNorm with a split batch: its statistics are the global batch's
    (`batch_norm_over_group` over the ranks splitting the batch), so the sharded net equals
    the serial one."""
    ndim = len(call.in_shapes[0])
    c_axis = prim.channel_axis(ndim)
    split_axes = sorted({k for d, axes in enumerate(call.in_axes[0]) if d != c_axis
                         for k in axes})
    if not prim.is_training or not split_axes:
        return None
    total = int(np.prod([n for d, n in enumerate(call.in_shapes[0]) if d != c_axis]))
    return batch_norm_over_group(prim, call, call.args(), call.group(split_axes), total)


def batch_norm_over_group(prim: BatchNorm, b: Any, args: Sequence[Any], group: str,
                          total_count: int | None = None) -> Any:
    """Training `prim` on this rank's part of a batch split over the ranks of `group`: the
    mean and biased variance from local sums AllReduced over the group (two collectives of
    (C,); with `total_count` None, the group's value count is not known here and each
    rank's rides in the first, (C + 1,), so ranks may hold different batch sizes), the
    inference-mode op normalising with them, and the moving statistics updated as the
    serial op's. `b` builds: a ShardedCall, or a builder calling each primitive
    (nn.SyncBatchNorm). The backward needs nothing more: AllReduce(sum)'s rule sums the
    statistics' gradients over the group. Returns BatchNorm's five outputs."""
    x, scale, bias, moving_mean, moving_var = args
    ndim = len(x.shape)
    c_axis = prim.channel_axis(ndim)
    channels = x.shape[c_axis]
    red_axes = tuple(d for d in range(ndim) if d != c_axis)
    stats_dtype = moving_mean.dtype          # statistics live in the parameters' dtype
    np_dtype = stats_dtype.np_dtype
    xs = x if x.dtype == stats_dtype else b.apply(Cast(), [x, b.const(stats_dtype)])

    def group_sum(t: Any, *extra: Any) -> Any:
        t = b.apply(ReduceSum(keep_dims=False), [t, b.const(red_axes)])
        if extra:
            t = b.apply(Concat(0), [b.make_tuple([t, *extra])])
        return b.apply(AllReduce(ReduceOp.SUM, group), [t])

    def part(t: Any, begin: int, end: int) -> Any:
        return b.apply(StridedSlice(), [t, b.const((begin,)), b.const((end,)), b.const((1,))])

    if total_count is None:
        local_count = int(np.prod([x.shape[d] for d in red_axes]))
        sums = group_sum(xs, b.const(np.asarray([local_count], np_dtype)))
        count = part(sums, channels, channels + 1)
        sums = part(sums, 0, channels)
    else:
        sums, count = group_sum(xs), b.const(np.asarray(total_count, np_dtype))
    mean = b.apply(RealDiv(), [sums, count])
    bshape = tuple(channels if d == c_axis else 1 for d in range(ndim))
    centred = b.apply(Sub(), [xs, b.apply(Reshape(), [mean, b.const(bshape)])])
    var = b.apply(RealDiv(), [group_sum(b.apply(Square(), [centred])), count])
    infer_bn = BatchNorm(is_training=False, epsilon=prim.epsilon, momentum=prim.momentum,
                         data_format=prim.data_format)
    y = b.getitem(b.apply(infer_bn, [x, scale, bias, mean, var]), 0)
    m = prim.momentum

    def moving(old: Any, batch: Any) -> Any:
        keep = b.apply(Mul(), [old, b.const(np.asarray(1 - m, np_dtype))])
        return b.apply(Add(), [keep, b.apply(Mul(), [batch, b.const(np.asarray(m, np_dtype))])])

    return b.make_tuple([y, moving(moving_mean, mean), moving(moving_var, var), mean, var])


class Dropout(PrimitiveWithInfer):
    """Zero each element with probability 1 - keep_prob and scale the kept ones by 1/keep_prob.

    Input x (float); outputs (output, mask), both x's shape and dtype: mask is 1 where kept,
    output = x * mask / keep_prob. The draw of element i (its flat index in the whole
    tensor) depends only on the seed ((Seed0, Seed1), or the global `set_seed` seed when
    both are 0), the call's counter (`next_draw`, restarted by `set_seed`) and i.

    >>> out, mask = Dropout(keep_prob=1.0)(Tensor(np.ones(3, np.float32)))
    >>> out.asnumpy(), mask.asnumpy()
    (array([1., 1., 1.], dtype=float32), array([1., 1., 1.], dtype=float32))
    """

    draws_random = True

    @prim_attr_register
    def __init__(self, keep_prob: float = 0.5, Seed0: int = 0, Seed1: int = 0) -> None:
        validator.check_value_type("keep_prob", keep_prob, float, self.name)
        if not 0 < keep_prob <= 1:
            raise ValueError(f"For '{self.name}', the 'keep_prob' should be in (0, 1], "
                             f"but got {keep_prob}.")
        validator.check_value_type("Seed0", Seed0, int, self.name)
        validator.check_value_type("Seed1", Seed1, int, self.name)

    def infer_shape(self, x_shape: list) -> tuple:
        return list(x_shape), list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> tuple:
        t = validator.check_tensor_dtype_valid("x", x_dtype, float_types, self.name)
        largest = float(np.finfo(compute_dtype(t.np_dtype)).max)
        if 1.0 / self.keep_prob > largest:     # the kept values' scale would be inf, 0 * inf NaN
            raise ValueError(f"For '{self.name}', the 'keep_prob' should be >= {1 / largest:.3g} "
                             f"(1 / keep_prob finite in the compute dtype of {t}), but got "
                             f"{self.keep_prob}.")
        return t, t

    def seed(self) -> int:
        """The seed of the draws: (Seed0, Seed1) as one 64-bit word, or the global seed."""
        if self.Seed0 == 0 and self.Seed1 == 0:
            return get_seed()
        return ((self.Seed0 & 0xFFFFFFFF) << 32) | (self.Seed1 & 0xFFFFFFFF)

    def kernel(self, x: np.ndarray) -> tuple:
        u = uniform_at(self.seed(), next_draw(), np.arange(x.size).reshape(x.shape))
        mask = (u < self.keep_prob).astype(x.dtype)
        ct = compute_dtype(x.dtype)
        out = x.astype(ct) * mask.astype(ct) * ct.type(1.0 / self.keep_prob)
        return contiguous(out.astype(x.dtype, copy=False)), mask


@sharding_rule(Dropout)
def dropout_spec(prim: Dropout, ins: list, outs: list, consts: dict) -> DimSpec:
    """Whole: a kernel does not know its slice's global offset, and the mask of element i
    is drawn from i's global index (so a parallel graph gathers x and draws the serial mask)."""
    letters = dims(len(ins[0]))
    reason = "its mask is drawn per global element index, which a slice's kernel lacks"
    return DimSpec((letters,), (letters, letters),
                   unsplittable=tuple((letter, reason) for letter in letters))


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
@bprop(ReLU)
def relu_bprop(prim: ReLU, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout where the output is positive (0 at x <= 0, as MindSpore's ReluGrad)."""
    dead = g.apply(Cast(), [g.apply(Equal(), [out, scalar(g, 0, out.dtype)]),
                            g.add_const(out.dtype)])
    alive = g.apply(Sub(), [scalar(g, 1, out.dtype), dead])
    return (g.apply(Mul(), [dout, alive]),)


@bprop(Softmax)
def softmax_bprop(prim: Softmax, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """out * (dout - sum(dout * out)) over the softmax axes."""
    axes = reduce_axes(prim.name, len(out.shape), prim.axis)
    dot = g.apply(ReduceSum(keep_dims=True), [g.apply(Mul(), [dout, out]), g.add_const(axes)])
    return (g.apply(Mul(), [out, g.apply(Sub(), [dout, dot])]),)


@bprop(SoftmaxCrossEntropyWithLogits)
def softmax_cross_entropy_bprop(prim: SoftmaxCrossEntropyWithLogits, inputs: list, out: Any,
                                dout: list, g: Any) -> tuple:
    """Through the loss output: dloss[:, None] * (softmax * sum(labels) - labels) for the
    logits (softmax - labels, the op's own second output, when each label row sums to 1)
    and -dloss[:, None] * log_softmax(logits) for the labels. The second output is not
    differentiated, as in MindSpore."""
    logits, labels = inputs
    n = logits.shape[0]
    dloss = g.apply(Reshape(), [dout[0], g.add_const((n, 1))])
    one = g.add_const((1,))
    shifted = g.apply(Sub(), [logits, g.apply(ReduceMax(keep_dims=True), [logits, one])])
    total = g.apply(ReduceSum(keep_dims=True), [g.apply(Exp(), [shifted]), one])
    log_p = g.apply(Sub(), [shifted, g.apply(Log(), [total])])
    mass = g.apply(ReduceSum(keep_dims=True), [labels, one])
    p = g.apply(Mul(), [g.apply(Exp(), [log_p]), mass])
    dlogits = g.apply(Mul(), [dloss, g.apply(Sub(), [p, labels])])
    dlabels = g.apply(Neg(), [g.apply(Mul(), [dloss, log_p])])
    return dlogits, dlabels


@bprop(OneHot)
def onehot_bprop(prim: OneHot, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Integer indices get none; on_value gets the sum of dout where an index is hot,
    off_value the rest (MindSpore returns zeros for both)."""
    indices, depth, on, off = inputs
    hot = g.apply(OneHot(prim.axis), [indices, depth, scalar(g, 1, out.dtype),
                                      scalar(g, 0, out.dtype)])
    everything = g.add_const(())
    d_on = g.apply(ReduceSum(), [g.apply(Mul(), [dout, hot]), everything])
    d_off = g.apply(Sub(), [g.apply(ReduceSum(), [dout, everything]), d_on])
    return None, None, d_on, d_off


@bprop(BatchNorm)
def batchnorm_bprop(prim: BatchNorm, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """Through y (the statistics outputs are not differentiated, as in MindSpore), in the
    statistics' dtype. Training (batch statistics, xhat = (x - mean) * inv):
        dx = scale * inv * (dy - mean(dy) - xhat * mean(dy * xhat)),
    inference: dx = scale * inv * dy, dmean = -scale * inv * dbias and
    dvar = -scale * inv**2 * dscale / 2; both: dscale = sum(dy * xhat), dbias = sum(dy).
    In training the mean and variance inputs feed only the moving statistics: none."""
    x, scale = inputs[0], inputs[1]
    ndim = len(x.shape)
    c_axis = prim.channel_axis(ndim)
    ct = scale.dtype
    others = g.add_const(tuple(d for d in range(ndim) if d != c_axis))
    bshape = g.add_const(tuple(x.shape[d] if d == c_axis else 1 for d in range(ndim)))

    def cast(t: Any, dtype: Any) -> Any:
        return t if t.dtype == dtype else g.apply(Cast(), [t, g.add_const(dtype)])

    def per_channel(t: Any) -> Any:
        return g.apply(Reshape(), [t, bshape])

    def channel_sum(t: Any) -> Any:
        return g.apply(ReduceSum(keep_dims=False), [t, others])

    xs, dy = cast(x, ct), cast(dout[0], ct)
    if prim.is_training:
        mean, var = g.getitem(out, 3), g.getitem(out, 4)
    else:
        mean, var = inputs[3], inputs[4]
    inv = g.apply(Rsqrt(), [g.apply(Add(), [var, scalar(g, prim.epsilon, ct)])])
    xhat = g.apply(Mul(), [g.apply(Sub(), [xs, per_channel(mean)]), per_channel(inv)])
    dbias = channel_sum(dy)
    dscale = channel_sum(g.apply(Mul(), [dy, xhat]))
    gain = per_channel(g.apply(Mul(), [scale, inv]))
    if prim.is_training:
        count = int(np.prod([x.shape[d] for d in range(ndim) if d != c_axis]))
        k = scalar(g, 1.0 / count, ct)
        centred = g.apply(Sub(), [dy, per_channel(g.apply(Mul(), [dbias, k]))])
        centred = g.apply(Sub(), [centred, g.apply(Mul(), [
            xhat, per_channel(g.apply(Mul(), [dscale, k]))])])
        dx = g.apply(Mul(), [gain, centred])
        return cast(dx, x.dtype), dscale, dbias, None, None
    dx = g.apply(Mul(), [gain, dy])
    scale_inv = g.apply(Mul(), [scale, inv])
    dmean = g.apply(Neg(), [g.apply(Mul(), [scale_inv, dbias])])
    dvar = g.apply(Mul(), [g.apply(Mul(), [scale_inv, inv]),
                           g.apply(Mul(), [dscale, scalar(g, -0.5, ct)])])
    return cast(dx, x.dtype), dscale, dbias, dmean, dvar


@bprop(Dropout)
def dropout_bprop(prim: Dropout, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """dout * mask / keep_prob through the output (the mask is not differentiated)."""
    mask = g.getitem(out, 1)
    scaled = g.apply(Mul(), [mask, scalar(g, 1.0 / prim.keep_prob, mask.dtype)])
    return (g.apply(Mul(), [dout[0], scaled]),)


# -- batch rules (vmap) ------------------------------------------------------------------
@batch_rule(Softmax)
def softmax_batch(prim: Softmax, args: list, dims: list, size: int) -> tuple:
    """The normalised axes shifted past the batch axis (moved to 0)."""
    x = to_front(args[0], dims[0])
    axes = reduce_axes(prim.name, len(x.shape) - 1, prim.axis)
    return with_attrs(prim, axis=tuple(a + 1 for a in axes))(x), 0


# rows never mix: the batch folds into N (logits and labels alike)
batch_rule(SoftmaxCrossEntropyWithLogits)(fold_batch(0, 1))


@batch_rule(OneHot)
def one_hot_batch(prim: OneHot, args: list, dims: list, size: int) -> tuple:
    """Batched indices moved to axis 0, the depth axis shifted past it (-1 stays last);
    batched on/off values per element."""
    if dims[2] is not None or dims[3] is not None:
        return per_element(prim, args, dims, size)
    indices = to_front(args[0], dims[0])
    axis = prim.axis if prim.axis == -1 else prim.axis + 1
    return with_attrs(prim, axis=axis)(indices, *args[1:]), 0
