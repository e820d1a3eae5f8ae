"""The array layers and their primitives against numpy written here, eager and compiled:
Tril / Triu (ops.Tril, ops.Triu, ops.tril, ops.triu, nn.Tril, nn.Triu); their errors.
(Gradients: tests/test_grad_ops.py; split across ranks: tests/ranks/test_triangle_ops.py.)"""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences
from test_functional_forms import Call

MODES = [ms.PYNATIVE_MODE, ms.GRAPH_MODE]


def run(fn, mode, *xs):
    ms.set_context(mode=mode)
    try:
        return Call(fn)(*[Tensor(x) for x in xs]).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def lower(x, k):
    """x with every element whose column - row > k zeroed (numpy-free of np.tril)."""
    rows, cols = x.shape[-2:]
    keep = np.arange(cols)[None, :] - np.arange(rows)[:, None] <= k
    return np.where(keep, x, np.zeros((), x.dtype))


def upper(x, k):
    rows, cols = x.shape[-2:]
    keep = np.arange(cols)[None, :] - np.arange(rows)[:, None] >= k
    return np.where(keep, x, np.zeros((), x.dtype))


X = np.random.default_rng(0).standard_normal((2, 3, 5)).astype(np.float32)
B = np.random.default_rng(1).random((4, 3)) > 0.4


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [0, 2, -1, 9, -9])
def test_tril_triu(mode, k):
    for x in (X, B, X.astype(np.int32)):
        for got, want in ((run(lambda t: ops.Tril(k)(t), mode, x), lower(x, k)),
                          (run(lambda t: ops.Triu(k)(t), mode, x), upper(x, k)),
                          (run(lambda t: ops.tril(t, k), mode, x), lower(x, k)),
                          (run(lambda t: nn.Tril()(t, k), mode, x), lower(x, k)),
                          (run(lambda t: nn.Triu()(t, k), mode, x), upper(x, k))):
            assert got.dtype == x.dtype
            np.testing.assert_array_equal(got, want)
    assert nn.Tril()(Tensor(X)).shape == X.shape       # k defaults to 0
    np.testing.assert_array_equal(nn.Triu()(Tensor(X)).asnumpy(), upper(X, 0))


def test_tril_triu_errors():
    with pytest.raises(TypeError, match="For 'Tril', the type of 'diagonal' should be int, "
                                        "but got float"):
        ops.Tril(1.5)
    with pytest.raises(ValueError, match=r"For 'Triu', the rank of 'x' should be >= 2, but got "
                                         r"shape \[3\]"):
        ops.Triu()(Tensor(np.ones(3, np.float32)))
    with pytest.raises(TypeError, match="For 'triu', the 'diagonal' should be an int"):
        nn.Triu()(Tensor(X), 1.0)
    with pytest.raises(ValueError, match="For 'tril', the 'input' should have rank >= 2"):
        nn.Tril()(Tensor(np.ones(3, np.float32)))
    with pytest.raises(TypeError, match="For 'Tril', the 'x'"):
        ops.Tril()(Tensor(np.array([["a", "b"]])))


def np_pad(x, pairs, mode, value=0):
    """numpy's pad with (before, after) for x's last len(pairs) dims (pairs from dim 0 of
    those); negative amounts crop first."""
    lead = x.ndim - len(pairs)
    crop = tuple([slice(None)] * lead + [slice(max(-b, 0), x.shape[lead + i] - max(-a, 0))
                                         for i, (b, a) in enumerate(pairs)])
    widths = [(0, 0)] * lead + [(max(b, 0), max(a, 0)) for b, a in pairs]
    kw = dict(constant_values=value) if mode == "constant" else {}
    return np.pad(x[crop], widths, {"replicate": "edge"}.get(mode, mode), **kw)


