"""ops.interpolate / nn.Upsample against a per-element reference written from the coordinate
formulas (each output element sums its taps over all spatial dims at once), known values,
and finite differences; eager and compiled."""
import itertools
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences


@pytest.fixture(params=["eager", "jit"])
def run(request):
    ms.set_context(mode=ms.GRAPH_MODE)
    return (lambda fn, *a: fn(*a)) if request.param == "eager" else \
        (lambda fn, *a: ms.jit(fn)(*a))


def _cubic(t):
    a, t = -0.75, abs(t)
    if t <= 1:
        return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
    return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a if t < 2 else 0.0


def _taps(mode, j, old, new, scale, align):
    """[(old index, weight)] of output index j along one dim."""
    if mode == "area":
        lo, hi = math.floor(j * old / new), math.ceil((j + 1) * old / new)
        return [(i, 1.0 / (hi - lo)) for i in range(lo, hi)]
    s = scale if scale is not None else old / new
    if align:
        src = j * (old - 1) / (new - 1) if new > 1 else 0.0
    elif mode == "nearest":
        return [(min(int(math.floor(j * s)), old - 1), 1.0)]
    elif mode == "nearest-exact":
        return [(min(int(math.floor((j + 0.5) * s)), old - 1), 1.0)]
    else:
        src = (j + 0.5) * s - 0.5
        if mode != "bicubic":
            src = max(src, 0.0)
    base = math.floor(src)
    f = src - base
    clamp = lambda i: min(max(i, 0), old - 1)  # noqa: E731
    if mode == "bicubic":
        return [(clamp(base + k), _cubic(f - k)) for k in (-1, 0, 1, 2)]
    return [(clamp(base), 1 - f), (clamp(base + 1), f)]


def reference(x, sizes, mode, align=False, scales=None):
    spatial = x.shape[2:]
    scales = scales or [None] * len(spatial)
    out = np.zeros(x.shape[:2] + tuple(sizes))
    for idx in np.ndindex(*sizes):
        per_dim = [_taps(mode, j, o, n, s, align)
                   for j, o, n, s in zip(idx, spatial, sizes, scales)]
        for combo in itertools.product(*per_dim):
            w = np.prod([c[1] for c in combo])
            out[(slice(None), slice(None)) + idx] += w * x[(slice(None), slice(None)) +
                                                           tuple(c[0] for c in combo)]
    return out


CASES = [  # (input shape, size, mode, align_corners)
    ((2, 3, 5), (8,), "linear", False), ((2, 3, 5), (3,), "linear", True),
    ((1, 2, 4, 5), (7, 3), "bilinear", False), ((1, 2, 4, 5), (6, 9), "bilinear", True),
    ((1, 2, 4, 5), (7, 8), "bicubic", False), ((1, 1, 5, 4), (3, 7), "bicubic", True),
    ((1, 2, 3, 4, 2), (5, 3, 4), "trilinear", False), ((1, 1, 2, 3, 4), (4, 5, 3), "trilinear", True),
    ((2, 2, 4, 6), (7, 4), "nearest", False), ((2, 2, 5), (3,), "nearest", False),
    ((1, 2, 4, 6), (7, 4), "nearest-exact", False), ((1, 2, 7, 5), (3, 2), "area", False),
    ((1, 2, 3, 4, 5), (2, 5, 3), "nearest", False), ((1, 1, 5, 6), (7, 9), "area", False),
]


@pytest.mark.parametrize("shape,size,mode,align", CASES,
                         ids=[f"{c[2]}-{len(c[0])}d-{'ac' if c[3] else 'hp'}" for c in CASES])
def test_interpolate_equals_the_per_element_reference(shape, size, mode, align, run):
    x = np.random.default_rng(0).standard_normal(shape)
    got = run(lambda t: ops.interpolate(t, size=size, mode=mode,
                                        align_corners=True if align else None), Tensor(x))
    assert got.shape == shape[:2] + size
    np.testing.assert_allclose(got.asnumpy(), reference(x, size, mode, align), atol=1e-12)


