"""msops/ops/view_func.py: expand, expand_as, type_as, view_as, range, strided_slice, slice,
reverse, repeat_elements, sequence_mask, reverse_sequence, index_fill, aminmax, top_k.
Values against numpy written here, eagerly and inside a compiled Cell; gradients of the
differentiable ones against float64 finite differences; argument errors name the function
and the argument."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(77)
A = RNG.standard_normal((3, 4, 5)).astype(np.float32)
C = RNG.standard_normal((3, 1)).astype(np.float32)
LENS = np.array([2, 0, 4], np.int32)


def np_reverse_sequence(x, lengths, seq_dim, batch_dim):
    out = x.copy()
    for b, n in enumerate(lengths):
        index = [slice(None)] * x.ndim
        index[batch_dim] = b
        index[seq_dim] = slice(0, n)
        src = x[tuple(index)]
        # the reversed part: the seq dim's position in the sliced array shifts by one when
        # the batch dim comes before it
        out[tuple(index)] = np.flip(src, seq_dim - (batch_dim < seq_dim))
    return out


def np_index_fill(x, axis, index, value):
    out = x.copy()
    sl = [slice(None)] * x.ndim
    sl[axis] = np.asarray(index) % x.shape[axis]
    out[tuple(sl)] = value
    return out


def np_unique_with_pad(x, pad):
    seen = {}
    for v in x.tolist():
        seen.setdefault(v, len(seen))
    y = np.full(x.shape, pad, x.dtype)
    y[:len(seen)] = list(seen)
    return y, np.array([seen[v] for v in x.tolist()], x.dtype)


UNIQ = np.array([3, -2, 3, 9, 9, -2, 0, 3], np.int32)


def np_popcount(values, bits):
    """The 1 bits of each Python int's two's complement in `bits` bits."""
    return np.vectorize(lambda v: bin(v & (2 ** bits - 1)).count("1"), otypes=[np.uint8])(
        np.array(values, object))


# (name, call on Tensors, inputs, numpy reference)
FORMS = [
    ("expand", lambda x: ops.expand(x, (2, -1, 4)), (C,), np.broadcast_to(C, (2, 3, 4))),
    ("expand_tensor_size", lambda x: ops.expand(x, Tensor(np.array([3, 6]))), (C,),
     np.broadcast_to(C, (3, 6))),
    ("expand_as", lambda x, y: ops.expand_as(x, y), (C, A[:, :, 0]),
     np.broadcast_to(C, (3, 4))),
    ("type_as", lambda x, y: ops.type_as(x, y), (A, LENS), A.astype(np.int32)),
    ("view_as", lambda x, y: ops.view_as(x, y), (A, A.reshape(6, 10)), A.reshape(6, 10)),
    ("strided_slice", lambda x: ops.strided_slice(x, (1, 0, 4), (3, 4, 0), (1, 2, -2)), (A,),
     A[1:3, 0:4:2, 4:0:-2]),
    ("strided_slice_masks", lambda x: ops.strided_slice(x, (0, 1, 0), (0, 3, 2), (1, 1, 1),
                                                        begin_mask=1, end_mask=1,
                                                        shrink_axis_mask=4), (A,),
     A[:, 1:3, 0]),
    ("strided_slice_ellipsis_new_axis", lambda x: ops.strided_slice(
        x, (0, 0, 2), (0, 0, 5), (1, 1, 1), ellipsis_mask=1, new_axis_mask=2), (A,),
     A[..., None, 2:5]),
    ("slice", lambda x: ops.slice(x, (1, 0, 2), (2, -1, 3)), (A,), A[1:3, :, 2:5]),
    ("slice_tensor_args", lambda x: ops.slice(x, Tensor(np.array([0, 2, 1])),
                                              Tensor(np.array([1, 2, 2]))), (A,),
     A[0:1, 2:4, 1:3]),
    ("reverse", lambda x: ops.reverse(x, (0, 2)), (A,), A[::-1, :, ::-1]),
    ("repeat_elements", lambda x: ops.repeat_elements(x, 2, 1), (A,), np.repeat(A, 2, 1)),
    ("sequence_mask", lambda n: ops.sequence_mask(n, 5), (LENS,),
     np.arange(5)[None, :] < LENS[:, None]),
    ("reverse_sequence", lambda x, n: ops.reverse_sequence(x, n, 1, 0), (A, LENS),
     np_reverse_sequence(A, LENS, 1, 0)),
    ("reverse_sequence_batch_last",
     lambda x, n: ops.reverse_sequence(x, n, seq_dim=0, batch_dim=2),
     (A, np.array([3, 1, 0, 2, 3], np.int64)),
     np_reverse_sequence(A, [3, 1, 0, 2, 3], 0, 2)),
    ("index_fill", lambda x, i: ops.index_fill(x, 1, i, -7.5), (A, np.array([0, -1], np.int32)),
     np_index_fill(A, 1, [0, -1], -7.5)),
    ("index_fill_tensor_value", lambda x, i: ops.index_fill(x, 2, i, Tensor(2.0, ms.float32)),
     (A, np.array([3], np.int64)), np_index_fill(A, 2, [3], 2.0)),
    ("aminmax", lambda x: ops.stack(ops.aminmax(x, axis=1)), (A,),
     np.stack([A.min(1), A.max(1)])),
    ("aminmax_none_keepdims", lambda x: ops.concat(ops.aminmax(x, axis=None, keepdims=True)),
     (A,), np.concatenate([A.min(keepdims=True), A.max(keepdims=True)])),
    ("take", lambda x, i: ops.take(x, i), (A, np.array([[0, 59], [-1, 17]], np.int64)),
     A.reshape(-1)[np.array([[0, 59], [59, 17]])]),
    ("population_count_int16", lambda x: ops.population_count(x),
     (np.array([[0, 1, -1], [255, -32768, 21845]], np.int16),),
     np_popcount([[0, 1, -1], [255, -32768, 21845]], 16)),
    ("population_count_int64", lambda x: ops.population_count(x),
     (np.array([-2, 2 ** 40 + 3, 0], np.int64),),
     np_popcount([-2, 2 ** 40 + 3, 0], 64)),
    ("population_count_uint8", lambda x: ops.population_count(x),
     (np.arange(256, dtype=np.uint8),),
     np_popcount(list(range(256)), 8)),
    ("unique_with_pad_y", lambda x: ops.unique_with_pad(x, 100)[0], (UNIQ,),
     np_unique_with_pad(UNIQ, 100)[0]),
    ("unique_with_pad_idx", lambda x: ops.unique_with_pad(x, 100)[1], (UNIQ.astype(np.int64),),
     np_unique_with_pad(UNIQ.astype(np.int64), 100)[1]),
    ("top_k_values", lambda x: ops.top_k(x, 3)[0], (A,), -np.sort(-A, -1)[..., :3]),
    ("top_k_indices", lambda x: ops.top_k(x, 3)[1], (A,), np.argsort(-A, -1, kind="stable")[..., :3].astype(np.int32)),
]


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    eager, compiled = eager_and_compiled(fn, *[Tensor(v) for v in inputs])
    for out in (eager, compiled):
        assert out.shape == np.shape(want)
        assert out.asnumpy().dtype == np.asarray(want).dtype
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6, atol=1e-6)


def test_range_dtypes_and_values_follow_mindspore():
    out = ops.range(0, 10, 4)
    assert out.dtype == ms.int64
    np.testing.assert_array_equal(out.asnumpy(), [0, 4, 8])
    out = ops.range(1.0, -1.0, -0.5)
    assert out.dtype == ms.float32
    np.testing.assert_allclose(out.asnumpy(), [1.0, 0.5, 0.0, -0.5])
    out = ops.range(Tensor(2, ms.int32), Tensor(7, ms.int32), Tensor(2, ms.int32))
    assert out.dtype == ms.int32
    np.testing.assert_array_equal(out.asnumpy(), [2, 4, 6])


X64 = RNG.standard_normal((3, 4, 5))


@pytest.mark.parametrize("fn", [
    lambda x: ops.expand(x[:, :1], (2, 3, 4, 5)),
    lambda x: ops.strided_slice(x, (2, 0, 1), (0, 4, 5), (-1, 3, 2), end_mask=1),
    lambda x: ops.slice(x, (1, 1, 0), (-1, 2, 3)),
    lambda x: ops.reverse_sequence(x, Tensor(np.array([4, 1, 3], np.int32)), 1),
    lambda x: ops.index_fill(x, 0, Tensor(np.array([1], np.int32)), 0.5),
    lambda x: ops.repeat_elements(x, 3, 2),
    lambda x: ops.aminmax(x, axis=-1)[0] * 2 + ops.aminmax(x, axis=-1)[1],
    lambda x: ops.top_k(x, 2)[0],
    lambda x: ops.take(x, Tensor(np.array([3, 3, -2, 40], np.int64))),
], ids=["expand", "strided_slice", "slice", "reverse_sequence", "index_fill",
        "repeat_elements", "aminmax", "top_k", "take"])
def test_gradients_match_finite_differences(fn):
    grad = ms.grad(lambda x: ops.ReduceSum()(fn(x) * fn(x), ()))(Tensor(X64))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy() ** 2, X64)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("make,err,match", [
    (lambda: ops.expand(Tensor(A), (3, 2, 5)), ValueError, "For 'expand', the 'size.1.'"),
    (lambda: ops.view_as(Tensor(A), Tensor(C)), ValueError, "For 'view_as', the 'other'"),
    (lambda: ops.range(0, 5.0, 1), TypeError, "For 'range', the 'start', 'end' and 'step'"),
    (lambda: ops.range(0, 5, 0), ValueError, "For 'range', the 'step'"),
    (lambda: ops.range(0, 50, 1, maxlen=10), ValueError, "'maxlen' 10"),
    (lambda: ops.range(5, 0, 1), ValueError, "'step' should go from 'start'"),
    (lambda: ops.slice(Tensor(A), (0, 0, 4), (1, 1, 2)), ValueError,
     "For 'slice', the 'begin.2.' and 'size.2.'"),
    (lambda: ops.slice(Tensor(A), (0, 0), (1, 1)), ValueError, "one entry per dim"),
    (lambda: ops.strided_slice(Tensor(A), (0,), (1,), (0,)), ValueError, "'strides.0.'"),
    (lambda: ops.repeat_elements(Tensor(A), 0), ValueError,
     "For 'repeat_elements', the 'rep' should be > 0"),
    (lambda: ops.sequence_mask(Tensor(A), 3), TypeError, "For 'sequence_mask', the 'lengths'"),
    (lambda: ops.sequence_mask(Tensor(LENS), 0), ValueError, "'maxlen' should be a positive"),
    (lambda: ops.reverse_sequence(Tensor(A), Tensor(LENS), 0, 0), ValueError,
     "'seq_dim' and 'batch_dim'"),
    (lambda: ops.reverse_sequence(Tensor(A), Tensor(np.array([1, 9, 2])), 1), ValueError,
     "'seq_lengths' should be in .0, 4."),
    (lambda: ops.reverse_sequence(Tensor(A), Tensor(np.array([1, 2])), 1), ValueError,
     "'seq_lengths' shape should be .3."),
    (lambda: ops.index_fill(Tensor(A), 1, Tensor(np.array([4])), 1.0), ValueError,
     "For 'index_fill', the 'index' should be in .-4, 4."),
    (lambda: ops.index_fill(Tensor(A), 3, Tensor(np.array([0])), 1.0), ValueError,
     "For 'index_fill', the 'axis'"),
    (lambda: ops.aminmax(Tensor(A), axis=1, keepdims=1), TypeError, "'keepdims'"),
    (lambda: ops.top_k(Tensor(A), 9), ValueError, "For 'TopK', the 'k'"),
    (lambda: ops.population_count(Tensor(A)), TypeError, "For 'PopulationCount', the 'x'"),
    (lambda: ops.unique_with_pad(Tensor(UNIQ.reshape(2, 4)), 0), ValueError,
     "For 'UniqueWithPad', the 'x' should be 1-D"),
    (lambda: ops.unique_with_pad(Tensor(A[0, 0]), 0), TypeError, "For 'UniqueWithPad', the 'x'"),
    (lambda: ops.unique_with_pad(Tensor(UNIQ), 1.5), TypeError,
     "For 'unique_with_pad', the 'pad_num' should be an int"),
    (lambda: ops.take(Tensor(A), Tensor(np.array([60]))), ValueError,
     "For 'take', every value of 'index' should be in .-60, 60."),
    (lambda: ops.take(Tensor(A), Tensor(np.array([1], np.int32))), TypeError,
     "For 'take', the 'index' should be an int64"),
])
def test_argument_errors_name_the_function_and_argument(make, err, match):
    with pytest.raises(err, match=match):
        make()


def test_tensor_methods():
    x = Tensor(A)
    np.testing.assert_array_equal(x.type_as(Tensor(LENS)).asnumpy(), A.astype(np.int32))
    assert x.view_as(Tensor(A.reshape(60))).shape == (60,)
    lo, hi = x.aminmax(axis=2)
    np.testing.assert_array_equal(lo.asnumpy(), A.min(2))
    np.testing.assert_array_equal(hi.asnumpy(), A.max(2))
    np.testing.assert_array_equal(
        x.index_fill(0, Tensor(np.array([2])), 0.0).asnumpy(), np_index_fill(A, 0, [2], 0.0))
    y, idx = Tensor(UNIQ).unique_with_pad(-1)
    np.testing.assert_array_equal(y.asnumpy(), np_unique_with_pad(UNIQ, -1)[0])
    np.testing.assert_array_equal(idx.asnumpy(), np_unique_with_pad(UNIQ, -1)[1])
