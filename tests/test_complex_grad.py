"""Gradients of holomorphic element-wise ops on complex values (the conjugate convention,
dL/dRe + i dL/dIm of a real loss) against central differences taken separately in the real
and imaginary parts, eager and compiled."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops

Z = np.array([0.3 + 0.2j, -0.5 + 0.1j, 0.7 - 0.4j])
W, V = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.5])

CASES = {"sqrt": np.sqrt, "tanh": np.tanh, "reciprocal": lambda z: 1 / z, "sin": np.sin,
         "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "log1p": np.log1p,
         "expm1": np.expm1, "atan": np.arctan, "atanh": np.arctanh, "exp": np.exp,
         "log": np.log, "square": np.square}


def central_differences(f, z, eps=1e-6):
    """dL/dRe z + i dL/dIm z of L = sum(W Re f(z) + V Im f(z)), numerically."""
    def loss(u):
        r = f(u)
        return (W * r.real + V * r.imag).sum()
    grad = np.zeros_like(z)
    for k in range(z.size):
        for unit in (1, 1j):
            up, down = z.copy(), z.copy()
            up[k] += eps * unit
            down[k] -= eps * unit
            grad[k] += unit * (loss(up) - loss(down)) / (2 * eps)
    return grad


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_holomorphic_gradient_equals_central_differences(name, mode):
    op = getattr(ops, name)

    def loss(t):
        y = op(t)
        return (ops.real(y) * Tensor(W) + ops.imag(y) * Tensor(V)).sum()
    ms.set_context(mode=mode)
    grad = ms.grad(loss) if mode == ms.PYNATIVE_MODE else ms.jit(ms.grad(loss))
    got = grad(Tensor(Z)).asnumpy()
    np.testing.assert_allclose(got, central_differences(CASES[name], Z), atol=1e-6)
