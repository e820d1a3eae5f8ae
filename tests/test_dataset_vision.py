"""msops.dataset.vision against numpy written here (a loop-by-loop bilinear reference for
upscaling and downscaling): values, layouts (HWC, CHW, (H, W), (H, W, 1)), dtypes,
seeded randomness, errors."""
import numpy as np
import pytest

import msops as ms
from msops import dataset as ds
from msops.dataset import vision
from msops.dataset.vision import Border, Inter


def image(h=5, w=6, c=3, dtype=np.uint8, seed=0):
    rng = np.random.default_rng(seed)
    shape = (h, w) if c is None else (h, w, c)
    return rng.integers(0, 256, shape).astype(dtype)


def test_rescale_normalize():
    x = image()
    out = vision.Rescale(1 / 255, -0.5)(x)
    assert out.dtype == np.float32 and out.shape == x.shape
    np.testing.assert_allclose(out, x / 255 - 0.5, rtol=1e-6, atol=1e-6)
    mean, std = [10.0, 120.0, 200.0], [2.0, 50.0, 255.0]
    norm = vision.Normalize(mean, std)(x)
    assert norm.dtype == np.float32
    for c in range(3):
        np.testing.assert_allclose(norm[..., c], (x[..., c] - mean[c]) / std[c], rtol=1e-6)
    chw = vision.Normalize(mean, std, is_hwc=False)(x.transpose(2, 0, 1))
    np.testing.assert_allclose(chw, norm.transpose(2, 0, 1), rtol=1e-6)
    gray = image(c=None)
    np.testing.assert_allclose(vision.Normalize([0.1307], [0.3081])(gray),
                               (gray - 0.1307) / 0.3081, rtol=1e-5)
    one = vision.Normalize([3.0], [2.0])(image(c=1))
    assert one.shape == (5, 6, 1)


