"""Gradients of holomorphic element-wise ops on complex values (the conjugate convention,
dL/dRe + i dL/dIm of a real loss) against central differences taken separately in the real
and imaginary parts, eager and compiled."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from numeric import central_differences as complex_central_differences

Z = np.array([0.3 + 0.2j, -0.5 + 0.1j, 0.7 - 0.4j])
W, V = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.5])

CASES = {"sqrt": np.sqrt, "tanh": np.tanh, "reciprocal": lambda z: 1 / z, "sin": np.sin,
         "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "log1p": np.log1p,
         "expm1": np.expm1, "atan": np.arctan, "atanh": np.arctanh, "exp": np.exp,
         "log": np.log, "square": np.square}


def central_differences(f, z):
    """dL/dRe z + i dL/dIm z of L = sum(W Re f(z) + V Im f(z)), numerically."""
    return complex_central_differences(lambda u: (W * f(u).real + V * f(u).imag).sum(), z)


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


# the inverse trigonometric family (principal branches; Z stays off their cuts), products
MORE = {"asin": np.arcsin, "acos": np.arccos, "asinh": np.arcsinh, "acosh": np.arccosh,
        "pow_scalar": lambda z: z ** (1.5 - 0.5j),
        "prod": lambda z: np.prod(z, keepdims=True),
        "cumprod": lambda z: np.cumprod(z),
        "cumprod_reverse_exclusive": lambda z: np.concatenate(
            [np.cumprod(z[::-1])[::-1][1:], [1.0]])}
MORE_OPS = {
    "asin": ops.asin, "acos": ops.acos, "asinh": ops.asinh, "acosh": ops.acosh,
    "pow_scalar": lambda t: ops.pow(t, Tensor(np.array(1.5 - 0.5j))),
    "prod": lambda t: ops.prod(t, keep_dims=True),
    "cumprod": lambda t: ops.cumprod(t, 0),
    "cumprod_reverse_exclusive": lambda t: ops.CumProd(True, True)(t, 0)}


def _check_gradient(op, f, z, mode, atol=1e-6):
    """ms.grad of sum(W Re op(z) + V Im op(z)) (W, V cut to the last dim) against central
    differences of the numpy reference `f` in both parts of each element of z."""
    def loss(t):
        y = op(t)
        return (ops.real(y) * Tensor(W[:y.shape[-1]]) + ops.imag(y) * Tensor(V[:y.shape[-1]])
                ).sum()

    ms.set_context(mode=mode)
    grad = ms.grad(loss) if mode == ms.PYNATIVE_MODE else ms.jit(ms.grad(loss))
    got = grad(Tensor(z)).asnumpy()
    n = np.asarray(f(z)).shape[-1]
    w, v = W[:n], V[:n]
    want = complex_central_differences(lambda u: (w * f(u).real + v * f(u).imag).sum(), z)
    np.testing.assert_allclose(got, want, atol=atol)
    ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", sorted(MORE))
def test_declared_complex_rules_equal_central_differences(name, mode):
    """Pow, the inverse (hyperbolic) sines and cosines, ReduceProd and CumProd were refused
    for complex values; their rules now run on the conjugates (holomorphic)."""
    _check_gradient(MORE_OPS[name], MORE[name], Z, mode)


def _grads(loss, mode, *xs):
    """ms.grad of loss in each input, eagerly or compiled (ms.jit), as numpy arrays."""
    ms.set_context(mode=mode)
    try:
        f = ms.grad(loss, tuple(range(len(xs))))
        f = f if mode == ms.PYNATIVE_MODE else ms.jit(f)
        return [g.asnumpy() for g in f(*[Tensor(x) for x in xs])]
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "compiled"])
def test_pow_gradient_in_both_complex_inputs(mode):
    """x ** y: dx = dout conj(y x**(y-1)), dy = dout conj(x**y log x), both against central
    differences in each part of each input."""
    x, y = Z, np.array([1.2 - 0.3j, 0.5 + 0.5j, -0.7 + 0.2j])

    def loss(a, b):
        p = ops.pow(a, b)
        return (ops.real(p) * Tensor(W) + ops.imag(p) * Tensor(V)).sum()
    gx, gy = _grads(loss, mode, x, y)
    np.testing.assert_allclose(gx, central_differences(lambda u: u ** y, x), atol=1e-6)
    np.testing.assert_allclose(gy, central_differences(lambda u: x ** u, y), atol=1e-6)


def test_reduce_prod_with_a_zero_and_cumprod_matrix():
    """Products over a 2-D complex x holding a zero: exact (no division by x)."""
    z = np.array([[0.3 + 0.2j, 0.0 + 0.0j, 0.7 - 0.4j], [1.1 - 0.5j, -0.2 + 0.9j, 0.4 + 0.4j]])
    _check_gradient(lambda t: ops.prod(t, 1), lambda u: np.prod(u, 1), z, ms.PYNATIVE_MODE)
    _check_gradient(lambda t: ops.cumprod(t, 1), lambda u: np.cumprod(u, 1), z,
                    ms.PYNATIVE_MODE)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "compiled"])
def test_abs_of_complex_is_the_modulus_with_gradient_z_over_abs(mode):
    """|z| in the real dtype (float32 of complex64); the gradient of sum(w |z|) is
    w z / |z| (0 at z = 0), as central differences; ComplexAbs is the same op."""
    z = np.array([3 + 4j, 0j, -0.5 + 0.1j])
    got = ops.abs(Tensor(z.astype(np.complex64)))
    assert got.dtype == ms.float32
    np.testing.assert_allclose(got.asnumpy(), np.abs(z), rtol=1e-6)
    np.testing.assert_array_equal(ops.ComplexAbs()(Tensor(z)).asnumpy(), np.abs(z))
    ms.set_context(mode=mode)
    f = ms.grad(lambda t: (ops.abs(t) * Tensor(W)).sum())
    f = f if mode == ms.PYNATIVE_MODE else ms.jit(f)
    grad = f(Tensor(z)).asnumpy()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    nonzero = z != 0
    want = W * np.where(nonzero, z / np.where(nonzero, np.abs(z), 1), 0)
    np.testing.assert_allclose(grad, want, atol=1e-12)
    fd = complex_central_differences(lambda u: (W * np.abs(u)).sum(), z)
    np.testing.assert_allclose(grad[nonzero], fd[nonzero], atol=1e-6)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "compiled"])
def test_complex_builds_real_plus_i_imag_and_splits_its_gradient(mode):
    """Complex(real, imag) broadcasts and gives complex64 of float32; a loss of the result
    sends Re(dout) to real and Im(dout) to imag (checked through a non-linear loss)."""
    re, im = np.array([[0.5], [-1.0]], np.float32), np.array([1.0, 2.0, -3.0], np.float32)
    out = ops.Complex()(Tensor(re), Tensor(im))
    assert out.dtype == ms.complex64 and out.shape == (2, 3)
    np.testing.assert_array_equal(out.asnumpy(), re + 1j * im)
    a, b = np.array([0.3, -0.7, 1.1]), np.array([0.9, 0.2, -0.4])

    def loss(x, y):
        z = ops.Complex()(x, y)
        s = ops.sin(z)
        return (ops.real(s) * Tensor(W) + ops.imag(s) * Tensor(V)).sum()
    gx, gy = _grads(loss, mode, a, b)
    dz = central_differences(np.sin, a + 1j * b)
    np.testing.assert_allclose(gx, dz.real, atol=1e-6)
    np.testing.assert_allclose(gy, dz.imag, atol=1e-6)


def test_complex_rejects_mixed_and_integer_inputs():
    with pytest.raises(TypeError, match="Complex"):
        ops.Complex()(Tensor(np.ones(2, np.float32)), Tensor(np.ones(2, np.float64)))
    with pytest.raises(TypeError, match="Complex"):
        ops.Complex()(Tensor(np.ones(2, np.int32)), Tensor(np.ones(2, np.int32)))
