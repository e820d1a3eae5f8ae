"""EarlyStopping: when it stops on scripted values (worked out by hand from its rule: no
improvement beyond min_delta for `patience` epochs), which weights it restores, and in
Model.fit."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops import dataset as ds
from msops.train.callback import Callback, CallbackParam, RunContext


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(Tensor(np.zeros(2)), "w")

    def construct(self, x):
        return x * self.w


def run(stopper, values, key="eval_loss"):
    """Feed `values` epoch by epoch (the weights hold the epoch number); the epoch it
    stopped at (0: never) and the final weights."""
    net = Net()
    cb = CallbackParam(train_network=net, cur_epoch_num=0, net_outputs=None, eval_results={})
    ctx = RunContext(cb)
    stopper.on_train_begin(ctx)
    for epoch, value in enumerate(values, 1):
        net.w.set_data(Tensor(np.full(2, float(epoch))))
        cb.cur_epoch_num = epoch
        cb.eval_results = {} if value is None else {key: value}
        stopper.on_train_epoch_end(ctx)
        if ctx.get_stop_requested():
            return epoch, net.w.asnumpy()
    return 0, net.w.asnumpy()


@pytest.mark.parametrize("kwargs,values,stop_epoch", [
    # patience 0: the first epoch without improvement stops
    ({}, [3.0, 2.0, 2.5, 1.0], 3),
    ({"patience": 2}, [3.0, 2.0, 2.5, 2.1, 1.0], 4),
    ({"patience": 2}, [3.0, 2.0, 2.5, 1.0, 1.5, 0.5], 0),
    # an improvement smaller than min_delta is none
    ({"patience": 1, "min_delta": 0.5}, [3.0, 2.8, 2.0], 2),
    # "acc" in the name: larger is better
    ({"monitor": "acc", "patience": 1}, [0.5, 0.7, 0.6, 0.65], 3),
    ({"monitor": "f1", "mode": "max", "patience": 1}, [0.5, 0.4], 2),
    # a baseline: improvements count only once it is beaten
    ({"patience": 2, "baseline": 1.0}, [3.0, 2.0, 1.5], 2),
    ({"patience": 2, "baseline": 2.5}, [3.0, 2.0, 1.5, 1.6, 1.7], 5),
    # epochs without the value are skipped
    ({"patience": 1}, [3.0, None, None, 2.0, 2.5], 5),
])
def test_stops_where_its_rule_says(kwargs, values, stop_epoch):
    key = kwargs.get("monitor", "eval_loss")
    assert run(ms.EarlyStopping(**kwargs), values, key)[0] == stop_epoch


def test_restores_the_best_epochs_weights(capsys):
    epoch, w = run(ms.EarlyStopping(patience=2, restore_best_weights=True, verbose=True),
                   [3.0, 1.0, 2.0, 2.5])
    assert epoch == 4
    np.testing.assert_array_equal(w, [2.0, 2.0])           # epoch 2's weights
    assert "best epoch: 2" in capsys.readouterr().out


class Epochs(Callback):
    def __init__(self):
        self.seen = []

    def on_train_epoch_end(self, run_context):
        self.seen.append(run_context.original_args().cur_epoch_num)


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_fit_stops_when_the_training_loss_stalls(mode):
    """With a learning rate of 0 the loss never improves: patience 2 stops at epoch 3."""
    ms.set_context(mode=mode)
    try:
        x = np.random.default_rng(0).standard_normal((8, 2)).astype(np.float32)
        data = ds.NumpySlicesDataset((x, x.sum(1, keepdims=True)), ["x", "y"],
                                     shuffle=False).batch(4)
        net = nn.Dense(2, 1)
        model = ms.Model(net, nn.MSELoss(), nn.SGD(net.trainable_params(), 0.0))
        seen = Epochs()
        model.fit(10, data, callbacks=[ms.EarlyStopping(monitor="loss", patience=2), seen])
        assert seen.seen == [1, 2, 3]
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match=r"For 'EarlyStopping', the 'mode' should be one of "
                                         r"\['auto', 'min', 'max'\], but got 'best'"):
        ms.EarlyStopping(mode="best")
    with pytest.raises(ValueError, match=r"patience"):
        ms.EarlyStopping(patience=-1)
    with pytest.raises(TypeError, match=r"monitor"):
        ms.EarlyStopping(monitor=3)
