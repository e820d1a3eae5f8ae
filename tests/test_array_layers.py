"""The array layers and their primitives against numpy written here, eager and compiled:
Tril / Triu (ops.Tril, ops.Triu, ops.tril, ops.triu, nn.Tril, nn.Triu); their errors.
(Gradients: tests/test_grad_ops.py; split across ranks: tests/ranks/test_triangle_ops.py.)"""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops

MODES = [ms.PYNATIVE_MODE, ms.GRAPH_MODE]


class Call(nn.Cell):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, *xs):
        return self.fn(*xs)


def run(fn, mode, *xs):
    ms.set_context(mode=mode)
    try:
        return Call(fn)(*[Tensor(x) for x in xs]).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def lower(x, k):
    """x with every element whose column - row > k zeroed (numpy-free of np.tril)."""
    rows, cols = x.shape[-2:]
    keep = np.arange(cols)[None, :] - np.arange(rows)[:, None] <= k
    return np.where(keep, x, np.zeros((), x.dtype))


def upper(x, k):
    rows, cols = x.shape[-2:]
    keep = np.arange(cols)[None, :] - np.arange(rows)[:, None] >= k
    return np.where(keep, x, np.zeros((), x.dtype))


X = np.random.default_rng(0).standard_normal((2, 3, 5)).astype(np.float32)
B = np.random.default_rng(1).random((4, 3)) > 0.4


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [0, 2, -1, 9, -9])
def test_tril_triu(mode, k):
    for x in (X, B, X.astype(np.int32)):
        for got, want in ((run(lambda t: ops.Tril(k)(t), mode, x), lower(x, k)),
                          (run(lambda t: ops.Triu(k)(t), mode, x), upper(x, k)),
                          (run(lambda t: ops.tril(t, k), mode, x), lower(x, k)),
                          (run(lambda t: nn.Tril()(t, k), mode, x), lower(x, k)),
                          (run(lambda t: nn.Triu()(t, k), mode, x), upper(x, k))):
            assert got.dtype == x.dtype
            np.testing.assert_array_equal(got, want)
    assert nn.Tril()(Tensor(X)).shape == X.shape       # k defaults to 0
    np.testing.assert_array_equal(nn.Triu()(Tensor(X)).asnumpy(), upper(X, 0))


def test_tril_triu_errors():
    with pytest.raises(TypeError, match="For 'Tril', the type of 'diagonal' should be int, "
                                        "but got float"):
        ops.Tril(1.5)
    with pytest.raises(ValueError, match=r"For 'Triu', the rank of 'x' should be >= 2, but got "
                                         r"shape \[3\]"):
        ops.Triu()(Tensor(np.ones(3, np.float32)))
    with pytest.raises(TypeError, match="For 'triu', the 'diagonal' should be an int"):
        nn.Triu()(Tensor(X), 1.0)
    with pytest.raises(ValueError, match="For 'tril', the 'input' should have rank >= 2"):
        nn.Tril()(Tensor(np.ones(3, np.float32)))
    with pytest.raises(TypeError, match="For 'Tril', the 'x'"):
        ops.Tril()(Tensor(np.array([["a", "b"]])))
