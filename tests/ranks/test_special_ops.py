"""The special-function primitives (Lgamma, Digamma, Polygamma, Zeta, Erfinv, BesselI0 /
I0e / I1 / I1e, J0 / J1 / Y0 / Y1 / K0 / K0e / K1 / K1e, Igamma / Igammac), NextAfter, Gcd and Lcm and the arith_ext_func composites sharded on 2 and
4 ranks: split like their inputs (the element-wise rule: no communication), a net of them
equals the serial net, forward and gradients."""
import numpy as np
from parallel_oracle import check, comm_ops, data, run_parallel, run_serial
from test_parallel_grad import check_grads

from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4)
N = get_group_size()


class SpecialNet(nn.Cell):
    """x * w split by rows, then the special functions split by rows or by columns."""

    def __init__(self, loss=False):
        super().__init__()
        self.loss = loss
        self.w = Parameter(data(8, 16, seed=7), name="w")
        self.mul = ops.Mul().shard(((N, 1), (N, 1)))
        self.lgamma = ops.Lgamma().shard(((1, N),))
        self.digamma = ops.Digamma().shard(((N, 1),))
        self.polygamma = ops.Polygamma().shard(((), (N, 1)))
        self.zeta = ops.Zeta().shard(((1, N), (1, N)))
        self.erfinv = ops.Erfinv().shard(((N, 1),))
        self.i0e = ops.BesselI0e().shard(((1, N),))
        self.i1 = ops.BesselI1().shard(((N, 1),))
        self.igamma = ops.Igamma().shard(((1, N), (1, N)))
        self.j1 = ops.BesselJ1().shard(((1, N),))
        self.k0e = ops.BesselK0e().shard(((N, 1),))

    def construct(self, x):
        h = self.mul(x, self.w)
        p = ops.abs(h) + 0.5
        y = self.lgamma(p) + self.digamma(p) + self.polygamma(Tensor(np.array(1, np.int64)), p)
        y = y + self.zeta(p + 1.5, p) + self.erfinv(ops.tanh(h)) + self.i0e(h) + self.i1(h)
        y = y + ops.i0(h) + ops.bessel_i1e(h) + ops.addcdiv(h, x, p, 0.5) + ops.ldexp(h, 2)
        y = y + ops.nextafter(h, x) + self.igamma(p, p * 0.7) + ops.igammac(p + 1.0, p)
        y = y + self.j1(h * 3.0) + ops.bessel_y0(p) + self.k0e(p) + ops.bessel_k1(p)
        return ops.ReduceSum()(y * y, ()) if self.loss else y


def test_sharded_special_functions_equal_the_serial_net():
    check(SpecialNet, data(8, 16, seed=2))


def test_sharded_special_functions_gradients_equal_the_serial_ones():
    check_grads(lambda: SpecialNet(loss=True), data(8, 16, seed=2), positions=(0,))


class IntegerNet(nn.Cell):
    """Gcd and Lcm split by rows and columns."""

    def __init__(self):
        super().__init__()
        self.gcd = ops.Gcd().shard(((N, 1), (N, 1)))
        self.lcm = ops.Lcm().shard(((1, N), (1, N)))

    def construct(self, a, b):
        return self.gcd(a, b), self.lcm(a, b)


def test_sharded_gcd_lcm_equal_numpy_and_the_serial_net():
    rng = np.random.default_rng(3)
    a = rng.integers(-40, 40, (8, 16)).astype(np.int32)
    b = rng.integers(-40, 40, (8, 16)).astype(np.int32)
    serial = run_serial(IntegerNet, Tensor(a), Tensor(b))
    got, graph = run_parallel(IntegerNet, Tensor(a), Tensor(b))
    for g, s, w in zip(got, serial, (np.gcd(a, b), np.lcm(a, b))):
        np.testing.assert_array_equal(s, w)
        np.testing.assert_array_equal(g, w)
    assert "AllReduce" not in comm_ops(graph)


class ArithNet(nn.Cell):
    """The four-input Addcdiv / Addcmul split by rows and by columns, TruncateDiv,
    ApproximateEqual and Inv, after x * w split by rows."""

    def __init__(self, loss=False):
        super().__init__()
        self.loss = loss
        self.w = Parameter(data(8, 16, seed=11), name="w")
        self.mul = ops.Mul().shard(((N, 1), (N, 1)))
        self.addcdiv = ops.Addcdiv().shard(((N, 1), (N, 1), (1,), ()))
        self.addcmul = ops.Addcmul().shard(((1, N), (1, N), (1, N), (1, N)))
        self.inv = ops.Inv().shard(((1, N),))

    def construct(self, x):
        h = self.mul(x, self.w)
        p = ops.abs(h) + 0.5
        y = self.addcdiv(h, x, p[0], Tensor(np.array(0.5, np.float32)))
        y = y + self.addcmul(h, x, p, h) + self.inv(p) + ops.truncate_div(h * 4.0, p)
        y = y + ops.cast(ops.approximate_equal(h, x, 0.3), h.dtype)
        return ops.ReduceSum()(y * y, ()) if self.loss else y


def test_sharded_arith_primitives_equal_the_serial_net():
    check(ArithNet, data(8, 16, seed=5))


def test_sharded_arith_primitives_gradients_equal_the_serial_ones():
    check_grads(lambda: ArithNet(loss=True), data(8, 16, seed=5), positions=(0,))
