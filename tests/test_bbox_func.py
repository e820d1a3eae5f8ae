"""ops.bounding_box_encode / bounding_box_decode / check_valid against numpy formulas
written here (and MindSpore's documented examples), ops.crop_and_resize against a per-pixel
loop of TensorFlow's definition; eager and compiled; crop_and_resize's gradients (image and
boxes) against float64 finite differences; argument errors."""
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from compiled import compiled, eager_and_compiled
from numeric import finite_differences

RNG = np.random.default_rng(1234)


def boxes(n):
    xy = RNG.uniform(0, 50, (n, 2))
    wh = RNG.uniform(1, 30, (n, 2))
    return np.concatenate([xy, xy + wh], 1).astype(np.float32)


def encode_ref(a, g, means, stds):
    out = []
    for (ax1, ay1, ax2, ay2), (gx1, gy1, gx2, gy2) in zip(a.astype(np.float64), g):
        pw, ph, gw, gh = ax2 - ax1 + 1, ay2 - ay1 + 1, gx2 - gx1 + 1, gy2 - gy1 + 1
        d = [((gx1 + gx2) / 2 - (ax1 + ax2) / 2) / pw, ((gy1 + gy2) / 2 - (ay1 + ay2) / 2) / ph,
             math.log(gw / pw), math.log(gh / ph)]
        out.append([(v - m) / s for v, m, s in zip(d, means, stds)])
    return np.array(out)


def decode_ref(a, d, max_shape, means, stds, clip):
    out = []
    limit = abs(math.log(clip))
    for (ax1, ay1, ax2, ay2), delta in zip(a.astype(np.float64), d):
        dx, dy, dw, dh = [v * s + m for v, m, s in zip(delta, means, stds)]
        dw, dh = min(max(dw, -limit), limit), min(max(dh, -limit), limit)
        pw, ph = ax2 - ax1 + 1, ay2 - ay1 + 1
        gx, gy = (ax1 + ax2) / 2 + pw * dx, (ay1 + ay2) / 2 + ph * dy
        gw, gh = pw * math.exp(dw), ph * math.exp(dh)
        h, w = max_shape
        out.append([min(max(gx - gw / 2 + 0.5, 0), w - 1), min(max(gy - gh / 2 + 0.5, 0), h - 1),
                    min(max(gx + gw / 2 - 0.5, 0), w - 1), min(max(gy + gh / 2 - 0.5, 0), h - 1)])
    return np.array(out)


def test_encode_and_decode_match_formulas_and_round_trip():
    a, g = boxes(6), boxes(6)
    means, stds = (0.1, -0.2, 0.0, 0.3), (0.5, 0.5, 2.0, 1.5)
    want = encode_ref(a, g, means, stds)
    for got in eager_and_compiled(lambda x, y: ops.bounding_box_encode(x, y, means, stds), a, g):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)
    d = (RNG.uniform(-1, 1, (6, 4)) * [1, 1, 6, 6]).astype(np.float32)     # some dw clipped
    want = decode_ref(a, d, (60, 70), means, stds, 0.016)
    for got in eager_and_compiled(
            lambda x, y: ops.bounding_box_decode(x, y, (60, 70), means, stds, 0.016), a, d):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-4)
    # decoding the encoding gives the boxes back (when inside the image)
    big = (200, 200)
    back = ops.bounding_box_decode(Tensor(a), ops.bounding_box_encode(Tensor(a), Tensor(g)), big,
                                   wh_ratio_clip=1e-6)
    np.testing.assert_allclose(back.asnumpy(), g, rtol=1e-4, atol=1e-3)


def test_documented_examples():
    a = Tensor(np.array([[2, 2, 2, 3], [2, 2, 2, 3]], np.float32))
    g = Tensor(np.array([[1, 2, 1, 4], [1, 2, 1, 4]], np.float32))
    np.testing.assert_allclose(ops.bounding_box_encode(a, g).asnumpy(),
                               [[-1, 0.25, 0, 0.40551758]] * 2, atol=1e-3)
    a = Tensor(np.array([[4, 1, 2, 1], [2, 2, 2, 3]], np.float32))
    d = Tensor(np.array([[3, 1, 2, 2], [1, 2, 1, 4]], np.float32))
    np.testing.assert_allclose(ops.bounding_box_decode(a, d, (768, 1280)).asnumpy(),
                               [[4.1953125, 0., 0., 5.1953125], [2.140625, 0., 3.859375, 60.59375]],
                               rtol=1e-3, atol=1e-3)       # the documented values are float16
    valid = ops.check_valid(Tensor(np.linspace(0, 6, 12).reshape(3, 4).astype(np.float32)),
                            Tensor(np.array([2, 1, 3], np.float32)))
    np.testing.assert_array_equal(valid.asnumpy(), [True, False, False])


def test_check_valid_matches_numpy():
    b = RNG.uniform(-5, 40, (30, 4)).astype(np.float32)
    meta = np.array([20, 30, 1.2], np.float32)
    want = (b[:, 0] >= 0) & (b[:, 1] >= 0) & (b[:, 2] <= 30 * 1.2 - 1) & (b[:, 3] <= 20 * 1.2 - 1)
    for got in eager_and_compiled(ops.check_valid, b, meta):
        np.testing.assert_array_equal(got.asnumpy(), want)
        assert got.dtype == ms.bool_


