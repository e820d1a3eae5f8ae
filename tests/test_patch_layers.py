"""ops.unfold / ops.fold (msops.ops.patch_func), ops.channel_shuffle, and nn.Unfold,
nn.ChannelShuffle, nn.BiDense, nn.TimeDistributed, nn.Conv2dBnAct, nn.DenseBnAct: values
against numpy references written here (direct loops), eagerly and compiled; fold is
unfold's adjoint (<unfold(x), y> == <x, fold(y)>); gradients against finite differences;
errors in MindSpore's form."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(31)
X = RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)


def np_unfold(x, k, d, p, s):
    """im2col by loops: (N, C * kh * kw, L), rows (c, i, j), columns row-major windows."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c * k[0] * k[1], oh * ow), x.dtype)
    for ci in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                for a in range(oh):
                    for b in range(ow):
                        out[:, (ci * k[0] + i) * k[1] + j, a * ow + b] = \
                            xp[:, ci, a * s[0] + i * d[0], b * s[1] + j * d[1]]
    return out


def np_fold(cols, size, k, d, p, s):
    """col2im by loops: each column value added at its window position."""
    n, ckk, L = cols.shape
    c = ckk // (k[0] * k[1])
    h, w = size
    out = np.zeros((n, c, h + 2 * p[0], w + 2 * p[1]), cols.dtype)
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    for ci in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                for l in range(L):
                    a, b = divmod(l, ow)
                    out[:, ci, a * s[0] + i * d[0], b * s[1] + j * d[1]] += \
                        cols[:, (ci * k[0] + i) * k[1] + j, l]
    return out[:, :, p[0]:p[0] + h, p[1]:p[1] + w]


ARGS = [dict(kernel_size=2), dict(kernel_size=(3, 2), dilation=(2, 1), padding=(1, 2),
                                  stride=(2, 3)),
        dict(kernel_size=3, padding=1), dict(kernel_size=(2, 3), stride=2, dilation=2)]


def _pairs(a):
    def pr(v):
        return (v, v) if isinstance(v, int) else v
    return (pr(a["kernel_size"]), pr(a.get("dilation", 1)), pr(a.get("padding", 0)),
            pr(a.get("stride", 1)))


@pytest.mark.parametrize("args", ARGS)
def test_unfold_and_fold_match_loops_eager_and_compiled(args):
    k, d, p, s = _pairs(args)
    want = np_unfold(X, k, d, p, s)
    for out in eager_and_compiled(lambda x: ops.unfold(x, **args), Tensor(X)):
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    cols = RNG.standard_normal(want.shape).astype(np.float32)
    want = np_fold(cols, (7, 6), k, d, p, s)
    for out in eager_and_compiled(lambda y: ops.fold(y, (7, 6), **args), Tensor(cols)):
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("args", ARGS)
def test_fold_is_the_adjoint_of_unfold(args):
    x = RNG.standard_normal((2, 3, 7, 6))
    u = ops.unfold(Tensor(x), **args).asnumpy()
    y = RNG.standard_normal(u.shape)
    f = ops.fold(Tensor(y), (7, 6), **args).asnumpy()
    assert np.isclose((u * y).sum(), (x * f).sum(), rtol=1e-12)


def test_unfold_and_fold_gradients_match_finite_differences():
    args = ARGS[1]
    x = RNG.standard_normal((1, 2, 7, 6))
    w = RNG.standard_normal(ops.unfold(Tensor(x), **args).shape)

    def f_unfold(a):
        return ops.unfold(a, **args) * Tensor(w)
    grad = ms.grad(lambda a: ops.ReduceSum()(f_unfold(a), ()))(Tensor(x)).asnumpy()
    np.testing.assert_allclose(grad, finite_differences(
        lambda a: f_unfold(Tensor(a)).asnumpy(), x), rtol=1e-6, atol=1e-8)
    y = RNG.standard_normal(w.shape)
    v = RNG.standard_normal((1, 2, 7, 6))

    def f_fold(a):
        return ops.fold(a, (7, 6), **args) * Tensor(v)
    grad = ms.grad(lambda a: ops.ReduceSum()(f_fold(a), ()))(Tensor(y)).asnumpy()
    np.testing.assert_allclose(grad, finite_differences(
        lambda a: f_fold(Tensor(a)).asnumpy(), y), rtol=1e-6, atol=1e-8)


