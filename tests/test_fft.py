"""The Fourier transforms (msops.primitives.fft_ops, msops.ops.fft_func): values against
np.fft (scipy.fft for the n-d Hermitian ones, which numpy lacks) eager and compiled, MindSpore's dtypes, argument errors, and gradients of complex
and real inputs against central finite differences of a numpy loss (the gradient of a
complex x is dL/dRe(x) + i dL/dIm(x)). Their rows in test_compute_contract.py and
test_grad_ops.py check the kernel contract and the real-input paths too."""
import numpy as np
import pytest
import scipy.fft as SCIPY          # the n-d Hermitian transforms' reference

import msops as ms
from msops import Tensor, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(41)


def r(*shape):
    return RNG.standard_normal(shape)


def c(*shape):
    return r(*shape) + 1j * r(*shape)


@pytest.fixture(autouse=True)
def pynative():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


X, Z, H = r(3, 4, 6), c(3, 4, 6), c(3, 4, 4)
Z2, W2 = c(2, 3), c(3, 2)
FORMS = [  # (name, msops call, input, numpy reference)
    ("fft", lambda t: ops.fft(t), Z, np.fft.fft(Z)),
    ("fft_n_dim", lambda t: ops.fft(t, 5, 1, "ortho"), Z, np.fft.fft(Z, 5, 1, "ortho")),
    ("fft_real", lambda t: ops.fft(t, 8), X, np.fft.fft(X, 8)),
    ("ifft", lambda t: ops.ifft(t, 3, 0, "forward"), Z, np.fft.ifft(Z, 3, 0, "forward")),
    ("fft2", lambda t: ops.fft2(t), Z, np.fft.fft2(Z)),
    ("fft2_s", lambda t: ops.fft2(t, (2, 7), (0, 2)), Z, np.fft.fft2(Z, (2, 7), (0, 2))),
    ("ifft2", lambda t: ops.ifft2(t, norm="ortho"), Z, np.fft.ifft2(Z, norm="ortho")),
    ("fftn", lambda t: ops.fftn(t), Z, np.fft.fftn(Z)),
    ("fftn_s", lambda t: ops.fftn(t, (3, 5)), Z, np.fft.fftn(Z, (3, 5), (1, 2))),
    ("ifftn", lambda t: ops.ifftn(t, dim=(2, 0)), Z, np.fft.ifftn(Z, axes=(2, 0))),
    ("rfft", lambda t: ops.rfft(t), X, np.fft.rfft(X)),
    ("rfft_n_odd", lambda t: ops.rfft(t, 7, 1), X, np.fft.rfft(X, 7, 1)),
    ("irfft", lambda t: ops.irfft(t), H, np.fft.irfft(H)),
    ("irfft_n", lambda t: ops.irfft(t, 9, 1, "forward"), H, np.fft.irfft(H, 9, 1, "forward")),
    ("rfft2", lambda t: ops.rfft2(t), X, np.fft.rfft2(X)),
    ("irfft2", lambda t: ops.irfft2(t, (4, 5)), H, np.fft.irfft2(H, (4, 5))),
    ("rfftn", lambda t: ops.rfftn(t, dim=(0, 1)), X, np.fft.rfftn(X, axes=(0, 1))),
    ("irfftn", lambda t: ops.irfftn(t), H, np.fft.irfftn(H)),
    ("hfft", lambda t: ops.hfft(t), H, np.fft.hfft(H)),
    ("hfft_n", lambda t: ops.hfft(t, 5, 0, "ortho"), H, np.fft.hfft(H, 5, 0, "ortho")),
    ("ihfft", lambda t: ops.ihfft(t), X, np.fft.ihfft(X)),
    ("ihfft_n", lambda t: ops.ihfft(t, 4, 1), X, np.fft.ihfft(X, 4, 1)),
    ("hfft2", lambda t: ops.hfft2(t), H, SCIPY.hfft2(H)),
    ("hfftn_s", lambda t: ops.hfftn(t, (2, 5), norm="ortho"), H,
     SCIPY.hfftn(H, (2, 5), norm="ortho")),
    ("ihfft2", lambda t: ops.ihfft2(t, dim=(0, 2)), X, SCIPY.ihfft2(X, axes=(0, 2))),
    ("ihfftn", lambda t: ops.ihfftn(t, norm="forward"), X, SCIPY.ihfftn(X, norm="forward")),
    ("fftshift", lambda t: ops.fftshift(t), Z, np.fft.fftshift(Z)),
    ("fftshift_dim", lambda t: ops.fftshift(t, (0, 2)), X, np.fft.fftshift(X, (0, 2))),
    ("ifftshift", lambda t: ops.ifftshift(t, -1), X, np.fft.ifftshift(X, -1)),
    ("real", lambda t: ops.real(t), Z, Z.real),
    ("imag", lambda t: ops.imag(t), Z, Z.imag),
    ("imag_of_real", lambda t: ops.imag(t), X, np.zeros_like(X)),
]


