"""ops.isclose, ops.outer, ops.diag, ops.trace against numpy, eager and compiled, with
gradients where they have them."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops


@pytest.fixture(params=["eager", "jit"])
def run(request):
    ms.set_context(mode=ms.GRAPH_MODE)
    return (lambda fn, *a: fn(*a)) if request.param == "eager" else \
        (lambda fn, *a: ms.jit(fn)(*a))


@pytest.mark.filterwarnings("ignore:invalid value")
@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_equals_numpy(equal_nan, run):
    a = np.array([[1.0, 2.0, np.inf, np.nan, 1e-9, -np.inf]], np.float32)
    b = np.array([1.0 + 1e-6, 2.1, np.inf, np.nan, 0.0, np.inf], np.float32)
    got = run(lambda x, y: ops.isclose(x, y, rtol=1e-5, atol=1e-8, equal_nan=equal_nan),
              Tensor(a), Tensor(b)).asnumpy()
    np.testing.assert_array_equal(got, np.isclose(a, b, rtol=1e-5, atol=1e-8,
                                                  equal_nan=equal_nan))
    ints = run(lambda x, y: ops.isclose(x, y), Tensor(np.array([1, 2], np.int32)),
               Tensor(np.array([1.0, 2.5], np.float32))).asnumpy()
    np.testing.assert_array_equal(ints, [True, False])


def test_outer_diag_trace_and_their_gradients(run):
    v, w = np.array([1.0, -2.0, 3.0]), np.array([0.5, 4.0])
    m = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(run(ops.outer, Tensor(v), Tensor(w)).asnumpy(), np.outer(v, w))
    np.testing.assert_array_equal(run(ops.diag, Tensor(v)).asnumpy(), np.diag(v))
    assert float(run(ops.trace, Tensor(m)).asnumpy()) == np.trace(m)
    gv, gw = run(ms.grad(lambda a, b: (ops.outer(a, b) ** 2).sum(), (0, 1)), Tensor(v),
                 Tensor(w))
    np.testing.assert_allclose(gv.asnumpy(), 2 * v * (w**2).sum())
    np.testing.assert_allclose(gw.asnumpy(), 2 * w * (v**2).sum())
    np.testing.assert_array_equal(run(ms.grad(lambda a: ops.diag(a).sum()), Tensor(v)).asnumpy(),
                                  np.ones(3))
    np.testing.assert_array_equal(run(ms.grad(ops.trace), Tensor(m)).asnumpy(), np.eye(3, 4))


def test_shape_errors_name_the_function():
    with pytest.raises(ValueError, match=r"For 'outer', the 'vec2' should be 1-D"):
        ops.outer(Tensor(np.ones(2)), Tensor(np.ones((2, 2))))
    with pytest.raises(ValueError, match=r"For 'diag', the 'input' should be 1-D"):
        ops.diag(Tensor(np.ones((2, 2))))
    with pytest.raises(ValueError, match=r"For 'trace', the 'input' should be 2-D"):
        ops.trace(Tensor(np.ones(3)))
    with pytest.raises(ValueError, match=r"For 'isclose', the 'rtol' should be a number >= 0"):
        ops.isclose(Tensor(np.ones(2)), Tensor(np.ones(2)), rtol=-1)
