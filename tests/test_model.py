"""ms.Model (train / eval / predict), callbacks (hooks, LossMonitor, TimeMonitor,
ModelCheckpoint) and lazy_inline, stand-alone; the 2/4-rank run is
tests/ranks/test_model_train.py."""
import os
import re

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops import dataset as ds
from msops.train.callback import Callback


def data(n=24, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32) + 2 * (x[:, 1] > 0).astype(np.int32)
    return x, y


def make(lr=0.5):
    ms.set_seed(11)
    net = nn.SequentialCell([nn.Dense(6, 8, activation="relu"), nn.Dense(8, 4)])
    return net, nn.SGD(net.trainable_params(), lr)


def dataset(batch=8, **kw):
    x, y = data()
    return ds.NumpySlicesDataset((x, y), ["x", "y"], shuffle=False, **kw).batch(batch)


@pytest.fixture(autouse=True, params=[ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    ms.set_context(mode=request.param)
    return request.param


class Hooks(Callback):
    def __init__(self):
        self.calls, self.losses = [], []

    def __getattribute__(self, name):
        if name.startswith("on_"):
            return lambda ctx: self.calls.append((name, ctx.original_args().cur_epoch_num,
                                                  ctx.original_args().cur_step_num))
        return object.__getattribute__(self, name)


def test_train_equals_the_hand_written_loop():
    net, opt = make()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()), opt)
    x, y = data()
    want = [float(step(Tensor(x[i:i + 8]), Tensor(y[i:i + 8])).asnumpy())
            for _ in range(2) for i in range(0, 24, 8)]
    want_params = [p.asnumpy().copy() for p in net.trainable_params()]

    net, opt = make()
    losses = []

    class Record(Callback):
        def on_train_step_end(self, ctx):
            losses.append(float(ctx.original_args().net_outputs.asnumpy()))
    ms.Model(net, nn.CrossEntropyLoss(), opt).train(2, dataset(), callbacks=Record())
    np.testing.assert_allclose(losses, want, rtol=1e-6)
    for p, w in zip(net.trainable_params(), want_params):
        np.testing.assert_allclose(p.asnumpy(), w, rtol=1e-6)


def test_hooks_run_in_order_with_counters():
    net, opt = make()
    hooks = Hooks()
    ms.Model(net, nn.CrossEntropyLoss(), opt).train(2, dataset(12), callbacks=[hooks])
    assert hooks.calls == [
        ("on_train_begin", 0, 0),
        ("on_train_epoch_begin", 1, 0), ("on_train_step_begin", 1, 0),
        ("on_train_step_end", 1, 1), ("on_train_step_begin", 1, 1), ("on_train_step_end", 1, 2),
        ("on_train_epoch_end", 1, 2),
        ("on_train_epoch_begin", 2, 2), ("on_train_step_begin", 2, 2),
        ("on_train_step_end", 2, 3), ("on_train_step_begin", 2, 3), ("on_train_step_end", 2, 4),
        ("on_train_epoch_end", 2, 4), ("on_train_end", 2, 4)]


def test_legacy_hook_names_and_request_stop():
    seen = []

    class Old(Callback):
        def step_end(self, run_context):
            cb = run_context.original_args()
            seen.append(cb.cur_step_num)
            if cb.cur_step_num == 4:
                run_context.request_stop()
    net, opt = make()
    ms.Model(net, nn.CrossEntropyLoss(), opt).train(5, dataset(), callbacks=Old())
    assert seen == [1, 2, 3, 4]


