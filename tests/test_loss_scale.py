"""Loss scaling: TrainOneStepWithLossScaleCell, its update cells and the loss-scale managers,
against numpy SGD written here and a Python reference of MindSpore's scale schedule."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn

RNG = np.random.default_rng(7)
X = RNG.standard_normal((6, 4)).astype(np.float32)
Y = RNG.standard_normal((6, 3)).astype(np.float32)
W0 = RNG.standard_normal((3, 4)).astype(np.float32)
B0 = RNG.standard_normal(3).astype(np.float32)
INF_X = np.where(np.arange(X.size).reshape(X.shape) == 5, np.inf, X).astype(np.float32)
LR = 0.1
MODES = [ms.GRAPH_MODE, ms.PYNATIVE_MODE]


def numpy_sgd(steps):
    """Plain SGD on mean((x W^T + b - y)^2), the overflowing steps (None) skipped."""
    w, b = W0.astype(np.float64), B0.astype(np.float64)
    for x in steps:
        if x is None:
            continue
        d = 2.0 * (x @ w.T + b - Y) / Y.size
        w, b = w - LR * d.T @ x, b - LR * d.sum(0)
    return w, b


def scale_reference(init, factor, window, overflows):
    """MindSpore's dynamic schedule: / factor (not below 1) on overflow, * factor after
    `window` clean steps in a row. The scale after each step."""
    scale, clean, out = init, 0, []
    for over in overflows:
        if over:
            scale, clean = max(scale / factor, 1.0), 0
        else:
            clean += 1
            if clean == window:
                scale, clean = scale * factor, 0
        out.append(scale)
    return out


def make_step(scale_sense, optimizer=None):
    net = nn.Dense(4, 3, weight_init=Tensor(W0), bias_init=Tensor(B0))
    opt = (optimizer or (lambda ps: nn.SGD(ps, LR)))(net.trainable_params())
    return net, opt, nn.TrainOneStepWithLossScaleCell(nn.WithLossCell(net, nn.MSELoss()), opt,
                                                      scale_sense)


@pytest.fixture(params=MODES, ids=["graph", "pynative"])
def mode(request):
    """Each test in both modes (conftest puts PYNATIVE_MODE back after it)."""
    ms.set_context(mode=request.param)
    return request.param


def test_dynamic_scale_follows_the_schedule_and_overflowing_steps_are_skipped(mode):
    overflows = [False, True, False, False, False, True, True, False, False]
    net, opt, step = make_step(nn.DynamicLossScaleUpdateCell(2.0 ** 12, 2, 2))
    scales, flags, used = [], [], []
    for over in overflows:
        loss, flag, scale = step(Tensor(INF_X if over else X), Tensor(Y))
        flags.append(bool(flag.asnumpy()))
        used.append(float(scale.asnumpy()))
        scales.append(float(step.scale_sense.asnumpy()))
    want = scale_reference(2.0 ** 12, 2, 2, overflows)
    assert flags == overflows
    assert scales == want
    assert used == [2.0 ** 12] + want[:-1]                    # the scale each step used
    w, b = numpy_sgd([None if o else X for o in overflows])
    np.testing.assert_allclose(net.weight.asnumpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.bias.asnumpy(), b, rtol=1e-5, atol=1e-6)
    assert int(opt.global_step.asnumpy()[0]) == overflows.count(False)
    if mode == ms.GRAPH_MODE:
        assert step._compile_cache.traces == 1                # one graph, the skip in it


def test_the_step_returns_the_unscaled_loss(mode):
    _, _, step = make_step(Tensor(np.float32(1024.0)))
    loss, flag, scale = step(Tensor(X), Tensor(Y))
    np.testing.assert_allclose(loss.asnumpy(), np.mean((X @ W0.T + B0 - Y) ** 2), rtol=1e-5)
    assert not bool(flag.asnumpy()) and float(scale.asnumpy()) == 1024.0


@pytest.mark.parametrize("scale", [1.0, 1000.0, 2.0 ** 20])
def test_scaled_training_equals_unscaled_numpy_sgd(mode, scale):
    net, _, step = make_step(Tensor(np.array([scale], np.float32)))
    for _ in range(4):
        step(Tensor(X), Tensor(Y))
    w, b = numpy_sgd([X] * 4)
    np.testing.assert_allclose(net.weight.asnumpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.bias.asnumpy(), b, rtol=1e-5, atol=1e-6)


def test_an_overflowing_step_keeps_every_optimizer_state(mode):
    net, opt, step = make_step(nn.FixedLossScaleUpdateCell(64.0),
                               lambda ps: nn.Adam(ps, learning_rate=0.01))
    step(Tensor(X), Tensor(Y))
    before = {p.name: p.asnumpy().copy() for p in step.get_parameters()}
    _, flag, _ = step(Tensor(INF_X), Tensor(Y))
    assert bool(flag.asnumpy())
    after = {p.name: p.asnumpy() for p in step.get_parameters()}
    assert {"moment1.weight", "moment2.bias", "global_step", "beta1_power"} <= after.keys()
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value, err_msg=name)
    assert float(step.scale_sense.asnumpy()) == 64.0          # a fixed scale stays


def test_a_scale_too_large_overflows_without_any_inf_input(mode):
    """The residuals are 100, so the scaled gradients of the loss exceed 11 * 2**127 (inf in
    float32) at scale 2**127; at 2**117 they stay below 1e38: one skipped step, then SGD."""
    y = X @ W0.T + B0 - 100.0
    net, _, step = make_step(nn.DynamicLossScaleUpdateCell(2.0 ** 127, 2 ** 10, 1000))
    flags = [bool(step(Tensor(X), Tensor(y))[1].asnumpy()) for _ in range(2)]
    assert flags == [True, False]
    assert float(step.scale_sense.asnumpy()) == 2.0 ** 117
    d = 2.0 * (X @ W0.T + B0 - y) / y.size
    np.testing.assert_allclose(net.weight.asnumpy(), W0 - LR * d.T @ X, rtol=1e-4)
    np.testing.assert_allclose(net.bias.asnumpy(), B0 - LR * d.sum(0), rtol=1e-4)


def test_a_float16_network_skips_until_the_scale_fits_float16(mode):
    """The float16 loss times a scale above float16's max (65504) is inf: the dynamic scale
    halves on each such step (update skipped), then the steps train as the unscaled
    float16 step does (scaling by a power of two is exact)."""
    def make():
        net = nn.Dense(4, 3, weight_init=Tensor(W0), bias_init=Tensor(B0))
        return net.to_float(ms.float16)
    y16 = Tensor(Y.astype(np.float16))
    net = make()
    step = nn.TrainOneStepWithLossScaleCell(nn.WithLossCell(net, nn.MSELoss()),
                                            nn.SGD(net.trainable_params(), LR),
                                            nn.DynamicLossScaleUpdateCell(2.0 ** 24, 2, 1000))
    flags = [bool(step(Tensor(X), y16)[1].asnumpy()) for _ in range(12)]
    skipped = 0
    while 2.0 ** 24 / 2 ** skipped > float(np.finfo(np.float16).max):     # inf in float16
        skipped += 1
    assert flags == [True] * skipped + [False] * (12 - skipped)
    assert float(step.scale_sense.asnumpy()) == 2.0 ** 24 / 2 ** skipped
    ref = make()
    plain = nn.TrainOneStepCell(nn.WithLossCell(ref, nn.MSELoss()),
                                nn.SGD(ref.trainable_params(), LR))
    for _ in range(12 - skipped):
        plain(Tensor(X), y16)
    assert net.weight.dtype == ms.float32
    np.testing.assert_allclose(net.weight.asnumpy(), ref.weight.asnumpy(), rtol=1e-3)
    np.testing.assert_allclose(net.bias.asnumpy(), ref.bias.asnumpy(), rtol=1e-3)


def test_set_sense_scale_writes_the_scale():
    _, _, step = make_step(Tensor(np.float32(4.0)))
    step.set_sense_scale(Tensor(np.float32(8.0)))
    assert float(step.scale_sense.asnumpy()) == 8.0
    with pytest.raises(TypeError, match="For 'TrainOneStepWithLossScaleCell', the 'sens' "
                                        "should be a Tensor, but got float"):
        step.set_sense_scale(8.0)


def test_host_managers_follow_the_same_schedule():
    overflows = [False, False, True, False, False, False, True, True, False]
    manager = ms.DynamicLossScaleManager(init_loss_scale=2.0 ** 10, scale_factor=4,
                                         scale_window=3)
    got = []
    for over in overflows:
        manager.update_loss_scale(over)
        got.append(manager.get_loss_scale())
    assert got == scale_reference(2.0 ** 10, 4, 3, overflows)
    assert manager.get_drop_overflow_update() is True
    cell = manager.get_update_cell()
    assert isinstance(cell, nn.DynamicLossScaleUpdateCell)
    assert (cell.get_loss_scale(), cell.scale_factor, cell.scale_window) == (got[-1], 4, 3)
    fixed = ms.FixedLossScaleManager(256.0)
    fixed.update_loss_scale(True)
    assert fixed.get_loss_scale() == 256.0 and fixed.get_drop_overflow_update() is True
    assert isinstance(fixed.get_update_cell(), nn.FixedLossScaleUpdateCell)
    assert ms.FixedLossScaleManager(drop_overflow_update=False).get_update_cell() is None
    assert ms.FixedLossScaleManager().get_loss_scale() == 128.0
    assert ms.DynamicLossScaleManager().get_loss_scale() == 2.0 ** 24


def _dataset():
    return ms.dataset.NumpySlicesDataset({"x": np.concatenate([X, X]),
                                          "y": np.concatenate([Y, Y])},
                                         shuffle=False).batch(6)


@pytest.mark.parametrize("manager,optimizer_scale", [
    (lambda: ms.DynamicLossScaleManager(2.0 ** 16, 2, 1), 1.0),
    (lambda: ms.FixedLossScaleManager(512.0), 1.0),
    (lambda: ms.FixedLossScaleManager(512.0, drop_overflow_update=False), 512.0),
])
def test_model_trains_with_a_loss_scale_manager(mode, manager, optimizer_scale):
    net = nn.Dense(4, 3, weight_init=Tensor(W0), bias_init=Tensor(B0))
    opt = nn.SGD(net.trainable_params(), LR, loss_scale=optimizer_scale)
    model = ms.Model(net, nn.MSELoss(), opt, loss_scale_manager=manager())
    want_cell = nn.TrainOneStepCell if optimizer_scale != 1.0 else \
        nn.TrainOneStepWithLossScaleCell
    assert type(model.train_network) is want_cell
    model.train(2, _dataset())
    w, b = numpy_sgd([X] * 4)
    np.testing.assert_allclose(net.weight.asnumpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.bias.asnumpy(), b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("values", [[1.0, 2.0], [1.0, np.inf], [np.nan, 0.0]])
def test_amp_all_finite_eager_and_compiled(values):
    a, b = np.array(values, np.float32), np.ones((2, 2), np.float32)
    want = bool(np.isfinite(a).all() and np.isfinite(b).all())
    assert bool(ms.amp.all_finite([Tensor(a), Tensor(b)]).asnumpy()) is want
    compiled = ms.jit(lambda x, y: ms.amp.all_finite((x, y)))
    assert bool(compiled(Tensor(a), Tensor(b)).asnumpy()) is want
    assert ms.amp.DynamicLossScaleManager is ms.DynamicLossScaleManager
    with pytest.raises(TypeError, match="For 'all_finite', the 'inputs' should be a tuple or "
                                        "list of Tensors, but got Tensor"):
        ms.amp.all_finite(Tensor(a))


def test_accumulated_steps_are_refused(mode):
    _, _, step = make_step(Tensor(np.float32(8.0)))
    ms.set_auto_parallel_context(grad_accumulation_step=2)
    try:
        with pytest.raises(NotImplementedError, match=r"For 'TrainOneStepWithLossScaleCell', "
                                                      r"the auto-parallel context's "
                                                      r"'grad_accumulation_step' should be 1"):
            step(Tensor(X), Tensor(Y))
    finally:
        ms.reset_auto_parallel_context()


@pytest.mark.parametrize("call,err,match", [
    (lambda: ms.DynamicLossScaleManager(scale_factor=1), ValueError,
     r"For 'DynamicLossScaleManager', the 'scale_factor' should be > 1, but got 1\."),
    (lambda: ms.DynamicLossScaleManager(init_loss_scale=0.5), ValueError,
     r"For 'DynamicLossScaleManager', the 'init_loss_scale' should be >= 1, but got 0\.5\."),
    (lambda: ms.DynamicLossScaleManager(scale_window=0), ValueError,
     r"For 'DynamicLossScaleManager', the 'scale_window' should be a positive int, but "
     r"got 0\."),
    (lambda: ms.FixedLossScaleManager(loss_scale="8"), TypeError,
     r"For 'FixedLossScaleManager', the type of 'loss_scale' should be one of \[int, float\]"),
    (lambda: ms.FixedLossScaleManager(drop_overflow_update=1), TypeError,
     r"the type of 'drop_overflow_update' should be bool, but got int"),
    (lambda: ms.FixedLossScaleManager().update_loss_scale("yes"), TypeError,
     r"For 'FixedLossScaleManager.update_loss_scale', the 'overflow' should be a bool, but "
     r"got str\."),
    (lambda: nn.DynamicLossScaleUpdateCell(8.0, 2.0, 1.5), TypeError,
     r"For 'DynamicLossScaleUpdateCell', the type of 'scale_window' should be int"),
    (lambda: make_step(Tensor(np.ones(2, np.float32))), ValueError,
     r"For 'TrainOneStepWithLossScaleCell', the shape of 'scale_sense' should be \(\) or "
     r"\(1,\), but got \(2,\)\."),
    (lambda: make_step(nn.Dense(2, 2)), TypeError,
     r"For 'TrainOneStepWithLossScaleCell', a Cell 'scale_sense' should update the scale and "
     r"have get_loss_scale\(\) .*, but got Dense\."),
    (lambda: make_step(8.0), TypeError,
     r"For 'TrainOneStepWithLossScaleCell', the 'scale_sense' should be a Cell or a Tensor, "
     r"but got float\."),
])
def test_bad_arguments(call, err, match):
    with pytest.raises(err, match=match):
        call()
