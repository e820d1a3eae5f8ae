"""Conv2D, MaxPool, AvgPool, PReLU: inference and its errors, kernels against loop-by-loop
numpy references, backward rules against central finite differences in float64, and the
sharding rules' refusals on a simulated world."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.primitives.conv_ops import Conv2DBackpropFilter, Conv2DBackpropInput
from msops.primitives.pool_ops import AvgPoolGrad, MaxPoolGrad

RNG = np.random.default_rng(19)


def r(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


# -- references: one output pixel at a time ----------------------------------------------------
def same_pads(size, k, s, d):
    n = -(-size // s)
    total = max(0, (n - 1) * s + d * (k - 1) + 1 - size)
    return total // 2, total - total // 2


def pads_of(x_shape, kernel, stride, dilation, pad_mode, pad):
    if pad_mode == "same":
        return same_pads(x_shape[2], kernel[0], stride[0], dilation[0]) + \
            same_pads(x_shape[3], kernel[1], stride[1], dilation[1])
    if pad_mode == "pad":
        return (pad,) * 4 if isinstance(pad, int) else tuple(pad)
    return (0, 0, 0, 0)


def conv_ref(x, w, stride=(1, 1), dilation=(1, 1), pad_mode="valid", pad=0, group=1):
    kh, kw = w.shape[2:]
    t, b, l, rr = pads_of(x.shape, (kh, kw), stride, dilation, pad_mode, pad)
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, rr)))
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    o, cg = w.shape[0], w.shape[1]
    og = o // group
    out = np.zeros((x.shape[0], o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            for oc in range(o):
                gi = oc // og
                patch = xp[:, gi * cg:(gi + 1) * cg,
                           i * stride[0]:i * stride[0] + dilation[0] * (kh - 1) + 1:dilation[0],
                           j * stride[1]:j * stride[1] + dilation[1] * (kw - 1) + 1:dilation[1]]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    return out


def pool_ref(x, k, s, pad_mode, how):
    t, b, l, rr = pads_of(x.shape, (k, k), (s, s), (1, 1), pad_mode.lower(), 0)
    h, w = x.shape[2:]
    oh = (h + t + b - k) // s + 1
    ow = (w + l + rr - k) // s + 1
    out = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s - t, j * s - l
            patch = x[:, :, max(r0, 0):r0 + k, max(c0, 0):c0 + k]     # inside x only
            out[:, :, i, j] = patch.max(axis=(2, 3)) if how == "max" else \
                patch.mean(axis=(2, 3))
    return out


CONV_CASES = [  # (x shape, out_channel, kernel, attrs)
    ((2, 3, 7, 6), 4, 3, dict()),
    ((2, 3, 7, 6), 4, (3, 2), dict(pad_mode="same")),
    ((1, 2, 8, 9), 3, 3, dict(pad_mode="same", stride=2)),
    ((2, 2, 9, 8), 2, 3, dict(pad_mode="pad", pad=(1, 2, 0, 1), stride=(2, 1))),
    ((1, 3, 9, 9), 2, 2, dict(pad_mode="same", dilation=2)),
    ((2, 4, 6, 6), 6, 3, dict(pad_mode="pad", pad=1, group=2)),
    ((1, 4, 5, 5), 4, 3, dict(pad_mode="same", group=4, stride=(1, 1, 2, 2))),
]


def conv_call(o, k, attrs):
    return lambda x, w: ops.Conv2D(o, k, **attrs)(x, w)


def w_shape(x_shape, o, k, attrs):
    kh, kw = (k, k) if isinstance(k, int) else k
    return (o, x_shape[1] // attrs.get("group", 1), kh, kw)


def ref_attrs(attrs):
    s = attrs.get("stride", 1)
    s = (s, s) if isinstance(s, int) else tuple(s[-2:])
    d = attrs.get("dilation", 1)
    d = (d, d) if isinstance(d, int) else tuple(d[-2:])
    return dict(stride=s, dilation=d, pad_mode=attrs.get("pad_mode", "valid"),
                pad=attrs.get("pad", 0), group=attrs.get("group", 1))


@pytest.mark.parametrize("x_shape,o,k,attrs", CONV_CASES)
def test_conv2d_kernel_equals_the_loop_reference(x_shape, o, k, attrs):
    x, w = r(*x_shape, dtype=np.float32), r(*w_shape(x_shape, o, k, attrs), dtype=np.float32)
    got = ops.Conv2D(o, k, **attrs)(Tensor(x), Tensor(w))
    want = conv_ref(x.astype(np.float64), w.astype(np.float64), **ref_attrs(attrs))
    assert got.shape == want.shape and got.dtype == ms.float32
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-4)


def test_conv2d_float16_computes_in_float32():
    x, w = r(1, 2, 5, 5), r(3, 2, 3, 3)
    got = ops.Conv2D(3, 3)(Tensor(x.astype(np.float16)), Tensor(w.astype(np.float16)))
    assert got.dtype == ms.float16
    want = conv_ref(x.astype(np.float16).astype(np.float64), w.astype(np.float16).astype(np.float64))
    np.testing.assert_allclose(got.asnumpy().astype(np.float64), want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("k,s,mode", [(2, 2, "valid"), (3, 2, "same"), (3, 1, "VALID"),
                                      (2, 3, "SAME")])
@pytest.mark.parametrize("how", ["max", "avg"])
def test_pools_equal_the_loop_reference(k, s, mode, how):
    x = r(2, 3, 7, 8, dtype=np.float32)
    prim = (ops.MaxPool if how == "max" else ops.AvgPool)(kernel_size=k, strides=s, pad_mode=mode)
    got = prim(Tensor(x))
    want = pool_ref(x.astype(np.float64), k, s, mode, how)
    assert got.shape == want.shape and prim.pad_mode == mode.upper()
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_pool_accepts_mindspore_nchw_tuples():
    x = r(1, 1, 6, 6, dtype=np.float32)
    got = ops.MaxPool(kernel_size=(1, 1, 2, 3), strides=(1, 1, 2, 3))(Tensor(x))
    assert got.shape == (1, 1, 3, 2)


@pytest.mark.parametrize("x_shape,w_size", [((2, 3, 4, 4), 3), ((2, 3, 4, 4), 1), ((5, 4), 4),
                                            ((6,), 1)])
def test_prelu_equals_numpy(x_shape, w_size):
    x, w = r(*x_shape, dtype=np.float32), r(w_size, dtype=np.float32)
    slope = w.reshape((-1,) + (1,) * (len(x_shape) - 2)) if w_size > 1 else w[0]
    got = ops.PReLU()(Tensor(x), Tensor(w))
    np.testing.assert_allclose(got.asnumpy(), np.where(x > 0, x, x * slope), rtol=1e-6)


# -- inference errors ------------------------------------------------------------------------
@pytest.mark.parametrize("make,x,w,err,match", [
    (lambda: ops.Conv2D(4, 3), (2, 3, 7, 7), (4, 2, 3, 3), ValueError,
     r"For 'Conv2D', the 'weight shape' should be \(out_channel, C / group, kernel_h, "
     r"kernel_w\) = \(4, 3, 3, 3\) for x shape \(2, 3, 7, 7\).*but got \(4, 2, 3, 3\)"),
    (lambda: ops.Conv2D(4, 3), (2, 3, 7), (4, 3, 3, 3), ValueError,
     r"For 'Conv2D', the rank of 'x' should be 4, but got shape \[2, 3, 7\]"),
    (lambda: ops.Conv2D(4, 5), (1, 3, 4, 7), (4, 3, 5, 5), ValueError,
     r"For 'Conv2D', the input height \(padded\) should be >= the kernel's extent 5"),
    (lambda: ops.Conv2D(4, 3, dilation=3), (1, 3, 6, 9), (4, 3, 3, 3), ValueError,
     r"kernel's extent 7 \(kernel 3, dilation 3\), but got 6"),
])
def test_conv2d_shape_errors(make, x, w, err, match):
    with pytest.raises(err, match=match):
        make()(Tensor(np.zeros(x, np.float32)), Tensor(np.zeros(w, np.float32)))


def test_conv2d_dtype_errors():
    with pytest.raises(TypeError, match=r"For 'Conv2D', the 'weight' should have the same dtype "
                                        r"as 'x': Float32, but got Float64"):
        ops.Conv2D(1, 1)(Tensor(np.zeros((1, 1, 2, 2), np.float32)),
                         Tensor(np.zeros((1, 1, 1, 1), np.float64)))
    with pytest.raises(TypeError, match=r"For 'Conv2D', the 'x'"):
        ops.Conv2D(1, 1)(Tensor(np.zeros((1, 1, 2, 2), np.int32)),
                         Tensor(np.zeros((1, 1, 1, 1), np.int32)))


@pytest.mark.parametrize("kw,match", [
    (dict(pad=1), r"the 'pad' should be 0 when 'pad_mode' is not 'pad', but got pad=1 with "
                  r"pad_mode='valid'"),
    (dict(pad_mode="full"), r"the 'pad_mode' should be"),
    (dict(mode=2), r"the 'mode' should be 1"),
    (dict(kernel_size=(3, 0)), r"every value of 'kernel_size' should be a positive int"),
    (dict(kernel_size=(1, 1, 3, 3)), r"the 'kernel_size' should be an int or a tuple of 2 ints"),
    (dict(stride=(2, 2, 1)), r"the 'stride' should be an int, a tuple of 2 ints or "
                             r"\(1, 1, h, w\), but got \(2, 2, 1\)"),
    (dict(pad_mode="pad", pad=(1, 2)), r"the 'pad' should be an int or a tuple of 4 ints"),
    (dict(pad_mode="pad", pad=-1), r"every value of 'pad' should be a non-negative int"),
    (dict(group=3), r"the 'out_channel' should be divisible by 'group': 3, but got 4"),
    (dict(data_format="NHWC"), r"the 'data_format' should be 'NCHW' \(msops implements no "
                               r"other layout\), but got 'NHWC'"),
])
def test_conv2d_attribute_errors(kw, match):
    args = dict(out_channel=4, kernel_size=3)
    args.update(kw)
    with pytest.raises(ValueError, match=r"For 'Conv2D', " + match):
        ops.Conv2D(**args)


def test_pool_and_prelu_errors():
    with pytest.raises(ValueError, match=r"For 'MaxPool', the 'pad_mode' should be"):
        ops.MaxPool(2, 2, pad_mode="pad")
    with pytest.raises(ValueError, match=r"For 'AvgPool', the rank of 'x' should be 4"):
        ops.AvgPool(2, 2)(Tensor(np.zeros((2, 4, 4), np.float32)))
    with pytest.raises(ValueError, match=r"For 'MaxPool', the input width \(padded\) should be "
                                         r">= the kernel's extent 3"):
        ops.MaxPool(3)(Tensor(np.zeros((1, 1, 4, 2), np.float32)))
    with pytest.raises(ValueError, match=r"For 'PReLU', the 'weight shape' should be \(1,\) or "
                                         r"\(C,\) = \(3,\) for x shape \(2, 3, 4\), but got \(2,\)"):
        ops.PReLU()(Tensor(np.zeros((2, 3, 4), np.float32)), Tensor(np.zeros(2, np.float32)))


def test_grad_ops_check_their_dout():
    with pytest.raises(ValueError, match=r"For 'Conv2DBackpropInput', the 'dout shape' should be "
                                         r"Conv2D's output shape \(1, 2, 3, 3\), but got"):
        Conv2DBackpropInput(2, 3)(Tensor(np.zeros((1, 2, 4, 4))), Tensor(np.zeros((2, 1, 3, 3))),
                                  (1, 1, 5, 5))


# -- backward against finite differences (float64) -----------------------------------------------
def check_gradients(call, args, rtol=1e-6, eps=1e-6):
    """ms.grad of sum(call(*args) * R) (eager and compiled) against central differences."""
    out = call(*[Tensor(a) for a in args])
    weights = r(*out.shape)

    def loss(*xs):
        return ops.ReduceSum()(ops.Mul()(call(*xs), Tensor(weights)), ())

    tensors = [Tensor(a) for a in args]
    f = ms.grad(loss, tuple(range(len(args))))
    ms.set_context(mode=ms.PYNATIVE_MODE)
    eager = f(*tensors)
    ms.set_context(mode=ms.GRAPH_MODE)
    compiled = f(*tensors)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    for i, a in enumerate(args):
        want = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            moved = [b.copy() for b in args]
            moved[i][idx] += eps
            up = loss(*[Tensor(b) for b in moved]).asnumpy()
            moved[i][idx] -= 2 * eps
            down = loss(*[Tensor(b) for b in moved]).asnumpy()
            want[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(eager[i].asnumpy(), compiled[i].asnumpy(), rtol=1e-12,
                                   atol=1e-14)
        np.testing.assert_allclose(eager[i].asnumpy(), want, rtol=rtol, atol=rtol * 1e-2,
                                   err_msg=f"input {i}")


@pytest.mark.parametrize("x_shape,o,k,attrs", [
    ((2, 2, 5, 4), 3, 3, dict()),
    ((1, 2, 5, 5), 2, (2, 3), dict(pad_mode="same", stride=2)),
    ((1, 2, 6, 5), 2, 2, dict(pad_mode="pad", pad=(1, 0, 2, 1), dilation=2)),
    ((1, 4, 4, 4), 2, 3, dict(pad_mode="same", group=2)),
])
def test_conv2d_backward_matches_finite_differences(x_shape, o, k, attrs):
    check_gradients(conv_call(o, k, attrs), [r(*x_shape), r(*w_shape(x_shape, o, k, attrs))])


def test_conv2d_backprop_ops_differentiate_too():
    """The backward ops' own rules (Conv2D is bilinear: each transpose is a sibling op)."""
    attrs = dict(out_channel=2, kernel_size=3, pad_mode="same", stride=2)
    check_gradients(lambda d, w: Conv2DBackpropInput(**attrs)(d, w, (1, 2, 5, 5)),
                    [r(1, 2, 3, 3), r(2, 2, 3, 3)])
    check_gradients(lambda d, x: Conv2DBackpropFilter(**attrs)(d, x, (2, 2, 3, 3)),
                    [r(1, 2, 3, 3), r(1, 2, 5, 5)])