def test_sink_mode_and_initial_epoch():
    net, opt = make()
    hooks = Hooks()
    ms.Model(net, nn.CrossEntropyLoss(), opt).train(3, dataset(), callbacks=hooks,
                                                    dataset_sink_mode=True, sink_size=2,
                                                    initial_epoch=1)
    ends = [c for c in hooks.calls if c[0] == "on_train_step_end"]
    assert ends == [("on_train_step_end", 2, 4), ("on_train_step_end", 3, 6)]
    assert ("on_train_step_begin", 2, 2) not in hooks.calls
    hooks = Hooks()
    ms.Model(net, nn.CrossEntropyLoss(), opt).train(2, dataset(), callbacks=hooks,
                                                    dataset_sink_mode=True)
    ends = [c for c in hooks.calls if c[0] == "on_train_step_end"]
    assert ends == [("on_train_step_end", 1, 3), ("on_train_step_end", 2, 6)]


def test_loss_monitor_prints_every_n_steps(capsys):
    net, opt = make()
    ms.Model(net, nn.CrossEntropyLoss(), opt).train(2, dataset(), callbacks=ms.LossMonitor(2))
    lines = capsys.readouterr().out.splitlines()
    steps = [re.match(r"epoch: (\d+) step: (\d+), loss is ([0-9.]+)$", s).groups()
             for s in lines]
    assert [(int(e), int(s)) for e, s, _ in steps] == [(1, 2), (2, 1), (2, 3)]
    assert all(0 < float(v) < 5 for _, _, v in steps)


def test_loss_monitor_stops_on_nan_or_inf():
    net, opt = make(lr=1e30)
    with pytest.raises(ValueError, match=r"For 'LossMonitor', epoch: \d+ step: \d+: invalid "
                                         r"loss (nan|inf)"):
        with np.errstate(all="ignore"):
            ms.Model(net, nn.MSELoss(), opt).train(
                4, ds.NumpySlicesDataset((data()[0], data()[0][:, :4] * 1e20), ["x", "y"],
                                         shuffle=False).batch(8), callbacks=ms.LossMonitor())


def test_time_monitor(capsys):
    net, opt = make()
    tm = ms.TimeMonitor()
    ms.Model(net, nn.CrossEntropyLoss(), opt).train(2, dataset(), callbacks=[tm])
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and len(tm.epoch_times) == 2
    for line, ms_epoch in zip(out, tm.epoch_times):
        total, per = map(float, re.match(r"epoch time: ([0-9.]+) ms, per step time: "
                                         r"([0-9.]+) ms$", line).groups())
        assert total == pytest.approx(ms_epoch, abs=1e-3) and per == pytest.approx(total / 3,
                                                                                    abs=1e-3)


def test_model_checkpoint_files_and_contents(tmp_path):
    net, opt = make()
    cfg = ms.CheckpointConfig(save_checkpoint_steps=2, keep_checkpoint_max=2,
                              append_info=["epoch_num", {"tag": 7}])
    ck = ms.ModelCheckpoint("net", str(tmp_path), cfg)
    ms.Model(net, nn.CrossEntropyLoss(), opt).train(2, dataset(), callbacks=ck)
    # steps 2, 4, 6 saved (1_2, 2_1, 2_3); the oldest pruned beyond 2
    assert sorted(os.listdir(tmp_path)) == ["net-2_1.safetensors", "net-2_3.safetensors"]
    assert ck.latest_ckpt_file_name == str(tmp_path / "net-2_3.safetensors")
    loaded = ms.load_checkpoint(ck.latest_ckpt_file_name)
    for p in net.trainable_params():
        np.testing.assert_array_equal(loaded[p.name].asnumpy(), p.asnumpy())
    assert int(loaded["epoch_num"].asnumpy()) == 2 and int(loaded["tag"].asnumpy()) == 7
    # a second run in the same folder gets a new prefix instead of overwriting
    ck2 = ms.ModelCheckpoint("net", str(tmp_path), ms.CheckpointConfig(save_checkpoint_steps=3))
    ms.Model(net, nn.CrossEntropyLoss(), opt).train(1, dataset(), callbacks=ck2)
    assert "net_1-1_3.safetensors" in os.listdir(tmp_path)