@pytest.mark.parametrize("name,fn,x,want", FORMS, ids=[f[0] for f in FORMS])
def test_values_match_numpy_eager_and_compiled(name, fn, x, want):
    for got in eager_and_compiled(fn, Tensor(x)):
        assert got.shape == want.shape and got.dtype == ms.dtype.from_numpy(want.dtype)
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("x,fn,want", [
    (np.arange(4, dtype=np.int32), ops.fft, ms.complex64),
    (np.ones(4, np.float16), ops.fft, ms.complex64),
    (np.ones(4, np.float32), ops.rfft, ms.complex64),
    (np.ones(4, np.float64), ops.fft, ms.complex128),
    (np.ones(4, np.complex64), ops.ifft, ms.complex64),
    (np.ones(3, np.complex64), ops.irfft, ms.float32),
    (np.ones(3, np.complex128), ops.hfft, ms.float64),
    (np.ones(4, np.float32), ops.ihfft, ms.complex64),
])
def test_dtypes_as_mindspore(x, fn, want):
    out = fn(Tensor(x))
    assert out.dtype == want
    np.testing.assert_allclose(out.asnumpy(), np.fft.__dict__[fn.__name__](x), rtol=1e-3)


def test_frequencies():
    for n, d in [(5, 0.5), (8, 1.0), (1, 2.0)]:
        got = ops.fftfreq(n, d)
        assert got.dtype == ms.float32
        np.testing.assert_allclose(got.asnumpy(), np.fft.fftfreq(n, d), rtol=1e-6)
        np.testing.assert_allclose(ops.rfftfreq(n, d, ms.float64).asnumpy(),
                                   np.fft.rfftfreq(n, d))


