"""The linalg primitives with their batch dims split (and MatrixSolve's right-hand-side
columns) on 2/4 ranks equal the serial ops, forward and gradient, with no communication:
each rank factorises its own whole matrices."""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops
from test_functional_forms import Call
from test_parallel_grad import check_grads

from msops import Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4)
N = get_group_size()
RNG = np.random.default_rng(12)
X = Tensor((RNG.standard_normal((2 * N, 3, 3)) + 3 * np.eye(3)).astype(np.float32))
RHS = Tensor(RNG.standard_normal((2 * N, 3, 2 * N)).astype(np.float32))


class Weighted(nn.Cell):
    """sum(op(*xs)[k] * w_k) over the op's float outputs: a scalar loss of all of them."""

    def __init__(self, op, *xs):
        super().__init__()
        self.op, self.sum = op, ops.ReduceSum()
        out, rng = op(*xs), np.random.default_rng(5)     # the same weights in every net
        self.ws = [Tensor(rng.standard_normal(o.shape).astype(np.float32))
                   for o in (out if isinstance(out, tuple) else (out,))]

    def construct(self, *xs):
        out = self.op(*xs)
        outs = out if isinstance(out, tuple) else (out,)
        total = self.sum(outs[0] * self.ws[0])
        for o, w in zip(outs[1:], self.ws[1:]):
            total = total + self.sum(o * w)
        return total


@pytest.mark.parametrize("make", [lambda: ops.MatrixInverse(),
                                  lambda: ops.MatrixDeterminant(),
                                  lambda: ops.LogMatrixDeterminant(),
                                  lambda: ops.Cholesky(upper=True),
                                  lambda: ops.Qr(), lambda: ops.MatrixExp()],
                         ids=["inverse", "det", "slogdet", "cholesky", "qr", "exp"])
def test_batch_split_equals_serial(make):
    x = X
    if "Cholesky" in type(make()).__name__:
        a = X.asnumpy()
        x = Tensor(a @ a.swapaxes(-1, -2))
    op = lambda: make().shard(((N, 1, 1),))  # noqa: E731
    graph = check(lambda: Call(op()), x, rtol=1e-4, atol=1e-4)
    assert comm_ops(graph) == []
    check_grads(lambda: Weighted(op(), x), x, positions=(0,), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("strategy", [((N, 1, 1), (N, 1, 1)), ((1, 1, 1), (1, 1, N))],
                         ids=["batch", "rhs-columns"])
def test_matrix_solve_split_equals_serial(strategy):
    op = lambda: ops.MatrixSolve().shard(strategy)  # noqa: E731
    graph = check(lambda: Call(op()), X, RHS, rtol=1e-4, atol=1e-4)
    assert comm_ops(graph) == []
    check_grads(lambda: Weighted(op(), X, RHS), X, RHS, positions=(0, 1), rtol=1e-3,
                atol=1e-4)


class EigParts(nn.Cell):
    """Re w, Im w and |v|^2 of a (sharded) Eig: real outputs, independent of the vectors'
    phases, so the oracle and the gradient compare them directly; with `weighted`, the
    scalar sum of them times fixed weights."""

    def __init__(self, eig, weighted=False):
        super().__init__()
        self.eig, self.weighted, self.sum = eig, weighted, ops.ReduceSum()
        rng = np.random.default_rng(5)                   # the same weights in every net
        self.ws = [Tensor(rng.standard_normal(s).astype(np.float32))
                   for s in ((2 * N, 3), (2 * N, 3), (2 * N, 3, 3))]

    def construct(self, x):
        w, v = self.eig(x)
        parts = (ops.Real()(w), ops.Imag()(w), ops.Square()(ops.Abs()(v)))
        if not self.weighted:
            return parts
        return self.sum(parts[0] * self.ws[0]) + self.sum(parts[1] * self.ws[1]) + \
            self.sum(parts[2] * self.ws[2])


@pytest.mark.parametrize("dtype", [np.float32, np.complex64], ids=["real", "complex"])
def test_eig_batch_split_equals_serial(dtype):
    """Eig with its batch dim split: every rank decomposes its own matrices (no
    communication), values, vectors and the gradient as the serial run."""
    a = RNG.standard_normal((2 * N, 3, 3))
    if dtype == np.complex64:
        a = a + 1j * np.random.default_rng(3).standard_normal(a.shape)
    x = Tensor(a.astype(dtype))
    eig = lambda: ops.Eig(True).shard(((N, 1, 1),))  # noqa: E731
    graph = check(lambda: EigParts(eig()), x, rtol=1e-4, atol=1e-4)
    assert comm_ops(graph) == []
    check_grads(lambda: EigParts(eig(), weighted=True), x, positions=(0,), rtol=1e-3,
                atol=1e-4)


def test_lu_ops_batch_split_equal_serial():
    """LuUnpack and LuSolve with their batch dim split (LuSolve also by x's columns): no
    communication, values and gradients as the serial run (the pivots are constants)."""
    data = Tensor((RNG.standard_normal((2 * N, 3, 3)) + 3 * np.eye(3)).astype(np.float32))
    piv = Tensor(np.tile(np.array([3, 2, 3], np.int32), (2 * N, 1)))
    unpack = lambda: ops.LuUnpack().shard(((N, 1, 1), (N, 1)))  # noqa: E731
    graph = check(lambda: Call(lambda d: unpack()(d, piv)), data, rtol=1e-5, atol=1e-5)
    assert comm_ops(graph) == []
    for strategy in (((N, 1, 1), (N, 1, 1), (N, 1)), ((1, 1, N), (1, 1, 1), (1, 1))):
        solve = lambda: ops.LuSolve().shard(strategy)  # noqa: E731
        graph = check(lambda: Call(lambda x, d: solve()(x, d, piv)), RHS, data, rtol=1e-4,
                      atol=1e-4)
        assert comm_ops(graph) == []
        check_grads(lambda: Weighted(lambda x, d: solve()(x, d, piv), RHS, data), RHS, data,
                    positions=(0, 1), rtol=1e-3, atol=1e-4)


def test_householder_ops_batch_split_equal_serial():
    """Geqrf, Orgqr and Ormqr with their batch dim split: each rank's own matrices, no
    communication, the serial values (and Ormqr's gradient in all three inputs)."""
    a = Tensor(RNG.standard_normal((2 * N, 4, 3)).astype(np.float32))
    y, tau = ops.Geqrf()(a)
    graph = check(lambda: Call(ops.Geqrf().shard(((N, 1, 1),))), a, rtol=1e-5, atol=1e-5)
    assert comm_ops(graph) == []
    graph = check(lambda: Call(ops.Orgqr().shard(((N, 1, 1), (N, 1)))), y, tau, rtol=1e-5,
                  atol=1e-5)
    assert comm_ops(graph) == []
    other = Tensor(RNG.standard_normal((2 * N, 4, 2)).astype(np.float32))
    ormqr = lambda: ops.Ormqr(True, True).shard(((N, 1, 1), (N, 1), (N, 1, 1)))  # noqa: E731
    graph = check(lambda: Call(ormqr()), y, tau, other, rtol=1e-5, atol=1e-5)
    assert comm_ops(graph) == []
    check_grads(lambda: Weighted(ormqr(), y, tau, other), y, tau, other, positions=(0, 1, 2),
                rtol=1e-3, atol=1e-4)
