"""msops.dataset.vision colour transforms against references written here: numpy formulas
(OpenCV's arithmetic, colorsys for hue), and Pillow's ImageEnhance / ImageOps called
directly where MindSpore defines the operation as PIL's. Random colour transforms:
seeded determinism, drawn parameters within their ranges, and errors."""
import colorsys

import numpy as np
import pytest
from PIL import Image, ImageEnhance, ImageOps

import msops as ms
from msops import dataset as ds
from msops.dataset import vision


def rgb(h=7, w=9, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3)).astype(np.uint8)


def cv_gray(x):
    x = x.astype(np.float64)
    return 0.299 * x[..., 0] + 0.587 * x[..., 1] + 0.114 * x[..., 2]


def rounded(v):
    return np.clip(np.rint(v), 0, 255)


@pytest.mark.parametrize("f", [0.0, 0.4, 1.0, 1.7])
def test_brightness_contrast_saturation(f):
    x = rgb()
    xf = x.astype(np.float64)
    np.testing.assert_array_equal(vision.AdjustBrightness(f)(x), rounded(xf * f))
    mean = np.rint(np.rint(cv_gray(x)).mean())
    got = vision.AdjustContrast(f)(x).astype(int)
    want = rounded(mean * (1 - f) + xf * f)
    assert np.abs(got - want).max() <= 1                  # OpenCV's fixed-point grey
    sat = vision.AdjustSaturation(f)(x).astype(int)
    assert np.abs(sat - rounded(np.rint(cv_gray(x))[..., None] * (1 - f) + xf * f)).max() <= 1
    # PIL's ImageEnhance blends the same degenerate images (truncating): within 1 level
    pil = Image.fromarray(x)
    for ours, enhancer in ((vision.AdjustBrightness(f)(x), ImageEnhance.Brightness),
                           (got, ImageEnhance.Contrast), (sat, ImageEnhance.Color)):
        theirs = np.asarray(enhancer(pil).enhance(f)).astype(int)
        assert np.abs(ours.astype(int) - theirs).max() <= 1
    fl = x.astype(np.float32) / 255
    np.testing.assert_allclose(vision.AdjustBrightness(f)(fl), fl * f, rtol=1e-6)
    np.testing.assert_allclose(vision.AdjustSaturation(f)(fl),
                               cv_gray(fl)[..., None] * (1 - f) + fl * f, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("hue", [-0.5, -0.2, 0.0, 0.13, 0.5])
def test_adjust_hue_against_colorsys(hue):
    x = rgb(5, 6, seed=1)
    want = np.empty(x.shape)
    for i in range(5):
        for j in range(6):
            h, s, v = colorsys.rgb_to_hsv(*(x[i, j] / 255.0))
            want[i, j] = colorsys.hsv_to_rgb((h + hue) % 1.0, s, v)
    got = vision.AdjustHue(hue)(x).astype(int)
    assert np.abs(got - np.rint(want * 255)).max() <= 1
    if hue in (0.0,):
        np.testing.assert_array_equal(got, x)


def test_adjust_gamma_and_sharpness():
    x = rgb()
    np.testing.assert_array_equal(vision.AdjustGamma(2.2, 0.9)(x),
                                  rounded(255 * 0.9 * (x / 255.0) ** 2.2))
    fl = x.astype(np.float32) / 255
    np.testing.assert_allclose(vision.AdjustGamma(0.5)(fl), fl ** 0.5, rtol=1e-6)
    for f in (0.0, 0.5, 1.0, 2.0):
        got = vision.AdjustSharpness(f)(x).astype(int)
        smooth = x.astype(np.float64).copy()
        for i in range(1, x.shape[0] - 1):
            for j in range(1, x.shape[1] - 1):
                win = x[i - 1:i + 2, j - 1:j + 2].astype(np.float64)
                smooth[i, j] = np.rint((win.sum((0, 1)) + 4 * win[1, 1]) / 13)
        np.testing.assert_array_equal(got, rounded(smooth * (1 - f) + x * f))
        pil = np.asarray(ImageEnhance.Sharpness(Image.fromarray(x)).enhance(f)).astype(int)
        assert np.abs(got - pil).max() <= 1


def test_pil_defined_ops_match_imageops():
    x = rgb(12, 10, seed=3)
    pil = Image.fromarray(x)
    np.testing.assert_array_equal(vision.Invert()(x), np.asarray(ImageOps.invert(pil)))
    for bits in (1, 3, 8):
        np.testing.assert_array_equal(vision.Posterize(bits)(x),
                                      np.asarray(ImageOps.posterize(pil, bits)))
    np.testing.assert_array_equal(vision.Posterize(0)(x), np.zeros_like(x))
    np.testing.assert_array_equal(vision.Solarize(100)(x),
                                  np.asarray(ImageOps.solarize(pil, 100)))
    lo_hi = vision.Solarize((50, 120))(x)
    np.testing.assert_array_equal(lo_hi, np.where((x >= 50) & (x <= 120), 255 - x, x))
    for cutoff, ignore in ((0.0, None), (5.0, None), (12.5, 7), (2.0, [0, 255])):
        np.testing.assert_array_equal(vision.AutoContrast(cutoff, ignore)(x),
                                      np.asarray(ImageOps.autocontrast(pil, cutoff, ignore)))
    low = (x // 4 + 60).astype(np.uint8)                 # a narrow range is stretched
    np.testing.assert_array_equal(vision.AutoContrast()(low),
                                  np.asarray(ImageOps.autocontrast(Image.fromarray(low))))
    g = x[..., 0]
    np.testing.assert_array_equal(vision.AutoContrast(3.0)(g),
                                  np.asarray(ImageOps.autocontrast(Image.fromarray(g), 3.0)))
    np.testing.assert_array_equal(vision.Grayscale()(x)[..., 0], np.asarray(pil.convert("L")))
    three = vision.Grayscale(3)(x)
    assert three.shape == x.shape and (three == three[..., :1]).all()


def test_equalize_against_histogram_loop():
    x = rgb(16, 12, seed=4) // 3 + 40
    got = vision.Equalize()(x)
    for c in range(3):
        hist = np.bincount(x[..., c].ravel(), minlength=256)
        first = next(i for i in range(256) if hist[i])
        total, acc, lut = x[..., c].size, 0, np.zeros(256)
        scale = 255.0 / (total - hist[first])
        for i in range(first + 1, 256):
            acc += hist[i]
            lut[i] = np.clip(np.rint(acc * scale), 0, 255)
        np.testing.assert_array_equal(got[..., c], lut[x[..., c]])
    assert got.max() == 255 and got.min() == 0
    flat = np.full((4, 4), 9, np.uint8)
    np.testing.assert_array_equal(vision.Equalize()(flat), flat)


def test_random_color_adjust_draws_within_ranges():
    x = rgb(6, 6, seed=5)
    ms.set_seed(3)
    op = vision.RandomColorAdjust(brightness=(0.5, 0.8))
    outs = [op(x) for _ in range(30)]
    # brightness alone: each output is x * b for one b in [0.5, 0.8]
    mask = x > 60
    ratios = [np.median(o[mask] / x[mask].astype(float)) for o in outs]
    assert all(0.49 <= r <= 0.81 for r in ratios)
    assert np.std(ratios) > 0.03
    ms.set_seed(3)
    again = vision.RandomColorAdjust(brightness=(0.5, 0.8))
    assert all(np.array_equal(o, again(x)) for o in outs)
    ms.set_seed(4)
    other = vision.RandomColorAdjust(brightness=(0.5, 0.8))
    assert not all(np.array_equal(o, other(x)) for o in outs)
    # brightness 0.4 means [0.6, 1.4]; identity ranges leave the image alone
    assert vision.RandomColorAdjust(0.4).brightness == (0.6, 1.4)
    np.testing.assert_array_equal(vision.RandomColorAdjust()(x), x)
    mixed = vision.RandomColorAdjust(0.3, 0.3, 0.3, 0.1)(x)
    assert mixed.shape == x.shape and mixed.dtype == np.uint8


def test_random_prob_ops():
    x = rgb(8, 8, seed=6)
    ms.set_seed(0)
    inv = vision.RandomInvert(0.5)
    outs = [inv(x) for _ in range(60)]
    flipped = sum(np.array_equal(o, 255 - x) for o in outs)
    assert all(np.array_equal(o, x) or np.array_equal(o, 255 - x) for o in outs)
    assert 15 < flipped < 45
    np.testing.assert_array_equal(vision.RandomEqualize(1.0)(x), vision.Equalize()(x))
    np.testing.assert_array_equal(vision.RandomAutoContrast(prob=0.0)(x), x)
    np.testing.assert_array_equal(vision.RandomAutoContrast(1.0, None, 1.0)(x),
                                  vision.AutoContrast(1.0)(x))
    np.testing.assert_array_equal(vision.RandomAdjustSharpness(2.0, 1.0)(x),
                                  vision.AdjustSharpness(2.0)(x))
    gray = vision.RandomGrayscale(1.0)(x)
    np.testing.assert_array_equal(gray, vision.Grayscale(3)(x))
    np.testing.assert_array_equal(vision.RandomGrayscale(1.0)(x[..., 0]), x[..., 0])


def test_random_posterize_solarize_sharpness_ranges():
    x = rgb(10, 10, seed=7)
    post = vision.RandomPosterize((2, 4))
    masked = {b: (x & ((0xFF << (8 - b)) & 0xFF)).tobytes() for b in range(1, 9)}
    seen = {post(x).tobytes() for _ in range(40)}
    assert seen == {masked[2], masked[3], masked[4]}          # every allowed bit count, no other
    sol = vision.RandomSolarize((30, 90))
    for _ in range(30):
        out = sol(x)
        inverted = out != x
        np.testing.assert_array_equal(out[inverted], 255 - x[inverted])
        if inverted.any():
            lo, hi = x[inverted].min(), x[inverted].max()
            assert 30 <= lo <= 90
            # the inverted values are exactly those in [lo, hi] (hi up to 255 when min == max)
            np.testing.assert_array_equal(inverted, (x >= lo) & (x <= hi))
            assert hi <= 90 or hi == x[x >= lo].max()
    sharp = vision.RandomSharpness((0.0, 0.0))(x)
    np.testing.assert_array_equal(sharp, vision.AdjustSharpness(0.0)(x))


def test_color_ops_in_pipeline():
    data = np.stack([rgb(8, 8, seed=k) for k in range(4)])
    ms.set_seed(11)
    d = ds.NumpySlicesDataset(data, ["image"], shuffle=False).map(
        [vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1), vision.AutoContrast(),
         vision.RandomSharpness()], "image")
    first = [r[0] for r in d.create_tuple_iterator(output_numpy=True)]
    ms.set_seed(11)
    d2 = ds.NumpySlicesDataset(data, ["image"], shuffle=False).map(
        [vision.RandomColorAdjust(0.4, 0.4, 0.4, 0.1), vision.AutoContrast(),
         vision.RandomSharpness()], "image")
    second = [r[0] for r in d2.create_tuple_iterator(output_numpy=True)]
    assert len(first) == 4 and all(np.array_equal(a, b) for a, b in zip(first, second))
    assert first[0].dtype == np.uint8 and first[0].shape == (8, 8, 3)


def test_color_errors():
    with pytest.raises(ValueError, match=r"For 'AdjustHue', the 'hue_factor' should be in "
                                         r"\[-0.5, 0.5\], but got 0.7"):
        vision.AdjustHue(0.7)
    with pytest.raises(ValueError, match="For 'AdjustBrightness', the 'brightness_factor' should "
                                         "be non-negative, but got -1"):
        vision.AdjustBrightness(-1)
    with pytest.raises(ValueError, match="For 'AdjustContrast', the input should be an RGB image"):
        vision.AdjustContrast(1.0)(np.zeros((4, 4), np.uint8))
    with pytest.raises(TypeError, match="For 'Equalize', the input should be a uint8 image, but "
                                        "got dtype float32"):
        vision.Equalize()(np.zeros((4, 4, 3), np.float32))
    with pytest.raises(ValueError, match="For 'Posterize', the 'bits'"):
        vision.Posterize(9)
    with pytest.raises(ValueError, match=r"For 'RandomPosterize', the 'bits' should satisfy 1 <= "
                                         r"min <= max <= 8, but got \(0, 3\)"):
        vision.RandomPosterize((0, 3))
    with pytest.raises(ValueError, match="For 'RandomColorAdjust', the 'hue' should be"):
        vision.RandomColorAdjust(hue=0.6)
    with pytest.raises(ValueError, match=r"For 'AutoContrast', the 'cutoff' should be in "
                                         r"\[0.0, 50.0\), but got 50.0"):
        vision.AutoContrast(50.0)
    with pytest.raises(ValueError, match="For 'Solarize', the 'threshold' should satisfy"):
        vision.Solarize((100, 20))
    with pytest.raises(ValueError, match="For 'RandomInvert', the 'prob' should be in"):
        vision.RandomInvert(1.5)