@pytest.mark.parametrize("call,err,msg", [
    (lambda: ops.fft(Tensor(np.ones(4)), norm="half"), ValueError,
     r"For 'FFTN', the 'norm' should be one of \['backward', 'forward', 'ortho'\] or None, "
     r"but got 'half'"),
    (lambda: ops.fft(Tensor(np.ones(4)), 0), ValueError,
     r"For 'FFTN', every value of 's' should be positive"),
    (lambda: ops.fft(Tensor(np.ones(4)), 2.5), TypeError, r"For 'fft', the 'n' should be an int"),
    (lambda: ops.fft(Tensor(np.ones(4)), dim=1), ValueError, r"For 'FFTN', the 'dim'"),
    (lambda: ops.fft(np.ones(4)), TypeError, r"For 'fft', the 'input' should be a Tensor"),
    (lambda: ops.fft(Tensor(np.ones(4, bool))), TypeError, r"For 'FFTN', the 'input'"),
    (lambda: ops.rfft(Tensor(np.ones(4, np.complex64))), TypeError, r"For 'RFFTN', the 'input'"),
    (lambda: ops.fftn(Tensor(np.ones((2, 2))), (2, 2, 2)), ValueError,
     r"For 'FFTN', the 's' should have at most 2 values"),
    (lambda: ops.fft2(Tensor(np.ones((2, 2))), dim=(1, -1)), ValueError,
     r"For 'FFTN', the 'dim' should name distinct dims"),
    (lambda: ops.irfft(Tensor(np.ones(1, np.complex64))), ValueError,
     r"For 'IRFFTN', the signal size along dim 0 should be positive, but got 0"),
    (lambda: ops.hfft(Tensor(np.ones(3)), n=-2), ValueError, r"For 'HFFT', the 'n' should be "
                                                              r"positive, but got -2"),
    (lambda: ops.fft(Tensor(np.array(1.0))), ValueError, r"For 'FFTN', the rank of 'input'"),
    (lambda: ops.fftshift(Tensor(np.ones(3)), 1), ValueError,
     r"For 'fftshift', the 'dim' should be in \[-1, 1\), but got 1"),
    (lambda: ops.fftfreq(0), ValueError, r"For 'fftfreq', the 'n' should be a positive int"),
    (lambda: ops.rfftfreq(4, dtype=ms.int32), TypeError, r"For 'rfftfreq', the 'dtype'"),
])
def test_argument_errors(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


# -- gradients --------------------------------------------------------------------------------
def _complex_fd(f, x, w_re, w_im):
    """dL/dRe + i dL/dIm of L = sum(Re f(x) w_re + Im f(x) w_im) (f of numpy arrays)."""
    def loss(v):
        y = f(v)
        return np.sum(y.real * w_re + np.imag(y) * w_im)
    if not np.iscomplexobj(x):
        return finite_differences(loss, x)
    d_re = finite_differences(lambda a: loss(a + 1j * x.imag), x.real.copy())
    d_im = finite_differences(lambda b: loss(x.real + 1j * b), x.imag.copy())
    return d_re + 1j * d_im


GRADS = [  # (name, msops call, numpy reference, input)
    ("fft", lambda t: ops.fft(t, 7), lambda v: np.fft.fft(v, 7), c(2, 5)),
    ("ifft_crop", lambda t: ops.ifft(t, 3, 0, "ortho"), lambda v: np.fft.ifft(v, 3, 0, "ortho"),
     c(4, 3)),
    ("fft2_real", lambda t: ops.fft2(t, (3, 6)), lambda v: np.fft.fft2(v, (3, 6)), r(2, 4, 4)),
    ("ifftn", lambda t: ops.ifftn(t, dim=(0, 2)), lambda v: np.fft.ifftn(v, axes=(0, 2)),
     c(3, 2, 4)),
    ("rfft_even", lambda t: ops.rfft(t), np.fft.rfft, r(2, 6)),
    ("rfft_odd_pad", lambda t: ops.rfft(t, 7, 0, "forward"),
     lambda v: np.fft.rfft(v, 7, 0, "forward"), r(5, 2)),
    ("rfftn", lambda t: ops.rfftn(t), np.fft.rfftn, r(3, 4, 4)),
    ("irfft", lambda t: ops.irfft(t), np.fft.irfft, c(2, 4)),
    ("irfft_odd", lambda t: ops.irfft(t, 7, norm="ortho"),
     lambda v: np.fft.irfft(v, 7, norm="ortho"), c(3, 5)),
    ("irfft2", lambda t: ops.irfft2(t, (4, 6)), lambda v: np.fft.irfft2(v, (4, 6)), c(3, 3, 3)),
    ("hfft", lambda t: ops.hfft(t), np.fft.hfft, c(2, 4)),
    ("hfft_odd", lambda t: ops.hfft(t, 5, 0, "forward"),
     lambda v: np.fft.hfft(v, 5, 0, "forward"), c(4, 2)),
    ("ihfft", lambda t: ops.ihfft(t), np.fft.ihfft, r(2, 6)),
    ("ihfft_n", lambda t: ops.ihfft(t, 5, 0, "ortho"), lambda v: np.fft.ihfft(v, 5, 0, "ortho"),
     r(4, 3)),
    ("hfft2", lambda t: ops.hfft2(t, (3, 5)), lambda v: SCIPY.hfft2(v, (3, 5)), c(2, 3)),
    ("hfftn", lambda t: ops.hfftn(t, norm="ortho"), lambda v: SCIPY.hfftn(v, norm="ortho"),
     c(2, 2, 3)),
    ("ihfft2", lambda t: ops.ihfft2(t), SCIPY.ihfft2, r(3, 4)),
    ("ihfftn", lambda t: ops.ihfftn(t, (4, 5), (0, 1), "forward"),
     lambda v: SCIPY.ihfftn(v, (4, 5), (0, 1), "forward"), r(3, 6)),
    ("fftshift", lambda t: ops.fftshift(t), np.fft.fftshift, c(3, 4)),
    ("conj", lambda t: ops.conj(t), np.conj, c(3)),
    # holomorphic ops of complex values: dout times the conjugate derivative
    ("mul", lambda t: t * Tensor(Z2), lambda v: v * Z2, c(2, 3)),
    ("square", lambda t: ops.Square()(t), np.square, c(2, 3)),
    ("matmul", lambda t: ops.MatMul()(t, Tensor(W2)), lambda v: v @ W2, c(2, 3)),
    ("matmul_t", lambda t: ops.MatMul(True, True)(Tensor(W2), t),
     lambda v: W2.T @ v.T, c(2, 3)),
    ("div_x", lambda t: t / Tensor(Z2), lambda v: v / Z2, c(2, 3)),
    ("div_y", lambda t: Tensor(Z2) / t, lambda v: Z2 / v, c(2, 3) + 2),
    ("exp", lambda t: ops.exp(t), np.exp, c(2, 3) * 0.5),
    ("log", lambda t: ops.log(t), np.log, c(2, 3) + 3),
    ("spectral_filter", lambda t: ops.irfft(ops.rfft(t) * Tensor(Z2[0, :3]), 4),
     lambda v: np.fft.irfft(np.fft.rfft(v) * Z2[0, :3], 4), r(2, 4)),
    ("real", lambda t: ops.real(t), np.real, c(3)),
    ("imag", lambda t: ops.imag(t), np.imag, c(3)),
]


@pytest.mark.parametrize("name,fn,ref,x", GRADS, ids=[g[0] for g in GRADS])
def test_gradient_against_finite_differences_eager_and_compiled(name, fn, ref, x):
    shape = ref(x).shape
    w_re, w_im = r(*shape), r(*shape)

    def loss(t):
        y = fn(t)
        return (ops.real(y) * Tensor(w_re)).sum() + (ops.imag(y) * Tensor(w_im)).sum()
    want = _complex_fd(ref, x, w_re, w_im)
    eager = ms.grad(loss)(Tensor(x))
    ms.set_context(mode=ms.GRAPH_MODE)
    compiled = ms.grad(loss)(Tensor(x))
    for got in (eager, compiled):
        assert got.shape == x.shape and got.dtype == ms.dtype.from_numpy(x.dtype)
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6, atol=1e-8)


