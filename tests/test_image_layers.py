"""nn.CentralCrop, nn.ImageGradients, nn.PSNR, nn.SSIM and nn.MSSSIM (msops.nn.image)
against numpy references written here: SSIM by a direct Gaussian-window loop (MindSpore's
window: offsets -size//2 + 1 .. size//2, sigma filter_sigma, 'valid' positions), MSSSIM
by 2x2 mean pooling between scales; eagerly and compiled; gradients by finite
differences; errors in MindSpore's form."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences

RNG = np.random.default_rng(2024)
IMG1 = RNG.random((2, 3, 24, 20)).astype(np.float32)
IMG2 = np.clip(IMG1 + 0.15 * RNG.standard_normal(IMG1.shape), 0, 1).astype(np.float32)


def both(make, *xs):
    """make()(*xs) eagerly and compiled, checked equal; the eager result as numpy."""
    eager = make()(*[Tensor(x) for x in xs])
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = make()(*[Tensor(x) for x in xs])
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    eager = eager if isinstance(eager, tuple) else (eager,)
    compiled = compiled if isinstance(compiled, tuple) else (compiled,)
    for e, c in zip(eager, compiled):
        np.testing.assert_allclose(c.asnumpy(), e.asnumpy(), rtol=1e-6, atol=1e-7)
    out = [e.asnumpy() for e in eager]
    return out if len(out) > 1 else out[0]


def window(size, sigma):
    offsets = np.arange(-size // 2 + 1, size // 2 + 1, dtype=np.float64)
    g = np.exp(-(offsets[:, None] ** 2 + offsets[None, :] ** 2) / (2 * sigma ** 2))
    return g / g.sum()


def blur(x, win):
    """'valid' correlation of each (H, W) plane of x with win, by loops over offsets."""
    k = win.shape[0]
    h, w = x.shape[-2] - k + 1, x.shape[-1] - k + 1
    out = np.zeros(x.shape[:-2] + (h, w))
    for i in range(k):
        for j in range(k):
            out += win[i, j] * x[..., i:i + h, j:j + w]
    return out


def np_ssim_cs(a, b, max_val=1.0, size=11, sigma=1.5, k1=0.01, k2=0.03):
    win = window(size, sigma)
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    mu1, mu2 = blur(a, win), blur(b, win)
    s11 = blur(a * a, win) - mu1 ** 2
    s22 = blur(b * b, win) - mu2 ** 2
    s12 = blur(a * b, win) - mu1 * mu2
    cs = (2 * s12 + c2) / (s11 + s22 + c2)
    ssim = (2 * mu1 * mu2 + c1) / (mu1 ** 2 + mu2 ** 2 + c1) * cs
    return ssim.mean(axis=(-2, -1)), cs.mean(axis=(-2, -1))


def np_msssim(a, b, powers, **kw):
    a, b = a.astype(np.float64), b.astype(np.float64)
    terms = []
    for i, p in enumerate(powers):
        ssim, cs = np_ssim_cs(a, b, **kw)
        last = i == len(powers) - 1
        terms.append(np.maximum(ssim if last else cs, 0) ** p)
        h, w = a.shape[-2] // 2 * 2, a.shape[-1] // 2 * 2

        def pool(x):
            x = x[..., :h, :w]
            return (x[..., 0::2, 0::2] + x[..., 1::2, 0::2] + x[..., 0::2, 1::2] +
                    x[..., 1::2, 1::2]) / 4
        a, b = pool(a), pool(b)
    return np.prod(terms, axis=0).mean(-1)


def test_central_crop_matches_mindspores_box():
    for frac in (0.5, 0.7, 1.0, 0.05):
        h, w = 24, 20
        top, left = int((h - h * frac) / 2), int((w - w * frac) / 2)
        want = IMG1[..., top:h - top, left:w - left]
        np.testing.assert_array_equal(both(lambda: nn.CentralCrop(frac), IMG1), want)
        np.testing.assert_array_equal(nn.CentralCrop(frac)(Tensor(IMG1[0])).asnumpy(),
                                      want[0])


def test_image_gradients_are_forward_differences_zero_at_the_end():
    dy, dx = both(nn.ImageGradients, IMG1)
    want_dy = np.zeros_like(IMG1)
    want_dy[:, :, :-1] = IMG1[:, :, 1:] - IMG1[:, :, :-1]
    want_dx = np.zeros_like(IMG1)
    want_dx[..., :-1] = IMG1[..., 1:] - IMG1[..., :-1]
    np.testing.assert_allclose(dy, want_dy, rtol=1e-6)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-6)
    single = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4)
    dy, dx = nn.ImageGradients()(Tensor(single))
    np.testing.assert_array_equal(dy.asnumpy(), np.zeros_like(single))
    np.testing.assert_array_equal(dx.asnumpy(), [[[[1, 1, 1, 0]]]])


def test_psnr_matches_numpy():
    mse = ((IMG1.astype(np.float64) - IMG2) ** 2).mean(axis=(1, 2, 3))
    np.testing.assert_allclose(both(nn.PSNR, IMG1, IMG2), 10 * np.log10(1 / mse), rtol=1e-5)
    u1, u2 = (IMG1 * 255).astype(np.uint8), (IMG2 * 255).astype(np.uint8)
    mse = ((u1.astype(np.float64) - u2) ** 2).mean(axis=(1, 2, 3))
    out = nn.PSNR(255)(Tensor(u1), Tensor(u2))
    assert out.dtype == ms.float32
    np.testing.assert_allclose(out.asnumpy(), 10 * np.log10(255 ** 2 / mse), rtol=1e-5)


@pytest.mark.parametrize("kw", [{}, dict(filter_size=7, filter_sigma=1.0),
                                dict(max_val=2.0, filter_size=4, k1=0.02, k2=0.05)])
def test_ssim_matches_the_direct_gaussian_window(kw):
    ref = {"size": kw.get("filter_size", 11), "sigma": kw.get("filter_sigma", 1.5),
           **{k: v for k, v in kw.items() if k in ("max_val", "k1", "k2")}}
    ssim, _ = np_ssim_cs(IMG1.astype(np.float64), IMG2.astype(np.float64), **ref)
    np.testing.assert_allclose(both(lambda: nn.SSIM(**kw), IMG1, IMG2), ssim.mean(-1),
                               rtol=1e-5)
    same = nn.SSIM(**kw)(Tensor(IMG1), Tensor(IMG1)).asnumpy()
    np.testing.assert_allclose(same, 1.0, rtol=1e-5)


@pytest.mark.parametrize("kw", [dict(filter_size=3),
                                dict(power_factors=(0.5, 0.3, 0.2), filter_size=5,
                                     filter_sigma=1.2)])
def test_msssim_matches_the_multi_scale_reference(kw):
    powers = kw.get("power_factors", (0.0448, 0.2856, 0.3001, 0.2363, 0.1333))
    a = RNG.random((2, 2, 48, 50)).astype(np.float32)
    b = np.clip(a + 0.1 * RNG.standard_normal(a.shape), 0, 1).astype(np.float32)
    want = np_msssim(a, b, powers, size=kw["filter_size"],
                     sigma=kw.get("filter_sigma", 1.5))
    np.testing.assert_allclose(both(lambda: nn.MSSSIM(**kw), a, b), want, rtol=1e-5)
    u1, u2 = (a * 255).astype(np.uint8), (b * 255).astype(np.uint8)
    want = np_msssim(u1 / 255.0, u2 / 255.0, powers, size=kw["filter_size"],
                     sigma=kw.get("filter_sigma", 1.5))
    np.testing.assert_allclose(nn.MSSSIM(255, **kw)(Tensor(u1), Tensor(u2)).asnumpy(), want,
                               rtol=1e-5)


def test_msssim_defaults_on_a_large_image():
    a = RNG.random((1, 1, 180, 176))
    b = np.clip(a + 0.1 * RNG.standard_normal(a.shape), 0, 1)
    want = np_msssim(a, b, (0.0448, 0.2856, 0.3001, 0.2363, 0.1333))
    np.testing.assert_allclose(nn.MSSSIM()(Tensor(a), Tensor(b)).asnumpy(), want, rtol=1e-9)


def test_similarity_gradients_match_finite_differences():
    a = RNG.random((1, 2, 12, 12))
    b = np.clip(a + 0.2 * RNG.standard_normal(a.shape), 0, 1)
    layer = nn.MSSSIM(power_factors=(0.6, 0.4), filter_size=3)
    grad = ms.grad(lambda x: ops.ReduceSum()(layer(x, Tensor(b)), ()))(Tensor(a)).asnumpy()
    want = finite_differences(lambda x: layer(Tensor(x), Tensor(b)).asnumpy(), a)
    np.testing.assert_allclose(grad, want, rtol=1e-5, atol=1e-8)
    # PSNR in float32: a coarser step
    p1 = RNG.random((1, 1, 4, 4)).astype(np.float32)
    p2 = RNG.random((1, 1, 4, 4)).astype(np.float32)
    grad = ms.grad(lambda x: ops.ReduceSum()(nn.PSNR()(x, Tensor(p2)), ()))(Tensor(p1))
    mse = lambda x: ((x - p2) ** 2).mean()   # noqa: E731
    want = -10 / np.log(10) * 2 * (p1 - p2) / p1.size / mse(p1)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-4)


ERRORS = [
    (lambda: nn.CentralCrop(0.0), ValueError,
     r"For 'CentralCrop', the 'central_fraction' should be in \(0.0, 1.0\]"),
    (lambda: nn.CentralCrop(1), TypeError, r"For 'CentralCrop', the type of 'central_fraction'"),
    (lambda: nn.CentralCrop(0.5)(Tensor(IMG1[0, 0])), ValueError,
     r"For 'CentralCrop', the 'image' should be 3-D or 4-D"),
    (lambda: nn.PSNR(0)(Tensor(IMG1), Tensor(IMG2)), ValueError,
     r"For 'PSNR', the 'max_val' should be a finite number > 0"),
    (lambda: nn.PSNR()(Tensor(IMG1), Tensor(IMG2[:1])), TypeError,
     r"For 'PSNR', the 'img2' should have the dtype and shape of 'img1'"),
    (lambda: nn.SSIM()(Tensor(IMG1.astype(np.float64)), Tensor(IMG2.astype(np.float64))),
     TypeError, r"For 'SSIM', the 'img1'"),
    (lambda: nn.SSIM(filter_size=21)(Tensor(IMG1), Tensor(IMG2)), ValueError,
     r"For 'SSIM', the height and width of the images should be >= filter_size 21"),
    (lambda: nn.MSSSIM()(Tensor(IMG1), Tensor(IMG2)), ValueError,
     r"For 'MSSSIM', the height and width of the images should be >= filter_size 11 at every"),
    (lambda: nn.MSSSIM(power_factors=()), ValueError,
     r"For 'MSSSIM', the 'power_factors' should be a non-empty"),
    (lambda: nn.SSIM(filter_sigma=0.0), ValueError, r"For 'SSIM', the 'filter_sigma'"),
    (lambda: nn.SSIM(k1=1), TypeError, r"For 'SSIM', the type of 'k1'"),
    (lambda: nn.ImageGradients()(Tensor(IMG1[0])), ValueError,
     r"For 'ImageGradients', the 'images' should be 4-D"),
]


@pytest.mark.parametrize("call,exc,msg", ERRORS)
def test_errors_name_the_layer_and_argument(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()
