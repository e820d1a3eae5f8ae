"""msops/ops/diag_func.py: matrix_band_part, matrix_diag, matrix_diag_part, matrix_set_diag
(bands k, num_rows / num_cols, padding_value, the four alignments), diagflat, slice_scatter,
select_scatter, diagonal_scatter, and the nn.MatrixDiag / MatrixDiagPart / MatrixSetDiag
cells. References are loops over numpy's np.diagonal written here; eager and compiled;
gradients against finite differences; argument errors."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(31)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)
ALIGNS = ["RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"]


def left_aligned(d, align):
    sup, sub = align.split("_")
    return (sup if d >= 0 else sub) == "LEFT"


def np_diag_part(x, k, pad, align):
    low, high = (k, k) if np.isscalar(k) else k
    rows, cols = x.shape[-2:]
    length = min(rows + min(high, 0), cols - max(low, 0))
    out = np.full(x.shape[:-2] + (high - low + 1, length), pad, x.dtype)
    for r, d in enumerate(range(high, low - 1, -1)):
        diag = np.diagonal(x, d, -2, -1)
        n = diag.shape[-1]
        if left_aligned(d, align):
            out[..., r, :n] = diag
        else:
            out[..., r, length - n:] = diag
    return out[..., 0, :] if low == high else out


def np_set_diag(x, diags, k, align):
    """x with the band written in; `diags` as np_diag_part lays it out."""
    low, high = (k, k) if np.isscalar(k) else k
    if low == high:
        diags = diags[..., None, :]
    out = x.copy()
    rows, cols = x.shape[-2:]
    length = diags.shape[-1]
    for r, d in enumerate(range(high, low - 1, -1)):
        n = max(0, min(rows + min(d, 0), cols - max(d, 0)))
        first = 0 if left_aligned(d, align) else length - n
        for t in range(n):
            i, j = t + max(0, -d), t + max(0, d)
            out[..., i, j] = diags[..., r, first + t]
    return out


def np_matrix_diag(diags, k, rows, cols, pad, align):
    return np_set_diag(np.full(diags.shape[:(-1 if np.isscalar(k) or k[0] == k[1] else -2)]
                               + (rows, cols), pad, diags.dtype), diags, k, align)


def np_band_part(x, lower, upper):
    i, j = np.indices(x.shape[-2:])
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    return np.where(keep, x, 0)


D3 = RNG.standard_normal((2, 3, 3)).astype(np.float32)     # 3 diagonals of length 3
V = RNG.standard_normal((2, 4)).astype(np.float32)

FORMS = [
    ("band_1_0", lambda x: ops.matrix_band_part(x, 1, 0), (X,), np_band_part(X, 1, 0)),
    ("band_-1_1", lambda x: ops.matrix_band_part(x, -1, 1), (X,), np_band_part(X, -1, 1)),
    ("band_2_-1", lambda x: ops.matrix_band_part(x, Tensor(2), Tensor(-1)), (X,),
     np_band_part(X, 2, -1)),
    ("diag_part_main", lambda x: ops.matrix_diag_part(x), (X,), np_diag_part(X, 0, 0, "RIGHT_LEFT")),
    ("diag_part_offset", lambda x: ops.matrix_diag_part(x, 2), (X,),
     np_diag_part(X, 2, 0, "RIGHT_LEFT")),
    *[(f"diag_part_band_{a}", lambda x, a=a: ops.matrix_diag_part(x, (-1, 2), 9.0, a), (X,),
       np_diag_part(X, (-1, 2), 9.0, a)) for a in ALIGNS],
    ("diag_part_band_tensor_k_pad",
     lambda x: ops.matrix_diag_part(x, Tensor(np.array([-2, 0], np.int32)),
                                    Tensor(np.float32(-3.0))), (X,),
     np_diag_part(X, (-2, 0), -3.0, "RIGHT_LEFT")),
    ("diag_main", lambda v: ops.matrix_diag(v), (V,), np_matrix_diag(V, 0, 4, 4, 0, "RIGHT_LEFT")),
    ("diag_offset_pad", lambda v: ops.matrix_diag(v, k=-1, padding_value=5.0), (V,),
     np_matrix_diag(V, -1, 5, 5, 5.0, "RIGHT_LEFT")),
    ("diag_rows_cols", lambda v: ops.matrix_diag(v, 1, num_rows=4, num_cols=6), (V,),
     np_matrix_diag(V, 1, 4, 6, 0.0, "RIGHT_LEFT")),
    *[(f"diag_band_{a}", lambda d, a=a: ops.matrix_diag(d, (-1, 1), 3, 4, -1.0, a), (D3,),
       np_matrix_diag(D3, (-1, 1), 3, 4, -1.0, a)) for a in ALIGNS],
    *[(f"set_diag_band_{a}", lambda x, d, a=a: ops.matrix_set_diag(x, d, (-1, 1), a), (X, D3),
       np_set_diag(X, D3, (-1, 1), a)) for a in ALIGNS],
    ("set_diag_main", lambda x, d: ops.matrix_set_diag(x, d), (X, V[:, :3]),
     np_set_diag(X, V[:, :3], 0, "RIGHT_LEFT")),
    ("diagflat", lambda v: ops.diagflat(v), (V,), np.diagflat(V)),
    ("diagflat_offset", lambda v: ops.diagflat(v, -2), (V[0],), np.diagflat(V[0], -2)),
    ("slice_scatter", lambda x, s: ops.slice_scatter(x, s, 2, 1, None, 2), (X, X[..., :2] * 7),
     np.concatenate([X[..., :1], 7 * X[..., :1], X[..., 2:3], 7 * X[..., 1:2]], -1)),
    ("select_scatter", lambda x, s: ops.select_scatter(x, s, 1, -2), (X, X[:, 0] + 10),
     np.stack([X[:, 0], X[:, 0] + 10, X[:, 2]], 1)),
]


def np_diagonal_scatter(x, src, offset, dim1, dim2):
    out = x.copy()
    view = np.diagonal(out, offset, dim1, dim2)      # read-only view; write through indices
    n = view.shape[-1]
    for t in range(n):
        i, j = t + max(0, -offset), t + max(0, offset)
        index = [slice(None)] * x.ndim
        index[dim1], index[dim2] = i, j
        out[tuple(index)] = src[..., t]
    return out


S2 = RNG.standard_normal((4, 2)).astype(np.float32)
FORMS += [
    ("diagonal_scatter", lambda x, s: ops.diagonal_scatter(x, s, 1, 0, 1), (X, S2),
     np_diagonal_scatter(X, S2, 1, 0, 1)),
    ("diagonal_scatter_dims", lambda x, s: ops.diagonal_scatter(x, s, -1, 2, 0), (X, S2[:3]),
     np_diagonal_scatter(X, S2[:3], -1, 2, 0)),
]


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    eager, compiled = eager_and_compiled(fn, *[Tensor(v) for v in inputs])
    for out in (eager, compiled):
        assert out.shape == want.shape and out.dtype == ms.float32
        np.testing.assert_array_equal(out.asnumpy(), want)


def test_integer_and_bool_inputs_keep_their_dtype():
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = ops.matrix_diag_part(Tensor(ints), (0, 1), padding_value=-1)
    assert out.dtype == ms.int32
    np.testing.assert_array_equal(out.asnumpy(), np_diag_part(ints, (0, 1), -1, "RIGHT_LEFT"))
    mask = ops.matrix_band_part(Tensor(np.ones((3, 3), np.bool_)), 0, 1)
    np.testing.assert_array_equal(mask.asnumpy(), np.triu(np.tril(np.ones((3, 3), bool), 1)))


X64 = RNG.standard_normal((2, 3, 4))
D64 = RNG.standard_normal((2, 3, 3))


@pytest.mark.parametrize("fn,arg", [
    (lambda x: ops.matrix_band_part(x, 1, 2), X64),
    (lambda x: ops.matrix_diag_part(x, (-1, 2), 0.5, "LEFT_RIGHT"), X64),
    (lambda d: ops.matrix_diag(d, (-1, 1), 3, 4), D64),
    (lambda x: ops.matrix_set_diag(x, Tensor(D64), (-1, 1)), X64),
    (lambda d: ops.matrix_set_diag(Tensor(X64), d, (-1, 1), "RIGHT_RIGHT"), D64),
    (lambda x: ops.diagflat(x, 1), X64[0]),
    (lambda x: ops.slice_scatter(x, Tensor(X64[:, :2] ** 2), 1, 0, 3, 2), X64),
    (lambda x: ops.diagonal_scatter(Tensor(X64), x, 0, 1, 2), X64[:, :, 0]),
], ids=["band_part", "diag_part", "diag", "set_diag_x", "set_diag_diagonal", "diagflat",
        "slice_scatter", "diagonal_scatter_src"])
def test_gradients_match_finite_differences(fn, arg):
    grad = ms.grad(lambda x: ops.ReduceSum()(fn(x) * fn(x), ()))(Tensor(arg))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy() ** 2, arg)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-7)


def test_matrix_diag_cells():
    v = RNG.standard_normal((2, 3)).astype(np.float32)
    out = nn.MatrixDiag()(Tensor(v))
    np.testing.assert_array_equal(out.asnumpy(), np_matrix_diag(v, 0, 3, 3, 0, "RIGHT_LEFT"))
    np.testing.assert_array_equal(nn.MatrixDiagPart()(Tensor(X)).asnumpy(),
                                  np.diagonal(X, 0, -2, -1))
    d = RNG.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(nn.MatrixSetDiag()(Tensor(X), Tensor(d)).asnumpy(),
                                  np_set_diag(X, d, 0, "RIGHT_LEFT"))
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        np.testing.assert_array_equal(nn.MatrixDiagPart()(Tensor(X)).asnumpy(),
                                      np.diagonal(X, 0, -2, -1))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("make,err,match", [
    (lambda: ops.matrix_band_part(Tensor(X[0, 0]), 1, 1), ValueError,
     "For 'matrix_band_part', the 'x' should have rank >= 2"),
    (lambda: ops.matrix_diag_part(Tensor(X), (2, 1)), ValueError, "'k.0.' should be <= 'k.1.'"),
    (lambda: ops.matrix_diag_part(Tensor(X), (-3, 0)), ValueError,
     "For 'matrix_diag_part', the 'k' should be in .-3, 4."),
    (lambda: ops.matrix_diag_part(Tensor(X), 0, align="UP"), ValueError, "'align'"),
    (lambda: ops.matrix_diag(Tensor(D3), (-1, 0)), ValueError, "dim -2 should be the number"),
    (lambda: ops.matrix_diag(Tensor(V), 0, 5, 6), ValueError, "'num_rows' and 'num_cols'"),
    (lambda: ops.matrix_set_diag(Tensor(X), Tensor(V), 0), ValueError,
     "For 'matrix_set_diag', the 'diagonal' shape should be .2, 3."),
    (lambda: ops.matrix_set_diag(Tensor(X), Tensor(V[:, :3].astype(np.float64))), TypeError,
     "'diagonal' dtype"),
    (lambda: ops.slice_scatter(Tensor(X), Tensor(X), 2, 0, 2), ValueError,
     "For 'slice_scatter', the 'src' shape should be .2, 3, 2."),
    (lambda: ops.slice_scatter(Tensor(X), Tensor(X), 2, step=0), ValueError, "'step'"),
    (lambda: ops.select_scatter(Tensor(X), Tensor(X[:, 0]), 1, 3), ValueError,
     "For 'select_scatter', the 'index' should be in .-3, 3."),
    (lambda: ops.diagonal_scatter(Tensor(X), Tensor(S2), 0, 1, 1), ValueError,
     "'dim1' and 'dim2'"),
    (lambda: ops.diagonal_scatter(Tensor(X), Tensor(S2), 0, 1, 2), ValueError,
     "For 'diagonal_scatter', the 'src' shape should be .2, 3."),
])
def test_argument_errors_name_the_function_and_argument(make, err, match):
    with pytest.raises(err, match=match):
        make()
