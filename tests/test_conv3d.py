"""Conv3D, Conv3DTranspose and the transposed layers (nn.Conv3d, nn.Conv3dTranspose,
nn.Conv1dTranspose, nn.Conv2dTranspose's output_padding; ops.conv3d, conv3d_transpose,
conv_transpose2d): kernels against loop-by-loop numpy references written here (eager and
compiled), backward rules against central finite differences in float64, their errors and
the sharding rules' refusals on a simulated world."""
import itertools

import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.primitives.conv_ops import Conv3DBackpropFilter, Conv3DBackpropInput
from numeric import finite_differences
from test_functional_forms import eager_and_compiled
from test_mint_api import both_modes

RNG = np.random.default_rng(23)


def r(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def as3(v, n=3):
    return (v,) * n if isinstance(v, int) else tuple(v[-n:])


def fwd_pads(sizes, kernel, stride, dilation, pad_mode, pad):
    """(before, after) per dim of the forward convolution, MindSpore's rules."""
    n = len(sizes)
    if pad_mode == "pad":
        return (pad,) * (2 * n) if isinstance(pad, int) else tuple(pad)
    out = []
    for size, k, s, d in zip(sizes, kernel, stride, dilation):
        if pad_mode == "same":
            total = max(0, (-(-size // s) - 1) * s + d * (k - 1) + 1 - size)
            out += [total // 2, total - total // 2]
        else:
            out += [0, 0]
    return tuple(out)


# -- references: one output position at a time ---------------------------------------------
def conv_ref(x, w, stride, dilation, pads, group=1):
    n = x.ndim - 2
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(zip(pads[::2], pads[1::2])))
    kernel = w.shape[2:]
    outs = [(xp.shape[2 + k] - dilation[k] * (kernel[k] - 1) - 1) // stride[k] + 1
            for k in range(n)]
    o, cg = w.shape[:2]
    og = o // group
    out = np.zeros((x.shape[0], o) + tuple(outs))
    for pos in np.ndindex(*outs):
        for oc in range(o):
            g = oc // og
            idx = tuple(slice(p * s, p * s + d * (k - 1) + 1, d)
                        for p, s, d, k in zip(pos, stride, dilation, kernel))
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + idx]
            out[(slice(None), oc) + pos] = (patch * w[oc]).sum(axis=tuple(range(1, n + 2)))
    return out


def transpose_ref(x, w, stride, dilation, pads, out_sizes, group=1):
    """Each input element scatters x * w over the output (in padded coordinates), then the
    padding before is cut off: the definition of the transposed convolution."""
    n = x.ndim - 2
    cig, cog = x.shape[1] // group, w.shape[1]
    kernel = w.shape[2:]
    full = [max((x.shape[2 + k] - 1) * stride[k] + dilation[k] * (kernel[k] - 1) + 1,
                pads[2 * k] + out_sizes[k]) for k in range(n)]
    y = np.zeros((x.shape[0], cog * group) + tuple(full))
    for pos in np.ndindex(*x.shape[2:]):
        for kpos in np.ndindex(*kernel):
            at = tuple(p * s + q * d for p, s, q, d in zip(pos, stride, kpos, dilation))
            for ic in range(x.shape[1]):
                g = ic // cig
                y[(slice(None), slice(g * cog, (g + 1) * cog)) + at] += \
                    x[(slice(None), ic) + pos][:, None] * w[(ic, slice(None)) + kpos]
    crop = tuple(slice(pads[2 * k], pads[2 * k] + out_sizes[k]) for k in range(n))
    return y[(slice(None), slice(None)) + crop]


CONV_CASES = [  # (x shape, out_channel, kernel, attrs)
    ((2, 3, 5, 6, 4), 4, 3, dict()),
    ((1, 2, 5, 5, 6), 4, (3, 2, 3), dict(pad_mode="same", stride=2)),
    ((2, 4, 6, 5, 5), 4, 2, dict(pad_mode="pad", pad=(1, 0, 2, 1, 0, 1), stride=(2, 1, 1),
                                 dilation=(1, 2, 1), group=2)),
    ((1, 2, 7, 6, 5), 2, 3, dict(pad_mode="same", dilation=2, stride=(1, 1, 2, 1, 2))),
]


def ref_of(x_shape, k, attrs):
    kernel = as3(k)
    stride, dilation = as3(attrs.get("stride", 1)), as3(attrs.get("dilation", 1))
    pads = fwd_pads(x_shape[2:], kernel, stride, dilation, attrs.get("pad_mode", "valid"),
                    attrs.get("pad", 0))
    return kernel, stride, dilation, pads


@pytest.mark.parametrize("x_shape,o,k,attrs", CONV_CASES)
def test_conv3d_equals_the_loop_reference_eager_and_compiled(x_shape, o, k, attrs):
    kernel, stride, dilation, pads = ref_of(x_shape, k, attrs)
    group = attrs.get("group", 1)
    x = r(*x_shape, dtype=np.float32)
    w = r(o, x_shape[1] // group, *kernel, dtype=np.float32)
    want = conv_ref(x.astype(np.float64), w.astype(np.float64), stride, dilation, pads, group)
    for got in eager_and_compiled(lambda a, b: ops.Conv3D(o, k, **attrs)(a, b),
                                  Tensor(x), Tensor(w)):
        assert got.shape == want.shape and got.dtype == ms.float32
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-4)


TRANSPOSE_CASES = [  # (x shape, out_channel, kernel, attrs)
    ((1, 2, 2, 3, 2), 4, 3, dict(stride=2, pad_mode="pad", pad=1, output_padding=1)),
    ((2, 2, 3, 2, 2), 3, (2, 3, 2), dict(stride=(1, 2, 1))),
    ((1, 4, 2, 3, 3), 2, 3, dict(pad_mode="same", stride=2, group=2)),
    ((1, 2, 3, 2, 3), 2, 2, dict(pad_mode="pad", pad=(0, 1, 1, 0, 1, 1), dilation=2,
                                 stride=3, output_padding=(2, 0, 1))),
]


def transpose_geometry(x_shape, k, attrs):
    """(kernel, stride, dilation, pads, out sizes) as MindSpore's Conv3dTranspose defines
    them: the forward convolution's padding of the output."""
    kernel = as3(k)
    stride, dilation = as3(attrs.get("stride", 1)), as3(attrs.get("dilation", 1))
    extra = as3(attrs.get("output_padding", 0))
    mode = attrs.get("pad_mode", "valid")
    outs = []
    for k_, (size, kk, s, d, e) in enumerate(zip(x_shape[2:], kernel, stride, dilation, extra)):
        span = d * (kk - 1) + 1
        if mode == "same":
            outs.append(size * s)
        elif mode == "valid":
            outs.append(size * s + max(span - s, 0) + e)
        else:
            pad = as3(attrs["pad"], 6) if not isinstance(attrs["pad"], int) else (attrs["pad"],) * 6
            outs.append((size - 1) * s + span - pad[2 * k_] - pad[2 * k_ + 1] + e)
    pads = fwd_pads(outs, kernel, stride, dilation, mode, attrs.get("pad", 0))
    return kernel, stride, dilation, pads, outs


@pytest.mark.parametrize("x_shape,o,k,attrs", TRANSPOSE_CASES)
def test_conv3d_transpose_equals_the_scatter_reference(x_shape, o, k, attrs):
    kernel, stride, dilation, pads, outs = transpose_geometry(x_shape, k, attrs)
    group = attrs.get("group", 1)
    x = r(*x_shape, dtype=np.float32)
    w = r(x_shape[1], o // group, *kernel, dtype=np.float32)
    want = transpose_ref(x.astype(np.float64), w.astype(np.float64), stride, dilation, pads,
                         outs, group)
    op = ops.Conv3DTranspose(x_shape[1], o, k, **attrs)
    for got in eager_and_compiled(lambda a, b: op(a, b), Tensor(x), Tensor(w)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-4)


def test_functional_forms_equal_the_references_eager_and_compiled():
    x, w, b = r(2, 4, 4, 5, 3), r(6, 2, 3, 2, 3), r(6)
    want = conv_ref(x, w, (2, 1, 1), (1, 1, 1), (1, 1, 0, 0, 1, 1), group=2) + \
        b[:, None, None, None]
    for got in eager_and_compiled(lambda a, c, d: ops.conv3d(a, c, d, (2, 1, 1), "pad",
                                                             (1, 0, 1), groups=2),
                                  Tensor(x), Tensor(w), Tensor(b)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10)
    xt, wt = r(1, 2, 2, 3, 2), r(2, 3, 2, 2, 3)
    want = transpose_ref(xt, wt, (2, 2, 1), (1, 1, 1), (0,) * 6, (4, 6, 4))
    for got in eager_and_compiled(lambda a, c: ops.conv3d_transpose(a, c, stride=(2, 2, 1)),
                                  Tensor(xt), Tensor(wt)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10)
    x2, w2, b2 = r(2, 4, 3, 4), r(4, 1, 3, 2), r(2)
    want = transpose_ref(x2, w2, (2, 1), (1, 2), (1, 1, 0, 0), (6, 6), group=2) + \
        b2[:, None, None]
    for got in eager_and_compiled(lambda a, c, d: ops.conv_transpose2d(
            a, c, d, stride=(2, 1), padding=(1, 0), output_padding=(1, 0), groups=2,
            dilation=(1, 2)), Tensor(x2), Tensor(w2), Tensor(b2)):
        assert got.shape == (2, 2, 6, 6)
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10)


def test_layers_equal_the_references():
    x = r(2, 3, 4, 5, 4, dtype=np.float32)
    conv = nn.Conv3d(3, 4, (3, 2, 3), stride=(1, 2, 1), has_bias=True, bias_init="normal")
    assert conv.weight.shape == (4, 3, 3, 2, 3) and conv.pad_mode == "same"
    w, b = conv.weight.asnumpy().astype(np.float64), conv.bias.asnumpy().astype(np.float64)
    pads = fwd_pads((4, 5, 4), (3, 2, 3), (1, 2, 1), (1, 1, 1), "same", 0)
    want = conv_ref(x.astype(np.float64), w, (1, 2, 1), (1, 1, 1), pads) + \
        b[:, None, None, None]
    for got in eager_and_compiled(conv, Tensor(x)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-4)

    deconv = nn.Conv3dTranspose(3, 4, 3, stride=2, pad_mode="pad", padding=1, output_padding=1,
                                group=1, has_bias=True, bias_init="normal")
    assert deconv.weight.shape == (3, 4, 3, 3, 3)
    w, b = deconv.weight.asnumpy().astype(np.float64), deconv.bias.asnumpy().astype(np.float64)
    want = transpose_ref(x.astype(np.float64), w, (2,) * 3, (1,) * 3, (1,) * 6, (8, 10, 8)) + \
        b[:, None, None, None]
    for got in eager_and_compiled(deconv, Tensor(x)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-4)

    x1 = r(2, 4, 5, dtype=np.float32)
    deconv1 = nn.Conv1dTranspose(4, 6, 3, stride=2, pad_mode="pad", padding=1, dilation=2,
                                 group=2)
    assert deconv1.weight.shape == (4, 3, 1, 3)
    w = deconv1.weight.asnumpy().astype(np.float64)[:, :, 0]
    want = transpose_ref(x1.astype(np.float64), w, (2,), (2,), (1, 1), (11,), group=2)
    for got in eager_and_compiled(deconv1, Tensor(x1)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-4)
    same = nn.Conv1dTranspose(4, 2, 4, stride=3)
    w = same.weight.asnumpy().astype(np.float64)[:, :, 0]
    pads = fwd_pads((15,), (4,), (3,), (1,), "same", 0)
    np.testing.assert_allclose(same(Tensor(x1)).asnumpy(),
                               transpose_ref(x1.astype(np.float64), w, (3,), (1,), pads, (15,)),
                               rtol=1e-4, atol=1e-4)

    x2 = r(1, 2, 3, 4, dtype=np.float32)
    deconv2 = nn.Conv2dTranspose(2, 3, 3, stride=2, pad_mode="pad", padding=(1, 0, 1, 1),
                                 output_padding=(1, 0))
    w = deconv2.weight.asnumpy().astype(np.float64)
    want = transpose_ref(x2.astype(np.float64), w, (2, 2), (1, 1), (1, 0, 1, 1), (7, 7))
    for got in eager_and_compiled(deconv2, Tensor(x2)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-4)


# -- backward against finite differences (float64) -----------------------------------------
def check_gradients(call, args, rtol=1e-6):
    """ms.grad of sum(call(*args) * R) for a fixed R, eager and compiled, against central
    differences (numeric.finite_differences) of each input."""
    tensors = [Tensor(a) for a in args]
    weights = Tensor(np.random.default_rng(5).standard_normal(call(*tensors).shape))

    def loss(*xs):
        return ops.ReduceSum()(ops.Mul()(call(*xs), weights), ())

    eager, compiled = both_modes(ms.grad(loss, tuple(range(len(args)))), *tensors)
    for i, a in enumerate(args):
        want = finite_differences(lambda v: loss(*[Tensor(v) if j == i else t for j, t in
                                                   enumerate(tensors)]).asnumpy(), a)
        np.testing.assert_allclose(compiled[i].asnumpy(), eager[i].asnumpy(), rtol=1e-12,
                                   atol=1e-14)
        np.testing.assert_allclose(eager[i].asnumpy(), want, rtol=rtol, atol=rtol * 1e-2,
                                   err_msg=f"input {i}")


@pytest.mark.parametrize("x_shape,o,k,attrs", [
    ((1, 2, 4, 4, 3), 2, (2, 3, 2), dict(pad_mode="pad", pad=1, stride=2)),
    ((1, 4, 3, 3, 3), 2, 2, dict(pad_mode="same", group=2, dilation=(1, 2, 1))),
])
def test_conv3d_backward_matches_finite_differences(x_shape, o, k, attrs):
    kernel = as3(k)
    w_shape = (o, x_shape[1] // attrs.get("group", 1)) + kernel
    check_gradients(lambda a, b: ops.Conv3D(o, k, **attrs)(a, b), [r(*x_shape), r(*w_shape)])


def test_conv3d_transpose_and_backprop_ops_differentiate():
    op = ops.Conv3DTranspose(2, 2, 2, stride=2, pad_mode="pad", pad=(1, 0, 0, 1, 0, 0),
                             output_padding=1)
    check_gradients(lambda d, w: op(d, w), [r(1, 2, 2, 2, 2), r(2, 2, 2, 2, 2)])
    attrs = dict(out_channel=2, kernel_size=2, pad_mode="same", stride=2)
    check_gradients(lambda d, w: Conv3DBackpropInput(**attrs)(d, w, (1, 2, 3, 3, 3)),
                    [r(1, 2, 2, 2, 2), r(2, 2, 2, 2, 2)])
    check_gradients(lambda d, x: Conv3DBackpropFilter(**attrs)(d, x, (2, 2, 2, 2, 2)),
                    [r(1, 2, 2, 2, 2), r(1, 2, 3, 3, 3)])


def test_conv_transpose2d_and_conv1d_transpose_differentiate():
    check_gradients(lambda a, b: ops.conv_transpose2d(a, b, stride=2, padding=1,
                                                      output_padding=1),
                    [r(1, 2, 3, 2), r(2, 2, 3, 3)])


# -- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("make,x,w,match", [
    (lambda: ops.Conv3D(4, 3), (2, 3, 5, 5, 5), (4, 2, 3, 3, 3),
     r"For 'Conv3D', the 'weight shape' should be \(out_channel, C / group, kernel_d, "
     r"kernel_h, kernel_w\) = \(4, 3, 3, 3, 3\) for x shape \(2, 3, 5, 5, 5\).*but got "
     r"\(4, 2, 3, 3, 3\)"),
    (lambda: ops.Conv3D(4, 3), (2, 3, 7, 7), (4, 3, 3, 3),
     r"For 'Conv3D', the rank of 'x' should be 5, but got shape \[2, 3, 7, 7\]"),
    (lambda: ops.Conv3D(4, (5, 1, 1)), (1, 3, 4, 7, 7), (4, 3, 5, 1, 1),
     r"For 'Conv3D', the input depth \(padded\) should be >= the kernel's extent 5"),
    (lambda: ops.Conv3DTranspose(3, 4, 3), (1, 2, 3, 3, 3), (3, 4, 3, 3, 3),
     r"For 'Conv3DTranspose', the 'dout' should have in_channel 3 channels \(dim 1\), but got "
     r"shape \(1, 2, 3, 3, 3\)"),
    (lambda: ops.Conv3DTranspose(3, 4, 3), (1, 3, 3, 3, 3), (3, 2, 3, 3, 3),
     r"For 'Conv3DTranspose', the 'weight shape' should be \(out_channel, C / group, "
     r"kernel_d, kernel_h, kernel_w\) = \(3, 4, 3, 3, 3\) for x shape \(1, 4, 5, 5, 5\)"),
])
def test_conv3d_shape_errors(make, x, w, match):
    with pytest.raises(ValueError, match=match):
        make()(Tensor(np.zeros(x, np.float32)), Tensor(np.zeros(w, np.float32)))


@pytest.mark.parametrize("make,match", [
    (lambda: ops.Conv3D(4, (3, 3)), r"For 'Conv3D', the 'kernel_size' should be an int or a "
                                    r"tuple of 3 ints, but got \(3, 3\)"),
    (lambda: ops.Conv3D(4, 3, stride=(1, 2, 2, 2)),
     r"For 'Conv3D', the 'stride' should be an int, a tuple of 3 ints or \(1, 1, d, h, w\)"),
    (lambda: ops.Conv3D(4, 3, pad_mode="pad", pad=(1, 1, 1, 1)),
     r"For 'Conv3D', the 'pad' should be an int or a tuple of 6 ints \(head, tail, top, "
     r"bottom, left, right\), but got \(1, 1, 1, 1\)"),
    (lambda: ops.Conv3D(4, 3, data_format="NCHW"),
     r"For 'Conv3D', the 'data_format' should be 'NCDHW' \(msops implements no other "
     r"layout\), but got 'NCHW'"),
    (lambda: ops.Conv3DTranspose(2, 4, 3, stride=2, output_padding=2),
     r"For 'Conv3DTranspose', every value of 'output_padding' should be a non-negative int "
     r"less than its stride \(2, 2, 2\), but got 2"),
    (lambda: ops.Conv3DTranspose(2, 4, 3, stride=2, pad_mode="same", output_padding=1),
     r"For 'Conv3DTranspose', the 'output_padding' should be 0 when 'pad_mode' is 'same'"),
    (lambda: ops.Conv3DTranspose(2, 3, 3, group=2),
     r"For 'Conv3DTranspose', the 'out_channel' should be divisible by 'group': 2, but got 3"),
    (lambda: nn.Conv3d(4, 6, 3, group=3),
     r"For 'Conv3d', the 'in_channels' should be divisible by 'group': 3, but got 4"),
    (lambda: nn.Conv3dTranspose(4, 6, 3, padding=1),
     r"For 'Conv3dTranspose', the 'padding' should be 0 when 'pad_mode' is not 'pad'"),
])
def test_conv3d_attribute_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_layer_input_errors():
    with pytest.raises(ValueError, match=r"For 'Conv3dTranspose', the 'x' should be \(N, "
                                         r"in_channels, D, H, W\) with in_channels 4, but got "
                                         r"shape \[1, 3, 2, 2, 2\]"):
        nn.Conv3dTranspose(4, 2, 3)(Tensor(np.zeros((1, 3, 2, 2, 2), np.float32)))
    with pytest.raises(ValueError, match=r"For 'Conv1dTranspose', the 'x' should be 3-D"):
        nn.Conv1dTranspose(4, 2, 3)(Tensor(np.zeros((1, 4, 2, 2), np.float32)))
    with pytest.raises(ValueError, match=r"For 'conv3d', the 'input' and 'weight' should be 5-D"):
        ops.conv3d(Tensor(np.zeros((1, 4, 2, 2), np.float32)),
                   Tensor(np.zeros((1, 4, 2, 2), np.float32)))


# -- sharding rules (simulated world) ----------------------------------------------------------
class Conv3dNet(nn.Cell):
    def __init__(self, strategy, group=1, k=3, **attrs):
        super().__init__()
        attrs.setdefault("pad_mode", "same")
        self.conv = ops.Conv3D(4, k, group=group, **attrs).shard(strategy)
        self.w = Parameter(Tensor(np.ones((4, 4 // group, k, k, k), np.float32)), name="w")

    def construct(self, x):
        return self.conv(x, self.w)


class TransposeNet(nn.Cell):
    def __init__(self, strategy):
        super().__init__()
        self.op = ops.Conv3DTranspose(4, 4, 2, stride=2).shard(strategy)
        self.w = Parameter(Tensor(np.ones((4, 4, 2, 2, 2), np.float32)), name="w")

    def construct(self, x):
        return self.op(x, self.w)


def _compile(sim, net):
    sim(4, 1)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=4,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        return net().compile(Tensor(np.ones((4, 4, 4, 4, 4), np.float32)))
    finally:
        ms.reset_auto_parallel_context()


@pytest.mark.parametrize("make,match", [
    (lambda: Conv3dNet(((1, 1, 2, 1, 1), (1, 1, 1, 1, 1)), stride=2),
     r"For 'Conv3D', input 0 dim 2 cannot be split \(a window straddles the slices' border.*"
     r"D may split only when the output keeps x's depth \(stride 1 and 'same' padding\)"),
    (lambda: Conv3dNet(((1, 1, 1, 2, 1), (1, 1, 1, 1, 1))),
     r"For 'Conv3D', input 0 dim 3 cannot be split .*only D may split \(a halo in more dims "
     r"is not built\)"),
    (lambda: Conv3dNet(((1, 1, 1, 1, 2), (1, 1, 1, 1, 1))),
     r"For 'Conv3D', input 0 dim 4 cannot be split"),
    (lambda: Conv3dNet(((1, 1, 4, 1, 1), (1, 1, 1, 1, 1)), k=5),
     r"For 'Conv3D', each rank's slice of D should hold at least the halo rows its neighbours "
     r"need \(2\), but got 1 rows"),
    (lambda: Conv3dNet(((1, 1, 1, 1, 1), (1, 1, 2, 1, 1)), k=2),
     r"For 'Conv3D', input 1 dim 2 cannot be split \(it is the kernel's depth\)"),
    (lambda: Conv3dNet(((1, 1, 1, 1, 1), (2, 1, 1, 1, 1)), group=2),
     r"For 'Conv3D', input 1 dim 0 cannot be split \(it would cut Conv3D's 2 channel groups\)"),
    (lambda: TransposeNet(((1, 1, 2, 1, 1), (1, 1, 1, 1, 1))),
     r"For 'Conv3DTranspose', input 0 dim 2 cannot be split"),
])
def test_spatial_and_group_splits_are_refused(sim, make, match):
    with pytest.raises(ValueError, match=match):
        _compile(sim, make)


def test_depth_split_plans_a_halo_exchange_of_planes_then_an_unpadded_conv(sim):
    graph = _compile(sim, lambda: Conv3dNet(((1, 1, 4, 1, 1), (1, 1, 1, 1, 1)),
                                            pad_mode="pad", pad=(1, 1, 0, 2, 1, 0)))
    halo = [n for n in graph.nodes if n.is_communication]
    assert [n.op for n in halo] == ["NeighborExchangeV2"]
    assert halo[0].prim.send_rank_ids == [0, -1, -1, -1, 2, -1, -1, -1]     # rank 1 of 4
    assert halo[0].shape == (4, 4, 3, 16)          # 1 plane + 1 from each neighbour, H x W
    conv = [n for n in graph.nodes if n.op == "Conv3D"][0]
    assert conv.prim.pad_mode == "pad" and conv.prim.pad == (0, 0, 0, 2, 1, 0)
    assert graph.outputs[0].shape == (4, 4, 1, 4, 3)


def test_channel_splits_plan_local_ops_of_their_channels(sim):
    graph = _compile(sim, lambda: Conv3dNet(((2, 1, 1, 1, 1), (2, 1, 1, 1, 1))))
    convs = [n for n in graph.nodes if n.op == "Conv3D"]
    assert len(convs) == 1 and convs[0].prim.out_channel == 2
    assert graph.outputs[0].shape == (2, 2, 4, 4, 4)
    graph = _compile(sim, lambda: TransposeNet(((1, 2, 1, 1, 1), (2, 2, 1, 1, 1))))
    ops_ = [n for n in graph.nodes if n.op == "Conv3DTranspose"]
    assert ops_[0].prim.in_channel == 2 and ops_[0].prim.out_channel == 2
    assert graph.outputs[0].shape == (4, 2, 8, 8, 8)


def test_kernels_write_into_the_given_out():
    for prim, args in [(Conv3DBackpropInput(2, 2, pad_mode="same", stride=2),
                        (r(1, 2, 2, 2, 2), r(2, 2, 2, 2, 2), (1, 2, 3, 3, 3))),
                       (ops.Conv3DTranspose(2, 2, 2, stride=2), (r(1, 2, 2, 2, 2),
                                                                 r(2, 2, 2, 2, 2)))]:
        fresh = prim.kernel(*args)
        out = np.full_like(fresh, 3)
        assert prim.kernel(*args, out=out) is out
        np.testing.assert_array_equal(out, fresh)


def test_every_kernel_position_is_visited():
    """add_windows over a 3-D kernel covers each (i, j, k) once (an all-ones check)."""
    from msops.primitives.conv_ops import add_windows
    dxp = np.zeros((1, 1, 5, 5, 5))
    add_windows(dxp, np.ones((1, 1, 2, 2, 2, 2, 2, 2)), (2, 2, 2), (1, 1, 1))
    want = np.zeros((5, 5, 5))
    for o in itertools.product(range(2), repeat=3):
        for k in itertools.product(range(2), repeat=3):
            want[tuple(2 * a + b for a, b in zip(o, k))] += 1
    np.testing.assert_array_equal(dxp[0, 0], want)


def test_docstring_examples():
    import doctest
    from msops.primitives import conv_ops
    res = doctest.testmod(conv_ops, extraglobs={"Tensor": Tensor, "np": np})
    assert res.attempted >= 3 and res.failed == 0
