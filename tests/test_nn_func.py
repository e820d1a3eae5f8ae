"""nn.GroupNorm, nn.Conv1d and the layer functions of msops/ops/nn_func.py (group_norm,
layer_norm, conv1d, conv2d, dense, dropout): values against numpy written here, eager and
compiled; gradients against float64 finite differences; argument errors naming the layer
or function."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences
from test_functional_forms import Call

RNG = np.random.default_rng(77)


def np_group_norm(x, groups, gamma=None, beta=None, eps=1e-5):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    y = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    y = y.reshape(x.shape)
    per_channel = (c,) + (1,) * (x.ndim - 2)
    if gamma is not None:
        y = y * gamma.reshape(per_channel)
    if beta is not None:
        y = y + beta.reshape(per_channel)
    return y


def np_conv2d(x, w, stride=(1, 1), pads=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """Cross-correlation by its definition: one output element at a time."""
    t, b, l, r = pads
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    n, _, hp, wp = xp.shape
    o, cg, kh, kw = w.shape
    oh = (hp - (dilation[0] * (kh - 1) + 1)) // stride[0] + 1
    ow = (wp - (dilation[1] * (kw - 1) + 1)) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    per_group = o // groups
    for oc in range(o):
        c0 = (oc // per_group) * cg
        for i in range(oh):
            for j in range(ow):
                rows = i * stride[0] + dilation[0] * np.arange(kh)
                cols = j * stride[1] + dilation[1] * np.arange(kw)
                patch = xp[:, c0:c0 + cg][:, :, rows][:, :, :, cols]
                out[:, oc, i, j] = (patch * w[oc]).sum((1, 2, 3))
    return out


def same_pads(size, kernel, stride, dilation):
    """MindSpore's 'same': ceil(size / stride) outputs, the extra pad after."""
    total = max(0, (-(-size // stride) - 1) * stride + dilation * (kernel - 1) + 1 - size)
    return total // 2, total - total // 2


# -- GroupNorm ------------------------------------------------------------------------------
GN_CASES = [((2, 4, 3, 5), 2), ((3, 6), 3), ((2, 6, 5), 1), ((2, 4, 3), 4)]


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "graph"])
@pytest.mark.parametrize("shape, groups", GN_CASES, ids=[str(c) for c in GN_CASES])
def test_group_norm_layer_follows_numpy_and_finite_differences(shape, groups, mode):
    ms.set_context(mode=mode)
    c = shape[1]
    x = RNG.standard_normal(shape) * 3 + 1
    gamma, beta = RNG.standard_normal(c), RNG.standard_normal(c)
    layer = nn.GroupNorm(groups, c, gamma_init=Tensor(gamma), beta_init=Tensor(beta),
                         dtype=ms.float64)
    np.testing.assert_allclose(layer(Tensor(x)).asnumpy(), np_group_norm(x, groups, gamma, beta),
                               rtol=1e-10, atol=1e-12)
    dy = RNG.standard_normal(shape)                  # a weighted sum: every output counts
    loss = lambda t: ops.ReduceSum()(ops.Mul()(layer(t), Tensor(dy)))
    grad = ms.grad(loss)(Tensor(x)).asnumpy()
    want = finite_differences(lambda a: np_group_norm(a, groups, gamma, beta) * dy, x)
    np.testing.assert_allclose(grad, want, rtol=1e-5, atol=1e-7)
    _, (d_gamma, d_beta) = ms.value_and_grad(loss, None, layer.trainable_params())(Tensor(x))
    np.testing.assert_allclose(d_gamma.asnumpy(), finite_differences(
        lambda g: np_group_norm(x, groups, g, beta) * dy, gamma), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(d_beta.asnumpy(), finite_differences(
        lambda b: np_group_norm(x, groups, gamma, b) * dy, beta), rtol=1e-5, atol=1e-7)


def test_group_norm_defaults_and_affine():
    layer = nn.GroupNorm(2, 4)
    assert layer.eps == 1e-5 and layer.affine
    np.testing.assert_array_equal(layer.gamma.asnumpy(), np.ones(4, np.float32))
    np.testing.assert_array_equal(layer.beta.asnumpy(), np.zeros(4, np.float32))
    assert len(layer.trainable_params()) == 2
    frozen = nn.GroupNorm(2, 4, affine=False)
    assert frozen.trainable_params() == [] and len(list(frozen.get_parameters())) == 2
    x = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    out = layer(Tensor(x))
    assert out.dtype == ms.float32
    np.testing.assert_allclose(out.asnumpy(), np_group_norm(x.astype(np.float64), 2),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "graph"])
def test_ops_group_norm_and_layer_norm_follow_numpy(mode):
    ms.set_context(mode=mode)
    x = RNG.standard_normal((2, 6, 4))
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    got = Call(lambda t, p, q: ops.group_norm(t, 3, p, q, 1e-3))(Tensor(x), Tensor(w), Tensor(b))
    np.testing.assert_allclose(got.asnumpy(), np_group_norm(x, 3, w, b, 1e-3), rtol=1e-10)
    np.testing.assert_allclose(Call(lambda t: ops.group_norm(t, 2))(Tensor(x)).asnumpy(),
                               np_group_norm(x, 2), rtol=1e-10, atol=1e-12)
    mean, var = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    lw, lb = RNG.standard_normal((6, 4)), RNG.standard_normal((6, 4))
    got = Call(lambda t, p, q: ops.layer_norm(t, (6, 4), p, q))(Tensor(x), Tensor(lw), Tensor(lb))
    np.testing.assert_allclose(got.asnumpy(), (x - mean) / np.sqrt(var + 1e-5) * lw + lb,
                               rtol=1e-10)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(Call(lambda t: ops.layer_norm(t, 4, eps=1e-3))(Tensor(x))
                               .asnumpy(), (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)


# -- convolutions ---------------------------------------------------------------------------
CONV1D_CASES = [   # kwargs of nn.Conv1d(in=4, out=6, kernel_size=3, ...)
    {},
    {"pad_mode": "valid", "stride": 2},
    {"pad_mode": "pad", "padding": 2, "dilation": 2, "has_bias": True},
    {"pad_mode": "same", "stride": 2, "group": 2, "has_bias": True},
]


def np_conv1d(x, w, stride=1, pad_mode="same", padding=0, dilation=1, group=1, bias=None):
    k = w.shape[-1]
    before, after = {"same": same_pads(x.shape[-1], k, stride, dilation),
                     "valid": (0, 0), "pad": (padding, padding)}[pad_mode]
    out = np_conv2d(x[:, :, None], w.reshape(w.shape[0], w.shape[1], 1, k), (1, stride),
                    (0, 0, before, after), (1, dilation), group)[:, :, 0]
    return out if bias is None else out + bias[:, None]


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "graph"])
@pytest.mark.parametrize("kw", CONV1D_CASES, ids=["default", "valid_stride", "pad_dilation_bias",
                                                  "same_stride_group_bias"])
