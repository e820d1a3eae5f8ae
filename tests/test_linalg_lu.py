"""LuUnpack / lu_unpack and LuSolve / lu_solve on LAPACK's packed LU factors (scipy's
lu_factor and getrf, pivots made 1-based) against scipy.linalg.lu and lu_solve, eager and
compiled; their gradients against central differences; sharding and errors."""
import numpy as np
import pytest
import scipy.linalg as sl
from scipy.linalg import lapack

import msops as ms
from msops import Tensor, ops
from msops.parallel.strategy import shard
from msops.primitives.sharding import spec_of
from test_linalg_ops import run  # noqa: F401  (the eager / jit fixture)
from numeric import finite_differences

RNG = np.random.default_rng(52)


def getrf(a):
    """LAPACK's packed factors of each matrix of a and its 1-based int32 pivots."""
    flat = a.reshape((-1,) + a.shape[-2:])
    out = [lapack.dgetrf(m)[:2] for m in flat]
    lu = np.stack([o[0] for o in out]).reshape(a.shape)
    piv = np.stack([o[1] + 1 for o in out]).reshape(a.shape[:-2] + (-1,))
    return lu, piv.astype(np.int32)


@pytest.mark.parametrize("shape", [(2, 3, 4, 4), (2, 5, 3), (3, 5)], ids=str)
def test_lu_unpack_equals_scipy_lu(shape, run):
    a = RNG.standard_normal(shape)
    lu, piv = getrf(a)
    p, low, up = run(ops.lu_unpack, Tensor(lu), Tensor(piv))
    for i in np.ndindex(shape[:-2]):
        want = sl.lu(a[i])
        for got, w in zip((p, low, up), want):
            np.testing.assert_allclose(got.asnumpy()[i], w, atol=1e-12)
    np.testing.assert_allclose(p.asnumpy() @ low.asnumpy() @ up.asnumpy(), a, atol=1e-12)


def test_lu_unpack_flags_and_dtypes():
    """Without unpack_pivots P is None, without unpack_data L and U are (the primitive
    gives zeros there); float32 data keeps its dtype, int64 pivots are accepted."""
    a = RNG.standard_normal((4, 4))
    lu, piv = getrf(a)
    p, low, up = ops.lu_unpack(Tensor(lu.astype(np.float32)), Tensor(piv.astype(np.int64)),
                               unpack_pivots=False)
    assert p is None and low.dtype == ms.float32
    np.testing.assert_allclose(low.asnumpy() @ up.asnumpy(), sl.lu(a)[0].T @ a, atol=1e-5)
    p, low, up = ops.lu_unpack(Tensor(lu), Tensor(piv), unpack_data=False)
    assert low is None and up is None
    np.testing.assert_array_equal(p.asnumpy(), sl.lu(a)[0])
    zeros = ops.LuUnpack(unpack_data=False)(Tensor(lu), Tensor(piv))
    np.testing.assert_array_equal(zeros[1].asnumpy(), 0)


def test_lu_unpack_mindspore_example():
    """The packed data and pivots of MindSpore's documented example."""
    data = np.array([[-0.3806, -0.4872, 0.5536], [-0.1287, 0.6508, -0.2396],
                     [0.2583, 0.5239, 0.6902]], np.float32)
    p, low, up = ops.lu_unpack(Tensor(data), Tensor(np.array([1, 3, 3], np.int32)))
    np.testing.assert_array_equal(p.asnumpy(), [[1, 0, 0], [0, 0, 1], [0, 1, 0]])
    np.testing.assert_array_equal(low.asnumpy(), np.tril(data, -1) + np.eye(3))
    np.testing.assert_array_equal(up.asnumpy(), np.triu(data))


@pytest.mark.parametrize("x_shape,a_shape", [((2, 4, 3), (2, 4, 4)), ((3, 2, 4, 1), (2, 4, 4)),
                                             ((4, 2), (4, 4))], ids=str)
def test_lu_solve_equals_scipy(x_shape, a_shape, run):
    """Batch dims broadcast (x's leading ones over lu_data's)."""
    a, x = RNG.standard_normal(a_shape), RNG.standard_normal(x_shape)
    lu, piv = getrf(a)
    got = run(ops.lu_solve, Tensor(x), Tensor(lu), Tensor(piv)).asnumpy()
    want = np.linalg.solve(np.broadcast_to(a, got.shape[:-2] + a.shape[-2:]), x)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for i in np.ndindex(a_shape[:-2]):
        index = (Ellipsis,) + i + (slice(None), slice(None))
        np.testing.assert_allclose(got[index], sl.lu_solve((lu[i], piv[i] - 1), x[index]
                                                           if x.ndim == a.ndim else
                                                           x[index]), atol=1e-10)


def test_lu_solve_mindspore_example():
    y = ops.lu_solve(Tensor(np.array([[1.0], [3.0], [3.0]], np.float32)),
                     Tensor(np.array([[2, 1, 1], [0.5, 1, 1.5], [0.5, 0, 2.5]], np.float32)),
                     Tensor(np.array([2, 2, 3], np.int32)))
    np.testing.assert_allclose(y.asnumpy(), [[1.9], [-1.4], [0.6]], rtol=1e-5)