P = np.random.default_rng(2).standard_normal((2, 3, 4, 5, 6)).astype(np.float32)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("make,x,pairs,np_mode,value", [
    (lambda: nn.ConstantPad1d(2, 1.5), P[0, 0, 0], [(2, 2)], "constant", 1.5),
    (lambda: nn.ConstantPad1d((3, -1), -2), P[0, 0], [(3, -1)], "constant", -2),
    (lambda: nn.ConstantPad2d((1, 0, 2, 1), 0.5), P[0], [(2, 1), (1, 0)], "constant", 0.5),
    (lambda: nn.ConstantPad3d((1, 1, 0, 2, 1, 0), 3), P, [(1, 0), (0, 2), (1, 1)], "constant",
     3),
    (lambda: nn.ZeroPad2d((1, 2, 0, 1)), P[0], [(0, 1), (1, 2)], "constant", 0),
    (lambda: nn.ZeroPad2d(1), P[0, 0], [(1, 1), (1, 1)], "constant", 0),
    (lambda: nn.ReflectionPad1d((3, 1)), P[0, 0], [(3, 1)], "reflect", 0),
    (lambda: nn.ReflectionPad2d((2, 0, 1, 3)), P[0, 0], [(1, 3), (2, 0)], "reflect", 0),
    (lambda: nn.ReflectionPad3d(1), P[0], [(1, 1), (1, 1), (1, 1)], "reflect", 0),
    (lambda: nn.ReplicationPad1d((0, 4)), P[0, 0, 0], [(0, 4)], "replicate", 0),
    (lambda: nn.ReplicationPad2d((1, 2, 3, 0)), P[0], [(3, 0), (1, 2)], "replicate", 0),
    (lambda: nn.ReplicationPad3d((2, 1, 0, 1, 1, 2)), P, [(1, 2), (0, 1), (2, 1)],
     "replicate", 0),
    (lambda: nn.Pad(((1, 2), (0, 3))), P[0, 0, 0], [(1, 2), (0, 3)], "constant", 0),
    (lambda: nn.Pad(((1, 1), (2, 3)), "REFLECT"), P[0, 0, 0], [(1, 1), (2, 3)], "reflect", 0),
    (lambda: nn.Pad(((0, 0), (2, 2), (4, 5)), "SYMMETRIC"), P[0, 0], [(0, 0), (2, 2), (4, 5)],
     "symmetric", 0),
], ids=lambda v: None)
def test_padding_layers(mode, make, x, pairs, np_mode, value):
    got = run(lambda t: make()(t), mode, x)
    np.testing.assert_array_equal(got, np_pad(x, pairs, np_mode, value))


def test_padding_layer_gradients():
    """The border's gradient flows back into the elements it copied (finite differences)."""
    x = np.random.default_rng(3).standard_normal((2, 3, 4))
    w = np.random.default_rng(4).standard_normal((2, 6, 7))
    for layer, np_mode in ((nn.ReflectionPad2d((1, 2, 2, 1)), "reflect"),
                           (nn.ReplicationPad2d((1, 2, 2, 1)), "replicate"),
                           (nn.Pad(((0, 0), (2, 1), (1, 2)), "SYMMETRIC"), "symmetric")):
        for mode in MODES:
            ms.set_context(mode=mode)
            try:
                dx = ms.grad(lambda t: (layer(t) * Tensor(w)).sum())(Tensor(x)).asnumpy()
            finally:
                ms.set_context(mode=ms.PYNATIVE_MODE)
            want = finite_differences(lambda v: np_pad(v, [(2, 1), (1, 2)], np_mode) * w, x)
            np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-8, err_msg=np_mode)


def test_padding_layer_errors():
    with pytest.raises(ValueError, match=r"For 'ReflectionPad1d', a 'reflect' padding should "
                                         r"be smaller than the size 3 of dim 1, but got 3"):
        nn.ReflectionPad1d(3)(Tensor(np.ones((2, 3), np.float32)))
    with pytest.raises(ValueError, match=r"For 'ReflectionPad2d', the 'x' should be 3 or 4-D"):
        nn.ReflectionPad2d(1)(Tensor(np.ones((3, 3), np.float32)))
    with pytest.raises(ValueError, match=r"For 'ReplicationPad3d', the 'padding' should hold 6"):
        nn.ReplicationPad3d((1, 1))
    with pytest.raises(ValueError, match=r"For 'ReplicationPad1d', the 'padding' should be >= 0"):
        nn.ReplicationPad1d((-1, 1))
    with pytest.raises(TypeError, match=r"For 'ZeroPad2d', the 'padding' should be an int or"):
        nn.ZeroPad2d(1.5)
    with pytest.raises(TypeError, match=r"For 'ConstantPad1d'.*'value'"):
        nn.ConstantPad1d(1, "a")
    with pytest.raises(ValueError, match=r"For 'Pad', the 'paddings' should be \(N, 2\) pairs"):
        nn.Pad(((1, 2, 3),))
    with pytest.raises(TypeError, match=r"For 'Pad'.*'paddings'"):
        nn.Pad([[1, 1]])
    with pytest.raises(ValueError, match=r"For 'Pad'.*'mode'"):
        nn.Pad(((1, 1),), "EDGE")
    with pytest.raises(ValueError, match=r"For 'Pad', the 'x' should have one dim per pair"):
        nn.Pad(((1, 1),))(Tensor(np.ones((2, 2), np.float32)))
    with pytest.raises(ValueError, match=r"For 'Pad', a 'symmetric' padding should be at most "
                                         r"the size 2 of dim 0, but got 3"):
        nn.Pad(((3, 0),), "SYMMETRIC")(Tensor(np.ones(2, np.float32)))


