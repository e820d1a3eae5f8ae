"""The vector / matrix products and distances (mv, dot, inner, vecdot, tensor_dot, kron,
cross, addmm, addmv, addbmm, baddbmm, addr, dist, cdist, block_diag, cartesian_prod) against
numpy written here, eager and compiled; gradients against finite differences; errors."""
import itertools

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from numeric import finite_differences

RNG = np.random.default_rng(77)


def T(*shape):
    return RNG.standard_normal(shape)


A34, V4, V3 = T(3, 4), T(4), T(3)
X234, Y542, Z436 = T(2, 3, 4), T(5, 4, 2), T(4, 3, 6)
B534, B542 = T(5, 3, 4), T(5, 4, 2)
C1, C2 = T(2, 3, 5), T(2, 3, 5)
P1, P2 = T(2, 4, 3), T(2, 5, 3)
K1, K2 = T(2, 3), T(4, 1, 2)


def block_diag_np(*blocks):
    mats = [np.atleast_2d(b) for b in blocks]
    out = np.zeros((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)))
    r = c = 0
    for m in mats:
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        r, c = r + m.shape[0], c + m.shape[1]
    return out


def cdist_np(a, b, p):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    return (d ** p).sum(-1) ** (1 / p)


FORMS = [
    ("mv", ops.mv, (A34, V4), A34 @ V4),
    ("ger", ops.ger, (V3, V4), np.outer(V3, V4)),
    ("adjoint", ops.adjoint, (X234,), X234.swapaxes(-1, -2)),
    ("dot", ops.dot, (X234, Y542), np.dot(X234, Y542)),
    ("inner", ops.inner, (X234, T(5, 4)), None),
    ("inner_scalar", ops.inner, (np.array(2.5), X234), 2.5 * X234),
    ("vecdot", lambda x, y: ops.vecdot(x, y, axis=1), (X234, T(3, 1)), None),
    ("tensor_dot_pairs", lambda x, y: ops.tensor_dot(x, y, ((1, 2), (1, 0))), (X234, Z436),
     np.tensordot(X234, Z436, ((1, 2), (1, 0)))),
    ("tensor_dot_int", lambda x, y: ops.tensor_dot(x, y, 1), (X234, Y542[0]),
     np.tensordot(X234, Y542[0], 1)),
    ("kron", ops.kron, (K1, K2), np.kron(K1, K2)),
    ("cross", ops.cross, (C1, C2), np.cross(C1, C2, axis=1)),
    ("cross_dim", lambda x, y: ops.cross(x, y, dim=-1), (T(4, 3), T(4, 3)), None),
    ("addmm", lambda i, a, b: ops.addmm(i, a, b, beta=0.5, alpha=2.0), (T(3, 1), A34, T(4, 2)),
     None),
    ("addmv", ops.addmv, (V3, A34, V4), V3 + A34 @ V4),
    ("addbmm", lambda i, a, b: ops.addbmm(i, a, b, alpha=-1), (T(3, 2), B534, B542), None),
    ("baddbmm_beta0", lambda i, a, b: ops.baddbmm(i, a, b, 0, 3),
     (np.full((3, 2), np.nan), B534, B542), 3 * (B534 @ B542)),
    ("addr", lambda x, a, b: ops.addr(x, a, b, beta=2), (T(3, 4), V3, V4),
     None),
    ("dist", ops.dist, (C1, C2), np.sqrt(((C1 - C2) ** 2).sum())),
    ("dist_p1", lambda x, y: ops.dist(x, y, 1), (C1, T(3, 5)), None),
    ("cdist", ops.cdist, (P1, P2), cdist_np(P1, P2, 2)),
    ("cdist_2d_p3", lambda x, y: ops.cdist(x, y, 3.0), (P1[0], P2[0]), cdist_np(P1[0], P2[0], 3)),
    ("block_diag", ops.block_diag, (K1, np.array(5.0), V4), block_diag_np(K1, 5.0, V4)),
    ("cartesian_prod", ops.cartesian_prod, (V3, T(2), V4[:2]), None),
]