def test_layouts():
    x = image()
    chw = vision.HWC2CHW()(x)
    assert chw.shape == (3, 5, 6) and chw.dtype == np.uint8
    np.testing.assert_array_equal(chw[1], x[..., 1])
    gray = image(c=None)
    np.testing.assert_array_equal(vision.HWC2CHW()(gray), gray)         # (H, W) unchanged
    assert vision.HWC2CHW()(image(c=1)).shape == (1, 5, 6)
    t = vision.ToTensor()(x)
    assert t.shape == (3, 5, 6) and t.dtype == np.float32
    np.testing.assert_allclose(t, x.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    t16 = vision.ToTensor(ms.float16)(gray)
    assert t16.shape == (1, 5, 6) and t16.dtype == np.float16


def test_center_crop_and_pad():
    x = image(6, 7)
    crop = vision.CenterCrop((2, 3))(x)
    np.testing.assert_array_equal(crop, x[2:4, 2:5])
    np.testing.assert_array_equal(vision.CenterCrop(4)(x), x[1:5, 1:5])
    big = vision.CenterCrop((8, 7))(x)                   # smaller image: zero-padded around
    assert big.shape == (8, 7, 3) and (big[0] == 0).all() and (big[-1] == 0).all()
    np.testing.assert_array_equal(big[1:7], x)
    odd = vision.CenterCrop((9, 10))(x)                  # extra padding row/column: top/left
    assert (odd[:2] == 0).all() and (odd[-1:] == 0).all() and (odd[:, :2] == 0).all()
    np.testing.assert_array_equal(odd[2:8, 2:9], x)
    row = np.array([[1, 2, 3]], np.uint8)
    assert vision.Pad((2, 0))(row).tolist() == [[0, 0, 1, 2, 3, 0, 0]]
    assert vision.Pad((2, 0), padding_mode=Border.EDGE)(row).tolist() == [[1, 1, 1, 2, 3, 3, 3]]
    assert vision.Pad((2, 0), padding_mode=Border.REFLECT)(row).tolist() == \
        [[3, 2, 1, 2, 3, 2, 1]]
    assert vision.Pad((2, 0), padding_mode=Border.SYMMETRIC)(row).tolist() == \
        [[2, 1, 1, 2, 3, 3, 2]]
    p = vision.Pad([1, 2, 3, 4], fill_value=(7, 8, 9))(image(2, 2))    # left, top, right, bottom
    assert p.shape == (2 + 2 + 4, 2 + 1 + 3, 3) and p[0, 0].tolist() == [7, 8, 9]


def test_random_crop_and_flips_are_seeded():
    x = image(6, 6)
    ms.set_seed(1)
    crop = vision.RandomCrop(4)
    crops = [crop(x) for _ in range(20)]
    windows = {(i, j) for c in crops for i in range(3) for j in range(3)
               if np.array_equal(c, x[i:i + 4, j:j + 4])}
    assert all(c.shape == (4, 4, 3) for c in crops) and len(windows) > 3
    ms.set_seed(1)
    again = vision.RandomCrop(4)
    assert all(np.array_equal(a, again(x)) for a in crops)
    padded = vision.RandomCrop(6, padding=2)(x)
    assert padded.shape == (6, 6, 3)
    needed = vision.RandomCrop((8, 6), pad_if_needed=True, fill_value=255)(x)
    assert needed.shape == (8, 6, 3)
    flip = vision.RandomHorizontalFlip(0.5)
    flips = [flip(x) for _ in range(40)]
    assert all(np.array_equal(f, x) or np.array_equal(f, x[:, ::-1]) for f in flips)
    assert 5 < sum(np.array_equal(f, x[:, ::-1]) for f in flips) < 35
    np.testing.assert_array_equal(vision.RandomVerticalFlip(1.0)(x), x[::-1])
    np.testing.assert_array_equal(vision.RandomHorizontalFlip(0.0)(x), x)


def bilinear_reference(src, out_h, out_w):
    """Bilinear with pixel centres aligned, edge pixels repeated outside: explicit loops."""
    h, w = src.shape[:2]
    out = np.zeros((out_h, out_w) + src.shape[2:])
    for i in range(out_h):
        y = min(max((i + 0.5) * h / out_h - 0.5, 0.0), h - 1.0)
        y0 = int(np.floor(y))
        y1, wy = min(y0 + 1, h - 1), y - y0
        for j in range(out_w):
            x = min(max((j + 0.5) * w / out_w - 0.5, 0.0), w - 1.0)
            x0 = int(np.floor(x))
            x1, wx = min(x0 + 1, w - 1), x - x0
            out[i, j] = ((1 - wy) * ((1 - wx) * src[y0, x0] + wx * src[y0, x1]) +
                         wy * ((1 - wx) * src[y1, x0] + wx * src[y1, x1]))
    return out


@pytest.mark.parametrize("shape,size", [((4, 5), (7, 3)), ((6, 6, 3), (3, 4)),
                                        ((5, 3, 1), (5, 8)), ((9, 7), (2, 2)),
                                        ((4, 5), (9, 11))])
def test_resize_bilinear_against_loops(shape, size):
    src = np.random.default_rng(2).random(shape).astype(np.float32)
    out = vision.Resize(size)(src)
    assert out.dtype == np.float32 and out.shape == size + shape[2:]
    np.testing.assert_allclose(out, bilinear_reference(src.astype(np.float64), *size),
                               rtol=1e-5, atol=1e-6)
    as_uint8 = vision.Resize(size, Inter.BILINEAR)((src * 255).astype(np.uint8))
    assert as_uint8.dtype == np.uint8
    want = np.rint(bilinear_reference((src * 255).astype(np.uint8).astype(float), *size))
    np.testing.assert_array_equal(as_uint8, want)


def test_resize_nearest_and_shorter_side():
    src = np.arange(20, dtype=np.int32).reshape(4, 5)
    out = vision.Resize((2, 3), Inter.NEAREST)(src)
    rows = [int(np.floor(i * 4 / 2)) for i in range(2)]
    cols = [int(np.floor(j * 5 / 3)) for j in range(3)]
    np.testing.assert_array_equal(out, src[np.ix_(rows, cols)])
    assert vision.Resize(8)(image(4, 6)).shape == (8, 12, 3)             # shorter side -> 8
    assert vision.Resize(3)(image(7, 4, c=None)).shape == (5, 3)         # floor(7 * 3 / 4)
    with pytest.raises(NotImplementedError, match="Inter.LINEAR and Inter.NEAREST, but got "
                                                  "Inter.CUBIC"):
        vision.Resize(4, Inter.CUBIC)


def test_tutorial_pipeline_in_map():
    x = np.stack([image(8, 8, seed=k) for k in range(4)])
    d = ds.NumpySlicesDataset((x, np.arange(4)), ["image", "label"], shuffle=False)
    d = d.map([vision.RandomCrop(6, padding=1), vision.RandomHorizontalFlip(),
               vision.Rescale(1 / 255, 0), vision.Normalize([0.4] * 3, [0.2] * 3),
               vision.HWC2CHW()], "image").batch(2)
    images, labels = next(d.create_tuple_iterator(output_numpy=True))
    assert images.shape == (2, 3, 6, 6) and images.dtype == np.float32


@pytest.mark.parametrize("make,err,match", [
    (lambda: vision.Normalize([300.0], [1.0]), ValueError, "every 'mean' value should be in "
                                                           "\\[0.0, 255.0\\], but got 300.0"),
    (lambda: vision.Normalize([1.0], [0.0]), ValueError, "'std' value should be in \\(0.0"),
    (lambda: vision.Normalize(1.0, [1.0]), TypeError, "'mean' should be a non-empty list"),
    (lambda: vision.Normalize([1.0, 2.0], [1.0, 2.0])(image()), ValueError,
     "should have 1 or 3 values"),
    (lambda: vision.HWC2CHW()(np.ones((2, 2, 2, 2))), ValueError, "For 'HWC2CHW', the input "
                                                                  "should be a numeric image"),
    (lambda: vision.CenterCrop(0), ValueError, "For 'CenterCrop', the 'size' should be a "
                                               "positive int"),
    (lambda: vision.RandomCrop(9)(image()), ValueError, "should fit in the \\(padded\\) image"),
    (lambda: vision.Pad(-1), ValueError, "'padding' should be a non-negative int"),
    (lambda: vision.Pad(1, fill_value=(1, 2, 3))(image(c=None)), ValueError,
     "three values needs a 3-channel image"),
    (lambda: vision.Pad(1, padding_mode="edge"), TypeError, "'padding_mode' should be a Border"),
    (lambda: vision.RandomHorizontalFlip(1.5), ValueError, "'prob' should be in \\[0.0, 1.0\\]"),
    (lambda: vision.Resize(4, "linear"), TypeError, "'interpolation' should be an Inter"),
    (lambda: vision.Rescale("a", 0), TypeError, "the type of 'rescale'"),
])
def test_errors(make, err, match):
    with pytest.raises(err, match=match):
        make()