def test_conv1d_layer_follows_numpy_and_finite_differences(kw, mode):
    ms.set_context(mode=mode)
    group = kw.get("group", 1)
    w = RNG.standard_normal((6, 4 // group, 1, 3))
    bias = RNG.standard_normal(6) if kw.get("has_bias") else None
    layer = nn.Conv1d(4, 6, 3, weight_init=Tensor(w), dtype=ms.float64,
                      bias_init=Tensor(bias if bias is not None else np.zeros(6)), **kw)
    assert tuple(layer.weight.shape) == (6, 4 // group, 1, 3)
    x = RNG.standard_normal((2, 4, 9))
    np_kw = {k: v for k, v in kw.items() if k != "has_bias"}
    ref = lambda a: np_conv1d(a, w[:, :, 0], bias=bias, **np_kw)
    np.testing.assert_allclose(layer(Tensor(x)).asnumpy(), ref(x), rtol=1e-10, atol=1e-12)
    grad = ms.grad(lambda t: ops.ReduceSum()(layer(t)))(Tensor(x)).asnumpy()
    np.testing.assert_allclose(grad, finite_differences(ref, x), rtol=1e-5, atol=1e-7)
    fn = Call(lambda t, v: ops.conv1d(t, v, None if bias is None else Tensor(bias),
                                      kw.get("stride", 1), kw.get("pad_mode", "valid"),
                                      kw.get("padding", 0), kw.get("dilation", 1), group))
    want = np_conv1d(x, w[:, :, 0], bias=bias, **{"pad_mode": "valid", **np_kw})
    np.testing.assert_allclose(fn(Tensor(x), Tensor(w[:, :, 0])).asnumpy(), want, rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "graph"])
@pytest.mark.parametrize("kw, pads", [
    ({}, (0, 0, 0, 0)),
    ({"pad_mode": "pad", "padding": 1, "stride": 2}, (1, 1, 1, 1)),
    ({"pad_mode": "pad", "padding": (1, 2)}, (1, 1, 2, 2)),
    ({"pad_mode": "pad", "padding": (0, 1, 2, 0), "dilation": 2, "groups": 2}, (0, 1, 2, 0)),
], ids=["valid", "pad_stride", "pad_hw", "pad4_dilation_groups"])
def test_ops_conv2d_follows_numpy_and_finite_differences(kw, pads, mode):
    ms.set_context(mode=mode)
    groups = kw.get("groups", 1)
    x, w, b = (RNG.standard_normal((2, 4, 6, 7)), RNG.standard_normal((6, 4 // groups, 3, 2)),
               RNG.standard_normal(6))
    fn = Call(lambda t, v, c: ops.conv2d(t, v, c, **kw))
    stride, dilation = kw.get("stride", 1), kw.get("dilation", 1)
    ref = lambda a, v: np_conv2d(a, v, (stride, stride), pads, (dilation, dilation),
                                 groups) + b[:, None, None]
    np.testing.assert_allclose(fn(Tensor(x), Tensor(w), Tensor(b)).asnumpy(), ref(x, w),
                               rtol=1e-10, atol=1e-12)
    dx, dw = ms.grad(lambda t, v: ops.ReduceSum()(fn(t, v, Tensor(b))), (0, 1))(
        Tensor(x), Tensor(w))
    np.testing.assert_allclose(dx.asnumpy(), finite_differences(lambda a: ref(a, w), x),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dw.asnumpy(), finite_differences(lambda v: ref(x, v), w),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "graph"])
def test_ops_dense_follows_numpy(mode):
    ms.set_context(mode=mode)
    w, b = RNG.standard_normal((5, 3)), RNG.standard_normal(5)
    for shape in ((4, 3), (2, 4, 3)):
        x = RNG.standard_normal(shape)
        got = Call(lambda t, v, c: ops.dense(t, v, c))(Tensor(x), Tensor(w), Tensor(b))
        np.testing.assert_allclose(got.asnumpy(), x @ w.T + b, rtol=1e-12)
        got = Call(lambda t, v: ops.dense(t, v))(Tensor(x), Tensor(w))
        np.testing.assert_allclose(got.asnumpy(), x @ w.T, rtol=1e-12)
    x = RNG.standard_normal((2, 4, 3))
    grad = ms.grad(lambda t, v: ops.ReduceSum()(ops.dense(t, v)), 1)(Tensor(x), Tensor(w))
    np.testing.assert_allclose(grad.asnumpy(), finite_differences(
        lambda v: x @ v.T, w), rtol=1e-6)


# -- dropout --------------------------------------------------------------------------------
def test_ops_dropout_masks_scales_and_seeds():
    x = Tensor(np.ones((64, 64), np.float32))
    assert ops.dropout(x, 0.5, training=False) is x
    assert ops.dropout(x, 0.0) is x
    out = ops.dropout(x, 0.25, seed=7).asnumpy()
    assert set(np.unique(out)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((out == 0).mean() - 0.25) < 0.03
    again = ops.dropout(x, 0.25, seed=7).asnumpy()
    assert not np.array_equal(out, again)              # the call counter moves on
    ms.set_seed(3)
    first = ops.dropout(x, 0.5).asnumpy()
    ms.set_seed(3)
    np.testing.assert_array_equal(ops.dropout(x, 0.5).asnumpy(), first)
    ms.set_context(mode=ms.GRAPH_MODE)
    compiled = Call(lambda t: ops.dropout(t, 0.5))(x).asnumpy()
    assert set(np.unique(compiled)) <= {0.0, 2.0} and 0 < (compiled == 0).mean() < 1


# -- errors ---------------------------------------------------------------------------------
X4 = Tensor(RNG.standard_normal((2, 4, 3)).astype(np.float32))
ERRORS = [
    (lambda: nn.GroupNorm(3, 4), ValueError,
     r"For 'GroupNorm', the 'num_channels' should be divisible by 'num_groups' 3, but got 4"),
    (lambda: nn.GroupNorm(0, 4), ValueError, r"For 'GroupNorm', the 'num_groups'"),
    (lambda: nn.GroupNorm(2, 4, eps=1), TypeError,
     r"For 'GroupNorm', the type of 'eps' should be float"),
    (lambda: nn.GroupNorm(2, 4, affine=1), TypeError, r"For 'GroupNorm', .*'affine'"),
    (lambda: nn.GroupNorm(2, 4, gamma_init=Tensor(np.ones(3))), ValueError,
     r"For 'GroupNorm', the shape of 'gamma_init' should be \[4\]"),
    (lambda: nn.GroupNorm(2, 6)(X4), ValueError,
     r"For 'GroupNorm', the 'x' should be \(N, C, \*\) with C = num_channels 6, but got "
     r"shape \[2, 4, 3\]"),
    (lambda: ops.group_norm(X4, 3), ValueError,
     r"For 'group_norm', the 'input' should be \(N, C, \*\) with C divisible by "
     r"'num_groups' 3, but got shape \[2, 4, 3\]"),
    (lambda: ops.group_norm(X4, 2, Tensor(np.ones(3, np.float32))), ValueError,
     r"For 'group_norm', the 'weight' should have shape \[C\] = \[4\], but got \[3\]"),
    (lambda: ops.group_norm(X4, 2, eps=0), TypeError, r"For 'group_norm', the type of 'eps'"),
    (lambda: nn.Conv1d(4, 6, (3,)), TypeError,
     r"For 'Conv1d', the type of 'kernel_size' should be int"),
    (lambda: nn.Conv1d(4, 6, 3, padding=-1, pad_mode="pad"), ValueError,
     r"For 'Conv1d', the 'padding'"),
    (lambda: nn.Conv1d(4, 6, 3, padding=1), ValueError,
     r"For 'Conv1d', the 'padding' should be 0 when 'pad_mode' is not 'pad', but got 1 with "
     r"pad_mode 'same'"),
    (lambda: nn.Conv1d(4, 6, 3, pad_mode="full"), ValueError, r"For 'Conv1d', the 'pad_mode'"),
    (lambda: nn.Conv1d(3, 6, 3, group=2), ValueError,
     r"For 'Conv1d', the 'in_channels' should be divisible by 'group'"),
    (lambda: nn.Conv1d(4, 6, 3)(Tensor(np.ones((2, 4, 3, 3), np.float32))), ValueError,
     r"For 'Conv1d', the 'x' should be 3-D \(N, C, L\), but got shape \[2, 4, 3, 3\]"),
    (lambda: ops.conv2d(X4, Tensor(np.ones((2, 4, 3), np.float32))), ValueError,
     r"For 'conv2d', the 'weight' should be 4-D"),
    (lambda: ops.conv2d(Tensor(np.ones((1, 4, 5, 5), np.float32)),
                        Tensor(np.ones((2, 4, 3, 3), np.float32)), padding=(1, 2, 3)),
     ValueError, r"For 'conv2d', the 'padding' should be an int, a tuple of 2 ints or of 4"),
    (lambda: ops.conv1d(X4, Tensor(np.ones((2, 4, 3, 1), np.float32))), ValueError,
     r"For 'conv1d', the 'input' and 'weight' should be 3-D"),
    (lambda: ops.dense(X4, Tensor(np.ones((5, 4), np.float32))), ValueError,
     r"For 'dense', the 'weight' should be \(out_channels, in_channels\) with in_channels "
     r"the last dim of 'input' shape \[2, 4, 3\], but got \[5, 4\]"),
    (lambda: ops.layer_norm(X4, (4,)), ValueError,
     r"For 'layer_norm', the 'normalized_shape' should be the last dims of 'input' shape "
     r"\[2, 4, 3\], but got \[4\]"),
    (lambda: ops.layer_norm(X4, 3, Tensor(np.ones(4, np.float32))), ValueError,
     r"For 'layer_norm', the 'weight' should have the normalized_shape \[3\], but got \[4\]"),
    (lambda: ops.dropout(X4, 1.0), ValueError,
     r"For 'dropout', the 'p' should be in \[0, 1\), but got 1.0"),
    (lambda: ops.dropout(X4, 1), TypeError, r"For 'dropout', the type of 'p'"),
    (lambda: ops.dropout(X4, training=None), TypeError, r"For 'dropout'.*'training'"),
    (lambda: ops.dropout(Tensor(np.ones(3, np.int32))), TypeError,
     r"For 'dropout', the 'input' should have a float dtype"),
]


@pytest.mark.parametrize("make, err, match", ERRORS)
def test_argument_errors_name_the_layer_or_function(make, err, match):
    with pytest.raises(err, match=match):
        make()


# -- Conv2dTranspose ------------------------------------------------------------------------
def np_conv2d_transpose(x, w, stride, dilation, pads, out_hw, groups=1):
    """Each input pixel scatters its kernel-weighted copy into the output (the definition),
    then the forward convolution's padding (top, left) is cropped away."""
    n, cin, h, wd = x.shape
    _, og, kh, kw = w.shape
    (sh, sw), (dh, dw), (oh, ow) = stride, dilation, out_hw
    top, left = pads
    full = np.zeros((n, og * groups, max((h - 1) * sh + dh * (kh - 1) + 1, top + oh),
                     max((wd - 1) * sw + dw * (kw - 1) + 1, left + ow)))
    per_group = cin // groups
    for ic in range(cin):
        g = ic // per_group
        for i in range(kh):
            for j in range(kw):
                full[:, g * og:(g + 1) * og, i * dh:i * dh + (h - 1) * sh + 1:sh,
                     j * dw:j * dw + (wd - 1) * sw + 1:sw] += \
                    x[:, ic][:, None] * w[ic, :, i, j][None, :, None, None]
    return full[:, :, top:top + oh, left:left + ow]


TRANSPOSE_CASES = [   # (kwargs, expected (H', W') of a (5, 6) input, (top, left) cropped)
    ({}, (5, 6), (1, 1)),
    ({"stride": 2}, (10, 12), (0, 0)),
    ({"stride": 2, "pad_mode": "valid"}, (11, 13), (0, 0)),
    ({"stride": (3, 2), "pad_mode": "valid", "kernel_size": 2}, (15, 12), (0, 0)),
    ({"stride": 2, "pad_mode": "pad", "padding": (1, 0, 2, 1), "dilation": 2}, (12, 12),
     (1, 2)),
    ({"group": 2, "has_bias": True, "stride": 2}, (10, 12), (0, 0)),
]


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "graph"])
@pytest.mark.parametrize("kw, out_hw, crop", TRANSPOSE_CASES,
                         ids=["same", "same_stride", "valid", "valid_short_kernel",
                              "pad_dilation", "group_bias"])
def test_conv2d_transpose_follows_numpy_and_finite_differences(kw, out_hw, crop, mode):
    ms.set_context(mode=mode)
    kw = dict(kw)
    k = kw.pop("kernel_size", 3)
    group = kw.get("group", 1)
    w = RNG.standard_normal((4, 6 // group, k, k))
    b = RNG.standard_normal(6) if kw.get("has_bias") else np.zeros(6)
    layer = nn.Conv2dTranspose(4, 6, k, weight_init=Tensor(w), bias_init=Tensor(b),
                               dtype=ms.float64, **kw)
    x = RNG.standard_normal((2, 4, 5, 6))
    stride = kw.get("stride", 1)
    stride = stride if isinstance(stride, tuple) else (stride, stride)
    dilation = (kw.get("dilation", 1),) * 2
    ref = lambda a, v: np_conv2d_transpose(a, v, stride, dilation, crop, out_hw, group) + \
        b[:, None, None]
    got = layer(Tensor(x)).asnumpy()
    assert got.shape == (2, 6) + out_hw
    np.testing.assert_allclose(got, ref(x, w), rtol=1e-10, atol=1e-12)
    loss = lambda t: ops.ReduceSum()(layer(t))
    np.testing.assert_allclose(ms.grad(loss)(Tensor(x)).asnumpy(),
                               finite_differences(lambda a: ref(a, w), x), rtol=1e-5, atol=1e-7)
    _, grads = ms.value_and_grad(loss, None, layer.trainable_params())(Tensor(x))
    np.testing.assert_allclose(grads[0].asnumpy(), finite_differences(lambda v: ref(x, v), w),
                               rtol=1e-5, atol=1e-7)


def test_conv2d_transpose_inverts_conv2d_shapes_and_is_its_adjoint():
    """<conv2d(y), x> == <y, conv2d_transpose(x)> for the same weight and geometry."""
    w = RNG.standard_normal((4, 6, 3, 3))
    x = RNG.standard_normal((1, 4, 5, 6))
    deconv = nn.Conv2dTranspose(4, 6, 3, stride=2, pad_mode="pad", padding=1,
                                weight_init=Tensor(w), dtype=ms.float64)
    y_hat = deconv(Tensor(x)).asnumpy()
    y = RNG.standard_normal(y_hat.shape)
    conv = ops.conv2d(Tensor(y), Tensor(w), stride=2, pad_mode="pad", padding=1).asnumpy()
    assert conv.shape == x.shape
    np.testing.assert_allclose((conv * x).sum(), (y * y_hat).sum(), rtol=1e-10)


def test_conv2d_transpose_errors():
    with pytest.raises(ValueError, match=r"For 'Conv2dTranspose', the 'out_channels' should "
                                         r"be divisible by 'group': 2, but got 3"):
        nn.Conv2dTranspose(4, 3, 3, group=2)
    with pytest.raises(ValueError, match=r"For 'Conv2dTranspose', every value of "
                                         r"'output_padding' should be a non-negative int less "
                                         r"than its stride \(2, 2\), but got 2"):
        nn.Conv2dTranspose(4, 3, 3, stride=2, pad_mode="pad", output_padding=2)
    with pytest.raises(ValueError, match=r"For 'Conv2dTranspose', the 'pad_mode'"):
        nn.Conv2dTranspose(4, 3, 3, pad_mode="full")
    with pytest.raises(ValueError, match=r"For 'Conv2dTranspose', the 'padding' should be 0 when"):
        nn.Conv2dTranspose(4, 3, 3, padding=1)
    with pytest.raises(ValueError, match=r"For 'Conv2dTranspose', the 'x' should be \(N, "
                                         r"in_channels, H, W\) with in_channels 4, but got "
                                         r"shape \[1, 3, 5, 5\]"):
        nn.Conv2dTranspose(4, 3, 3)(Tensor(np.ones((1, 3, 5, 5), np.float32)))
    with pytest.raises(ValueError, match=r"For 'Conv2dTranspose', the output height and width "
                                         r"should be >= 1"):
        nn.Conv2dTranspose(4, 3, 3, pad_mode="pad", padding=3)(
            Tensor(np.ones((1, 4, 1, 1), np.float32)))


def test_layer_functions_name_a_parameter_of_another_dtype():
    x = Tensor(np.ones((2, 4, 3), np.float32))
    f64 = Tensor(np.ones(3))
    for call, arg in ((lambda: ops.dense(x, Tensor(np.ones((5, 3)))), "weight"),
                      (lambda: ops.layer_norm(x, 3, f64), "weight"),
                      (lambda: ops.group_norm(x, 2, None, Tensor(np.ones(4))), "bias"),
                      (lambda: ops.conv1d(x, Tensor(np.ones((2, 4, 1)))), "weight")):
        with pytest.raises(TypeError, match=rf"the '{arg}' should have the dtype of 'input' "
                                            r"Float32, but got Float64"):
            call()