def _reference(name, args):
    """The references that need the arguments (the random ones drawn in FORMS)."""
    if name == "inner":
        return np.inner(*args)
    if name == "vecdot":
        return (args[0] * args[1]).sum(1)
    if name == "cross_dim":
        return np.cross(*args)
    if name == "addmm":
        return 0.5 * args[0] + 2.0 * args[1] @ args[2]
    if name == "addbmm":
        return args[0] - (args[1] @ args[2]).sum(0)
    if name == "addr":
        return 2 * args[0] + np.outer(args[1], args[2])
    if name == "dist_p1":
        return np.abs(args[0] - args[1]).sum()
    if name == "cartesian_prod":
        return np.array(list(itertools.product(*args)))
    raise AssertionError(name)


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("name,fn,args,want", FORMS, ids=[f[0] for f in FORMS])
def test_values_equal_numpy(name, fn, args, want, mode):
    want = _reference(name, args) if want is None else want
    call = fn if mode == "eager" else ms.jit(fn)
    got = call(*[Tensor(a) for a in args]).asnumpy()
    assert got.shape == np.shape(want) and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,fn,args", [
    ("tensor_dot", lambda x, y: ops.tensor_dot(x, y, ((1, 2), (1, 0))), (X234, Z436)),
    ("kron", ops.kron, (K1, K2)),
    ("cross", ops.cross, (C1, C2)),
    ("addmm", lambda i, a, b: ops.addmm(i, a, b, beta=0.5, alpha=2.0), (T(3, 1), A34, T(4, 2))),
    ("baddbmm", ops.baddbmm, (T(3, 2), B534, B542)),
    ("cdist", ops.cdist, (P1, P2)),
    ("block_diag", ops.block_diag, (K1, V4)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_gradients_equal_finite_differences(name, fn, args):
    weights = RNG.standard_normal(np.shape(fn(*[Tensor(a) for a in args]).asnumpy()))

    def loss(*ts):
        return ops.ReduceSum()(fn(*ts) * Tensor(weights), ())
    got = ms.grad(loss, tuple(range(len(args))))(*[Tensor(a) for a in args])
    ms.set_context(mode=ms.GRAPH_MODE)
    compiled = ms.grad(loss, tuple(range(len(args))))(*[Tensor(a) for a in args])
    ms.set_context(mode=ms.PYNATIVE_MODE)
    for i, a in enumerate(args):
        rest = [Tensor(b) for b in args]

        def one(v, i=i, rest=rest):
            rest[i] = Tensor(v)
            return fn(*rest).asnumpy() * weights
        want = finite_differences(one, a)
        np.testing.assert_allclose(got[i].asnumpy(), want, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(compiled[i].asnumpy(), got[i].asnumpy(), rtol=1e-12)


@pytest.mark.parametrize("call,match,error", [
    (lambda: ops.mv(Tensor(A34), Tensor(A34)), r"For 'mv', the rank of 'vec' should be 1",
     ValueError),
    (lambda: ops.dot(Tensor(V4), Tensor(A34)), r"For 'dot', the rank of 'input' should be >= 2",
     ValueError),
    (lambda: ops.tensor_dot(Tensor(A34), Tensor(A34), ((1,), (1, 0))),
     r"For 'tensor_dot', the 'axes' should pair distinct dims of equal sizes", ValueError),
    (lambda: ops.tensor_dot(Tensor(A34), Tensor(A34), "x"),
     r"For 'tensor_dot', the 'axes' should be an int or a pair", TypeError),
    (lambda: ops.cross(Tensor(T(2, 4)), Tensor(T(2, 4))),
     r"For 'cross', the 'input' should have a dim of size 3", ValueError),
    (lambda: ops.cross(Tensor(C1), Tensor(C1), dim=0),
     r"For 'cross', the size of dim 0 should be 3, but got 2", ValueError),
    (lambda: ops.cross(Tensor(C1), Tensor(C1[0])),
     r"For 'cross', the 'other' should have the shape of 'input'", ValueError),
    (lambda: ops.addmm(Tensor(A34), Tensor(V4), Tensor(A34)),
     r"For 'addmm', the rank of 'mat1' should be 2", ValueError),
    (lambda: ops.addmm(Tensor(A34), Tensor(A34), Tensor(A34.T), beta="1"),
     r"For 'addmm', the 'beta' should be an int, float or bool", TypeError),
    (lambda: ops.baddbmm(Tensor(A34), Tensor(B534), Tensor(B542[:2])),
     r"For 'baddbmm', the 'batch2' should hold as many matrices as 'batch1': 5, but got 2",
     ValueError),
    (lambda: ops.cdist(Tensor(P1), Tensor(P2[..., :2])),
     r"For 'cdist', the 'x2' should be \(B, R, M\)", ValueError),
    (lambda: ops.dist(Tensor(C1), Tensor(C2), p=-1), r"For 'dist', the 'p' should be a number "
                                                     r">= 0, but got -1", ValueError),
    (lambda: ops.block_diag(), r"For 'block_diag', the 'inputs' should hold at least one",
     ValueError),
    (lambda: ops.block_diag(Tensor(X234)), r"For 'block_diag', the rank of 'inputs\[0\]' "
                                           r"should be in \[0, 2\]", ValueError),
    (lambda: ops.cartesian_prod(Tensor(A34)), r"For 'cartesian_prod', the rank of "
                                              r"'inputs\[0\]' should be 1", ValueError),
    (lambda: ops.kron(A34, Tensor(A34)), r"For 'kron', the 'input' should be a Tensor",
     TypeError),
])
def test_errors_name_the_function(call, match, error):
    with pytest.raises(error, match=match):
        call()


def test_float32_inputs_keep_their_dtype_and_mixed_ones_promote():
    a = Tensor(A34.astype(np.float32))
    assert ops.mv(a, Tensor(V4.astype(np.float32))).dtype == ms.float32
    assert ops.kron(a, Tensor(K1)).dtype == ms.float64
