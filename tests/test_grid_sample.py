"""ops.grid_sample against a direct per-point numpy loop (PyTorch's definition: unnormalise,
clamp or reflect, then bilinear / trilinear corners or the nearest pixel), eagerly and
compiled; gradients to input and grid against float64 finite differences; argument errors."""
import itertools
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from compiled import compiled
from numeric import finite_differences

RNG = np.random.default_rng(707)


def unnormalise(v, size, align):
    return (v + 1) / 2 * (size - 1) if align else ((v + 1) * size - 1) / 2


def reflect(v, lo2, hi2):
    if lo2 == hi2:
        return 0.0
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    v = abs(v - lo)
    flips = math.floor(v / span)
    extra = math.fmod(v, span)
    return extra + lo if flips % 2 == 0 else span - extra + lo


def source(v, size, padding, align):
    v = unnormalise(v, size, align)
    if padding == "border":
        v = min(max(v, 0), size - 1)
    elif padding == "reflection":
        v = reflect(v, 0, 2 * (size - 1)) if align else reflect(v, -1, 2 * size - 1)
        v = min(max(v, 0), size - 1)
    return v


def reference(x, grid, mode, padding, align):
    """One point at a time: x (N, C, *sizes), grid (N, *out, d)."""
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    d = len(sizes)
    out = np.zeros((n, c) + grid.shape[1:-1])
    for b in range(n):
        for pos in np.ndindex(*grid.shape[1:-1]):
            point = grid[(b,) + pos]
            src = [source(point[d - 1 - k], sizes[k], padding, align) for k in range(d)]
            if mode == "nearest":
                idx = [int(np.rint(s)) for s in src]
                if all(0 <= i < s for i, s in zip(idx, sizes)):
                    out[(b, slice(None)) + pos] = x[(b, slice(None)) + tuple(idx)]
                continue
            total = np.zeros(c)
            for corner in itertools.product((0, 1), repeat=d):
                idx = [math.floor(s) + bit for s, bit in zip(src, corner)]
                w = 1.0
                for s, i in zip(src, idx):
                    w *= 1 - abs(s - i)
                if all(0 <= i < s for i, s in zip(idx, sizes)):
                    total += w * x[(b, slice(None)) + tuple(idx)]
            out[(b, slice(None)) + pos] = total
    return out


CASES = [(m, p, a) for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection")
         for a in (False, True)]


@pytest.mark.parametrize("mode,padding,align", CASES)
def test_grid_sample_2d_matches_loop_eager_and_compiled(mode, padding, align):
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    grid = RNG.uniform(-1.6, 1.6, (2, 3, 6, 2)).astype(np.float32)
    grid[0, 0, 0] = [1.0, -1.0]                     # exact corners and the centre
    grid[0, 0, 1] = [0.0, 0.0]
    want = reference(x.astype(np.float64), grid.astype(np.float64), mode, padding, align)

    def fn(a, g):
        return ops.grid_sample(a, g, mode, padding, align)
    eager = fn(Tensor(x), Tensor(grid))
    np.testing.assert_allclose(eager.asnumpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(compiled(fn, Tensor(x), Tensor(grid)).asnumpy(), want, rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("mode,padding,align", [("bilinear", "zeros", False),
                                                ("bilinear", "reflection", True),
                                                ("nearest", "border", False)])
def test_grid_sample_3d_matches_loop(mode, padding, align):
    x = RNG.standard_normal((1, 2, 3, 4, 3)).astype(np.float32)
    grid = RNG.uniform(-1.3, 1.3, (1, 2, 3, 2, 3)).astype(np.float32)
    want = reference(x.astype(np.float64), grid.astype(np.float64), mode, padding, align)
    got = ops.grid_sample(Tensor(x), Tensor(grid), mode, padding, align)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding,align", [("zeros", False), ("border", True),
                                           ("reflection", False)])
def test_grid_sample_gradients_match_finite_differences(padding, align):
    x = RNG.standard_normal((1, 2, 3, 4))
    # points away from pixel borders and clamp edges, where the bilinear map is smooth
    grid = RNG.uniform(-0.9, 0.9, (1, 2, 3, 2))
    w = RNG.standard_normal((1, 2, 2, 3))

    def loss(a, g):
        return ops.sum(ops.grid_sample(a, g, "bilinear", padding, align) * Tensor(w))
    dx, dg = ms.grad(loss, grad_position=(0, 1))(Tensor(x), Tensor(grid))
    want_dx = finite_differences(lambda a: reference(a, grid, "bilinear", padding, align) * w, x)
    want_dg = finite_differences(lambda g: reference(x, g, "bilinear", padding, align) * w, grid)
    np.testing.assert_allclose(dx.asnumpy(), want_dx, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dg.asnumpy(), want_dg, rtol=1e-5, atol=1e-6)


def test_grid_sample_nearest_gradient_reaches_input_only():
    x = RNG.standard_normal((1, 1, 3, 3))
    grid = RNG.uniform(-0.8, 0.8, (1, 2, 2, 2))
    dx, dg = ms.grad(lambda a, g: ops.sum(ops.grid_sample(a, g, "nearest")),
                     grad_position=(0, 1))(Tensor(x), Tensor(grid))
    want = finite_differences(lambda a: reference(a, grid, "nearest", "zeros", False), x)
    np.testing.assert_allclose(dx.asnumpy(), want, atol=1e-7)
    np.testing.assert_array_equal(dg.asnumpy(), 0)


def test_grid_sample_errors():
    x = Tensor(np.zeros((1, 1, 2, 2), np.float32))
    g = Tensor(np.zeros((1, 2, 2, 2), np.float32))
    with pytest.raises(ValueError, match="For 'grid_sample', the 'mode'"):
        ops.grid_sample(x, g, "bicubic")
    with pytest.raises(ValueError, match="'padding_mode'"):
        ops.grid_sample(x, g, padding_mode="wrap")
    with pytest.raises(ValueError, match="the 'grid' should be 4-D"):
        ops.grid_sample(x, Tensor(np.zeros((1, 2, 2, 3), np.float32)))
    with pytest.raises(TypeError, match="the 'grid' should have the dtype"):
        ops.grid_sample(x, Tensor(np.zeros((1, 2, 2, 2), np.float64)))
    with pytest.raises(ValueError, match="4-D .* or 5-D"):
        ops.grid_sample(Tensor(np.zeros((1, 2, 2), np.float32)), g)
