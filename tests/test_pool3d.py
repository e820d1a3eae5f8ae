"""3-D, Lp, argmax and unpooling (ops.MaxPool3D, AvgPool3D, MaxPoolWithArgmaxV2,
MaxPool3DWithArgmax, MaxUnpool2D/3D; ops.avg_pool3d, max_pool3d, adaptive_avg/max_pool3d,
lp_pool1d/2d, max_unpool1d/2d/3d; their nn layers) against numpy loops written here, eager
and compiled; gradients against finite differences; errors; the sharding rules' refusals on
a simulated world."""
import itertools

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from test_conv3d import check_gradients
from test_functional_forms import eager_and_compiled
from test_pool_func import adaptive_np

RNG = np.random.default_rng(31)


def distinct(*shape):
    """Values without ties (a max is then smooth), in [0, 1)."""
    return RNG.permutation(int(np.prod(shape))).reshape(shape) / float(np.prod(shape))


def n_out(size, k, s, d, before, after, ceil):
    span = d * (k - 1) + 1
    if ceil:
        n = -(-(size + before + after - span) // s) + 1
        return n - 1 if (n - 1) * s >= size + before else n
    return (size + before + after - span) // s + 1


def pool_ref(x, kernel, stride, pads=None, dilation=None, ceil=False, kind="max",
             count_pad=False, divisor=0):
    """Window by window: elements inside x enter the max / sum; a mean divides by the
    elements inside x (and inside the explicit padding when count_pad) or by divisor."""
    n = len(kernel)
    pads = pads or (0,) * (2 * n)
    dilation = dilation or (1,) * n
    sizes = x.shape[2:]
    outs = [n_out(sizes[k], kernel[k], stride[k], dilation[k], pads[2 * k], pads[2 * k + 1],
                  ceil) for k in range(n)]
    out = np.zeros(x.shape[:2] + tuple(outs))
    arg = np.zeros(x.shape[:2] + tuple(outs), np.int64)
    for pos in np.ndindex(*outs):
        vals, idx, count = [], [], 0
        for kpos in np.ndindex(*kernel):
            at = [p * s - pads[2 * k] + q * d for k, (p, s, q, d) in
                  enumerate(zip(pos, stride, kpos, dilation))]
            inside = all(0 <= a < sizes[k] for k, a in enumerate(at))
            in_pad = all(-pads[2 * k] <= a < sizes[k] + pads[2 * k + 1] for k, a in enumerate(at))
            if inside:
                vals.append(x[(slice(None), slice(None)) + tuple(at)])
                idx.append(int(np.ravel_multi_index(at, sizes)))
            count += inside or (count_pad and in_pad)
        stack = np.stack(vals, -1)
        key = (slice(None), slice(None)) + pos
        if kind == "max":
            out[key] = stack.max(-1)
            arg[key] = np.array(idx)[stack.argmax(-1)]
        else:
            out[key] = stack.sum(-1) / (divisor or count)
    return out, arg


def same3(sizes, kernel, stride):
    pads = []
    for size, k, s in zip(sizes, kernel, stride):
        total = max(0, (-(-size // s) - 1) * s + k - size)
        pads += [total // 2, total - total // 2]
    return tuple(pads)


def close(got, want, rtol=1e-5):
    assert got.shape == want.shape
    np.testing.assert_allclose(got.asnumpy(), want, rtol=rtol, atol=rtol * 1e-2)


X = distinct(2, 3, 5, 6, 4)


@pytest.mark.parametrize("name,fn,want", [
    ("MaxPool3D valid", lambda t: ops.MaxPool3D(2, (1, 2, 1))(t),
     pool_ref(X, (2, 2, 2), (1, 2, 1))[0]),
    ("MaxPool3D same", lambda t: ops.MaxPool3D((3, 2, 3), 2, "same")(t),
     pool_ref(X, (3, 2, 3), (2, 2, 2), same3((5, 6, 4), (3, 2, 3), (2, 2, 2)))[0]),
    ("MaxPool3D pad ceil", lambda t: ops.MaxPool3D(3, 2, "PAD", (1, 0, 1, 1, 0, 1), True)(t),
     pool_ref(X, (3, 3, 3), (2, 2, 2), (1, 0, 1, 1, 0, 1), ceil=True)[0]),
    ("AvgPool3D same", lambda t: ops.AvgPool3D(2, 2, "SAME")(t),
     pool_ref(X, (2, 2, 2), (2, 2, 2), same3((5, 6, 4), (2, 2, 2), (2, 2, 2)), kind="avg")[0]),
    ("AvgPool3D pad counted", lambda t: ops.AvgPool3D(3, 2, "pad", 1, True)(t),
     pool_ref(X, (3,) * 3, (2,) * 3, (1,) * 6, ceil=True, kind="avg", count_pad=True)[0]),
    ("AvgPool3D pad not counted", lambda t: ops.AvgPool3D(3, 2, "pad", 1, False, False)(t),
     pool_ref(X, (3,) * 3, (2,) * 3, (1,) * 6, kind="avg")[0]),
    ("AvgPool3D divisor", lambda t: ops.AvgPool3D(2, 1, divisor_override=3)(t),
     pool_ref(X, (2,) * 3, (1,) * 3, kind="avg", divisor=3)[0]),
    ("avg_pool3d default stride 1", lambda t: ops.avg_pool3d(t, 2),
     pool_ref(X, (2,) * 3, (1,) * 3, kind="avg")[0]),
    ("avg_pool3d", lambda t: ops.avg_pool3d(t, (2, 3, 2), None, (1, 1, 0), ceil_mode=True,
                                            count_include_pad=False),
     pool_ref(X, (2, 3, 2), (2, 3, 2), (1, 1, 1, 1, 0, 0), ceil=True, kind="avg")[0]),
    ("max_pool3d dilation", lambda t: ops.max_pool3d(t, 2, 1, 1, (2, 1, 1)),
     pool_ref(X, (2,) * 3, (1,) * 3, (1,) * 6, (2, 1, 1))[0]),
    ("max_pool3d unbatched", lambda t: ops.max_pool3d(t[0], 2, 2),
     pool_ref(X, (2,) * 3, (2,) * 3)[0][0]),
    ("nn.AvgPool3d", lambda t: nn.AvgPool3d(3, 1, "pad", 1, divisor_override=2)(t),
     pool_ref(X, (3,) * 3, (1,) * 3, (1,) * 6, kind="avg", divisor=2)[0]),
    ("nn.MaxPool3d", lambda t: nn.MaxPool3d(3, 2, "PAD", (1, 1, 1), ceil_mode=True)(t),
     pool_ref(X, (3,) * 3, (2,) * 3, (1,) * 6, ceil=True)[0]),
    ("nn.MaxPool3d same", lambda t: nn.MaxPool3d(3, 2, "same")(t[0]),
     pool_ref(X, (3,) * 3, (2,) * 3, same3((5, 6, 4), (3,) * 3, (2,) * 3))[0][0]),
    ("nn.AvgPool3d same", lambda t: nn.AvgPool3d((2, 3, 2), 2, "same", count_include_pad=True)(t),
     pool_ref(X, (2, 3, 2), (2,) * 3, same3((5, 6, 4), (2, 3, 2), (2,) * 3), kind="avg")[0]),
    ("nn.MaxPool3d dilation", lambda t: nn.MaxPool3d(2, 1, "valid", 0, (1, 2, 1))(t),
     pool_ref(X, (2,) * 3, (1,) * 3, dilation=(1, 2, 1))[0]),
    ("adaptive_avg_pool3d", lambda t: ops.adaptive_avg_pool3d(t, (2, None, 3)),
     adaptive_np(X, (2, 6, 3), "avg")),
    ("nn.AdaptiveMaxPool3d", lambda t: nn.AdaptiveMaxPool3d(3)(t[1]),
     adaptive_np(X[1], (3, 3, 3), "max")),
    ("nn.AdaptiveAvgPool3d", lambda t: nn.AdaptiveAvgPool3d((4, 4, 3))(t),
     adaptive_np(X, (4, 4, 3), "avg")),
], ids=lambda v: v if isinstance(v, str) else "")
def test_pools_equal_the_loop_reference_eager_and_compiled(name, fn, want):
    for got in eager_and_compiled(fn, Tensor(X.astype(np.float32))):
        close(got, want)


def test_argmax_pools_return_the_first_maximum_and_its_flat_index():
    for got in eager_and_compiled(lambda t: ops.MaxPool3DWithArgmax(2, (1, 2, 1), 1, (1, 2, 1),
                                                                    True)(t),
                                  Tensor(X.astype(np.float32))):
        want, arg = pool_ref(X, (2,) * 3, (1, 2, 1), (1,) * 6, (1, 2, 1), ceil=True)
        close(got[0], want)
        assert got[1].dtype == ms.int64
        np.testing.assert_array_equal(got[1].asnumpy(), arg)
    x2 = distinct(2, 2, 5, 7)
    got = ops.MaxPoolWithArgmaxV2(3, 2, (1, 0), (1, 2), argmax_type=ms.int32)(Tensor(x2))
    want, arg = pool_ref(x2, (3, 3), (2, 2), (1, 1, 0, 0), (1, 2))
    close(got[0], want)
    assert got[1].dtype == ms.int32
    np.testing.assert_array_equal(got[1].asnumpy(), arg)
    values, index = nn.MaxPool3d(2, 2, return_indices=True)(Tensor(X))
    np.testing.assert_array_equal(index.asnumpy(), pool_ref(X, (2,) * 3, (2,) * 3)[1])


def lp_ref(x, p, kernel, stride, ceil):
    """MindSpore's definition: (avg_pool(x ** p) * prod(kernel)) ** (1 / p), the average of
    a partial (ceil_mode) window taken over its elements inside x."""
    n = len(kernel)
    mean, _ = pool_ref(x ** p, kernel, stride, ceil=ceil, kind="avg")
    return (mean * np.prod(kernel)) ** (1.0 / p)


def test_lp_pools_equal_the_reference_eager_and_compiled():
    x1, x2 = distinct(2, 3, 9), distinct(2, 3, 7, 6)
    cases = [
        (lambda t: ops.lp_pool1d(t, 2, 3, 2, True), x1, lp_ref(x1[:, :, None], 2, (1, 3),
                                                                (1, 2), True)[:, :, 0]),
        (lambda t: nn.LPPool1d(3, 2)(t[0]), x1, lp_ref(x1[:1, :, None], 3, (1, 2),
                                                          (1, 2), False)[0, :, 0]),
        (lambda t: ops.lp_pool2d(t, 1.5, (2, 3)), x2, lp_ref(x2, 1.5, (2, 3), (2, 3), False)),
        (lambda t: nn.LPPool2d(2, 3, (2, 1), ceil_mode=True)(t), x2,
         lp_ref(x2, 2, (3, 3), (2, 1), True)),
    ]
    for fn, x, want in cases:
        for got in eager_and_compiled(fn, Tensor(x)):
            close(got, want, 1e-10)


def unpool_ref(x, idx, out_sizes):
    """Each value written at its flat index in its (n, c) plane, later ones last."""
    out = np.zeros(x.shape[:2] + tuple(out_sizes))
    for n, c in np.ndindex(*x.shape[:2]):
        plane = out[n, c].reshape(-1)
        for v, i in zip(x[n, c].reshape(-1), idx[n, c].reshape(-1)):
            plane[i] = v
    return out


def test_unpools_equal_the_reference_eager_and_compiled():
    x3 = distinct(1, 2, 2, 2, 3)
    idx3 = RNG.integers(0, 5 * 4 * 6, x3.shape)
    x2 = distinct(2, 2, 3, 3)
    idx2 = RNG.integers(0, 4, x2.shape)                   # many repeated positions
    x1 = distinct(2, 3, 4)
    idx1 = np.array([[[0, 2, 5, 7]] * 3] * 2)
    cases = [
        (lambda t, i: ops.max_unpool3d(t, i, (3, 2, 2), (2, 2, 3), (0, 0, 1)), x3, idx3,
         unpool_ref(x3, idx3, (5, 4, 6))),
        (lambda t, i: ops.MaxUnpool2D(2, pads=1, output_shape=(2, 2, 2, 2))(t, i), x2, idx2,
         unpool_ref(x2, idx2, (2, 2))),
        (lambda t, i: nn.MaxUnpool2d(2)(t, i), x2, idx2, unpool_ref(x2, idx2, (6, 6))),
        (lambda t, i: ops.max_unpool1d(t, i, 2, output_size=(9,)), x1, idx1,
         unpool_ref(x1, idx1, (9,))),
        (lambda t, i: nn.MaxUnpool1d(3, 2)(t[0], i[0]), x1, idx1, unpool_ref(x1, idx1, (9,))[0]),
    ]
    for fn, x, idx, want in cases:
        for got in eager_and_compiled(fn, Tensor(x), Tensor(idx.astype(np.int64))):
            close(got, want, 1e-12)


def test_unpool_takes_back_a_max_pool_with_indices():
    x = distinct(1, 2, 4, 6, 4)
    values, index = ops.max_pool3d(Tensor(x), 2, return_indices=True)
    got = nn.MaxUnpool3d(2)(values, index).asnumpy()
    _, arg = pool_ref(x, (2,) * 3, (2,) * 3)
    want = unpool_ref(pool_ref(x, (2,) * 3, (2,) * 3)[0], arg, (4, 6, 4))
    np.testing.assert_array_equal(got, want)
    assert ((got == x) | (got == 0)).all() and (got != 0).sum() == values.size


# -- backward against finite differences (float64) -----------------------------------------
@pytest.mark.parametrize("fn,shape", [
    (lambda t: ops.avg_pool3d(t, 3, 2, 1, True, True), (1, 2, 4, 5, 3)),
    (lambda t: ops.avg_pool3d(t, 2, 1, 1, False, False, 5), (1, 1, 3, 3, 3)),
    (lambda t: ops.max_pool3d(t, 2, (1, 2, 1), 1, 2, True), (1, 2, 4, 4, 4)),
    (lambda t: ops.max_pool3d(t, 2, 1, return_indices=True)[0], (1, 2, 3, 3, 3)),
    (lambda t: ops.MaxPool3D(3, 2, "same")(t), (1, 2, 3, 5, 4)),
    (lambda t: ops.lp_pool1d(t, 2, 3, 2, True), (2, 2, 8)),
    (lambda t: ops.lp_pool2d(t, 3, 2), (1, 2, 4, 5)),
    (lambda t: ops.adaptive_max_pool3d(t, (2, 3, 2)), (1, 2, 3, 4, 5)),
    (lambda t: ops.adaptive_avg_pool3d(t, 2), (1, 2, 3, 4, 5)),
])
def test_pool_gradients_match_finite_differences(fn, shape):
    check_gradients(fn, [distinct(*shape) + 0.5])


def test_unpool_gradient_reaches_the_written_values_only():
    idx = np.array([[[1, 1, 4, 0]], [[3, 2, 2, 2]]]).reshape(1, 2, 4)
    check_gradients(lambda t: ops.max_unpool1d(t, Tensor(idx), 2), [distinct(1, 2, 4)])
    idx3 = RNG.integers(0, 27, (1, 2, 2, 2, 2))
    check_gradients(lambda t: ops.MaxUnpool3D(2, 1)(t, Tensor(idx3)), [distinct(1, 2, 2, 2, 2)])


# -- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("make,err,match", [
    (lambda: ops.MaxPool3D(2, 1, "pad", 2), ValueError,
     r"For 'MaxPool3D', every value of 'pad_list' should be at most half its kernel size "
     r"\(2, 2, 2\), but got 2"),
    (lambda: ops.MaxPool3D(2, 1, "valid", 1), ValueError,
     r"For 'MaxPool3D', the 'pad_list' should be 0 when 'pad_mode' is not 'pad'"),
    (lambda: ops.AvgPool3D(2, 1, "full"), ValueError, r"For 'AvgPool3D', the 'pad_mode'"),
    (lambda: ops.AvgPool3D(2, 1, divisor_override=-1), ValueError,
     r"For 'AvgPool3D', the 'divisor_override'"),
    (lambda: ops.AvgPool3D((2, 2), 1), ValueError,
     r"For 'AvgPool3D', the 'kernel_size' should be an int, a tuple of 3 ints or "
     r"\(1, 1, d, h, w\), but got \(2, 2\)"),
    (lambda: ops.MaxPool3D(2, data_format="NCHW"), ValueError,
     r"For 'MaxPool3D', the 'data_format' should be 'NCDHW'"),
    (lambda: ops.MaxPool3DWithArgmax(2, 1, 0, argmax_type=ms.float32), TypeError,
     r"For 'MaxPool3DWithArgmax', the 'argmax_type' should be mindspore.int32 or "
     r"mindspore.int64"),
    (lambda: ops.MaxUnpool2D(2, output_shape=(1, 2, 3)), ValueError,
     r"For 'MaxUnpool2D', the 'output_shape' should be empty or hold 2 or 4 sizes"),
    (lambda: nn.MaxPool3d(2, 2, "same", return_indices=True), ValueError,
     r"For 'MaxPool3d', the 'pad_mode' should be 'valid' or 'pad' with return_indices or a "
     r"dilation"),
    (lambda: nn.AvgPool3d(2, 2, "valid", 1), ValueError,
     r"For 'AvgPool3d', the 'padding' should be 0 unless pad_mode is 'pad'"),
    (lambda: nn.AvgPool3d(2, divisor_override=0), ValueError,
     r"For 'AvgPool3d', the 'divisor_override'"),
    (lambda: nn.MaxPool3d((2, 2)), TypeError,
     r"For 'MaxPool3d', the 'kernel_size' should be an int or a tuple of 3 ints"),
    (lambda: nn.AdaptiveMaxPool3d(2, return_indices=True), ValueError,
     r"For 'AdaptiveMaxPool3d', the 'return_indices' should be False"),
])
def test_attribute_errors(make, err, match):
    with pytest.raises(err, match=match):
        make()


def test_input_errors():
    with pytest.raises(ValueError, match=r"For 'MaxPool3D', the rank of 'x' should be 5"):
        ops.MaxPool3D(2)(Tensor(np.zeros((1, 2, 3, 3), np.float32)))
    with pytest.raises(ValueError, match=r"For 'avg_pool3d', the 'input_x' should be 4-D or "
                                         r"5-D, but got shape \[3, 3, 3\]"):
        ops.avg_pool3d(Tensor(np.zeros((3, 3, 3), np.float32)), 2)
    with pytest.raises(ValueError, match=r"For 'MaxUnpool2D', every 'argmax' value should be "
                                         r"in \[0, 16\) .* but got values in \[0, 16\]"):
        ops.MaxUnpool2D(2)(Tensor(np.ones((1, 1, 2, 2), np.float32)),
                           Tensor(np.array([[[[0, 1], [2, 16]]]], np.int64)))
    with pytest.raises(ValueError, match=r"For 'max_unpool2d', the 'indices' should have x's "
                                         r"shape \[1, 1, 2, 2\], but got \[1, 1, 2, 1\]"):
        ops.max_unpool2d(Tensor(np.ones((1, 1, 2, 2), np.float32)),
                         Tensor(np.zeros((1, 1, 2, 1), np.int64)), 2)
    with pytest.raises(ValueError, match=r"For 'lp_pool1d', the 'norm_type' should be > 0"):
        ops.lp_pool1d(Tensor(np.ones((1, 1, 4), np.float32)), 0, 2)


# -- sharding rules (simulated world) ----------------------------------------------------------
class Net(nn.Cell):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, x):
        return self.fn(x)


def _compile(sim, fn, shape=(4, 4, 8, 8, 8)):
    sim(4, 1)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=4,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        return Net(fn).compile(Tensor(np.ones(shape, np.float32)))
    finally:
        ms.reset_auto_parallel_context()


UNPOOL = ops.MaxUnpool3D(2)
IDX = Tensor(np.zeros((4, 4, 8, 8, 8), np.int64))


@pytest.mark.parametrize("make,match", [
    (lambda: ops.MaxPool3D(3, 2, "same").shard(((1, 1, 2, 1, 1),)),
     r"For 'MaxPool3D', input 0 dim 2 cannot be split .*D, H or W may split only when the "
     r"windows tile it"),
    (lambda: ops.AvgPool3D(3, 3, ceil_mode=True).shard(((1, 1, 1, 1, 2),)),
     r"For 'AvgPool3D', input 0 dim 4 cannot be split"),
    (lambda: ops.MaxPool3DWithArgmax(2, 2, 0).shard(((1, 1, 2, 1, 1),)),
     r"For 'MaxPool3DWithArgmax', input 0 dim 2 cannot be split \(argmax is a position in "
     r"the whole \(n, c\) plane"),
])
def test_spatial_splits_are_refused(sim, make, match):
    op = make()
    with pytest.raises(ValueError, match=match):
        _compile(sim, lambda x: op(x))


def test_unpool_spatial_split_is_refused(sim):
    op = UNPOOL.shard(((1, 1, 2, 1, 1), (1, 1, 2, 1, 1)))
    with pytest.raises(ValueError, match=r"For 'MaxUnpool3D', input 0 dim 2 cannot be split "
                                         r"\(argmax names a position in the whole output "
                                         r"plane"):
        _compile(sim, lambda x: op(x, IDX))


def test_tiling_windows_split_locally(sim):
    graph = _compile(sim, lambda x: ops.MaxPool3D(2, 2).shard(((1, 1, 2, 2, 1),))(x))
    assert not [n for n in graph.nodes if n.is_communication]
    assert graph.outputs[0].shape == (4, 4, 2, 2, 4)


def test_docstring_examples():
    import doctest
    from msops.primitives import pool_ops
    res = doctest.testmod(pool_ops, extraglobs={"Tensor": Tensor, "np": np})
    assert res.attempted >= 4 and res.failed == 0
