"""msops/ops/spatial_func.py: space_to_batch_nd, batch_to_space_nd (1, 2 and 3 spatial dims,
padding and crops) and affine_grid (2-D and 3-D, align_corners both ways): values against
numpy loops written here, eagerly and inside a compiled Cell; gradients against finite
differences; argument errors."""
import itertools

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(3)


def np_space_to_batch(x, blocks, pads):
    x = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pads])
    n, c, *sizes = x.shape
    small = [s // b for s, b in zip(sizes, blocks)]
    out = np.zeros((n * int(np.prod(blocks)), c) + tuple(small), x.dtype)
    for k, offsets in enumerate(itertools.product(*[range(b) for b in blocks])):
        for pos in itertools.product(*[range(s) for s in small]):
            src = tuple(p * b + o for p, b, o in zip(pos, blocks, offsets))
            out[(k * n + np.arange(n),) + (slice(None),) + pos] = x[(slice(None),) * 2 + src]
    return out


def np_batch_to_space(x, blocks, crops):
    total = int(np.prod(blocks))
    n, c, small = x.shape[0] // total, x.shape[1], x.shape[2:]
    full = np.zeros((n, c) + tuple(s * b for s, b in zip(small, blocks)), x.dtype)
    for k, offsets in enumerate(itertools.product(*[range(b) for b in blocks])):
        for pos in itertools.product(*[range(s) for s in small]):
            dst = tuple(p * b + o for p, b, o in zip(pos, blocks, offsets))
            full[(slice(None),) * 2 + dst] = x[(slice(k * n, (k + 1) * n), slice(None)) + pos]
    index = tuple(slice(a, s - b) for (a, b), s in zip(crops, full.shape[2:]))
    return full[(slice(None),) * 2 + index]


X2 = RNG.standard_normal((2, 3, 3, 4)).astype(np.float32)
X1 = RNG.standard_normal((2, 2, 5)).astype(np.float32)
X3 = RNG.standard_normal((1, 2, 2, 4, 3)).astype(np.float32)
B2 = RNG.standard_normal((8, 2, 2, 3)).astype(np.float32)

FORMS = [
    ("s2b_int_block", lambda x: ops.space_to_batch_nd(x, 2, [[1, 0], [0, 0]]), (X2,),
     np_space_to_batch(X2, [2, 2], [[1, 0], [0, 0]])),
    ("s2b_2d", lambda x: ops.space_to_batch_nd(x, [1, 3], [[0, 0], [1, 1]]), (X2,),
     np_space_to_batch(X2, [1, 3], [[0, 0], [1, 1]])),
    ("s2b_1d", lambda x: ops.space_to_batch_nd(x, [3], [[0, 1]]), (X1,),
     np_space_to_batch(X1, [3], [[0, 1]])),
    ("s2b_3d", lambda x: ops.space_to_batch_nd(x, [2, 2, 3], [[0, 0], [0, 0], [0, 0]]), (X3,),
     np_space_to_batch(X3, [2, 2, 3], [[0, 0], [0, 0], [0, 0]])),
    ("b2s_2d", lambda x: ops.batch_to_space_nd(x, [2, 2], [[0, 1], [1, 0]]), (B2,),
     np_batch_to_space(B2, [2, 2], [[0, 1], [1, 0]])),
    ("b2s_int_block", lambda x: ops.batch_to_space_nd(x, 2, [[0, 0], [0, 0]]), (B2,),
     np_batch_to_space(B2, [2, 2], [[0, 0], [0, 0]])),
]


def np_affine_grid(theta, size, align_corners):
    def coords(n):
        line = np.linspace(-1.0, 1.0, n)
        return line if align_corners else (2 * np.arange(n) + 1) / n - 1
    spatial = size[2:]
    k = len(spatial)
    out = np.zeros((size[0],) + tuple(spatial) + (k,))
    axes = [coords(s) for s in spatial]
    for n in range(size[0]):
        for pos in itertools.product(*[range(s) for s in spatial]):
            point = [axes[d][pos[d]] for d in range(k)][::-1] + [1.0]   # x along the last
            out[(n,) + pos] = theta[n] @ np.array(point)
    return out


T2 = RNG.standard_normal((2, 2, 3)).astype(np.float32)
T3 = RNG.standard_normal((1, 3, 4)).astype(np.float32)
FORMS += [
    ("affine_grid_2d", lambda t: ops.affine_grid(t, (2, 3, 4, 5)), (T2,),
     np_affine_grid(T2, (2, 3, 4, 5), False)),
    ("affine_grid_2d_corners", lambda t: ops.affine_grid(t, (2, 1, 3, 1), True), (T2,),
     np_affine_grid(T2, (2, 1, 3, 1), True)),
    ("affine_grid_3d", lambda t: ops.affine_grid(t, (1, 2, 2, 3, 4), False), (T3,),
     np_affine_grid(T3, (1, 2, 2, 3, 4), False)),
]


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    eager, compiled = eager_and_compiled(fn, *[Tensor(v) for v in inputs])
    for out in (eager, compiled):
        assert out.shape == want.shape and out.dtype == ms.float32
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_batch_to_space_inverts_space_to_batch():
    y = ops.space_to_batch_nd(Tensor(X2), [3, 2], [[0, 0], [1, 1]])
    back = ops.batch_to_space_nd(y, [3, 2], [[0, 0], [1, 1]])
    np.testing.assert_array_equal(back.asnumpy(), X2)


@pytest.mark.parametrize("fn,arg", [
    (lambda x: ops.space_to_batch_nd(x, [2, 3], [[1, 0], [1, 1]]), X2.astype(np.float64)),
    (lambda x: ops.batch_to_space_nd(x, [2, 2], [[1, 0], [0, 1]]), B2.astype(np.float64)),
    (lambda t: ops.affine_grid(t, (2, 1, 3, 2)), T2.astype(np.float64)),
], ids=["space_to_batch", "batch_to_space", "affine_grid"])
def test_gradients_match_finite_differences(fn, arg):
    grad = ms.grad(lambda x: ops.ReduceSum()(fn(x) * fn(x), ()))(Tensor(arg))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy() ** 2, arg)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("make,err,match", [
    (lambda: ops.space_to_batch_nd(Tensor(X2), 2, [[0, 0], [0, 0]]), ValueError,
     r"For 'space_to_batch_nd', the padded spatial dim 2 \(3\)"),
    (lambda: ops.space_to_batch_nd(Tensor(X2), [2, 2, 2], [[0, 0]] * 3), ValueError,
     r"the 'input_x' should have rank 5"),
    (lambda: ops.space_to_batch_nd(Tensor(X2), [1, 0], [[0, 0]] * 2), ValueError,
     r"'block_size' should hold ints >= 1"),
    (lambda: ops.space_to_batch_nd(Tensor(X2), 1, [[0, -1], [0, 0]]), ValueError,
     r"'paddings' should hold ints >= 0"),
    (lambda: ops.batch_to_space_nd(Tensor(B2), [3, 1], [[0, 0]] * 2), ValueError,
     r"For 'batch_to_space_nd', the 'input_x' dim 0 \(8\)"),
    (lambda: ops.batch_to_space_nd(Tensor(B2), 2, [[2, 3], [0, 0]]), ValueError,
     r"the crops\[0\]"),
    (lambda: ops.affine_grid(Tensor(T2), (2, 3, 4, 5, 6)), ValueError,
     r"For 'affine_grid', the 'theta' shape should be \[2, 3, 4\]"),
    (lambda: ops.affine_grid(Tensor(T2.astype(np.int32)), (2, 1, 2, 2)), TypeError,
     r"'theta' should be a float"),
    (lambda: ops.affine_grid(Tensor(T2), (2, 1, 2)), ValueError, r"'size' should be"),
])
def test_argument_errors_name_the_function_and_argument(make, err, match):
    with pytest.raises(err, match=match):
        make()