def test_known_values():
    # PyTorch's documented linear upsampling of [0, 1, 2, 3] to 8, half-pixel centres
    x = Tensor(np.arange(4.0).reshape(1, 1, 4))
    np.testing.assert_allclose(ops.interpolate(x, size=8, mode="linear").asnumpy().ravel(),
                               [0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3])
    np.testing.assert_allclose(ops.interpolate(x, size=7, mode="linear",
                                               align_corners=True).asnumpy().ravel(),
                               np.arange(7) / 2)
    # nearest by an integer factor repeats each pixel
    img = np.arange(6.0, dtype=np.float32).reshape(1, 1, 2, 3)
    np.testing.assert_array_equal(ops.interpolate(Tensor(img), scale_factor=2.0).asnumpy(),
                                  img.repeat(2, axis=2).repeat(2, axis=3))
    # area to 1x1 is the mean
    np.testing.assert_allclose(ops.interpolate(Tensor(img), size=(1, 1),
                                               mode="area").asnumpy().ravel(), [img.mean()])


def test_scale_factor_maps_coordinates_by_its_inverse_unless_recomputed():
    x = np.random.default_rng(1).standard_normal((1, 1, 5))
    direct = ops.interpolate(Tensor(x), scale_factor=1.5, mode="linear").asnumpy()
    np.testing.assert_allclose(direct, reference(x, (7,), "linear", scales=[1 / 1.5]))
    recomputed = ops.interpolate(Tensor(x), scale_factor=1.5, mode="linear",
                                 recompute_scale_factor=True).asnumpy()
    np.testing.assert_allclose(recomputed, reference(x, (7,), "linear"))
    assert not np.allclose(direct, recomputed)


@pytest.mark.parametrize("mode,size", [("bilinear", (5, 3)), ("bicubic", (3, 5)),
                                       ("nearest", (5, 2)), ("area", (2, 3))])
def test_gradient_equals_finite_differences(mode, size, run):
    x = np.random.default_rng(2).standard_normal((1, 2, 4, 4))
    weight = np.random.default_rng(3).standard_normal((1, 2) + size)
    loss = lambda t: (ops.interpolate(t, size=size, mode=mode) * Tensor(weight)).sum()  # noqa: E731
    got = run(ms.grad(loss), Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, finite_differences(
        lambda a: reference(a, size, mode) * weight, x), atol=1e-6)


def test_upsample_cell_compiles_and_equals_the_functional_form():
    x = np.random.default_rng(4).standard_normal((2, 3, 4, 5)).astype(np.float32)
    net = nn.Upsample(scale_factor=(2.0, 1.5), mode="bilinear", align_corners=False)
    got = net(Tensor(x)).asnumpy()
    assert got.shape == (2, 3, 8, 7)
    np.testing.assert_allclose(got, reference(x.astype(np.float64), (8, 7), "bilinear",
                                              scales=[1 / 2.0, 1 / 1.5]), rtol=1e-5, atol=1e-6)
    assert ops.upsample(Tensor(x), size=(8, 7), mode="bilinear").shape == (2, 3, 8, 7)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(size=4, scale_factor=2.0), ValueError, "exactly one of 'size' and 'scale_factor'"),
    (dict(), ValueError, "exactly one of"),
    (dict(size=4, mode="cubic"), ValueError, "'mode' should be one of"),
    (dict(size=4, mode="bilinear"), ValueError, "should be 4-D for mode 'bilinear'"),
    (dict(size=(4, 4)), TypeError, "'size' should be an int or a tuple/list of 1"),
    (dict(size=0), ValueError, "'size' should be positive"),
    (dict(size=4, align_corners=True), ValueError, "'align_corners' can only be set"),
    (dict(size=4, recompute_scale_factor=True), ValueError, "'recompute_scale_factor'"),
    (dict(scale_factor=0.1), ValueError, "leaves an empty output"),
])
def test_bad_arguments_name_the_op(kwargs, error, match):
    with pytest.raises(error, match=match) as err:
        ops.interpolate(Tensor(np.zeros((1, 2, 5), np.float32)), **kwargs)
    assert "For 'interpolate'" in str(err.value)
    with pytest.raises(TypeError, match="should have a float dtype"):
        ops.interpolate(Tensor(np.zeros((1, 2, 5), np.int32)), size=3)
