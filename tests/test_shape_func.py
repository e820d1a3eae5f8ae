"""The shape helpers of msops.ops.shape_func (swapaxes, moveaxis, the stacks, tensor_split
and h/v/dsplit, atleast_Nd, ravel, t, diagonal, tril/triu_indices) and their Tensor methods:
values against numpy, eagerly and inside a compiled Cell; gradients of the slicing ones
against finite differences; argument errors naming the function and the argument."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(8)
A = RNG.standard_normal((2, 3, 4)).astype(np.float32)
M = RNG.standard_normal((3, 5)).astype(np.float32)
V = RNG.standard_normal(3).astype(np.float32)
S = np.float32(2.5)


FORMS = [
    ("swapaxes", lambda x: ops.swapaxes(x, 0, -1), (A,), np.swapaxes(A, 0, -1)),
    ("swapdims", lambda x: ops.swapdims(x, 1, 2), (A,), np.swapaxes(A, 1, 2)),
    ("moveaxis", lambda x: ops.moveaxis(x, 0, -1), (A,), np.moveaxis(A, 0, -1)),
    ("movedim_seq", lambda x: ops.movedim(x, (0, 1), (2, 0)), (A,),
     np.moveaxis(A, (0, 1), (2, 0))),
    ("hstack", lambda x, y: ops.hstack([x, y]), (M, M[:, :2]), np.hstack([M, M[:, :2]])),
    ("hstack_1d", lambda x, y: ops.hstack((x, y)), (V, V), np.hstack([V, V])),
    ("vstack", lambda x, y: ops.vstack([x, y]), (M[:, :3], V), np.vstack([M[:, :3], V])),
    ("row_stack", lambda x, y: ops.row_stack([x, y]), (V, V), np.vstack([V, V])),
    ("dstack", lambda x, y: ops.dstack([x, y]), (M, M), np.dstack([M, M])),
    ("dstack_1d", lambda x, y: ops.dstack([x, y]), (V, V), np.dstack([V, V])),
    ("column_stack", lambda x, y, z: ops.column_stack([x, y, z]), (V, M[:, :2], V),
     np.column_stack([V, M[:, :2], V])),
    ("tensor_split_int", lambda x: ops.tensor_split(x, 3, 2), (A,),
     tuple(np.array_split(A, 3, 2))),
    ("tensor_split_indices", lambda x: ops.tensor_split(x, [1, -1, 9], -1), (A,),
     tuple(np.array_split(A, [1, -1, 9], -1))),
    ("hsplit", lambda x: ops.hsplit(x, 3), (A,), tuple(np.hsplit(A, 3))),
    ("hsplit_uneven", lambda x: ops.hsplit(x, 2), (M,), tuple(np.array_split(M, 2, 1))),
    ("vsplit", lambda x: ops.vsplit(x, [2]), (M,), tuple(np.vsplit(M, [2]))),
    ("dsplit", lambda x: ops.dsplit(x, 3), (A,), tuple(np.array_split(A, 3, 2))),
    ("atleast_1d", lambda x: ops.atleast_1d(x), (S,), np.atleast_1d(S)),
    ("atleast_2d_list", lambda x, y, z: ops.atleast_2d([x, y, z]), (S, V, A),
     tuple(np.atleast_2d(S, V, A))),
    ("atleast_3d_list", lambda x, y, z: ops.atleast_3d((x, y, z)), (S, V, M),
     tuple(np.atleast_3d(S, V, M))),
    ("ravel", lambda x: ops.ravel(x), (A,), A.ravel()),
    ("t", lambda x: ops.t(x), (M,), M.T),
    ("t_1d", lambda x: ops.t(x), (V,), V),
    ("diagonal", lambda x: ops.diagonal(x), (M,), np.diagonal(M)),
    ("diagonal_offset", lambda x: ops.diagonal(x, 2, 2, 0), (A,), np.diagonal(A, 2, 2, 0)),
    ("diagonal_below", lambda x: ops.diagonal(x, -1, -1, 1), (A,), np.diagonal(A, -1, -1, 1)),
    ("diagonal_empty", lambda x: ops.diagonal(x, 7), (M,), np.diagonal(M, 7)),
    ("tensor_methods", lambda x: (x.moveaxis(0, 1), x.diagonal(1, 1, 2), x.ravel(),
                                  x.tensor_split(2, 1)[1], x.swapdims(0, 2)),
     (A,), (np.moveaxis(A, 0, 1), np.diagonal(A, 1, 1, 2), A.ravel(),
            np.array_split(A, 2, 1)[1], np.swapaxes(A, 0, 2))),
]


def _check(out, want):
    outs, wants = (out, want) if isinstance(want, tuple) else ((out,), (want,))
    assert isinstance(out, tuple) == isinstance(want, tuple) and len(outs) == len(wants)
    for o, w in zip(outs, wants):
        assert o.shape == w.shape and o.dtype == ms.dtype.pytype_to_dtype(w.dtype)
        np.testing.assert_array_equal(o.asnumpy(), w)


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_form_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    for out in eager_and_compiled(fn, *[Tensor(v) for v in inputs]):
        _check(out, want)


@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (3, 5, 1), (4, 2, -1), (2, 4, -3),
                                            (0, 3, 0)])
def test_tril_triu_indices_equal_numpy(row, col, offset):
    for fn, ref in ((ops.tril_indices, np.tril_indices), (ops.triu_indices, np.triu_indices)):
        got = fn(row, col, offset)
        assert got.dtype == ms.int64 and got.shape == (2, len(ref(row, offset, col)[0]))
        np.testing.assert_array_equal(got.asnumpy(), np.stack(ref(row, offset, col)))
    assert ops.tril_indices(3, 3, dtype=ms.int32).dtype == ms.int32


X = RNG.standard_normal((3, 4, 5))
W = RNG.standard_normal((3, 4, 5))


@pytest.mark.parametrize("fn", [
    lambda x: ops.diagonal(x, 1, 0, 2),
    lambda x: ops.tensor_split(x, [1, 3], 1)[1] * 2.0 + ops.tensor_split(x, [1, 3], 1)[2].sum(),
    lambda x: ops.hstack([x, x * 3.0]),
    lambda x: ops.moveaxis(x, [0, 2], [1, 0]),
], ids=["diagonal", "tensor_split", "hstack", "moveaxis"])
def test_gradients_match_finite_differences(fn):
    weights = Tensor(RNG.standard_normal(fn(Tensor(X)).shape))
    grad = ms.grad(lambda t: ops.ReduceSum()(fn(t) * weights, ()))(Tensor(X))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy() * weights.asnumpy(), X)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("call,err,match", [
    (lambda: ops.swapaxes(Tensor(A), 0, 3), ValueError, r"For 'swapaxes', the 'axis1' should be"),
    (lambda: ops.moveaxis(Tensor(A), (0, 1), 2), ValueError,
     r"For 'moveaxis', the 'source' and 'destination' should name as many dims"),
    (lambda: ops.moveaxis(Tensor(A), (0, 0), (1, 2)), ValueError,
     r"For 'moveaxis', the 'source' should not repeat a dim"),
    (lambda: ops.hstack(Tensor(A)), TypeError, r"For 'hstack', the 'tensors' should be"),
    (lambda: ops.tensor_split(Tensor(A), 0), ValueError,
     r"For 'tensor_split', the 'indices_or_sections' should be a positive int"),
    (lambda: ops.tensor_split(Tensor(A), 1.5), TypeError,
     r"For 'tensor_split', the 'indices_or_sections' should be an int"),
    (lambda: ops.vsplit(Tensor(V), 3), ValueError,
     r"For 'vsplit', the 'input' should have at least 2 dims"),
    (lambda: ops.hsplit(Tensor(V), 2), ValueError,
     r"For 'hsplit', the 'input' should have at least 2 dims"),
    (lambda: ops.t(Tensor(A)), ValueError, r"For 't', the 'input' should have at most 2 dims"),
    (lambda: ops.diagonal(Tensor(A), 0, 1, -2), ValueError,
     r"For 'diagonal', the 'dim1' and 'dim2' should be different dims"),
    (lambda: ops.diagonal(Tensor(V)), ValueError, r"For 'diagonal', the 'input' should have"),
    (lambda: ops.tril_indices(3, -1), ValueError, r"For 'tril_indices', the 'row' and 'col'"),
    (lambda: ops.triu_indices(3, 3, dtype=ms.float32), TypeError,
     r"For 'triu_indices', the 'dtype' should be int32 or int64"),
])
def test_argument_errors_name_the_function_and_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()
