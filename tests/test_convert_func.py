"""msops/ops/convert_func.py: is_tensor, is_nonzero, scalar_to_tensor, scalar_to_array,
tuple_to_array, scalar_cast (values and dtypes as MindSpore documents them), fills, zero_
(in place: a Tensor, a Parameter, inside a compiled Cell), padding and deepcopy (a new
array; the gradient passes); argument errors."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(8)
X = RNG.standard_normal((3, 1)).astype(np.float32)


def test_python_value_conversions():
    assert ops.is_tensor(Tensor(X)) and ops.is_tensor(Parameter(Tensor(X), name="w"))
    assert not ops.is_tensor(X) and not ops.is_tensor(1.0) and ms.is_tensor(Tensor(1))
    assert ops.is_nonzero(Tensor(np.array([[-0.5]], np.float32))) is True
    assert ops.is_nonzero(Tensor(np.array(False))) is False
    assert ops.is_nonzero(Tensor(np.array([0], np.int32))) is False
    t = ops.scalar_to_tensor(3)
    assert t.dtype == ms.float32 and t.shape == () and t.asnumpy() == 3.0
    t = ops.scalar_to_tensor(2.7, ms.int32)
    assert t.dtype == ms.int32 and t.asnumpy() == 2
    assert ops.scalar_to_array(4).dtype == ms.int64 and ops.scalar_to_array(4.5).dtype == \
        ms.float32 and ops.scalar_to_array(True).dtype == ms.bool_
    a = ops.tuple_to_array((1, 2, 3))
    assert a.dtype == ms.int64
    np.testing.assert_array_equal(a.asnumpy(), [1, 2, 3])
    a = ops.tuple_to_array([1.5, -2.0])
    assert a.dtype == ms.float32
    np.testing.assert_array_equal(a.asnumpy(), [1.5, -2.0])
    assert ops.scalar_cast(255.9, ms.int64) == 255 and isinstance(ops.scalar_cast(
        255.9, ms.int32), int)
    assert ops.scalar_cast(-3.9, ms.int32) == -3
    assert ops.scalar_cast(3, ms.float32) == 3.0 and isinstance(ops.scalar_cast(
        3, ms.float64), float)
    assert ops.scalar_cast(0.0, ms.bool_) is False
    shape = ops.dyn_shape(Tensor(np.zeros((2, 0, 5))))
    assert shape.dtype == ms.int64
    np.testing.assert_array_equal(shape.asnumpy(), [2, 0, 5])
    assert ops.dyn_shape(Tensor(1.0)).shape == (0,)


FORMS = [
    ("fills", lambda x: ops.fills(x, 2.5), (X,), np.full_like(X, 2.5)),
    ("fills_tensor", lambda x: ops.fills(x, Tensor(np.float32(-1.0))), (X,),
     np.full_like(X, -1.0)),
    ("fills_int", lambda x: ops.fills(x, 7), (X.astype(np.int32),), np.full((3, 1), 7,
                                                                          np.int32)),
    ("padding", lambda x: ops.padding(x, 4), (X,),
     np.concatenate([X, np.zeros((3, 3), np.float32)], 1)),
    ("padding_one", lambda x: ops.padding(x, 1), (X,), X),
    ("deepcopy", lambda x: ops.deepcopy(x), (X,), X),
    ("zero_", lambda x: ops.zero_(x * 2) + x, (X,), X),
]


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    eager, compiled = eager_and_compiled(fn, *[Tensor(v) for v in inputs])
    for out in (eager, compiled):
        assert out.shape == want.shape and out.asnumpy().dtype == want.dtype
        np.testing.assert_array_equal(out.asnumpy(), want)


def test_deepcopy_shares_no_memory_and_passes_the_gradient():
    p = Parameter(Tensor(X.copy()), name="p")
    copy = ops.deepcopy(p)
    assert not np.shares_memory(copy.asnumpy(), p.asnumpy())
    ops.zero_(p)                                # the copy keeps the old value
    np.testing.assert_array_equal(copy.asnumpy(), X)
    np.testing.assert_array_equal(p.asnumpy(), np.zeros_like(X))
    x64 = X.astype(np.float64)
    fn = lambda x: ops.padding(ops.deepcopy(x) * x, 3)          # noqa: E731
    grad = ms.grad(lambda x: ops.ReduceSum()(fn(x), ()))(Tensor(x64))
    np.testing.assert_allclose(grad.asnumpy(), finite_differences(
        lambda a: fn(Tensor(a)).asnumpy(), x64), rtol=1e-6)


class ZeroParam(nn.Cell):
    def __init__(self):
        super().__init__()
        self.p = Parameter(Tensor(np.ones((2, 2), np.float32)), name="p")

    def construct(self, x):
        ops.zero_(self.p)
        return self.p + x


def test_zero_writes_a_parameter_in_a_compiled_cell():
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = ZeroParam()
        out = net(Tensor(np.full((2, 2), 3.0, np.float32)))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 2), 3.0))
    np.testing.assert_array_equal(net.p.asnumpy(), np.zeros((2, 2)))


@pytest.mark.parametrize("make,err,match", [
    (lambda: ops.is_nonzero(Tensor(np.zeros(2))), ValueError,
     r"For 'is_nonzero', the 'input' should hold exactly one element"),
    (lambda: ops.scalar_to_tensor("1"), TypeError, r"For 'scalar_to_tensor', the 'input_x'"),
    (lambda: ops.scalar_to_tensor(1, ms.string), TypeError, r"'dtype'"),
    (lambda: ops.tuple_to_array((1, 2.0)), TypeError, r"all ints or all floats"),
    (lambda: ops.tuple_to_array(()), TypeError, r"non-empty tuple"),
    (lambda: ops.scalar_cast(Tensor(1.0), ms.int32), TypeError, r"For 'scalar_cast'"),
    (lambda: ops.fills(Tensor(X), "a"), TypeError, r"For 'fills', the 'value'"),
    (lambda: ops.fills(Tensor(X), Tensor(X)), ValueError, r"should be 0-d"),
    (lambda: ops.padding(Tensor(X.reshape(1, 3)), 4), ValueError,
     r"For 'padding', the 'x' should have rank >= 1 and a last dim of 1"),
    (lambda: ops.padding(Tensor(X), 0), ValueError, r"'pad_dim_size' should be >= 1"),
    (lambda: ops.deepcopy(X), TypeError, r"For 'deepcopy', the 'input_x' should be a Tensor"),
])
def test_argument_errors_name_the_function_and_argument(make, err, match):
    with pytest.raises(err, match=match):
        make()