def test_eval_and_predict_against_numpy():
    net, opt = make()
    model = ms.Model(net, nn.CrossEntropyLoss(), opt, metrics={"acc", "loss"})
    model.train(3, dataset())
    x, y = data()
    logits = model.predict(Tensor(x)).asnumpy()
    res = model.eval(dataset(batch=12))
    assert set(res) == {"acc", "loss"}
    assert res["acc"] == pytest.approx(np.mean(logits.argmax(1) == y))
    logp = logits - logits.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    per_batch = [-logp[i:i + 12][np.arange(12), y[i:i + 12]].mean() for i in (0, 12)]
    assert res["loss"] == pytest.approx(np.mean(per_batch), rel=1e-5)
    custom = ms.Model(net, metrics={"acc": nn.Accuracy()},
                      eval_network=nn.WithEvalCell(net, nn.CrossEntropyLoss()),
                      eval_indexes=[0, 1, 2])
    assert custom.eval(dataset())["acc"] == pytest.approx(res["acc"])


def test_optimizer_only_model_trains_a_loss_network():
    net, opt = make()
    loss_net = nn.WithLossCell(net, nn.CrossEntropyLoss())
    hooks = Hooks()
    ms.Model(loss_net, optimizer=opt).train(1, dataset(), callbacks=hooks)
    assert hooks.calls[-1] == ("on_train_end", 1, 3)


@pytest.mark.parametrize("call,err,match", [
    (lambda n, o: ms.Model(n, nn.CrossEntropyLoss(), o, amp_level="O1"), ValueError,
     r"For 'Model', the 'amp_level' should be one of \['O0', 'O2', 'O3', 'auto'\] \(O1's "
     r"per-operator float16 list is not implemented\), but got 'O1'"),
    (lambda n, o: ms.Model(n, nn.CrossEntropyLoss(), o, loss_scale_manager=1), TypeError,
     "the type of 'loss_scale_manager' should be LossScaleManager, but got int"),
    (lambda n, o: ms.Model(n, nn.CrossEntropyLoss()).train(1, dataset()), ValueError,
     "needs an 'optimizer'"),
    (lambda n, o: ms.Model(n, nn.CrossEntropyLoss(), o).eval(dataset()), ValueError,
     "needs 'metrics'"),
    (lambda n, o: ms.Model(n, nn.CrossEntropyLoss(), o).train(1, [1, 2]), TypeError,
     "should be an msops.dataset Dataset"),
    (lambda n, o: ms.Model(n, nn.CrossEntropyLoss(), o).train(1, dataset(), callbacks=[1]),
     TypeError, "every callback should be a Callback"),
    (lambda n, o: ms.Model(n, nn.CrossEntropyLoss(), o).train(2, dataset(), initial_epoch=2),
     ValueError, "initial_epoch"),
    (lambda n, o: ms.CheckpointConfig(save_checkpoint_steps=0), ValueError,
     "one of 'save_checkpoint_steps' and 'save_checkpoint_seconds' should be > 0"),
    (lambda n, o: ms.CheckpointConfig(async_save=True), ValueError,
     "'async_save' is not supported"),
    (lambda n, o: ms.Model(n, nn.CrossEntropyLoss(), o).build(), ValueError,
     "'train_dataset' and 'valid_dataset' should not both be None"),
    (lambda n, o: ms.Model(n, optimizer=o).build(valid_dataset=dataset()), ValueError,
     "needs a 'loss_fn' or an 'eval_network' to build"),
    (lambda n, o: ms.Model(n, nn.CrossEntropyLoss(), o).build(dataset(), sink_size=0),
     ValueError, "'sink_size' should be -1 or a positive int"),
    (lambda n, o: ms.Model(n).infer_predict_layout(Tensor(data()[0])), RuntimeError,
     "'Model.infer_predict_layout'"),
    (lambda n, o: ms.Model(n, nn.CrossEntropyLoss(), o).infer_train_layout(dataset()),
     RuntimeError, "'Model.infer_train_layout'"),
])
def test_errors(call, err, match):
    net, opt = make()
    with pytest.raises(err, match=match):
        call(net, opt)


