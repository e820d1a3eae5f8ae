"""The random primitives and their functional forms (msops.primitives.random_ops,
msops.ops.random_func): distributions against numpy's expectations, seeds, the draw
counter, eager == compiled, the block a sharded rank draws, errors and no gradient.
(Serial == sharded under MPI: tests/ranks/test_random_ops.py.)
"""
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from msops.primitives.random_ops import flat_index

BIG = (400, 250)                       # 100000 draws: moments within a few standard errors


@pytest.fixture(autouse=True)
def fresh_seed():
    ms.set_seed(0)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)


def i32(v):
    return Tensor(np.int32(v))


def test_uniform_real_moments_and_range():
    u = ops.UniformReal(seed=4)(BIG).asnumpy()
    assert u.dtype == np.float32 and u.shape == BIG
    assert u.min() >= 0 and u.max() < 1
    n = u.size                         # mean 1/2 (sd 1/sqrt(12 n)), variance 1/12
    assert abs(u.mean() - 0.5) < 5 / math.sqrt(12 * n)
    assert abs(u.var() - 1 / 12) < 5 * math.sqrt(1 / 180 / n)
    counts, _ = np.histogram(u, bins=10, range=(0, 1))     # every tenth about equally full
    assert np.all(np.abs(counts - n / 10) < 5 * math.sqrt(n / 10))


def test_standard_normal_moments_and_tails():
    z = ops.StandardNormal(seed=1, seed2=2)(BIG).asnumpy()
    assert z.dtype == np.float32
    z = z.astype(np.float64)
    n = z.size
    assert abs(z.mean()) < 5 / math.sqrt(n)
    assert abs(z.var() - 1) < 5 * math.sqrt(2 / n)
    assert abs(np.mean(z ** 3)) < 5 * math.sqrt(15 / n)            # skewness 0
    assert abs(np.mean(z ** 4) - 3) < 5 * math.sqrt(96 / n)        # kurtosis 3
    assert abs(np.mean(np.abs(z) > 1.96) - 0.05) < 5 * math.sqrt(0.05 * 0.95 / n)


def test_uniform_int_range_and_frequencies():
    v = ops.UniformInt(seed=3)(BIG, i32(-3), i32(7)).asnumpy()
    assert v.dtype == np.int32 and v.min() == -3 and v.max() == 6
    counts = np.bincount(v.ravel() + 3, minlength=10)
    n = v.size
    assert np.all(np.abs(counts - n / 10) < 5 * math.sqrt(n / 10 * 0.9))


@pytest.mark.parametrize("dtype", [ms.float16, ms.bfloat16, ms.float32, ms.float64])
def test_rand_in_every_float_dtype_stays_below_one(dtype):
    u = ops.rand(BIG, dtype=dtype)
    assert u.dtype == dtype
    a = u.asnumpy().astype(np.float64)
    assert a.min() >= 0 and a.max() < 1 and abs(a.mean() - 0.5) < 0.01


def test_functional_forms():
    z = ops.randn(300, 200, dtype=ms.float64).asnumpy()
    assert z.dtype == np.float64 and abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    r = ops.randint(-(2 ** 40), 2 ** 40, (1000,)).asnumpy()
    assert r.dtype == np.int64 and r.min() >= -(2 ** 40) and r.max() < 2 ** 40
    assert abs(r.mean()) < 2 ** 40 * 0.1
    assert ops.randint(3, 4, (5,), dtype=ms.int8).asnumpy().tolist() == [3] * 5
    u = ops.uniform((2000,), Tensor(np.float32(-2)), Tensor(np.float32(3))).asnumpy()
    assert u.dtype == np.float32 and u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.2
    k = ops.uniform((2000,), i32(5), i32(8), seed=2, dtype=ms.int32).asnumpy()
    assert set(k.tolist()) == {5, 6, 7}
    x = Tensor(np.zeros((3, 4), np.float16))
    assert ops.rand_like(x).dtype == ms.float16 and ops.randn_like(x).shape == (3, 4)
    assert ops.rand_like(x, dtype=ms.float64).dtype == ms.float64
    assert ops.randint_like(Tensor(np.zeros(6, np.int32)), 0, 3).dtype == ms.int32
    assert ops.standard_normal((2, 5), seed=7).shape == (2, 5)