def test_float32_gradient_keeps_the_input_dtype():
    x = r(2, 8).astype(np.float32)
    got = ms.grad(lambda t: ops.irfft(ops.rfft(t) * 2).sum())(Tensor(x))
    assert got.dtype == ms.float32
    np.testing.assert_allclose(got.asnumpy(), np.full_like(x, 2.0), rtol=1e-5)


def test_second_order_through_the_adjoint():
    """d/dx of the gradient's weighted sum: the adjoint's backward is the transform again."""
    x, v = r(6), r(6)

    def first(t):
        return ms.grad(lambda u: (ops.real(ops.rfft(u)) ** 2).sum())(t)

    def second(t):
        return (first(t) * Tensor(v)).sum()
    # L(x) = sum(Re(rfft x)^2) = x^T A x with A = C^T C (C: the cosine rows); grad 2 A x,
    # second: 2 A v
    rows = np.cos(2 * np.pi * np.outer(np.arange(4), np.arange(6)) / 6)
    a = rows.T @ rows
    np.testing.assert_allclose(first(Tensor(x)).asnumpy(), 2 * a @ x, rtol=1e-10)
    np.testing.assert_allclose(ms.grad(second)(Tensor(x)).asnumpy(), 2 * a @ v, rtol=1e-10)


def test_complex_tensor_methods():
    """Tensor.real() / imag() as ops.real / imag; astype to a real dtype keeps the real part
    without numpy's ComplexWarning."""
    z = c(2, 3).astype(np.complex64)
    t = Tensor(z)
    np.testing.assert_array_equal(t.real().asnumpy(), z.real)
    np.testing.assert_array_equal(t.imag().asnumpy(), z.imag)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = t.astype(ms.float32)
    assert got.dtype == ms.float32
    np.testing.assert_array_equal(got.asnumpy(), z.real)


def test_a_complex_value_through_an_op_without_a_complex_backward_is_refused():
    """TensorScatterMul's backward rule is written for real values (its products take no
    conjugate): a complex value is refused by name (no silently wrong gradient); through
    Exp (a conjugating rule) it differentiates."""
    x = Tensor(np.array([0.5, -1.0, 2.0], np.float32))

    def through(op):
        return lambda t: ops.real(op(ops.fft(t))).sum()
    indices = Tensor(np.array([[1]], np.int32))
    updates = Tensor(np.array([2 + 1j], np.complex64))
    scatter_mul = lambda z: ops.TensorScatterMul()(z, indices, updates)  # noqa: E731
    with pytest.raises(NotImplementedError, match="For 'TensorScatterMul', the gradient "
                                                  "through complex values is not "
                                                  "implemented"):
        ms.grad(through(scatter_mul))(x)
    # d/dx sum(Re(exp(fft(x)))): the chain rule by hand, with numpy's fft
    got = ms.grad(through(ops.exp))(x).asnumpy()
    n = 3
    w = np.exp(-2j * np.pi * np.outer(np.arange(n), np.arange(n)) / n)   # fft(x) = w @ x
    want = (np.exp(w @ x.asnumpy().astype(np.float64)) @ w).real
    np.testing.assert_allclose(got, want, rtol=1e-5)
