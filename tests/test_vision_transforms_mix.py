"""msops.dataset.vision erasing, blurring and batch mixing against references written here:
an explicit-loop Gaussian convolution with reflected borders, slicing for Erase, and for
the random ones seeded determinism, the drawn boxes / mixing weights recovered from the
outputs within their documented ranges, and the transforms inside a pipeline."""
import math

import numpy as np
import pytest

import msops as ms
from msops import dataset as ds
from msops.dataset import transforms, vision
from msops.dataset.vision import ImageBatchFormat


def rgb(h=9, w=11, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3)).astype(np.uint8)


def reflect101(i, n):
    while i < 0 or i >= n:
        i = -i if i < 0 else 2 * (n - 1) - i
    return i


def blur_reference(x, kx, ky, sx, sy):
    gx = np.exp(-((np.arange(kx) - (kx - 1) / 2) ** 2) / (2 * sx * sx))
    gy = np.exp(-((np.arange(ky) - (ky - 1) / 2) ** 2) / (2 * sy * sy))
    k2 = np.outer(gy / gy.sum(), gx / gx.sum())
    h, w = x.shape[:2]
    out = np.zeros(x.shape)
    for i in range(h):
        for j in range(w):
            for a in range(ky):
                for b in range(kx):
                    out[i, j] += k2[a, b] * x[reflect101(i + a - ky // 2, h),
                                              reflect101(j + b - kx // 2, w)]
    return out


@pytest.mark.parametrize("ksize,sigma", [(3, None), ((5, 3), (1.5, 0.7)), (7, 2.0), (1, None)])
def test_gaussian_blur_against_loops(ksize, sigma):
    x = rgb(6, 8, seed=1)
    kx, ky = (ksize, ksize) if isinstance(ksize, int) else ksize
    if sigma is None:
        sx = sy = 0.3 * ((kx - 1) * 0.5 - 1) + 0.8
    else:
        sx, sy = (sigma, sigma) if isinstance(sigma, float) else sigma
    want = blur_reference(x.astype(np.float64), kx, ky, sx, sy)
    got = vision.GaussianBlur(ksize, sigma)(x)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, np.clip(np.rint(want), 0, 255))
    f = x[..., 0].astype(np.float32)
    np.testing.assert_allclose(vision.GaussianBlur(ksize, sigma)(f),
                               blur_reference(f.astype(np.float64), kx, ky, sx, sy), rtol=1e-5)


def test_erase():
    x = rgb()
    out = vision.Erase(2, 3, 4, 5, value=(1, 2, 3))(x)
    want = x.copy()
    want[2:6, 3:8] = [1, 2, 3]
    np.testing.assert_array_equal(out, want)
    assert not np.array_equal(x, out)                   # not in place by default
    y = x.copy()
    vision.Erase(0, 0, 2, 2, 9, inplace=True)(y)
    assert (y[:2, :2] == 9).all()
    np.testing.assert_array_equal(vision.Erase(7, 9, 10, 10)(x)[7:, 9:], 0)   # clipped at edges


def test_cutout_patches_are_squares_inside():
    x = np.full((12, 10, 3), 200, np.uint8)
    ms.set_seed(4)
    op = vision.CutOut(4, num_patches=1)
    outs = [op(x) for _ in range(20)]
    corners = set()
    for o in outs:
        ys, xs = np.nonzero((o == 0).all(-1))
        assert ys.size == 16 and ys.max() - ys.min() == 3 and xs.max() - xs.min() == 3
        corners.add((ys.min(), xs.min()))
    assert len(corners) > 5
    ms.set_seed(4)
    again = vision.CutOut(4, num_patches=1)
    assert all(np.array_equal(o, again(x)) for o in outs)
    chw = vision.CutOut(3, 2, is_hwc=False)(np.ones((3, 8, 8), np.float32))
    zeros = (chw == 0).all(0)
    assert 9 <= zeros.sum() <= 18 and ((chw == 0) == zeros).all()


def test_random_erasing_box_within_ranges():
    x = np.ones((3, 20, 30), np.float32)
    ms.set_seed(1)
    op = vision.RandomErasing(prob=1.0, scale=(0.05, 0.2), ratio=(0.5, 2.0), value=(0, 0, 0))
    for _ in range(20):
        out = op(x)
        ys, xs = np.nonzero((out == 0).all(0))
        h, w = ys.max() - ys.min() + 1, xs.max() - xs.min() + 1
        assert h * w == ys.size                          # one rectangle
        # w = round(sqrt(s * H * W * r)), h = round(w / r): the rounded box's bounds
        assert 0.05 * 600 * 0.5 <= h * w * 1.6 and h * w <= 0.2 * 600 * 1.6
        assert 0.5 / 1.6 <= w / h <= 2.0 * 1.6
    assert np.array_equal(vision.RandomErasing(prob=0.0)(x), x)
    noisy = vision.RandomErasing(prob=1.0, scale=(0.3, 0.3), ratio=(1, 1), value="random")(x)
    erased = noisy != 1
    assert erased.sum() > 100 and abs(noisy[erased].std() - 1.0) < 0.25    # N(0, 1) noise
    ms.set_seed(1)
    again = vision.RandomErasing(prob=1.0, scale=(0.05, 0.2), ratio=(0.5, 2.0), value=(0, 0, 0))
    ms.set_seed(1)
    first = vision.RandomErasing(prob=1.0, scale=(0.05, 0.2), ratio=(0.5, 2.0), value=(0, 0, 0))
    assert all(np.array_equal(first(x), again(x)) for _ in range(5))


def test_mixup_batch_mixes_with_one_weight():
    images = np.stack([np.full((4, 4, 3), 10.0 * k, np.float32) for k in range(6)])
    labels = np.eye(6, dtype=np.float32)
    ms.set_seed(2)
    op = vision.MixUpBatch(alpha=0.4)
    lams = []
    for _ in range(30):
        out, mixed = op(images, labels)
        assert out.dtype == np.float32 and mixed.dtype == np.float32
        # row i mixes label i with lam and one partner with 1 - lam: image value = 10 * label . k
        np.testing.assert_allclose(out[:, 0, 0, 0], mixed @ (10.0 * np.arange(6)), rtol=1e-5,
                                   atol=1e-4)
        np.testing.assert_allclose(mixed.sum(1), 1.0, rtol=1e-6)
        lams.append(max(mixed[0, 0], 1 - mixed[0, 0]) if mixed[0, 0] < 1 else 1.0)
    # Beta(0.4, 0.4) puts most of its mass near 0 and 1: the kept weight is mostly > 0.8
    assert np.mean(np.array(lams) > 0.8) > 0.4
    ms.set_seed(2)
    again = vision.MixUpBatch(alpha=0.4)
    ms.set_seed(2)
    first = vision.MixUpBatch(alpha=0.4)
    a, b = first(images, labels), again(images, labels)
    np.testing.assert_array_equal(a[0], b[0])


def test_cutmix_batch_labels_follow_pasted_area():
    n, h, w = 5, 8, 10
    images = np.stack([np.full((h, w, 3), k, np.uint8) for k in range(n)])
    labels = np.eye(n, dtype=np.float32)
    ms.set_seed(6)
    op = vision.CutMixBatch(ImageBatchFormat.NHWC, alpha=1.0, prob=1.0)
    for _ in range(10):
        out, mixed = op(images, labels)
        for i in range(n):
            own = np.mean(out[i, ..., 0] == i)
            # the label keeps the fraction of the image still its own (pasted from itself: 1)
            assert math.isclose(mixed[i, i], own, abs_tol=1e-6) or mixed[i, i] == 1.0
            np.testing.assert_allclose(mixed[i].sum(), 1.0, rtol=1e-6)
            others = set(np.unique(out[i, ..., 0])) - {i}
            assert len(others) <= 1
    chw, _ = vision.CutMixBatch(ImageBatchFormat.NCHW, prob=0.0)(images.transpose(0, 3, 1, 2),
                                                                 labels)
    np.testing.assert_array_equal(chw, images.transpose(0, 3, 1, 2))


def test_mix_in_pipeline():
    data = np.stack([rgb(6, 6, seed=k) for k in range(8)])
    ms.set_seed(3)
    d = ds.NumpySlicesDataset((data, np.arange(8, dtype=np.int32) % 4), ["image", "label"],
                              shuffle=False)
    d = d.map(transforms.OneHot(4), "label").batch(4)
    d = d.map(vision.CutMixBatch(ImageBatchFormat.NHWC, 1.0, 0.5), ["image", "label"])
    batches = list(d.create_tuple_iterator(output_numpy=True))
    assert len(batches) == 2 and batches[0][0].shape == (4, 6, 6, 3)
    assert batches[0][1].dtype == np.float32 and np.allclose(batches[0][1].sum(1), 1.0)


def test_mix_and_erase_errors():
    with pytest.raises(ValueError, match="For 'GaussianBlur', the 'kernel_size' should be a "
                                         "positive odd int"):
        vision.GaussianBlur(4)
    with pytest.raises(ValueError, match="For 'MixUpBatch', the 'alpha' should be greater than "
                                         "0, but got 0.0"):
        vision.MixUpBatch(0.0)
    with pytest.raises(TypeError, match="For 'CutMixBatch', the 'image_batch_format' should be "
                                        "an ImageBatchFormat"):
        vision.CutMixBatch("NHWC")
    with pytest.raises(ValueError, match="For 'MixUpBatch', the labels should be one-hot"):
        vision.MixUpBatch()(np.zeros((2, 4, 4, 3)), np.zeros(2))
    with pytest.raises(ValueError, match="For 'RandomErasing', the 'value' should be a number"):
        vision.RandomErasing(value="noise")
    with pytest.raises(ValueError, match="For 'RandomErasing', the input should be an image of "
                                         "shape <C, H, W>"):
        vision.RandomErasing()(np.zeros((4, 4)))
    with pytest.raises(ValueError, match="For 'Erase', the 'top' and 'left' should lie within"):
        vision.Erase(20, 0, 2, 2)(rgb())