def test_randperm_is_a_uniform_permutation():
    perms = np.stack([ops.randperm(6, seed=1).asnumpy() for _ in range(3000)])
    assert perms.dtype == np.int64
    assert all(sorted(p) == list(range(6)) for p in perms)
    # each value lands at each position with probability 1/6
    for v in range(6):
        freq = np.bincount(np.argmax(perms == v, axis=1), minlength=6) / len(perms)
        assert np.all(np.abs(freq - 1 / 6) < 5 * math.sqrt(1 / 6 * 5 / 6 / len(perms)))
    ms.set_seed(2)
    a = ops.randperm(50, seed=3, offset=1)
    ms.set_seed(2)
    np.testing.assert_array_equal(ops.randperm(Tensor(np.int64(50)), 3, 1).asnumpy(), a.asnumpy())
    assert ops.randperm(5, dtype=ms.float32).dtype == ms.float32
    assert ops.randperm(2049, dtype=ms.float16).asnumpy().max() == 2048


def test_set_seed_repeats_and_calls_advance():
    op = ops.StandardNormal(seed=5)
    ms.set_seed(9)
    first, second = op((3, 4)).asnumpy(), op((3, 4)).asnumpy()
    assert not np.array_equal(first, second)          # every call draws anew
    ms.set_seed(9)
    np.testing.assert_array_equal(op((3, 4)).asnumpy(), first)
    np.testing.assert_array_equal(op((3, 4)).asnumpy(), second)


def test_global_seed_and_op_seed_both_key_the_draw():
    def draw(global_seed, seed, seed2=0):
        ms.set_seed(global_seed)
        return ops.UniformReal(seed, seed2)((50,)).asnumpy()
    base = draw(1, 2)
    np.testing.assert_array_equal(draw(1, 2), base)
    for other in (draw(3, 2), draw(1, 4), draw(1, 2, 1)):
        assert not np.array_equal(other, base)
    assert ms.get_seed() == 1


def test_functional_seed_keys_the_draw():
    ms.set_seed(2)
    a = ops.rand(10, seed=1).asnumpy()
    ms.set_seed(2)
    assert np.array_equal(ops.rand(10, seed=1).asnumpy(), a)
    ms.set_seed(2)
    assert not np.array_equal(ops.rand(10, seed=2).asnumpy(), a)


class Draws(nn.Cell):
    def __init__(self):
        super().__init__()
        self.uniform = ops.UniformReal(seed=3)
        self.normal = ops.StandardNormal(seed=1, seed2=2)
        self.uniform_int = ops.UniformInt(seed=5)

    def construct(self, low, high):
        return (self.uniform((4, 6)), self.normal((4, 5)), self.uniform_int((4, 3), low, high),
                ops.rand(4, 2, dtype=ms.float16), ops.randint(0, 9, (3,)),
                self.uniform((4, 6)), ops.randperm(7, seed=2))


def test_eager_equals_compiled_and_a_compiled_step_advances():
    net = Draws()
    ms.set_seed(7)
    eager = [o.asnumpy() for o in net(i32(-2), i32(9))]
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(7)
    compiled = [o.asnumpy() for o in net(i32(-2), i32(9))]
    for a, b in zip(eager, compiled):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(compiled[0], compiled[5])      # two calls, two draws
    again = [o.asnumpy() for o in net(i32(-2), i32(9))]
    assert not np.array_equal(again[0], compiled[0])         # the next step draws anew


@pytest.mark.parametrize("op", [ops.UniformReal(seed=2), ops.StandardNormal(seed=3)],
                         ids=lambda p: p.name)
