"""DSCallback through Dataset.map(callbacks=...): the hooks' order and contexts against an
event list written out by hand, around the map's own operation."""
import numpy as np
import pytest

from msops import dataset as ds


class Recorder(ds.DSCallback):
    def __init__(self, log, step_size=1):
        super().__init__(step_size)
        self.log = log

    def _note(self, hook, ctx):
        self.log.append((hook, ctx.cur_epoch_num, ctx.cur_step_num_in_epoch, ctx.cur_step_num))

    def ds_begin(self, ctx):
        self._note("begin", ctx)

    def ds_epoch_begin(self, ctx):
        self._note("epoch_begin", ctx)

    def ds_epoch_end(self, ctx):
        self._note("epoch_end", ctx)

    def ds_step_begin(self, ctx):
        self._note("step_begin", ctx)

    def ds_step_end(self, ctx):
        self._note("step_end", ctx)


def test_hooks_run_in_order_every_step_size_rows_over_epochs():
    log = []

    def op(x):
        log.append(("op", int(x)))
        return x * 10

    data = ds.NumpySlicesDataset(np.arange(3), ["x"], shuffle=False)
    mapped = data.map(op, "x", callbacks=Recorder(log, step_size=2))
    it = mapped.create_tuple_iterator(output_numpy=True)
    got = [[int(r[0]) for r in it] for _ in range(2)]
    assert got == [[0, 10, 20]] * 2
    assert log == [
        ("begin", 0, 0, 0),
        ("epoch_begin", 1, 0, 0),
        ("step_begin", 1, 1, 1), ("op", 0), ("step_end", 1, 1, 1),
        ("op", 1),                                             # step 2: not 1 + k * 2
        ("step_begin", 1, 3, 3), ("op", 2), ("step_end", 1, 3, 3),
        ("epoch_end", 1, 3, 3),
        ("epoch_begin", 2, 0, 3),                              # ds_begin only once
        ("step_begin", 2, 1, 4), ("op", 0), ("step_end", 2, 1, 4),
        ("op", 1),
        ("step_begin", 2, 3, 6), ("op", 2), ("step_end", 2, 3, 6),
        ("epoch_end", 2, 3, 6),
    ]


def test_several_callbacks_and_a_batch_after_the_map():
    a, b = [], []
    data = ds.NumpySlicesDataset(np.arange(4), ["x"], shuffle=False)
    data = data.map(lambda x: x + 1, callbacks=[Recorder(a), Recorder(b, step_size=4)])
    batches = [r[0].tolist() for r in data.batch(2).create_tuple_iterator(output_numpy=True)]
    assert batches == [[1, 2], [3, 4]]
    assert [e[3] for e in a if e[0] == "step_end"] == [1, 2, 3, 4]
    assert [e[3] for e in b if e[0] == "step_end"] == [1]


def test_callback_errors():
    data = ds.NumpySlicesDataset(np.arange(2), ["x"], shuffle=False)
    with pytest.raises(TypeError, match="For 'map', every 'callbacks' item should be a "
                                        "DSCallback, but got int"):
        data.map(lambda x: x, callbacks=[3])
    with pytest.raises(ValueError, match="For 'DSCallback', .*step_size"):
        ds.DSCallback(step_size=0)


def test_waited_ds_callback_runs_in_step_with_model_train():
    import msops as ms
    from msops import nn
    from msops.train.callback import WaitedDSCallback

    events = []

    class Sync(WaitedDSCallback):
        def sync_epoch_begin(self, train_ctx, ds_ctx):
            events.append(("epoch", train_ctx.original_args().cur_step_num, ds_ctx.cur_epoch_num))

        def sync_step_begin(self, train_ctx, ds_ctx):
            events.append(("step", train_ctx.original_args().cur_step_num, ds_ctx.cur_step_num))

    x = np.arange(12, dtype=np.float32).reshape(6, 2) / 10
    y = np.array([0, 1, 0, 1, 1, 0], np.int32)
    sync = Sync(step_size=2)
    data = ds.NumpySlicesDataset((x, y), ["x", "y"], shuffle=False)
    data = data.map(lambda v: v, "x", callbacks=sync).batch(2)
    net = nn.Dense(2, 2)
    model = ms.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                     nn.SGD(net.trainable_params(), 0.1))
    model.train(2, data, callbacks=[sync])
    # due dataset steps are rows 1, 3, 5 of each epoch (global rows 1, 3, ..., 11); before
    # each but the first, training has ended exactly the step before
    want_steps = [("step", k, 2 * k + 1) for k in range(1, 6)]
    assert [e for e in events if e[0] == "step"] == want_steps
    # dataset epoch 2 begins after training epoch 1's 3 steps, before epoch 2's first step
    assert [e for e in events if e[0] == "epoch"] == [("epoch", 3, 2)]
    assert events.index(("epoch", 3, 2)) == 2

    # read outside Model.train, the dataset runs ahead of training: an error, not a hang
    ahead = ds.NumpySlicesDataset(x, ["x"], shuffle=False).map(lambda v: v,
                                                              callbacks=Sync(step_size=2))
    with pytest.raises(RuntimeError, match="For 'WaitedDSCallback', dataset step 2 began "
                                           "before training step 1 ended"):
        list(ahead.create_tuple_iterator(output_numpy=True))
