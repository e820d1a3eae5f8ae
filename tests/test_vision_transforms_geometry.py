"""msops.dataset.vision geometric transforms against independent references: PIL's
Image.rotate / Image.transform called directly (MindSpore's rotations and affine maps
are PIL's), slicing written here for the crops, np.pad for PadToSize; random ones:
seeded determinism and the drawn angle recovered within its bounds."""
import math

import numpy as np
import pytest
from PIL import Image

import msops as ms
from msops import dataset as ds
from msops.dataset import vision
from msops.dataset.vision import Border, Inter


def rgb(h=9, w=12, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3)).astype(np.uint8)


def smooth_image(h=24, w=30):
    """A smooth image: bilinear sampling agrees with PIL's up to rounding away from edges."""
    yy, xx = np.mgrid[0:h, 0:w]
    return np.stack([xx * 255 // (w - 1), yy * 255 // (h - 1), (xx + yy) * 4 % 256],
                    -1).astype(np.uint8)


PIL_RESAMPLE = {Inter.NEAREST: Image.NEAREST, Inter.BILINEAR: Image.BILINEAR}


@pytest.mark.parametrize("angle", [0.0, 17.0, -33.5, 90.0, 180.0, 245.0])
@pytest.mark.parametrize("expand", [False, True])
def test_rotate_nearest_matches_pil(angle, expand):
    x = rgb()
    got = vision.Rotate(angle, Inter.NEAREST, expand, None, (10, 20, 30))(x)
    want = np.asarray(Image.fromarray(x).rotate(angle, Image.NEAREST, expand,
                                                fillcolor=(10, 20, 30)))
    assert got.shape == want.shape
    # pixel centres falling exactly on an input pixel edge may round either way
    assert np.mean(np.any(got != want, -1)) < 0.02


def test_rotate_center_and_bilinear():
    x = smooth_image()
    got = vision.Rotate(25.0, Inter.BILINEAR, center=(5, 7))(x).astype(int)
    want = np.asarray(Image.fromarray(x).rotate(25.0, Image.BILINEAR, center=(5, 7))).astype(int)
    assert got.shape == want.shape
    inner = (slice(3, -3), slice(3, -3))
    # interior pixels: PIL's bilinear sampling, up to one level of rounding
    covered = (want[inner] != 0).all(-1) & (got[inner] != 0).all(-1)
    assert covered.mean() > 0.3
    assert np.abs(got[inner] - want[inner])[covered].max() <= 1
    gray = x[..., 0].astype(np.float32)
    out = vision.Rotate(90.0, expand=True)(gray)       # float (H, W): a quarter turn exactly
    np.testing.assert_array_equal(out, np.rot90(gray))


def test_random_rotation_angle_within_bounds_and_seeded():
    x = np.zeros((41, 41), np.uint8)
    x[20, 20:40] = 255                                  # a ray from the centre to the right

    def angle_of(img):
        ys, xs = np.nonzero(img > 0)
        far = np.argmax((xs - 20.5) ** 2 + (ys - 20.5) ** 2)
        return math.degrees(math.atan2(-(ys[far] - 20.5), xs[far] - 20.5))

    ms.set_seed(5)
    op = vision.RandomRotation((10, 40))
    outs = [op(x) for _ in range(25)]
    angles = [angle_of(o) for o in outs]
    assert all(7 <= a <= 43 for a in angles)            # within bounds (pixel quantization)
    assert max(angles) - min(angles) > 15
    ms.set_seed(5)
    again = vision.RandomRotation((10, 40))
    assert all(np.array_equal(o, again(x)) for o in outs)
    sym = vision.RandomRotation(30)
    assert sym.degrees == (-30.0, 30.0)
    signs = {np.sign(angle_of(sym(x))) for _ in range(30)}
    assert signs >= {-1.0, 1.0}


def pil_affine(x, angle, translate, scale, shear, resample, fill):
    """PIL's Image.transform with the inverse of C(t) R S SHy SHx C^-1 composed here."""
    h, w = x.shape[:2]
    cx, cy = w / 2, h / 2
    a, sx, sy = (math.radians(v) for v in (angle, shear[0], shear[1]))
    t = lambda dx, dy: np.array([[1, 0, dx], [0, 1, dy], [0, 0, 1.0]])
    rot = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    shx = np.array([[1, -math.tan(sx), 0], [0, 1, 0], [0, 0, 1]])
    shy = np.array([[1, 0, 0], [-math.tan(sy), 1, 0], [0, 0, 1]])
    m = t(cx + translate[0], cy + translate[1]) @ rot @ np.diag([scale, scale, 1]) @ shy @ shx \
        @ t(-cx, -cy)
    inv = np.linalg.inv(m)
    return np.asarray(Image.fromarray(x).transform((w, h), Image.AFFINE, tuple(inv[:2].ravel()),
                                                   resample, fillcolor=fill))


def test_random_affine_matches_pil_for_its_draw():
    x = rgb(20, 26, seed=2)
    ms.set_seed(9)
    op = vision.RandomAffine(20, translate=(-0.1, 0.1, -0.2, 0.2), scale=(0.8, 1.2),
                             shear=(-10, 10, -5, 5), fill_value=(1, 2, 3))
    ms.set_seed(9)
    probe = vision.RandomAffine(20, translate=(-0.1, 0.1, -0.2, 0.2), scale=(0.8, 1.2),
                                shear=(-10, 10, -5, 5), fill_value=(1, 2, 3))
    for _ in range(6):
        angle, (tx, ty), scale, shear = probe.draw(20, 26)
        assert -20 <= angle <= 20 and abs(tx) <= 2.6 and abs(ty) <= 4 and 0.8 <= scale <= 1.2
        assert -10 <= shear[0] <= 10 and -5 <= shear[1] <= 5 and tx == round(tx)
        got = op(x)
        want = pil_affine(x, angle, (tx, ty), scale, shear, Image.NEAREST, (1, 2, 3))
        assert np.mean(np.any(got != want, -1)) < 0.02
    ident = vision.RandomAffine(0)(x)
    np.testing.assert_array_equal(ident, x)


def test_fixed_crops_flips_and_pad_to_size():
    x = rgb(10, 12)
    np.testing.assert_array_equal(vision.Crop((2, 3), (4, 5))(x), x[2:6, 3:8])
    np.testing.assert_array_equal(vision.Crop((0, 0), 3)(x), x[:3, :3])
    rc = vision.ResizedCrop(1, 2, 6, 8, (3, 4), Inter.NEAREST)(x)
    np.testing.assert_array_equal(rc, x[1:7, 2:10][::2, ::2])
    five = vision.FiveCrop((4, 6))(x)
    want = [x[:4, :6], x[:4, 6:], x[6:, :6], x[6:, 6:], x[3:7, 3:9]]
    assert len(five) == 5 and all(np.array_equal(a, b) for a, b in zip(five, want))
    ten = vision.TenCrop(4, use_vertical_flip=True)(x)
    flipped = x[::-1]
    assert len(ten) == 10
    np.testing.assert_array_equal(ten[5], flipped[:4, :4])
    np.testing.assert_array_equal(ten[9], flipped[3:7, 4:8])
    np.testing.assert_array_equal(vision.TenCrop(4)(x)[6], x[:, ::-1][:4, -4:])
    np.testing.assert_array_equal(vision.HorizontalFlip()(x), x[:, ::-1])
    np.testing.assert_array_equal(vision.VerticalFlip()(x), x[::-1])
    p = vision.PadToSize((13, 15), fill_value=7)(x)
    np.testing.assert_array_equal(p, np.pad(x, ((1, 2), (1, 2), (0, 0)), constant_values=7))
    p = vision.PadToSize(16, offset=(0, 3), padding_mode=Border.EDGE)(x)
    np.testing.assert_array_equal(p, np.pad(x, ((0, 6), (3, 1), (0, 0)), mode="edge"))


def test_crops_in_pipeline():
    data = np.stack([rgb(10, 12, seed=k) for k in range(3)])
    d = ds.NumpySlicesDataset(data, ["image"], shuffle=False)
    d = d.map(vision.FiveCrop(4), "image", ["tl", "tr", "bl", "br", "c"])
    rows = list(d.create_tuple_iterator(output_numpy=True))
    assert len(rows) == 3 and len(rows[0]) == 5
    np.testing.assert_array_equal(rows[1][4], data[1][3:7, 4:8])
    ms.set_seed(2)
    r = ds.NumpySlicesDataset(data, ["image"], shuffle=False).map(
        [vision.RandomRotation(15, fill_value=0), vision.RandomAffine(5, scale=(0.9, 1.1))],
        "image").batch(3)
    (batch,) = next(r.create_tuple_iterator(output_numpy=True))
    assert batch.shape == (3, 10, 12, 3) and batch.dtype == np.uint8


def test_geometry_errors():
    with pytest.raises(ValueError, match="For 'RandomRotation', the 'degrees' should be "
                                         "non-negative when a single number, but got -3"):
        vision.RandomRotation(-3)
    with pytest.raises(TypeError, match="For 'RandomRotation', the 'degrees' should be a "
                                        "non-negative number or a sequence"):
        vision.RandomRotation("x")
    with pytest.raises(NotImplementedError, match="For 'Rotate'"):
        vision.Rotate(10, Inter.AREA)
    with pytest.raises(ValueError, match=r"For 'RandomAffine', the 'translate' should be \(min, "
                                         r"max\) pairs within \[-1.0, 1.0\]"):
        vision.RandomAffine(0, translate=(0, 2))
    with pytest.raises(ValueError, match="For 'Crop', the crop"):
        vision.Crop((8, 0), 4)(rgb(10, 12))
    with pytest.raises(ValueError, match="For 'FiveCrop', the crop 'size'"):
        vision.FiveCrop(20)(rgb(10, 12))
    with pytest.raises(ValueError, match="For 'Rotate', a 'fill_value' of 3 values needs a "
                                         "3-channel image"):
        vision.Rotate(10, fill_value=(1, 2, 3))(np.zeros((4, 4), np.uint8))
    with pytest.raises(ValueError, match="For 'PadToSize', the 'size'"):
        vision.PadToSize(5)(rgb(10, 12))


def homography(src, dst):
    """The 8 PIL PERSPECTIVE coefficients mapping each dst point to its src point."""
    a = np.zeros((8, 8))
    b = np.zeros(8)
    for k, ((x, y), (u, v)) in enumerate(zip(dst, src)):
        a[2 * k] = [x, y, 1, 0, 0, 0, -u * x, -u * y]
        a[2 * k + 1] = [0, 0, 0, x, y, 1, -v * x, -v * y]
        b[2 * k], b[2 * k + 1] = u, v
    return tuple(np.linalg.solve(a, b))


@pytest.mark.parametrize("resample", [Inter.NEAREST, Inter.BILINEAR])
def test_perspective_matches_pil(resample):
    x = smooth_image(20, 24)
    start = [[0, 0], [23, 0], [23, 19], [0, 19]]
    end = [[2, 1], [21, 3], [22, 18], [1, 16]]
    got = vision.Perspective(start, end, resample)(x).astype(int)
    want = np.asarray(Image.fromarray(x).transform((24, 20), Image.PERSPECTIVE,
                                                   homography(start, end),
                                                   PIL_RESAMPLE[resample])).astype(int)
    inner = (slice(4, -4), slice(4, -4))
    bad = np.abs(got[inner] - want[inner]) > 1
    assert bad.any(-1).mean() < 0.02
    shifted = vision.Perspective(start, [[p[0] + 3, p[1]] for p in start], Inter.NEAREST)(x)
    np.testing.assert_array_equal(shifted[:, 3:], x[:, :-3])             # a pure translation
    assert (shifted[:, :3] == 0).all()
    with pytest.raises(ValueError, match="For 'Perspective', the 'start_points' and 'end_points' "
                                         "should each be four points in general position"):
        vision.Perspective([[0, 0], [1, 1], [2, 2], [3, 3]], start)


def test_bicubic_warps_match_pil():
    x = rgb(18, 22, seed=4)
    got = vision.Rotate(23.0, Inter.BICUBIC, fill_value=(9, 8, 7))(x)
    want = np.asarray(Image.fromarray(x).rotate(23.0, Image.BICUBIC, fillcolor=(9, 8, 7)))
    # PIL's a = -1 cubic convolution, truncated: equal but for coordinate ties at the edges
    assert np.mean(np.any(got != want, -1)) < 0.01
    bil = vision.Rotate(23.0, Inter.BILINEAR)(x)
    want = np.asarray(Image.fromarray(x).rotate(23.0, Image.BILINEAR))
    assert np.mean(np.any(bil != want, -1)) < 0.01


def test_random_perspective_corners_and_seed():
    x = smooth_image(20, 24)
    ms.set_seed(8)
    op = vision.RandomPerspective(0.4, prob=1.0)
    ms.set_seed(8)
    probe = vision.RandomPerspective(0.4, prob=1.0)
    for _ in range(5):
        probe._rng.random()                               # the prob draw
        start, end = probe.draw(20, 24)
        dx, dy = int(0.4 * 12), int(0.4 * 10)
        assert start == [[0, 0], [23, 0], [23, 19], [0, 19]]
        assert 0 <= end[0][0] <= dx and 0 <= end[0][1] <= dy
        assert 24 - dx - 1 <= end[1][0] <= 23 and 20 - dy - 1 <= end[2][1] <= 19
        got = op(x)
        want = np.asarray(Image.fromarray(x).transform((24, 20), Image.PERSPECTIVE,
                                                       homography(start, end), Image.BICUBIC))
        assert np.mean(np.abs(got.astype(int) - want.astype(int)).max(-1) > 1) < 0.02
    np.testing.assert_array_equal(vision.RandomPerspective(prob=0.0)(x), x)
    with pytest.raises(ValueError, match="For 'RandomPerspective', the 'distortion_scale' should "
                                         r"be in \[0.0, 1.0\], but got 1.5"):
        vision.RandomPerspective(1.5)