@pytest.mark.parametrize("starts,block", [((2, 0), (2, 5)), ((0, 3), (6, 2)), ((4, 1), (2, 3))])
def test_a_block_draws_the_whole_tensors_values_there(op, starts, block):
    """What a rank holding a block of a split output draws (the expansion's local op)."""
    whole = (6, 5)
    ms.set_seed(4)
    full = op(whole).asnumpy()
    ms.set_seed(4)
    part = op.local(whole, starts)(block).asnumpy()
    np.testing.assert_array_equal(part, full[starts[0]:starts[0] + block[0],
                                             starts[1]:starts[1] + block[1]])


def test_flat_index_of_a_block():
    np.testing.assert_array_equal(flat_index((2, 2), ((3, 4), (1, 2))), [[6, 7], [10, 11]])
    np.testing.assert_array_equal(flat_index((2, 3), None), np.arange(6).reshape(2, 3))


def test_no_gradient_flows_through_a_draw():
    def loss(x):
        ms.set_seed(1)                               # the same draw on every call
        return ops.ReduceSum()(ops.UniformReal(seed=1)((3,)) * x)
    x = Tensor(np.ones(3, np.float32))
    ms.set_seed(1)
    want = ops.UniformReal(seed=1)((3,)).asnumpy()
    np.testing.assert_allclose(ms.grad(loss)(x).asnumpy(), want)


@pytest.mark.parametrize("call,err,match", [
    (lambda: ops.UniformReal(seed=-1), ValueError, "'seed'"),
    (lambda: ops.StandardNormal(seed2=1.5), TypeError, "'seed2'"),
    (lambda: ops.UniformReal()((2, 0)), ValueError,
     "For 'UniformReal', the 'shape' should have positive elements, but got \\(2, 0\\)"),
    (lambda: ops.UniformReal()([2.0]), TypeError, "shape"),
    (lambda: ops.UniformInt()((2,), i32(3), i32(3)), ValueError,
     "For 'UniformInt', the 'minval' should be < 'maxval', but got minval 3 and maxval 3"),
    (lambda: ops.UniformInt()((2,), Tensor(np.float32(0)), i32(3)), TypeError, "'minval'"),
    (lambda: ops.UniformInt()((2,), Tensor(np.zeros(2, np.int32)), i32(3)), ValueError,
     "'minval' should be a 0-d Tensor"),
    (lambda: ops.rand(2, dtype=ms.int32), ValueError, "For 'rand', the 'dtype'"),
    (lambda: ops.rand(2, seed=-3), TypeError, "For 'rand', the 'seed'"),
    (lambda: ops.randn(2, -1), ValueError, "For 'randn', the 'size'"),
    (lambda: ops.randint(5, 2, (3,)), ValueError, "For 'randint', the 'low' should be < 'high'"),
    (lambda: ops.randint(0, 300, (3,), dtype=ms.int8), ValueError, "should fit in Int8"),
    (lambda: ops.randint(0.5, 3, (3,)), TypeError, "For 'randint', the 'low'"),
    (lambda: ops.uniform((2,), i32(0), i32(1), dtype=ms.float16), ValueError,
     "For 'uniform', the 'dtype'"),
    (lambda: ops.rand_like(np.zeros(2)), TypeError, "For 'rand_like', the 'input'"),
    (lambda: ops.randperm(0), ValueError, "the 'n' should be in \\[1, "),
    (lambda: ops.randperm(129, dtype=ms.int8), ValueError, "n - 1 exact in Int8"),
    (lambda: ops.randperm(3, dtype=ms.bool_), TypeError, "'dtype'"),
    (lambda: ops.randperm(3, seed=-2), ValueError, "For 'randperm', the 'seed'"),
    (lambda: ops.randperm(3, offset=-1), ValueError, "For 'randperm', the 'offset'"),
    (lambda: ops.randperm(Tensor(np.ones(2, np.int64))), ValueError, "For 'randperm', the 'n'"),
    (lambda: ops.randperm(3.0), TypeError, "For 'randperm', the 'n'"),
])
def test_errors_name_the_op_and_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()