@pytest.mark.parametrize("mode", MODES)
def test_onehot_roll_unflatten(mode):
    idx = np.array([[1, 0, 3], [2, 2, 0]], np.int32)
    for axis in (-1, 0, 1):
        got = run(lambda t: nn.OneHot(axis, 4, 5.0, -1.0, ms.float64)(t), mode, idx)
        want = np.moveaxis(np.where(np.arange(4) == idx[..., None], 5.0, -1.0), -1,
                           axis if axis >= 0 else -1)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, want)
    for shift, axis in ((2, 1), ((1, -2), (0, 2)), ([3], [-1])):
        want = np.roll(X, shift, axis)
        np.testing.assert_array_equal(run(lambda t: nn.Roll(shift, axis)(t), mode, X), want)
    for axis, sizes, shape in ((2, (5, 1), (2, 3, 5, 1)), (-2, [3, 1], (2, 3, 1, 5)),
                               (0, (-1, 1), (2, 1, 3, 5))):
        got = run(lambda t: nn.Unflatten(axis, sizes)(t), mode, X)
        np.testing.assert_array_equal(got, X.reshape(shape))


@pytest.mark.parametrize("mode", MODES)
def test_norm_and_clip_by_norm(mode):
    x = np.random.default_rng(5).standard_normal((3, 4, 2))
    for axis, keep in (((), False), (1, True), ((0, 2), False)):
        want = np.sqrt((x ** 2).sum(axis=axis or None, keepdims=keep))
        np.testing.assert_allclose(run(lambda t: nn.Norm(axis, keep)(t), mode, x), want,
                                   rtol=1e-12)
    for axis, clip in ((None, 1.5), (1, 0.8), ((0, 2), 100.0)):
        l2 = np.sqrt((x ** 2).sum(axis=axis, keepdims=True))
        want = (x * clip / np.maximum(l2, clip)).astype(np.float32)
        got = run(lambda t: nn.ClipByNorm(axis)(t, Tensor(np.float32(clip))), mode, x)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # clip_norm broadcasting to x, and an all-zero x
    clip = np.array([0.5, 1.0, 9.0], np.float32).reshape(3, 1, 1)
    l2 = np.sqrt((x ** 2).sum(axis=(1, 2), keepdims=True))
    got = run(lambda t: nn.ClipByNorm((1, 2))(t, Tensor(clip)), mode, x)
    np.testing.assert_allclose(got, x * clip / np.maximum(l2, clip), rtol=1e-6)
    zero = np.zeros((2, 2), np.float32)
    np.testing.assert_array_equal(run(lambda t: nn.ClipByNorm()(t, Tensor(np.float32(1))),
                                      mode, zero), zero)


def test_norm_gradients():
    x = np.random.default_rng(6).standard_normal((3, 4))
    w = np.random.default_rng(7).standard_normal((3, 1))
    for mode in MODES:
        ms.set_context(mode=mode)
        try:
            dn = ms.grad(lambda t: (nn.Norm(1, True)(t) * Tensor(w)).sum())(Tensor(x))
            dc = ms.grad(lambda t: (nn.ClipByNorm(1)(t, Tensor(np.float32(1.2)))
                                    * Tensor(w.astype(np.float32))).sum())(
                Tensor(x.astype(np.float32)))
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
        np.testing.assert_allclose(dn.asnumpy(), finite_differences(
            lambda v: np.sqrt((v ** 2).sum(1, keepdims=True)) * w, x), rtol=1e-6)
        np.testing.assert_allclose(dc.asnumpy(), finite_differences(
            lambda v: v * 1.2 / np.maximum(np.sqrt((v ** 2).sum(1, keepdims=True)), 1.2) * w,
            x), rtol=1e-4, atol=1e-5)


def test_onehot_roll_unflatten_norm_errors():
    with pytest.raises(ValueError, match="For 'OneHot'.*'depth'"):
        nn.OneHot(depth=-1)
    with pytest.raises(TypeError, match="For 'OneHot', the 'dtype' should be a number dtype"):
        nn.OneHot(dtype=ms.bool_)
    with pytest.raises(ValueError, match="For 'Roll', the 'shift' and 'axis' should have the "
                                         "same length, but got 2 and 1"):
        nn.Roll((1, 2), 0)
    with pytest.raises(TypeError, match="For 'Roll'.*'shift'"):
        nn.Roll(1.5, 0)
    with pytest.raises(ValueError, match=r"For 'Unflatten', the 'unflattened_size' \[2, 2\] "
                                         r"should multiply to the size 3 of dim 1"):
        nn.Unflatten(1, (2, 2))(Tensor(X))
    with pytest.raises(ValueError, match="For 'Unflatten', the 'unflattened_size' should be"):
        nn.Unflatten(1, (-1, -1))
    with pytest.raises(TypeError, match="For 'Norm'.*'axis'"):
        nn.Norm(axis=[0])
    with pytest.raises(TypeError, match="For 'Norm', the 'x' should have a float dtype"):
        nn.Norm()(Tensor(np.ones(2, np.int32)))
    with pytest.raises(TypeError, match="For 'ClipByNorm', the 'clip_norm' should be a Tensor"):
        nn.ClipByNorm()(Tensor(X), 1.0)
    with pytest.raises(ValueError, match=r"For 'ClipByNorm', the 'clip_norm' shape \[4\]"):
        nn.ClipByNorm()(Tensor(X), Tensor(np.ones(4, np.float32)))