def test_lazy_inline_is_a_no_op():
    class Block(nn.Cell):
        @ms.lazy_inline
        def __init__(self, n):
            super().__init__()
            self.dense = nn.Dense(n, n)

        def construct(self, x):
            return self.dense(x)

    class Block2(Block):
        @ms.lazy_inline(policy="front")
        def __init__(self, n):
            super().__init__(n)

    ms.set_seed(0)
    a = Block(3)
    ms.set_seed(0)
    b = Block2(3)
    x = Tensor(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(a(x).asnumpy(), b(x).asnumpy())


def test_a_one_shot_source_running_out_is_an_error():
    net, opt = make()
    x, y = data()
    once = ds.GeneratorDataset(iter([(x[i], y[i]) for i in range(24)]), ["x", "y"]).batch(8)
    with pytest.raises(ValueError, match=r"should give 3 batches an epoch, but it ran out "
                                         r"after 0 in epoch 1"):
        # get_dataset_size counts by reading the iterator, which leaves nothing to train on
        ms.Model(net, nn.CrossEntropyLoss(), opt).train(1, once)


def test_fit_evaluates_after_the_chosen_epochs():
    net, opt = make()
    model = ms.Model(net, nn.CrossEntropyLoss(), opt, metrics={"acc"})
    seen = []

    class Watch(Callback):
        def on_eval_end(self, ctx):
            seen.append(dict(ctx.original_args().metrics))

    model.fit(3, dataset(), dataset(12), valid_frequency=2, callbacks=Watch())
    assert len(seen) == 2                                   # after epochs 2 and 3 (the last)
    x, y = data()
    acc = np.mean(model.predict(Tensor(x)).asnumpy().argmax(1) == y)
    assert seen[-1]["acc"] == pytest.approx(acc) and model.eval_results == seen[-1]


def test_model_checkpoint_writes_mindspore_ckpt(tmp_path):
    net, opt = make()
    cfg = ms.CheckpointConfig(save_checkpoint_steps=3, format="ckpt")
    ms.Model(net, nn.CrossEntropyLoss(), opt).train(
        1, dataset(), callbacks=ms.ModelCheckpoint("ms", str(tmp_path), cfg))
    assert os.listdir(tmp_path) == ["ms-1_3.ckpt"]
    loaded = ms.load_checkpoint(str(tmp_path / "ms-1_3.ckpt"))
    for p in net.trainable_params():
        np.testing.assert_array_equal(loaded[p.name].asnumpy(), p.asnumpy())


def test_build_compiles_without_running():
    """build traces the training step and the evaluation network once, runs neither (the
    weights stay), and train / eval then reuse those graphs: the same numbers as without."""
    net, opt = make()
    want = [p.asnumpy().copy() for p in net.trainable_params()]
    model = ms.Model(net, nn.CrossEntropyLoss(), opt, metrics={"acc"})
    model.build(dataset(), dataset())
    for p, w in zip(net.trainable_params(), want):
        np.testing.assert_array_equal(p.asnumpy(), w)
    if ms.get_context("mode") == ms.GRAPH_MODE:
        assert model.train_network._compile_cache.traces == 1
        assert model.eval_network._compile_cache.traces == 1
    model.train(2, dataset())
    accuracy = model.eval(dataset())["acc"]
    if ms.get_context("mode") == ms.GRAPH_MODE:
        assert model.train_network._compile_cache.traces == 1
        assert model.eval_network._compile_cache.traces == 1

    ref_net, ref_opt = make()
    ref = ms.Model(ref_net, nn.CrossEntropyLoss(), ref_opt, metrics={"acc"})
    ref.train(2, dataset())
    assert accuracy == ref.eval(dataset())["acc"]
    for p, w in zip(net.trainable_params(), ref_net.trainable_params()):
        np.testing.assert_array_equal(p.asnumpy(), w.asnumpy())