def crop_ref(image, bxs, idx, size, method, extrapolation):
    """TensorFlow's CropAndResize, point by point."""
    _, h, w, c = image.shape
    ch, cw = size
    out = np.zeros((len(bxs), ch, cw, c))
    for b, ((y1, x1, y2, x2), i) in enumerate(zip(bxs, idx)):
        for r in range(ch):
            y = y1 * (h - 1) + r * (y2 - y1) * (h - 1) / (ch - 1) if ch > 1 \
                else 0.5 * (y1 + y2) * (h - 1)
            for q in range(cw):
                x = x1 * (w - 1) + q * (x2 - x1) * (w - 1) / (cw - 1) if cw > 1 \
                    else 0.5 * (x1 + x2) * (w - 1)
                if not (0 <= y <= h - 1 and 0 <= x <= w - 1):
                    out[b, r, q] = extrapolation
                    continue
                if method == "nearest":
                    ny, nx = (int(math.floor(abs(v) + 0.5)) for v in (y, x))
                    out[b, r, q] = image[i, ny, nx]
                    continue
                t, bt, l, rt = math.floor(y), math.ceil(y), math.floor(x), math.ceil(x)
                dy, dx = y - t, x - l
                top = image[i, t, l] + (image[i, t, rt] - image[i, t, l]) * dx
                bottom = image[i, bt, l] + (image[i, bt, rt] - image[i, bt, l]) * dx
                out[b, r, q] = top + (bottom - top) * dy
    return out


BXS = np.array([[0.1, 0.2, 0.9, 0.7], [-0.2, 0.0, 1.2, 0.5], [0.5, 0.5, 0.25, 0.0],
                [0.3, 0.1, 0.3, 1.0]], np.float32)
IDX = np.array([1, 0, 1, 0], np.int32)


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("size", [(4, 3), (1, 5), (3, 1)])
def test_crop_and_resize_matches_loop(method, size):
    image = RNG.standard_normal((2, 5, 6, 3)).astype(np.float32)
    want = crop_ref(image.astype(np.float64), BXS, IDX, size, method, -1.5)
    eager, compiled = eager_and_compiled(
        lambda i, b, k: ops.crop_and_resize(i, b, k, size, method, -1.5), image, BXS, IDX)
    for got in (eager, compiled):
        assert got.dtype == ms.float32 and got.shape == want.shape
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)
    ints = ops.crop_and_resize(Tensor((image * 10).astype(np.int32)), Tensor(BXS), Tensor(IDX),
                               size, method, -1.5)
    np.testing.assert_allclose(ints.asnumpy(), crop_ref((image * 10).astype(np.int32).astype(
        np.float64), BXS, IDX, size, method, -1.5), rtol=1e-5, atol=1e-4)


def test_crop_and_resize_gradients():
    image = RNG.standard_normal((2, 4, 5, 2))
    bxs = np.array([[0.12, 0.23, 0.81, 0.66], [0.35, 0.05, 0.62, 0.93]])
    idx = np.array([1, 0], np.int32)
    k = RNG.standard_normal((2, 3, 4, 2))

    def loss(i, b):
        return ops.sum(ops.crop_and_resize(ops.cast(i, ms.float32), b, Tensor(idx), (3, 4)) *
                       Tensor(k.astype(np.float32)))
    di, db = ms.grad(loss, grad_position=(0, 1))(Tensor(image.astype(np.float32)),
                                                 Tensor(bxs.astype(np.float32)))
    want_i = finite_differences(lambda i: crop_ref(i, bxs, idx, (3, 4), "bilinear", 0) * k,
                                image, eps=1e-4)
    want_b = finite_differences(lambda b: crop_ref(image, b, idx, (3, 4), "bilinear", 0) * k,
                                bxs, eps=1e-5)
    np.testing.assert_allclose(di.asnumpy(), want_i, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db.asnumpy(), want_b, rtol=1e-3, atol=1e-3)


def test_errors():
    b = Tensor(boxes(2))
    with pytest.raises(ValueError, match="For 'bounding_box_encode', the 'means' should be 4"):
        ops.bounding_box_encode(b, b, (0.0, 0.0))
    with pytest.raises(ValueError, match="the 'max_shape' should be 2 positive ints"):
        ops.bounding_box_decode(b, b, (10,))
    with pytest.raises(ValueError, match="For 'check_valid', the 'bboxes' should be \\(n, 4\\)"):
        ops.check_valid(Tensor(np.zeros((2, 3), np.float32)), Tensor(np.ones(3, np.float32)))
    img = Tensor(np.zeros((1, 3, 3, 1), np.float32))
    with pytest.raises(ValueError, match="For 'crop_and_resize', the 'method'"):
        ops.crop_and_resize(img, Tensor(BXS), Tensor(IDX * 0), (2, 2), "bicubic")
    with pytest.raises(TypeError, match="the 'box_indices'"):
        ops.crop_and_resize(img, Tensor(BXS), Tensor(IDX.astype(np.int64)), (2, 2))
