"""DatasetHelper and connect_network_with_dataset: the batches a loop sees (host-side, in
MindSpore's sink and non-sink shapes) against the numpy arrays the dataset was made of,
and a connected training step against the same steps fed by hand."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops.dataset import NumpySlicesDataset

X = np.arange(40, dtype=np.float32).reshape(10, 4)
Y = np.arange(10, dtype=np.int32)


def dataset(batch=2):
    return NumpySlicesDataset({"x": X, "y": Y}, shuffle=False).batch(batch)


def batches(batch=2):
    return [(X[i:i + batch], Y[i:i + batch]) for i in range(0, len(X), batch)]


class Both(nn.Cell):
    """Returns its two inputs: a connected call shows the batch it drew."""

    def construct(self, x, y):
        return x * 1.0, y


def test_non_sink_gives_one_pass_per_loop():
    helper = ms.DatasetHelper(dataset(), dataset_sink_mode=False, epoch_num=2)
    assert helper.sink_size() == 5
    for _ in range(2):
        got = [(x.asnumpy(), y.asnumpy()) for x, y in helper]
        assert len(got) == 5
        for (gx, gy), (wx, wy) in zip(got, batches()):
            np.testing.assert_array_equal(gx, wx)
            np.testing.assert_array_equal(gy, wy)
    assert list(helper) == []                              # epoch_num passes were sent
    with pytest.raises(RuntimeError, match="should be in dataset sink mode"):
        ms.connect_network_with_dataset(Both(), helper)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_sink_draws_across_passes(mode):
    ms.set_context(mode=mode)
    helper = ms.train.DatasetHelper(dataset(), dataset_sink_mode=True, sink_size=3,
                                    epoch_num=2)
    assert helper.sink_size() == 3
    net = ms.train.connect_network_with_dataset(Both(), helper)
    assert ms.connect_network_with_dataset(net.network, helper) is net
    want = batches() * 2                                    # 2 passes of 5 batches
    seen = []
    for _ in range(3):                                      # 3 sinks of 3 steps: 9 batches
        steps = list(helper)
        assert steps == [(), (), ()]
        for inputs in steps:
            x, y = net(*inputs)
            seen.append((x.asnumpy(), y.asnumpy()))
    for (gx, gy), (wx, wy) in zip(seen, want):
        np.testing.assert_array_equal(gx, wx)
        np.testing.assert_array_equal(gy, wy)
    x, y = net()                                            # the 10th and last batch
    np.testing.assert_array_equal(x.asnumpy(), want[9][0])
    with pytest.raises(RuntimeError, match="For 'connect_network_with_dataset'.*2 pass"):
        net()


def test_connected_training_step_equals_hand_fed():
    def make():
        ms.set_seed(5)
        net = nn.Dense(4, 3)
        loss = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True,
                                                                     reduction="mean"))
        return nn.TrainOneStepCell(loss, nn.SGD(net.trainable_params(), 0.01)), net

    by_hand, net_a = make()
    want = [by_hand(Tensor(x), Tensor(y)).asnumpy() for x, y in batches()]
    step, net_b = make()
    helper = ms.DatasetHelper(dataset(), sink_size=-1)
    connected = ms.connect_network_with_dataset(step, helper)
    got = [connected(*inputs).asnumpy() for inputs in helper]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(net_b.weight.asnumpy(), net_a.weight.asnumpy(), rtol=1e-6)


def test_types_shapes_and_errors():
    helper = ms.DatasetHelper(dataset(batch=4))
    types, shapes = helper.types_shapes()
    assert types == [ms.float32, ms.int32]
    assert shapes == [[4, 4], [4]]
    with pytest.raises(ValueError, match="For 'DatasetHelper', the 'sink_size'"):
        ms.DatasetHelper(dataset(), sink_size=0)
    with pytest.raises(ValueError, match="'epoch_num'"):
        ms.DatasetHelper(dataset(), epoch_num=0)
    with pytest.raises(TypeError, match="For 'DatasetHelper', the 'dataset'"):
        ms.DatasetHelper([1, 2, 3])
    net = ms.connect_network_with_dataset(Both(), helper)
    with pytest.raises(ValueError, match="another network"):
        ms.connect_network_with_dataset(Both(), helper)
    with pytest.raises(TypeError, match="called with none"):
        net(Tensor(X))
    helper.release()
    with pytest.raises(RuntimeError, match="released"):
        net()