@pytest.mark.parametrize("k,s,mode", [(2, 2, "valid"), (3, 2, "same"), (2, 1, "same")])
def test_pool_backward_matches_finite_differences(k, s, mode):
    x = RNG.permutation(2 * 2 * 5 * 5).reshape(2, 2, 5, 5) / 10.0    # no ties: max is smooth
    check_gradients(lambda t: ops.MaxPool(k, s, mode)(t), [x])
    check_gradients(lambda t: ops.AvgPool(k, s, mode)(t), [r(2, 2, 5, 5)])
    check_gradients(lambda d: AvgPoolGrad(k, s, mode)(d, (1, 2, 5, 5)),
                    [r(*ops.AvgPool(k, s, mode)(Tensor(r(1, 2, 5, 5))).shape)])


@pytest.mark.parametrize("x_shape,w_size", [((2, 3, 2, 2), 3), ((3, 4), 1)])
def test_prelu_backward_matches_finite_differences(x_shape, w_size):
    x = np.sign(r(*x_shape)) * (np.abs(r(*x_shape)) + 0.3)
    check_gradients(lambda a, w: ops.PReLU()(a, w), [x, r(w_size)])


# -- layers ---------------------------------------------------------------------------------
def test_layers_match_their_ops():
    x = r(2, 3, 6, 6, dtype=np.float32)
    conv = nn.Conv2d(3, 4, 3, has_bias=True, bias_init="ones")
    assert conv.weight.shape == (4, 3, 3, 3) and conv.pad_mode == "same"
    want = conv_ref(x.astype(np.float64), conv.weight.asnumpy().astype(np.float64),
                    pad_mode="same") + 1
    np.testing.assert_allclose(conv(Tensor(x)).asnumpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(nn.MaxPool2d(2, 2)(Tensor(x)).asnumpy(),
                               pool_ref(x, 2, 2, "valid", "max"), rtol=1e-6)
    np.testing.assert_allclose(nn.AvgPool2d(3, 1, "same")(Tensor(x)).asnumpy(),
                               pool_ref(x, 3, 1, "same", "avg"), rtol=1e-5)
    prelu = nn.PReLU(3, 0.1)
    assert prelu.w.shape == (3,)
    np.testing.assert_allclose(prelu(Tensor(x)).asnumpy(), np.where(x > 0, x, 0.1 * x),
                               rtol=1e-6)


def test_conv2d_layer_arguments():
    conv = nn.Conv2d(4, 8, (3, 5), stride=2, pad_mode="pad", padding=(1, 1, 2, 2), dilation=1,
                     group=2)
    assert conv.weight.shape == (8, 2, 3, 5) and not conv.has_bias
    assert conv(Tensor(np.zeros((1, 4, 9, 9), np.float32))).shape == (1, 8, 5, 5)
    with pytest.raises(ValueError, match=r"For 'Conv2d', the 'in_channels' should be divisible "
                                         r"by 'group': 3, but got 4"):
        nn.Conv2d(4, 6, 3, group=3)


# -- sharding rules' refusals (simulated world) ----------------------------------------------
class ConvNet(nn.Cell):
    def __init__(self, strategy, group=1, k=3, **attrs):
        super().__init__()
        attrs.setdefault("pad_mode", "same")
        self.conv = ops.Conv2D(4, k, group=group, **attrs).shard(strategy)
        self.w = Parameter(Tensor(np.ones((4, 4 // group, k, k), np.float32)), name="w")

    def construct(self, x):
        return self.conv(x, self.w)


class PoolNet(nn.Cell):
    def __init__(self, strategy, prim=None):
        super().__init__()
        self.pool = (prim or ops.MaxPool(2, 2)).shard(strategy)

    def construct(self, x):
        return self.pool(x)


@pytest.mark.parametrize("make,match", [
    (lambda: ConvNet(((1, 1, 2, 1), (1, 1, 1, 1)), stride=2),
     r"For 'Conv2D', input 0 dim 2 cannot be split \(a window straddles the slices' border, "
     r"which needs the neighbours' rows \(a halo exchange.*H may split only when the output "
     r"keeps x's height \(stride 1 and 'same' padding\)"),
    (lambda: ConvNet(((1, 1, 2, 1), (1, 1, 1, 1)), pad_mode="valid"),
     r"For 'Conv2D', input 0 dim 2 cannot be split"),
    (lambda: ConvNet(((1, 1, 1, 2), (1, 1, 1, 1))), r"For 'Conv2D', input 0 dim 3 cannot be split"),
    (lambda: ConvNet(((1, 1, 4, 1), (1, 1, 1, 1)), k=7),
     r"For 'Conv2D', each rank's slice of H should hold at least the halo rows its neighbours "
     r"need \(3\), but got 2 rows \(x shape \(4, 4, 8, 8\) split 4 ways\)"),
    (lambda: ConvNet(((1, 1, 1, 1), (1, 1, 2, 1)), k=2),
     r"For 'Conv2D', input 1 dim 2 cannot be split \(it is the kernel's height\)"),
    (lambda: ConvNet(((1, 1, 1, 1), (2, 1, 1, 1)), group=2),
     r"For 'Conv2D', input 1 dim 0 cannot be split \(it would cut Conv2D's 2 channel groups\)"),
    (lambda: ConvNet(((1, 2, 1, 1), (1, 1, 1, 1))),
     r"For 'Conv2D', the strategies of input 0 dim 1 and input 1 dim 1 should agree on the "
     r"shared input-channel dim 'c'"),
    (lambda: PoolNet(((1, 1, 1, 2),), ops.MaxPool(3, 3)),
     r"For 'MaxPool', input 0 dim 3 cannot be split .*H or W may split only when the windows "
     r"tile it \(stride == kernel, no padding\)"),
    (lambda: PoolNet(((1, 1, 1, 2),), ops.AvgPool(3, 2, "same")),
     r"For 'AvgPool', input 0 dim 3 cannot be split"),
    # windows tile H, but 8 / 4 = 2 output rows do not split 4 ways (the pass's output check)
    (lambda: PoolNet(((1, 1, 4, 1),), ops.MaxPool(4, 4)),
     r"For 'MaxPool', output 0 dim 2 of size 2 .* should be divisible by the split 4"),
])
def test_spatial_and_group_splits_are_refused(sim, make, match):
    sim(4, 1)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=4,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(ValueError, match=match):
            make().compile(Tensor(np.ones((4, 4, 8, 8), np.float32)))
    finally:
        ms.reset_auto_parallel_context()


def test_height_split_plans_a_halo_exchange_then_an_unpadded_conv(sim):
    sim(4, 1)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=4,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        graph = ConvNet(((1, 1, 4, 1), (1, 1, 1, 1))).compile(
            Tensor(np.ones((4, 4, 8, 8), np.float32)))
    finally:
        ms.reset_auto_parallel_context()
    halo = [n for n in graph.nodes if n.is_communication]
    assert [n.op for n in halo] == ["NeighborExchangeV2"]
    assert halo[0].prim.send_rank_ids == [0, -1, -1, -1, 2, -1, -1, -1]     # rank 1 of 4
    assert halo[0].shape == (4, 4, 4, 8)                                    # 2 rows + 1 + 1
    conv = [n for n in graph.nodes if n.op == "Conv2D"][0]
    assert conv.prim.pad_mode == "pad" and conv.prim.pad == (0, 0, 1, 1)
    assert graph.outputs[0].shape == (4, 4, 2, 8)


def test_out_channel_split_plans_a_local_conv_of_its_channels(sim):
    sim(4, 1)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=4,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        graph = ConvNet(((2, 1, 1, 1), (2, 1, 1, 1))).compile(Tensor(np.ones((4, 4, 8, 8),
                                                                             np.float32)))
    finally:
        ms.reset_auto_parallel_context()
    convs = [n for n in graph.nodes if n.op == "Conv2D"]
    assert len(convs) == 1 and convs[0].prim.out_channel == 2
    assert graph.outputs[0].shape == (2, 2, 8, 8)
    assert not [n for n in graph.nodes if n.is_communication]


# -- the internal backward ops keep the kernel contract too ------------------------------------
@pytest.mark.parametrize("prim,args", [
    (Conv2DBackpropInput(2, 3, pad_mode="same", stride=2), (r(1, 2, 3, 3), r(2, 2, 3, 3),
                                                             (1, 2, 5, 5))),
    (Conv2DBackpropFilter(2, 3, pad_mode="same", stride=2), (r(1, 2, 3, 3), r(1, 2, 5, 5),
                                                              (2, 2, 3, 3))),
    (AvgPoolGrad(3, 2, "same"), (r(1, 2, 3, 3), (1, 2, 5, 5))),
    (MaxPoolGrad(2, 2),
     (r(1, 2, 4, 4), r(1, 2, 2, 2))),
], ids=lambda v: getattr(v, "name", ""))
def test_backward_ops_write_into_the_given_out(prim, args):
    saved = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    fresh = prim.kernel(*args)
    shape, dtype = prim.infer([list(a.shape) if isinstance(a, np.ndarray) else a for a in args],
                              [ms.float64 if isinstance(a, np.ndarray) else a for a in args])
    assert list(fresh.shape) == shape and fresh.dtype == np.float64 and dtype == ms.float64
    out = np.full_like(fresh, 3)
    assert prim.kernel(*args, out=out) is out
    np.testing.assert_array_equal(out, fresh)
    for a, b in zip(args, saved):
        np.testing.assert_array_equal(a, b)