def test_lu_solve_gradient_equals_central_differences(run):
    """In both b and the packed factors (each entry of LU_data a variable), with x's batch
    broadcast over lu_data's (the factors' gradient summed over it)."""
    a, x = RNG.standard_normal((2, 3, 3)), RNG.standard_normal((2, 2, 3, 2))
    lu, piv = getrf(a)
    w = RNG.standard_normal(x.shape)
    pivots = Tensor(piv)

    def loss(b, data):
        return (ops.lu_solve(b, data, pivots) * Tensor(w)).sum()

    def reference(b, data):
        out = np.empty(x.shape)
        for j in range(2):
            for i in range(2):
                out[j, i] = sl.lu_solve((data[i], piv[i] - 1), b[j, i])
        return out * w
    gx, gl = run(ms.grad(loss, (0, 1)), Tensor(x), Tensor(lu))
    np.testing.assert_allclose(gx.asnumpy(), finite_differences(lambda v: reference(v, lu), x),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gl.asnumpy(), finite_differences(lambda v: reference(x, v), lu),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)], ids=str)
def test_lu_unpack_gradient_equals_central_differences(shape, run):
    a = RNG.standard_normal((2,) + shape)
    lu, piv = getrf(a)
    wl, wu = RNG.standard_normal((2, shape[0], min(shape))), \
        RNG.standard_normal((2, min(shape), shape[1]))
    pivots = Tensor(piv)

    def loss(data):
        _, low, up = ops.lu_unpack(data, pivots)
        return (low * Tensor(wl)).sum() + (ops.square(up) * Tensor(wu)).sum()

    def reference(data):
        k = min(shape)
        low = np.tril(data[..., :k], -1) + np.eye(shape[0], k)
        return (low * wl).sum() + (np.triu(data[..., :k, :]) ** 2 * wu).sum()
    got = run(ms.grad(loss), Tensor(lu)).asnumpy()
    np.testing.assert_allclose(got, finite_differences(reference, lu), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("call,match,error", [
    (lambda: ops.lu_unpack(Tensor(np.eye(3)), Tensor(np.array([1, 2], np.int32))),
     r"For 'LuUnpack', the 'LU_pivots' should have shape \[3\]", ValueError),
    (lambda: ops.lu_unpack(Tensor(np.eye(3)), Tensor(np.array([1, 4, 3], np.int32))),
     r"For 'LuUnpack', the 'LU_pivots' should be in \[1, 3\], but got 4", ValueError),
    (lambda: ops.lu_unpack(Tensor(np.eye(3)), Tensor(np.ones(3))),
     r"For 'LuUnpack', the 'LU_pivots'", TypeError),
    (lambda: ops.lu_solve(Tensor(np.ones((3, 1))), Tensor(np.eye(3)),
                          Tensor(np.array([1, 2, 3], np.int64))),
     r"For 'LuSolve', the 'lu_pivots'", TypeError),
    (lambda: ops.lu_solve(Tensor(np.ones((2, 1))), Tensor(np.eye(3)),
                          Tensor(np.array([1, 2, 3], np.int32))),
     r"For 'LuSolve', the 'x' should have 3 rows", ValueError),
    (lambda: ops.lu_solve(Tensor(np.ones((3, 1), np.float32)), Tensor(np.eye(3)),
                          Tensor(np.array([1, 2, 3], np.int32))),
     r"For 'LuSolve', the 'lu_data' should have the same dtype as 'x'", TypeError),
    (lambda: ops.lu_solve(Tensor(np.ones((3, 1))), Tensor(np.diag([1.0, 0.0, 2.0])),
                          Tensor(np.array([1, 2, 3], np.int32))),
     r"For 'LuSolve', the 'lu_data' should be invertible", ValueError),
    (lambda: ops.lu_solve(np.ones((3, 1)), Tensor(np.eye(3)),
                          Tensor(np.array([1, 2, 3], np.int32))),
     r"For 'lu_solve', the 'b' should be a Tensor", TypeError),
])
def test_errors_name_the_op_and_argument(call, match, error):
    with pytest.raises(error, match=match):
        call()


def test_only_batch_dims_split():
    unpack = spec_of(ops.LuUnpack(), [(4, 6, 4), (4, 4)], [(4, 6, 6), (4, 6, 4), (4, 4, 4)], {})
    assert shard("LuUnpack", unpack, ((2, 1, 1), (2, 1)), [(4, 6, 4), (4, 4)],
                 2).device_matrix == (2,)
    with pytest.raises(ValueError, match=r"cannot be split \(a factorisation reads the whole "
                                         r"matrix\)"):
        shard("LuUnpack", unpack, ((1, 2, 1), (1, 1)), [(4, 6, 4), (4, 4)], 2)
    ins = [(4, 4, 6), (4, 4, 4), (4, 4)]
    solve = spec_of(ops.LuSolve(), ins, [(4, 4, 6)], {})
    assert shard("LuSolve", solve, ((2, 1, 1), (2, 1, 1), (2, 1)), ins, 2).device_matrix == (2,)
    assert shard("LuSolve", solve, ((1, 1, 2), (1, 1, 1), (1, 1)), ins, 2).device_matrix == (2,)
    with pytest.raises(ValueError, match=r"cannot be split"):
        shard("LuSolve", solve, ((1, 2, 1), (1, 2, 1), (1, 1)), ins, 2)
