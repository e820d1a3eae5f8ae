"""nonzero / argwhere / masked_select / unique / unique_consecutive against numpy: eager,
traced with a constant mask, and the clear error when a traced value would decide a shape."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops

X = np.array([[1.5, 0.0, -2.0], [0.0, 3.0, 0.0]], np.float32)


def test_nonzero_and_argwhere_equal_numpy():
    want = np.stack(np.nonzero(X), axis=1)
    for got in (ops.nonzero(Tensor(X)), ops.argwhere(Tensor(X)), Tensor(X).nonzero(),
                Tensor(X).argwhere()):
        assert got.dtype == ms.int64
        np.testing.assert_array_equal(got.asnumpy(), want)
    rows, cols = ops.nonzero(Tensor(X), as_tuple=True)
    np.testing.assert_array_equal(rows.asnumpy(), np.nonzero(X)[0])
    np.testing.assert_array_equal(cols.asnumpy(), np.nonzero(X)[1])
    assert ops.nonzero(Tensor(np.zeros((2, 3)))).shape == (0, 2)


def test_masked_select_equals_numpy_and_its_gradient_reaches_the_selected():
    mask = np.array([True, False, True])                     # broadcast over the rows
    got = ops.masked_select(Tensor(X), Tensor(mask))
    np.testing.assert_array_equal(got.asnumpy(), X[np.broadcast_to(mask, X.shape)])
    np.testing.assert_array_equal(Tensor(X).masked_select(Tensor(X > 0)).asnumpy(), X[X > 0])
    assert ops.masked_select(Tensor(X), Tensor(X > 9)).shape == (0,)
    weights = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    grad = ms.grad(lambda t: (ops.masked_select(t, Tensor(mask)) * Tensor(weights)).sum())(
        Tensor(X)).asnumpy()
    want = np.zeros_like(X)
    want[np.broadcast_to(mask, X.shape)] = weights
    np.testing.assert_array_equal(grad, want)


def test_masked_select_with_a_constant_mask_compiles():
    class Pick(nn.Cell):
        def construct(self, x):
            return ops.masked_select(x * 2, Tensor(np.array([[True, False, False],
                                                             [False, True, True]])))
    ms.set_context(mode=ms.GRAPH_MODE)
    np.testing.assert_array_equal(Pick()(Tensor(X)).asnumpy(), [3.0, 6.0, 0.0])


@pytest.mark.parametrize("fn", [lambda x: ops.nonzero(x), lambda x: ops.masked_select(x, x > 0),
                                lambda x: ops.unique(x)[0], lambda x: ops.argwhere(x)])
def test_a_traced_value_deciding_a_shape_is_a_clear_error(fn):
    with pytest.raises(ValueError, match="decides the output's shape, so its values should be "
                                         "known when the graph is built"):
        ms.jit(fn)(Tensor(X))


def test_unique_equals_numpy():
    x = np.array([[3, 1, 3], [2, 1, 7]], np.int32)
    out, idx = ops.unique(Tensor(x))
    values, inverse = np.unique(x, return_inverse=True)
    np.testing.assert_array_equal(out.asnumpy(), values)
    np.testing.assert_array_equal(idx.asnumpy(), inverse.reshape(x.shape))
    np.testing.assert_array_equal(out.asnumpy()[idx.asnumpy()], x)     # idx rebuilds x


def test_unique_consecutive_flat_and_along_an_axis():
    x = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    out, idx, counts = ops.unique_consecutive(Tensor(x), True, True)
    np.testing.assert_array_equal(out.asnumpy(), [1, 2, 3, 1, 2])
    np.testing.assert_array_equal(idx.asnumpy(), [0, 0, 1, 1, 2, 3, 3, 4])
    np.testing.assert_array_equal(counts.asnumpy(), [2, 2, 1, 2, 1])
    m = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [2, 2, 5, 5]])
    rows, ridx = ops.unique_consecutive(Tensor(m), return_idx=True, axis=0)
    np.testing.assert_array_equal(rows.asnumpy(), m[[0, 2]])
    np.testing.assert_array_equal(ridx.asnumpy(), [0, 0, 1])
    cols, ccounts = Tensor(m).unique_consecutive(return_counts=True, axis=1)
    np.testing.assert_array_equal(cols.asnumpy(), m[:, [0, 2]])
    np.testing.assert_array_equal(ccounts.asnumpy(), [2, 2])


def test_bad_arguments():
    with pytest.raises(TypeError, match="For 'masked_select', the 'mask' should be a bool"):
        ops.masked_select(Tensor(X), Tensor(X))
    with pytest.raises(ValueError, match="For 'masked_select', the shapes of 'input'"):
        ops.masked_select(Tensor(X), Tensor(np.ones(4, bool)))
    with pytest.raises(ValueError, match=r"For 'unique_consecutive', the 'axis' should be in"):
        ops.unique_consecutive(Tensor(X), axis=2)
    with pytest.raises(TypeError, match="For 'nonzero', the 'as_tuple' should be a bool"):
        ops.nonzero(Tensor(X), as_tuple=1)
    with pytest.raises(TypeError, match="For 'unique', the 'input' should be a Tensor"):
        ops.unique([1, 2])
