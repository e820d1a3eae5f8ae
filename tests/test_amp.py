"""Mixed precision: build_train_network and Model(amp_level=...), against numpy's float16
forward and the O3 (unscaled) run, and the compiled graph's dtypes."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn

RNG = np.random.default_rng(12)
X = RNG.standard_normal((8, 4)).astype(np.float32)
Y = RNG.standard_normal((8, 3)).astype(np.float32)
W0 = RNG.standard_normal((3, 4)).astype(np.float32)
B0 = RNG.standard_normal(3).astype(np.float32)


@pytest.fixture(params=[ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    """Each test in both modes (conftest puts PYNATIVE_MODE back after it)."""
    ms.set_context(mode=request.param)
    return request.param


def dense():
    return nn.Dense(4, 3, weight_init=Tensor(W0), bias_init=Tensor(B0))


def bn_net():
    ms.set_seed(3)
    return nn.SequentialCell([nn.Dense(4, 5), nn.BatchNorm1d(5), nn.Dense(5, 3)])


def _dtypes(step):
    graph = step.compile(Tensor(X), Tensor(Y))
    out = {}
    for n in graph.nodes:
        if n.op in ("MatMul", "BatchNorm"):
            out[n.op] = n.dtype[0] if isinstance(n.dtype, tuple) else n.dtype
    return out


@pytest.mark.parametrize("level,kwargs,matmul,norm", [
    ("O0", {}, ms.float32, ms.float32),
    ("O2", {}, ms.float16, ms.float32),                          # BatchNorm kept float32
    ("O2", {"keep_batchnorm_fp32": False}, ms.float16, ms.float16),
    ("O3", {}, ms.float16, ms.float16),
    ("O0", {"cast_model_type": ms.float16}, ms.float16, ms.float16),
])
def test_levels_set_the_compute_types(level, kwargs, matmul, norm):
    ms.set_context(mode=ms.GRAPH_MODE)
    net = bn_net()
    step = ms.build_train_network(net, nn.SGD(net.trainable_params(), 0.1), nn.MSELoss(),
                                  level=level, **kwargs)
    assert _dtypes(step) == {"MatMul": matmul, "BatchNorm": norm}
    assert {p.dtype for p in net.trainable_params()} == {ms.float32}
    assert type(step) is (nn.TrainOneStepWithLossScaleCell if level == "O2"
                          else nn.TrainOneStepCell)


def test_o2_forward_is_numpys_float16_and_the_loss_float32(mode):
    net = dense()
    step = ms.amp.build_train_network(net, nn.SGD(net.trainable_params(), 0.1),
                                      nn.MSELoss(), level="O2")
    loss = step(Tensor(X), Tensor(Y))[0]
    pred = X.astype(np.float16) @ W0.astype(np.float16).T + B0.astype(np.float16)
    assert loss.dtype == ms.float32
    np.testing.assert_allclose(loss.asnumpy(), np.mean((pred.astype(np.float32) - Y) ** 2),
                               rtol=1e-3)


def test_o2_skips_while_the_scale_overflows_float16_then_trains_as_o3(mode):
    """O2's first scale, 2**24, makes float16 gradients inf: those steps are skipped and the
    scale halved until it fits; the other steps are O3's (float16, unscaled) exactly, up to
    float16 rounding (a power-of-two scale is exact)."""
    net = dense()
    step = ms.build_train_network(net, nn.SGD(net.trainable_params(), 0.1), nn.MSELoss(),
                                  level="O2")
    flags = [bool(step(Tensor(X), Tensor(Y))[1].asnumpy()) for _ in range(14)]
    skipped = flags.index(False)
    assert skipped > 0 and flags == [True] * skipped + [False] * (14 - skipped)
    ref = dense()
    o3 = ms.build_train_network(ref, nn.SGD(ref.trainable_params(), 0.1), nn.MSELoss(),
                                level="O3")
    for _ in range(14 - skipped):
        o3(Tensor(X), Tensor(Y))
    np.testing.assert_allclose(net.weight.asnumpy(), ref.weight.asnumpy(), rtol=1e-3,
                               atol=1e-4)


def test_model_amp_levels(mode):
    net = bn_net()
    model = ms.Model(net, nn.MSELoss(), nn.SGD(net.trainable_params(), 0.1),
                     metrics={"loss"}, amp_level="O2")
    step = model.train_network
    assert type(step) is nn.TrainOneStepWithLossScaleCell
    cell = step.loss_scaling_manager
    assert type(cell) is nn.DynamicLossScaleUpdateCell
    assert (cell.get_loss_scale(), cell.scale_factor, cell.scale_window) == (2.0 ** 24, 2, 2000)
    data = ms.dataset.NumpySlicesDataset((X, Y), ["x", "y"], shuffle=False).batch(4)
    model.train(6, data)
    assert float(step.scale_sense.asnumpy()) < 2.0 ** 24          # lowered on overflow
    loss = model.eval(data)["loss"]
    out = net(Tensor(X)).asnumpy().astype(np.float32)
    assert np.isfinite(loss) and loss == pytest.approx(np.mean((out - Y) ** 2), rel=1e-2)
    fixed = ms.Model(bn_net(), nn.MSELoss(), nn.SGD(bn_net().trainable_params(), 0.1),
                     amp_level="O2", loss_scale_manager=ms.FixedLossScaleManager(64.0))
    assert type(fixed.train_network.loss_scaling_manager) is nn.FixedLossScaleUpdateCell
    o3 = bn_net()
    assert type(ms.Model(o3, nn.MSELoss(), nn.SGD(o3.trainable_params(), 0.1),
                         amp_level="O3").train_network) is nn.TrainOneStepCell


@pytest.mark.parametrize("call,err,match", [
    (lambda n, o: ms.build_train_network(n, o, level="O1"), ValueError,
     r"For 'build_train_network', the 'amp_level' should be one of \['O0', 'O2', 'O3', "
     r"'auto'\]"),
    (lambda n, o: ms.build_train_network(n, o, boost_level="O1"), ValueError,
     r"For 'build_train_network', the 'boost_level' should be 'O0'"),
    (lambda n, o: ms.build_train_network(n, o, cast_type=ms.float16), TypeError,
     r"For 'build_train_network', got an unexpected argument 'cast_type'"),
    (lambda n, o: ms.build_train_network(n, o, cast_model_type=ms.int32), ValueError,
     r"For 'build_train_network.to_float', the 'dst_type' should be one of"),
    (lambda n, o: ms.build_train_network(n, o, keep_batchnorm_fp32=1), TypeError,
     r"the type of 'keep_batchnorm_fp32' should be bool, but got int"),
    (lambda n, o: ms.build_train_network(n, o, loss_scale_manager=2), TypeError,
     r"the type of 'loss_scale_manager' should be LossScaleManager, but got int"),
    (lambda n, o: ms.build_train_network(n, None), TypeError,
     r"For 'build_train_network', the type of 'optimizer' should be Optimizer"),
])
def test_bad_arguments(call, err, match):
    net = dense()
    with pytest.raises(err, match=match):
        call(net, nn.SGD(net.trainable_params(), 0.1))