def np_extract_patches(x, k, s, r, padding):
    """TensorFlow's extract_image_patches on NCHW by loops: depth ordered (i, j, c)."""
    n, c, h, w = x.shape
    if padding == "same":
        oh, ow = -(-h // s[0]), -(-w // s[1])
        ph = max((oh - 1) * s[0] + (k[0] - 1) * r[0] + 1 - h, 0)
        pw = max((ow - 1) * s[1] + (k[1] - 1) * r[1] + 1 - w, 0)
        x = np.pad(x, ((0, 0), (0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2)))
    else:
        oh = (h - (k[0] - 1) * r[0] - 1) // s[0] + 1
        ow = (w - (k[1] - 1) * r[1] - 1) // s[1] + 1
    out = np.zeros((n, k[0] * k[1] * c, oh, ow), x.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            for ci in range(c):
                for a in range(oh):
                    for b in range(ow):
                        out[:, (i * k[1] + j) * c + ci, a, b] = \
                            x[:, ci, a * s[0] + i * r[0], b * s[1] + j * r[1]]
    return out


@pytest.mark.parametrize("k,s,r,padding", [((2, 2), (1, 1), (1, 1), "valid"),
                                           ((3, 2), (2, 3), (1, 2), "valid"),
                                           ((3, 3), (2, 2), (1, 1), "same"),
                                           ((2, 3), (3, 2), (2, 1), "SAME")])
def test_nn_unfold_matches_extract_image_patches(k, s, r, padding):
    def make():
        return nn.Unfold([1, *k, 1], [1, *s, 1], [1, *r, 1], padding)
    want = np_extract_patches(X, k, s, r, padding.lower())
    np.testing.assert_allclose(make()(Tensor(X)).asnumpy(), want)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        np.testing.assert_allclose(make()(Tensor(X)).asnumpy(), want)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_channel_shuffle_interleaves_the_groups():
    x = RNG.standard_normal((2, 6, 3, 2)).astype(np.float32)
    want = np.empty_like(x)
    for j in range(2):                     # C / groups
        for g in range(3):                 # groups
            want[:, j * 3 + g] = x[:, g * 2 + j]
    for out in eager_and_compiled(lambda t: ops.channel_shuffle(t, 3), Tensor(x)):
        np.testing.assert_array_equal(out.asnumpy(), want)
    np.testing.assert_array_equal(nn.ChannelShuffle(3)(Tensor(x)).asnumpy(), want)
    np.testing.assert_array_equal(nn.ChannelShuffle(1)(Tensor(x)).asnumpy(), x)


def test_bidense_matches_einsum_and_its_gradients_finite_differences():
    x1 = RNG.standard_normal((2, 3, 4))
    x2 = RNG.standard_normal((2, 3, 5))
    w = RNG.standard_normal((6, 4, 5))
    b = RNG.standard_normal(6)

    def make():
        return nn.BiDense(4, 5, 6, weight_init=Tensor(w), bias_init=Tensor(b),
                          dtype=ms.float64)
    want = np.einsum("...i,kij,...j->...k", x1, w, x2) + b
    np.testing.assert_allclose(make()(Tensor(x1), Tensor(x2)).asnumpy(), want, rtol=1e-12)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        np.testing.assert_allclose(make()(Tensor(x1), Tensor(x2)).asnumpy(), want, rtol=1e-12)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    layer = make()
    g1, g2 = ms.grad(lambda a, c: ops.ReduceSum()(layer(a, c) ** 2, ()), (0, 1))(
        Tensor(x1), Tensor(x2))
    f = (lambda a: (np.einsum("...i,kij,...j->...k", a, w, x2) + b) ** 2)
    np.testing.assert_allclose(g1.asnumpy(), finite_differences(f, x1), rtol=1e-6)
    f = (lambda c: (np.einsum("...i,kij,...j->...k", x1, w, c) + b) ** 2)
    np.testing.assert_allclose(g2.asnumpy(), finite_differences(f, x2), rtol=1e-6)


def test_bidense_defaults_are_uniform_in_one_over_sqrt_in1():
    layer = nn.BiDense(16, 3, 40)
    bound = 1 / np.sqrt(16)
    w, b = layer.weight.asnumpy(), layer.bias.asnumpy()
    assert w.shape == (40, 16, 3) and b.shape == (40,)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound
    assert not hasattr(nn.BiDense(2, 2, 2, has_bias=False), "bias")


def test_time_distributed_applies_the_layer_per_step():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)        # (batch, time, features)
    w = RNG.standard_normal((2, 5)).astype(np.float32)
    want = np.einsum("btf,of->bto", x, w)
    for reshape_axis in (None, 0):
        def make():
            return nn.TimeDistributed(nn.Dense(5, 2, weight_init=Tensor(w), has_bias=False),
                                      time_axis=1, reshape_with_axis=reshape_axis)
        np.testing.assert_allclose(make()(Tensor(x)).asnumpy(), want, rtol=1e-5, atol=1e-6)
        ms.set_context(mode=ms.GRAPH_MODE)
        try:
            np.testing.assert_allclose(make()(Tensor(x)).asnumpy(), want, rtol=1e-5,
                                       atol=1e-6)
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
    # time first, reshaped with the batch at axis 1; a conv per step of (T, N, C, H, W)
    v = RNG.standard_normal((3, 2, 1, 4, 4)).astype(np.float32)
    k = RNG.standard_normal((2, 1, 3, 3)).astype(np.float32)
    conv = nn.Conv2d(1, 2, 3, pad_mode="valid", weight_init=Tensor(k))
    per_step = np.stack([conv(Tensor(v[t])).asnumpy() for t in range(3)])
    for reshape_axis in (None, 1):
        out = nn.TimeDistributed(conv, 0, reshape_axis)(Tensor(v)).asnumpy()
        np.testing.assert_allclose(out, per_step, rtol=1e-5, atol=1e-6)


def np_batchnorm_eval(x, axis_c, eps):
    return x / np.sqrt(1 + eps)        # fresh moving statistics: mean 0, variance 1


def test_conv2d_bn_act_is_conv_then_bn_then_activation():
    x = RNG.standard_normal((2, 3, 5, 5)).astype(np.float32)
    k = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    layer = nn.Conv2dBnAct(3, 4, 3, weight_init=Tensor(k), has_bn=True,
                           activation="leakyrelu", alpha=0.1)
    layer.set_train(False)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((2, 4, 5, 5))
    for a in range(5):
        for b in range(5):
            conv[:, :, a, b] = np.einsum("ncij,ocij->no", xp[:, :, a:a + 3, b:b + 3], k)
    y = np_batchnorm_eval(conv, 1, 1e-5)
    np.testing.assert_allclose(layer(Tensor(x)).asnumpy(), np.where(y > 0, y, 0.1 * y),
                               rtol=1e-4, atol=1e-5)
    assert layer.batchnorm.moving_mean is not None
    assert isinstance(nn.Conv2dBnAct(3, 4, 3, activation="relu").activation, nn.ReLU)
    assert not hasattr(nn.Conv2dBnAct(3, 4, 3), "batchnorm")


def test_dense_bn_act_trains_with_batch_statistics():
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    layer = nn.DenseBnAct(4, 3, weight_init=Tensor(w), has_bn=True, activation="tanh")
    layer.set_train(True)
    y = x @ w.T
    y = (y - y.mean(0)) / np.sqrt(y.var(0) + 1e-5)
    np.testing.assert_allclose(layer(Tensor(x)).asnumpy(), np.tanh(y), rtol=1e-4, atol=1e-5)
    plain = nn.DenseBnAct(4, 3, weight_init=Tensor(w), bias_init=1.0)
    np.testing.assert_allclose(plain(Tensor(x)).asnumpy(), x @ w.T + 1, rtol=1e-5)
    assert [p.name for p in plain.trainable_params()] == ["dense.weight", "dense.bias"]


ERRORS = [
    (lambda: ops.unfold(Tensor(X[0]), 2), ValueError, r"For 'unfold', the 'input' should be 4-D"),
    (lambda: ops.unfold(Tensor(X), (2, 0)), ValueError,
     r"For 'unfold', the 'kernel_size' should be an int or a tuple of 2 ints, each >= 1"),
    (lambda: ops.unfold(Tensor(X), 9), ValueError,
     r"For 'unfold', the padded height 7 should be >= the dilated kernel's extent 9"),
    (lambda: ops.fold(Tensor(np.ones((1, 8, 5), np.float32)), (4, 4), 2), ValueError,
     r"For 'fold', the last dim of 'input' should be the number of windows 3 \* 3 = 9"),
    (lambda: ops.fold(Tensor(np.ones((1, 7, 9), np.float32)), (4, 4), 2), ValueError,
     r"For 'fold', the 'input' should be 3-D \(N, C \* 4, L\)"),
    (lambda: nn.Unfold([1, 2, 2], [1, 1, 1, 1], [1, 1, 1, 1]), ValueError,
     r"For 'Unfold', the 'ksizes' should be a tuple or list of 4 positive ints"),
    (lambda: nn.Unfold([1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "full"), ValueError,
     r"For 'Unfold', the 'padding' should be 'same' or 'valid'"),
    (lambda: ops.channel_shuffle(Tensor(X), 2), ValueError,
     r"For 'channel_shuffle', the 'x' should be \(N, C, \*\) of rank >= 3 with C divisible"),
    (lambda: nn.ChannelShuffle(0), ValueError, r"For 'ChannelShuffle', the 'groups'"),
    (lambda: nn.BiDense(4, 5, 6)(Tensor(X[..., :4]), Tensor(X[..., :4])), ValueError,
     r"For 'BiDense', the 'x1' and 'x2' should be \(\*, 4\) and \(\*, 5\)"),
    (lambda: nn.TimeDistributed(nn.ReLU(), 1)(Tensor(X[0, 0])), ValueError,
     r"For 'TimeDistributed', the 'inputs' should be at least 3-D"),
    (lambda: nn.TimeDistributed(nn.ReLU(), 1, 1)(Tensor(X)), ValueError,
     r"For 'TimeDistributed', the 'reshape_with_axis' should differ from 'time_axis'"),
    (lambda: nn.DenseBnAct(4, 3, activation="nope"), ValueError,
     r"For 'DenseBnAct', the 'activation' should be one of"),
]


@pytest.mark.parametrize("call,exc,msg", ERRORS)
def test_errors_name_the_op_and_argument(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()
