"""History, LambdaCallback, LearningRateScheduler, ReduceLROnPlateau, OnRequestExit and
BackupAndRestore, against numpy SGD / momentum written here and rules worked out by hand."""
import json
import os
import signal

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops.train.callback import CallbackParam, RunContext

RNG = np.random.default_rng(3)
X = RNG.standard_normal((6, 4)).astype(np.float32)
Y = RNG.standard_normal((6, 3)).astype(np.float32)
W0 = RNG.standard_normal((3, 4)).astype(np.float32)
B0 = RNG.standard_normal(3).astype(np.float32)
BATCHES = [(X[:3], Y[:3]), (X[3:], Y[3:])]


@pytest.fixture(params=[ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    """Each test in both modes (conftest puts PYNATIVE_MODE back after it)."""
    ms.set_context(mode=request.param)
    return request.param


def dataset():
    return ms.dataset.NumpySlicesDataset({"x": X, "y": Y}, shuffle=False).batch(3)


def model(optimizer=lambda ps: nn.SGD(ps, 0.1), **kw):
    net = nn.Dense(4, 3, weight_init=Tensor(W0), bias_init=Tensor(B0))
    opt = optimizer(net.trainable_params())
    return net, opt, ms.Model(net, nn.MSELoss(), opt, **kw)


def numpy_train(lrs, momentum=0.0):
    """SGD (with MindSpore's momentum: v = m v + g, p -= lr v) on mean((x W^T + b - y)^2),
    one step per rate in `lrs`, the batches in turn."""
    w, b = W0.astype(np.float64), B0.astype(np.float64)
    vw, vb = np.zeros_like(w), np.zeros_like(b)
    for k, lr in enumerate(lrs):
        x, y = BATCHES[k % 2]
        d = 2.0 * (x @ w.T + b - y) / y.size
        vw, vb = momentum * vw + d.T @ x, momentum * vb + d.sum(0)
        w, b = w - lr * vw, b - lr * vb
    return w, b


def assert_net(net, w, b, rtol=1e-5):
    np.testing.assert_allclose(net.weight.asnumpy(), w, rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(net.bias.asnumpy(), b, rtol=rtol, atol=1e-6)


def test_history_records_each_epochs_loss_and_eval_results(mode):
    net, _, m = model(metrics={"mse": nn.MSE()})
    history, losses, evals = ms.History(), [], []

    def epoch_end(ctx):
        losses.append(float(ctx.original_args().net_outputs.asnumpy()))
        out = net(Tensor(X)).asnumpy()               # the MSE metric: mean over samples
        evals.append(float(np.mean(np.sum((out - Y) ** 2, axis=1))))
    m.fit(2, dataset(), dataset(), callbacks=[history, ms.LambdaCallback(
        on_train_epoch_end=epoch_end)])
    assert history.epoch == {"epoch": [1, 2]}
    assert set(history.history) == {"net_output", "mse"}
    np.testing.assert_allclose(history.history["net_output"], losses, rtol=1e-6)
    np.testing.assert_allclose(history.history["mse"], evals, rtol=1e-5)


def test_lambda_callback_calls_the_given_functions_in_order():
    calls = []
    cb = ms.LambdaCallback(
        on_train_begin=lambda ctx: calls.append("begin"),
        on_train_step_end=lambda ctx: calls.append(ctx.original_args().cur_step_num),
        on_train_epoch_end=lambda ctx: calls.append(("epoch", ctx.original_args().cur_epoch_num)),
        on_train_end=lambda ctx: calls.append("end"))
    model()[2].train(2, dataset(), callbacks=cb)
    assert calls == ["begin", 1, 2, ("epoch", 1), 3, 4, ("epoch", 2), "end"]
    with pytest.raises(TypeError, match="For 'LambdaCallback', the 'on_train_end' should be a "
                                        "function of the run context, but got int"):
        ms.LambdaCallback(on_train_end=3)


def test_learning_rate_scheduler_sets_the_rate_the_compiled_step_reads(mode):
    net, opt, m = model()
    schedule = ms.LearningRateScheduler(lambda lr, step: lr * 0.5 if step % 2 == 0 else lr)
    m.train(3, dataset(), callbacks=schedule)
    # the rate of step k+1 is set after step k: 0.1, 0.1, 0.05, 0.05, 0.025, 0.025
    assert_net(net, *numpy_train([0.1, 0.1, 0.05, 0.05, 0.025, 0.025]))
    assert opt.get_lr() == pytest.approx(0.0125)
    if mode == ms.GRAPH_MODE:
        assert m.train_network._compile_cache.traces == 1


def _plateau_run(cb, values):
    net = nn.Dense(4, 3)
    opt = nn.SGD(net.trainable_params(), 1.0)
    params = CallbackParam(optimizer=opt, net_outputs=None, cur_epoch_num=0)
    ctx = RunContext(params)
    cb.on_train_begin(ctx)
    lrs = []
    for epoch, value in enumerate(values, 1):
        params.cur_epoch_num, params.eval_results = epoch, {"eval_loss": value}
        cb.on_train_epoch_end(ctx)
        lrs.append(opt.get_lr())
    return lrs


def test_reduce_lr_on_plateau_follows_patience_cooldown_and_min_lr():
    # worked by hand: best 0.9 after epoch 2; epochs 3, 4 do not improve (patience 2):
    # lr 0.5 and one cooldown epoch (5); 0.5 improves at 6; 7, 8 -> 0.25; 9 cools; 10 ->
    # 0.125; 11 cools; 12 -> max(0.0625, 0.1) = 0.1; 14 would reduce, but lr = min_lr
    values = [1.0, 0.9, 0.95, 0.96, 0.97, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.96, 0.97, 0.98]
    got = _plateau_run(ms.ReduceLROnPlateau(factor=0.5, patience=2, cooldown=1, min_lr=0.1,
                                            min_delta=0.0), values)
    want = [1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125, 0.1, 0.1, 0.1]
    np.testing.assert_allclose(got, want)


def test_reduce_lr_on_plateau_max_mode_and_min_delta():
    # "eval_acc"-like growth by less than min_delta 0.05 is no improvement
    got = _plateau_run(ms.ReduceLROnPlateau(monitor="eval_loss", mode="max", factor=0.1,
                                            patience=1, min_delta=0.05), [0.5, 0.52, 0.6, 0.61])
    np.testing.assert_allclose(got, [1.0, 0.1, 0.1, 0.01])


def test_on_request_exit_saves_and_stops_at_the_signalled_step(tmp_path, mode):
    before = signal.getsignal(signal.SIGTERM)
    net, _, m = model()
    steps = []

    def step_end(ctx):
        steps.append(ctx.original_args().cur_step_num)
        if len(steps) == 3:
            os.kill(os.getpid(), signal.SIGTERM)
    exit_cb = ms.OnRequestExit(save_mindir=False, directory=str(tmp_path), file_name="Stop")
    m.train(5, dataset(), callbacks=[ms.LambdaCallback(on_train_step_end=step_end), exit_cb])
    assert steps == [1, 2, 3]
    assert_net(net, *numpy_train([0.1] * 3))
    saved = ms.load_checkpoint(str(tmp_path / "rank_0" / "Stop.ckpt"))
    np.testing.assert_array_equal(saved["weight"].asnumpy(), net.weight.asnumpy())
    assert signal.getsignal(signal.SIGTERM) is before        # the handler is put back


def test_on_request_exit_reads_the_config_file(tmp_path):
    config = tmp_path / "exit.json"
    config.write_text(json.dumps({"GracefulExit": 1}))
    steps = []
    model()[2].train(2, dataset(), callbacks=[
        ms.LambdaCallback(on_train_step_end=lambda ctx: steps.append(1)),
        ms.OnRequestExit(save_ckpt=False, save_mindir=False, config_file=str(config))])
    assert steps == [1]


def test_backup_and_restore_resumes_a_failed_run(tmp_path, mode):
    momentum = lambda ps: nn.Momentum(ps, 0.1, 0.9)       # noqa: E731
    backup = str(tmp_path / "backup")

    def fail_in_epoch_3(ctx):
        if ctx.original_args().cur_epoch_num == 3:
            raise RuntimeError("node lost")
    _, _, m = model(momentum)
    with pytest.raises(RuntimeError, match="node lost"):
        m.train(4, dataset(), callbacks=[ms.BackupAndRestore(backup),
                                         ms.LambdaCallback(on_train_step_begin=fail_in_epoch_3)])
    assert os.listdir(backup) == ["backup.ckpt"]             # kept: the run failed

    net, opt, m = model(momentum)                              # a new process would start so
    epochs = []
    m.train(4, dataset(), callbacks=[ms.BackupAndRestore(backup), ms.LambdaCallback(
        on_train_epoch_begin=lambda ctx: epochs.append(ctx.original_args().cur_epoch_num))])
    assert epochs == [3, 4]
    assert_net(net, *numpy_train([0.1] * 8, momentum=0.9), rtol=1e-4)
    assert int(opt.global_step.asnumpy()[0]) == 8
    assert os.listdir(backup) == []                            # deleted: the run finished


@pytest.mark.parametrize("call,err,match", [
    (lambda: ms.ReduceLROnPlateau(factor=1.0), ValueError,
     r"For 'ReduceLROnPlateau', the 'factor' should be in \[0, 1\), but got 1\.0\."),
    (lambda: ms.ReduceLROnPlateau(mode="up"), ValueError,
     r"For 'ReduceLROnPlateau', the 'mode' should be one of \['auto', 'min', 'max'\], but "
     r"got 'up'\."),
    (lambda: ms.ReduceLROnPlateau(cooldown=-1), ValueError,
     r"the 'cooldown' should be a non-negative int, but got -1"),
    (lambda: ms.LearningRateScheduler(0.1), TypeError,
     r"For 'LearningRateScheduler', the 'learning_rate_function' should be a function"),
    (lambda: ms.OnRequestExit(sig=signal.SIGKILL), ValueError,
     r"For 'OnRequestExit', the 'sig' should be a signal a process can catch"),
    (lambda: ms.OnRequestExit(file_name=3), TypeError,
     r"For 'OnRequestExit', the type of 'file_name' should be str, but got int"),
    (lambda: ms.BackupAndRestore("b", save_freq=0), ValueError,
     r"For 'BackupAndRestore', the 'save_freq' should be 'epoch' or a positive int, but "
     r"got 0\."),
    (lambda: ms.BackupAndRestore("b", delete_checkpoint=1), TypeError,
     r"the type of 'delete_checkpoint' should be bool"),
])
def test_bad_arguments(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_a_dynamic_learning_rate_is_refused():
    _, _, m = model(lambda ps: nn.SGD(ps, [0.1, 0.05]))
    with pytest.raises(ValueError, match=r"For 'LearningRateScheduler', the optimizer's "
                                         r"learning rate should be one number \(dynamic and "
                                         r"group learning rates are not supported\), but got "
                                         r"a learning rate per step"):
        m.train(1, dataset(), callbacks=ms.LearningRateScheduler(lambda lr, s: lr))
